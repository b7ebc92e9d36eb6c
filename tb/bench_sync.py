"""Benchmarks of the token FIFO and units: throughput with no back-pressure and no gaps.

Run by ``make bench`` (``tb/bench.py``) on Verilator; each cocotb test appends its
figures to the file named by ``$FRESCO_BENCH_OUT``.
"""

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from golden.sync import Token, token_word
from tb.bench import emit_figure
from tb.harness import StreamDriver, StreamMonitor, params, start, wait_until
from tb.test_sync import EV_IN, UnitBench, data_item, unit_config


async def _latency(dut, driver, monitor):
    """Clocks from the edge that takes a word in to the edge that takes it out."""
    while not driver.accepted:      # counted on the falling edge after the taking edge
        await RisingEdge(dut.clk)
    latency = 1                     # so the edge we are at is already one clock later
    while not monitor.items:
        await RisingEdge(dut.clk)
        latency += 1
    return latency


async def _count_cycles(dut, drivers, monitors, expected):
    """Clocks from the first word accepted to the last word out."""
    cycles = 0
    while not any(d.accepted for d in drivers):
        await RisingEdge(dut.clk)
    while sum(len(m.items) for m in monitors) < expected:
        await RisingEdge(dut.clk)
        cycles += 1
        assert cycles < 100 * expected, "the design stopped moving"
    return cycles


@cocotb.test()
async def bench_fifo(dut):
    """Token FIFO: words per clock streaming through, and first-word latency."""
    rng = await start(dut)
    driver = StreamDriver(dut, "i", rng, gap=0)
    monitor = StreamMonitor(dut, "o", rng, stall=0)
    driver.send([1])
    latency = await _latency(dut, driver, monitor)
    count = 2000
    driver.send(range(count))
    cycles = await _count_cycles(dut, [driver], [monitor], count + 1)
    emit_figure("throughput", count / cycles, "words/clock", params())
    emit_figure("latency (write to read)", latency, "clocks", params())


def _batches(config, words_per_batch, batches):
    """Per input: batches of data (to every output in turn), each ended by END_BATCH."""
    batch = [data_item(config, j, j % config["n_outputs"]) for j in range(words_per_batch)]
    return [(batch + [token_word(Token.END_BATCH)]) * batches
            for _ in range(config["n_inputs"])]


def _switches(config, words_per_batch, batches):
    """Per input: batches of data, each ended by a SWITCH to the next input."""
    n_in = config["n_inputs"]
    batch = [data_item(config, j, j % config["n_outputs"]) for j in range(words_per_batch)]
    return [(batch + [token_word(Token.SWITCH, (k + 1) % n_in)]) * batches for k in range(n_in)]


@cocotb.test()
async def bench_unit(dut):
    """Unit: input words per clock for data, for data with a join switch every 8 words
    (END_BATCH, forwarded, or SWITCH, consumed), and for broadcast tokens."""
    rng = await start(dut, idle=EV_IN)
    config = unit_config()
    bench = UnitBench(dut, rng, gap=0, stall=0)
    bench.drivers[0].send([data_item(config, 1)])
    latency = await _latency(dut, bench.drivers[0], bench.monitors[0])
    emit_figure("latency (input to output)", latency, "clocks", params())
    bench.stop()
    cases = {"data, END_BATCH every 8 words": _batches(config, 7, 60)}
    if config["n_inputs"] > 1:
        cases["data, SWITCH every 8 words"] = _switches(config, 7, 60)
    if config["n_outputs"] > 1:
        cases["broadcast events"] = [[token_word(Token.EVENT_END, 2)] * 400] * config["n_inputs"]
    for name, inputs in cases.items():
        bench = UnitBench(dut, rng, gap=0, stall=0)
        want = bench.model.run(inputs)
        expected = sum(map(len, want.outputs))
        taken = sum(map(len, inputs))
        for driver, words in zip(bench.drivers, inputs):
            driver.send(words)
        cycles = await _count_cycles(dut, bench.drivers, bench.monitors, expected)
        emit_figure(f"input throughput, {name}", taken / cycles, "words/clock", params())
        emit_figure(f"output throughput, {name}", expected / cycles / bench.n_out,
                    "words/clock/output", params())
        await wait_until(dut, lambda: all(d.idle for d in bench.drivers), timeout=100)
        bench.stop()
        await ClockCycles(dut.clk, 10)
