"""Benchmarks of the block rasterizer (``hw/raster.py``) and of its golden model.

Hardware (run by ``make bench`` on Verilator, figures appended to ``$FRESCO_BENCH_OUT``):
:func:`bench_modes` streams a mixed workload -- a mesh, random triangles, slivers and,
on a 4-edge build, wide lines, traversed by the golden model -- through the block with
no input gaps and no back-pressure, once per MSAA mode of the build, and records blocks
per clock, samples per clock, the target for the same blocks (the golden cost,
``golden.raster.block_clocks``: ``max(1, ceil(p*S/lanes))`` clocks per block, at the
default 16 lanes the spec's ``max(1, ceil(16*p*S/256))``) and the latency. Every output word is
also checked against the golden model, so a figure never comes from a wrong answer.

Golden model (plain functions, called by ``tb/bench.py``): :func:`golden_coverage`
(samples per second of ``golden.raster.coverage``) and :func:`golden_span_table` (span
statistics of a built-in scene next to the seed's Table 3).
"""

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles

from golden import raster as R
from golden import scenes as S
from tb.bench import emit_figure
from tb.harness import params, start
from tb.test_raster import Bench, Fmt, Handshakes, documented_lanes

#: The seed's Table 3 (4x4 spans): shares of empty/full, partial (= crossed by >= 1 edge),
#: crossed by >= 2 and >= 3 edges.
SEED_TABLE3 = {"empty or full": 0.7264, "1 edge": 0.2736, "2 edges": 0.1016,
               "3 edges": 0.0122}


def workload(fmt, samples, side=128, seed=1):
    """Golden block records of the mixed workload at ``samples`` per pixel."""
    side = min(side, fmt.size)
    kw = {"subpix": fmt.subpix, "int_bits": fmt.int_bits}
    scenes = [S.mesh(side, side, 160, seed, **kw),
              S.random_triangles(side, side, 60, seed, max_size=side / 3, **kw),
              S.slivers(side, side, 8, seed, **kw)]
    if fmt.edges == 4:
        scenes.append(S.wide_lines(side, side, 12, seed, **kw))
    records = []
    for v in scenes:
        records += R.block_records(v, side, side, samples, **kw)
    return records


@cocotb.test()
async def bench_modes(dut):
    """Blocks and samples per clock per MSAA mode on the mixed workload, and latency."""
    rng = await start(dut)
    fmt = Fmt()
    log = Handshakes(dut)
    lanes = documented_lanes()
    for n in fmt.modes:
        records = workload(fmt, n)
        partial = [int((r.span_class == R.PARTIAL).sum()) for r in records]
        target = int(R.block_clocks(partial, n, lanes).sum())
        bench = Bench(dut, rng, gap=0.0, stall=0.0)
        log.clear()
        bench.send(records[:1])
        await bench.finish()
        latency = log.outputs[0] - log.inputs[0] - R.block_clocks(partial[0], n, lanes)
        log.clear()
        bench.expected.clear()
        bench.monitor.items.clear()
        bench.send(records)
        await bench.finish(timeout=200 + 40 * len(records))
        clocks = log.outputs[-1] - log.inputs[0] - latency
        tagged = {**params(), "samples": n}
        emit_figure("blocks per clock, mixed workload", len(records) / clocks, "blocks/clock",
                    tagged)
        emit_figure("samples per clock, mixed workload", 256 * n * len(records) / clocks,
                    "samples/clock", tagged)
        emit_figure("clocks / target clocks max(1, ceil(pS/lanes))", clocks / target, "ratio",
                    tagged)
        emit_figure("blocks in the mixed workload", len(records), "blocks", tagged)
        emit_figure("latency (input handshake to output valid)", latency, "clocks", tagged)
        bench.stop()
        await ClockCycles(dut.clk, 4)


