"""``make bench``: run every benchmark, print a table, write ``build/bench/results.json``.

Hardware benchmarks are cocotb modules (``tb/bench_<block>.py``) run on Verilator; each
of their tests appends figures (:func:`emit_figure`) to a scratch file that this script
collects. Golden-model benchmarks (:data:`GOLDEN`) are plain functions run in this process.
Usage: ``python -m tb.bench [BLOCK ...]``.
"""

import json
import os
import sys
import time

from tb.results import RESULTS, build_name, print_table, record, save

#: (block, design, parameters, cocotb module, tests)
HARDWARE = [
    ("sync", "sync.token_fifo", {"depth": 16, "width": 32}, "tb.bench_sync", "bench_fifo"),
    ("sync", "sync.regular", {}, "tb.bench_sync", "bench_unit"),
    ("sync", "sync.fork", {"n_outputs": 4}, "tb.bench_sync", "bench_unit"),
    ("sync", "sync.join", {"n_inputs": 4}, "tb.bench_sync", "bench_unit"),
    ("sync", "sync.join_fork", {"n_inputs": 2, "n_outputs": 2}, "tb.bench_sync", "bench_unit"),
    ("sync", "sync.csp", {}, "tb.bench_sync", "bench_unit"),
    ("sync", "sync.zpreset", {}, "tb.bench_sync", "bench_unit"),
    ("raster", "raster.block", {}, "tb.bench_raster", "bench_modes"),
    ("raster", "raster.setup", {}, "tb.bench_raster", "bench_setup"),
    ("raster", "raster.traversal", {}, "tb.bench_raster", "bench_setup"),
    # every mode at 9.4 coordinates: the schedule does not depend on the coordinate
    # width, and the every-mode 12.8 pipeline is a long Verilator build
    ("raster", "raster.pipeline", {"int_bits": 9, "subpix": 4, "tag_bits": 12},
     "tb.bench_raster", "bench_pipeline"),
    ("spreader", "spreader.spreader", {"n_eus": 4, "vdt_records": 32, "pt_records": 128},
     "tb.bench_spreader", ["bench_triangles", "bench_mixed", "bench_scene"]),
    ("spreader", "spreader.spreader_qcc", {"n_eus": 4, "records": 16, "entities": 16,
                                           "lines": 32, "vdt_records": 32, "pt_records": 32},
     "tb.bench_spreader", ["bench_scene_qcc"]),
    # the QCC scene with locality against load (README block 3: the triangles'
    # locality threshold, about a third of a QCC's records)
    ("spreader", "spreader.spreader_qcc", {"n_eus": 4, "records": 16, "entities": 16,
                                           "lines": 32, "vdt_records": 32, "pt_records": 32,
                                           "local_records": 5},
     "tb.bench_spreader", ["bench_scene_qcc"]),
    # the same scenes without the load-balancing rotation (the lists' fixed order)
    ("spreader", "spreader.spreader", {"n_eus": 4, "vdt_records": 32, "pt_records": 128,
                                       "rotate": False}, "tb.bench_spreader", ["bench_scene"]),
    ("spreader", "spreader.spreader_qcc", {"n_eus": 4, "records": 16, "entities": 16,
                                           "lines": 32, "vdt_records": 32, "pt_records": 32,
                                           "rotate": False},
     "tb.bench_spreader", ["bench_scene_qcc"]),
    ("qcc", "qcc.qcc", {}, "tb.bench_qcc",
     ["bench_search", "bench_alloc", "bench_issue", "bench_issue_seed", "bench_mixed"]),
    ("wave", "wave.scheduler", {"wave_size": 32, "max_k": 12}, "tb.bench_wave",
     "bench_throughput"),
    ("warp", "warp.unit", {"lanes": 2}, "tb.bench_warp",
     ["bench_ipc", "bench_lock", "bench_counter"]),
    ("warp", "warp.unit", {"lanes": 4}, "tb.bench_warp",
     ["bench_ipc", "bench_lock", "bench_counter"]),
    ("warp", "warp.unit", {"lanes": 8}, "tb.bench_warp",
     ["bench_ipc", "bench_lock", "bench_counter"]),
]

#: Wide designs, built with the harness's WIDE_DESIGN options (the figures count clocks,
#: not seconds).
WIDE = {"spreader.spreader_qcc", "qcc.qcc", "wave.scheduler", "raster.pipeline"}

#: (block, module) of golden-model benchmarks: ``module.GOLDEN`` lists plain functions
#: that return ``(metric, value, unit, params)`` tuples.
GOLDEN = [
    ("raster", "tb.bench_raster"),
    ("wave", "tb.bench_wave"),
]

BENCH_OUT = "FRESCO_BENCH_OUT"


def emit_figure(metric, value, unit, params):
    """Called inside a cocotb benchmark: record one figure of the running design."""
    rec = record(os.environ["FRESCO_DESIGN"].split(".")[0], metric, value, unit,
                 {"design": os.environ["FRESCO_DESIGN"], **params})
    print(f"FIGURE {rec['metric']}: {value:.4g} {unit}" if isinstance(value, float)
          else f"FIGURE {rec['metric']}: {value} {unit}")
    with open(os.environ[BENCH_OUT], "a") as file:
        file.write(json.dumps(rec) + "\n")


def run_hardware(blocks):
    from tb.harness import ROOT, SIM_BUILD, WIDE_DESIGN, output_to, run_cocotb
    records = []
    for block, design, params, module, tests in HARDWARE:
        if blocks and block not in blocks:
            continue
        folder = SIM_BUILD / "bench" / build_name(design, params)
        folder.mkdir(parents=True, exist_ok=True)
        out = folder / "figures.jsonl"
        out.unlink(missing_ok=True)
        log = ROOT / "build" / "bench" / f"{build_name(design, params)}.log"
        print(f"bench {design} {params} ...", end=" ", flush=True)
        started = time.time()
        try:
            with output_to(log):
                run_cocotb(design, module, os.environ.get("SIM") or "verilator", params,
                           testcase=tests, folder=folder, extra_env={BENCH_OUT: str(out)},
                           **(WIDE_DESIGN if design in WIDE else {}))
        except BaseException:
            print(f"FAILED after {time.time() - started:.0f} s; see {log.relative_to(ROOT)}")
            raise
        figures = [json.loads(line) for line in out.read_text().splitlines()]
        print(f"{len(figures)} figures in {time.time() - started:.0f} s "
              f"(log {log.relative_to(ROOT)})", flush=True)
        records += figures
    return records


def run_golden(blocks):
    import importlib
    records = []
    for block, module in GOLDEN:
        if blocks and block not in blocks:
            continue
        for bench in importlib.import_module(module).GOLDEN:
            print(f"golden {module}.{bench.__name__} ...", flush=True)
            records += [record(block, *figure) for figure in bench()]
    return records


def main(argv):
    blocks = set(argv)
    started = time.time()
    records = run_hardware(blocks) + run_golden(blocks)
    save(records)
    print()
    print_table(records)
    print(f"\n{len(records)} figures in {time.time() - started:.0f} s, saved to {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
