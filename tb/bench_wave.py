"""Benchmarks of the wave scheduler.

Hardware (``make bench`` runs :func:`bench_throughput` on Verilator): primitives per
clock into waves for every topology in both modes, non-indexed and indexed, and wave
records per clock out, with no input gaps and no back-pressure.

Golden model (:data:`GOLDEN`): the seed's primitives-per-wave table at L = 32 next to
the seed's numbers, and on an indexed grid mesh the vertex-shader invocations, fibers
and geometry-loop iterations per primitive in each mode.
"""

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from golden.wave import (Draw, Mode, Topology, assemble, build_waves, execute, grid_mesh,
                         index_transfers,
                         pack_draw, pack_wave, schedule)
from tb.bench import emit_figure
from tb.harness import StreamDriver, StreamMonitor, params, start

REP, NON = Mode.REPLICATED, Mode.NON_REPLICATED
NAMES = {Topology.POINT_LIST: "point list", Topology.LINE_LIST: "line list",
         Topology.LINE_STRIP: "line strip", Topology.TRIANGLE_LIST: "triangle list",
         Topology.TRIANGLE_STRIP: "triangle strip", Topology.PATCH_LIST: "patch list K=10"}
MODES = {REP: "replicated", NON: "non-replicated"}


def throughput_cases(count):
    """(name, draw, indices): ``count``-primitive draws of every topology and mode, N = 4."""
    cases = []
    for mode in (REP, NON):
        for topology, name in NAMES.items():
            k = 10 if topology == Topology.PATCH_LIST else 1
            cases.append((f"{name}, {MODES[mode]}",
                          Draw(topology, count, k=k, mode=mode, n=4), []))
        strip = list(range(count + 2))
        cases.append((f"indexed triangle strip, {MODES[mode]}",
                      Draw(Topology.TRIANGLE_STRIP, len(strip), indexed=True, mode=mode, n=4),
                      strip))
        mesh = grid_mesh(20, count // 40)
        cases.append((f"indexed triangle list (grid mesh), {MODES[mode]}",
                      Draw(Topology.TRIANGLE_LIST, len(mesh), indexed=True, mode=mode, n=4),
                      mesh))
    return cases


async def _run(dut, rng, draw, indices, wave_size, max_k):
    """Clocks from the draw's acceptance to its last record out; (prims, waves, clocks)."""
    want = schedule([(draw, indices)], wave_size, max_k).waves
    draws = StreamDriver(dut, "draw", rng, gap=0)
    index = StreamDriver(dut, "index", rng, gap=0)
    out = StreamMonitor(dut, "o", rng, stall=0)
    index.send(index_transfers(indices))
    draws.send([pack_draw(draw)])
    while not draws.accepted:
        await RisingEdge(dut.clk)
    clocks = 0
    while len(out.items) < len(want):
        await RisingEdge(dut.clk)
        clocks += 1
        assert clocks < 100 * (draw.count + 10), "the scheduler stopped moving"
    for port in (draws, index, out):
        port.stop()
    await ClockCycles(dut.clk, 5)
    assert out.items == [pack_wave(w, max_k) for w in want], "records differ from the model"
    return sum(w.n_prims for w in want), len(want), clocks


async def _marginal(dut, rng, short, long, wave_size, max_k):
    """Primitives and records per clock of the extra length of ``long`` over ``short``:
    the steady rate, wave boundaries included, without the fixed latency."""
    prims0, waves0, clocks0 = await _run(dut, rng, *short, wave_size, max_k)
    prims1, waves1, clocks1 = await _run(dut, rng, *long, wave_size, max_k)
    return (prims1 - prims0) / (clocks1 - clocks0), (waves1 - waves0) / (clocks1 - clocks0)


@cocotb.test()
async def bench_throughput(dut):
    """Primitives per clock into waves per topology and mode, records per clock out (no
    gaps, no back-pressure; every record checked against the golden model)."""
    rng = await start(dut)
    wave_size = params().get("wave_size", 32)
    max_k = params().get("max_k", 32)
    for short, long in zip(throughput_cases(200), throughput_cases(400)):
        prims, waves = await _marginal(dut, rng, short[1:], long[1:], wave_size, max_k)
        emit_figure(f"primitives per clock into waves, {long[0]}", prims, "prims/clock",
                    params())
    # One primitive per wave (replicated, F = N = L): the record rate out.
    short, long = ((Draw(Topology.POINT_LIST, c, mode=REP, n=wave_size), []) for c in (150, 300))
    prims, waves = await _marginal(dut, rng, short, long, wave_size, max_k)
    emit_figure("wave records per clock out (one primitive per wave)", waves,
                "records/clock", params())
    latency = (await _run(dut, rng, Draw(Topology.TRIANGLE_LIST, 1, mode=NON), [],
                          wave_size, max_k))[2]
    emit_figure("latency, draw accepted to its one record out (one triangle)", latency,
                "clocks", params())


# ---------------------------------------------------------------- golden-model figures

SEED_TABLE = [
    # (name, topology, K, N, the seed's replicated and non-replicated primitives per wave)
    ("point list, N=4", Topology.POINT_LIST, 1, 4, (8, 32)),
    ("triangle strip, N=4", Topology.TRIANGLE_STRIP, 3, 4, (8, 30)),
    ("triangle strip, N=18", Topology.TRIANGLE_STRIP, 3, 18, (2, 30)),
    ("patch K=10, N=4", Topology.PATCH_LIST, 10, 4, (3, 3)),
]


def seed_table():
    """Primitives per wave at L = 32 in both modes, and the seed's numbers."""
    figures = []
    for name, topology, k, n, seed in SEED_TABLE:
        for mode, seed_value in zip((REP, NON), seed):
            draw = Draw(topology, 200, k=k, n=n, mode=mode)
            waves = build_waves(draw, assemble(draw), 32)
            figures.append((f"primitives per wave, {name}, {MODES[mode]}", waves[0].n_prims,
                            "prims/wave", {"wave_size": 32}))
            figures.append((f"primitives per wave, {name}, {MODES[mode]}, seed says",
                            seed_value, "prims/wave", {"wave_size": 32}))
    return figures


def grid_mesh_reuse(sizes=((8, 8), (32, 32))):
    """On indexed grid meshes: VS invocations, fibers and GS loop iterations per
    primitive in each mode (pass-through triangle, N = 3)."""
    figures = []
    for (width, height), mode in ((size, mode) for size in sizes for mode in (REP, NON)):
        indices = grid_mesh(width, height)
        draw = Draw(Topology.TRIANGLE_LIST, len(indices), indexed=True, mode=mode, n=3)
        prims = assemble(draw, indices)
        run = execute(build_waves(draw, prims, 32), "pass_through", 3)
        tag = {"wave_size": 32, "mesh": f"{width}x{height}", "mode": MODES[mode]}
        figures += [
            ("grid mesh: VS invocations per primitive", run.vs_invocations / len(prims),
             "VS/prim", tag),
            ("grid mesh: fibers per primitive", run.fibers / len(prims), "fibers/prim", tag),
            ("grid mesh: GS loop iterations per primitive", run.gs_iterations / len(prims),
             "iterations/prim", tag),
            ("grid mesh: waves", run.waves, "waves", tag)]
    return figures


def sprite_expansion(count=1024):
    """Point sprites (1 point in, 4 vertices out, N = 4): fibers and GS iterations."""
    figures = []
    for mode in (REP, NON):
        draw = Draw(Topology.POINT_LIST, count, mode=mode, n=4)
        run = execute(build_waves(draw, assemble(draw), 32), "point_sprite", 4)
        tag = {"wave_size": 32, "mode": MODES[mode]}
        figures += [("point sprites: fibers per primitive", run.fibers / count,
                     "fibers/prim", tag),
                    ("point sprites: GS loop iterations per primitive",
                     run.gs_iterations / count, "iterations/prim", tag),
                    ("point sprites: waves", run.waves, "waves", tag)]
    return figures


GOLDEN = [seed_table, grid_mesh_reuse, sprite_expansion]
