"""Generate the Verilog of any design of any block.

Usage::

    python -m hw.gen DESIGN [--param NAME=VALUE ...] [-o FILE.v]
    python -m hw.gen --list
    python -m hw.gen --all DIR

``DESIGN`` is ``block.design`` (``sync.csp``, ``sync.token_fifo``, ...); ``--list`` prints
them with their parameters and defaults. A ``VALUE`` is a Python literal (``16``,
``(5, 6)``, ``{3: ((33, 2),)}``) or a bare word taken as a string. Illegal parameters are
rejected with the design's own message and exit status 2.

Amaranth emits no Verilog parameters, so every parameter set is its own Verilog module;
the module is named after the design unless ``--name`` says otherwise.
"""

import argparse
import ast
import importlib
import inspect
import os
import sys

from amaranth.back import verilog

__all__ = ["BLOCKS", "designs", "build", "generate", "main"]

#: Blocks whose designs can be generated: block name -> module with a ``DESIGNS`` dict.
BLOCKS = ("sync", "raster", "qcc", "spreader", "wave", "warp", "frontend")


def designs(blocks=BLOCKS):
    """Generatable designs of ``blocks``: ``{"block.design": constructor}``."""
    found = {}
    for block in blocks:
        module = importlib.import_module(f"hw.{block}")
        for name, constructor in module.DESIGNS.items():
            found[f"{block}.{name}"] = constructor
    return found


def parameters(constructor):
    """The keyword parameters of a design and their defaults (``inspect.Parameter.empty``
    for a required one)."""
    return {name: p.default for name, p in inspect.signature(constructor).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY}


def build(design, params=None):
    """Elaborate-ready instance of ``design`` with ``params``; ``ValueError`` if unknown."""
    params = dict(params or {})
    block = design.split(".")[0]
    table = designs([block] if block in BLOCKS else BLOCKS)
    if design not in table:
        raise ValueError(f"design must be one of {', '.join(sorted(table))}, not {design!r}")
    constructor = table[design]
    allowed = parameters(constructor)
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(f"{design} has no parameter {unknown[0]!r}; its parameters are "
                         f"{', '.join(allowed) or 'none'}")
    return constructor(**params)


def generate(design, params=None, *, name=None):
    """Verilog text of ``design`` with ``params``, as module ``name``."""
    top = build(design, params)
    return verilog.convert(top, name=name or design.replace(".", "_"), emit_src=False)


def _parse_param(text):
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise ValueError(f"--param must look like NAME=VALUE, not {text!r}")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value


def _generate_all(folder):
    os.makedirs(folder, exist_ok=True)
    for design in sorted(designs()):
        path = os.path.join(folder, f"{design.replace('.', '_')}.v")
        with open(path, "w") as file:
            file.write(generate(design))
        print(f"wrote {path}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m hw.gen", description=__doc__.split("\n")[0])
    parser.add_argument("design", nargs="?", help="block.design, e.g. sync.csp")
    parser.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--name", help="Verilog module name (default: the design's)")
    parser.add_argument("-o", "--output", help="output file (default: standard output)")
    parser.add_argument("--list", action="store_true", help="list designs and parameters")
    parser.add_argument("--all", metavar="DIR",
                        help="write every design at its default parameters into DIR")
    args = parser.parse_args(argv)
    if args.all:
        return _generate_all(args.all)
    if args.list or not args.design:
        for design, constructor in sorted(designs().items()):
            params = ", ".join(f"{k}={v!r}" for k, v in parameters(constructor).items())
            print(f"{design:24} {params}")
        return 0
    try:
        params = dict(_parse_param(p) for p in args.param)
        text = generate(args.design, params, name=args.name)
    except (ValueError, TypeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.output:
        with open(args.output, "w") as file:
            file.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
