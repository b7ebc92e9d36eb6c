"""``make demo``: the project's main job -- a scene drawn by the whole front end.

Usage::

    python -m tb.demo [--scene mesh+random|mesh|random|slivers|fan] [--size WxH]
                      [--msaa 1|2|4|8|16] [--eus N] [--count N] [--seed N]

(``make demo SCENE=... SIZE=... MSAA=... EUS=...``; defaults: a 128x128 mesh plus random
triangles, 4x MSAA, 4 EUs). Builds ``frontend.frontend`` for that frame and mode, runs
the scene's command stream through it on Verilator with a progress bar (pixel packets
drawn), reads the framebuffer back and writes into ``build/demo/``:

* ``frame.png`` -- the RTL's framebuffer, each primitive id in its own colour, the
  samples of a pixel averaged;
* ``golden.png`` -- the same from ``golden.frontend.render``;
* ``diff.png`` -- white where any sample differs (the run fails unless it is black);

and prints the summary: primitives, blocks, pixel packets, clocks, samples per clock,
allocations and busy share per EU, the frame time at the design's routed Fmax (the
lowest that ``make synth`` or ``make bitstream`` recorded in
``build/bench/results.json`` on this machine), and where the clocks go
(each block's ideal clocks for this frame). The simulator's output goes to
``build/demo/sim.log``.
"""

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np

from tb.harness import ROOT, output_to

OUT = ROOT / "build" / "demo"
SCENES = ("mesh+random", "mesh", "random", "slivers", "fan")
PROGRESS_ENV, JOB_ENV = "FRESCO_DEMO_PROGRESS", "FRESCO_DEMO_JOB"


def demo_params(width, height, samples, eus, prid_bits=8):
    """The build the demo runs (``frontend.frontend``)."""
    return {"n_eus": eus, "width": width, "height": height, "modes": (samples,),
            "prid_bits": prid_bits, "records": 16, "entities": 16, "lines": 32,
            "vdt_records": 16, "pt_records": 8, "fifo_depth": 2, "latency": 2}


