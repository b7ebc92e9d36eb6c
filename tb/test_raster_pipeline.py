"""Testbenches of the rasterizer's setup, traversal, packer and whole pipeline
(``hw/raster.py``: ``raster.setup``, ``raster.traversal``, ``raster.packer``,
``raster.pipeline``).

Every expected word comes from the golden model (``golden.raster``): the setup's records
from :func:`golden.raster.setup` (``lo16`` = ``A*xc + B*yc + C`` at the centre of the
box's first block), the traversal's block records and the packer's packets from
:func:`golden.raster.block_records` and :func:`golden.raster.pixel_packets`, the frame
coverage from :func:`golden.raster.coverage`. All runs have random input gaps and output
back-pressure; the seed is printed (``SEED=N`` reruns it).

The pipeline runs at a small coordinate format (7.4: frames up to 128 pixels) with the
1x and 4x modes in the fast tests, on Verilator only (its Icarus compile and run are the
longest of the fast regression; that run is in ``make regress``), because the block
rasterizer at every MSAA mode is slow to build and simulate; the ``slow`` tests run it in
every mode at 7.4, a 256x256 scene per mode at 9.4 and the default 12.8 format.
"""

import math

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles

from golden import raster as R
from golden import scenes as S
from hw.raster import TriangleSetup
from tb.harness import (WIDE_DESIGN, StreamDriver, StreamMonitor, params, run_cocotb,
                        simulators, split_simulators, start, wait_until)

SMALL = {"int_bits": 7, "subpix": 4, "tag_bits": 12}

PIPELINE_TESTS = ["pipeline_scenes", "pipeline_culled_scissor", "pipeline_huge",
                  "pipeline_malformed"]
#: (design, parameters, cocotb tests) of the fast regression ...
BUILDS = {
    "setup": ("raster.setup", {}, ["setup_records", "setup_malformed"]),
    "traversal": ("raster.traversal", {}, ["traversal_records"]),
}
#: ... the pipeline's (two modes: the every-mode pipeline's Verilator build takes
#: minutes; it is in the regress builds below) ...
PIPELINE = ("raster.pipeline", {**SMALL, "packets": 4, "modes": (1, 4)},
            PIPELINE_TESTS)
#: ... and of ``make regress`` only (the pipeline tests the packer too).
SLOW_BUILDS = {
    "setup_tri": ("raster.setup", {"edges": 3, "modes": (1, 4)}, ["setup_records",
                                                                  "setup_malformed"]),
    "packer": ("raster.packer", {**SMALL, "packets": 3}, ["packer_packets"]),
    "pipeline_all_modes": ("raster.pipeline", {**SMALL, "packets": 4}, PIPELINE_TESTS),
    # the block rasterizer with 8 lanes (16x in two batches a span)
    "pipeline_lanes8": ("raster.pipeline", {**SMALL, "packets": 4, "lanes": 8},
                        PIPELINE_TESTS),
    # the FPGA's MSAA build of the block rasterizer (issue 16), as the front end takes it
    "pipeline_latency9_lanes8": ("raster.pipeline", {**SMALL, "packets": 4, "modes": (1, 4),
                                                     "latency": 9, "lanes": 8},
                                 PIPELINE_TESTS),
    # 9 integer bits: a 256-pixel frame's right and bottom edges (256.0) must be
    # representable, or the mesh's last column and row of samples stay uncovered.
    "pipeline_256": ("raster.pipeline", {"int_bits": 9, "subpix": 4, "tag_bits": 12},
                     ["pipeline_frame_256"]),
    "pipeline_default": ("raster.pipeline", {}, ["pipeline_huge", "pipeline_malformed"]),
}


def _run(build, simulator):
    design, build_params, tests = {**BUILDS, "pipeline": PIPELINE, **SLOW_BUILDS}[build]
    # The testbenches touch the ports only: Verilator builds them fast (WIDE_DESIGN).
    run_cocotb(design, "tb.test_raster_pipeline", simulator, build_params, testcase=tests,
               **WIDE_DESIGN)


@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("build", list(BUILDS))
def test_unit(build, simulator):
    _run(build, simulator)