@cocotb.test()
async def bench_pipeline(dut):
    """raster.pipeline on the same mixed workload per MSAA mode, no gaps, no
    back-pressure: primitives, blocks (out of the traversal), samples and packets per
    clock, and the latency from a primitive's input handshake to its first packet word.
    Every packet is checked against the golden model."""
    from tb.test_raster_pipeline import Run
    rng = await start(dut)
    log = Handshakes(dut)
    for n in Run.formats().modes:
        run = Run(dut, rng, gap=0.0, stall=0.0)
        fmt = run.fmt
        side = 128
        # Latency: one primitive into the idle pipeline.
        tri = S.random_triangles(side, side, 1, 3, min_size=20, max_size=30,
                                 subpix=fmt.subpix, int_bits=fmt.int_bits)
        log.clear()
        ids, st, recs, pkts = run.primitives(tri, n, (0, 0, side, side))
        run.expected += [fmt.packet(pk, ids[pk.prim]) for pk in pkts]
        await _pipeline_done(run)
        latency = log.outputs[0] - log.inputs[0]
        log.clear()
        blocks = 0
        verts = [v for v in _workload_scenes(side, subpix=fmt.subpix, int_bits=fmt.int_bits)
                 if v.shape[1] <= fmt.edges]
        prims = 0
        for v in verts:
            ids, st, recs, pkts = run.primitives(v, n, (0, 0, side, side))
            run.expected += [fmt.packet(pk, ids[pk.prim]) for pk in pkts]
            prims += len(v)
            blocks += len(recs)         # the golden traversal's; the packets prove them
        got = await _pipeline_done(run)
        clocks = log.outputs[-1] - log.inputs[0] + 1
        tagged = {**params(), "samples": n, "workload": "raster.block bench"}
        emit_figure("pipeline primitives per clock", prims / clocks, "primitives/clock", tagged)
        emit_figure("pipeline blocks per clock (traversal out)", blocks / clocks,
                    "blocks/clock", tagged)
        emit_figure("pipeline samples per clock (blocks x 256 x S)",
                    256 * n * blocks / clocks, "samples/clock", tagged)
        emit_figure("pipeline packets per clock", len(got) / clocks, "packets/clock", tagged)
        emit_figure("pipeline latency, primitive in to first packet word", latency, "clocks",
                    tagged)
        run.driver.stop()
        run.monitor.stop()
        await ClockCycles(dut.clk, 4)


@cocotb.test()
async def bench_setup(dut):
    """raster.setup (or raster.traversal) alone, no gaps, no back-pressure: primitives
    per clock into the setup; blocks per clock out of the traversal."""
    from tb.test_raster_pipeline import Run, batch
    rng = await start(dut)
    log = Handshakes(dut)
    run = Run(dut, rng, gap=0.0, stall=0.0)
    fmt = run.fmt
    side = 128
    verts = [v for v in _workload_scenes(side, subpix=fmt.subpix, int_bits=fmt.int_bits)
                 if v.shape[1] <= fmt.edges]
    design = type(fmt.rtl).__name__
    words = []
    for v in verts:
        st, recs, _ = batch(fmt, v, 1, (0, 0, side, side), blocks=design != "TriangleSetup")
        ids = list(range(run.next_id, run.next_id + len(v)))
        run.next_id += len(v)
        if design == "TriangleSetup":
            run.driver.send(fmt.primitive(p, ids[i], 1, (0, 0, side, side))
                            for i, p in enumerate(v))
            run.expected += [fmt.setup_word(st, p, ids[p], 1) for p in st.live]
        else:
            words += [fmt.setup_word(st, p, ids[p], 1) for p in st.live]
            run.expected += [fmt.block_word(r, ids[r.prim]) for r in recs]
    run.driver.send(words)
    await run.wait(len(run.expected), "outputs")
    assert run.monitor.items == run.expected, "outputs differ from the golden model"
    clocks = max(log.outputs[-1], log.inputs[-1]) - log.inputs[0] + 1
    tagged = {**params(), "workload": "raster.block bench"}
    if design == "TriangleSetup":
        # Input handshakes over the clocks they span: the rate, without the latency.
        emit_figure("setup primitives per clock (input)",
                    len(log.inputs) / (log.inputs[-1] - log.inputs[0] + 1),
                    "primitives/clock", tagged)
        emit_figure("setup latency, input to output (first primitive)",
                    log.outputs[0] - log.inputs[0], "clocks", tagged)
    else:
        emit_figure("traversal blocks per clock", len(log.outputs) / clocks, "blocks/clock",
                    tagged)
        emit_figure("traversal primitives per clock", len(log.inputs) / clocks,
                    "primitives/clock", tagged)


