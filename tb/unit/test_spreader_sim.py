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
from amaranth.hdl import Module
from amaranth.lib.fifo import SyncFIFO
from amaranth.sim import Simulator

from hw.spreader import PAT, PIX, TRI, VTX, Spreader, StagedFIFO


class _Probe(Spreader):
    """The spreader, keeping its elaboration state (``probe``) for the test."""

    def _stage_p(self, m, s, *args):
        self.probe = s
        return super()._stage_p(m, s, *args)

    def _advance(self, m, s, *args):
        self.ptab = args[-1]
        return super()._advance(m, s, *args)


def _groups(ctx, s):
    """The provider groups (``hw.spreader._provider_groups``' order) as integers."""
    held, c = s.held, s.c_held
    return [ctx.get(held[VTX].base) >> 3, ctx.get(held[PAT].base) >> 3,
            ctx.get(s.held_pat_g1), ctx.get(c[VTX].base) >> 3, ctx.get(c[PAT].base) >> 3,
            ctx.get(s.c_pat_g1)]


def _check_stage_sets(ctx, s, checked):
    """Stage P's hazard checks read R's and C's stream as one-hot registers (``r_is``,
    ``c_is``; decision 20): each must equal its stage's valid bit and stream."""
    assert ctx.get(s.r_is) == (ctx.get(s.active) << ctx.get(s.r_stream))
    assert ctx.get(s.c_is) == (ctx.get(s.c_valid) << ctx.get(s.c_stream))
    checked["r_is"] += ctx.get(s.r_is) != 0
    checked["c_is"] += ctx.get(s.c_is) != 0


def _simulate(design, bench):
    """Run ``bench`` as a testbench of ``design`` on Amaranth's simulator."""
    sim = Simulator(design)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def _random_back_pressure(ctx, dut, rng):
    """This clock's ``ready`` of the spreader's output streams, each high 80 % of clocks."""
    for port in (dut.move, dut.log, dut.release, dut.err):
        ctx.set(port.ready, int(rng.random() < 0.8))


@pytest.mark.parametrize("seed", [1])
def test_registered_provider_compares_equal_the_compares_of_the_registers(seed):
    rng = np.random.default_rng(seed)
    dut = _Probe(n_eus=2, vdt_records=4, pt_records=4, index_bits=6, prid_bits=3,
                 eu_records=8, eu_lines=16, fifo_depth=2)
    checked = {"tri": 0, "pix": 0, "equal": 0, "r_is": 0, "c_is": 0}

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
                ctx.set(dut.status[e].free_records, int(rng.integers(9)) if rng.random() < 0.5 else 0)
                ctx.set(dut.status[e].free_entities, int(rng.integers(3)))
                ctx.set(dut.status[e].free_lines, int(rng.integers(17)))
                ctx.set(dut.accept[e], int(rng.random() < 0.7))
                ctx.set(dut.entity[e], int(rng.integers(256)))
            ctx.set(dut.done.valid, int(rng.random() < 0.3))
            ctx.set(dut.done.payload.eu, int(rng.integers(2)))
            ctx.set(dut.done.payload.entity, int(rng.integers(256)))
            _random_back_pressure(ctx, dut, rng)
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
            _check_stage_sets(ctx, s, checked)
            prid = ctx.get(s.held[PIX].prid)
            peq = ctx.get(s.held_pix_eq)
            assert peq & 1 == int(prid == ctx.get(tri.prid))
            assert peq >> 1 & 1 == int(prid == ctx.get(s.c_held[TRI].prid))
            checked["pix"] += 1

    _simulate(dut, bench)
    # the compares were both true and false many times
    assert checked["equal"] > 100 and checked["tri"] - checked["equal"] > 100
    assert checked["r_is"] > 50


