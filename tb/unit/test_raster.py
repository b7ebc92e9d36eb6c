"""Unit tests of the rasterizer golden model (golden/raster.py, golden/scenes.py).

The expected values are worked out by hand or by an independent scalar re-statement of
the spec's rules (``_ref_covered``), never by the model itself.
"""

import math
from fractions import Fraction

import numpy as np
import pytest

from golden import raster as R
from golden import scenes as S

U = 256          # one pixel in 16.8 fixed point

# The D3D11 standard sample positions (D3D11.3 functional spec, table in section 19.2.4),
# in 1/16 pixel from the pixel centre, y down, copied here independently of the model.
D3D11_PATTERNS = {
    1: [(0, 0)],
    2: [(4, 4), (-4, -4)],
    4: [(-2, -6), (6, -2), (-6, 2), (2, 6)],
    8: [(1, -3), (-1, 3), (5, 1), (-3, -5), (-5, 5), (-7, -1), (3, 7), (7, -7)],
    16: [(1, 1), (-1, -3), (-3, 2), (4, -1), (-5, -2), (2, 5), (5, 3), (3, -5),
         (-2, 6), (0, -7), (-4, -6), (-6, 4), (-8, 0), (7, -4), (6, 7), (-7, -8)],
}
MODES = (1, 2, 4, 8, 16)


def px(*pts):
    """One primitive from pixel coordinates (exact in 16.8)."""
    return np.array([[[round(x * U), round(y * U)] for x, y in pts]], dtype=np.int64)


# ------------------------------------------------------------------ independent reference

def _cross(u, v):
    return u[0] * v[1] - u[1] * v[0]


def _ref_covered(poly, P):
    """Is subpixel point P covered by the convex polygon ``poly`` (list of (x, y) ints)?

    Restates the D3D11 rules in their own words: P is inside when it lies strictly on the
    interior side of every edge, or on an edge's line where that edge is a top edge
    (exactly horizontal with the interior below it) or a left edge (not horizontal,
    with the interior to its right).
    """
    n = len(poly)
    area = sum(_cross(poly[i], poly[(i + 1) % n]) for i in range(n))
    if area == 0:
        return False
    for i in range(n):
        p, q = poly[i], poly[(i + 1) % n]
        if p == q:
            continue
        r = next(v for v in poly if _cross((q[0] - p[0], q[1] - p[1]),
                                           (v[0] - p[0], v[1] - p[1])) != 0)
        d = (q[0] - p[0], q[1] - p[1])
        side = _cross(d, (P[0] - p[0], P[1] - p[1]))
        inner = _cross(d, (r[0] - p[0], r[1] - p[1]))
        if side * inner > 0:
            continue
        if side != 0:
            return False
        if p[1] == q[1]:                          # horizontal: top edge iff interior below
            if not r[1] > p[1]:
                return False
        else:                                     # left edge iff interior to the right
            x_line = p[0] + Fraction((r[1] - p[1]) * (q[0] - p[0]), q[1] - p[1])
            if not r[0] > x_line:
                return False
    return True


