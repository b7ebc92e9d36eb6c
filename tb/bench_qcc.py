"""Benchmarks of the queue/cache controller: searches, allocations and issues per clock,
and search latency, with no input gaps and no back-pressure.

Run by ``make bench`` (``tb/bench.py``) on Verilator; each cocotb test appends its
figures to the file named by ``$FRESCO_BENCH_OUT``. The clock-by-clock checker of
``tb/test_qcc.py`` runs along, so every figure comes from a run that matched the golden
model.
"""

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly

from golden.qcc import Command, EType, Kind, Op
from tb.bench import emit_figure
from tb.harness import params, start
from tb.test_qcc import QCCBench


async def _watch(dut, port, count):
    """Clocks in which ``port`` transferred, until ``count`` transfers."""
    clocks, clock = [], 0
    while len(clocks) < count:
        await FallingEdge(dut.clk)
        await ReadOnly()
        clock += 1
        if int(getattr(dut, f"{port}__valid").value) and int(getattr(dut, f"{port}__ready").value):
            clocks.append(clock)
        assert clock < 100 * count + 1000, f"{port} stopped moving"
    return clocks


@cocotb.test()
async def bench_search(dut):
    """Query port: SEARCHes per clock back to back, and the clocks from a search being
    taken to its response being offered (the search latency)."""
    rng = await start(dut)
    bench = QCCBench(dut, rng, gap=0, stall=0)
    config = bench.config
    count = min(config["records"], config["entities"], config["lines"])
    await bench.run([Command.alloc(EType.STATE, 1, hold=True) for _ in range(count)],
                    timeout=100 * count)
    searches = [Command.search(int(e), 0) for e in rng.integers(0, config["entities"], 1000)]
    bench.ask(searches)
    taken, answered = await _both(dut, "query", "qresp", len(searches))
    emit_figure("searches per clock (query port)", len(taken) / (taken[-1] - taken[0] + 1),
                "searches/clock", params())
    latency = max(a - t for t, a in zip(taken, answered))
    emit_figure("search latency (taken to response offered)", latency, "clocks", params())
    await bench.drain()
    bench.stop()


async def _both(dut, request, response, count):
    """Transfer clocks of ``count`` requests and of their responses. With no
    back-pressure a response is taken in the first clock it is offered."""
    taken, answered, clock = [], [], 0
    while len(answered) < count:
        await FallingEdge(dut.clk)
        await ReadOnly()
        clock += 1
        for port, clocks in ((request, taken), (response, answered)):
            if int(getattr(dut, f"{port}__valid").value) \
                    and int(getattr(dut, f"{port}__ready").value):
                clocks.append(clock)
        assert clock < 100 * count + 1000, "the port stopped moving"
    return taken, answered


@cocotb.test()
async def bench_alloc(dut):
    """cmd port: ALLOCs per clock back to back until the table is full (one line each)."""
    rng = await start(dut)
    bench = QCCBench(dut, rng, gap=0, stall=0)
    config = bench.config
    for proc in bench.procs:
        proc.monitor.stall = 1.0            # keep every entity: nothing completes
    count = min(config["records"], config["entities"], config["lines"])
    bench.send([Command.alloc(EType.STATE, 1) for _ in range(count)])
    clocks = await _watch(dut, "cmd", count)
    await bench.settle()
    ok = sum(1 for _, c, r in bench.checker.commands if c.op == Op.ALLOC and r.ok)
    assert ok == count
    emit_figure("allocations per clock", count / (clocks[-1] - clocks[0] + 1),
                "allocs/clock", params())
    for proc in bench.procs:
        proc.monitor.stall = 0.0
    await bench.drain(timeout=100 * count)
    bench.stop()


#: Two programs with as many NUMERIC as MOVE stages, starting on different ports, so
#: that both issue ports can be busy in every clock.
BALANCED = {EType.VERTEX: ((Kind.MOVE, 0x01), (Kind.NUMERIC, 0x02)) * 2,
            EType.PIXEL: ((Kind.NUMERIC, 0x21), (Kind.MOVE, 0x22)) * 2}


@cocotb.test()
async def bench_issue(dut):
    """Issue ports: issues per clock while entities flow through programs with as many
    NUMERIC as MOVE stages (processors answer after one clock): the peak rate."""
    await _issue_rate(dut, BALANCED, "balanced programs")


@cocotb.test()
async def bench_issue_seed(dut):
    """The same with the seed's vertex and pixel programs (reset defaults). Together
    they have 7 NUMERIC and 6 MOVE stages, so at best the MOVE port is busy 6/7 of the
    time: 1 + 6/7 = 1.857 issues per clock."""
    await _issue_rate(dut, {}, "seed vertex and pixel programs")


async def _issue_rate(dut, programs, label):
    """Fill the table with vertex and pixel entities (alternately) while the processors
    stall, let them go and count the issues per clock of the drain."""
    rng = await start(dut)
    bench = QCCBench(dut, rng, gap=0, stall=0, latency=(1, 1))
    config = bench.config
    for proc in bench.procs:
        proc.monitor.stall = 1.0
    count = min(config["records"], config["entities"], config["lines"]) // 2 * 2
    kinds = [EType.PIXEL, EType.VERTEX]
    setup = [Command.config(etype, program) for etype, program in programs.items()]
    await bench.settle(setup + [Command.alloc(kinds[i % 2], 1) for i in range(count)],
                       timeout=100 * count)
    start_clock = bench.checker.clocks
    before = len(bench.checker.issues)
    for proc in bench.procs:
        proc.monitor.stall = 0.0
    await bench.drain(timeout=200 * count)
    issued = [t for t, _ in bench.checker.issues[before:]]
    figure = {**params(), "workload": label}
    emit_figure("issues per clock (both ports, whole drain)",
                len(issued) / (issued[-1] - start_clock + 1), "issues/clock", figure)
    lo, hi = issued[len(issued) // 10], issued[len(issued) * 9 // 10]
    steady = sum(1 for t in issued if lo <= t < hi)
    emit_figure("issues per clock (both ports, steady state: 10% to 90% of the issues)",
                steady / max(1, hi - lo), "issues/clock", figure)
    per_clock = {}
    for t in issued:
        per_clock[t] = per_clock.get(t, 0) + 1
    both = sum(1 for n in per_clock.values() if n == 2)
    emit_figure("clocks with two issues (share of clocks with an issue)",
                both / len(per_clock), "fraction", figure)
    bench.flow()
    bench.stop()


@cocotb.test()
async def bench_mixed(dut):
    """Everything at once: a SEARCH per clock on ``query``, ALLOC/DELETE on ``cmd`` and
    entities flowing through both issue ports."""
    rng = await start(dut)
    bench = QCCBench(dut, rng, gap=0, stall=0, latency=(1, 4))
    config = bench.config
    n = 1500
    bench.ask(Command.search(int(e), 0) for e in rng.integers(0, config["entities"], n))
    bench.send(Command.alloc(int(t), 1) for t in rng.integers(0, 5, n))
    first = bench.checker.clocks
    await bench.drain(timeout=100 * n)
    clocks = bench.checker.clocks - first
    searches = sum(1 for _ in bench.checker.seen["qresp"])
    emit_figure("mixed: searches per clock", searches / clocks, "searches/clock", params())
    emit_figure("mixed: commands per clock", len(bench.checker.commands) / clocks,
                "commands/clock", params())
    emit_figure("mixed: issues per clock", len(bench.checker.issues) / clocks,
                "issues/clock", params())
    bench.flow()
    bench.stop()
