"""Testbenches of the lockstep warp unit (``hw/warp.py``) against ``golden/warp.py``.

Pytest runs each configuration on both simulators; inside the simulator the cocotb tests
below load programs through the instruction-memory port and the bank through the host
port (random gaps on both, random back-pressure on the host's read answers), run them
and compare, clock for clock, the trace (warp, PC, active mask), then the clock and
transaction counts, the error code, the bank and every register with the golden model.
"""

import os

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly, RisingEdge

from golden.warp import PROGRAMS, Error, Op, WarpModel, assemble, encode, random_program
from tb.harness import (WIDE_DESIGN, StreamDriver, StreamMonitor, params, reset,
                        run_cocotb, simulators, start, wait_until)

CONFIGS = {
    # name: parameters; the defaults once, a small shared-register build for the rest
    "default": {},
    "shared": {"warps": 3, "lanes": 2, "words": 32, "imem": 64, "result": "shared"},
}
TESTS = ["random_straight_line", "random_divergent", "every_instruction", "divergent_warp_wide",
         "spin_lock_deadlocks", "warp_lock_counts_every_update", "unlocked_loses_updates",
         "watom_add_against_atom_add", "bad_programs", "bad_port_input"]
SOAK_ENV = "FRESCO_SOAK"        # how many more random programs


@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("config", list(CONFIGS))
def test_warp(config, simulator):
    run_cocotb("warp.unit", "tb.test_warp", simulator, CONFIGS[config], testcase=TESTS,
               **WIDE_DESIGN)      # the testbench touches ports only: a quicker build


@pytest.mark.slow
@pytest.mark.parametrize("simulator", simulators())
def test_warp_soak(simulator):
    """``make regress``: the widest unit, many more random programs."""
    run_cocotb("warp.unit", "tb.test_warp", simulator,
               {"warps": 8, "lanes": 8, "words": 64, "imem": 128},
               testcase=["random_straight_line", "random_divergent"],
               extra_env={SOAK_ENV: "3"}, **WIDE_DESIGN)


# ---------------------------------------------------------------- the bench

def unit_params():
    """The running unit's parameters with their defaults filled in."""
    return {"warps": 2, "lanes": 4, "words": 256, "imem": 256, "result": "lanes",
            **params()}


def imem_word(addr, word):
    return addr | word << 16


def host_word(op, *, warp=0, lane=0, addr=0, data=0):
    return op | warp << 2 | lane << 5 | addr << 8 | (data & 0xFFFF_FFFF) << 24


READ_BANK, WRITE_BANK, READ_REG = 0, 1, 2