def _ref_count(prims, width, height, samples):
    out = np.zeros((height, width, samples), dtype=np.int32)
    offs = D3D11_PATTERNS[samples]
    for prim in prims:
        poly = [tuple(int(c) for c in v) for v in prim]
        xs = [v[0] for v in poly]
        ys = [v[1] for v in poly]
        for j in range(max(0, min(ys) // U - 1), min(height, max(ys) // U + 2)):
            for i in range(max(0, min(xs) // U - 1), min(width, max(xs) // U + 2)):
                for s, (ox, oy) in enumerate(offs):
                    P = (i * U + U // 2 + ox * 16, j * U + U // 2 + oy * 16)
                    out[j, i, s] += _ref_covered(poly, P)
    return out


# ------------------------------------------------------------------ sample patterns

@pytest.mark.parametrize("n", MODES)
def test_sample_offsets_are_the_d3d11_table(n):
    assert R.sample_offsets(n).tolist() == [list(o) for o in D3D11_PATTERNS[n]]
    assert R.sample_positions(n).tolist() == [[128 + 16 * x, 128 + 16 * y]
                                              for x, y in D3D11_PATTERNS[n]]


@pytest.mark.parametrize("n", MODES)
def test_each_sample_is_where_the_table_says(n):
    # A tiny triangle (6/256 px) around sample s of pixel (1, 2) covers that sample only.
    for s, (ox, oy) in enumerate(D3D11_PATTERNS[n]):
        x, y = 1 * U + 128 + 16 * ox, 2 * U + 128 + 16 * oy
        tri = np.array([[[x - 4, y - 4], [x + 6, y - 4], [x - 4, y + 6]]])
        cov = R.coverage(tri, 4, 4, n)
        expect = np.zeros((4, 4, n), dtype=bool)
        expect[2, 1, s] = True
        assert (cov == expect).all(), (n, s)


# ------------------------------------------------------------------ hand-worked coverage

def test_right_triangle_hand_count():
    # Legs of 8 px: centre (i+.5, j+.5) is inside iff i + j + 1 < 8 (the hypotenuse is a
    # right edge, so centres on it, i + j = 7, are out): 7 + 6 + ... + 1 = 28 pixels.
    for tri in (px((0, 0), (8, 0), (0, 8)), px((0, 0), (0, 8), (8, 0))):
        cov = R.coverage(tri, 16, 16)[..., 0]
        assert cov.sum() == 28
        j, i = np.nonzero(cov)
        assert (i + j <= 6).all()


def test_top_left_rule_horizontal_edges():
    # Top edge through the centres of row 0: row 0 is in (8 px), 36 pixels in all.
    cov = R.coverage(px((0, 0.5), (8, 0.5), (0, 8.5)), 16, 16)[..., 0]
    assert cov.sum() == 36 and cov[0, :8].all() and not cov[0, 8:].any()
    # Bottom edge through the centres of row 8: row 8 is out; i < j for j in 1..7: 28.
    cov = R.coverage(px((0, 8.5), (8, 8.5), (0, 0.5)), 16, 16)[..., 0]
    assert cov.sum() == 28 and not cov[8].any() and cov[7, :7].all()


def test_top_left_rule_vertical_edges():
    # Left edge through the centres of column 0: column 0 rows 0..7 in, sum j+1 = 36.
    cov = R.coverage(px((0.5, 0), (8.5, 8), (0.5, 8)), 16, 16)[..., 0]
    assert cov.sum() == 36 and cov[:8, 0].all()
    # Right edge through the centres of column 8: out; i + j >= 8 with i, j <= 7: 28.
    cov = R.coverage(px((8.5, 0), (0.5, 8), (8.5, 8)), 16, 16)[..., 0]
    assert cov.sum() == 28 and not cov[:, 8].any()


@pytest.mark.parametrize("n", MODES)
def test_shared_diagonal_covers_each_sample_once(n):
    # The 8x8 square split along its diagonal (centres on it at 1x): lower-left half has
    # a right-edge hypotenuse (28 px at 1x), upper-right a left edge (36 px).
    lower = px((0, 0), (0, 8), (8, 8))
    upper = px((0, 0), (8, 0), (8, 8))
    if n == 1:
        assert R.coverage(lower, 16, 16).sum() == 28
        assert R.coverage(upper, 16, 16).sum() == 36
    cnt = R.coverage_count(np.concatenate([lower, upper]), 16, 16, n)
    assert (cnt[:8, :8] == 1).all() and cnt.sum() == 64 * n


@pytest.mark.parametrize("n", MODES)
def test_matches_scalar_reference(n):
    rng = np.random.default_rng(7 + n)
    W, H = 20, 12
    prims = [S.slivers(W, H, 3, seed=n)[i] for i in range(3)]
    for _ in range(8):                                  # arbitrary subpixel vertices
        c = rng.uniform(0, (W + 2) * U, 2)
        prims.append(c + rng.uniform(-6 * U, 6 * U, (3, 2)))
    for _ in range(6):                                  # vertices on the 1/16 grid, so
        prims.append(rng.integers(0, 16 * (W + 1), (3, 2)) * 16)  # edges hit samples
    for sx, sy in ((1, 1), (1, -1), (-1, 1), (-1, -1)):  # axis-aligned legs through samples
        c = np.array([10 * U + 128, 6 * U + 128]) + 16 * np.array(D3D11_PATTERNS[n][-1])
        leg = np.array([[0, 0], [7 * U * sx, 0], [0, 5 * U * sy]])
        prims += [c + leg, c + leg[[0, 2, 1]]]
    prims.append(np.array([[2 * U, 3 * U], [17 * U, 4 * U + 1], [9 * U, 3 * U + 200]]))
    prims.append(np.array([[3 * U, 3 * U], [9 * U, 3 * U], [15 * U, 3 * U]]))  # zero area
    v = np.clip(np.rint(np.array(prims)), 0, 2**20 - 1).astype(np.int64)
    assert (R.coverage_count(v, W, H, n) == _ref_count(v, W, H, n)).all()


@pytest.mark.parametrize("n", (1, 8))
def test_quads_match_scalar_reference(n):
    v = S.wide_lines(24, 16, 10, seed=3, line_width=(0.3, 5.0))
    assert (R.coverage_count(v, 24, 16, n) == _ref_count(v, 24, 16, n)).all()


# ------------------------------------------------------------------ watertight meshes

@pytest.mark.parametrize("n", MODES)
def test_mesh_covers_every_sample_exactly_once(n):
    v = S.mesh(48, 40, 120, seed=n)
    assert (R.coverage_count(v, 48, 40, n) == 1).all()


def test_mesh_vertices_on_sample_points():
    # Every vertex on a pixel centre or a pixel corner: edges run through many samples.
    v = S.mesh(32, 32, 64, seed=5, jitter=0.0)         # 4 px cells: corners on pixel corners
    assert (R.coverage_count(v, 32, 32, 16) == 1).all()
    # Interior grid points moved by -1/2, 0 or +1/2 px: onto pixel centres.
    rng = np.random.default_rng(1)
    grid = np.array([[(x, y) for x in range(0, 33, 4)] for y in range(0, 33, 4)]) * U
    grid[1:-1, 1:-1] += rng.integers(-1, 2, grid[1:-1, 1:-1].shape) * (U // 2)
    tris = []
    for j in range(8):
        for i in range(8):
            a, b, c, d = grid[j, i], grid[j, i + 1], grid[j + 1, i + 1], grid[j + 1, i]
            tris += [[a, b, c], [a, c, d]] if (i + j) % 2 else [[a, b, d], [b, c, d]]
    for n in MODES:
        assert (R.coverage_count(np.array(tris), 32, 32, n) == 1).all()


def test_fan_covers_each_sample_at_most_once():
    v = S.fan(64, 64, 24, seed=2)
    cnt = R.coverage_count(v, 64, 64, 8)
    assert cnt.max() == 1 and cnt.sum() > 0
    # All clockwise: back-face culling removes none; front_ccw culls them all.
    assert (R.coverage_count(v, 64, 64, 8, cull_back=True) == cnt).all()
    assert not R.coverage(v, 64, 64, 8, cull_back=True, front_ccw=True).any()


# ------------------------------------------------------------------ culling, scissor, box

def test_zero_area_covers_nothing():
    v = np.concatenate([px((1, 1), (5, 5), (9, 9)), px((1, 1), (1, 1), (9, 2)),
                        px((3, 3), (3, 3), (3, 3)), px((0.5, 2.5), (9.5, 2.5), (4.5, 2.5))])
    for n in MODES:
        assert not R.coverage(v, 16, 16, n).any()
    st = R.setup(v, 16, 16)
    assert (st.cull == R.CULL_ZERO_AREA).all()
    assert R.block_records(v, 16, 16) == [] and R.pixel_packets(v, 16, 16) == []


def test_back_face_culling():
    cw = px((1, 1), (9, 1), (1, 9))          # clockwise on the screen (y down): front
    ccw = px((1, 1), (1, 9), (9, 1))
    assert R.coverage(cw, 16, 16, cull_back=True).sum() == 28
    assert not R.coverage(ccw, 16, 16, cull_back=True).any()
    assert R.coverage(ccw, 16, 16).sum() == 28
    assert R.coverage(ccw, 16, 16, cull_back=True, front_ccw=True).sum() == 28
    assert not R.coverage(cw, 16, 16, cull_back=True, front_ccw=True).any()
    st = R.setup(np.concatenate([cw, ccw]), 16, 16, cull_back=True)
    assert st.cull.tolist() == [R.CULL_NONE, R.CULL_BACK_FACE]
    assert st.area2.tolist() == [64 * U * U, -64 * U * U] and st.flipped.tolist() == [0, 1]


@pytest.mark.parametrize("n", (1, 4))
def test_scissor(n):
    big = px((0, 0), (100, 0), (0, 100))      # covers the whole 32x32 frame
    cov = R.coverage(big, 32, 32, n, scissor=(3, 5, 20, 9))
    expect = np.zeros((32, 32, n), dtype=bool)
    expect[5:9, 3:20] = True
    assert (cov == expect).all()
    assert not R.coverage(big, 32, 32, n, scissor=(7, 7, 7, 20)).any()
    # Block masks respect the scissor and the span classes see it.
    recs = R.block_records(big, 32, 32, n, scissor=(3, 5, 20, 9))
    assert [(r.bx, r.by) for r in recs] == [(0, 0), (1, 0)]
    # Box x 3..19, y 5..8: spans of rows 4..7 and 8..11 are in it (FULL: the edges are
    # far), rows 0..3 and 12..15 are not; in block 1 only the span column x 16..19.
    E_, F_ = R.EMPTY, R.FULL
    assert recs[0].span_class.tolist() == [E_] * 4 + [F_] * 8 + [E_] * 4
    assert recs[1].span_class.tolist() == [E_] * 4 + [F_, E_, E_, E_] * 2 + [E_] * 4


def test_off_screen_and_huge():
    off = px((40, 2), (60, 2), (40, 30))
    assert not R.coverage(off, 32, 32).any()
    assert R.setup(off, 32, 32).cull.tolist() == [R.CULL_OUTSIDE]
    part = px((28, 0), (90, 0), (28, 90))      # x >= 28 inside; on screen 4 columns
    cov = R.coverage(part, 32, 32)[..., 0]
    assert cov[:, 28:].all() and not cov[:, :28].any()
    huge = np.array([[[0, 0], [2**20 - 1, 0], [0, 2**20 - 1]]])
    assert R.coverage(huge, 64, 64, 4).all()


def test_bounding_box_definition():
    st = R.setup(px((1.5, 2), (16, 2.25), (3, 9.99)), 64, 64)
    assert st.bbox.tolist() == [[1, 2, 16, 9]]
    st = R.setup(px((1.5, 2), (16, 2.25), (3, 9.99)), 64, 64, scissor=(0, 4, 10, 64))
    assert st.bbox.tolist() == [[1, 4, 9, 9]]


# ------------------------------------------------------------------ snapping

def test_snap_rounds_ties_to_even():
    h = 1 / 512                                   # half a subpixel
    got = R.snap([0 * h, 1 * h, 3 * h, 5 * h, 7 * h, 10 + h, 10 + 3 * h, 2.3, 0.999])
    assert got.tolist() == [0, 0, 2, 2, 4, 2560, 2562, 589, 256]
    assert got.dtype == np.int64
    with pytest.raises(ValueError, match="coords"):
        R.snap([-1.0])
    with pytest.raises(ValueError, match="coords"):
        R.snap([4096.0])
    with pytest.raises(ValueError, match="finite"):
        R.snap([float("nan")])


def test_load_text_and_npy(tmp_path):
    f = tmp_path / "tris.txt"
    f.write_text("# a triangle and another\n0 0, 8 0, 0 8\n1.5 1 3 1 1 3.001953125  # x\n")
    v = S.load(f)
    assert v.tolist() == [[[0, 0], [2048, 0], [0, 2048]], [[384, 256], [768, 256], [256, 768]]]
    np.save(tmp_path / "q.npy", np.array([[[0, 0], [4, 0], [4, 4], [0, 4]]], dtype=float))
    assert S.load(tmp_path / "q.npy").shape == (1, 4, 2)
    assert S.load([[0, 0, 1, 0, 0, 1]]).tolist() == [[[0, 0], [256, 0], [0, 256]]]
    with pytest.raises(ValueError, match="source"):
        S.load(np.zeros((2, 5)))


# ------------------------------------------------------------------ parameters

@pytest.mark.parametrize("kwargs, exc, msg", [
    (dict(samples=3), ValueError, r"samples must be one of 1, 2, 4, 8, 16, not 3"),
    (dict(samples=4.0), TypeError, r"samples must be an int"),
    (dict(width=0), ValueError, r"width must be an integer from 1 to 4096, not 0"),
    (dict(height=5000), ValueError, r"height must be an integer from 1 to 4096, not 5000"),
    (dict(width=16.0), TypeError, r"width must be an int"),
    (dict(cull_back=1), TypeError, r"cull_back must be a bool"),
    (dict(scissor=(0, 0, 17, 4)), ValueError, r"scissor right must be an integer from 0 to 16, not 17"),
    (dict(scissor=(5, 0, 4, 4)), ValueError, r"scissor right must be an integer from 5 to 16, not 4"),
    (dict(scissor=(0, 0, 4)), ValueError, r"scissor must be \(left, top, right, bottom\)"),
    (dict(scissor=5), TypeError, r"scissor must be None or"),
    (dict(subpix=3), ValueError, r"subpix must be an integer from 4 to 12, not 3"),
    (dict(vertices=np.zeros((1, 3, 2))), TypeError, r"vertices must be integers"),
    (dict(vertices=np.zeros((1, 5, 2), dtype=int)), ValueError,
     r"vertices must have shape \(n, 3, 2\) or \(n, 4, 2\), not \(1, 5, 2\)"),
    (dict(vertices=[[[0, 0], [1, 0], [0, -1]]]), ValueError,
     r"vertices must lie in 0\.\.1048575"),
    (dict(vertices=[[[0, 0], [1 << 20, 0], [0, 1]]]), ValueError,
     r"vertices must lie in 0\.\.1048575 .*not 1048576"),
])
def test_parameter_errors(kwargs, exc, msg):
    args = dict(vertices=px((0, 0), (4, 0), (0, 4)), width=16, height=16)
    args.update(kwargs)
    for fn in (R.coverage, R.block_records, R.span_statistics):
        with pytest.raises(exc, match=msg):
            fn(**args)


@pytest.mark.parametrize("kwargs, exc, msg", [
    (dict(int_bits=3), ValueError, r"int_bits must be an integer from 4 to 16, not 3"),
    (dict(int_bits=17), ValueError, r"int_bits must be an integer from 4 to 16, not 17"),
    (dict(subpix=13), ValueError, r"subpix must be an integer from 4 to 12, not 13"),
    (dict(front_ccw=1), TypeError, r"front_ccw must be a bool, not int"),
])
def test_format_and_winding_errors(kwargs, exc, msg):
    with pytest.raises(exc, match=msg):
        R.coverage(px((0, 0), (4, 0), (0, 4)), 16, 16, **kwargs)


@pytest.mark.parametrize("call, exc, msg", [
    (lambda: R.rasterize_block([1], [1], [0], [0], (0, 0, 15, 15), 0, 0, samples=3),
     ValueError, r"samples must be one of 1, 2, 4, 8, 16, not 3"),
    (lambda: R.rasterize_block([1], [1], [0], [0], (0, 0, 15, 15), 0, 0, subpix=13),
     ValueError, r"subpix must be an integer from 4 to 12, not 13"),
    (lambda: R.sample_offsets(32), ValueError, r"samples must be one of 1, 2, 4, 8, 16, not 32"),
    (lambda: R.snap([[1.0, 2.0]], subpix=2), ValueError, r"subpix must be an integer from 4 to 12, not 2"),
    (lambda: R.benchmark_coverage(repeat=0), ValueError, r"repeat must be an integer from 1 to 1000, not 0"),
])
def test_other_entry_point_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_scene_parameter_errors():
    with pytest.raises(ValueError, match="name must be one of mesh, random"):
        S.scene("teapot", 16, 16)
    with pytest.raises(ValueError, match="jitter must be in 0..0.2"):
        S.mesh(16, 16, 8, jitter=0.5)
    with pytest.raises(ValueError, match="n_triangles must be an integer from 0"):
        S.random_triangles(16, 16, -1)
    with pytest.raises(ValueError, match=r"n_lines must be an integer from 0 to 16777216, not -1"):
        S.wide_lines(16, 16, -1)
    with pytest.raises(ValueError, match=r"width must be an integer from 1 to 65536, not 0"):
        S.fan(0, 16)
    with pytest.raises(ValueError, match=r"seed must be an integer from 0 to 9223372036854775807, not -1"):
        S.mesh(16, 16, 8, seed=-1)
    with pytest.raises(TypeError, match=r"seed must be an integer from 0 to 9223372036854775807, not 1\.5"):
        S.random_triangles(16, 16, 4, seed=1.5)


# ------------------------------------------------------------------ blocks and spans

def test_traversal_and_span_classes_hand_case():
    # Triangle (0,0),(16,0),(0,16): its box ends at pixel 16 (the vertex sits on the
    # boundary), so it touches 4 blocks; the hypotenuse (x + y < 16 inside) rejects
    # blocks (1,0), (0,1), (1,1) at all four corners. In block (0,0) span (sx, sy) is
    # FULL when 4(sx+sy) + 8 < 16, EMPTY when 4(sx+sy) >= 16, else PARTIAL.
    tri = px((0, 0), (16, 0), (0, 16))
    recs = R.block_records(tri, 64, 64)
    assert [(r.bx, r.by) for r in recs] == [(0, 0)]
    cls = [R.FULL if sx + sy <= 1 else R.EMPTY if sx + sy >= 4 else R.PARTIAL
           for sy in range(4) for sx in range(4)]
    assert recs[0].span_class.tolist() == cls
    e = recs[0].edge_class                      # edges: top, hypotenuse, left
    assert e[0].tolist() == [R.FULL] * 16 and e[2].tolist() == [R.FULL] * 16
    assert e[1].tolist() == cls
    assert recs[0].bias.tolist() == [0, 1, 0]
    packed = recs[0].pack()
    assert packed["span_full"] == 0b0000_0000_0001_0011
    assert packed["span_partial"] == 0b0001_0011_0110_1100
    assert packed["edge_full"][0] == 0xFFFF and packed["edge_partial"][0] == 0
    stats = R.span_statistics(tri, 64, 64, 4)
    assert (stats["blocks"], stats["skipped_blocks"]) == (1, 3)
    sp = stats["spans"]
    assert (sp["tiles"], sp["empty"], sp["full"], sp["partial"]) == (16, 6, 3, 7)
    assert sp["crossed"] == [7, 0, 0] and sp["share_partial"] == 7 / 16
    lv = stats["levels"]
    assert (lv[16]["tiles"], lv[16]["partial"], lv[16]["crossed"]) == (1, 1, [1, 0, 0])
    # 8x8 tiles: (0,0), (1,0), (0,1) PARTIAL (corner sums 0..16 / 8..24), (1,1) EMPTY.
    assert (lv[8]["tiles"], lv[8]["empty"], lv[8]["full"], lv[8]["partial"]) == (4, 1, 0, 3)
    # 4x4 inside the three partial 8x8 tiles: 3 full, 2 empty, 7 partial.
    assert (lv[4]["tiles"], lv[4]["empty"], lv[4]["full"], lv[4]["partial"]) == (12, 2, 3, 7)
    # 7 partial spans at 4x: ceil(16*7*4/256) = 2 clocks.
    assert stats["clocks"] == 2 and stats["partial_spans_histogram"][7] == 1
    assert "Table 3" in R.statistics_table(stats)
    # 8 lanes: ceil(7*4/8) = 4 clocks; 4 lanes: 7.
    assert R.span_statistics(tri, 64, 64, 4, lanes=8)["clocks"] == 4
    assert R.span_statistics(tri, 64, 64, 4, lanes=4)["clocks"] == 7


def test_block_clocks():
    """max(1, ceil(p*S/lanes)): the (span, sample) pairs of the PARTIAL spans, lanes a
    clock; at 16 lanes the seed's max(1, ceil(16*p*S/256))."""
    for p in range(17):
        for s in R.SAMPLE_COUNTS:
            assert R.block_clocks(p, s) == max(1, math.ceil(16 * p * s / 256))
            for lanes in (4, 8, 16):
                assert R.block_clocks(p, s, lanes) == max(1, math.ceil(p * s / lanes))
    assert R.block_clocks(np.array([0, 3, 16]), 16, 8).tolist() == [1, 6, 32]
    for lanes, error in ((12, ValueError), (32, ValueError), (8.0, TypeError)):
        with pytest.raises(error, match=r"lanes must be a power of two from 4 to 16"):
            R.block_clocks(1, 4, lanes)


def test_three_edges_in_one_span_hand_case():
    # (1,1),(3,1),(1,3): box 1..3, so only span 0 is in the box; all three edges cross
    # it. At 1x only pixel (1,1) is in: (2,1) and (1,2) have centres on the hypotenuse.
    tri = px((1, 1), (3, 1), (1, 3))
    stats = R.span_statistics(tri, 16, 16)
    sp = stats["spans"]
    assert (sp["empty"], sp["full"], sp["partial"], sp["crossed"]) == (15, 0, 1, [1, 1, 1])
    assert stats["levels"][16]["crossed"] == [1, 1, 1]
    (rec,) = R.block_records(tri, 16, 16)
    assert rec.mask_bits() == 1 << 5                 # span 0, pixel p = 4*1 + 1
    (pkt,) = R.pixel_packets(tri, 16, 16)
    assert (pkt.prim, pkt.bx, pkt.by, pkt.span, pkt.x, pkt.y) == (0, 0, 0, 0, 0, 0)
    assert (pkt.pixel_mask, pkt.sample_mask, pkt.full) == (1 << 5, 1 << 5, False)


@pytest.mark.parametrize("n", (1, 2, 4, 8, 16))
def test_mask_bit_order(n):
    # The pixel square (21, 38)-(22, 39): block (1, 2), span sx=1, sy=1 (k=5), pixel
    # px=1, py=2 (p=9); its top and left edges are top-left, so all n samples are in.
    quad = px((21, 38), (22, 38), (22, 39), (21, 39))
    (rec,) = R.block_records(quad, 64, 64, n)
    assert (rec.bx, rec.by) == (1, 2)
    assert rec.mask_bits() == ((1 << n) - 1) << ((16 * 5 + 9) * n)
    (pkt,) = R.pack_block(rec)
    assert (pkt.span, pkt.pixel_mask, pkt.x, pkt.y) == (5, 1 << 9, 20, 36)
    assert pkt.sample_mask == ((1 << n) - 1) << (9 * n) and pkt.pixel_samples(9) == (1 << n) - 1


def test_full_span_packet():
    # Exactly span 1 of block (0, 0). Its right edge x = 8 is not top-left, so the
    # span's corners at x = 8 fail it: the span is PARTIAL, yet every sample is in.
    quad = px((4, 0), (8, 0), (8, 4), (4, 4))
    (rec,) = R.block_records(quad, 16, 16, 4)
    assert rec.span_class.tolist() == [R.EMPTY, R.PARTIAL] + [R.EMPTY] * 14
    assert rec.edge_class[:, 1].tolist() == [R.FULL, R.PARTIAL, R.PARTIAL, R.FULL]
    (pkt,) = R.pack_block(rec)
    assert (pkt.span, pkt.pixel_mask, pkt.sample_mask, pkt.full) == (1, 0xFFFF, 2**64 - 1, True)


def test_lo16_and_corners():
    tri = px((3.25, 5.5), (40.75, 9), (12, 44.125))
    st = R.setup(tri, 64, 64)
    for rec in R.block_records(tri, 64, 64):
        cx, cy = (16 * rec.bx + 8) * U, (16 * rec.by + 8) * U
        for e in range(3):
            a, b = st.vertices[0, e], st.vertices[0, (e + 1) % 3]
            E = (b[0] - a[0]) * (cy - a[1]) - (b[1] - a[1]) * (cx - a[0])
            assert rec.lo16[e] == E
            off = rec.corners[e] - rec.lo16[e]
            assert (off == -off[::-1]).all() and off[12] == 0       # lo_i = -lo_(24-i)
            assert off[0] == -8 * U * (rec.A[e] + rec.B[e])         # lo0 = -8lx - 8ly
            assert off[1] == -4 * U * rec.A[e] - 8 * U * rec.B[e]   # lo1 = -4lx - 8ly


@pytest.mark.parametrize("n", (1, 4, 16))
def test_block_masks_equal_brute_force(n):
    W, H = 72, 56
    for v in (np.concatenate([S.random_triangles(W, H, 40, seed=n, max_size=40),
                              S.slivers(W, H, 10, seed=n)]),
              S.wide_lines(W, H, 15, seed=n)):
        recs = R.block_records(v, W, H, n, scissor=(2, 3, 70, 50))
        cnt = np.zeros((H + 16, W + 16, n), dtype=np.int32)
        st = R.setup(v, W, H, scissor=(2, 3, 70, 50))
        spos = np.array(D3D11_PATTERNS[n]) * 16 + 128
        for r in recs:
            y, x = 16 * r.by, 16 * r.bx
            cnt[y:y + 16, x:x + 16] += r.mask
            # The block rasterizer's span arithmetic gives the brute-force result.
            edge, comb, mask = R.rasterize_block(r.A, r.B, r.lo16, r.bias, r.bbox,
                                                 r.bx, r.by, n)
            assert (edge == r.edge_class).all() and (comb == r.span_class).all()
            assert (mask == r.mask).all()
            # Per-edge classes are conservative: FULL spans pass the edge at every
            # sample, EMPTY spans (inside the box) at none.
            X = ((x + np.arange(16)) * U)[None, :, None] + spos[:, 0]
            Y = ((y + np.arange(16)) * U)[:, None, None] + spos[:, 1]
            for e in range(v.shape[1]):
                ok = st.A[r.prim, e] * X + st.B[r.prim, e] * Y + st.C[r.prim, e] \
                    >= st.bias[r.prim, e]
                ok = ok.reshape(4, 4, 4, 4, n).transpose(0, 2, 1, 3, 4).reshape(16, -1)
                assert ok[r.edge_class[e] == R.FULL].all()
                inbox = r.edge_class[e] == R.EMPTY
                xs = x + 4 * (np.arange(16) % 4)
                ys = y + 4 * (np.arange(16) // 4)
                inbox &= (xs + 3 >= r.bbox[0]) & (xs <= r.bbox[2]) & \
                    (ys + 3 >= r.bbox[1]) & (ys <= r.bbox[3])
                assert not ok[inbox].any()
            for k in range(16):
                if r.span_class[k] == R.EMPTY:
                    assert not r.span_mask(k).any()
        assert (cnt[:H, :W] == R.coverage_count(v, W, H, n, scissor=(2, 3, 70, 50))).all()
        assert not cnt[H:].any() and not cnt[:, W:].any()
        packets = R.pixel_packets(v, W, H, n, scissor=(2, 3, 70, 50))
        assert sum(bin(p.sample_mask).count("1") for p in packets) == cnt.sum()
        assert all(p.pixel_mask for p in packets)


def test_traversal_order_and_skip():
    tri = px((2, 2), (60, 10), (20, 50))
    recs = R.block_records(tri, 64, 64)
    keys = [(r.by, r.bx) for r in recs]
    assert keys == sorted(keys)
    stats = R.span_statistics(tri, 64, 64)
    assert stats["blocks"] == len(recs) and stats["blocks"] + stats["skipped_blocks"] == 16
    # Every skipped block has a clear coverage hole.
    cov = R.coverage(tri, 64, 64)
    visited = {(r.bx, r.by) for r in recs}
    for by in range(4):
        for bx in range(4):
            if (bx, by) not in visited:
                assert not cov[16 * by:16 * by + 16, 16 * bx:16 * bx + 16].any()


def test_quads():
    # Rectangle with edges through centres: left/top in, right/bottom out: 4 x 2 pixels.
    rect = px((0.5, 0.5), (4.5, 0.5), (4.5, 2.5), (0.5, 2.5))
    cov = R.coverage(rect, 8, 8)[..., 0]
    assert cov.sum() == 8 and cov[0:2, 0:4].all()
    assert R.coverage(rect[:, ::-1], 8, 8)[..., 0].sum() == 8        # other winding
    # Two rectangles sharing an edge: every sample exactly once.
    two = np.concatenate([px((0, 0), (3.5, 0), (3.5, 8), (0, 8)),
                          px((3.5, 0), (8, 0), (8, 8), (3.5, 8))])
    for n in MODES:
        assert (R.coverage_count(two, 8, 8, n) == 1).all()
    # A quad with a repeated vertex is the triangle it degenerates to.
    tri = px((1, 1), (9, 2), (3, 7.5))
    deg = px((1, 1), (9, 2), (9, 2), (3, 7.5))
    for n in (1, 16):
        assert (R.coverage(deg, 16, 16, n) == R.coverage(tri, 16, 16, n)).all()


def test_coverage_ids_paint_in_order():
    v = np.concatenate([px((0, 0), (8, 0), (0, 8)), px((0, 0), (8, 0), (8, 8))])
    ids = R.coverage_ids(v, 8, 8)[..., 0]
    assert ids[0, 7] == 1 and ids[6, 0] == 0 and ids[0, 0] == 1 and ids[7, 3] == -1


def test_scenes_are_deterministic():
    for name in S.SCENES:
        a = S.scene(name, 64, 48, 20, seed=11)
        b = S.scene(name, 64, 48, 20, seed=11)
        c = S.scene(name, 64, 48, 20, seed=12)
        assert a.dtype == np.int64 and (a == b).all() and not np.array_equal(a, c)
        assert a.shape[1:] == ((4, 2) if name == "lines" else (3, 2))


def test_benchmark_smoke():
    r = R.benchmark_coverage(64, 64, 100, samples=4, repeat=1)
    assert r["triangles"] == 100 and r["covered_samples"] == 64 * 64 * 4
    assert r["frame_samples_per_s"] > 0 and r["tested_samples_per_s"] >= r["frame_samples_per_s"]


def test_other_fixed_point_formats():
    # 8.4 fixed point: one pixel = 16 units; the right triangle of legs 8 is 28 pixels.
    tri = np.array([[[0, 0], [8 * 16, 0], [0, 8 * 16]]])
    assert R.coverage(tri, 16, 16, subpix=4, int_bits=8).sum() == 28
    assert R.sample_positions(4, subpix=4).tolist() == [[6, 2], [14, 6], [2, 10], [10, 14]]
    with pytest.raises(ValueError, match=r"vertices must lie in 0\.\.4095"):
        R.coverage(np.array([[[0, 0], [4096, 0], [0, 16]]]), 16, 16, subpix=4, int_bits=8)
    with pytest.raises(ValueError, match=r"width must be an integer from 1 to 256, not 300"):
        R.coverage(tri, 300, 16, subpix=4, int_bits=8)


def test_input_forms():
    one = [[0, 0], [8 * U, 0], [0, 8 * U]]                 # a single (3, 2) primitive
    cov = R.coverage(one, 16, 8)
    assert cov.shape == (8, 16, 1) and cov.dtype == bool and cov.sum() == 28
    assert not R.coverage(np.zeros((0, 3, 2), dtype=np.int64), 16, 8, 4).any()
    assert R.span_statistics(np.zeros((0, 4, 2), dtype=np.int64), 16, 8)["blocks"] == 0


def test_statistics_invariants():
    v = S.random_triangles(160, 96, 60, seed=9, max_size=60)
    st = R.span_statistics(v, 160, 96, 8)
    lv = st["levels"]
    for L in R.LEVELS:
        c = lv[L]
        assert c["empty"] + c["full"] + c["partial"] == c["tiles"]
        assert c["crossed"][0] == c["partial"] and c["crossed"] == sorted(c["crossed"])[::-1]
    for L in (16, 8, 4, 2):
        assert lv[L // 2]["tiles"] == 4 * lv[L]["partial"]
    assert lv[16]["tiles"] == st["blocks"] and st["spans"]["tiles"] == 16 * st["blocks"]
    assert sum(st["partial_spans_histogram"]) == st["blocks"]
    recs = R.block_records(v, 160, 96, 8)
    assert len(recs) == st["blocks"]
    assert sum((r.span_class == R.PARTIAL).sum() for r in recs) == st["spans"]["partial"]
    p = [int((r.span_class == R.PARTIAL).sum()) for r in recs]
    assert st["clocks"] == sum(max(1, -(-16 * k * 8 // 256)) for k in p)


def test_edge_values_fit_42_bits():
    # Vertices at the ends of the 12.8 range, blocks at the far corner of a 4096 frame.
    top = 2**20 - 1
    v = np.array([[[0, 0], [top, 0], [0, top]], [[top, 0], [top, top], [0, top]]])
    recs = R.block_records(v, 4096, 16, scissor=(4064, 0, 4096, 16))
    assert len(recs) == 4
    st = R.setup(v, 4096, 16)
    for r in recs:
        assert np.abs(r.corners).max() < 2**41 and np.abs(r.lo16).max() < 2**41
    assert np.abs(st.C).max() < 2**41 and np.abs(st.A).max() < 2**20


# ---------------------------------------------------------------- hierarchical model

def _blocks_of(tris, samples, size=64):
    return R.block_records(np.array(tris, dtype=np.int64), size, size, samples)


def test_hierarchical_full_blocks_one_item_each():
    """Blocks deep inside a primitive are FULL at 8x8: one item each, one a clock, so
    n blocks take n - 1 + 21 clocks."""
    big = [[(0, 0), (4095 * U, 0), (0, 4095 * U)]]
    recs = [r for r in R.block_records(np.array(big, dtype=np.int64), 64, 64, 1)
            if (r.span_class == R.FULL).all()]
    assert len(recs) >= 6
    h = R.hierarchical_model(recs, 1)
    assert h["items"] == len(recs) and h["items_per_level"] == [len(recs), 0, 0, 0]
    assert h["clocks"] == len(recs) - 1 + R.HIERARCHICAL_STAGES
    assert h["pixels_per_clock"] == 256 * len(recs) / h["clocks"]


def test_hierarchical_one_level_per_pass():
    """A triangle whose edge crosses one block: the pass count sets the time -- the
    block, then its partial 8x8s, 4x4s and 2x2s each one pass (21 clocks) later; the
    2x2 pass costs ``samples`` items per tile."""
    tri = [[(3 * U + 7, 2 * U + 3), (14 * U + 1, 5 * U + 9), (6 * U + 5, 13 * U + 11)]]
    for samples in (1, 4):
        recs = _blocks_of(tri, samples, 16)
        assert len(recs) == 1
        st = R.span_statistics(np.array(tri, dtype=np.int64), 16, 16, samples)
        p8, p4, p2 = (st["levels"][L]["partial"] for L in (8, 4, 2))
        h = R.hierarchical_model(recs, samples)
        assert h["items_per_level"] == [1, p8, p4, p2 * samples]
        # The last 2x2 item enters 3 passes after the block, after the other 2x2 items.
        assert h["clocks"] == 3 * R.HIERARCHICAL_STAGES + p2 * samples - 1 + \
            R.HIERARCHICAL_STAGES


def test_hierarchical_counts_match_statistics():
    """Over a scene, the items per level are the hierarchical statistics' PARTIAL tiles."""
    v = S.random_triangles(96, 96, 30, 5)
    recs = R.block_records(v, 96, 96, 2)
    st = R.span_statistics(v, 96, 96, 2)
    h = R.hierarchical_model(recs, 2)
    assert h["items_per_level"] == [st["blocks"], st["levels"][8]["partial"],
                                    st["levels"][4]["partial"], 2 * st["levels"][2]["partial"]]
    assert h["clocks"] >= h["items"]


def test_hierarchical_parameter_errors():
    with pytest.raises(ValueError, match="samples must be one of 1, 2, 4, 8, 16, not 3"):
        R.hierarchical_model([], 3)
    with pytest.raises(ValueError, match="stages must be an integer from 1 to 1000, not 0"):
        R.hierarchical_model([], 1, stages=0)
    assert R.hierarchical_model([], 1)["clocks"] == 0
