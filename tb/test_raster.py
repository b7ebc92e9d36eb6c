"""Testbenches of the 16x16 span-parallel block rasterizer (``hw/raster.py``).

Pytest builds the design at a few parameter sets on both simulators (``test_block``);
inside the simulator the cocotb tests below feed it blocks of the golden model's block
traversal (``golden.raster.block_records``: brute-force masks, span classes from the 25
corners) or raw block inputs (expected values from ``golden.raster.rasterize_block``),
under random input gaps and output back-pressure, and compare every output word. Every
expected value comes from the golden model; none from the RTL.

Builds: ``small`` (4 edges, every mode, 7.4 coordinates: the long tests run here because
it simulates faster) and ``tri`` (3 edges, modes 1 and 4 only, 6.4: the malformed-input
cases that only a restricted build has), and the same two at ``latency=8`` (the lanes'
span choices registered in a stage of their own: ``small_l8``, ``tri_l8``; the
schedule and stall cases expect the build's latency, :func:`documented_latency`) in the
fast regression (``BUILDS``), every kind of case with fewer stimuli
(``RASTER_SCALE=fast``), ``small`` on Verilator, ``tri`` and ``tri_l8`` on Icarus
(``FAST_SIMULATOR``; with ``SIM`` set, on that one; ``small_l8`` only in ``make
regress``); ``make regress`` runs
the same cases at their full counts on both simulators (``test_block_full``), the ``default`` build (4 edges, every MSAA
mode, 12.8 coordinates; ``test_block_default``, a long build), the 1x-only build
(``test_block_1x``) and long random streams (``test_soak``).
"""

import itertools
import math
import os

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly, RisingEdge

from golden import raster as R
from golden import scenes as S
from tb.harness import (StreamDriver, StreamMonitor, params, reset, run_cocotb, simulators,
                        start, wait_until)

DESIGN = "raster.block"
# The design is wide and a test runs few clocks: an unoptimised C++ build is much faster,
# and the testbench touches only the ports (Verilator exports nothing else).
FAST_BUILD = {"verilator_make": {"OPT_FAST": "-O0"}, "ports_only": True}
LATENCY = 7          # clocks from the input handshake to the output word (documented)
#: ``fast``: fewer stimuli per case (the fast regression); anything else: full counts.
SCALE_ENV = "RASTER_SCALE"


def documented_latency():
    """The running build's latency as documented: ``LATENCY``, or its ``latency``
    parameter (8: the lanes' span choices registered in a stage of their own; 9: also
    the ranks and the count)."""
    return params().get("latency", LATENCY)


def documented_lanes():
    """The running build's lanes per edge (its ``lanes`` parameter, default 16), for
    the schedule's expected clocks (``golden.raster.block_clocks``)."""
    return params().get("lanes", 16)

#: The default build (12.8, every mode) is a long build on both simulators: it runs in
#: ``make regress`` (:func:`test_block_default`); the fast builds keep every kind of case.
DEFAULT_TESTS = ["random_blocks", "raw_blocks", "huge_and_quads", "malformed"]
BUILDS = {
    "small": ({"int_bits": 7, "subpix": 4},
              ["random_blocks", "raw_blocks", "mesh_watertight", "scissor_cuts",
               "directed_corners", "sample_point_edges", "huge_and_quads",
               "stall_and_release", "schedule"]),
    "tri": ({"edges": 3, "modes": (1, 4), "int_bits": 6, "subpix": 4, "tag_bits": 8},
            ["random_blocks", "malformed", "schedule"]),
    # latency=8: the lanes' span choices registered in stage 3b (the FPGA's MSAA builds)
    "small_l8": ({"int_bits": 7, "subpix": 4, "latency": 8},
                 ["random_blocks", "raw_blocks", "mesh_watertight", "stall_and_release",
                  "schedule"]),
    "tri_l8": ({"edges": 3, "modes": (1, 4), "int_bits": 6, "subpix": 4, "tag_bits": 8,
                "latency": 8}, ["random_blocks", "malformed", "schedule"]),
    # lanes=8: half the lanes, batches of 8 (span, sample) pairs, 1x batched too
    "tri_l8_lanes8": ({"edges": 3, "modes": (1, 4), "int_bits": 6, "subpix": 4,
                       "tag_bits": 8, "latency": 8, "lanes": 8},
                      ["random_blocks", "raw_blocks", "malformed", "stall_and_release",
                       "schedule"]),
    # latency=9: also the ranks and the count in a stage of their own (stage 2b)
    "tri_l9_lanes8": ({"edges": 3, "modes": (1, 4), "int_bits": 6, "subpix": 4,
                       "tag_bits": 8, "latency": 9, "lanes": 8},
                      ["random_blocks", "raw_blocks", "malformed", "stall_and_release",
                       "schedule"]),
    "small_l9_lanes8": ({"int_bits": 7, "subpix": 4, "latency": 9, "lanes": 8},
                        ["random_blocks", "raw_blocks", "mesh_watertight", "scissor_cuts",
                         "directed_corners", "sample_point_edges", "huge_and_quads",
                         "stall_and_release", "schedule"]),
    "tri_lanes4": ({"edges": 3, "modes": (1, 4), "int_bits": 6, "subpix": 4, "tag_bits": 8,
                    "lanes": 4}, ["random_blocks", "raw_blocks", "malformed", "schedule"]),
    "small8_lanes8": ({"modes": (1, 2, 4, 8), "int_bits": 7, "subpix": 4, "latency": 8,
                       "lanes": 8},
                      ["random_blocks", "raw_blocks", "mesh_watertight", "scissor_cuts",
                       "directed_corners", "sample_point_edges", "huge_and_quads",
                       "stall_and_release", "schedule"]),
    # every mode with fewer lanes than 16x's samples (8x too at 4 lanes): a span's
    # samples in several batches
    "small_lanes8": ({"int_bits": 7, "subpix": 4, "latency": 8, "lanes": 8},
                     ["random_blocks", "raw_blocks", "mesh_watertight", "scissor_cuts",
                      "directed_corners", "sample_point_edges", "huge_and_quads",
                      "stall_and_release", "schedule"]),
    "small_lanes4": ({"int_bits": 7, "subpix": 4, "lanes": 4},
                     ["random_blocks", "raw_blocks", "huge_and_quads", "stall_and_release",
                      "schedule"]),
}


