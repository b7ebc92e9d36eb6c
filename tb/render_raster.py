"""``make render``: a built-in scene through ``raster.pipeline`` on Verilator, as pictures.

Usage::

    python -m tb.render_raster [--scene mesh|random|slivers|fan|lines] [--msaa 1|2|4|8|16]
                               [--size WxH] [--count N] [--seed N]

(``make render SCENE=... MSAA=... SIZE=...``; defaults mesh, 4, 256x256). The pipeline is
built for the one MSAA mode asked for, 12.8-style coordinates with ``int_bits`` just
large enough for the frame, and fed the scene with no input gaps and no back-pressure.
Writes into ``build/render/``:

* ``<scene>-<msaa>x.png`` -- the RTL's packets painted in input order, each primitive in
  its own colour, samples resolved to the pixel as their mean (coverage fraction);
* ``<scene>-<msaa>x-golden.png`` -- the same from ``golden.raster.coverage_ids``;
* ``<scene>-<msaa>x-diff.png`` -- white where the two differ in any sample (must be
  black: the script fails otherwise);

and prints primitives, blocks, clocks, samples per clock. The simulator's build output
goes to ``build/render/<scene>-<msaa>x.log``.
"""

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

from tb.harness import ROOT, output_to

OUT = ROOT / "build" / "render"
SCENES = ("mesh", "random", "slivers", "fan", "lines")
COUNTS = {"mesh": 200, "random": 120, "slivers": 40, "fan": 32, "lines": 60}
SUBPIX = 8


# ---------------------------------------------------------------- pictures (plain Python)

def palette(n, seed=7):
    """``(n, 3)`` uint8 distinct-ish bright colours, one per primitive."""
    rng = np.random.default_rng(seed)
    hue = (np.arange(n) * 0.61803398875 + rng.random()) % 1.0
    sat, val = 0.55 + 0.4 * rng.random(n), 0.75 + 0.25 * rng.random(n)
    k = (np.array([5, 3, 1])[None] + hue[:, None] * 6) % 6
    rgb = val[:, None] - val[:, None] * sat[:, None] * np.clip(np.minimum(k, 4 - k), 0, 1)
    return (255 * rgb).astype(np.uint8)


def paint(ids, colours):
    """``(H, W, S)`` primitive ids (-1: none) -> ``(H, W, 3)`` uint8, samples averaged."""
    table = np.concatenate([np.zeros((1, 3), dtype=np.uint8), colours])
    return table[ids + 1].astype(np.float64).mean(axis=2).round().astype(np.uint8)


def ids_from_packets(packets, width, height, samples):
    """``(H, W, S)`` the last primitive (in packet order) covering each sample, -1 none."""
    ids = np.full((height + 16, width + 16, samples), -1, dtype=np.int64)
    for prim, x, y, mask in packets:
        bits = np.array([(mask >> i) & 1 for i in range(16 * samples)], dtype=bool)
        view = ids[y:y + 4, x:x + 4]
        view[bits.reshape(4, 4, samples)] = prim
    return ids[:height, :width]


def scene_vertices(name, width, height, count, seed):
    from golden import scenes as S
    int_bits = max(8, math.ceil(math.log2(max(width, height))))
    return S.scene(name, width, height, count, seed, subpix=SUBPIX, int_bits=int_bits), int_bits


