"""Testbenches of the token FIFO and the token-synchronised units (``hw/sync.py``).

Pytest runs each design on both simulators (``test_fifo``, ``test_unit``); inside the
simulator the cocotb tests below check the RTL against ``golden/sync.py`` under random
input gaps and output back-pressure, plus directed corner cases.
"""

import os

import cocotb
import pytest
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly

from golden.sync import EventId, Token, UnitModel, data_word, describe, token_word
from tb.harness import (StreamDriver, StreamMonitor, check_equal, params, reset,
                        run_cocotb, simulators, start, wait_until)

EV_IN = ("ev_in__start", "ev_in__end", "ev_in__id")
SOAK_ENV = "FRESCO_SOAK"      # how many times longer unit_random runs

UNIT_DESIGNS = {
    # name: (hw.gen design, parameters) -- small FIFOs keep the discard test short
    "regular": ("sync.regular", {"fifo_depth": 16}),
    "fork": ("sync.fork", {"n_outputs": 3, "route_lo": 4}),
    "join": ("sync.join", {"n_inputs": 3}),
    "join_fork": ("sync.join_fork", {"n_inputs": 2, "n_outputs": 3, "fifo_depth": 4}),
    "csp": ("sync.csp", {}),
    "tsu_asu": ("sync.tsu_asu", {}),
    "zpreset": ("sync.zpreset", {}),
}


# ---------------------------------------------------------------- pytest entry points

@pytest.mark.parametrize("simulator", simulators())
def test_fifo(simulator):
    run_cocotb("sync.token_fifo", "tb.test_sync", simulator, {"depth": 8, "width": 32},
               testcase=["fifo_random", "fifo_full"])


@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("unit", list(UNIT_DESIGNS))
def test_unit(unit, simulator):
    design, unit_params = UNIT_DESIGNS[unit]
    run_cocotb(design, "tb.test_sync", simulator, unit_params,
               testcase=[name for name in UNIT_TESTS if _applies(name, unit)])


@pytest.mark.slow
@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("unit", list(UNIT_DESIGNS))
def test_unit_soak(unit, simulator):
    """``make regress``: random traffic 40 times longer than in ``make test``."""
    design, unit_params = UNIT_DESIGNS[unit]
    run_cocotb(design, "tb.test_sync", simulator, unit_params, testcase=["unit_random"],
               extra_env={SOAK_ENV: "40"})


def _applies(test, unit):
    only = {"interrupt_markers": {"csp"}, "zpreset_end_triangle": {"zpreset"},
            "discard_full_fifo": {"regular", "join_fork"},
            "join_skewed_events": {"join", "join_fork", "zpreset"}}
    return unit in only.get(test, {unit})


UNIT_TESTS = ["unit_random", "every_token_code", "malformed_words", "ev_in_strobes",
              "reset_mid_batch", "discard_full_fifo", "interrupt_markers",
              "zpreset_end_triangle", "join_skewed_events"]


# ---------------------------------------------------------------- the token FIFO

@cocotb.test()
async def fifo_random(dut):
    """Random words through the FIFO under random gaps and back-pressure come out in order."""
    rng = await start(dut)
    words = [int(w) for w in rng.integers(0, 1 << 33, 600)]
    driver = StreamDriver(dut, "i", rng, gap=0.4)
    monitor = StreamMonitor(dut, "o", rng, stall=0.4)
    depth = params()["depth"]
    levels = set()
    driver.send(words)
    for _ in range(6000):
        await FallingEdge(dut.clk)
        levels.add(int(dut.level.value))
        if len(monitor.items) == len(words):
            break
    check_equal("o", words, monitor.items)
    assert max(levels) <= depth, f"level reached {max(levels)} with depth {depth}"