@pytest.mark.parametrize("simulator", split_simulators("verilator"))
def test_pipeline(simulator):
    _run("pipeline", simulator)


@pytest.mark.slow
@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("build", list(SLOW_BUILDS))
def test_unit_slow(build, simulator):
    _run(build, simulator)


@pytest.mark.parametrize("design", ["setup", "traversal", "packer", "pipeline"])
@pytest.mark.parametrize("kwargs, error, message", [
    ({"edges": 5}, ValueError, r"edges must be an integer from 3 to 4, not 5"),
    ({"modes": (1, 3)}, ValueError, r"modes must hold sample counts from 1, 2, 4, 8, 16, not 3"),
    ({"int_bits": 4}, ValueError, r"int_bits must be an integer from 5 to 16, not 4"),
    ({"tag_bits": "8"}, TypeError, r"tag_bits must be an integer from 1 to 64, not '8'"),
])
def test_parameter_errors(design, kwargs, error, message):
    from hw.raster import DESIGNS
    with pytest.raises(error, match=message):
        DESIGNS[design](**kwargs)


@pytest.mark.parametrize("design", ["packer", "pipeline"])
def test_packets_parameter(design):
    from hw.raster import DESIGNS
    with pytest.raises(ValueError, match=r"packets must be an integer from 1 to 16, not 0"):
        DESIGNS[design](packets=0)


@pytest.mark.parametrize("kwargs, message", [
    ({"latency": 10}, r"latency must be an integer from 7 to 9, not 10"),
    ({"modes": (1,), "latency": 8}, r"latency must be 7 in a build without an MSAA mode"),
    ({"lanes": 6}, r"lanes must be a power of two from 4 to 16, not 6"),
])
def test_block_parameters(kwargs, message):
    """The pipeline passes ``latency`` and ``lanes`` to its block rasterizer, which
    checks them (issue 15: the front end's rasterizer at ``latency=9, lanes=8``)."""
    from hw.raster import RasterPipeline
    with pytest.raises(ValueError, match=message):
        RasterPipeline(**kwargs)
    p = RasterPipeline(modes=(1, 4), latency=9, lanes=8)
    assert (p.block.latency, p.block.lanes) == (9, 8)


# ---------------------------------------------------------------- formats