# ---------------------------------------------------------------- pytest entry points

#: The fast regression runs each build on one simulator (the ``small`` build's every-mode
#: design is the longest Icarus compile and simulation of the suite): ``small`` on
#: Verilator, ``tri`` and ``tri_l8`` on Icarus; ``small_l8`` (a second every-mode
#: Verilator build, to keep ``make test`` short) only in ``make regress``.
#: :func:`test_block_full` runs every build on both.
FAST_SIMULATOR = {"small": "verilator", "tri": "icarus", "tri_l8": "icarus",
                  "tri_l8_lanes8": "icarus", "tri_l9_lanes8": "icarus"}


@pytest.mark.parametrize("build, simulator",
                         [(b, s) for b in FAST_SIMULATOR for s in simulators()
                          if s == FAST_SIMULATOR[b] or len(simulators()) == 1])
def test_block(build, simulator):
    """Every kind of case, each with fewer stimuli than in :func:`test_block_full`."""
    build_params, tests = BUILDS[build]
    run_cocotb(DESIGN, "tb.test_raster", simulator, build_params, testcase=tests,
               **FAST_BUILD, extra_env={SCALE_ENV: "fast"})


@pytest.mark.slow
@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("build", list(BUILDS))
def test_block_full(build, simulator):
    """The cases of :func:`test_block` at their full stimulus counts."""
    build_params, tests = BUILDS[build]
    run_cocotb(DESIGN, "tb.test_raster", simulator, build_params, testcase=tests,
               **FAST_BUILD)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"edges": 5}, ValueError, r"edges must be an integer from 3 to 4, not 5"),
    ({"edges": 2}, ValueError, r"edges must be an integer from 3 to 4, not 2"),
    ({"edges": 3.0}, TypeError, r"edges must be an integer from 3 to 4, not 3\.0"),
    ({"modes": (1, 3)}, ValueError, r"modes must hold sample counts from 1, 2, 4, 8, 16, not 3"),
    ({"modes": ()}, ValueError, r"modes must hold 1 to 5 distinct sample counts"),
    ({"modes": (4, 4)}, ValueError, r"modes must hold 1 to 5 distinct sample counts"),
    ({"modes": 4}, TypeError, r"modes must be a sequence of sample counts, not 4"),
    ({"modes": ("4",)}, TypeError, r"modes must hold integers, not '4'"),
    ({"modes": (1, 32)}, ValueError, r"modes must hold sample counts from 1, 2, 4, 8, 16, not 32"),
    ({"subpix": 3}, ValueError, r"subpix must be an integer from 4 to 12, not 3"),
    ({"subpix": 13}, ValueError, r"subpix must be an integer from 4 to 12, not 13"),
    ({"subpix": "8"}, TypeError, r"subpix must be an integer from 4 to 12, not '8'"),
    ({"int_bits": 17}, ValueError, r"int_bits must be an integer from 5 to 16, not 17"),
    ({"int_bits": 4}, ValueError, r"int_bits must be an integer from 5 to 16, not 4"),
    ({"int_bits": 12.0}, TypeError, r"int_bits must be an integer from 5 to 16, not 12\.0"),
    ({"tag_bits": True}, TypeError, r"tag_bits must be an integer from 1 to 64, not True"),
    ({"tag_bits": 0}, ValueError, r"tag_bits must be an integer from 1 to 64, not 0"),
    ({"tag_bits": 65}, ValueError, r"tag_bits must be an integer from 1 to 64, not 65"),
    ({"latency": 6}, ValueError, r"latency must be an integer from 7 to 9, not 6"),
    ({"latency": 8.0}, TypeError, r"latency must be an integer from 7 to 9, not 8\.0"),
    ({"modes": (1,), "latency": 8}, ValueError,
     r"latency must be 7 in a build without an MSAA mode .*, not 8"),
    ({"modes": (1,), "latency": 9}, ValueError,
     r"latency must be 7 in a build without an MSAA mode .*, not 9"),
    ({"latency": 10}, ValueError, r"latency must be an integer from 7 to 9, not 10"),
    ({"lanes": 12}, ValueError, r"lanes must be a power of two from 4 to 16, not 12"),
    ({"lanes": 2}, ValueError, r"lanes must be a power of two from 4 to 16, not 2"),
    ({"lanes": 32}, ValueError, r"lanes must be a power of two from 4 to 16, not 32"),
    ({"lanes": 8.0}, TypeError, r"lanes must be a power of two from 4 to 16, not 8\.0"),
    ({"modes": (1,), "lanes": 8}, ValueError,
     r"lanes must be 16 in a build without an MSAA mode .*, not 8"),
])
def test_parameter_errors(kwargs, error, message):
    from hw.raster import BlockRasterizer
    with pytest.raises(error, match=message):
        BlockRasterizer(**kwargs)