@cocotb.test()
async def fifo_full(dut):
    """A stalled FIFO fills to ``depth`` and refuses, then streams one word per clock."""
    rng = await start(dut)
    depth = params()["depth"]
    driver = StreamDriver(dut, "i", rng, gap=0)
    monitor = StreamMonitor(dut, "o", rng, stall=1.0)
    words = list(range(1, 4 * depth))
    driver.send(words)
    await ClockCycles(dut.clk, 3 * depth)
    await ReadOnly()
    assert int(dut.level.value) == depth and not int(dut.i__ready.value), "FIFO not full"
    assert driver.accepted == depth
    monitor.stall = 0
    await wait_until(dut, lambda: len(monitor.items) == len(words), timeout=10 * depth)
    check_equal("o", words, monitor.items)
    # From full, with both sides free, the FIFO moves a word per clock after one bubble.
    monitor.stall = 1.0
    driver.send(range(100, 100 + 4 * depth))
    await ClockCycles(dut.clk, 3 * depth)
    before = len(monitor.items)
    monitor.stall = 0
    await ClockCycles(dut.clk, 2 * depth)
    moved = len(monitor.items) - before
    assert moved >= 2 * depth - 2, f"only {moved} words in {2 * depth} clocks"


# ---------------------------------------------------------------- unit helpers

def unit_config():
    """The running unit's configuration, as ``golden.sync.UnitModel`` takes it."""
    from hw.gen import build
    return build(os.environ["FRESCO_DESIGN"], params()).config()


def data_item(config, value, route=0):
    """A data item for output ``route`` of a unit with ``config``."""
    lo = config["route_lo"]
    field = ((1 << (config["n_outputs"] - 1).bit_length()) - 1) << lo
    return data_word((value & ~field & ((1 << config["width"]) - 1)) | route << lo)


class UnitBench:
    """Drivers, monitors and event-wire watchers around one unit, plus its golden model."""

    def __init__(self, dut, rng, *, gap=0.3, stall=0.3):
        self.dut = dut
        self.rng = rng
        self.config = unit_config()
        self.model = UnitModel(**self.config)
        self.n_in, self.n_out = self.config["n_inputs"], self.config["n_outputs"]
        self.drivers = [StreamDriver(dut, f"i__{k}", rng, gap=gap) for k in range(self.n_in)]
        self.monitors = [StreamMonitor(dut, f"o__{k}", rng, stall=stall)
                         for k in range(self.n_out)]
        self.ev_out = []
        self._watch = cocotb.start_soon(self._watch_ev_out())

    async def _watch_ev_out(self):
        while True:
            await FallingEdge(self.dut.clk)
            await ReadOnly()
            start, end = int(self.dut.ev_out__start.value), int(self.dut.ev_out__end.value)
            assert not (start and end), "ev_out strobed start and end together"
            if start or end:
                self.ev_out.append(("start" if start else "end", int(self.dut.ev_out__id.value)))

    @property
    def accepted(self):
        return sum(d.accepted for d in self.drivers)

    def data(self, value, route=0):
        """A data item for output ``route``."""
        return data_item(self.config, value, route)

    async def strobe(self, kind, event):
        await FallingEdge(self.dut.clk)
        getattr(self.dut, f"ev_in__{kind}").value = 1
        self.dut.ev_in__id.value = event
        await FallingEdge(self.dut.clk)
        getattr(self.dut, f"ev_in__{kind}").value = 0

    async def finish(self, inputs, ev_in=(), *, timeout=20000, check_error=None):
        """Wait for the golden model's output, then check everything against it."""
        want = self.model.run(inputs, ev_in)
        total = sum(map(len, want.outputs))
        await wait_until(self.dut, lambda: sum(len(m.items) for m in self.monitors) >= total,
                         timeout=timeout, what=f"{total} output words")
        await ClockCycles(self.dut.clk, 30)    # nothing extra may follow
        for k, monitor in enumerate(self.monitors):
            check_equal(f"o[{k}]", want.outputs[k], monitor.items, describe)
        assert self.ev_out == want.ev_out, f"ev_out {self.ev_out}, expected {want.ev_out}"
        assert int(self.dut.error.value) == want.error, (
            f"error flag {int(self.dut.error.value)}, expected {want.error}")
        assert int(self.dut.open_events.value) == want.open_events
        if check_error is not None:
            assert want.error == check_error
        return want

    def stop(self):
        for part in (*self.drivers, *self.monitors, self._watch):
            part.stop() if hasattr(part, "stop") else part.cancel()


