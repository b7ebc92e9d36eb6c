"""Fast amaranth.sim tests of ``hw/qcc.py``: clock-by-clock against the golden model.

The same :class:`tb.test_qcc.CycleChecker` as the cocotb testbenches, driven from
Python without building Verilog, at small sizes.
"""

import os
import random
from collections import deque

import numpy as np
import pytest
from amaranth.sim import Simulator

from golden.qcc import Command, EType, Kind
from hw.qcc import QCC
from tb.test_qcc import (CycleChecker, Sample, encode_command, model_of, random_command,
                         random_query)

SMALL = dict(records=8, entities=6, lines=24, frames=4)


class SimBench:
    """Drives a QCC in amaranth.sim: sources with gaps, sinks with stalls, processors
    with random latency that complete out of order."""

    def __init__(self, dut, rng, *, gap=0.3, stall=0.3, latency=(1, 8)):
        self.dut = dut
        self.rng = rng
        self.gap, self.stall, self.latency = gap, stall, latency
        self.model = model_of(dut.config())
        self.checker = CycleChecker(self.model, dut.lines)
        self.sources = {"cmd": deque(), "query": deque()}
        self.presenting = {"cmd": None, "query": None}
        self.due = {Kind.NUMERIC: [], Kind.MOVE: []}

    def send(self, port, commands):
        self.sources[port].extend(encode_command(c) for c in commands)

    @property
    def idle(self):
        return not any(self.sources.values()) and not any(self.presenting.values()) \
            and not any(self.due.values()) and not self.checker.pending() \
            and self.model.idle()

    async def clock(self, ctx):
        dut, rng = self.dut, self.rng
        for port in ("cmd", "query"):
            if self.presenting[port] is None and self.sources[port] and rng.random() >= self.gap:
                self.presenting[port] = self.sources[port].popleft()
            stream = getattr(dut, port)
            ctx.set(stream.valid, self.presenting[port] is not None)
            ctx.set(stream.payload.as_value(), self.presenting[port] or 0)
        done = {}
        for kind, port in ((Kind.NUMERIC, dut.n_done), (Kind.MOVE, dut.m_done)):
            ready_now = [i for i, (t, _) in enumerate(self.due[kind]) if t <= self.checker.clocks]
            if ready_now:
                done[kind] = self.due[kind].pop(ready_now[int(rng.integers(len(ready_now)))])[1]
            ctx.set(port.valid, kind in done)
            ctx.set(port.payload.as_value(), done.get(kind, 0))
        for name in CycleChecker.PORTS:
            ctx.set(getattr(dut, name).ready, rng.random() >= self.stall)
        sample = Sample(n_done=done.get(Kind.NUMERIC), m_done=done.get(Kind.MOVE),
                        outputs={}, status=tuple(ctx.get(getattr(dut.status, f)) for f in
                                                 ("free_records", "free_entities",
                                                  "free_lines", "free_run", "error")))
        for port in ("cmd", "query"):
            stream = getattr(dut, port)
            if self.presenting[port] is not None and ctx.get(stream.ready):
                setattr(sample, port, self.presenting[port])
                self.presenting[port] = None
        for name in CycleChecker.PORTS:
            stream = getattr(dut, name)
            sample.outputs[name] = (ctx.get(stream.valid), ctx.get(stream.ready),
                                    ctx.get(stream.payload.as_value()))
        sample.n_ready = not sample.outputs["n_issue"][0] or sample.outputs["n_issue"][1]
        sample.m_ready = not sample.outputs["m_issue"][0] or sample.outputs["m_issue"][1]
        before = {k: len(self.checker.seen[p]) for k, p in
                  ((Kind.NUMERIC, "n_issue"), (Kind.MOVE, "m_issue"))}
        self.checker.clock(sample)
        for kind, port in ((Kind.NUMERIC, "n_issue"), (Kind.MOVE, "m_issue")):
            for issue in self.checker.seen[port][before[kind]:]:
                lat = int(rng.integers(self.latency[0], self.latency[1] + 1))
                self.due[kind].append((self.checker.clocks + lat, issue.record))
        await ctx.tick()