@pytest.mark.parametrize("seed", [1])
def test_held_pixel_packets_pt_word_is_read_a_clock_ahead(seed):
    """The held pixel packet's PT word (``PrimitiveTable.held_look``, decision 17) is a
    register read a clock ahead at the record of the packet held after the edge and
    transparent for that edge's write: in every clock it must equal the word the PT
    holds now for the held packet's record (a mirror of the PT's writes). Traffic in
    the producer contract's order, round after round: a vertex group, a triangle on it
    (closing it), pixel packets and an end marker of its ``prid`` (each packet offered
    once its provider was taken), with random gaps, answers with fresh entities, random
    refusals and completions of the entities in flight, so that PT records are written,
    released and written again while pixel packets are parked."""
    rng = np.random.default_rng(seed)
    dut = _Probe(n_eus=2, vdt_records=4, pt_records=4, index_bits=8, prid_bits=3,
                 eu_records=8, eu_lines=16, fifo_depth=2)
    checked = {"writes": 0, "held": 0, "r_is": 0, "c_is": 0}
    streams = (dut.i_vtx, dut.i_tri, dut.i_pix)

    async def bench(ctx):
        words = [(0, 0, 0)] * 4         # the PT's words (tag, EU, entity): a mirror
        fresh, in_flight = [0, 0], []
        nxt = [0, 0, 0]                 # per stream: its next round (and packet)
        pix_left = 3
        for _ in range(2000):
            # a round's triangle after its vertex group was taken, its pixel packets
            # after the triangle
            show = [rng.random() < 0.7, nxt[1] < nxt[0] and rng.random() < 0.7,
                    nxt[2] < nxt[1] and rng.random() < 0.7]
            for port, v in zip(streams, show):
                ctx.set(port.valid, int(v))
            r = nxt[0]
            ctx.set(dut.i_vtx.payload.base, (r % 32) * 8)
            ctx.set(dut.i_vtx.payload.count, 8)
            ctx.set(dut.i_vtx.payload.size, 1)
            r = nxt[1]
            for f in ("i0", "i1", "i2"):
                ctx.set(getattr(dut.i_tri.payload, f), (r % 32) * 8 + int(rng.integers(8)))
            ctx.set(dut.i_tri.payload.prid, r % 8)
            ctx.set(dut.i_tri.payload.size, 1)
            ctx.set(dut.i_tri.payload.last, 7)
            r = nxt[2]
            ctx.set(dut.i_pix.payload.prid, r % 8)
            ctx.set(dut.i_pix.payload.mask, 1 if pix_left else 0)
            ctx.set(dut.i_pix.payload.last, int(not pix_left))
            ctx.set(dut.i_pix.payload.size, 1)
            for e in range(2):
                ctx.set(dut.status[e].free_records, int(rng.integers(9)) if rng.random() < 0.5 else 0)
                ctx.set(dut.status[e].free_entities, 8)
                ctx.set(dut.status[e].free_lines, 16)
                ctx.set(dut.alloc[e].ready, int(rng.random() < 0.8))
                ctx.set(dut.accept[e], int(rng.random() < 0.8))
                ctx.set(dut.entity[e], fresh[e])
            done = in_flight and rng.random() < 0.5
            if done:
                ctx.set(dut.done.payload.eu, in_flight[0][0])
                ctx.set(dut.done.payload.entity, in_flight[0][1])
                in_flight.pop(0)
            ctx.set(dut.done.valid, int(bool(done)))
            _random_back_pressure(ctx, dut, rng)
            # this clock's accepts, the packets taken and the PT's write at this edge
            # (stage C's triangle)
            for e in range(2):
                if ctx.get(dut.alloc[e].valid) and ctx.get(dut.alloc[e].ready) \
                        and ctx.get(dut.accept[e]):
                    in_flight.append((e, fresh[e]))
                    fresh[e] = (fresh[e] + 1) % 256
            taken = [ctx.get(port.valid) and ctx.get(port.ready) for port in streams]
            al = dut.ptab.alloc
            write = (ctx.get(al.en), ctx.get(al.rec) & 3,
                     (ctx.get(al.word.tag), ctx.get(al.word.eu), ctx.get(al.word.entity)))
            await ctx.tick()
            nxt[0] += taken[0]
            nxt[1] += taken[1]
            if taken[2]:
                pix_left, nxt[2] = (pix_left - 1, nxt[2]) if pix_left else (3, nxt[2] + 1)
            if write[0]:
                words[write[1]] = write[2]
                checked["writes"] += 1
            s = dut.probe
            look = dut.ptab.held_look
            word = words[ctx.get(s.held[PIX].prid) & 3]
            assert (ctx.get(look.tag), ctx.get(look.eu), ctx.get(look.entity)) == word
            checked["held"] += int(word != (0, 0, 0) and ctx.get(s.parked) >> PIX & 1)
            _check_stage_sets(ctx, s, checked)
        assert not ctx.get(dut.error)

    _simulate(dut, bench)
    # PT records were written (and rewritten), and parked pixel packets named them
    assert checked["writes"] > 40 and checked["held"] > 100, checked
    assert checked["r_is"] > 100 and checked["c_is"] > 40, checked


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_staged_fifo_behaves_as_a_sync_fifo(depth):
    """``StagedFIFO`` (the error FIFO, decision 18) registers its write side but must
    show, clock for clock, what ``SyncFIFO`` of the same depth shows: ``w_rdy``,
    ``r_rdy`` and the head, under random writes and reads (full and empty often)."""
    rng = np.random.default_rng(depth)
    m = Module()
    m.submodules.dut = dut = StagedFIFO(width=8, depth=depth)
    m.submodules.ref = ref = SyncFIFO(width=8, depth=depth)
    seen = {"full": 0, "direct": 0}

    async def bench(ctx):
        for n in range(3000):
            bias = 0.8 if (n // 200) % 2 else 0.3       # phases that fill and drain
            w_en, r_en, data = rng.random() < bias, rng.random() < 1 - bias + 0.1, n & 255
            for f in (dut, ref):
                ctx.set(f.w_en, w_en)
                ctx.set(f.w_data, data)
                ctx.set(f.r_en, r_en)
            assert ctx.get(dut.w_rdy) == ctx.get(ref.w_rdy), n
            assert ctx.get(dut.r_rdy) == ctx.get(ref.r_rdy), n
            if ctx.get(ref.r_rdy):
                assert ctx.get(dut.r_data) == ctx.get(ref.r_data), n
            seen["full"] += int(not ctx.get(ref.w_rdy))
            seen["direct"] += int(ctx.get(ref.level) == 1 and r_en)
            await ctx.tick()

    _simulate(m, bench)
    assert seen["full"] > 50 and seen["direct"] > 50, seen