class WarpBench:
    """Drivers on the instruction-memory and host ports, a monitor on the host's answers,
    a watcher of the trace, and the golden model of the running configuration."""

    def __init__(self, dut, rng, *, gap=0.3, stall=0.3):
        self.dut, self.rng = dut, rng
        self.p = unit_params()
        self.model = WarpModel(**self.p)
        self.imem = StreamDriver(dut, "imem_w", rng, gap=gap)
        self.host = StreamDriver(dut, "host", rng, gap=gap)
        self.answers = StreamMonitor(dut, "host_rdata", rng, stall=stall)
        self.trace = []
        self.dut.start.value = 0
        cocotb.start_soon(self._watch())

    async def _watch(self):
        while True:
            await RisingEdge(self.dut.clk)
            await ReadOnly()
            if int(self.dut.trace__valid.value):
                self.trace.append((int(self.dut.trace__warp.value),
                                   int(self.dut.trace__pc.value),
                                   int(self.dut.trace__mask.value)))

    async def load(self, words):
        self.imem.send(imem_word(addr, word) for addr, word in enumerate(words))
        await wait_until(self.dut, lambda: self.imem.idle, timeout=20 * len(words) + 50,
                         what="the program to load")

    async def write_bank(self, values):
        self.host.send(host_word(WRITE_BANK, addr=a, data=int(v))
                       for a, v in enumerate(values))
        await wait_until(self.dut, lambda: self.host.idle, timeout=20 * len(values) + 50,
                         what="the bank writes")

    async def read(self, requests):
        before = len(self.answers.items)
        self.host.send(requests)
        await wait_until(self.dut, lambda: len(self.answers.items) == before + len(requests),
                         timeout=30 * len(requests) + 50, what="the host's answers")
        return self.answers.items[before:]

    async def read_bank(self):
        return await self.read([host_word(READ_BANK, addr=a) for a in range(self.p["words"])])

    async def read_regs(self):
        W, L = self.p["warps"], self.p["lanes"]
        values = await self.read([host_word(READ_REG, warp=w, lane=l, addr=r)
                                  for w in range(W) for l in range(L) for r in range(32)])
        return np.array(values, np.uint64).reshape(W, L, 32)

    async def start(self):
        self.trace.clear()
        await FallingEdge(self.dut.clk)
        self.dut.start.value = 1
        await FallingEdge(self.dut.clk)
        self.dut.start.value = 0

    async def finish(self, timeout):
        """Wait until ``busy`` falls (the unit finished or stopped)."""
        await RisingEdge(self.dut.clk)
        await wait_until(self.dut, lambda: not int(self.dut.busy.value),
                         timeout=timeout + 32 * self.p["warps"], what="busy to fall")
        await ReadOnly()

    async def run(self, program, bank=None, *, timeout=20_000):
        """Load, start and run ``program``; its golden result."""
        words = assemble(program) if isinstance(program, str) else program
        bank = np.zeros(self.p["words"], np.uint64) if bank is None else bank
        await self.load(words)
        await self.write_bank(bank)
        await self.start()
        await self.finish(timeout)
        return self.model.run(words, bank, max_clocks=timeout)

    async def check(self, want, *, state=True):
        """Compare everything the unit shows with the golden result ``want``."""
        dut = self.dut
        assert len(self.trace) == len(want.trace), (
            f"trace has {len(self.trace)} clocks, the model {len(want.trace)}")
        for clock, (have, expected) in enumerate(zip(self.trace, want.trace)):
            assert have == expected, (f"clock {clock}: (warp, pc, mask) {have}, expected "
                                      f"{expected}; model trace around it "
                                      f"{want.trace[max(0, clock - 3):clock + 3]}")
        assert int(dut.clocks.value) == want.clocks
        assert int(dut.transactions.value) == want.transactions
        assert int(dut.error.value) == want.error, f"error {int(dut.error.value)}"
        assert int(dut.done.value) == want.done
        if state:
            await FallingEdge(dut.clk)
            bank = await self.read_bank()
            assert bank == [int(v) for v in want.bank], "bank differs from the model"
            regs = await self.read_regs()
            diff = np.argwhere(regs != want.regs)
            assert not len(diff), (f"registers (warp, lane, reg) {diff[:5].tolist()} differ: "
                                   f"{[int(regs[tuple(d)]) for d in diff[:5]]}, expected "
                                   f"{[int(want.regs[tuple(d)]) for d in diff[:5]]}")


async def setup(dut, **kw):
    rng = await start(dut, idle=("start",))
    return WarpBench(dut, rng, **kw)


def random_bank(bench):
    return bench.rng.integers(0, 1 << 32, bench.p["words"], dtype=np.uint64)


# ---------------------------------------------------------------- random programs

async def _random_programs(dut, branches):
    bench = await setup(dut)
    count = 3 * int(os.environ.get(SOAK_ENV, "1"))
    for _ in range(count):
        program = random_program(bench.rng, 24, branches=branches)
        want = await bench.run(program, random_bank(bench))
        assert want.done and want.error == Error.NONE
        await bench.check(want)


@cocotb.test()
async def random_straight_line(dut):
    """Random straight-line programs: clock for clock the golden model's."""
    await _random_programs(dut, branches=False)


@cocotb.test()
async def random_divergent(dut):
    """Random programs with divergent forward branches and early exits."""
    await _random_programs(dut, branches=True)