class Fmt:
    """The running build, its layouts, and golden records packed into its words."""

    def __init__(self):
        import os
        from hw.raster import DESIGNS
        self.rtl = DESIGNS[os.environ["FRESCO_DESIGN"].split(".")[1]](**params())
        r = self.rtl
        self.edges, self.modes, self.subpix, self.int_bits = r.edges, r.modes, r.subpix, r.int_bits
        self.size = 1 << r.int_bits
        self.tag_mask = (1 << r.tag_bits) - 1

    def golden(self, **kwargs):
        return dict(subpix=self.subpix, int_bits=self.int_bits, **kwargs)

    # Primitives -------------------------------------------------------------
    def primitive(self, verts, prim, samples, scissor, cull_back=False, front_ccw=False,
                  rng=None, override=None):
        """Input word of one primitive. A triangle on a 4-edge build gets a random junk
        vertex 3 (out of range too) that the design must ignore."""
        v = [{"x": int(x), "y": int(y)} for x, y in verts]
        while len(v) < self.edges:
            junk = (lambda: int(rng.integers(-(1 << (self.rtl.coord_bits - 1)),
                                             1 << (self.rtl.coord_bits - 1)))) if rng else (
                lambda: 0)
            v.append({"x": junk(), "y": junk()})
        fields = {"v": v, "n_verts": len(verts), "prim": prim & self.tag_mask,
                  "msaa": int(math.log2(samples)), "cull_back": int(cull_back),
                  "front_ccw": int(front_ccw),
                  "scissor": dict(zip(("left", "top", "right", "bottom"), scissor))}
        fields.update(override or {})
        return self.rtl.primitive_layout().const(fields).as_value().value

    def edges_of(self, A, B, lo16, bias):
        k = len(A)
        out = [{"A": int(A[e]), "B": int(B[e]), "lo16": int(lo16[e]), "bias": int(bias[e])}
               for e in range(k)]
        return out + [{"A": 0, "B": 0, "lo16": 0, "bias": 0}] * (self.edges - k)

    def setup_word(self, st, p, prim, samples):
        """The setup's output word of live primitive ``p`` of golden setup ``st``."""
        s = self.subpix
        x0, y0, x1, y1 = (int(c) for c in st.bbox[p])
        xc, yc = ((x0 >> 4) * 16 + 8) << s, ((y0 >> 4) * 16 + 8) << s
        lo16 = st.A[p] * xc + st.B[p] * yc + st.C[p]
        return self.rtl.setup_layout().const({
            "prim": prim & self.tag_mask, "msaa": int(math.log2(samples)),
            "n_edges": st.n_edges, "bbox": {"x0": x0, "y0": y0, "x1": x1, "y1": y1},
            "edge": self.edges_of(st.A[p], st.B[p], lo16, st.bias[p])}).as_value().value

    def block_word(self, rec, prim):
        """A block record as the traversal's output word (the block rasterizer's input)."""
        x0, y0, x1, y1 = rec.bbox
        return self.rtl.block_layout().const({
            "bx": rec.bx, "by": rec.by, "bbox": {"x0": x0, "y0": y0, "x1": x1, "y1": y1},
            "msaa": int(math.log2(rec.samples)), "n_edges": len(rec.A),
            "tag": prim & self.tag_mask,
            "edge": self.edges_of(rec.A, rec.B, rec.lo16, rec.bias)}).as_value().value

    def result_word(self, rec, prim):
        """A block record as the block rasterizer's output word (the packer's input)."""
        p = rec.pack()
        pad = [0] * (self.edges - len(rec.A))
        return self.rtl.result_layout().const({
            "bx": rec.bx, "by": rec.by, "tag": prim & self.tag_mask,
            "msaa": int(math.log2(rec.samples)), "n_edges": len(rec.A),
            "edge_full": p["edge_full"] + pad, "edge_partial": p["edge_partial"] + pad,
            "span_full": p["span_full"], "span_partial": p["span_partial"],
            "mask": p["mask"]}).as_value().value

    # Packets ----------------------------------------------------------------
    def packet(self, pk, prim):
        """A golden :class:`PixelPacket` as a comparable tuple."""
        return (prim & self.tag_mask, pk.bx, pk.by, pk.span, int(math.log2(pk.samples)),
                pk.pixel_mask, pk.sample_mask, int(pk.full))

    def unpack_words(self, words):
        """The packets of the packer's output words, in order."""
        layout = self.rtl.word_layout()
        out = []
        for word in words:
            v = layout.from_bits(word)
            assert 1 <= v.count <= self.rtl.packets, f"output word with count {v.count}"
            for j in range(v.count):
                q = v.packet[j]
                out.append((q.prim, q.bx, q.by, q.span, q.msaa, q.pixel_mask, q.sample_mask,
                            q.full))
        return out


def describe_packet(t):
    prim, bx, by, span, msaa, pix, smp, full = t
    return (f"prim {prim} block ({bx},{by}) span {span} msaa {msaa} pixels {pix:04x} "
            f"samples {smp:x} full {full}")


def check_list(name, expected, got, describe=str):
    for index, (want, have) in enumerate(zip(expected, got)):
        assert want == have, (f"{name} {index}:\n got      {describe(have)}\n"
                              f" expected {describe(want)}")
    assert len(got) == len(expected), f"{len(got)} {name}s, expected {len(expected)}"


def scissor_all(fmt, side):
    return (0, 0, side, side)


def batch(fmt, verts, samples, scissor, cull_back=False, front_ccw=False, *, blocks=True):
    """Golden setup, block records and packets of one batch of primitives (only the
    setup, and ``None, None``, without ``blocks``)."""
    kw = fmt.golden(front_ccw=front_ccw)
    args = (verts, fmt.size, fmt.size, samples, scissor, cull_back)
    st = R.setup(verts, fmt.size, fmt.size, scissor, cull_back, **kw)
    if not blocks:
        return st, None, None
    return st, R.block_records(*args, **kw), R.pixel_packets(*args, **kw)


