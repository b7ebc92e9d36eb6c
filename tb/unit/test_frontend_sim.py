"""Fast amaranth.sim tests of the front end's framebuffer (``hw.frontend.Framebuffer``).

Directed: back-to-back read-modify-writes of one span from both engines, the highest id
per sample kept (the read, the registered word and the write of one row are three
clocks; a row read while an earlier write of it is in flight would keep the older id).
The expected frame is a per-sample maximum over the requests, worked out here.
"""

import numpy as np
import pytest
from amaranth.sim import Simulator

from golden import frontend as G
from hw.frontend import Framebuffer

W = H = 16
S = 4                       # samples per pixel (the board build's mode)
P = 8                       # prid bits


def _requests(rng, n, span):
    """``n`` requests on span ``(x, y)`` (pixels x..x+3, rows y..y+3): (prid, mask)."""
    out = []
    for k in range(n):
        mask = (1 << (16 * S)) - 1 if k % 3 == 0 else int(rng.integers(1, 1 << 62))
        out.append((span, int(rng.integers(1, 1 << P)), mask))
    return out


def _expect(requests):
    ids = np.zeros((H, W, S), dtype=np.int64)
    for (x, y), prid, mask in requests:
        for r in range(4):
            for q in range(4):
                for s in range(S):
                    if mask >> ((r * 4 + q) * S + s) & 1:
                        ids[y + r, x + q, s] = max(ids[y + r, x + q, s], prid)
    return ids


def _run(requests):
    """Drive ``requests`` alternately on the two engines' ports, each offered as soon as
    the one before on its port was taken (so the framebuffer takes them back to back),
    wait for every ``ack``, read the frame back; returns the ids and the acks seen."""
    fb = Framebuffer(n=2, width=W, height=H, modes=(S,), prid_bits=P)
    sim = Simulator(fb)
    sim.add_clock(1e-6)
    result = {}

    async def bench(ctx):
        ctx.set(fb.msaa, 2)                 # log2(4)
        queues = [requests[0::2], requests[1::2]]
        acks, words, t = 0, [], 0
        while any(queues) or acks < len(requests):
            for e in range(2):
                if queues[e]:
                    (x, y), prid, mask = queues[e][0]
                    req = fb.req[e]
                    ctx.set(req.valid, 1)
                    ctx.set(req.payload.pix.x, x)
                    ctx.set(req.payload.pix.y, y)
                    ctx.set(req.payload.pix.prid, prid)
                    ctx.set(req.payload.pix.sample_mask, mask)
                    ctx.set(req.payload.record, e)
                else:
                    ctx.set(fb.req[e].valid, 0)
            taken = [ctx.get(fb.req[e].valid) and ctx.get(fb.req[e].ready) for e in range(2)]
            acks += sum(ctx.get(fb.ack[e].valid) for e in range(2))
            await ctx.tick()
            t += 1
            assert t < 40 * len(requests) + 100, "requests not acknowledged"
            for e in range(2):
                if taken[e]:
                    queues[e].pop(0)
        while not ctx.get(fb.idle):
            await ctx.tick()
        for a in range(fb.words + 1):
            if a < fb.words:
                ctx.set(fb.fb_addr, a)
            await ctx.tick()
            if a < fb.words:
                words.append(ctx.get(fb.fb_data))
        result["ids"] = G.ids_from_words(words, W, H, S, P)
        result["acks"] = acks

    sim.add_testbench(bench)
    sim.run()
    return result


@pytest.mark.parametrize("seed", [1, 2])
def test_back_to_back_writes_of_one_span_keep_the_highest_id(seed):
    """Requests on one span, both engines always offering, so that one row is
    read-modified-written again right after its previous write: every sample must end
    at the highest id that covered it (ids both rising and falling across requests)."""
    rng = np.random.default_rng(seed)
    reqs = _requests(rng, 12, (4, 8))
    got = _run(reqs)
    assert got["acks"] == len(reqs)
    want = _expect(reqs)
    diff = np.argwhere(got["ids"] != want)
    assert not len(diff), f"{len(diff)} samples differ, first (y, x, s) {diff[:4].tolist()}"


def test_back_to_back_writes_of_neighbouring_spans():
    """Alternating spans one row of spans apart (the last row of one just above the
    first of the other) and the same span again: the highest id per sample."""
    rng = np.random.default_rng(3)
    reqs = []
    for k in range(10):
        span = ((0, 0), (0, 4), (4, 4))[k % 3]
        reqs += _requests(rng, 1, span)
    got = _run(reqs)
    assert got["acks"] == len(reqs)
    assert (got["ids"] == _expect(reqs)).all()
