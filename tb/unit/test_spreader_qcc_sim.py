"""Fast amaranth.sim tests of the spreader-QCC adapter (``hw.spreader.SpreaderQCC``)
with a fake QCC behind it: answers no real QCC gives, which the cocotb co-simulation
(``tb/test_spreader_qcc.py``, real QCCs) cannot produce."""

import pytest
from amaranth.hdl import Module
from amaranth.sim import Simulator

from hw.qcc import QCC, Code
from hw.spreader import SpreaderQCC


class FakeQCC(QCC):
    """A QCC's ports (its signature and programs) with a stand-in behind them: every
    command taken at once and answered OK in the next clock with entity ``answer``;
    the status shows every resource free."""

    def __init__(self, *, answer, **params):
        super().__init__(**params)
        self.answer = answer

    def elaborate(self, platform):
        m = Module()
        c, r, st = self.cmd, self.resp, self.status
        m.d.comb += [c.ready.eq(1), st.free_records.eq(self.records),
                     st.free_entities.eq(self.entities), st.free_lines.eq(self.lines),
                     st.free_run.eq(self.lines)]
        with m.If(c.valid):
            m.d.sync += [r.valid.eq(1), r.payload.op.eq(c.payload.op),
                         r.payload.code.eq(Code.OK), r.payload.entity.eq(self.answer)]
        with m.Elif(r.ready):
            m.d.sync += r.valid.eq(0)
        return m


def _adapter_error_after_one_alloc(answer, entities=8):
    """A vertex packet into a one-EU SpreaderQCC whose QCC answers entity ``answer``:
    (``adapter_error`` within 40 clocks, requests seen on ``alloc[0]``)."""
    sq = SpreaderQCC(n_eus=1, records=8, entities=entities, lines=16)
    sq._qccs[0] = FakeQCC(answer=answer, **sq.qcc_params)
    sim = Simulator(sq)
    sim.add_clock(1e-6)
    seen = {"error": False, "requests": 0}

    async def bench(ctx):
        ctx.set(sq.log.ready, 1)
        ctx.set(sq.err.ready, 1)
        ctx.set(sq.move.ready, 1)
        v = sq.i_vtx
        ctx.set(v.payload.base, 0)
        ctx.set(v.payload.count, 3)
        ctx.set(v.payload.size, 1)
        ctx.set(v.valid, 1)
        for _ in range(40):
            taken = ctx.get(v.ready)
            seen["requests"] += ctx.get(sq.alloc_tap[0].valid) and ctx.get(sq.alloc_tap[0].ready)
            seen["error"] |= bool(ctx.get(sq.adapter_error))
            await ctx.tick()
            if taken:
                ctx.set(v.valid, 0)

    sim.add_testbench(bench)
    sim.run()
    return seen


@pytest.mark.parametrize("answer", [8, 9, 255])
def test_alloc_answered_with_entity_out_of_range_sets_adapter_error(answer):
    """An ALLOC answered OK with an entity number not below ``entities`` (8): the
    adapter's sticky ``adapter_error`` rises (the number would alias a real entity once
    cut to the adapter's three bits)."""
    seen = _adapter_error_after_one_alloc(answer)
    assert seen["requests"] == 1 and seen["error"]


def test_alloc_answered_with_entity_in_range_sets_no_adapter_error():
    """The same run with entity 7 (the highest a QCC with 8 entities names): answered,
    no ``adapter_error``."""
    seen = _adapter_error_after_one_alloc(7)
    assert seen["requests"] == 1 and not seen["error"]
