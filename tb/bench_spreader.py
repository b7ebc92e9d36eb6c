"""Benchmarks of the global spreader: allocations per clock and EU load balance.

Run by ``make bench`` (``tb/bench.py``) on Verilator. Every run of the spreader alone is
the lock-step closed loop of ``tb/test_spreader.py`` (the golden model checks every clock,
the scoreboard the whole run) with no input gaps and no output back-pressure; the EUs
answer in the clock of the request (``ready`` = 1), so refusals are the only cause of
extra clocks. :func:`bench_scene_qcc` runs on ``spreader.spreader_qcc``, the spreader with
real QCCs (``tb/test_spreader_qcc.py``, checked by the scoreboard).
"""

import cocotb
import numpy as np

from golden.spreader import (EType, Item, PixelPacket, TrianglePacket, VertexPacket,
                             Workload, scene_workload, synthetic_workload)
from tb.bench import emit_figure
from tb.harness import params, reset, start
from tb.test_spreader import min_config, run_env
from tb.test_spreader_qcc import _start as start_qcc
from tb.test_spreader_qcc import run_qcc

FAST_EU = {"records": 200, "entities": 200, "not_ready": 0.0, "refuse": 0.0,
           "latency": (4, 40)}


def triangle_stream(rng, n_triangles=120, groups=8):
    """Vertex groups first, then ``n_triangles`` triangles over them (each group closed
    by its last user), then the end markers: a triangle-only phase in the middle."""
    verts = [Item(VertexPacket(base=8 * g, count=8, size=1)) for g in range(groups)]
    idx = rng.integers(0, 8 * groups, (n_triangles, 3))
    last_user = {}
    for t, tri in enumerate(idx):
        for i in tri:
            last_user[int(i) >> 3] = t
    tris, pix = [], []
    for t, tri in enumerate(idx):
        last = sum(1 << k for k, i in enumerate(tri)
                   if last_user[int(i) >> 3] == t and int(i) >> 3 not in
                   {int(j) >> 3 for j in tri[:k]})
        tris.append(Item(TrianglePacket(t, tuple(int(i) for i in tri), size=1, last=last),
                         after=tuple((EType.VERTEX, g) for g in range(groups)), at=20))
        pix.append(Item(PixelPacket(t, mask=0, last=True), after=((EType.TRIANGLE, t),),
                        at=20 + 4 * n_triangles))
    return Workload(vertex=verts, triangle=tris, pixel=pix)


def _span(res, stream):
    ts = [t for t, s in res.consumed if s == stream]
    return len(ts), (ts[-1] - ts[0] + 1) if ts else 1


@cocotb.test()
async def bench_triangles(dut):
    """Triangle-only stream: triangles per clock with every first candidate accepting,
    and clocks per allocation when EUs refuse 30 % of requests."""
    rng = await start(dut)
    wl = triangle_stream(rng)
    res, stats = await run_env(dut, rng, wl, config=min_config(), eu=FAST_EU, gap=0,
                               stall=0, name="triangles")
    n, span = _span(res, EType.TRIANGLE)
    emit_figure("triangle-only stream, all accept", n / span, "allocations/clock", params())
    await reset(dut)
    res, stats = await run_env(dut, rng, triangle_stream(rng), config=min_config(),
                               eu={**FAST_EU, "refuse": 0.3}, gap=0, stall=0,
                               name="triangles, refusals")
    n, span = _span(res, EType.TRIANGLE)
    emit_figure("triangle-only stream, 30% refusals", n / span, "allocations/clock",
                params())
    emit_figure("clocks per request (refused or accepted)",
                stats.alloc_cycles / max(1, stats.requests), "clocks", params())


@cocotb.test()
async def bench_mixed(dut):
    """A mixed stream (vertices, triangles, pixels, patches)."""
    rng = await start(dut)
    p = params()
    wl = synthetic_workload(seed=1, n_triangles=96, cols=8, max_pixels=4, n_patches=4,
                            vdt_records=p["vdt_records"], pt_records=p["pt_records"])
    res, stats = await run_env(dut, rng, wl, config=min_config(), eu=FAST_EU, gap=0,
                               stall=0, name="mixed")
    first, last = res.consumed[0][0], res.consumed[-1][0]
    emit_figure("mixed stream, packets consumed per clock", len(res.consumed)
                / (last - first + 1), "packets/clock", params())
    emit_figure("mixed stream, allocations per requesting clock",
                stats.allocations_per_clock, "allocations/clock", params())


def placement(res, stats):
    """Load balance and locality of a run: ``(largest EU's share of the allocations,
    smallest EU's share, share of triangles placed on an EU holding one of their
    vertices, share of pixel packets placed on their triangle's EU)``, from the move
    commands."""
    tri = [mv for _, mv in res.move if mv.etype == EType.TRIANGLE]
    pix = [mv for _, mv in res.move if mv.etype == EType.PIXEL]
    tri_local = sum(mv.eu in {s.eu for s in mv.src} for mv in tri) / max(1, len(tri))
    pix_local = sum(mv.eu == mv.src[0].eu for mv in pix) / max(1, len(pix))
    total = max(1, sum(stats.per_eu))
    return max(stats.per_eu) / total, min(stats.per_eu) / total, tri_local, pix_local