@cocotb.test()
async def every_instruction(dut):
    """One program using every instruction, in every lane and warp."""
    bench = await setup(dut)
    shared = "r31" if bench.p["result"] == "shared" else "r20"
    program = f"""
        LANE r1
        WARP r2
        LI r3, -7
        ADD r4, r1, r3
        SUB r5, r4, r2
        ADDI r6, r1, 3
        SEQ r7, r1, r0
        SNE r8, r1, r0
        SLT r9, r3, r1
        BZ r7, notfirst
        LI r10, 55
    notfirst:
        BNZ r7, join
        J join
    join:
        LD r11, [r6 + 1]
        ST r4, [r1 + 12]
        ATOM.XCHG r12, [r6], r4
        ATOM.ADD r13, [r0], r1
        WATOM.ADD r14, [r6], r1
        WATOM.XCHG r15, [r6], r2
        WATOM.LOCK r16, [r2]
        ADDI r17, {shared}, 0
        EXIT
    """
    want = await bench.run(program, random_bank(bench))
    assert want.done
    assert {word >> 26 for word in assemble(program)} == {int(op) for op in Op}
    await bench.check(want)


@cocotb.test()
async def divergent_warp_wide(dut):
    """Warp-wide atomics inside and after a divergent branch: only the active lanes take
    part (the lowest one's operand) and receive the result (or the shared register)."""
    bench = await setup(dut)
    want = await bench.run("""
        LANE r1
        WARP r6
        LI r9, 77
        ADDI r3, r1, -2
        SLT r3, r3, r0          ; lanes 0 and 1
        BZ r3, skip
        ADDI r4, r1, 10
        WATOM.ADD r9, [r6], r4  ; lanes 0-1 of warp w add 10 to word w
        ADDI r5, r31, 0
    skip:
        WATOM.ADD r7, [r6], r1  ; every lane, lane 0's operand (0)
        EXIT
    """, np.arange(bench.p["words"], dtype=np.uint64) + 3)
    lanes = bench.p["lanes"]
    if bench.p["result"] == "lanes":
        assert [int(v) for v in want.regs[0, :, 9]] == [3, 3][:lanes] + [77] * (lanes - 2)
    else:
        assert [int(v) for v in want.regs[0, :, 5]] == [3, 3][:lanes] + [0] * (lanes - 2)
    await bench.check(want)


# ---------------------------------------------------------------- the spec's programs

@cocotb.test()
async def spin_lock_deadlocks(dut):
    """The per-lane spin lock never finishes: after 3000 clocks one lane of warp 0 is past
    the lock, never to run again, and every other lane spins at a lower PC. An
    instruction-memory write then stops the unit (IMEM_BUSY)."""
    bench = await setup(dut)
    lanes = bench.p["lanes"]
    words = assemble(PROGRAMS["spin_lock"])
    await bench.load(words)
    await bench.write_bank(np.zeros(bench.p["words"], np.uint64))
    await bench.start()
    await ClockCycles(dut.clk, 3000)
    await ReadOnly()
    assert int(dut.busy.value) and not int(dut.done.value) and not int(dut.error.value)
    clocks = len(bench.trace)
    assert clocks >= 2900
    spin = 2
    tail = bench.trace[-200:]
    assert {pc for _, pc, _ in tail} == {spin, spin + 1}
    assert {mask for w, _, mask in tail if w == 0} == {(1 << lanes) - 2}
    assert (0, 4, 1) not in bench.trace                     # the winner never ran on
    want = bench.model.run(words, max_clocks=clocks)
    assert bench.trace == want.trace[:clocks]
    # Stop it: an instruction-memory write while busy is refused with a sticky error.
    await FallingEdge(dut.clk)
    bench.imem.send([imem_word(0, encode(Op.EXIT))])
    await bench.finish(10)
    assert int(dut.error.value) == Error.IMEM_BUSY and not int(dut.done.value)
    await ClockCycles(dut.clk, 5)
    assert not int(dut.busy.value)
    await FallingEdge(dut.clk)
    bank = await bench.read_bank()
    assert bank[0] == 1 and bank[1] == 0                     # held, counter untouched


@cocotb.test()
async def warp_lock_counts_every_update(dut):
    """The same section under WATOM.LOCK / WATOM.XCHG, K times per warp: warps x K."""
    bench = await setup(dut)
    K = 4
    res = "r31" if bench.p["result"] == "shared" else "r3"
    want = await bench.run(PROGRAMS["warp_lock"].format(K=K, res=res))
    assert want.done and int(want.bank[1]) == bench.p["warps"] * K
    await bench.check(want)


