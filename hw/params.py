"""Parameter checks shared by the blocks' constructors.

The messages follow Amaranth's standard library: the parameter's name, what it must be
and the value given, e.g. ``depth must be an integer from 2 to 4096, not 0``. A value of
the wrong type gets the same message as a ``TypeError``, so that both name the allowed
range. A ``bool`` is refused where an integer is asked for, although Python counts it
as one.
"""

__all__ = ["check_int", "check_pow2"]


def _allowed(minimum, maximum):
    return f"of at least {minimum}" if maximum is None else f"from {minimum} to {maximum}"


def check_int(name, value, minimum, maximum=None):
    """Return ``value`` if it is an integer from ``minimum`` to ``maximum``.

    Raises
    ------
    TypeError
        ``value`` is not an ``int`` (or is a ``bool``).
    ValueError
        ``value`` is out of range (no upper bound when ``maximum`` is None).
    """
    expected = f"{name} must be an integer {_allowed(minimum, maximum)}, not {value!r}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(expected)
    if value < minimum or (maximum is not None and value > maximum):
        raise ValueError(expected)
    return value


def check_pow2(name, value, minimum, maximum):
    """Return ``value`` if it is a power of two from ``minimum`` to ``maximum``."""
    expected = f"{name} must be a power of two from {minimum} to {maximum}, not {value!r}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(expected)
    if not minimum <= value <= maximum or value & (value - 1):
        raise ValueError(expected)
    return value