def test_gen_refuses_bad_parameters(capsys):
    from hw.gen import main
    assert main(["raster.block", "-p", "modes=(1, 32)"]) == 2
    assert "modes must hold sample counts from 1, 2, 4, 8, 16, not 32" in capsys.readouterr().err


#: The 1x-only build (the FPGA build of issue 16) has code of its own: no batches, the
#: combined span classes formed a stage later. ``make regress`` runs it.
ONE_X = ({"modes": (1,), "int_bits": 7, "subpix": 4},
         ["random_blocks", "raw_blocks", "mesh_watertight", "scissor_cuts", "directed_corners",
          "sample_point_edges", "huge_and_quads", "malformed", "stall_and_release", "schedule"])


@pytest.mark.slow
@pytest.mark.parametrize("simulator", simulators())
def test_block_1x(simulator):
    """Every kind of case on the 1x-only build."""
    run_cocotb(DESIGN, "tb.test_raster", simulator, ONE_X[0], testcase=ONE_X[1],
               **FAST_BUILD)


@pytest.mark.slow
@pytest.mark.parametrize("simulator", simulators())
def test_block_default(simulator):
    """The default build (4 edges, every mode, 12.8 coordinates)."""
    run_cocotb(DESIGN, "tb.test_raster", simulator, {}, testcase=DEFAULT_TESTS,
               **FAST_BUILD)


@pytest.mark.slow
@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("build", ["default", "small"])
def test_soak(build, simulator):
    build_params = {} if build == "default" else BUILDS[build][0]
    run_cocotb(DESIGN, "tb.test_raster", simulator, build_params,
               testcase=["soak_scenes", "soak_raw"], **FAST_BUILD)


# ---------------------------------------------------------------- the design's formats

class Fmt:
    """The running build's parameters and port layouts (from ``hw.raster`` itself)."""

    def __init__(self):
        from hw.raster import DESIGNS
        self.rtl = DESIGNS[DESIGN.split(".")[1]](**params())
        self.edges = self.rtl.edges
        self.modes = self.rtl.modes
        self.subpix = self.rtl.subpix
        self.int_bits = self.rtl.int_bits
        self.size = 1 << self.int_bits            # largest frame side, pixels
        self.tag_mask = (1 << self.rtl.tag_bits) - 1
        self.in_layout = self.rtl.in_layout()
        self.out_layout = self.rtl.out_layout()

    def golden(self, **kwargs):
        return dict(subpix=self.subpix, int_bits=self.int_bits, **kwargs)

    def pack_in(self, rec, tag, *, msaa=None, n_edges=None, rng=None):
        """Input word of a :class:`golden.raster.BlockRecord`. On 4-edge builds a
        triangle's unused edge 3 holds random values when ``rng`` is given (the design
        must ignore them), else zeros."""
        k = len(rec.A)
        edges = [{"lo16": int(rec.lo16[e]), "A": int(rec.A[e]), "B": int(rec.B[e]),
                  "bias": int(rec.bias[e])} for e in range(k)]
        edges += [self._junk_edge(rng) for _ in range(self.edges - k)]
        x0, y0, x1, y1 = rec.bbox
        word = self.in_layout.const({
            "bx": rec.bx, "by": rec.by, "bbox": {"x0": x0, "y0": y0, "x1": x1, "y1": y1},
            "msaa": int(math.log2(rec.samples)) if msaa is None else msaa,
            "n_edges": k if n_edges is None else n_edges, "tag": tag & self.tag_mask,
            "edge": edges[:self.edges]})
        return word.as_value().value

    def _junk_edge(self, rng):
        if rng is None:
            return {"lo16": 0, "A": 0, "B": 0, "bias": 0}
        signed = lambda bits: int(rng.integers(-(1 << (bits - 1)), 1 << (bits - 1)))
        return {"lo16": signed(self.rtl.lo16_bits), "A": signed(self.rtl.coef_bits),
                "B": signed(self.rtl.coef_bits), "bias": int(rng.integers(0, 2))}

    def expect(self, rec, tag):
        """Output word the golden record asks for (unused edges report zeros)."""
        p = rec.pack()
        pad = [0] * (self.edges - len(rec.A))
        word = self.out_layout.const({
            "bx": rec.bx, "by": rec.by, "tag": tag & self.tag_mask,
            "msaa": int(math.log2(rec.samples)), "n_edges": len(rec.A),
            "edge_full": p["edge_full"] + pad, "edge_partial": p["edge_partial"] + pad,
            "span_full": p["span_full"], "span_partial": p["span_partial"],
            "mask": p["mask"]})
        return word.as_value().value

    def describe(self, word):
        """A short text of an output word (for failure messages)."""
        v = self.out_layout.from_bits(word)
        mask = v.mask
        return (f"block ({v.bx},{v.by}) tag {v.tag} msaa {v.msaa} edges {v.n_edges} "
                f"span full {v.span_full:04x} partial {v.span_partial:04x} "
                f"edge full {[f'{int(v.edge_full[e]):04x}' for e in range(self.edges)]} "
                f"partial {[f'{int(v.edge_partial[e]):04x}' for e in range(self.edges)]} "
                f"mask {bin(mask).count('1')} bits set, hash {hash(mask) & 0xffff:04x}")

    def mask_of(self, word):
        """``(16, 16, S)`` [y, x, s] bool mask of an output word, and S."""
        v = self.out_layout.from_bits(word)
        n = 1 << v.msaa
        bits = np.array([(v.mask >> i) & 1 for i in range(256 * n)], dtype=bool)
        m = bits.reshape(4, 4, 4, 4, n).transpose(0, 2, 1, 3, 4).reshape(16, 16, n)
        return v.bx, v.by, m


