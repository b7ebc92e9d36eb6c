"""Amaranth-simulator checks of ``hw.spreader`` registers that the lock-step tests reach
too rarely to catch an error in them.

The held triangle's and pixel packet's provider compares (``held_tri_eq``,
``held_pix_eq``; ``hw/spreader.py`` decision 15) are registers computed a clock ahead
from the next values of the packet registers. They matter only for a parked triangle
(pixel packet) whose vertex group (triangle) a packet inside the spreader provides,
which the producer contract makes rare: a lock-step run with those registers forced to
0 passed. So this test drives random traffic from a small index space (many equal
groups) with random answers, completions and back-pressure and checks in every clock
that each register equals the compare of the registers it stands for.
"""

import numpy as np
import pytest
from amaranth.sim import Simulator

from hw.spreader import PAT, PIX, TRI, VTX, Spreader


class _Probe(Spreader):
    """The spreader, keeping its elaboration state (``probe``) for the test."""

    def _stage_p(self, m, s, *args):
        self.probe = s
        return super()._stage_p(m, s, *args)


def _groups(ctx, s):
    """The provider groups (``hw.spreader._provider_groups``' order) as integers."""
    held, c = s.held, s.c_held
    return [ctx.get(held[VTX].base) >> 3, ctx.get(held[PAT].base) >> 3,
            ctx.get(s.held_pat_g1), ctx.get(c[VTX].base) >> 3, ctx.get(c[PAT].base) >> 3,
            ctx.get(s.c_pat_g1)]


@pytest.mark.parametrize("seed", [1])
def test_registered_provider_compares_equal_the_compares_of_the_registers(seed):
    rng = np.random.default_rng(seed)
    dut = _Probe(n_eus=2, vdt_records=4, pt_records=4, index_bits=6, prid_bits=3,
                 eu_records=8, eu_lines=16, fifo_depth=2)
    checked = {"tri": 0, "pix": 0, "equal": 0}

    async def bench(ctx):
        s = None
        for _ in range(600):
            for port in (dut.i_vtx, dut.i_tri, dut.i_pix, dut.i_pat):
                ctx.set(port.valid, int(rng.random() < 0.6))
            ctx.set(dut.i_vtx.payload.base, int(rng.integers(8)) * 8)
            ctx.set(dut.i_vtx.payload.count, int(rng.integers(1, 9)))
            ctx.set(dut.i_vtx.payload.size, int(rng.integers(1, 3)))
            ctx.set(dut.i_pat.payload.base, int(rng.integers(8)) * 8)
            ctx.set(dut.i_pat.payload.size, int(rng.integers(1, 3)))
            for f in ("i0", "i1", "i2"):
                ctx.set(getattr(dut.i_tri.payload, f), int(rng.integers(64)))
            ctx.set(dut.i_tri.payload.prid, int(rng.integers(8)))
            ctx.set(dut.i_tri.payload.size, int(rng.integers(1, 3)))
            ctx.set(dut.i_pix.payload.prid, int(rng.integers(8)))
            ctx.set(dut.i_pix.payload.mask, int(rng.integers(4)))
            ctx.set(dut.i_pix.payload.size, int(rng.integers(1, 3)))
            for e in range(2):
                ctx.set(dut.status[e].free_records, int(rng.integers(9)))
                ctx.set(dut.status[e].free_entities, int(rng.integers(3)))
                ctx.set(dut.status[e].free_lines, int(rng.integers(17)))
                ctx.set(dut.accept[e], int(rng.random() < 0.7))
                ctx.set(dut.entity[e], int(rng.integers(256)))
            ctx.set(dut.done.valid, int(rng.random() < 0.3))
            ctx.set(dut.done.payload.eu, int(rng.integers(2)))
            ctx.set(dut.done.payload.entity, int(rng.integers(256)))
            for port in (dut.move, dut.log, dut.release, dut.err):
                ctx.set(port.ready, int(rng.random() < 0.8))
            await ctx.tick()
            s = dut.probe
            groups = _groups(ctx, s)
            tri = s.held[TRI]
            eq = ctx.get(s.held_tri_eq.as_value())
            for i, f in enumerate(("i0", "i1", "i2")):
                g = ctx.get(getattr(tri, f)) >> 3
                for n, gr in enumerate(groups):
                    assert (eq >> (6 * i + n)) & 1 == int(g == gr), (i, n)
                    checked["tri"] += 1
                    checked["equal"] += int(g == gr)
            prid = ctx.get(s.held[PIX].prid)
            peq = ctx.get(s.held_pix_eq)
            assert peq & 1 == int(prid == ctx.get(tri.prid))
            assert peq >> 1 & 1 == int(prid == ctx.get(s.c_held[TRI].prid))
            checked["pix"] += 1

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    # the compares were both true and false many times
    assert checked["equal"] > 100 and checked["tri"] - checked["equal"] > 100
