"""Benchmarks of the warp unit: instructions per clock, and the lock and counter programs
in their per-lane and warp-wide forms (clocks and bank transactions side by side).

Run by ``make bench`` (``tb/bench.py``) on Verilator at 2, 4 and 8 lanes (2 warps); each
cocotb test appends its figures to the file named by ``$FRESCO_BENCH_OUT``. Every run
is also checked against the golden model clock for clock, so the figures are the
hardware's and the model's at once.
"""

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly

from golden.warp import PROGRAMS, Op, assemble, encode, random_program
from tb.bench import emit_figure
from tb.harness import params, reset, start
from tb.test_warp import WarpBench, imem_word

K = 8                     # critical sections / increments per lane or warp
DEADLOCK_CLOCKS = 5000    # how long the per-lane spin lock is given

COUNTER = {
    # every lane adds 1, K times
    "per-lane ATOM.ADD": """
        LI r2, 1
        LI r5, {K}
    loop:
        ATOM.ADD r3, [r0], r2
        ADDI r5, r5, -1
        BNZ r5, loop
        EXIT
    """,
    # the warp adds its lane count once, K times: the same total
    "warp-wide WATOM.ADD": """
        LI r2, {lanes}
        LI r5, {K}
    loop:
        WATOM.ADD r3, [r0], r2
        ADDI r5, r5, -1
        BNZ r5, loop
        EXIT
    """,
}


async def _bench(dut):
    rng = await start(dut, idle=("start",))
    return WarpBench(dut, rng, gap=0, stall=0)


def _figure(metric, value, unit):
    emit_figure(metric, value, unit, params())


@cocotb.test()
async def bench_ipc(dut):
    """Instructions per clock: straight-line ALU code, and random programs with loads,
    stores and atomics (per-lane bank operations take a clock per active lane)."""
    bench = await _bench(dut)
    alu = "\n".join(f"ADDI r{2 + k % 29}, r{2 + (k + 7) % 29}, {k}" for k in range(60))
    want = await bench.run(alu + "\nEXIT")
    await bench.check(want, state=False)
    _figure("instructions per clock, ALU code", want.instructions / int(dut.clocks.value),
            "instructions/clock")
    issued = clocks = 0
    programs = np.random.default_rng(2026)          # the same programs on every run
    for _ in range(4):
        want = await bench.run(random_program(programs, 40))
        await bench.check(want, state=False)
        issued += want.instructions
        clocks += int(dut.clocks.value)
    _figure("instructions per clock, random programs", issued / clocks, "instructions/clock")


@cocotb.test()
async def bench_lock(dut):
    """The critical section under a per-lane spin lock (deadlocks) and under the
    warp-wide lock, K times per warp: clocks, transactions, counter."""
    bench = await _bench(dut)
    words = assemble(PROGRAMS["spin_lock"])
    await bench.load(words)
    await bench.write_bank(np.zeros(bench.p["words"], np.uint64))
    await bench.start()
    await ClockCycles(dut.clk, DEADLOCK_CLOCKS)
    await ReadOnly()
    assert int(dut.busy.value) and not int(dut.done.value)
    want = bench.model.run(words, max_clocks=len(bench.trace))
    assert bench.trace == want.trace[:len(bench.trace)]
    _figure(f"lock, per-lane ATOM.XCHG: finished in {DEADLOCK_CLOCKS} clocks", "no (deadlock)",
            "")
    _figure(f"lock, per-lane ATOM.XCHG: counter after {DEADLOCK_CLOCKS} clocks",
            int(want.bank[1]), "updates")
    _figure(f"lock, per-lane ATOM.XCHG: transactions in {DEADLOCK_CLOCKS} clocks",
            int(dut.transactions.value), "transactions")
    await FallingEdge(dut.clk)
    bench.imem.send([imem_word(0, encode(Op.EXIT))])      # stop it (IMEM_BUSY) ...
    await bench.finish(20)
    await reset(dut)                                        # ... and clear the error
    want = await bench.run(PROGRAMS["warp_lock"].format(K=K, res="r3"))
    await bench.check(want, state=False)
    assert want.done and int(want.bank[1]) == bench.p["warps"] * K
    _figure(f"lock, warp-wide WATOM.LOCK: clocks for {bench.p['warps']}x{K} sections",
            int(dut.clocks.value), "clocks")
    _figure("lock, warp-wide WATOM.LOCK: transactions", int(dut.transactions.value),
            "transactions")


@cocotb.test()
async def bench_counter(dut):
    """A shared counter advanced by every lane K times: per-lane ATOM.ADD against one
    WATOM.ADD of the warp's lane count."""
    bench = await _bench(dut)
    lanes = bench.p["lanes"]
    for form, program in COUNTER.items():
        want = await bench.run(program.format(K=K, lanes=lanes))
        await bench.check(want, state=False)
        assert int(want.bank[0]) == bench.p["warps"] * lanes * K
        _figure(f"counter, {form}: clocks", int(dut.clocks.value), "clocks")
        _figure(f"counter, {form}: transactions", int(dut.transactions.value),
                "transactions")