def simulate(dut, body, *, seed=None):
    seed = int(os.environ.get("SEED") or random.SystemRandom().randrange(1 << 31)) \
        if seed is None else seed
    print(f"seed {seed} (rerun with SEED={seed})")
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    rng = np.random.default_rng(seed)

    async def testbench(ctx):
        await body(ctx, rng)
    sim.add_testbench(testbench)
    sim.run()


async def run_until_idle(ctx, bench, limit):
    for _ in range(limit):
        await bench.clock(ctx)
        if bench.idle:
            return
    raise AssertionError(f"not idle after {limit} clocks")


def test_directed_sequence():
    """A short script of every op, no gaps, no stalls."""
    dut = QCC(**SMALL)

    async def body(ctx, rng):
        bench = SimBench(dut, rng, gap=0, stall=0, latency=(1, 1))
        bench.send("cmd", [Command.alloc(EType.VERTEX, 2),
                           Command.alloc(EType.PIXEL, 3, hold=True),
                           Command.map(0, 1, 2), Command.search(0, 1), Command.translate(1, 2),
                           Command.translate(1, 3), Command.delete(3), Command(7)])
        bench.send("query", [Command.search(1, 0), Command.translate(0, 1)])
        await run_until_idle(ctx, bench, 300)
        assert len(bench.checker.responses) == 8
    simulate(dut, body)


def test_translate_in_the_clock_its_entity_dies():
    """A TRANSLATE taken in the clock its buffer's entity is killed (RELEASE) is
    answered OK: the entity was live in that clock (the RTL reads the entity's
    ``ent_live`` bit a clock later, corrected by that clock's kills)."""
    dut = QCC(**SMALL)

    async def body(ctx, rng):
        bench = SimBench(dut, rng, gap=0, stall=0, latency=(1, 1))
        bench.send("cmd", [Command.alloc(EType.STATE, 2, hold=True)])
        await run_until_idle(ctx, bench, 300)
        alloc = bench.checker.responses[0][1]
        # RELEASE is taken two clocks after it is first offered (its look-up); the
        # query port takes one request a clock, so the TRANSLATE is its third.
        bench.send("cmd", [Command.release(alloc.entity)])
        bench.send("query", [Command.search(alloc.entity), Command.search(alloc.entity),
                             Command.translate(alloc.record, 1)])
        await run_until_idle(ctx, bench, 300)
        assert bench.checker.coverage["translate in the clock its entity dies"] == 1
    simulate(dut, body)


def test_requests_in_the_clock_after_a_completion_kills_their_entity():
    """A SEARCH of an entity in the clock after its last completion (no ``hold``)
    killed it misses, and a DELETE taken two clocks after answers UNKNOWN: the RTL
    clears the entity's ``ent_live`` bit a clock late (golden decision 15) and
    corrects its reads of it by the registered kill (a look-up reads it a clock before
    its take, and is never taken in the clock right after a completion of its
    frame-0 record). The DELETE is offered at every offset from its entity's ALLOC."""
    dut = QCC(**SMALL)

    async def body(ctx, rng):
        bench = SimBench(dut, rng, gap=0, stall=0, latency=(1, 1))
        for offset in range(10):
            bench.send("cmd", [Command.alloc(EType.STATE, 1)])      # one MOVE stage
            for _ in range(offset):
                await bench.clock(ctx)
            bench.send("cmd", [Command.delete(0)])
            bench.send("query", [Command.search(0)] * 4)
            await run_until_idle(ctx, bench, 300)
        cover = bench.checker.coverage
        assert cover["cmd DELETE 2 clock(s) after its entity's last completion"] >= 1
        assert cover["query SEARCH 1 clock(s) after its entity's last completion"] >= 1
    simulate(dut, body)


@pytest.mark.parametrize("gap, stall", [pytest.param(0.0, 0.0, marks=pytest.mark.slow), (0.3, 0.3),
                                        pytest.param(0.6, 0.1, marks=pytest.mark.slow)])
def test_random(gap, stall):
    """Random mixes of every request, with gaps, stalls and random latencies."""
    dut = QCC(**SMALL)
    config = dut.config()

    async def body(ctx, rng):
        bench = SimBench(dut, rng, gap=gap, stall=stall, latency=(1, 6))
        bench.send("cmd", [random_command(rng, config) for _ in range(300)])
        bench.send("query", [random_query(rng, config) for _ in range(200)])
        await run_until_idle(ctx, bench, 6000)
    simulate(dut, body)