def raw_record(fmt, rng, samples):
    """A random raw block input and its golden result (``rasterize_block``): A and B
    anywhere in range (extremes included), lo16 near the block or far away, any box."""
    w = fmt.int_bits + fmt.subpix
    k = fmt.edges if fmt.edges == 3 or rng.random() < 0.5 else 3
    big = lambda: int(rng.choice([-(1 << w), (1 << w) - 1, *rng.integers(-(1 << w), 1 << w, 2)]))
    small = lambda: int(rng.integers(-64, 65))
    A = np.array([big() if rng.random() < 0.5 else small() for _ in range(k)])
    B = np.array([big() if rng.random() < 0.5 else small() for _ in range(k)])
    reach = (np.abs(A) + np.abs(B)) << (fmt.subpix + 4)
    top = 1 << (2 * w + 1)                        # lo16 is a (2w+2)-bit signed value
    sat = 1 << (w + fmt.subpix + 5)               # where the RTL saturates lo16
    far = [-top, top - 1, int(rng.integers(-top, top)),
           *(sign * sat + d for sign in (-1, 1) for d in (-2, -1, 0, 1, 2))]
    lo16 = np.array([int(rng.integers(-r - 2, r + 3)) if rng.random() < 0.8 else
                     int(rng.choice(far)) for r in reach])
    bias = rng.integers(0, 2, k)
    nb = fmt.size // 16
    bx, by = (int(v) for v in rng.integers(0, nb, 2))
    box = []
    for origin in (16 * bx, 16 * by):
        a, b = sorted(int(v) for v in rng.integers(origin - 20, origin + 36, 2))
        if rng.random() < 0.1:
            a, b = b, a - 1                       # empty box
        box.append((min(max(a, 0), fmt.size - 1), min(max(b, 0), fmt.size - 1)))
    bbox = (box[0][0], box[1][0], box[0][1], box[1][1])
    edge, comb, mask = R.rasterize_block(A, B, lo16, bias, bbox, bx, by, samples, fmt.subpix)
    return R.BlockRecord(prim=0, bx=bx, by=by, samples=samples, A=A, B=B, lo16=lo16,
                         bias=bias, bbox=bbox, corners=None, edge_class=edge,
                         span_class=comb, mask=mask)


def scene_records(fmt, rng, vertices, width, height, modes, **kwargs):
    """Golden block records of ``vertices`` in each mode of ``modes``, interleaved at
    random (every block carries its own mode)."""
    per_mode = [R.block_records(vertices, width, height, n, **fmt.golden(**kwargs))
                for n in modes]
    records = [r for recs in per_mode for r in recs]
    order = rng.permutation(len(records))
    return [records[i] for i in order]


# ---------------------------------------------------------------- running blocks

class Bench:
    """Driver and monitor on the rasterizer with the running build's formats."""

    def __init__(self, dut, rng, *, gap=0.3, stall=0.3):
        self.dut = dut
        self.fmt = Fmt()
        self.driver = StreamDriver(dut, "i", rng, gap=gap)
        self.monitor = StreamMonitor(dut, "o", rng, stall=stall)
        self.expected = []
        self.tag = 0
        self.rng = rng

    def send(self, records, **kwargs):
        """Queue golden records (random junk in unused edges); returns their expected
        output words."""
        words, want = [], []
        for rec in records:
            words.append(self.fmt.pack_in(rec, self.tag, rng=self.rng, **kwargs))
            want.append(self.fmt.expect(rec, self.tag))
            self.tag += 1
        self.driver.send(words)
        self.expected += want
        return want

    def send_raw(self, words):
        """Queue input words that produce no output (malformed ones)."""
        self.driver.send(words)

    async def finish(self, *, timeout=None):
        total = len(self.expected)
        timeout = timeout or 200 + 40 * total
        await wait_until(self.dut, lambda: len(self.monitor.items) >= total,
                         timeout=timeout, what=f"{total} output blocks")
        await ClockCycles(self.dut.clk, 12)            # nothing extra may follow
        self.check()

    def check(self):
        got = self.monitor.items
        for index, (want, have) in enumerate(zip(self.expected, got)):
            assert want == have, (f"output {index}:\n got      {self.fmt.describe(have)}\n"
                                  f" expected {self.fmt.describe(want)}")
        assert len(got) == len(self.expected), (
            f"{len(got)} output blocks, expected {len(self.expected)}")

    def stop(self):
        self.driver.stop()
        self.monitor.stop()


def frame(fmt, size=128):
    return min(size, fmt.size)


# ---------------------------------------------------------------- cocotb tests