def random_inputs(bench, rng, length, *, events=True, malformed=False):
    """Random words for each input: data for every output, every separator, SWITCH, and
    (the same on every input, so join barriers line up) pairs of event tokens."""
    separators = [Token.END_STATE_BLOCK, Token.END_PRIMITIVE_BLOCK, Token.END_3D_BLOCK,
                  Token.END_2D_BLOCK, Token.END_TRIANGLE, Token.END_BATCH]
    event_seq = []
    if events:
        for event in rng.permutation([int(e) for e in EventId]):
            event_seq += [token_word(Token.EVENT_START, event), token_word(Token.EVENT_END, event)]
        event_seq.append(token_word(Token.EVENT_END, EventId.DMA))     # a boundary marker
    def random_word():
        draw = rng.random()
        if draw < 0.70:
            return bench.data(int(rng.integers(0, 1 << 32)), int(rng.integers(0, bench.n_out)))
        if draw < 0.92:
            return token_word(rng.choice(separators), int(rng.integers(0, 256)))
        if draw < 0.96:
            return token_word(Token.SWITCH, int(rng.integers(0, bench.n_in)))
        if malformed:
            return token_word(int(rng.choice([0x00, 0x07, 0x11, 0x22, 0xFF])))
        return token_word(Token.END_BATCH)

    inputs = []
    for _ in range(bench.n_in):
        words = [random_word() for _ in range(length)]
        places = sorted(rng.integers(0, length + 1, len(event_seq)), reverse=True)
        for place, event in zip(places, reversed(event_seq)):
            words.insert(int(place), event)
        inputs.append(words)
    return inputs


def feed(bench, inputs):
    for driver, words in zip(bench.drivers, inputs):
        driver.send(words)


# ---------------------------------------------------------------- unit tests

@cocotb.test()
async def unit_random(dut):
    """Random streams with every token kind equal the golden model under random timing."""
    rng = await start(dut, idle=EV_IN)
    soak = int(os.environ.get(SOAK_ENV, "1"))
    for gap, stall in ((0.0, 0.0), (0.3, 0.5), (0.7, 0.2)):
        bench = UnitBench(dut, rng, gap=gap, stall=stall)
        inputs = random_inputs(bench, rng, 250 * soak)
        feed(bench, inputs)
        want = await bench.finish(inputs, check_error=False, timeout=20000 * soak)
        assert sum(map(len, want.outputs)) > 50, "the stream stopped too early to test much"
        bench.stop()
        await reset(dut)


@cocotb.test()
async def every_token_code(dut):
    """Each token code, and data around it, passes as the spec says."""
    rng = await start(dut, idle=EV_IN)
    bench = UnitBench(dut, rng)
    words = [bench.data(0x100 + k, k % bench.n_out) for k in range(4)]
    for code in Token:
        arg = 1 if code in (Token.EVENT_START, Token.EVENT_END) else 0
        words += [token_word(code, arg), bench.data(code, int(code) % bench.n_out)]
    inputs = [list(words) for _ in range(bench.n_in)]
    feed(bench, inputs)
    want = await bench.finish(inputs, check_error=False)
    emitted = {w >> 1 & 0xFF for out in want.outputs for w in out if w & 1}
    consumed = {Token.SWITCH} if bench.n_in > 1 else set()
    assert emitted == set(Token) - consumed, f"token codes out: {sorted(emitted)}"