# ---------------------------------------------------------------- parameters and encodings

@pytest.mark.parametrize("kw, exc, msg", [
    (dict(records=0), ValueError, "records must be an integer from 1 to 256, not 0"),
    (dict(records=257), ValueError, "records must be an integer from 1 to 256, not 257"),
    (dict(records="8"), TypeError, "records must be an integer from 1 to 256, not '8'"),
    (dict(records=True), TypeError, "records must be an integer from 1 to 256, not True"),
    (dict(entities=0), ValueError, "entities must be an integer from 1 to 256, not 0"),
    (dict(lines=1025), ValueError, "lines must be an integer from 1 to 1024, not 1025"),
    (dict(lines=2.0), TypeError, "lines must be an integer from 1 to 1024, not 2.0"),
    (dict(frames=17), ValueError, "frames must be an integer from 1 to 16, not 17"),
    (dict(programs=5), TypeError, "programs must be a sequence of 5 stage programs"),
    (dict(programs=[[(0, 1)]] * 4), ValueError, "programs must have 5 entries, not 4"),
    (dict(programs=[[(0, 1)]] * 4 + [[]]), ValueError,
     r"programs\[4\] must be a sequence of 1 to 8 \(kind, desc\) stages"),
    (dict(programs=[[(0, 1)]] * 4 + [[(0, 1)] * 9]), ValueError,
     r"programs\[4\] must be a sequence of 1 to 8"),
    (dict(programs=[[(2, 1)]] * 5), ValueError,
     r"programs\[0\]\[0\] kind must be an integer from 0 to 1, not 2"),
    (dict(programs=[[(0, 256)]] * 5), ValueError,
     r"programs\[0\]\[0\] desc must be an integer from 0 to 255, not 256"),
    (dict(programs=[[0]] * 5), TypeError, r"programs\[0\]\[0\] must be a \(kind, desc\) pair"),
])
def test_bad_parameters(kw, exc, msg):
    with pytest.raises(exc, match=msg):
        QCC(**kw)


def test_hw_constants_match_the_golden_model():
    """The RTL's enumerations, reset programs and port widths are the model's."""
    import golden.qcc as g
    import hw.qcc as h
    for name in ("Kind", "EType", "Op", "Code"):
        assert {e.name: e.value for e in getattr(h, name)} == \
            {e.name: e.value for e in getattr(g, name)}, name
    assert [[(int(k), d) for k, d in p] for p in h.DEFAULT_PROGRAMS] == \
        [[(int(s.kind), s.desc) for s in p] for p in g.DEFAULT_PROGRAMS]
    assert (h.N_TYPES, h.MAX_STAGES, h.MAX_BUF_LINES, h.DONE_STAGE) == \
        (g.N_TYPES, g.MAX_STAGES, g.MAX_BUF_LINES, g.DONE_STAGE)
    assert h.COMMAND.size == 111 and h.ISSUE.size == 39
    for lines in (1, 2, 24, 256, 1000):
        assert h.addr_width(lines) == g.addr_width(lines)
        assert h.response_layout(lines).size == 48 + g.addr_width(lines)
    dut = QCC(records=8, entities=6, lines=24, frames=4)
    assert model_of(dut.config()).status() == (8, 6, 24, 24, False)


@pytest.mark.parametrize("bits", range(1, 10))
def test_fifo_pointer_steps_through_every_slot(bits):
    """A FIFO pointer's step (``hw.qcc._successor``, the logic) visits each of the
    ``2 ** bits`` slots once per cycle, starting from slot 0: the ring never skips or
    repeats a slot."""
    from amaranth.hdl import Module, Signal
    from hw.qcc import _successor, _successor_taps
    m = Module()
    value, step = Signal(bits), Signal(bits)
    m.d.comb += step.eq(_successor(value, _successor_taps(bits)))
    sim = Simulator(m)
    seen = []

    async def testbench(ctx):
        current = 0
        for _ in range(1 << bits):
            seen.append(current)
            ctx.set(value, current)
            current = ctx.get(step)
        seen.append(current)

    sim.add_testbench(testbench)
    sim.run()
    assert sorted(seen[:-1]) == list(range(1 << bits)), "a slot skipped or repeated"
    assert seen[-1] == 0, "the cycle does not close after every slot"
