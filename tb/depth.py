"""The deepest register-to-register logic chains of a Yosys ECP5 netlist (no place and route).

Usage::

    python -m tb.depth build/synth/<name>/<design>.json [--top 40] [--min 6]
        [--match REGEX] [--path] [--ports]

Reads the JSON that ``synth_ecp5`` wrote for nextpnr (``tb.synth`` leaves it under
``build/synth/<name>/``; ``python -m tb.synth --placed DESIGN`` makes one) and finds,
for every timing end point (a ``TRELLIS_FF``'s DI / CE / LSR, a LUT-RAM's write port, an
EBR's inputs), the longest chain of logic from a timing start point (a flip-flop's Q, an
EBR's output). Levels: ``LUT4`` 1, ``PFUMX`` / ``L6MUX21`` 1 (a wide-function mux level),
``CCU2C`` 1 from its A-D inputs and 0.1 along the carry (CIN), ``TRELLIS_DPR16X4`` 1
from its read address (an asynchronous LUT-RAM read), ``MULT18X18D`` 4.

End points are grouped by signal (the bits of a register, the cells of a LUT-RAM port
count once) and printed deepest first with the start point and the largest fan-out met
on the way: routing is 70-85 % of a long ECP5 path, and a net with a fan-out in the
hundreds costs as much as several LUT levels. ``--path`` prints the named signals along
each chain, ``--match`` keeps the chains whose names match a regular expression,
``--ports`` adds chains from top-level inputs and to top-level outputs (nextpnr's Fmax
leaves them out). At speed grade 6, 100 MHz needs about 8 levels with ordinary routing:
the list is of suspects to cut; the routed Fmax is the figure that counts.
"""

import argparse
import json
import re
import sys
from collections import defaultdict
from dataclasses import dataclass

#: The suffixes Yosys's technology mapping appends to a net's name.
GENERATED = re.compile(r"_(TRELLIS_FF|LUT4|CCU2C|PFUMX|L6MUX21|TRELLIS_DPR16X4|DP16KD|"
                       r"MULT18X18D)_.*$")
COMBINATIONAL = {"LUT4", "PFUMX", "L6MUX21", "CCU2C", "TRELLIS_DPR16X4", "MULT18X18D"}
END_PORTS = {"TRELLIS_FF": {"DI", "CE", "LSR"}, "TRELLIS_DPR16X4": {"DI", "WAD", "WRE"}}


@dataclass
class Chain:
    """The deepest chain into one end point: its levels, start and end signal names, the
    names along it and the largest fan-out of its nets."""
    depth: float
    start: str
    end: str
    signals: list
    fanout: int


def levels(cell_type, in_port, out_port):
    """Levels from ``in_port`` to ``out_port`` of a combinational cell, ``None`` if the
    output does not depend on that input within the clock."""
    if cell_type == "CCU2C":
        return 0.1 if in_port == "CIN" else 1.0
    if cell_type == "TRELLIS_DPR16X4":
        return 1.0 if in_port.startswith("RAD") and out_port.startswith("DO") else None
    if cell_type == "MULT18X18D":
        return 4.0
    return 1.0


def signal_names(module):
    """Each net bit's most readable name: an RTL signal's over Yosys's generated ones."""
    best = {}
    for name, net in module["netnames"].items():
        generated = bool(name.startswith("$") or GENERATED.search(name)
                         or "/share/" in net.get("attributes", {}).get("src", ""))
        base = GENERATED.sub("", name)
        for index, bit in enumerate(net["bits"]):
            if isinstance(bit, str):
                continue                   # a constant
            label = base if len(net["bits"]) == 1 or generated else f"{base}[{index}]"
            rank = (generated, len(label))
            if bit not in best or rank < best[bit][0]:
                best[bit] = (rank, label)
    return {bit: label for bit, (_, label) in best.items()}


def _bits(cell):
    for port, bits in cell["connections"].items():
        for bit in bits:
            if not isinstance(bit, str):
                yield port, bit