def spill_reasons(res):
    """Why pixel packets left their triangle's EU: a count per reason, from the log
    entry (passes, refusals) and the status the accepted request's scan read for the
    triangle's EU (a clock before its first request, less R's request then): ``refused``
    (the triangle's EU refused it in its final pass), ``records`` / ``entities`` /
    ``lines`` (that EU's status failed that part of the minimum; the first that
    failed), ``other`` (none of these: not in the pixel list), each also counted with
    ``+retry`` when the packet took more than one pass."""
    logs = {e.seq: e for _, e in res.log if e.etype == EType.PIXEL and e.kind == 0}
    reqs = {r.req.seq: r for r in res.requests
            if r.req.etype == EType.PIXEL and r.accept}
    out = {}
    for _, mv in res.move:
        if mv.etype != EType.PIXEL or mv.eu == mv.src[0].eu:
            continue
        home, entry, req = mv.src[0].eu, logs.get(mv.seq), reqs.get(mv.seq)
        st = req.status[home] if req is not None else None
        if entry is not None and entry.refused >> home & 1:
            why = "refused"
        elif st is None:
            why = "other"
        elif st.free_records < 1:
            why = "records"
        elif st.free_entities < 1:
            why = "entities"
        elif st.free_lines < mv.size:
            why = "lines"
        else:
            why = "other"
        if entry is not None and entry.passes > 1:
            why += "+retry"
        out[why] = out.get(why, 0) + 1
    return out


def _emit_placement(dut, label, runs):
    """Print each run's placement figures (with max/min allocations per EU) and emit
    their means (shares, so that an EU without allocations stays a finite figure)."""
    for seed, (hi, lo, tri, pix, per_eu) in runs:
        ratio = f"{max(per_eu) / min(per_eu):.2f}" if min(per_eu) else "inf"
        dut._log.info("%s, EU seed %d: allocations per EU %s (max/min %s), triangles on a "
                      "vertex-holding EU %.3f, pixel packets on their triangle's EU %.3f",
                      label, seed, per_eu, ratio, tri, pix)
    mean = np.mean([r[1][:4] for r in runs], axis=0)
    emit_figure(f"{label}, largest EU share of allocations", float(mean[0]), "fraction",
                params())
    emit_figure(f"{label}, smallest EU share of allocations", float(mean[1]), "fraction",
                params())
    emit_figure(f"{label}, triangles placed on a vertex-holding EU", float(mean[2]),
                "fraction", params())
    emit_figure(f"{label}, pixel packets placed on their triangle's EU", float(mean[3]),
                "fraction", params())


#: fixed EU random seeds of the scene benchmarks (the figures are means over them)
SCENE_SEEDS = (1, 2, 3)


async def _scene_runs(dut, run, begin=start):
    """The built-in ``mesh`` scene (64x64 pixels, 32 triangles) once per seed of
    SCENE_SEEDS through ``run(rng, workload, seed)`` after ``begin(dut)`` (clock and
    reset); returns the placement figures per seed and the last run's scoreboard
    statistics."""
    await begin(dut)
    p = params()
    wl = scene_workload("mesh", width=64, height=64, n=32, seed=0,
                        vdt_records=p["vdt_records"], pt_records=p["pt_records"])
    runs = []
    for seed in SCENE_SEEDS:
        await reset(dut)
        res, stats = await run(np.random.default_rng(seed), wl, seed)
        runs.append((seed, (*placement(res, stats), stats.per_eu)))
        dut._log.info("EU seed %d: %d clocks; pixel packets off their triangle's EU, by "
                      "reason: %s", seed, res.cycles, spill_reasons(res))
    return runs, stats


@cocotb.test()
async def bench_scene(dut):
    """EU load balance and locality on the built-in ``mesh`` scene (64x64 pixels, 32
    triangles; the raster golden model's pixel packets), testbench EUs of 12 records with
    completion latencies of 2-24 clocks; three fixed EU seeds."""
    runs, stats = await _scene_runs(dut, lambda rng, wl, seed: run_env(
        dut, rng, wl, config=min_config(),
        eu={**FAST_EU, "records": 12, "entities": 16, "latency": (2, 24)},
        gap=0, stall=0, name=f"scene seed {seed}"))
    _emit_placement(dut, "scene mesh, testbench EUs", runs)
    emit_figure("scene mesh, allocations", stats.allocations, "packets", params())


@cocotb.test()
async def bench_scene_qcc(dut):
    """The same scene on real QCCs (design ``spreader.spreader_qcc``): processors with
    completion latencies of 1-6 clocks per stage, no gaps or back-pressure."""
    runs, _ = await _scene_runs(dut, lambda rng, wl, seed: run_qcc(
        dut, rng, wl, config=min_config(), gap=0, stall=0,
        name=f"scene on QCCs, seed {seed}"), begin=start_qcc)
    _emit_placement(dut, "scene mesh, QCC EUs", runs)