@cocotb.test()
async def random_blocks(dut):
    """Random triangles (both windings, a few degenerate), slivers and wide-line quads
    in every supported mode, interleaved block by block, against the golden records."""
    rng = await start(dut)
    bench = Bench(dut, rng, gap=0.3, stall=0.3)
    fmt = bench.fmt
    side = frame(fmt, 96)
    seed = int(rng.integers(1 << 30))
    tris = np.concatenate([
        S.random_triangles(side, side, 10, seed, max_size=side / 2, **_fmt(fmt)),
        S.slivers(side, side, 3, seed, **_fmt(fmt))])
    if fmt.size > 256:            # far from the origin: big lo16 and C values
        tris = tris + ((fmt.size - 2 * side) << fmt.subpix)
        side = fmt.size
    records = scene_records(fmt, rng, tris, side, side, fmt.modes)
    records = _thin(rng, records, 60 if fmt.size > 256 else _scale(160, 48))
    if fmt.edges == 4:
        quads = S.wide_lines(frame(fmt, 96), frame(fmt, 96), 4, seed, **_fmt(fmt))
        records += _thin(rng, scene_records(fmt, rng, quads, frame(fmt, 96), frame(fmt, 96),
                                            fmt.modes), _scale(40, 12))
    dut._log.info("%d blocks", len(records))
    bench.send(records)
    await bench.finish()
    assert not int(dut.error.value), "error flag set by well-formed blocks"


@cocotb.test()
async def raw_blocks(dut):
    """Raw block inputs -- A and B at the ends of their range, lo16 far out, boxes cutting
    through spans or empty -- against ``rasterize_block``, in every mode."""
    rng = await start(dut)
    bench = Bench(dut, rng, gap=0.2, stall=0.4)
    fmt = bench.fmt
    count = (12 if fmt.size > 256 else _scale(24, 8)) * len(fmt.modes)
    records = [raw_record(fmt, rng, int(rng.choice(fmt.modes))) for _ in range(count)]
    bench.send(records)
    await bench.finish()


@cocotb.test()
async def mesh_watertight(dut):
    """A mesh covering the frame: the RTL's masks, added up over the frame, cover every
    sample exactly once (no holes, no overlaps) and equal the golden records."""
    rng = await start(dut)
    bench = Bench(dut, rng, gap=0.2, stall=0.3)
    fmt = bench.fmt
    side, triangles = _scale((48, 40), (32, 16))
    for n in fmt.modes:
        mesh = S.mesh(side, side, triangles, int(rng.integers(1 << 30)), **_fmt(fmt))
        bench.send(R.block_records(mesh, side, side, n, **fmt.golden()))
    await bench.finish()
    counts = {}
    for word in bench.monitor.items:
        bx, by, m = fmt.mask_of(word)
        n = m.shape[-1]
        count = counts.setdefault(n, np.zeros((side + 16, side + 16, n), dtype=np.int32))
        count[16 * by:16 * by + 16, 16 * bx:16 * bx + 16] += m
    for n, count in counts.items():
        holes = int((count[:side, :side] == 0).sum())
        overlaps = int((count[:side, :side] > 1).sum())
        assert holes == 0 and overlaps == 0, f"{n}x: {holes} holes, {overlaps} overlaps"
        assert not count[side:].any() and not count[:, side:].any(), "coverage off the frame"


@cocotb.test()
async def scissor_cuts(dut):
    """Scissor rectangles not aligned to spans cut FULL and PARTIAL spans at pixel level."""
    rng = await start(dut)
    bench = Bench(dut, rng, gap=0.3, stall=0.3)
    fmt = bench.fmt
    side = 64
    tris = S.random_triangles(side, side, 6, int(rng.integers(1 << 30)), min_size=8,
                              max_size=60, **_fmt(fmt))
    top = (side << fmt.subpix) - 1
    big = np.array([[[0, 0], [top, 0], [0, top]]])
    for n in fmt.modes:
        left, top = (int(v) for v in rng.integers(1, 15, 2))
        scissor = (left, top, int(rng.integers(left + 1, side)), int(rng.integers(top + 1, side)))
        bench.send(R.block_records(np.concatenate([tris, big]), side, side, n,
                                   scissor=scissor, **fmt.golden()))
    await bench.finish()


@cocotb.test()
async def directed_corners(dut):
    """Hand-made cases: edges through sample points, pixel centres and block corners,
    shared edges, a triangle filling a block exactly, a huge triangle, zero-length
    edges, a zero-area edge set, an empty box, and FULL/EMPTY-only blocks."""
    rng = await start(dut)
    bench = Bench(dut, rng, gap=0.2, stall=0.5)
    fmt = bench.fmt
    u = 1 << fmt.subpix
    side = 64
    half = u // 2
    tris = [
        [(16 * u, 16 * u), (32 * u, 16 * u), (16 * u, 32 * u)],        # block corners
        [(32 * u, 16 * u), (32 * u, 32 * u), (16 * u, 32 * u)],        # shares the diagonal
        [(4 * u + half, half), (40 * u + half, 8 * u + half), (4 * u + half, 30 * u + half)],
        [(0, 0), (side * u - 1, 0), (0, side * u - 1)],                 # huge (for the frame)
        [(8 * u, 8 * u), (8 * u, 24 * u), (24 * u, 8 * u)],             # other winding
        [(20 * u, 3 * u), (20 * u + 1, 60 * u), (20 * u + 2, 3 * u)],   # sliver on a column
    ]
    # Sample points of every mode on an edge: a 45-degree edge through pixel centres
    # and through the (+-2, +-6)/16 style offsets (fast: each in its own mode only).
    through = {}
    for n in fmt.modes:
        ox, oy = R.sample_offsets(n)[0] << (fmt.subpix - 4)
        through[n] = [(10 * u + half + ox, 10 * u + half + oy),
                      (40 * u + half + ox, 40 * u + half + oy),
                      (10 * u + half + ox, 40 * u + half + oy)]
    for n in fmt.modes:
        own = _scale(list(through.values()), [through[n]])
        bench.send(R.block_records(np.array(tris + own, dtype=np.int64), side, side, n,
                                   **fmt.golden()))
    if fmt.edges == 4:
        quads = np.array([
            [(2 * u, 2 * u), (30 * u, 2 * u), (30 * u, 30 * u), (2 * u, 30 * u)],
            [(5 * u, 5 * u), (5 * u, 5 * u), (40 * u, 9 * u), (7 * u, 44 * u)],  # repeated
            [(16 * u, 0), (48 * u, 0), (48 * u, 64 * u - 1), (16 * u, 64 * u - 1)],
        ], dtype=np.int64)
        for n in fmt.modes:
            bench.send(R.block_records(quads, side, side, n, **fmt.golden()))
    bench.send(_degenerate(fmt))
    await bench.finish()