async def _pipeline_done(run):
    from tb.test_raster_pipeline import check_list, describe_packet, pipeline_wait
    got = await pipeline_wait(run)
    check_list("packet", run.expected, got, describe_packet)
    return got


# ---------------------------------------------------------------- golden model

def golden_coverage():
    """Samples per second of the golden model's brute-force coverage (1024x1024 frame,
    10k-triangle mesh, 4x MSAA)."""
    r = R.benchmark_coverage(1024, 1024, 10000, samples=4)
    tagged = {"function": "golden.raster.coverage", "width": 1024, "height": 1024,
              "triangles": r["triangles"], "samples": 4, "scene": r["scene"]}
    return [
        ("golden coverage, frame samples per second", r["frame_samples_per_s"], "samples/s",
         tagged),
        ("golden coverage, tested samples per second", r["tested_samples_per_s"],
         "samples/s", tagged),
        ("golden coverage, seconds per frame", r["seconds"], "s", tagged),
    ]


def golden_span_table(scene="random", width=1024, height=768, n=2000, seed=0):
    """Span statistics (Table 3 kind) of a built-in scene, next to the seed's Table 3."""
    v = S.scene(scene, width, height, n, seed)
    st = R.span_statistics(v, width, height, 4)
    sp = st["spans"]
    ours = {"empty or full": sp["share_empty_or_full"], "1 edge": sp["share_crossed"][0],
            "2 edges": sp["share_crossed"][1], "3 edges": sp["share_crossed"][2]}
    tagged = {"scene": scene, "width": width, "height": height, "primitives": n,
              "seed": seed, "blocks": st["blocks"]}
    records = []
    for row, share in ours.items():
        records.append((f"4x4 spans {row}: this scene", share, "share", tagged))
        records.append((f"4x4 spans {row}: seed Table 3", SEED_TABLE3[row], "share", {}))
    hist = np.array(st["partial_spans_histogram"])
    records.append(("mean partial spans per block", float(hist @ np.arange(17) / hist.sum()),
                    "spans", tagged))
    return records


#: The seed's Table 2 (hierarchical, per level) and Table 3 (16x16 and all 4x4 spans):
#: shares of empty/full, partial, crossed by >= 1, 2, 3 edges.
SEED_TABLE2 = {16: (5.15, 94.85, 94.85, 82.39, 12.46), 8: (44.24, 55.76, 55.76, 51.44, 4.31),
               4: (48.27, 51.73, 51.73, 49.43, 2.31), 1: (89.32, 10.68, 10.68, 10.58, 0.10)}
SEED_TABLE3_LEVELS = {16: (5.15, 94.85, 94.85, 63.39, 12.46), 4: (72.64, 27.36, 27.36, 10.16, 1.22)}
ROWS = ("empty/full", "partial", "1 edge", "2 edges", "3 edges")


class _BlockFormat:
    """The block rasterizer's default build, as :func:`workload` needs it."""
    edges, subpix, int_bits, size = 4, 8, 12, 4096


def _workload_scenes(side=128, seed=1, subpix=8, int_bits=12):
    """The primitives of :func:`workload` (the same scenes) in the ``int_bits.subpix``
    format."""
    kw = {"subpix": subpix, "int_bits": int_bits}
    return [S.mesh(side, side, 160, seed, **kw),
            S.random_triangles(side, side, 60, seed, max_size=side / 3, **kw),
            S.slivers(side, side, 8, seed, **kw), S.wide_lines(side, side, 12, seed, **kw)]