class Run:
    """Driver, monitor and expectations of one design under test."""

    def __init__(self, dut, rng, *, gap=0.3, stall=0.3):
        self.dut, self.rng = dut, rng
        self.fmt = Fmt()
        self.driver = StreamDriver(dut, "i", rng, gap=gap)
        self.monitor = StreamMonitor(dut, "o", rng, stall=stall)
        self.expected = []          # words (setup, traversal) or packet tuples
        self.next_id = 0
        self.culled = [0, 0, 0]
        self._packets, self._words = [], 0

    def packets(self):
        """The packets of the output words so far (the packer's and the pipeline's)."""
        words = self.monitor.items
        self._packets += self.fmt.unpack_words(words[self._words:])
        self._words = len(words)
        return self._packets

    @staticmethod
    def formats():
        """The running build's :class:`Fmt`."""
        return Fmt()

    def primitives(self, verts, samples, scissor, cull_back=False, front_ccw=False):
        """Queue primitives; returns (ids, golden setup, records, packets). On the setup
        alone the golden blocks are not needed (nor computed)."""
        st, recs, pkts = batch(self.fmt, verts, samples, scissor, cull_back, front_ccw,
                               blocks=not isinstance(self.fmt.rtl, TriangleSetup))
        ids = list(range(self.next_id, self.next_id + len(verts)))
        self.next_id += len(verts)
        self.driver.send(self.fmt.primitive(v, ids[i], samples, scissor, cull_back,
                                            front_ccw, self.rng) for i, v in enumerate(verts))
        for code in range(1, 4):
            self.culled[code - 1] += int((st.cull == code).sum())
        return ids, st, recs, pkts

    def culled_now(self):
        value = int(self.dut.culled.value)
        return [(value >> (32 * k)) & 0xffffffff for k in range(3)]

    async def wait(self, count, what):
        await wait_until(self.dut, lambda: len(self.monitor.items) >= count and self.driver.idle,
                         timeout=2000 + 60 * count + 40 * self.next_id, what=what)
        await ClockCycles(self.dut.clk, 40)        # nothing extra may follow


# ---------------------------------------------------------------- scenes

def small_scenes(fmt, rng, side):
    """The built-in scenes, small, as (name, vertices)."""
    kw = {"subpix": fmt.subpix, "int_bits": fmt.int_bits}
    seed = int(rng.integers(1 << 30))
    out = [("mesh", S.mesh(side, side, 12, seed, **kw)),
           ("random", S.random_triangles(side, side, 8, seed, max_size=side / 2, **kw)),
           ("slivers", S.slivers(side, side, 3, seed, **kw)),
           ("fan", S.fan(side, side, 8, seed, **kw))]
    if fmt.edges == 4:
        out.append(("lines", S.wide_lines(side, side, 4, seed, **kw)))
    return out


def far_corner(fmt, verts):
    """``verts`` moved to the far corner of the representable range (large values)."""
    return verts + (((fmt.size << fmt.subpix) - 1) - verts.max())


def culled_set(fmt, rng):
    """Zero-area, both windings, off-scissor primitives (triangles)."""
    u = 1 << fmt.subpix
    top = (fmt.size << fmt.subpix) - 1
    tris = [
        [(2 * u, 2 * u), (30 * u, 4 * u), (5 * u, 28 * u)],          # clockwise (front)
        [(2 * u, 2 * u), (5 * u, 28 * u), (30 * u, 4 * u)],          # counter-clockwise
        [(3 * u, 3 * u), (9 * u, 9 * u), (20 * u, 20 * u)],          # collinear: zero area
        [(7 * u, 7 * u), (7 * u, 7 * u), (7 * u, 7 * u)],            # a point
        [(top - 3 * u, top - 3 * u), (top, top - 2 * u), (top - u, top)],   # off the scissor
        [(0, 0), (top, 0), (0, top)],                                # huge
    ]
    return np.array(tris, dtype=np.int64)


# ---------------------------------------------------------------- setup alone