def _degenerate(fmt):
    """Raw blocks the setup would cull: zero-area edge sets, all-zero edges, empty box;
    every case with both biases and three boxes in every mode (fast: each combination
    in one mode, the modes taken in turn)."""
    u = 1 << fmt.subpix
    cases = [
        ([u, -u, 0], [-u, u, 0], [0, 0, 0]),            # two opposite edges: a line
        ([0, 0, 0], [0, 0, 0], [0, 0, 0]),              # zero-length edges: everything
        ([0, 0, 0], [0, 0, 0], [-1, 0, 0]),             # one edge negative everywhere
    ]
    combos = list(itertools.product(cases, ([0] * 3, [1] * 3),
                                    ((0, 0, 15, 15), (3, 2, 12, 13), (9, 0, 8, 15))))
    out = []
    for i, n in enumerate(fmt.modes):
        for (A, B, lo16), bias, bbox in _scale(combos, combos[i::len(fmt.modes)]):
            A_, B_, lo_, bi_ = (np.array(v) for v in (A, B, lo16, bias))
            edge, comb, mask = R.rasterize_block(A_, B_, lo_, bi_, bbox, 0, 0, n, fmt.subpix)
            out.append(R.BlockRecord(prim=0, bx=0, by=0, samples=n, A=A_, B=B_, lo16=lo_,
                                     bias=bi_, bbox=bbox, corners=None, edge_class=edge,
                                     span_class=comb, mask=mask))
    return out


@cocotb.test()
async def sample_point_edges(dut):
    """Edges exactly through sample points, in every mode and for several samples of
    each pattern: a square whose sides run along a row and a column of sample ``s``
    (horizontal and vertical edges), split along either diagonal (45-degree edges
    through sample ``s`` of every pixel on them), and a slope-2 edge, each triangle in a
    random winding; on 4-edge builds the square itself as a quad in both windings. Then
    random triangles with every vertex on the 4-pixel span-corner lattice (edges
    through span and block corners). All against the golden records."""
    rng = await start(dut)
    bench = Bench(dut, rng, gap=0.2, stall=0.4)
    fmt = bench.fmt
    side = 64
    for n in fmt.modes:
        picks = sorted({0, *(int(v) for v in rng.choice(n, min(n, 2), replace=False))})
        prims = [_sample_square(fmt, rng, n, s, side) for s in picks]
        tris = np.concatenate([p[0] for p in prims])
        bench.send(_thin(rng, R.block_records(tris, side, side, n, **fmt.golden()),
                         _scale(40, 16)))
        if fmt.edges == 4:
            quads = np.concatenate([p[1] for p in prims])
            bench.send(_thin(rng, R.block_records(quads, side, side, n, **fmt.golden()),
                             _scale(16, 8)))
    lattice = rng.integers(0, side // 4 + 1, (12, 3, 2)) * (4 << fmt.subpix)
    lattice = np.minimum(lattice, (side << fmt.subpix) - 1)
    bench.send(_thin(rng, scene_records(fmt, rng, lattice, side, side, fmt.modes),
                     _scale(80, 24)))
    await bench.finish()


def _sample_square(fmt, rng, n, s, side):
    """Triangles and quads whose edges pass exactly through sample ``s`` (mode ``n``)
    of pixels all along them: ``(triangles (6, 3, 2), quads (2, 4, 2))``, triangles in
    random windings, the quad in both."""
    u = 1 << fmt.subpix
    ox, oy = R.sample_offsets(n)[s] << (fmt.subpix - 4)
    length = int(rng.integers(4, 20))
    x, y = (int(v) * u + u // 2 + o for v, o in zip(rng.integers(1, side - 2 * length - 2, 2),
                                                     (ox, oy)))
    d = length * u
    a, b, c, e = (x, y), (x + d, y), (x + d, y + d), (x, y + d)
    tris = [[a, b, c], [a, c, e], [a, b, e], [b, c, e],
            [a, (x + d, y + 2 * d), (x, y + 2 * d)],                  # slope-2 edge
            [a, (x + d, y + 2 * d), (x + d, y)]]
    tris = [t[::-1] if rng.random() < 0.5 else t for t in tris]
    quads = [[a, b, c, e], [e, c, b, a]]
    return np.array(tris, dtype=np.int64), np.array(quads, dtype=np.int64)