def main(argv=None):
    parser = argparse.ArgumentParser(prog="make render", description=__doc__.split("\n")[0])
    parser.add_argument("--scene", default="mesh", choices=SCENES)
    parser.add_argument("--msaa", default=4, type=int, choices=(1, 2, 4, 8, 16))
    parser.add_argument("--size", default="256x256")
    parser.add_argument("--count", type=int, help="primitives (default per scene)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
        if not (16 <= width <= 4096 and 16 <= height <= 4096):
            raise ValueError
    except ValueError:
        parser.error(f"SIZE must be WxH with sides from 16 to 4096 pixels, not {args.size!r}")
    count = args.count or COUNTS[args.scene]
    return render(args.scene, args.msaa, width, height, count, args.seed)


def render(scene, samples, width, height, count, seed):
    from PIL import Image
    from golden import raster as R
    from tb.harness import run_cocotb

    started = time.time()
    OUT.mkdir(parents=True, exist_ok=True)
    stem = f"{scene}-{samples}x"
    verts, int_bits = scene_vertices(scene, width, height, count, seed)
    result = OUT / f"{stem}.json"
    result.unlink(missing_ok=True)
    params = {"edges": verts.shape[1], "modes": (samples,), "subpix": SUBPIX,
              "int_bits": int_bits, "tag_bits": 16}
    env = {"RENDER_SCENE": json.dumps({"scene": scene, "width": width, "height": height,
                                       "count": count, "seed": seed, "samples": samples,
                                       "out": str(result)})}
    log = OUT / f"{stem}.log"
    print(f"render {scene} {width}x{height} {samples}x: building and running raster.pipeline "
          f"{params} on Verilator (log {log.relative_to(ROOT)}) ...", flush=True)
    with output_to(log):
        run_cocotb("raster.pipeline", "tb.render_raster", "verilator", params,
                   testcase="render_scene", folder=ROOT / "sim_build" / "render" / stem,
                   extra_env=env, verilator_make={"OPT_FAST": "-O0"})
    run = json.loads(result.read_text())

    packets = [tuple(p) for p in run["packets"]]
    rtl_ids = ids_from_packets(packets, width, height, samples)
    gold_ids = R.coverage_ids(verts, width, height, samples, subpix=SUBPIX, int_bits=int_bits)
    colours = palette(len(verts))
    rtl = paint(rtl_ids, colours)
    gold = paint(gold_ids, colours)
    diff = (rtl_ids != gold_ids).any(axis=2)
    Image.fromarray(rtl).save(OUT / f"{stem}.png")
    Image.fromarray(gold).save(OUT / f"{stem}-golden.png")
    Image.fromarray((diff * 255).astype(np.uint8)).save(OUT / f"{stem}-diff.png")

    clocks = run["clocks"]
    print(f"  primitives {len(verts)} (culled {sum(run['culled'])}), blocks {run['blocks']}, "
          f"packets {len(packets)}, clocks {clocks}")
    print(f"  samples per clock {run['blocks'] * 256 * samples / clocks:.1f} "
          f"(blocks x 256 x {samples} / clocks), covered samples per clock "
          f"{int((rtl_ids >= 0).sum()) / clocks:.1f}, blocks per clock "
          f"{run['blocks'] / clocks:.3f}")
    print(f"  wrote {', '.join(str((OUT / n).relative_to(ROOT)) for n in (f'{stem}.png', f'{stem}-golden.png', f'{stem}-diff.png'))}")
    print(f"  difference from the golden model: {int(diff.sum())} pixels "
          f"({time.time() - started:.0f} s)")
    return 0 if not diff.any() else 1


# ---------------------------------------------------------------- the cocotb side

try:
    import cocotb
except ImportError:          # the picture code above needs no simulator
    cocotb = None

if cocotb is not None:
    from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

    @cocotb.test()
    async def render_scene(dut):
        """Feed the scene with no gaps and no back-pressure; record packets and clocks."""
        from golden import raster as R
        from tb.harness import StreamDriver, StreamMonitor, start
        from tb.test_raster_pipeline import Fmt

        job = json.loads(os.environ["RENDER_SCENE"])
        rng = await start(dut)
        fmt = Fmt()
        width, height, samples = job["width"], job["height"], job["samples"]
        verts, _ = scene_vertices(job["scene"], width, height, job["count"], job["seed"])
        driver = StreamDriver(dut, "i", rng, gap=0.0)
        monitor = StreamMonitor(dut, "o", rng, stall=0.0)
        blocks = _BlockCounter(dut)
        await FallingEdge(dut.clk)
        driver.send(fmt.primitive(v, p, samples, (0, 0, width, height))
                    for p, v in enumerate(verts))
        expected = len(R.pixel_packets(verts, fmt.size, fmt.size, samples,
                                       (0, 0, width, height), **fmt.golden()))
        clocks, got, seen = 0, [], 0
        while len(got) < expected or not driver.idle:
            await RisingEdge(dut.clk)
            clocks += 1
            got += fmt.unpack_words(monitor.items[seen:])
            seen = len(monitor.items)
            assert clocks < 100 * expected + 10000, "the pipeline stopped"
        packets = [(p[0], 16 * p[1] + 4 * (p[3] % 4), 16 * p[2] + 4 * (p[3] // 4), p[6])
                   for p in got]
        culled = [(int(dut.culled.value) >> (32 * k)) & 0xffffffff for k in range(3)]
        Path(job["out"]).write_text(json.dumps({"packets": packets, "clocks": clocks,
                                                "blocks": blocks.count, "culled": culled}))

    class _BlockCounter:
        """Counts the blocks the traversal hands to the block rasterizer."""

        def __init__(self, dut):
            self.count = 0
            self.valid = dut.traversal.o__valid
            self.ready = dut.traversal.o__ready
            cocotb.start_soon(self._run(dut))

        async def _run(self, dut):
            while True:
                await RisingEdge(dut.clk)
                await ReadOnly()
                if int(self.valid.value) and int(self.ready.value):
                    self.count += 1


if __name__ == "__main__":
    sys.exit(main())