def scene_vertices(name, width, height, count, seed):
    """``(n, 3, 2)`` triangles in 16.8 fixed point."""
    from golden import frontend as G
    from golden import scenes as S
    ib = G.int_bits_for(width, height)
    kw = dict(subpix=G.SUBPIX, int_bits=ib)
    if name == "mesh+random":
        mesh = S.scene("mesh", width, height, count - count // 3, seed, **kw)
        rand = S.scene("random", width, height, count // 3, seed + 1, **kw)
        return np.concatenate([mesh, rand])
    return S.scene(name, width, height, count, seed, **kw)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="make demo", description=__doc__.split("\n")[0])
    parser.add_argument("--scene", default="mesh+random", choices=SCENES)
    parser.add_argument("--size", default="128x128")
    parser.add_argument("--msaa", default=4, type=int, choices=(1, 2, 4, 8, 16))
    parser.add_argument("--eus", default=4, type=int)
    parser.add_argument("--count", default=192, type=int, help="primitives (1..255)")
    parser.add_argument("--seed", default=1, type=int)
    args = parser.parse_args(argv)
    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
        if not all(16 <= s <= 2048 and s & (s - 1) == 0 for s in (width, height)):
            raise ValueError
    except ValueError:
        parser.error(f"SIZE must be WxH with sides powers of two from 16 to 2048, "
                     f"not {args.size!r}")
    if not 1 <= args.eus <= 16:
        parser.error(f"EUS must be an integer from 1 to 16, not {args.eus}")
    if not 1 <= args.count <= 255:
        parser.error(f"COUNT must be an integer from 1 to 255, not {args.count}")
    return demo(args.scene, width, height, args.msaa, args.eus, args.count, args.seed)


def demo(scene, width, height, samples, eus, count, seed):
    from PIL import Image
    from tqdm import tqdm
    from golden import frontend as G
    from golden import raster as R
    from tb.harness import WIDE_DESIGN, run_cocotb
    from tb.render_raster import paint, palette

    started = time.time()
    OUT.mkdir(parents=True, exist_ok=True)
    verts = scene_vertices(scene, width, height, count, seed)
    words = G.scene_cmds(verts, samples)
    (frame,) = G.parse(words, width=width, height=height, modes=(samples,)).frames
    want = G.render(frame, width, height, samples)
    wl = G.workload(frame, width, height)
    n_packets = sum(1 for it in wl.streams[2] if it.packet.mask)
    params = demo_params(width, height, samples, eus)
    result, progress = OUT / "result.json", OUT / "progress"
    for f in (result, progress):
        f.unlink(missing_ok=True)
    env = {JOB_ENV: json.dumps({"words": words, "out": str(result)}),
           PROGRESS_ENV: str(progress)}
    log = OUT / "sim.log"
    print(f"demo: {scene} {width}x{height} {samples}x MSAA, {len(verts)} triangles, "
          f"{eus} EUs: building frontend.frontend on Verilator (log "
          f"{log.relative_to(ROOT)}) ...", flush=True)

    failure = []

    def simulate():
        try:
            with output_to(log):
                run_cocotb("frontend.frontend", "tb.demo", "verilator", params,
                           testcase="demo_frame", folder=ROOT / "sim_build" / "demo",
                           extra_env=env, **WIDE_DESIGN)
        except BaseException as exc:          # reported below, after the bar
            failure.append(exc)

    # the bar writes to the terminal's stderr: the simulation's output is redirected
    terminal = os.fdopen(os.dup(2), "w")
    worker = threading.Thread(target=simulate)
    worker.start()
    bar = None
    while worker.is_alive():
        worker.join(0.5)
        try:
            done = int(progress.read_text() or 0)
        except (OSError, ValueError):
            continue
        if bar is None:             # the simulation has started: the build is done
            print(f"built in {time.time() - started:.0f} s; simulating", file=terminal,
                  flush=True)
            bar = tqdm(total=n_packets, unit="packet", desc="pixel packets drawn",
                       dynamic_ncols=True, file=terminal)
        bar.update(done - bar.n)
    if bar is not None:
        bar.close()
    if failure or not result.exists():
        print(f"demo: the simulation failed (see {log.relative_to(ROOT)}): "
              f"{failure[0] if failure else 'no result'}", file=sys.stderr)
        return 1
    run = json.loads(result.read_text())

    got = G.ids_from_words(run["fb"], width, height, samples, params["prid_bits"])
    colours = palette(len(verts))
    Image.fromarray(paint(got - 1, colours)).save(OUT / "frame.png")
    Image.fromarray(paint(want - 1, colours)).save(OUT / "golden.png")
    diff = (got != want).any(axis=2)
    Image.fromarray((diff * 255).astype(np.uint8)).save(OUT / "diff.png")

    side = 1 << G.int_bits_for(width, height)
    blocks = len(R.block_records(verts, side, side, samples, (0, 0, width, height),
                                 subpix=G.SUBPIX, int_bits=G.int_bits_for(width, height)))
    clocks = run["clocks"]
    covered = int((want > 0).sum())
    fmax = _fmax()
    rows = [
        ("primitives", f"{len(verts)}"),
        ("blocks (16x16, golden)", f"{blocks}"),
        ("pixel packets", f"{n_packets}"),
        ("clocks (FRAME to done)", f"{clocks}"),
        ("covered samples per clock", f"{covered / clocks:.2f}"),
        ("rasterized samples per clock", f"{blocks * 256 * samples / clocks:.1f}"),
        ("pixel packets per clock", f"{n_packets / clocks:.3f}"),
    ]
    for e in range(eus):
        rows.append((f"EU {e}: allocations, busy share",
                     f"{run['per_eu'][e]}, {run['busy'][e] / clocks:.0%}"))
    rows.append(("frame time at Fmax", f"{clocks / fmax[0]:.1f} us at {fmax[0]:.2f} MHz "
                 f"(routed, {fmax[1]})" if fmax
                 else "Fmax not measured here (make synth or make bitstream)"))
    ideal = [("clear the framebuffer", width * height // 4),
             ("rasterizer: one block a clock", blocks),
             ("spreader: one allocation a clock", 3 * len(verts) + n_packets),
             ("framebuffer: four rows a packet", 4 * n_packets)]
    print()
    _table("summary", rows)
    _table("ideal clocks per block (the frame took %d)" % clocks,
           [(k, str(v)) for k, v in ideal])
    print(f"\nwrote {', '.join(str((OUT / n).relative_to(ROOT)) for n in ('frame.png', 'golden.png', 'diff.png'))}")
    print(f"difference from the golden frame: {int(diff.sum())} pixels; error flag "
          f"{run['error']}; wall time {time.time() - started:.0f} s")
    return 0 if not diff.any() and not run["error"] else 1


def _table(title, rows):
    w = max(len(k) for k, _ in rows)
    print(f"{title}\n" + "-" * (w + 24))
    for k, v in rows:
        print(f"{k:<{w}}  {v}")


def _fmax():
    """The lowest routed Fmax of the front end that ``make synth`` (``frontend.frontend``
    at the board parameters) or ``make bitstream`` (a board top) recorded, and which
    build it is; ``None`` when neither has run here. Those builds are smaller than the
    demo's default (2 EUs, 64x64), so this is the design's clock, not this size's."""
    from tb.results import RESULTS
    from tb.synth import FMAX_METRIC
    try:
        recs = json.loads(RESULTS.read_text())
    except (OSError, ValueError):
        return None
    routed = [(r["value"], r["params"].get("board", "frontend.frontend")) for r in recs
              if r.get("block") == "frontend" and r.get("metric") == FMAX_METRIC
              and isinstance(r.get("value"), (int, float))]
    return min(routed) if routed else None


# ---------------------------------------------------------------- the cocotb side

try:
    import cocotb
except ImportError:          # the picture code above needs no simulator
    cocotb = None

if cocotb is not None:
    from cocotb.triggers import FallingEdge, ReadOnly

    @cocotb.test()
    async def demo_frame(dut):
        """Send the frame with no gaps, take the log at full speed, read the frame."""
        from tb.harness import StreamDriver, StreamMonitor, params, start
        job = json.loads(os.environ[JOB_ENV])
        progress = Path(os.environ[PROGRESS_ENV])
        p = params()
        n = p["n_eus"]
        rng = await start(dut, idle=("fb_addr",))
        driver = StreamDriver(dut, "i", rng, gap=0.0)
        log = StreamMonitor(dut, "log", rng, stall=0.0)
        StreamMonitor(dut, "err", rng, stall=0.0)
        driver.send(job["words"])
        busy = [0] * n
        seen_busy, t, drawn = False, 0, 0
        while True:
            await ReadOnly()
            for e in range(n):
                # free_records is the status word's low field
                st = int(getattr(dut, f"status_tap__{e}").value)
                if st & ((1 << p["records"].bit_length()) - 1) < p["records"]:
                    busy[e] += 1
            b = int(dut.busy.value)
            seen_busy |= bool(b)
            if seen_busy and driver.idle and not b and int(dut.done.value):
                break
            await FallingEdge(dut.clk)
            t += 1
            if t % 256 == 0:
                drawn = sum(1 for w in log.items if (w >> 2) & 3 == 2 and w & 3 == 0)
                progress.write_text(str(drawn))
            assert t < 2_000_000, "the frame did not finish"
        await FallingEdge(dut.clk)
        words = []
        n_words = p["width"] * p["height"] // 4
        for a in range(n_words + 1):
            if a < n_words:
                dut.fb_addr.value = a
            await ReadOnly()
            if a:
                words.append(int(dut.fb_data.value))
            await FallingEdge(dut.clk)
        per_eu = [0] * n
        for w in log.items:
            kind, etype, eu = w & 3, (w >> 2) & 3, (w >> 20) & 15
            if kind == 0:
                per_eu[eu] += 1
        drawn = sum(1 for w in log.items if (w >> 2) & 3 == 2 and w & 3 == 0)
        progress.write_text(str(drawn))
        Path(job["out"]).write_text(json.dumps({
            "fb": words, "clocks": int(dut.clocks.value), "busy": busy, "per_eu": per_eu,
            "error": int(dut.error.value)}))


if __name__ == "__main__":
    sys.exit(main())