class Netlist:
    """Drivers, fan-outs and the arrival depth of every net bit of a flat Yosys module."""

    def __init__(self, module):
        self.cells = {n: c for n, c in module["cells"].items() if c["type"] != "$scopeinfo"}
        self.names = signal_names(module)
        self.drivers, self.inputs, self.fanout = {}, {}, defaultdict(int)
        for name, cell in self.cells.items():
            directions = cell.get("port_directions", {})
            self.inputs[name] = []
            for port, bit in _bits(cell):
                if directions.get(port) == "output":
                    self.drivers[bit] = (name, port)
                else:
                    self.inputs[name].append((port, bit))
                    self.fanout[bit] += 1
        self.arrival, self.via = {}, {}

    def _fan_in(self, bit):
        name, out_port = self.drivers[bit]
        kind = self.cells[name]["type"]
        for port, source in self.inputs[name]:
            step = levels(kind, port, out_port)
            if step is not None:
                yield step, source

    def _is_logic(self, bit):
        driver = self.drivers.get(bit)
        return driver is not None and self.cells[driver[0]]["type"] in COMBINATIONAL

    def depth(self, root):
        """Levels of logic before ``root`` (iterative: a chain can be thousands deep)."""
        stack, open_bits = [(root, False)], set()
        while stack:
            bit, expanded = stack.pop()
            if bit in self.arrival:
                continue
            if not self._is_logic(bit):
                self.arrival[bit], self.via[bit] = 0.0, None
            elif not expanded:
                if bit not in open_bits:   # else a loop, or already waiting below
                    open_bits.add(bit)
                    stack.append((bit, True))
                    stack.extend((source, False) for _, source in self._fan_in(bit)
                                 if source not in self.arrival and source not in open_bits)
            else:
                best, via = 0.0, None
                for step, source in self._fan_in(bit):
                    if self.arrival.get(source, 0.0) + step > best:
                        best, via = self.arrival.get(source, 0.0) + step, source
                self.arrival[bit], self.via[bit] = best, via
                open_bits.discard(bit)
        return self.arrival[root]

    def path(self, bit):
        """The bits of the deepest chain into ``bit``, start first."""
        bits = []
        while bit is not None:
            bits.append(bit)
            bit = self.via.get(bit)
        return bits[::-1]

    def end_points(self):
        """``(cell, port, bit, label, group)`` of every timing end point inside the design."""
        for name, cell in self.cells.items():
            kind = cell["type"]
            ports = END_PORTS.get(kind, set())
            if kind == "DP16KD":
                ports = {p for p, d in cell["port_directions"].items() if d == "input"}
            for port, bit in _bits(cell):
                if port.rstrip("0123456789") not in ports or port.startswith("CLK"):
                    continue
                if kind == "TRELLIS_FF":
                    label = self.names.get(cell["connections"]["Q"][0], name)
                    group = re.sub(r"\[\d+\]$", "", label)
                else:
                    label = self.names.get(bit, name)
                    group = kind + " " + re.sub(r"(\.\d+)+_\w+$", "", label)
                yield name, port, bit, f"{label} .{port}", f"{group} .{port.rstrip('0123456789')}"


def deepest_chains(module, ports=False):
    """The deepest chain into each end-point group of ``module``, deepest first; chains
    from top-level inputs (and into top-level outputs) only with ``ports``."""
    netlist = Netlist(module)
    best = {}

    def consider(bit, label, group):
        depth = netlist.depth(bit)
        path = netlist.path(bit)
        if not ports and path[0] not in netlist.drivers:
            return                         # starts at a top-level input
        if group not in best or depth > best[group].depth:
            names = [netlist.names.get(b, "?") for b in path]
            best[group] = Chain(depth, names[0], label, names,
                                max(netlist.fanout[b] for b in path))

    for _, _, bit, label, group in netlist.end_points():
        consider(bit, label, group)
    if ports:
        for name, port in module["ports"].items():
            if port["direction"] == "output":
                for bit in port["bits"]:
                    if not isinstance(bit, str):
                        consider(bit, f"output {name}", f"output {name}")
    return sorted(best.values(), key=lambda chain: -chain.depth)


def top_module(design):
    return next(m for m in design["modules"].values() if m.get("attributes", {}).get("top"))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tb.depth",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("netlist", help="a synth_ecp5 netlist JSON")
    parser.add_argument("--top", type=int, default=40, help="how many end points (40)")
    parser.add_argument("--min", type=float, default=0, help="only chains this deep or more")
    parser.add_argument("--match", help="a regular expression on the names along a chain")
    parser.add_argument("--path", action="store_true", help="print the signals along each chain")
    parser.add_argument("--ports", action="store_true",
                        help="also chains from top-level inputs and to top-level outputs")
    args = parser.parse_args(argv)

    with open(args.netlist) as f:
        chains = deepest_chains(top_module(json.load(f)), ports=args.ports)
    pattern = re.compile(args.match) if args.match else None
    chains = [c for c in chains if c.depth >= args.min
              and (pattern is None or any(pattern.search(n) for n in c.signals + [c.end]))]
    histogram = defaultdict(int)
    for chain in chains:
        histogram[int(chain.depth)] += 1
    print(f"{len(chains)} end points; end points per depth: "
          + ", ".join(f"{d}: {histogram[d]}" for d in sorted(histogram, reverse=True)[:12]))
    for chain in chains[:args.top]:
        print(f"{chain.depth:5.1f}  fan-out {chain.fanout:4d}  {chain.start}  ->  {chain.end}")
        if args.path:
            along = [n for k, n in enumerate(chain.signals) if k == 0 or n != chain.signals[k - 1]]
            print("        " + "\n        ".join(along))
    return 0


if __name__ == "__main__":
    sys.exit(main())