def golden_table1():
    """The seed's Table 1: pixels per clock of the span-parallel block rasterizer (its
    cost model, ``max(1, ceil(16*p*S/256))`` clocks a block, which the RTL meets: see
    ``raster.block``'s "clocks / target" figure) and of the hierarchical 16->8->4->2->1
    rasterizer (:func:`golden.raster.hierarchical_model`, 21 stages), per MSAA mode, on
    the block bench's mixed workload."""
    figures, lines = [], []
    lines.append("Table 1: pixels per clock, mixed workload (raster.block bench), "
                 "seed claims up to 64x")
    lines.append(f"{'MSAA':>6}{'blocks':>8}{'span 16x16':>12}{'hierarchical':>14}"
                 f"{'ratio':>8}")
    for n in R.SAMPLE_COUNTS:
        records = workload(_BlockFormat, n)
        partial = [int((r.span_class == R.PARTIAL).sum()) for r in records]
        span_clocks = int(R.block_clocks(partial, n).sum())
        hier = R.hierarchical_model(records, n)
        span_ppc = 256 * len(records) / span_clocks
        ratio = span_ppc / hier["pixels_per_clock"]
        lines.append(f"{n:>5}x{len(records):>8}{span_ppc:>12.2f}{hier['pixels_per_clock']:>14.2f}"
                     f"{ratio:>7.1f}x")
        tagged = {"samples": n, "workload": "raster.block bench", "blocks": len(records)}
        figures += [("Table 1: span rasterizer pixels per clock (cost model)", span_ppc,
                     "pixels/clock", tagged),
                    ("Table 1: hierarchical rasterizer pixels per clock (21 stages)",
                     hier["pixels_per_clock"], "pixels/clock", tagged),
                    ("Table 1: span / hierarchical", ratio, "ratio", tagged)]
    print("\n".join(lines), flush=True)
    return figures


def golden_tables23():
    """Tables 2 and 3 of the block bench's workload at 1x, next to the seed's."""
    total = None
    for v in _workload_scenes():
        st = R.span_statistics(v, 128, 128, 1)
        levels = {**{L: st["levels"][L] for L in R.LEVELS}, "spans": st["spans"]}
        if total is None:
            total = {k: dict(c, crossed=list(c["crossed"])) for k, c in levels.items()}
            continue
        for k, c in levels.items():
            for f in ("tiles", "empty", "full", "partial"):
                total[k][f] += c[f]
            total[k]["crossed"] = [a + b for a, b in zip(total[k]["crossed"], c["crossed"])]

    def shares(c):
        t = max(c["tiles"], 1)
        return [100 * (c["empty"] + c["full"]) / t, 100 * c["partial"] / t,
                *(100 * x / t for x in c["crossed"][:3])]

    figures, lines = [], ["Table 2: hierarchical, tiles per level (ours / seed), %"]
    lines.append(f"{'':12}" + "".join(f"{f'{L}x{L}':>16}" for L in (16, 8, 4, 1)))
    ours = {L: shares(total[L]) for L in (16, 8, 4, 1)}
    for r, row in enumerate(ROWS):
        lines.append(f"{row:12}" + "".join(f"{ours[L][r]:>8.2f}/{SEED_TABLE2[L][r]:<7.2f}"
                                           for L in (16, 8, 4, 1)))
    lines.append("Table 3: all sixteen 4x4 spans per block (ours / seed), %")
    lines.append(f"{'':12}{'16x16':>16}{'4x4':>16}")
    t3 = {16: ours[16], 4: shares(total["spans"])}
    for r, row in enumerate(ROWS):
        lines.append(f"{row:12}" + "".join(f"{t3[L][r]:>8.2f}/{SEED_TABLE3_LEVELS[L][r]:<7.2f}"
                                           for L in (16, 4)))
    print("\n".join(lines), flush=True)
    for L in (16, 8, 4, 1):
        for r, row in enumerate(ROWS):
            figures.append((f"Table 2 {L}x{L} {row}", ours[L][r] / 100, "share",
                            {"workload": "raster.block bench", "seed": SEED_TABLE2[L][r] / 100}))
    for r, row in enumerate(ROWS):
        figures.append((f"Table 3 4x4 {row}", t3[4][r] / 100, "share",
                        {"workload": "raster.block bench", "seed": SEED_TABLE3_LEVELS[4][r] / 100}))
    return figures


#: Golden-model benchmarks that ``tb/bench.py`` runs: functions returning
#: ``(metric, value, unit, params)`` tuples.
GOLDEN = [golden_coverage, golden_span_table, golden_table1, golden_tables23]
