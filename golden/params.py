"""Parameter checks shared by the golden models.

The same messages as the RTL's (``hw/params.py``; the golden models never import
``hw``): the parameter's name, the allowed range and the value given, as a
``TypeError`` for a value of the wrong type and a ``ValueError`` for one out of range.
A numpy integer is accepted as well and returned as a Python ``int``; a ``bool`` is not.
"""

import numpy as np

__all__ = ["check_int", "check_pow2", "check_field"]


def _is_integer(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _allowed(minimum, maximum):
    return f"of at least {minimum}" if maximum is None else f"from {minimum} to {maximum}"


def check_int(name, value, minimum, maximum=None):
    """Return ``int(value)`` if it is an integer from ``minimum`` to ``maximum``.

    Raises
    ------
    TypeError
        ``value`` is not an integer (a ``bool`` is not one).
    ValueError
        ``value`` is out of range (no upper bound when ``maximum`` is None).
    """
    if not _is_integer(value):
        raise TypeError(f"{name} must be an integer {_allowed(minimum, maximum)}, "
                        f"not {value!r}")
    v = int(value)
    if v < minimum or (maximum is not None and v > maximum):
        raise ValueError(f"{name} must be an integer {_allowed(minimum, maximum)}, not {v!r}")
    return v


def check_pow2(name, value, minimum, maximum):
    """Return ``int(value)`` if it is a power of two from ``minimum`` to ``maximum``."""
    allowed = f"{name} must be a power of two from {minimum} to {maximum}"
    if not _is_integer(value):
        raise TypeError(f"{allowed}, not {value!r}")
    v = int(value)
    if not minimum <= v <= maximum or v & (v - 1):
        raise ValueError(f"{allowed}, not {v!r}")
    return v


def check_field(name, value, width):
    """Return ``int(value)`` if it fits an unsigned field of ``width`` bits."""
    return check_int(name, value, 0, (1 << width) - 1)