@cocotb.test()
async def malformed_words(dut):
    """Unknown codes, bad event ids, bad SWITCH targets are dropped with a sticky error;
    the stream goes on."""
    rng = await start(dut, idle=EV_IN)
    bench = UnitBench(dut, rng)
    good = [bench.data(k, k % bench.n_out) for k in range(8)]
    bad = [token_word(0x07), token_word(0xFF, 3), token_word(Token.EVENT_START, 0),
           token_word(Token.EVENT_END, 9)]
    if bench.n_in > 1:
        bad.append(token_word(Token.SWITCH, bench.n_in))
    if bench.n_out == 3:   # a 2-bit routing field with value 3 names no output
        bad.append(bench.data(5, 3))
    inputs = [good[:4] + bad + good[4:] + [token_word(Token.END_BATCH)]
              for _ in range(bench.n_in)]
    driver0 = bench.drivers[0]
    driver0.send(good[:4])
    await wait_until(dut, lambda: driver0.idle, timeout=200)
    await ClockCycles(dut.clk, 5)
    assert int(dut.error.value) == 0, "error flag set before any malformed word"
    driver0.send(inputs[0][4:])
    for driver, words in zip(bench.drivers[1:], inputs[1:]):
        driver.send(words)
    await bench.finish(inputs, check_error=True)
    # bad event-wire ids are malformed too, and set the flag without injecting anything
    await bench.strobe("start", 0)
    await bench.strobe("end", 7)
    await ClockCycles(dut.clk, 10)
    assert int(dut.error.value) == 1
    assert bench.ev_out == bench.model.run(inputs).ev_out


async def send_and_settle(bench, inputs):
    """Send a part of every input and let the unit take all of it.

    ``ev_in`` strobes act where the unit has got to in its input buffers, so the
    outputs run free for a while to let it drain them.
    """
    feed(bench, inputs)
    stalls = [monitor.stall for monitor in bench.monitors]
    for monitor in bench.monitors:
        monitor.stall = 0
    await wait_until(bench.dut, lambda: all(d.idle for d in bench.drivers), timeout=5000,
                     what="the inputs to be taken")
    await ClockCycles(bench.dut.clk, 12)
    for monitor, stall in zip(bench.monitors, stalls):
        monitor.stall = stall


@cocotb.test()
async def ev_in_strobes(dut):
    """ev_in strobes inject their tokens between the words taken before and after them."""
    rng = await start(dut, idle=EV_IN)
    bench = UnitBench(dut, rng)
    parts = [[bench.data(i + 16 * p, i % bench.n_out) for i in range(6)]
             + [token_word(Token.END_BATCH)] for p in range(4)]
    inputs = [[] for _ in range(bench.n_in)]
    ev_in = []
    # Strobes due together go in the order the unit serves them: by ascending id.
    plan = [[("start", EventId.DMA)], [("start", EventId.DISCARD)],
            [("end", EventId.DMA), ("end", EventId.DISCARD)], []]
    for part, strobes in zip(parts, plan):
        await send_and_settle(bench, [part] * bench.n_in)
        for words in inputs:
            words.extend(part)
        for kind, event in strobes:
            ev_in.append((bench.accepted, kind, event))
            await bench.strobe(kind, event)
    want = await bench.finish(inputs, ev_in, check_error=False)
    assert ("start", EventId.DISCARD) in want.ev_out


@cocotb.test()
async def reset_mid_batch(dut):
    """A reset in the middle of a batch empties the unit; the next stream is clean."""
    rng = await start(dut, idle=EV_IN)
    bench = UnitBench(dut, rng)
    first = random_inputs(bench, rng, 120, malformed=True)
    feed(bench, first)
    await ClockCycles(dut.clk, 60)
    bench.stop()
    await reset(dut)
    assert int(dut.error.value) == 0 and int(dut.open_events.value) == 0
    bench = UnitBench(dut, rng)
    second = random_inputs(bench, rng, 150)
    feed(bench, second)
    await bench.finish(second, check_error=False)


