"""``tb.depth`` on small hand-made netlists in Yosys's JSON form: levels counted per
cell kind, the deepest chain per register, chains from top-level inputs left out."""

from tb.depth import deepest_chains

FF = {"CLK": "input", "DI": "input", "CE": "input", "LSR": "input", "Q": "output"}
LUT = {"A": "input", "B": "input", "C": "input", "D": "input", "Z": "output"}
CARRY = {"A0": "input", "B0": "input", "CIN": "input", "S0": "output", "COUT": "output"}


def ff(q, di):
    return {"type": "TRELLIS_FF", "port_directions": FF,
            "connections": {"CLK": [1], "DI": [di], "CE": ["1"], "LSR": ["0"], "Q": [q]}}


def lut(z, *ins):
    return {"type": "LUT4", "port_directions": LUT,
            "connections": {"Z": [z], **{p: [b] for p, b in zip("ABCD", ins)}}}


def carry(s, cout, a, cin):
    return {"type": "CCU2C", "port_directions": CARRY,
            "connections": {"A0": [a], "B0": ["0"], "CIN": [cin], "S0": [s], "COUT": [cout]}}


def module(cells, nets, inputs=()):
    return {"attributes": {"top": "00000000000000000000000000000001"},
            "ports": {"clk": {"direction": "input", "bits": [1]},
                      **{n: {"direction": "input", "bits": [b]} for n, b in inputs}},
            "cells": cells,
            "netnames": {n: {"hide_name": 0, "bits": b, "attributes": {}}
                         for n, b in nets.items()}}


def test_the_deepest_chain_into_each_register_named_by_its_signals():
    # a -> three LUTs -> b[0]; a -> one LUT -> b[1]; c -> one LUT -> d
    cells = {"fa": ff(10, 11), "fb0": ff(20, 13), "fb1": ff(21, 14), "fc": ff(30, 11),
             "fd": ff(31, 15),
             "l1": lut(16, 10), "l2": lut(17, 16, 10), "l3": lut(13, 17, 30),
             "l4": lut(14, 10), "l5": lut(15, 30)}
    nets = {"a": [10], "b": [20, 21], "c": [30], "d": [31], "mid": [17],
            "b_TRELLIS_FF_Q_DI_LUT4_Z": [13]}
    chains = deepest_chains(module(cells, nets))
    by_end = {c.end: c for c in chains}
    assert by_end["b[0] .DI"].depth == 3          # the two bits of b: one line, its deepest
    assert "b[1] .DI" not in by_end
    assert by_end["b[0] .DI"].start == "a"
    assert "mid" in by_end["b[0] .DI"].signals
    assert by_end["d .DI"].depth == 1
    assert chains[0].end == "b[0] .DI"             # deepest first
    assert by_end["b[0] .DI"].fanout == 3          # a feeds l1, l2, l4


def test_a_carry_chain_counts_its_first_level_and_a_tenth_per_cell():
    cells = {"fa": ff(10, 11), "fb": ff(20, 24),
             "c1": carry(21, 22, 10, "0"), "c2": carry(23, 25, "0", 22),
             "c3": carry(24, 26, "0", 25)}
    chains = deepest_chains(module(cells, {"a": [10], "b": [20]}))
    assert [round(c.depth, 1) for c in chains if c.end == "b .DI"] == [1.2]


def test_chains_from_top_level_inputs_only_when_asked():
    cells = {"fb": ff(20, 13), "l1": lut(12, 40), "l2": lut(13, 12)}
    nets = {"b": [20], "din": [40]}
    assert deepest_chains(module(cells, nets, inputs=[("din", 40)])) == []
    (chain,) = deepest_chains(module(cells, nets, inputs=[("din", 40)]), ports=True)
    assert (chain.start, chain.depth) == ("din", 2)
