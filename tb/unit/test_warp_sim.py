"""Fast amaranth.sim tests of ``hw/warp.py``: clock for clock against the golden model
at the corners of the parameter space the cocotb builds do not cover (one warp, one
lane, eight of each), plus the RTL's parameter checks."""

import numpy as np
import pytest
from amaranth.sim import Simulator

from golden.warp import WarpModel, assemble, random_program
from hw.warp import HostOp, WarpUnit


def run_rtl(params, words, bank):
    """Load, run and read back a unit in amaranth.sim: trace, counters, bank, registers."""
    dut = WarpUnit(**params)
    W, L = params["warps"], params["lanes"]
    out = {}

    async def host(ctx, op, warp=0, lane=0, addr=0, data=0):
        for field, value in (("op", op), ("warp", warp), ("lane", lane), ("addr", addr),
                             ("data", data)):
            ctx.set(getattr(dut.host.payload, field), int(value))
        ctx.set(dut.host.valid, 1)
        ctx.set(dut.host_rdata.ready, 1)
        await ctx.tick()
        ctx.set(dut.host.valid, 0)
        if op == HostOp.WRITE_BANK:
            return None
        value = ctx.get(dut.host_rdata.payload)
        await ctx.tick()
        return value

    async def bench(ctx):
        for addr, word in enumerate(words):
            ctx.set(dut.imem_w.payload.addr, addr)
            ctx.set(dut.imem_w.payload.word, word)
            ctx.set(dut.imem_w.valid, 1)
            await ctx.tick()
        ctx.set(dut.imem_w.valid, 0)
        for addr, value in enumerate(bank):
            await host(ctx, HostOp.WRITE_BANK, addr=addr, data=value)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        trace = []
        while ctx.get(dut.busy):
            if ctx.get(dut.trace.valid):
                trace.append((ctx.get(dut.trace.warp), ctx.get(dut.trace.pc),
                              ctx.get(dut.trace.mask)))
            await ctx.tick()
        out.update(trace=trace, done=ctx.get(dut.done), error=ctx.get(dut.error),
                   clocks=ctx.get(dut.clocks), transactions=ctx.get(dut.transactions))
        out["bank"] = [await host(ctx, HostOp.READ_BANK, addr=a) for a in range(len(bank))]
        out["regs"] = np.array([[[await host(ctx, HostOp.READ_REG, w, l, r)
                                  for r in range(32)] for l in range(L)] for w in range(W)])

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return out


@pytest.mark.parametrize("warps, lanes, result, seed", [
    (1, 1, "lanes", 1), (1, 3, "shared", 2), (8, 1, "lanes", 3), (2, 8, "shared", 4)])
def test_rtl_matches_golden(warps, lanes, result, seed):
    rng = np.random.default_rng(seed)
    params = dict(warps=warps, lanes=lanes, words=32, imem=64, result=result)
    words = assemble(random_program(rng, 20))
    bank = rng.integers(0, 1 << 32, 32, dtype=np.uint64)
    want = WarpModel(**params).run(words, bank)
    have = run_rtl(params, words, bank)
    assert have["trace"] == want.trace
    assert (have["done"], have["error"], have["clocks"], have["transactions"]) == (
        want.done, want.error, want.clocks, want.transactions)
    assert have["bank"] == [int(v) for v in want.bank]
    assert (have["regs"] == want.regs).all()


@pytest.mark.parametrize("name, value, message", [
    ("warps", 9, "warps must be an integer from 1 to 8, not 9"),
    ("lanes", 0, "lanes must be an integer from 1 to 8, not 0"),
    ("words", 100, "words must be a power of two from 2 to 4096, not 100"),
    ("imem", 1, "imem must be a power of two from 2 to 4096, not 1"),
    ("result", "rd", "result must be one of 'lanes', 'shared', not 'rd'"),
])
def test_parameter_errors(name, value, message):
    with pytest.raises(ValueError, match=message):
        WarpUnit(**{name: value})


@pytest.mark.parametrize("name, allowed", [
    ("warps", "an integer from 1 to 8"), ("lanes", "an integer from 1 to 8"),
    ("words", "a power of two from 2 to 4096"), ("imem", "a power of two from 2 to 4096")])
def test_parameter_types(name, allowed):
    with pytest.raises(TypeError, match=f"{name} must be {allowed}, not '4'"):
        WarpUnit(**{name: "4"})


def test_gen_lists_the_unit():
    from hw import gen
    assert "warp.unit" in gen.designs()
    assert gen.parameters(gen.designs()["warp.unit"]) == {
        "warps": 2, "lanes": 4, "words": 256, "imem": 256, "result": "lanes"}