@cocotb.test()
async def discard_full_fifo(dut):
    """DISCARD drops every data item queued in a full input FIFO, up to EVENT_END."""
    rng = await start(dut, idle=EV_IN)
    bench = UnitBench(dut, rng, gap=0)
    depth = params()["fifo_depth"]
    # With the outputs stalled, the unit stops on the fifth data item (two fit in its
    # emit stage, two in the output buffer), so the DISCARD token and the data behind it
    # fill the FIFO.
    lead = [bench.data(k) for k in range(5)]
    queued = [bench.data(k, k % bench.n_out) for k in range(3 * depth)]
    words = (lead + [token_word(Token.EVENT_START, EventId.DISCARD)] + queued
             + [token_word(Token.END_TRIANGLE), token_word(Token.EVENT_END, EventId.DISCARD)]
             + [bench.data(k) for k in range(4)] + [token_word(Token.END_BATCH)])
    inputs = [list(words) for _ in range(bench.n_in)]
    for monitor in bench.monitors:
        monitor.stall = 1.0
    feed(bench, inputs)
    await ClockCycles(dut.clk, 8 * depth)
    await ReadOnly()
    assert not int(dut.i__0__ready.value), "the input FIFO did not fill up"
    await FallingEdge(dut.clk)
    for monitor in bench.monitors:
        monitor.stall = 0.3
    want = await bench.finish(inputs, check_error=False)
    data_out = [w for out in want.outputs for w in out if not w & 1]
    assert len(data_out) == (len(lead) + 4) * bench.n_in, "only the data outside DISCARD comes out"


@cocotb.test()
async def interrupt_markers(dut):
    """The CSP's interrupt puts END_DMA, END_CONTEXT, END_INTERRUPT into all four outputs."""
    rng = await start(dut, idle=EV_IN)
    bench = UnitBench(dut, rng)
    before = [bench.data(k, k % 4) for k in range(10)]
    after = [bench.data(k, 3 - k % 4) for k in range(10)]
    await send_and_settle(bench, [before])
    ev_in = [(bench.accepted, "start", EventId.INTERRUPT)]
    await bench.strobe("start", EventId.INTERRUPT)
    feed(bench, [after])
    want = await bench.finish([before + after], ev_in, check_error=False)
    markers = [token_word(Token.EVENT_END, e)
               for e in (EventId.DMA, EventId.CONTEXT, EventId.INTERRUPT)]
    for k, out in enumerate(want.outputs):
        routed_before = sum(1 for w in before if (w >> 31) == k)
        assert out[routed_before:routed_before + 3] == markers, f"o[{k}] lacks the markers"


@cocotb.test()
async def zpreset_end_triangle(dut):
    """The Z-preset copies END_TRIANGLE (and END_BATCH) to both its Z and T outputs."""
    rng = await start(dut, idle=EV_IN)
    bench = UnitBench(dut, rng)
    triangle = [bench.data(1, 0), bench.data(2, 1), token_word(Token.END_TRIANGLE)]
    inputs = [triangle * 5 + [token_word(Token.END_BATCH)], triangle * 3]
    feed(bench, inputs)
    want = await bench.finish(inputs, check_error=False)
    for k in range(2):
        count = want.outputs[k].count(token_word(Token.END_TRIANGLE))
        assert count == 8, f"output {k} got {count} END_TRIANGLE tokens, expected 8"


@cocotb.test()
async def join_skewed_events(dut):
    """An event reaches the join's inputs at very different times; one copy goes out after
    everything that came before it on every input."""
    rng = await start(dut, idle=EV_IN)
    bench = UnitBench(dut, rng)
    start_ctx = token_word(Token.EVENT_START, EventId.DMA)
    end_ctx = token_word(Token.EVENT_END, EventId.DMA)
    inputs = [[bench.data(10 * k + j, j % bench.n_out) for j in range(3 + k)]
              + [start_ctx] + [bench.data(100 + k)] + [token_word(Token.END_BATCH), end_ctx]
              for k in range(bench.n_in)]
    for k, (driver, words) in enumerate(zip(bench.drivers, inputs)):
        driver.send(words[:-1])
    await ClockCycles(dut.clk, 100)
    for k in reversed(range(bench.n_in)):          # the last input's END comes first
        bench.drivers[k].send(inputs[k][-1:])
        await ClockCycles(dut.clk, 40)
    want = await bench.finish(inputs, check_error=False)
    for out in want.outputs:
        assert out.count(start_ctx) == 1 and out.count(end_ctx) == 1
