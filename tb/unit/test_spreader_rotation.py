"""Amaranth-simulator check of ``hw.spreader.Rotation`` (decisions 27 and 31) against the
golden model's walk (``golden.spreader.model.rotated``): the order relations it gives in
every clock are those of each type's list walked from the entry after the EU of the
type's last request, under random LIST words and requests."""

import random

import pytest
from amaranth.sim import Simulator

from golden.spreader.model import rotated
from hw.spreader import Rotation


def _expected(lst, count, last, n):
    """``in_list`` and ``before`` (per EU a, the bits of the EUs b walked after it) of
    the golden walk."""
    walk = rotated(list(lst[:count]), last)
    pos = {e: j for j, e in enumerate(walk)}
    in_list = sum(1 << e for e in walk)
    before = [sum(1 << b for b in range(n) if a in pos and b in pos and pos[a] < pos[b])
              for a in range(n)]
    return in_list, before


@pytest.mark.parametrize("n_eus", [1, 2, 3, 4, 8])
def test_rotation_order_is_the_golden_walk(n_eus, clocks=400):
    dut = Rotation(n_eus=n_eus, rotate=True)
    rng = random.Random(n_eus)
    checked = []

    async def bench(ctx):
        lists = [list(range(n_eus)) for _ in range(4)]
        counts, last = [n_eus] * 4, [None] * 4
        for t in range(4):
            for k in range(n_eus):
                ctx.set(dut.lists[t][k], k)
            ctx.set(dut.counts[t], n_eus)
        for _ in range(clocks):
            written, count, entries = None, rng.randint(1, n_eus), rng.sample(range(n_eus), n_eus)
            if rng.random() < 0.3:
                written = rng.randrange(4)
            asked = [rng.random() < 0.5 for _ in range(4)]
            eu = rng.randrange(n_eus)
            ctx.set(dut.written, 0 if written is None else 1 << written)
            for k in range(n_eus):
                ctx.set(dut.entries[k], entries[k])
            ctx.set(dut.count, count)
            ctx.set(dut.asked, sum(1 << t for t in range(4) if asked[t]))
            ctx.set(dut.eu, eu)
            await ctx.tick()
            # the edge: the LIST word and the requests take effect (the configuration's
            # registers are the testbench's here)
            if written is not None:
                lists[written], counts[written] = entries, count
                for k in range(n_eus):
                    ctx.set(dut.lists[written][k], entries[k])
                ctx.set(dut.counts[written], count)
            for t in range(4):
                if asked[t]:
                    last[t] = eu
            ctx.set(dut.written, 0)
            ctx.set(dut.asked, 0)
            for t in range(4):
                in_list, before = _expected(lists[t], counts[t], last[t], n_eus)
                assert ctx.get(dut.in_list[t]) == in_list, (t, lists[t], counts[t], last[t])
                assert [ctx.get(dut.before[t][a]) for a in range(n_eus)] == before, \
                    (t, lists[t], counts[t], last[t])
                checked.append(t)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert len(checked) == 4 * clocks