@cocotb.test()
async def huge_and_quads(dut):
    """Huge triangles -- vertices at the ends of the coordinate range, both windings --
    seen through scissor windows where one of their edges crosses (blocks far from the
    vertices: large lo16, A and B), and random convex quads from slivers to the frame's
    size in both windings (4-edge builds), in every mode, against the golden records."""
    rng = await start(dut)
    bench = Bench(dut, rng, gap=0.3, stall=0.3)
    fmt = bench.fmt
    top = (fmt.size << fmt.subpix) - 1
    count = 8 if fmt.size > 256 else _scale(16, 6)
    for _ in range(count):
        ends = rng.choice([0, top, int(rng.integers(0, top))], (3, 2))
        ends[int(rng.integers(3)), int(rng.integers(2))] = int(rng.choice([0, top]))
        tri = ends[None] if rng.random() < 0.5 else ends[None, ::-1]
        scissor = _window(fmt, rng, tri[0], 32)
        n = int(rng.choice(fmt.modes))
        bench.send(R.block_records(tri, fmt.size, fmt.size, n, scissor=scissor,
                                   **fmt.golden()))
    if fmt.edges == 4:
        side = frame(fmt, 64)
        quads = _convex_quads(fmt, rng, side, _scale(24, 12))
        bench.send(_thin(rng, scene_records(fmt, rng, quads, side, side, fmt.modes),
                         _scale(120, 32)))
    dut._log.info("%d blocks", len(bench.expected))
    await bench.finish()