@cocotb.test()
async def unlocked_loses_updates(dut):
    """Without the lock every warp of an iteration loads the same counter: it ends at K."""
    bench = await setup(dut)
    K = 5
    want = await bench.run(PROGRAMS["no_lock"].format(K=K))
    assert want.done and int(want.bank[1]) == K
    await bench.check(want, state=False)
    await FallingEdge(dut.clk)
    assert (await bench.read([host_word(READ_BANK, addr=1)])) == [K]


@cocotb.test()
async def watom_add_against_atom_add(dut):
    """ATOM.ADD: one transaction per active lane; WATOM.ADD: one for the warp, the same
    old value in every active lane (or the shared register), the counter moved once."""
    bench = await setup(dut)
    W, L = bench.p["warps"], bench.p["lanes"]
    for form in ("ATOM.ADD", "WATOM.ADD"):
        want = await bench.run(f"LANE r1\nLI r2, 5\n{form} r3, [r0], r2\nEXIT",
                               np.full(bench.p["words"], 100, np.uint64))
        per_warp = L if form == "ATOM.ADD" else 1
        assert want.transactions == W * per_warp
        assert int(want.bank[0]) == 100 + 5 * W * per_warp
        await bench.check(want)


# ---------------------------------------------------------------- bad input

BAD_PROGRAMS = [
    ("unknown opcode", assemble("LI r1, 1") + [0x3F << 26], Error.UNKNOWN_OPCODE),
    ("load out of range", assemble("LANE r1\nLD r2, [r1 + 0x7FFF]\nEXIT"), Error.BANK_RANGE),
    ("warp-wide atomic out of range", assemble("LI r1, -1\nWATOM.LOCK r2, [r1]\nEXIT"),
     Error.BANK_RANGE),
    ("jump out of imem", assemble("LI r1, 1\nJ 0xFFFF"), Error.PC_RANGE),
]


@cocotb.test()
async def bad_programs(dut):
    """Each bad program stops the unit with its sticky code: busy falls, done stays low,
    the faulting instruction has no effect, and start is ignored until reset."""
    bench = await setup(dut)
    cases = BAD_PROGRAMS + [("run off the end", [encode(Op.LI, rd=1, imm=1)] * bench.p["imem"],
                             Error.PC_RANGE)]
    for name, words, error in cases:
        want = await bench.run(words, random_bank(bench), timeout=3 * bench.p["imem"])
        assert want.error == error, name
        await bench.check(want)
        await ClockCycles(dut.clk, 20)
        await ReadOnly()
        assert not int(dut.busy.value) and not int(dut.done.value), name
        await bench.start()                         # ignored after an error
        await ClockCycles(dut.clk, 3)
        await ReadOnly()
        assert not int(dut.busy.value) and int(dut.error.value) == error, name
        await reset(dut)
        assert int(dut.error.value) == 0


@cocotb.test()
async def bad_port_input(dut):
    """Host requests out of range and an instruction-memory write out of range are
    dropped with HOST_RANGE; nothing in the bank changes; the port keeps working."""
    bench = await setup(dut)
    p = bench.p
    bank = random_bank(bench)
    await bench.write_bank(bank)
    requests = [host_word(WRITE_BANK, addr=p["words"], data=1), host_word(READ_REG, addr=32),
                host_word(3)]
    requests += [host_word(READ_REG, warp=p["warps"])] * (p["warps"] < 8)
    requests += [host_word(READ_REG, lane=p["lanes"])] * (p["lanes"] < 8)
    for request in requests:
        bench.host.send([request])
        await wait_until(dut, lambda: bench.host.idle, timeout=50)
        await ReadOnly()
        assert int(dut.error.value) == Error.HOST_RANGE
        await FallingEdge(dut.clk)
        assert not bench.answers.items                      # no answer to a dropped request
        assert (await bench.read_bank()) == [int(v) for v in bank]
        bench.answers.items.clear()
        await reset(dut)
    bench.imem.send([imem_word(p["imem"], encode(Op.EXIT))])
    await wait_until(dut, lambda: bench.imem.idle, timeout=50)
    await ReadOnly()
    assert int(dut.error.value) == Error.HOST_RANGE
    await reset(dut)
    want = await bench.run("EXIT")                          # the unit works after a reset
    await bench.check(want, state=False)