@cocotb.test()
async def setup_records(dut):
    """Setup alone: random triangles (both windings, degenerate), quads, slivers, huge and
    off-scissor primitives, with and without back-face culling, every mode, against the
    golden setup; culled primitives give nothing and are counted by cause."""
    rng = await start(dut)
    run = Run(dut, rng)
    fmt = run.fmt
    kw = {"subpix": fmt.subpix, "int_bits": fmt.int_bits}
    side = min(512, fmt.size)
    groups = [S.random_triangles(side, side, 30, int(rng.integers(1 << 30)), **kw),
              far_corner(fmt, S.slivers(side, side, 6, int(rng.integers(1 << 30)), **kw)),
              culled_set(fmt, rng)]
    if fmt.edges == 4:
        groups.append(S.wide_lines(side, side, 10, int(rng.integers(1 << 30)), **kw))
        quads = S.random_triangles(side, side, 10, int(rng.integers(1 << 30)), **kw)
        groups.append(np.concatenate([quads, quads[:, :1]], axis=1))   # repeated vertex
    for verts in groups:
        for cull_back, front_ccw in ((False, False), (True, False), (True, True)):
            samples = int(rng.choice(fmt.modes))
            left, top = (int(v) for v in rng.integers(0, side // 4, 2))
            scissor = (left, top, int(rng.integers(side // 2, fmt.size + 1)),
                       int(rng.integers(side // 2, fmt.size + 1)))
            ids, st, _, _ = run.primitives(verts, samples, scissor, cull_back, front_ccw)
            run.expected += [fmt.setup_word(st, p, ids[p], samples) for p in st.live]
    await run.wait(len(run.expected), f"{len(run.expected)} set-up primitives")
    layout = fmt.rtl.setup_layout()
    check_list("set-up primitive", run.expected, run.monitor.items,
               lambda w: str(layout.from_bits(w)))
    assert run.culled_now() == run.culled, f"culled {run.culled_now()}, expected {run.culled}"
    assert sum(run.culled) > 0
    assert not int(dut.error.value)


@cocotb.test()
async def setup_malformed(dut):
    """Each malformed primitive is dropped, sets the sticky error, and loses nothing
    around it: an unsupported MSAA code, 2 and 5 vertices (4 on a 3-edge build),
    coordinates below 0 and beyond the format, an empty and an inverted scissor, a
    scissor beyond the frame."""
    rng = await start(dut)
    run = Run(dut, rng, gap=0.2, stall=0.3)
    fmt = run.fmt
    await check_malformed(run, lambda ids, st, samples: [
        fmt.setup_word(st, p, ids[p], samples) for p in st.live])
    layout = fmt.rtl.setup_layout()
    check_list("set-up primitive", run.expected, run.monitor.items,
               lambda w: str(layout.from_bits(w)))


def malformed_cases(fmt):
    """(what, field overrides) of malformed primitives for this build."""
    top = (fmt.size << fmt.subpix) - 1
    bad_modes = [m for m in range(8) if m not in [int(math.log2(n)) for n in fmt.modes]]
    ok_v = [{"x": 0, "y": 0}, {"x": 16 << fmt.subpix, "y": 0}, {"x": 0, "y": 16 << fmt.subpix},
            {"x": 16 << fmt.subpix, "y": 16 << fmt.subpix}][:fmt.edges]
    cases = [(f"msaa code {m}", {"msaa": m}) for m in bad_modes[:3]]
    cases += [(f"{n} vertices", {"n_verts": n}) for n in (0, 2, 5, 7)]
    if fmt.edges == 3:
        cases.append(("4 vertices on a 3-edge build", {"n_verts": 4}))
    for j, c, val in ((0, "x", -1), (1, "y", top + 1), (2, "x", -(1 << (fmt.rtl.coord_bits - 1))),
                      (1, "x", (1 << (fmt.rtl.coord_bits - 1)) - 1)):
        v = [dict(d) for d in ok_v]
        v[j][c] = val
        cases.append((f"vertex {j}.{c} = {val}", {"v": v, "n_verts": 3}))
    side = fmt.size
    cases += [("empty scissor", {"scissor": {"left": 5, "top": 0, "right": 5, "bottom": side}}),
              ("inverted scissor", {"scissor": {"left": 0, "top": 9, "right": side,
                                                "bottom": 3}}),
              ("scissor beyond the frame", {"scissor": {"left": 0, "top": 0,
                                                        "right": side + 1, "bottom": side}})]
    return cases


async def check_malformed(run, expect, *, side=32):
    """Send good batches with one malformed primitive between each; the error flag must
    be clear before the first and set after it."""
    fmt, rng = run.fmt, run.rng
    kw = {"subpix": fmt.subpix, "int_bits": fmt.int_bits}
    good = S.random_triangles(side, side, 3, int(rng.integers(1 << 30)), min_size=4,
                              max_size=side / 2, **kw)
    samples = fmt.modes[0]
    ids, st, recs, pkts = run.primitives(good, samples, (0, 0, side, side))
    run.expected += expect(ids, st, samples) if st is not None else []
    await run.wait(len(run.expected), "the first good primitives")
    assert not int(run.dut.error.value), "error set before any malformed primitive"
    for what, override in malformed_cases(fmt):
        verts = good[0]
        run.driver.send([fmt.primitive(verts, 999, samples, (0, 0, side, side), rng=rng,
                                       override=override)])
        samples = int(rng.choice(fmt.modes))
        ids, st, recs, pkts = run.primitives(good, samples, (0, 0, side, side))
        run.expected += expect(ids, st, samples)
    await run.wait(len(run.expected), "the good primitives around the malformed ones")
    assert int(run.dut.error.value), "error not set by malformed primitives"


# ---------------------------------------------------------------- traversal alone

@cocotb.test()
async def traversal_records(dut):
    """Traversal alone: golden set-up primitives in, golden block records out (blocks of
    the box in row order, blocks rejected by an edge skipped, lo16 stepped)."""
    rng = await start(dut)
    run = Run(dut, rng)
    fmt = run.fmt
    kw = {"subpix": fmt.subpix, "int_bits": fmt.int_bits}
    side = 160
    corner = (fmt.size - side - 1, fmt.size - side - 1, fmt.size, fmt.size)
    near = (int(rng.integers(0, 20)), int(rng.integers(0, 20)), side + 7, side + 9)
    groups = [(S.random_triangles(side, side, 12, int(rng.integers(1 << 30)),
                                  max_size=side, **kw), near),
              (far_corner(fmt, S.slivers(side, side, 4, int(rng.integers(1 << 30)), **kw)),
               corner),
              (S.mesh(side, side, 8, int(rng.integers(1 << 30)), **kw), near),
              (culled_set(fmt, rng)[[0, 1, 5]], near)]
    if fmt.edges == 4:
        groups.append((S.wide_lines(side, side, 6, int(rng.integers(1 << 30)), **kw), near))
    words = []
    for verts, scissor in groups:
        samples = int(rng.choice(fmt.modes))
        st, recs, _ = batch(fmt, verts, samples, scissor)
        ids = list(range(run.next_id, run.next_id + len(verts)))
        run.next_id += len(verts)
        words += [fmt.setup_word(st, p, ids[p], samples) for p in st.live]
        run.expected += [fmt.block_word(r, ids[r.prim]) for r in recs]
    run.driver.send(words)
    await run.wait(len(run.expected), f"{len(run.expected)} blocks")
    layout = fmt.rtl.block_layout()
    check_list("block", run.expected, run.monitor.items, lambda w: str(layout.from_bits(w)))


# ---------------------------------------------------------------- packer alone

@cocotb.test()
async def packer_packets(dut):
    """Packer alone: golden block results (every mode, empty blocks too) in, golden
    pixel packets out, several per word."""
    rng = await start(dut)
    run = Run(dut, rng)
    fmt = run.fmt
    words = []
    for name, verts in small_scenes(fmt, rng, 40):
        samples = int(rng.choice(fmt.modes))
        _, recs, pkts = batch(fmt, verts, samples, (0, 0, 40, 40))
        ids = list(range(run.next_id, run.next_id + len(verts)))
        run.next_id += len(verts)
        words += [fmt.result_word(r, ids[r.prim]) for r in recs]
        run.expected += [fmt.packet(pk, ids[pk.prim]) for pk in pkts]
    run.driver.send(words)
    await wait_until(dut, lambda: len(run.packets()) >= len(run.expected),
                     timeout=200 + 20 * len(words), what="packets")
    await ClockCycles(dut.clk, 20)
    check_list("packet", run.expected, run.packets(), describe_packet)


# ---------------------------------------------------------------- the pipeline

async def pipeline_wait(run):
    fmt = run.fmt
    await wait_until(run.dut, lambda: run.driver.idle and len(run.packets()) >= len(run.expected),
                     timeout=4000 + 40 * len(run.expected) + 60 * run.next_id,
                     what=f"{len(run.expected)} packets")
    await ClockCycles(run.dut.clk, 60)
    return list(run.packets())


def frame_coverage(fmt, packets, ids, side, samples):
    """``(side, side, samples)`` coverage counts assembled from packet tuples of ``ids``."""
    count = np.zeros((fmt.size + 16, fmt.size + 16, samples), dtype=np.int32)
    for prim, bx, by, span, msaa, pix, smp, full in packets:
        if prim not in ids:
            continue
        assert 1 << msaa == samples
        bits = np.array([(smp >> i) & 1 for i in range(16 * samples)], dtype=np.int32)
        x, y = 16 * bx + 4 * (span % 4), 16 * by + 4 * (span // 4)
        count[y:y + 4, x:x + 4] += bits.reshape(4, 4, samples)
    assert not count[side:].any() and not count[:, side:].any(), "coverage off the frame"
    return count[:side, :side]


def queue_scene(run, name, verts, samples, side):
    """Send scene ``verts`` at ``samples`` over a ``side``-square frame and expect the
    golden model's packets; returns what :func:`check_scenes` needs of it."""
    fmt = run.fmt
    ids, _, _, pkts = run.primitives(verts, samples, (0, 0, side, side))
    run.expected += [fmt.packet(pk, ids[pk.prim]) for pk in pkts]
    return name, samples, verts, set(i & fmt.tag_mask for i in ids)


async def check_scenes(run, checks, side):
    """Wait for the pipeline, compare the packets in order, and compare each queued
    scene's frame coverage with ``golden.raster.coverage`` (meshes: every sample once)."""
    fmt = run.fmt
    got = await pipeline_wait(run)
    check_list("packet", run.expected, got, describe_packet)
    for name, samples, verts, ids in checks:
        count = frame_coverage(fmt, got, ids, side, samples)
        want = R.coverage_count(verts, side, side, samples, **fmt.golden())
        assert np.array_equal(count, want), f"{name} {samples}x: coverage differs"
        if name == "mesh":
            assert (count == 1).all(), f"mesh {samples}x: {(count == 0).sum()} holes, " \
                                       f"{(count > 1).sum()} overlaps"


@cocotb.test()
async def pipeline_scenes(dut):
    """Every built-in scene in every MSAA mode through the pipeline, modes interleaved
    primitive batch by batch: the packets equal the golden model's in order, and the
    frame coverage assembled from them equals ``golden.raster.coverage`` (meshes: every
    sample exactly once)."""
    rng = await start(dut)
    run = Run(dut, rng, gap=0.3, stall=0.3)
    fmt = run.fmt
    side = 32
    checks = []
    for samples in fmt.modes:
        for name, verts in small_scenes(fmt, rng, side):
            checks.append(queue_scene(run, name, verts, samples, side))
    await check_scenes(run, checks, side)
    assert not int(dut.error.value)


@cocotb.test()
async def pipeline_culled_scissor(dut):
    """Culled primitives (zero area, back faces with either front winding) give no
    packets and are counted; primitives entirely outside the scissor are culled;
    scissors not aligned to spans cut the rest."""
    rng = await start(dut)
    run = Run(dut, rng)
    fmt = run.fmt
    tris = culled_set(fmt, rng)
    kw = {"subpix": fmt.subpix, "int_bits": fmt.int_bits}
    tris = np.concatenate([tris, S.random_triangles(64, 64, 6, int(rng.integers(1 << 30)),
                                                    min_size=6, max_size=40, **kw)])
    for cull_back, front_ccw in ((False, False), (True, False), (True, True)):
        samples = int(rng.choice(fmt.modes))
        left, top = (int(v) for v in rng.integers(1, 15, 2))
        scissor = (left, top, int(rng.integers(left + 1, 70)), int(rng.integers(top + 1, 70)))
        ids, st, recs, pkts = run.primitives(tris, samples, scissor, cull_back, front_ccw)
        run.expected += [fmt.packet(pk, ids[pk.prim]) for pk in pkts]
    # Entirely outside a scissor: all culled.
    ids, st, recs, pkts = run.primitives(tris[:2], fmt.modes[-1], (100, 100, 128, 128))
    assert not pkts and (st.cull == R.CULL_OUTSIDE).all()
    got = await pipeline_wait(run)
    check_list("packet", run.expected, got, describe_packet)
    assert run.culled_now() == run.culled, f"culled {run.culled_now()}, expected {run.culled}"
    assert all(run.culled), f"every cull cause should occur: {run.culled}"


@cocotb.test()
async def pipeline_huge(dut):
    """Huge primitives: triangles and quads over the whole representable range, both
    windings, clipped by the frame-sized scissor and by a small one far from the
    origin."""
    rng = await start(dut)
    run = Run(dut, rng, gap=0.2, stall=0.2)
    fmt = run.fmt
    top = (fmt.size << fmt.subpix) - 1
    tris = np.array([[(0, 0), (top, 0), (0, top)], [(top, top), (top, 0), (0, top)],
                     [(0, 0), (0, top), (top, top // 2)], [(1, top), (top, 3), (top // 3, 1)]],
                    dtype=np.int64)
    near = (fmt.size - 40, fmt.size - 36, fmt.size, fmt.size - 1)
    for scissor in ((0, 0, min(fmt.size, 96), min(fmt.size, 64)), near):
        samples = int(rng.choice(fmt.modes))
        ids, st, recs, pkts = run.primitives(tris, samples, scissor)
        run.expected += [fmt.packet(pk, ids[pk.prim]) for pk in pkts]
        if fmt.edges == 4:
            quad = np.array([[(0, 1), (top, 0), (top - 5, top), (3, top - 2)]], dtype=np.int64)
            ids, st, recs, pkts = run.primitives(quad, samples, scissor)
            run.expected += [fmt.packet(pk, ids[pk.prim]) for pk in pkts]
    got = await pipeline_wait(run)
    check_list("packet", run.expected, got, describe_packet)


@cocotb.test()
async def pipeline_malformed(dut):
    """Malformed primitives at the pipeline's input are dropped and set the sticky error;
    the packets of the good primitives around them all arrive, in order."""
    rng = await start(dut)
    run = Run(dut, rng, gap=0.2, stall=0.3)
    fmt = run.fmt
    await check_malformed_pipeline(run)


async def check_malformed_pipeline(run):
    fmt = run.fmt
    orig = run.primitives

    def expect(ids, st, samples):
        return []

    # Record packets instead of setup words: wrap primitives().
    def primitives(verts, samples, scissor, cull_back=False, front_ccw=False):
        ids, st, recs, pkts = orig(verts, samples, scissor, cull_back, front_ccw)
        run.expected += [fmt.packet(pk, ids[pk.prim]) for pk in pkts]
        return ids, st, recs, pkts
    run.primitives = primitives
    run.wait = lambda count, what: pipeline_wait(run)
    await check_malformed(run, expect)
    got = await pipeline_wait(run)
    check_list("packet", run.expected, got, describe_packet)


@cocotb.test()
async def pipeline_frame_256(dut):
    """A 256x256 frame per MSAA mode (mesh and random triangles, wide lines) through the
    pipeline, packet by packet, and its coverage against the golden model."""
    rng = await start(dut)
    run = Run(dut, rng, gap=0.1, stall=0.1)
    fmt = run.fmt
    kw = {"subpix": fmt.subpix, "int_bits": fmt.int_bits}
    side = 256
    checks = []
    for samples in fmt.modes:
        seed = int(rng.integers(1 << 30))
        for name, verts in (("mesh", S.mesh(side, side, 120, seed, **kw)),
                            ("random", S.random_triangles(side, side, 30, seed, **kw)),
                            ("lines", S.wide_lines(side, side, 10, seed, **kw))):
            if verts.shape[1] > fmt.edges:
                continue
            checks.append(queue_scene(run, name, verts, samples, side))
    await check_scenes(run, checks, side)