def _window(fmt, rng, tri, size):
    """A ``size``-pixel scissor around a random point of a random edge of ``tri``."""
    e = int(rng.integers(3))
    t = rng.uniform(0, 1)
    point = (tri[e] + t * (tri[(e + 1) % 3] - tri[e])) / (1 << fmt.subpix)
    lo = [int(np.clip(c - size // 2, 0, fmt.size - size)) for c in point]
    return (lo[0], lo[1], lo[0] + size, lo[1] + size)


def _convex_quads(fmt, rng, side, count):
    """Random convex quads: 4 points at increasing angles on a rotated ellipse (axes
    from 1/8 pixel to the frame's size, so slivers too), half of them reversed."""
    out = []
    for _ in range(count):
        centre = rng.uniform(0, side, 2)
        axes = np.exp(rng.uniform(np.log(0.125), np.log(side), 2))
        angles = np.sort(rng.uniform(0, 2 * np.pi, 4))
        turn = rng.uniform(0, np.pi)
        pts = np.stack([axes[0] * np.cos(angles), axes[1] * np.sin(angles)], -1)
        rot = np.array([[np.cos(turn), -np.sin(turn)], [np.sin(turn), np.cos(turn)]])
        quad = centre + pts @ rot.T
        out.append(quad[::-1] if rng.random() < 0.5 else quad)
    coords = np.clip(np.array(out), 0, ((fmt.size << fmt.subpix) - 1) / (1 << fmt.subpix))
    return R.snap(coords, fmt.subpix, fmt.int_bits)


@cocotb.test()
async def malformed(dut):
    """Unsupported MSAA codes and edge counts are dropped with the sticky error flag:
    a burst of them into a stalled output is taken at once and nothing comes out; mixed
    with good blocks, the good ones come out intact and in order; reset clears the flag."""
    rng = await start(dut)
    bench = Bench(dut, rng, gap=0.2, stall=0.4)
    fmt = bench.fmt
    side = frame(fmt, 48)
    tris = S.random_triangles(side, side, 8, int(rng.integers(1 << 30)), max_size=30,
                              **_fmt(fmt))
    good = R.block_records(tris, side, side, fmt.modes[0], **fmt.golden())[:_scale(24, 12)]
    bad_msaa = [c for c in range(8) if c not in [int(math.log2(n)) for n in fmt.modes]]
    bad_edges = [c for c in range(8) if c not in ((3, 4) if fmt.edges == 4 else (3,))]
    await ClockCycles(dut.clk, 2)
    assert not int(dut.error.value), "error flag set after reset"
    # Only malformed blocks, back to back, into a stalled output: each is taken and
    # dropped (no hang, no pipeline slot), none comes out.
    bench.monitor.stall = 1.0
    burst = [fmt.pack_in(good[0], 0xED, msaa=int(rng.choice(bad_msaa))) if k % 2 else
             fmt.pack_in(good[0], 0xED, n_edges=int(rng.choice(bad_edges))) for k in range(12)]
    bench.send_raw(burst)
    await wait_until(dut, lambda: bench.driver.accepted >= len(burst), timeout=4 * len(burst)
                     + 20, what="the malformed burst to be taken")
    assert int(dut.error.value) == 1, "error flag not set by malformed blocks"
    await ClockCycles(dut.clk, 2 * documented_latency())
    await ReadOnly()
    assert not int(dut.o__valid.value) and not bench.monitor.items, \
        "a malformed block came out"
    await FallingEdge(dut.clk)
    bench.monitor.stall = 0.4
    for i, rec in enumerate(good):
        bench.send([rec])
        if i % 3 == 1:
            msaa = int(rng.choice(bad_msaa))
            bench.send_raw([fmt.pack_in(rec, 0xEE, msaa=msaa)])
        if i % 3 == 2:
            bench.send_raw([fmt.pack_in(rec, 0xEF, n_edges=int(rng.choice(bad_edges)))])
    await bench.finish()
    await ClockCycles(dut.clk, 20)
    assert int(dut.error.value) == 1, "error flag not sticky"
    bench.stop()
    await reset(dut)
    await ClockCycles(dut.clk, 2)
    assert int(dut.error.value) == 0, "reset did not clear the error flag"
    # After reset the block works as before.
    bench = Bench(dut, rng, gap=0.2, stall=0.2)
    bench.send(good[:6])
    await bench.finish()


@cocotb.test()
async def stall_and_release(dut):
    """A long full stall on the output: the input stops being ready, nothing is lost or
    duplicated, and the stream resumes at full rate."""
    rng = await start(dut)
    bench = Bench(dut, rng, gap=0.0, stall=1.0)
    fmt = bench.fmt
    side = frame(fmt, 64)
    # More blocks than a stalled pipeline can take (latency + 3), whatever the seed: a
    # scene of 10 random triangles has as few as 8 blocks at some seeds.
    records, latency = [], documented_latency()
    while len(records) < latency + 8:
        tris = S.random_triangles(side, side, 10, int(rng.integers(1 << 30)), max_size=40,
                                  **_fmt(fmt))
        records += scene_records(fmt, rng, tris, side, side, fmt.modes)
    bench.send(records[:40])
    await ClockCycles(dut.clk, 60)
    await ReadOnly()
    assert not int(dut.i__ready.value), "input still ready after a 60-clock output stall"
    held = bench.driver.accepted
    assert 2 <= held <= latency + 3, f"{held} blocks accepted into a stalled pipeline"
    await FallingEdge(dut.clk)
    bench.monitor.stall = 0.8
    await ClockCycles(dut.clk, 40)
    bench.monitor.stall = 0.0
    await bench.finish()


@cocotb.test()
async def schedule(dut):
    """No gaps, no stalls: the output word is valid :func:`documented_latency` clocks
    after the input handshake, and a block with p partial spans at S samples takes
    max(1, ceil(p*S/lanes)) clocks (``golden.raster.block_clocks``: at 16 lanes
    max(1, ceil(16*p*S/256)), the spec's target; p from the golden span classes)."""
    rng = await start(dut)
    fmt = Fmt()
    expected = documented_latency()
    side = frame(fmt, 64)
    tris = S.random_triangles(side, side, 12, int(rng.integers(1 << 30)), max_size=40,
                              **_fmt(fmt))
    log = Handshakes(dut)
    for n in fmt.modes:
        bench = Bench(dut, rng, gap=0.0, stall=0.0)
        records = R.block_records(tris, side, side, n, **fmt.golden())[:_scale(30, 14)]
        costs = [R.block_clocks(int((r.span_class == R.PARTIAL).sum()), n,
                                documented_lanes()) for r in records]
        log.clear()
        bench.send(records[:1])
        await bench.finish()
        latency = log.outputs[0] - log.inputs[0] - costs[0]
        assert latency == expected, f"{n}x: latency {latency} clocks, expected {expected}"
        log.clear()
        bench.send(records[1:])
        await bench.finish()
        clocks = log.outputs[-1] - log.inputs[0] - expected
        dut._log.info("%dx: %d blocks in %d clocks (+%d latency), target %d", n,
                      len(records) - 1, clocks, expected, sum(costs[1:]))
        assert clocks == sum(costs[1:]), (
            f"{n}x: {clocks} clocks for the stream, target {sum(costs[1:])}")
        bench.stop()
        await ClockCycles(dut.clk, 2)


class Handshakes:
    """Clock numbers of the input and output handshakes (sampled before each edge)."""

    def __init__(self, dut):
        self.dut = dut
        self.inputs, self.outputs = [], []
        self.cycle = 0
        cocotb.start_soon(self._run())

    def clear(self):
        self.inputs.clear()
        self.outputs.clear()

    async def _run(self):
        dut = self.dut
        while True:
            await FallingEdge(dut.clk)
            await ReadOnly()
            if int(dut.i__valid.value) and int(dut.i__ready.value):
                self.inputs.append(self.cycle)
            if int(dut.o__valid.value) and int(dut.o__ready.value):
                self.outputs.append(self.cycle)
            await RisingEdge(dut.clk)
            self.cycle += 1


# ---------------------------------------------------------------- slow soaks

@cocotb.test()
async def soak_scenes(dut):
    """Long random streams of every scene kind and mode, with scissors."""
    rng = await start(dut)
    bench = Bench(dut, rng, gap=0.3, stall=0.3)
    fmt = bench.fmt
    side = frame(fmt, 128)
    for name in S.SCENES:
        if name == "lines" and fmt.edges == 3:
            continue
        v = S.scene(name, side, side, 40, int(rng.integers(1 << 30)), **_fmt(fmt))
        left, top = (int(x) for x in rng.integers(0, side // 4, 2))
        scissor = (left, top, side - int(rng.integers(0, side // 4)), side)
        bench.send(_thin(rng, scene_records(fmt, rng, v, side, side, fmt.modes,
                                            scissor=scissor), 300))
    await bench.finish()


@cocotb.test()
async def soak_raw(dut):
    """Many raw block inputs at the ends of the ranges."""
    rng = await start(dut)
    bench = Bench(dut, rng, gap=0.2, stall=0.3)
    fmt = bench.fmt
    bench.send([raw_record(fmt, rng, int(rng.choice(fmt.modes))) for _ in range(1000)])
    await bench.finish()


# ---------------------------------------------------------------- helpers

def _fmt(fmt):
    return {"subpix": fmt.subpix, "int_bits": fmt.int_bits}


def _scale(full, fast):
    """``fast`` in the fast regression (``RASTER_SCALE=fast``), else ``full``."""
    return fast if os.environ.get(SCALE_ENV) == "fast" else full


def _thin(rng, records, limit):
    """At most ``limit`` of ``records``, chosen at random, in their order."""
    if len(records) <= limit:
        return records
    keep = np.sort(rng.choice(len(records), limit, replace=False))
    return [records[i] for i in keep]
