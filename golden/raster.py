"""Golden model of the rasterizer: setup, block traversal, the 16x16 span-parallel block
rasterizer, the pixel packer and the span statistics (spec ``raster.md``, seed
``003_dd601b59566f8949``).

Transaction level and timing-free, numpy-vectorised. Whole-frame coverage is computed by
brute force: every sample of every primitive's bounding box is tested with its exact
integer edge functions, with no spans, so the RTL's span shortcut is checked against it.
:func:`rasterize_block` separately models the block rasterizer's own arithmetic (25 span
corners, ``lo16 + lo4x4 + lo_pixel + lo_msaa``) from the block's inputs; the tests check
that it equals the brute force.

Public API
----------
* :func:`coverage`, :func:`coverage_count`, :func:`coverage_ids` -- a whole frame, per
  sample, shape ``(height, width, samples)``.
* :func:`setup` -- per primitive edge coefficients, top-left flags, bounding box, culling.
* :func:`block_records` -- block traversal plus block rasterizer: one
  :class:`BlockRecord` per visited 16x16 block (inputs and outputs of the RTL block).
* :func:`rasterize_block` -- the block rasterizer on one block's inputs.
* :func:`pixel_packets`, :func:`pack_block` -- the pixel packer (:class:`PixelPacket`).
* :func:`span_statistics`, :func:`statistics_table` -- the seed's Tables 2-3.
* :func:`snap` -- float pixel coordinates to fixed point; scenes are in ``golden.scenes``.
* :func:`sample_offsets`, :func:`sample_positions`, :func:`corner_offsets`.
* :func:`benchmark_coverage` -- samples per second of :func:`coverage`.

Numbers (all exact integers)
----------------------------
* A coordinate is an unsigned fixed-point number with ``subpix`` (default 8) fractional
  and ``int_bits`` (default 12) integer bits: unit ``2**-subpix`` pixel ("subpixel").
  Vertices must lie in ``0 .. 2**(int_bits + subpix) - 1``; the frame is at most
  ``2**int_bits`` pixels wide and high. x grows to the right, y downwards; pixel
  ``(i, j)`` covers ``[i, i+1) x [j, j+1)``.
* Sample ``s`` of pixel ``(i, j)`` is at ``(i << subpix) + h + (ox_s << (subpix - 4))``
  (and likewise in y), ``h = 1 << (subpix - 1)`` the pixel centre and ``(ox_s, oy_s)`` the
  standard D3D11/Vulkan offset in 1/16 pixel (:func:`sample_offsets`). Samples lie in
  the half-open pixel square, so in the closed square of any span or block holding it.
* Edge ``e`` of a primitive runs from oriented vertex ``e`` to vertex ``(e+1) mod k``
  (``k`` = 3 or 4). With ``dx, dy`` its vector and ``a`` its start,
  ``E(P) = A*P.x + B*P.y + C`` with ``A = -dy``, ``B = dx``, ``C = dy*a.x - dx*a.y``,
  P in subpixels (so E is in ``2**-2subpix`` pixel**2). The edge is *top-left*
  (``topleft``, ``bias = 0``) when ``dy < 0`` or (``dy == 0`` and ``dx > 0``), else
  ``bias = 1``. A sample is covered by the edge iff ``E - bias >= 0``.
* A sample is covered by the primitive iff every edge covers it and its pixel lies in
  the primitive's clipped bounding box.
* Magnitudes: ``|A|, |B| < 2**(int_bits+subpix)`` (21-bit signed at the defaults) and
  every edge value the model or the RTL forms (``C``, ``lo16``, corners, samples) fits a
  signed ``2*(int_bits+subpix) + 2``-bit integer (42 bits at the defaults).

Decisions where the spec is open
--------------------------------
1. **Orientation and facing.** ``area2 = (b-a) x (c-a)`` for a triangle and
   ``(c-a) x (d-b)`` (twice the shoelace area) for a quad, with
   ``u x v = u.x*v.y - u.y*v.x`` on the input vertex order. ``area2 > 0`` is clockwise
   on the screen (y down) and is front-facing, as D3D11's default
   ``FrontCounterClockwise = FALSE``; ``front_ccw=True`` swaps that. A primitive with
   ``area2 < 0`` is oriented by reversing its vertex order *keeping vertex 0 first*
   (``v0, v2, v1`` and ``v0, v3, v2, v1``), so edge 0 always starts at input vertex 0.
   ``area2 == 0`` is culled (zero area); with ``cull_back`` the back faces are culled.
2. **4-edge primitives** are given by 4 vertices in order (a convex quad: a rectangle
   or a wide line; :func:`golden.scenes.line_quad` turns a line of width w into one
   before snapping -- the hardware setup takes the 4 vertices). The primitive is the
   intersection of its 4 oriented half-planes and its bounding box, whatever its shape.
   A zero-length edge (repeated vertex) gets ``A = B = C = 0`` and ``bias = 0``: it
   covers everything, so a quad with a repeated vertex is the triangle it degenerates
   to. One call takes primitives of one kind: ``vertices`` of shape ``(n, 3, 2)`` or
   ``(n, 4, 2)`` (a single ``(3, 2)``/``(4, 2)`` primitive is accepted as ``n = 1``).
3. **Bounding box** in pixels, inclusive: ``x0 = min(x) >> subpix``,
   ``x1 = max(x) >> subpix`` (likewise y) -- every pixel that can hold a covered sample
   in any MSAA mode -- clipped to the frame and to the scissor. ``scissor`` is
   ``(left, top, right, bottom)`` in pixels with ``right``/``bottom`` exclusive (D3D11
   ``RECT``), ``0 <= left <= right <= width``, ``0 <= top <= bottom <= height``;
   ``None`` is the whole frame. A primitive whose clipped box is empty is culled
   (``CULL_OUTSIDE``); cull codes are ``CULL_NONE, CULL_ZERO_AREA, CULL_BACK_FACE,
   CULL_OUTSIDE`` = 0, 1, 2, 3, in that precedence.
4. **Block traversal** visits, per primitive in input order, the 16x16 blocks (block
   ``(bx, by)`` holds pixels ``16*bx .. 16*bx+15``) that the clipped box touches, row by
   row (``by`` outer, ``bx`` inner), and skips a block when some edge has
   ``E - bias < 0`` at all four corners of the block's closed square. ``lo16`` is
   E (unbiased) at the block centre ``(16*bx + 8, 16*by + 8)`` pixels, a pixel corner.
5. **Span classes.** Span ``k = 4*sy + sx`` (``sx, sy`` in 0..3) holds pixels
   ``16*bx + 4*sx .. +3`` by ``16*by + 4*sy .. +3``. Its four corners are the 25-point
   lattice entries ``5*sy + sx, +1, +5, +6``, lattice entry ``5*r + c`` at offset
   ``(4*(c-2), 4*(r-2))`` pixels from the block centre (the seed's ``lo0 .. lo24``).
   Per edge: EMPTY (0) when no pixel of the span is in the clipped box, or
   ``E - bias < 0`` at all four corners; FULL (1) when ``E - bias >= 0`` at all four;
   else PARTIAL (2). Combined: EMPTY if any edge is EMPTY, FULL if every edge is FULL,
   else PARTIAL (no edge empty, at least one partial: the spans that need sample
   evaluation). A combined-FULL span can still be cut by the pixel-level box/scissor
   mask; a PARTIAL span can turn out all-zero or all-one.
6. **Block record** (:class:`BlockRecord`, :meth:`BlockRecord.pack`): the mask is
   span-major, bit ``(16*k + p) * samples + s`` for span ``k``, pixel ``p = 4*py + px``
   inside the span, sample ``s`` in the standard order; per-edge and combined classes
   are two 16-bit vectors each (``full``, ``partial``; EMPTY = neither), bit ``k`` =
   span ``k``. Every traversed block gets a record, even if its mask is all zero.
7. **Pixel packets**: per block record, one packet per span with at least one covered
   sample, spans in order ``k = 0..15``: primitive, block, span, 16-bit pixel mask
   (bit ``p`` set when pixel ``p`` has a covered sample), the ``16*samples``-bit sample
   mask (bit ``p*samples + s``, the block mask's slice for the span) and ``full`` (all
   ``16*samples`` samples covered).
8. **Statistics.** Tables 2-3 count tiles of the visited blocks: a tile at level L
   (16, 8, 4, 2, 1 pixels) is classified like a span, from the edge values at its four
   corners. Table 2 ("hierarchical") evaluates level 16 for every visited block and
   level L/2 only inside level-L tiles whose combined class is PARTIAL; Table 3
   ("spans") evaluates all sixteen 4x4 spans of every visited block. A tile is
   "crossed by >= m edges" when it is combined PARTIAL and at least m edges are
   PARTIAL on it; the seed's "1 edge / 2 edges / 3 edges" rows are these cumulative
   counts ("1 edge" equals "partial"). The block rasterizer's cost
   (:func:`block_clocks`) is ``max(1, ceil(p * samples / lanes))`` clocks for a block
   with p PARTIAL spans and ``lanes`` 16-pixel lanes per edge: the (span, sample) pairs
   of its PARTIAL spans, ``lanes`` of them a clock. With the default 16 lanes this is
   ``max(1, ceil(16 * p * samples / 256))``, the seed's; a build with 16 lanes tests
   every span at 1x in its one clock, FULL and EMPTY spans included, so the formula
   holds there too.
"""

import math
import time
from dataclasses import dataclass

import numpy as np

from golden.params import check_int

__all__ = [
    "SUBPIX", "INT_BITS", "SAMPLE_COUNTS", "EMPTY", "FULL", "PARTIAL",
    "CULL_NONE", "CULL_ZERO_AREA", "CULL_BACK_FACE", "CULL_OUTSIDE",
    "sample_offsets", "sample_positions", "corner_offsets", "snap",
    "Setup", "setup", "coverage", "coverage_count", "coverage_ids",
    "BlockRecord", "block_records", "rasterize_block",
    "PixelPacket", "pack_block", "pixel_packets",
    "block_clocks", "span_statistics", "statistics_table", "benchmark_coverage",
    "HIERARCHICAL_STAGES", "hierarchical_model",
]

SUBPIX = 8
INT_BITS = 12
BLOCK = 16
SPAN = 4
SAMPLE_COUNTS = (1, 2, 4, 8, 16)
EMPTY, FULL, PARTIAL = 0, 1, 2
CULL_NONE, CULL_ZERO_AREA, CULL_BACK_FACE, CULL_OUTSIDE = 0, 1, 2, 3
LEVELS = (16, 8, 4, 2, 1)

# Standard D3D11 / Vulkan sample offsets from the pixel centre, 1/16 pixel, (x, y), y down.
_PATTERNS = {
    1: ((0, 0),),
    2: ((4, 4), (-4, -4)),
    4: ((-2, -6), (6, -2), (-6, 2), (2, 6)),
    8: ((1, -3), (-1, 3), (5, 1), (-3, -5), (-5, 5), (-7, -1), (3, 7), (7, -7)),
    16: ((1, 1), (-1, -3), (-3, 2), (4, -1), (-5, -2), (2, 5), (5, 3), (3, -5),
         (-2, 6), (0, -7), (-4, -6), (-6, 4), (-8, 0), (7, -4), (6, 7), (-7, -8)),
}

# Corner lattice indices of span k (4*sy + sx): top-left, top-right, bottom-left, bottom-right.
_SPAN_CORNERS = np.array([[5 * sy + sx, 5 * sy + sx + 1, 5 * sy + sx + 5, 5 * sy + sx + 6]
                          for sy in range(4) for sx in range(4)])
_BLOCK_CORNERS = np.array([0, 4, 20, 24])
_CHUNK = 1 << 20          # elements per vectorised evaluation chunk


# ------------------------------------------------------------------ parameter checks


def _check_bool(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return bool(value)


def _check_samples(samples):
    if isinstance(samples, (bool, np.bool_)) or not isinstance(samples, (int, np.integer)):
        raise TypeError(f"samples must be an int, not {type(samples).__name__}")
    if samples not in SAMPLE_COUNTS:
        raise ValueError(f"samples must be one of {', '.join(map(str, SAMPLE_COUNTS))}, "
                         f"not {samples}")
    return int(samples)


def _check_format(subpix, int_bits):
    subpix = check_int("subpix", subpix, 4, 12)
    int_bits = check_int("int_bits", int_bits, 4, 16)
    return subpix, int_bits


@dataclass(frozen=True)
class _Config:
    width: int
    height: int
    samples: int
    scissor: tuple
    cull_back: bool
    front_ccw: bool
    subpix: int
    int_bits: int


def _config(width, height, samples=1, scissor=None, cull_back=False, front_ccw=False,
            subpix=SUBPIX, int_bits=INT_BITS):
    subpix, int_bits = _check_format(subpix, int_bits)
    width = check_int("width", width, 1, 1 << int_bits)
    height = check_int("height", height, 1, 1 << int_bits)
    samples = _check_samples(samples)
    cull_back = _check_bool("cull_back", cull_back)
    front_ccw = _check_bool("front_ccw", front_ccw)
    if scissor is None:
        scissor = (0, 0, width, height)
    else:
        try:
            items = tuple(scissor)
        except TypeError:
            raise TypeError(f"scissor must be None or (left, top, right, bottom), "
                            f"not {type(scissor).__name__}") from None
        if len(items) != 4:
            raise ValueError(f"scissor must be (left, top, right, bottom), not {items!r}")
        left = check_int("scissor left", items[0], 0, width)
        top = check_int("scissor top", items[1], 0, height)
        right = check_int("scissor right", items[2], left, width)
        bottom = check_int("scissor bottom", items[3], top, height)
        scissor = (left, top, right, bottom)
    return _Config(width, height, samples, scissor, cull_back, front_ccw, subpix, int_bits)


def _check_vertices(vertices, subpix=SUBPIX, int_bits=INT_BITS):
    v = np.asarray(vertices)
    if v.ndim == 2 and v.shape in ((3, 2), (4, 2)):
        v = v[None]
    if v.ndim != 3 or v.shape[1] not in (3, 4) or v.shape[2] != 2:
        raise ValueError(f"vertices must have shape (n, 3, 2) or (n, 4, 2), not {v.shape}")
    if v.size and (v.dtype == np.bool_ or not np.issubdtype(v.dtype, np.integer)):
        raise TypeError(f"vertices must be integers in {int_bits}.{subpix} fixed point "
                        f"(use snap() for float coordinates), not {v.dtype}")
    top = (1 << (int_bits + subpix)) - 1
    if v.size and (v.min() < 0 or v.max() > top):
        bad = v.min() if v.min() < 0 else v.max()
        raise ValueError(f"vertices must lie in 0..{top} (unsigned {int_bits}.{subpix} fixed "
                         f"point), not {bad}")
    return v.astype(np.int64)


# ------------------------------------------------------------------ sample patterns

def sample_offsets(samples):
    """Standard D3D11/Vulkan sample offsets from the pixel centre.

    Parameters
    ----------
    samples : int
        1, 2, 4, 8 or 16.

    Returns
    -------
    numpy.ndarray
        ``(samples, 2)`` int64, ``(x, y)`` in 1/16 pixel, y down, in sample order.
    """
    return np.array(_PATTERNS[_check_samples(samples)], dtype=np.int64)


def sample_positions(samples, subpix=SUBPIX):
    """Sample positions relative to the pixel's top-left corner, in subpixels.

    Returns
    -------
    numpy.ndarray
        ``(samples, 2)`` int64: ``(1 << (subpix-1)) + (offset << (subpix-4))``.
    """
    subpix = check_int("subpix", subpix, 4, 12)
    return (1 << (subpix - 1)) + (sample_offsets(samples) << (subpix - 4))


def corner_offsets(A, B, subpix=SUBPIX):
    """Edge value offsets of the 25 span corners from the block centre.

    Parameters
    ----------
    A, B : array_like of int
        Edge coefficients, shape ``(E,)``.

    Returns
    -------
    numpy.ndarray
        ``(E, 25)`` int64; entry ``5*r + c`` is ``A*dx + B*dy`` for
        ``(dx, dy) = (4*(c-2), 4*(r-2))`` pixels in subpixels, so that
        ``lo_i = -lo_(24-i)`` as in the seed.
    """
    A = np.asarray(A, dtype=np.int64).reshape(-1, 1)
    B = np.asarray(B, dtype=np.int64).reshape(-1, 1)
    step = np.arange(-2, 3, dtype=np.int64) * (4 << subpix)
    cx = np.tile(step, 5)
    cy = np.repeat(step, 5)
    return A * cx + B * cy


# ------------------------------------------------------------------ snapping

def snap(coords, subpix=SUBPIX, int_bits=INT_BITS):
    """Snap float pixel coordinates to fixed point, round to nearest, ties to even.

    Parameters
    ----------
    coords : array_like of float
        Coordinates in pixels, any shape.
    subpix, int_bits : int
        The fixed-point format (default 12.8).

    Returns
    -------
    numpy.ndarray
        int64 array of the same shape, in ``2**-subpix`` pixel units.

    Raises
    ------
    ValueError
        If a coordinate is not finite or falls outside ``0 .. 2**(int_bits+subpix) - 1``
        after snapping.
    """
    subpix, int_bits = _check_format(subpix, int_bits)
    c = np.asarray(coords, dtype=np.float64)
    if not np.all(np.isfinite(c)):
        raise ValueError("coords must be finite")
    q = np.rint(c * (1 << subpix))          # exact scaling; rint rounds ties to even
    top = (1 << (int_bits + subpix)) - 1
    if q.size and (q.min() < 0 or q.max() > top):
        bad = q.min() if q.min() < 0 else q.max()
        raise ValueError(f"coords must snap into 0..{top} (0 .. {top / (1 << subpix)} "
                         f"pixels), not {bad / (1 << subpix)}")
    return q.astype(np.int64)


# ------------------------------------------------------------------ setup

@dataclass(frozen=True, eq=False)
class Setup:
    """Per-primitive results of triangle setup (arrays over the n primitives).

    Attributes
    ----------
    vertices : numpy.ndarray
        ``(n, k, 2)`` oriented vertices (positive area), subpixels.
    A, B, C : numpy.ndarray
        ``(n, k)`` int64 edge coefficients, edge e from vertex e to vertex e+1.
    topleft : numpy.ndarray
        ``(n, k)`` bool, the edge is top or left (or has zero length).
    bias : numpy.ndarray
        ``(n, k)`` int64, ``1 - topleft``.
    area2 : numpy.ndarray
        ``(n,)`` int64 signed doubled area of the input vertex order.
    flipped : numpy.ndarray
        ``(n,)`` bool, the vertex order was reversed (``area2 < 0``).
    bbox : numpy.ndarray
        ``(n, 4)`` int64 ``x0, y0, x1, y1`` inclusive pixels, clipped to the frame and
        scissor (``x0 > x1`` or ``y0 > y1`` when empty).
    cull : numpy.ndarray
        ``(n,)`` int8 cull code (``CULL_*``).
    config
        The validated parameters (frame, samples, scissor, culling, format).
    """
    vertices: np.ndarray
    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    topleft: np.ndarray
    bias: np.ndarray
    area2: np.ndarray
    flipped: np.ndarray
    bbox: np.ndarray
    cull: np.ndarray
    config: _Config

    @property
    def n(self):
        """Number of primitives."""
        return self.vertices.shape[0]

    @property
    def n_edges(self):
        """Edges per primitive (3 or 4)."""
        return self.vertices.shape[1]

    @property
    def live(self):
        """Indices of the primitives that are not culled."""
        return np.nonzero(self.cull == CULL_NONE)[0]


def _setup(v, cfg):
    n, k = v.shape[:2]
    x, y = v[..., 0], v[..., 1]
    if k == 3:      # (b - a) x (c - a)
        u, w = v[:, 1] - v[:, 0], v[:, 2] - v[:, 0]
        order = np.array([0, 2, 1])
    else:           # (c - a) x (d - b), twice the shoelace area
        u, w = v[:, 2] - v[:, 0], v[:, 3] - v[:, 1]
        order = np.array([0, 3, 2, 1])
    area2 = u[:, 0] * w[:, 1] - u[:, 1] * w[:, 0]
    flipped = area2 < 0
    ov = np.where(flipped[:, None, None], v[:, order], v)
    a = ov
    b = np.roll(ov, -1, axis=1)
    dx = b[..., 0] - a[..., 0]
    dy = b[..., 1] - a[..., 1]
    A = -dy
    B = dx.copy()
    C = dy * a[..., 0] - dx * a[..., 1]
    zero_len = (dx == 0) & (dy == 0)
    topleft = (dy < 0) | ((dy == 0) & (dx > 0)) | zero_len
    bias = (~topleft).astype(np.int64)
    s = cfg.subpix
    left, top, right, bottom = cfg.scissor
    bbox = np.stack([np.maximum(x.min(axis=1) >> s, left),
                     np.maximum(y.min(axis=1) >> s, top),
                     np.minimum(x.max(axis=1) >> s, right - 1),
                     np.minimum(y.max(axis=1) >> s, bottom - 1)], axis=1) if n else \
        np.zeros((0, 4), dtype=np.int64)
    cull = np.zeros(n, dtype=np.int8)
    outside = (bbox[:, 0] > bbox[:, 2]) | (bbox[:, 1] > bbox[:, 3])
    cull[outside] = CULL_OUTSIDE
    if cfg.cull_back:
        back = area2 > 0 if cfg.front_ccw else area2 < 0
        cull[back] = CULL_BACK_FACE
    cull[area2 == 0] = CULL_ZERO_AREA
    return Setup(ov, A, B, C, topleft, bias, area2, flipped, bbox.astype(np.int64), cull, cfg)


def setup(vertices, width, height, scissor=None, cull_back=False, *, front_ccw=False,
          subpix=SUBPIX, int_bits=INT_BITS):
    """Triangle (and quad) setup.

    Parameters
    ----------
    vertices : array_like of int
        ``(n, 3, 2)`` or ``(n, 4, 2)`` vertex coordinates ``(x, y)`` in subpixels.
    width, height : int
        Frame size in pixels, ``1 .. 2**int_bits``.
    scissor : tuple of 4 int or None
        ``(left, top, right, bottom)`` pixels, right/bottom exclusive.
    cull_back : bool
        Cull back-facing primitives.
    front_ccw : bool
        Counter-clockwise on the screen is the front face (default: clockwise).
    subpix, int_bits : int
        Fixed-point format.

    Returns
    -------
    Setup
    """
    cfg = _config(width, height, 1, scissor, cull_back, front_ccw, subpix, int_bits)
    return _setup(_check_vertices(vertices, cfg.subpix, cfg.int_bits), cfg)


# ------------------------------------------------------------------ brute-force coverage

def _eval_rect(A, B, C, bias, x0, y0, bw, bh, xlo, xhi, ylo, yhi, spos, subpix):
    """Coverage of ``(K, bh, bw, S)`` samples: rectangles at ``(x0, y0)`` pixels.

    Every sample is tested directly: ``A*X + B*Y + C - bias >= 0`` for each edge, and the
    pixel must lie in ``[xlo, xhi] x [ylo, yhi]``.
    """
    px = x0[:, None] + np.arange(bw)                                   # (K, bw)
    py = y0[:, None] + np.arange(bh)                                   # (K, bh)
    X = (px << subpix)[:, :, None] + spos[:, 0]                        # (K, bw, S)
    Y = (py << subpix)[:, :, None] + spos[:, 1]                        # (K, bh, S)
    okx = (px >= xlo[:, None]) & (px <= xhi[:, None])
    oky = (py >= ylo[:, None]) & (py <= yhi[:, None])
    m = np.broadcast_to((oky[:, :, None] & okx[:, None, :])[..., None],
                        (len(x0), bh, bw, len(spos))).copy()
    for e in range(A.shape[1]):
        nex = -(A[:, e, None, None] * X)                               # -A*X
        ey = B[:, e, None, None] * Y + (C[:, e] - bias[:, e])[:, None, None]
        m &= ey[:, :, None, :] >= nex[:, None, :, :]
    return m


def _frame(vertices, cfg, mode):
    v = _check_vertices(vertices, cfg.subpix, cfg.int_bits)
    st = _setup(v, cfg)
    H, W, S = cfg.height, cfg.width, cfg.samples
    dtype = {"any": np.bool_, "count": np.int32, "id": np.int64}[mode]
    out = np.full(H * W * S, -1 if mode == "id" else 0, dtype=dtype)
    out3 = out.reshape(H, W, S)
    spos = sample_positions(S, cfg.subpix)
    live = st.live
    x0, y0, x1, y1 = st.bbox[live].T
    w, h = x1 - x0 + 1, y1 - y0 + 1
    tested = int(np.sum(w * h)) * S
    small = (w <= 64) & (h <= 64)
    # Small primitives: batched in buckets of equal padded box size.
    bw_all = np.maximum((w + 7) // 8 * 8, 8)
    bh_all = np.maximum((h + 7) // 8 * 8, 8)
    key = bh_all * 1024 + bw_all
    for kv in np.unique(key[small]):
        sel = np.nonzero(small & (key == kv))[0]
        bh, bw = int(kv // 1024), int(kv % 1024)
        step = max(1, _CHUNK // (bw * bh * S))
        for i in range(0, len(sel), step):
            idx = sel[i:i + step]
            p = live[idx]
            m = _eval_rect(st.A[p], st.B[p], st.C[p], st.bias[p], x0[idx], y0[idx], bw, bh,
                           x0[idx], x1[idx], y0[idx], y1[idx], spos, cfg.subpix)
            k, j, ii, s = np.nonzero(m)
            flat = ((y0[idx][k] + j) * W + x0[idx][k] + ii) * S + s
            if mode == "any":
                out[flat] = True
            elif mode == "count":
                np.add.at(out, flat, 1)
            else:
                np.maximum.at(out, flat, p[k])
    # Large primitives: one at a time, in bands of rows.
    for idx in np.nonzero(~small)[0]:
        p = live[idx:idx + 1]
        band = max(1, _CHUNK // (int(w[idx]) * S))
        for r0 in range(int(y0[idx]), int(y1[idx]) + 1, band):
            r1 = min(int(y1[idx]), r0 + band - 1)
            m = _eval_rect(st.A[p], st.B[p], st.C[p], st.bias[p], x0[idx:idx + 1],
                           np.array([r0]), int(w[idx]), r1 - r0 + 1, x0[idx:idx + 1],
                           x1[idx:idx + 1], y0[idx:idx + 1], y1[idx:idx + 1], spos,
                           cfg.subpix)[0]
            view = out3[r0:r1 + 1, x0[idx]:x1[idx] + 1]
            if mode == "any":
                view |= m
            elif mode == "count":
                view += m
            else:
                np.maximum(view, np.where(m, p[0], -1), out=view)
    return out3, tested


def coverage(vertices, width, height, samples=1, scissor=None, cull_back=False, *,
             front_ccw=False, subpix=SUBPIX, int_bits=INT_BITS):
    """Per-sample coverage of a frame by a list of primitives (brute force).

    Parameters
    ----------
    vertices : array_like of int
        ``(n, 3, 2)`` triangles or ``(n, 4, 2)`` quads, ``(x, y)`` in ``int_bits.subpix``
        fixed point (default 12.8), y down.
    width, height : int
        Frame size in pixels, ``1 .. 2**int_bits``.
    samples : int
        1, 2, 4, 8 or 16 samples per pixel, standard pattern.
    scissor : tuple of 4 int or None
        ``(left, top, right, bottom)`` pixels, right/bottom exclusive.
    cull_back : bool
        Cull back faces (front = clockwise on the screen unless ``front_ccw``).
    front_ccw : bool
        Counter-clockwise primitives are front-facing.
    subpix, int_bits : int
        Fixed-point format.

    Returns
    -------
    numpy.ndarray
        ``(height, width, samples)`` bool: covered by at least one primitive; the last
        axis in the order of :func:`sample_offsets`.
    """
    cfg = _config(width, height, samples, scissor, cull_back, front_ccw, subpix, int_bits)
    return _frame(vertices, cfg, "any")[0]


def coverage_count(vertices, width, height, samples=1, scissor=None, cull_back=False, *,
                   front_ccw=False, subpix=SUBPIX, int_bits=INT_BITS):
    """Like :func:`coverage`, but the number of primitives covering each sample (int32)."""
    cfg = _config(width, height, samples, scissor, cull_back, front_ccw, subpix, int_bits)
    return _frame(vertices, cfg, "count")[0]


def coverage_ids(vertices, width, height, samples=1, scissor=None, cull_back=False, *,
                 front_ccw=False, subpix=SUBPIX, int_bits=INT_BITS):
    """Like :func:`coverage`, but the index of the last primitive covering each sample
    (int64, -1 where none): the frame painted in input order."""
    cfg = _config(width, height, samples, scissor, cull_back, front_ccw, subpix, int_bits)
    return _frame(vertices, cfg, "id")[0]


# ------------------------------------------------------------------ traversal and blocks

def _candidate_blocks(st, prims):
    """All blocks touched by the clipped boxes of ``prims``, in traversal order."""
    bb = st.bbox[prims] >> 4
    nbx = bb[:, 2] - bb[:, 0] + 1
    nby = bb[:, 3] - bb[:, 1] + 1
    counts = nbx * nby
    prim = np.repeat(prims, counts)
    t = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    rn = np.repeat(nbx, counts)
    bx = np.repeat(bb[:, 0], counts) + t % rn
    by = np.repeat(bb[:, 1], counts) + t // rn
    return prim, bx, by


def _block_chunks(st, limit=1 << 15):
    """Yield ``(prim, bx, by)`` candidate blocks in traversal order, ``limit`` at a time."""
    live = st.live
    if not len(live):
        return
    bb = st.bbox[live] >> 4
    counts = (bb[:, 2] - bb[:, 0] + 1) * (bb[:, 3] - bb[:, 1] + 1)
    window = (np.cumsum(counts) - counts) // limit      # where each primitive starts
    for group in np.split(live, np.nonzero(np.diff(window))[0] + 1):
        prim, bx, by = _candidate_blocks(st, group)
        for i in range(0, len(prim), limit):
            yield prim[i:i + limit], bx[i:i + limit], by[i:i + limit]


def _classify(pos, axes):
    """EMPTY/FULL/PARTIAL from corner tests ``pos`` (bool), all/any over ``axes``."""
    full = pos.all(axis=axes)
    some = pos.any(axis=axes)
    return np.where(full, FULL, np.where(some, PARTIAL, EMPTY)).astype(np.uint8)


def _combine(edge_class, axis):
    """Combined class over edges on ``axis``."""
    empty = (edge_class == EMPTY).any(axis=axis)
    full = (edge_class == FULL).all(axis=axis)
    return np.where(empty, EMPTY, np.where(full, FULL, PARTIAL)).astype(np.uint8)


def _tile_outside(bx, by, bbox, L):
    """``(nb, n, n)`` bool: level-L tile (ty, tx) of each block has no pixel in the box."""
    n = BLOCK // L
    t = np.arange(n) * L
    xl = (bx * BLOCK)[:, None] + t
    yl = (by * BLOCK)[:, None] + t
    # A tile's pixels xl..xl+L-1 meet the box's x0..x1 iff max(xl, x0) <= min(xl+L-1, x1)
    # (which also makes every tile outside an empty box, x0 > x1).
    outx = np.maximum(xl, bbox[:, 0, None]) > np.minimum(xl + L - 1, bbox[:, 2, None])
    outy = np.maximum(yl, bbox[:, 1, None]) > np.minimum(yl + L - 1, bbox[:, 3, None])
    return outy[:, :, None] | outx[:, None, :]


def _traverse(st, prim, bx, by):
    """Traversal of candidate blocks: the visited ones with ``lo16`` and 25 corner values."""
    s = st.config.subpix
    xc = ((bx * BLOCK + 8) << s)[:, None]
    yc = ((by * BLOCK + 8) << s)[:, None]
    A, B, C, bias = st.A[prim], st.B[prim], st.C[prim], st.bias[prim]
    lo16 = A * xc + B * yc + C                                         # (nb, E)
    step = np.arange(-2, 3, dtype=np.int64) * (4 << s)
    corners = (lo16[:, :, None] + A[:, :, None] * np.tile(step, 5)
               + B[:, :, None] * np.repeat(step, 5))                  # (nb, E, 25)
    reject = ((corners[:, :, _BLOCK_CORNERS] - bias[:, :, None]) < 0).all(axis=2).any(axis=1)
    keep = ~reject
    return dict(prim=prim[keep], bx=bx[keep], by=by[keep], lo16=lo16[keep],
                corners=corners[keep], skipped=int(reject.sum()))


def _span_classes(corners, bias, bx, by, bbox):
    """Per-edge ``(nb, E, 16)`` and combined ``(nb, 16)`` span classes."""
    pos = (corners - bias[:, :, None]) >= 0                            # (nb, E, 25)
    edge = _classify(pos[:, :, _SPAN_CORNERS], axes=3)                # (nb, E, 16)
    outside = _tile_outside(bx, by, bbox, SPAN).reshape(len(bx), 16)
    edge[np.broadcast_to(outside[:, None, :], edge.shape)] = EMPTY
    return edge, _combine(edge, axis=1)


@dataclass(frozen=True, eq=False)
class BlockRecord:
    """One visited 16x16 block of one primitive: the block rasterizer's inputs and outputs.

    Attributes
    ----------
    prim, bx, by : int
        Primitive index and block position (pixels ``16*bx``, ``16*by``).
    samples : int
        Samples per pixel.
    A, B : numpy.ndarray
        ``(E,)`` edge coefficients (per-pixel steps are ``A << subpix``, ``B << subpix``).
    lo16 : numpy.ndarray
        ``(E,)`` E at the block centre, unbiased.
    bias : numpy.ndarray
        ``(E,)`` 0 for top-left edges, else 1.
    bbox : tuple
        Clipped box ``(x0, y0, x1, y1)``, inclusive pixels.
    corners : numpy.ndarray
        ``(E, 25)`` E (unbiased) at the 25 span corners, ``lo16 + corner_offsets``.
    edge_class : numpy.ndarray
        ``(E, 16)`` uint8 per-edge span classes.
    span_class : numpy.ndarray
        ``(16,)`` uint8 combined span classes.
    mask : numpy.ndarray
        ``(16, 16, samples)`` bool, ``[y, x, s]`` inside the block (brute force).
    """
    prim: int
    bx: int
    by: int
    samples: int
    A: np.ndarray
    B: np.ndarray
    lo16: np.ndarray
    bias: np.ndarray
    bbox: tuple
    corners: np.ndarray
    edge_class: np.ndarray
    span_class: np.ndarray
    mask: np.ndarray

    def mask_bits(self):
        """The mask as an int of ``256*samples`` bits, span-major (decision 6)."""
        return _mask_int(_span_major(self.mask))

    def span_mask(self, k):
        """``(4, 4, samples)`` bool mask of span ``k``, ``[py, px, s]``."""
        sy, sx = divmod(k, 4)
        return self.mask[4 * sy:4 * sy + 4, 4 * sx:4 * sx + 4]

    def pack(self):
        """The record as RTL-comparable integers.

        Returns
        -------
        dict
            ``prim, bx, by, bbox``; ``A, B, lo16, bias`` (lists over edges); ``edge_full,
            edge_partial`` (lists of 16-bit ints, bit k = span k); ``span_full,
            span_partial`` (16-bit ints); ``mask`` (``256*samples``-bit int).
        """
        return dict(prim=self.prim, bx=self.bx, by=self.by,
                    A=[int(x) for x in self.A], B=[int(x) for x in self.B], bbox=self.bbox,
                    lo16=[int(x) for x in self.lo16], bias=[int(x) for x in self.bias],
                    edge_full=[_bits16(c == FULL) for c in self.edge_class],
                    edge_partial=[_bits16(c == PARTIAL) for c in self.edge_class],
                    span_full=_bits16(self.span_class == FULL),
                    span_partial=_bits16(self.span_class == PARTIAL),
                    mask=self.mask_bits())


def _bits16(flags):
    return int(np.dot(np.asarray(flags, dtype=np.int64), 1 << np.arange(16)))


def _span_major(mask):
    """``(16, 16, S)`` [y, x, s] -> flat span-major bit order."""
    S = mask.shape[-1]
    return mask.reshape(4, 4, 4, 4, S).transpose(0, 2, 1, 3, 4).reshape(-1)


def _mask_int(flat):
    return int.from_bytes(np.packbits(flat.astype(np.uint8), bitorder="little").tobytes(),
                          "little")


def _block_masks(st, prim, bx, by, spos):
    """Brute-force ``(nb, 16, 16, S)`` masks of blocks."""
    out = np.zeros((len(prim), BLOCK, BLOCK, len(spos)), dtype=bool)
    step = max(1, _CHUNK // (BLOCK * BLOCK * len(spos)))
    for i in range(0, len(prim), step):
        p = prim[i:i + step]
        bb = st.bbox[p]
        out[i:i + step] = _eval_rect(st.A[p], st.B[p], st.C[p], st.bias[p],
                                     bx[i:i + step] * BLOCK, by[i:i + step] * BLOCK,
                                     BLOCK, BLOCK, bb[:, 0], bb[:, 2], bb[:, 1], bb[:, 3],
                                     spos, st.config.subpix)
    return out


def block_records(vertices, width, height, samples=1, scissor=None, cull_back=False, *,
                  front_ccw=False, subpix=SUBPIX, int_bits=INT_BITS):
    """Block traversal and block rasterizer: every visited block of every primitive.

    Parameters are those of :func:`coverage`.

    Returns
    -------
    list of BlockRecord
        In traversal order (primitives in input order, blocks row by row); the masks
        are brute force, the span classes from the 25 span corners (decisions 4-6).
    """
    cfg = _config(width, height, samples, scissor, cull_back, front_ccw, subpix, int_bits)
    st = _setup(_check_vertices(vertices, cfg.subpix, cfg.int_bits), cfg)
    spos = sample_positions(cfg.samples, cfg.subpix)
    records = []
    for cand in _block_chunks(st):
        t = _traverse(st, *cand)
        prim, bx, by = t["prim"], t["bx"], t["by"]
        edge, comb = _span_classes(t["corners"], st.bias[prim], bx, by, st.bbox[prim])
        masks = _block_masks(st, prim, bx, by, spos)
        for i, p in enumerate(prim):
            records.append(BlockRecord(
                prim=int(p), bx=int(bx[i]), by=int(by[i]), samples=cfg.samples,
                A=st.A[p].copy(), B=st.B[p].copy(), lo16=t["lo16"][i], bias=st.bias[p].copy(),
                bbox=tuple(int(c) for c in st.bbox[p]), corners=t["corners"][i],
                edge_class=edge[i], span_class=comb[i], mask=masks[i]))
    return records


def rasterize_block(A, B, lo16, bias, bbox, bx, by, samples=1, subpix=SUBPIX):
    """The block rasterizer's algorithm on one block's inputs (the seed's Fig. 15-18).

    Span select from the 25 corners ``lo16 + corner_offsets``; edge determination on the
    partial spans only, ``E = lo16 + lo4x4 + lo_pixel + lo_msaa``; final mask = AND over
    the edges (FULL spans ones, EMPTY spans zeros) and the pixel-level box mask.

    Parameters
    ----------
    A, B, lo16, bias : array_like of int
        ``(E,)`` per-edge inputs (see :class:`BlockRecord`).
    bbox : tuple of 4 int
        Clipped box ``(x0, y0, x1, y1)``, inclusive pixels.
    bx, by : int
        Block position.
    samples : int
        Samples per pixel.
    subpix : int
        Fractional bits.

    Returns
    -------
    edge_class : numpy.ndarray
        ``(E, 16)`` uint8.
    span_class : numpy.ndarray
        ``(16,)`` uint8.
    mask : numpy.ndarray
        ``(16, 16, samples)`` bool, ``[y, x, s]``.
    """
    samples = _check_samples(samples)
    subpix = check_int("subpix", subpix, 4, 12)
    A = np.asarray(A, dtype=np.int64)
    B = np.asarray(B, dtype=np.int64)
    lo16 = np.asarray(lo16, dtype=np.int64)
    bias = np.asarray(bias, dtype=np.int64)
    bbox = np.asarray(bbox, dtype=np.int64)[None]
    bxa, bya = np.array([bx]), np.array([by])
    corners = lo16[:, None] + corner_offsets(A, B, subpix)
    edge, comb = _span_classes(corners[None], bias[None], bxa, bya, bbox)
    edge, comb = edge[0], comb[0]
    # Offsets from the block centre: span centre (4*sx - 6) px, pixel centre
    # (px - 1.5) px from the span centre, sample offset in 1/16 px.
    half = 1 << (subpix - 1)
    span_off = (4 * np.arange(4) - 6) << subpix                        # sx or sy
    pix_off = (2 * np.arange(4) - 3) * half                            # px or py
    off = sample_offsets(samples) << (subpix - 4)                      # (S, 2)
    Ae, Be = A[:, None], B[:, None]
    lo4x4 = Ae * np.tile(span_off, 4) + Be * np.repeat(span_off, 4)   # (E, 16): k
    lo_pix = Ae * np.tile(pix_off, 4) + Be * np.repeat(pix_off, 4)    # (E, 16): p
    lo_msaa = Ae * off[:, 0] + Be * off[:, 1]                          # (E, S)
    val = (lo16[:, None, None, None] + lo4x4[:, :, None, None] + lo_pix[:, None, :, None]
           + lo_msaa[:, None, None, :])                                # (E, k, p, S)
    hit = (val - bias[:, None, None, None]) >= 0
    ec = edge[:, :, None, None]
    emask = np.where(ec == FULL, True, np.where(ec == PARTIAL, hit, False))
    m = emask.all(axis=0)                                              # (k, p, S)
    m = m.reshape(4, 4, 4, 4, samples).transpose(0, 2, 1, 3, 4).reshape(16, 16, samples)
    xs = bx * BLOCK + np.arange(BLOCK)
    ys = by * BLOCK + np.arange(BLOCK)
    inx = (xs >= bbox[0, 0]) & (xs <= bbox[0, 2])
    iny = (ys >= bbox[0, 1]) & (ys <= bbox[0, 3])
    m &= (iny[:, None] & inx[None, :])[:, :, None]
    return edge, comb, m


# ------------------------------------------------------------------ pixel packer

@dataclass(frozen=True)
class PixelPacket:
    """A pixel packet: the covered pixels of one 4x4 span of one primitive.

    Attributes
    ----------
    prim, bx, by, span : int
        Primitive, block, span ``k = 4*sy + sx`` in the block.
    pixel_mask : int
        16 bits, bit ``p = 4*py + px`` set when pixel p has a covered sample.
    sample_mask : int
        ``16*samples`` bits, bit ``p*samples + s``.
    full : bool
        All ``16*samples`` samples covered.
    samples : int
        Samples per pixel.
    """
    prim: int
    bx: int
    by: int
    span: int
    pixel_mask: int
    sample_mask: int
    full: bool
    samples: int

    @property
    def x(self):
        """Pixel x of the span's top-left pixel."""
        return self.bx * BLOCK + 4 * (self.span % 4)

    @property
    def y(self):
        """Pixel y of the span's top-left pixel."""
        return self.by * BLOCK + 4 * (self.span // 4)

    def pixel_samples(self, p):
        """The ``samples``-bit mask of pixel p."""
        return (self.sample_mask >> (p * self.samples)) & ((1 << self.samples) - 1)


def pack_block(record):
    """The pixel packer on one :class:`BlockRecord`: its packets, spans in order."""
    packets = []
    for k in range(16):
        m = record.span_mask(k)
        if not m.any():
            continue
        packets.append(PixelPacket(
            prim=record.prim, bx=record.bx, by=record.by, span=k,
            pixel_mask=_bits16(m.reshape(16, -1).any(axis=1)),
            sample_mask=_mask_int(m.reshape(-1)), full=bool(m.all()),
            samples=record.samples))
    return packets


def pixel_packets(vertices, width, height, samples=1, scissor=None, cull_back=False, *,
                  front_ccw=False, subpix=SUBPIX, int_bits=INT_BITS):
    """The pixel packets of a list of primitives, in output order.

    Parameters are those of :func:`coverage`.

    Returns
    -------
    list of PixelPacket
    """
    out = []
    for rec in block_records(vertices, width, height, samples, scissor, cull_back,
                             front_ccw=front_ccw, subpix=subpix, int_bits=int_bits):
        out.extend(pack_block(rec))
    return out


# ------------------------------------------------------------------ statistics

def _empty_level(n_edges):
    return dict(tiles=0, empty=0, full=0, partial=0, crossed=[0] * n_edges)


def _count(acc, edge, comb, evaluated):
    """Add tiles to a level's counts. edge (nb, E, ...), comb/evaluated (nb, ...)."""
    acc["tiles"] += int(evaluated.sum())
    acc["empty"] += int((evaluated & (comb == EMPTY)).sum())
    acc["full"] += int((evaluated & (comb == FULL)).sum())
    part = evaluated & (comb == PARTIAL)
    acc["partial"] += int(part.sum())
    crossing = (edge == PARTIAL).sum(axis=1)
    for m in range(len(acc["crossed"])):
        acc["crossed"][m] += int((part & (crossing >= m + 1)).sum())


def _shares(acc):
    n = max(acc["tiles"], 1)
    acc["share_empty_or_full"] = (acc["empty"] + acc["full"]) / n
    acc["share_partial"] = acc["partial"] / n
    acc["share_crossed"] = [c / n for c in acc["crossed"]]
    return acc


def block_clocks(partial_spans, samples, lanes=16):
    """The block rasterizer's clocks for blocks with ``partial_spans`` combined-PARTIAL
    spans at ``samples`` per pixel with ``lanes`` 16-pixel lanes per edge (decision 8):
    ``max(1, ceil(p * samples / lanes))`` each.

    Parameters
    ----------
    partial_spans : int or array of int
        PARTIAL spans per block, 0 to 16.
    samples : int
        Samples per pixel (1, 2, 4, 8, 16).
    lanes : int
        Lanes per edge, a power of two from 4 to 16.

    Returns
    -------
    int or numpy array
        Clocks per block, of the shape of ``partial_spans``.
    """
    _check_samples(samples)
    if isinstance(lanes, bool) or not isinstance(lanes, int):
        raise TypeError(f"lanes must be a power of two from 4 to 16, not {lanes!r}")
    if lanes not in (4, 8, 16):
        raise ValueError(f"lanes must be a power of two from 4 to 16, not {lanes!r}")
    clocks = np.maximum(1, -(-np.asarray(partial_spans, dtype=np.int64) * samples // lanes))
    return int(clocks) if clocks.ndim == 0 else clocks


def span_statistics(vertices, width, height, samples=1, scissor=None, cull_back=False, *,
                    front_ccw=False, subpix=SUBPIX, int_bits=INT_BITS, lanes=16):
    """Span statistics of the seed's Tables 2-3 and the block rasterizer's cost.

    Parameters are those of :func:`coverage`, and ``lanes`` (the block rasterizer's
    lanes per edge, for ``clocks``: :func:`block_clocks`).

    Returns
    -------
    dict
        ``primitives``, ``culled``, ``blocks`` (visited), ``skipped_blocks``,
        ``samples``, ``clocks`` (block rasterizer cost, decision 8),
        ``partial_spans_histogram`` (blocks with p = 0..16 PARTIAL spans),
        ``levels`` (Table 2: ``{16: counts, 8: ..., 4: ..., 2: ..., 1: ...}``) and
        ``spans`` (Table 3: all sixteen spans of each visited block). Each ``counts``
        holds ``tiles, empty, full, partial, crossed`` (``crossed[m]``: tiles crossed by
        at least ``m+1`` edges) and the shares ``share_empty_or_full, share_partial,
        share_crossed`` (fractions of ``tiles``).
    """
    cfg = _config(width, height, samples, scissor, cull_back, front_ccw, subpix, int_bits)
    block_clocks(0, cfg.samples, lanes)                 # checks lanes
    st = _setup(_check_vertices(vertices, cfg.subpix, cfg.int_bits), cfg)
    E, s = st.n_edges, cfg.subpix
    levels = {L: _empty_level(E) for L in LEVELS}
    spans = _empty_level(E)
    hist = np.zeros(17, dtype=np.int64)
    blocks = skipped = clocks = 0
    lat = np.arange(-8, 9, dtype=np.int64) << s
    for cand in _block_chunks(st, limit=1 << 12):
        t = _traverse(st, *cand)
        prim, bx, by = t["prim"], t["bx"], t["by"]
        skipped += t["skipped"]
        nb = len(prim)
        if not nb:
            continue
        blocks += nb
        A, B, bias, bbox = st.A[prim], st.B[prim], st.bias[prim], st.bbox[prim]
        lattice = (t["lo16"][:, :, None, None] + A[:, :, None, None] * lat[None, :]
                   + B[:, :, None, None] * lat[:, None])              # (nb, E, 17y, 17x)
        pos = (lattice - bias[:, :, None, None]) >= 0
        parent = None
        for L in LEVELS:
            p = pos[:, :, ::L, ::L]
            corners4 = np.stack([p[..., :-1, :-1], p[..., :-1, 1:], p[..., 1:, :-1],
                                 p[..., 1:, 1:]], axis=-1)
            edge = _classify(corners4, axes=-1)                        # (nb, E, n, n)
            outside = _tile_outside(bx, by, bbox, L)
            edge[np.broadcast_to(outside[:, None], edge.shape)] = EMPTY
            comb = _combine(edge, axis=1)                              # (nb, n, n)
            if L == SPAN:
                _count(spans, edge, comb, np.ones(comb.shape, dtype=bool))
                p_spans = (comb == PARTIAL).reshape(nb, 16).sum(axis=1)
                hist += np.bincount(p_spans, minlength=17)
                clocks += int(block_clocks(p_spans, cfg.samples, lanes).sum())
            evaluated = (np.ones(comb.shape, dtype=bool) if parent is None else
                         parent.repeat(2, axis=1).repeat(2, axis=2))
            _count(levels[L], edge, comb, evaluated)
            parent = evaluated & (comb == PARTIAL)
    return dict(primitives=st.n, culled=int((st.cull != CULL_NONE).sum()), blocks=blocks,
                skipped_blocks=skipped, samples=cfg.samples, clocks=clocks,
                partial_spans_histogram=[int(x) for x in hist],
                levels={L: _shares(levels[L]) for L in LEVELS}, spans=_shares(spans))


def statistics_table(stats):
    """Tables 2 and 3 of the seed, as text, from :func:`span_statistics`."""
    def rows(cols):
        names = ["empty/full", "partial"] + [f"{m + 1} edge{'s' if m else ''}"
                                             for m in range(len(cols[0][1]["crossed"]))]
        head = f"{'':12}" + "".join(f"{name:>10}" for name, _ in cols)
        lines = [head]
        for r, name in enumerate(names):
            vals = []
            for _, c in cols:
                v = (c["share_empty_or_full"], c["share_partial"])[r] if r < 2 else \
                    c["share_crossed"][r - 2]
                vals.append(f"{100 * v:9.2f}%")
            lines.append(f"{name:12}" + "".join(vals))
        lines.append(f"{'tiles':12}" + "".join(f"{c['tiles']:>10}" for _, c in cols))
        return "\n".join(lines)
    lv = stats["levels"]
    t2 = rows([(f"{L}x{L}", lv[L]) for L in LEVELS])
    t3 = rows([("16x16", lv[16]), ("4x4", stats["spans"])])
    return (f"Table 2 (hierarchical 16->8->4->2->1)\n{t2}\n\n"
            f"Table 3 (all sixteen 4x4 spans per block)\n{t3}\n\n"
            f"blocks {stats['blocks']} (skipped {stats['skipped_blocks']}), "
            f"block rasterizer clocks at {stats['samples']}x: {stats['clocks']}")


# ------------------------------------------------------------------ prior art: hierarchical

#: Pipeline stages of the prior-art hierarchical rasterizer (the seed: 21; ours: 7).
HIERARCHICAL_STAGES = 21


def hierarchical_model(records, samples, subpix=SUBPIX, stages=HIERARCHICAL_STAGES):
    """Clock-level model of the prior-art hierarchical rasterizer (the seed's Fig. 14).

    One pipeline of ``stages`` stages takes one *work item* per clock. A 16x16 block is
    one item (pass 1: it classifies the four 8x8 quadrants); every PARTIAL 8x8 tile is
    one item of pass 2 (its 4x4 quadrants), every PARTIAL 4x4 of pass 3 (its 2x2s), every
    PARTIAL 2x2 of pass 4 (its 4 pixels, 4 samples per clock: ``samples`` items). An
    item's children re-enter the pipeline ``stages`` clocks after it entered -- one
    subdivision level per pass -- and take priority over new blocks. The model counts
    clocks from the first block's entry to the last item's exit.

    Parameters
    ----------
    records : list of BlockRecord
        The visited blocks (:func:`block_records`), in order.
    samples : int
        Samples per pixel.
    subpix : int
        Fractional bits of the records' coordinates.
    stages : int
        Pipeline depth (21 in the seed).

    Returns
    -------
    dict
        ``blocks``, ``items`` (work items issued), ``clocks``, ``pixels_per_clock``
        (``256 * blocks / clocks``) and ``items_per_level`` (passes 1-4).
    """
    samples = _check_samples(samples)
    stages = check_int("stages", stages, 1, 1000)
    if not records:
        return dict(blocks=0, items=0, clocks=0, pixels_per_clock=0.0,
                    items_per_level=[0, 0, 0, 0])
    parts = _hierarchy_partials(records, subpix)     # PARTIAL 8x8, 4x4, 2x2 tiles

    def children(level, block, ty, tx):
        tiles = parts[level][block] if level == 0 else \
            parts[level][block, 2 * ty:2 * ty + 2, 2 * tx:2 * tx + 2]
        base = (0, 0) if level == 0 else (2 * ty, 2 * tx)
        found = [(level + 1, block, base[0] + y, base[1] + x)
                 for y, x in zip(*np.nonzero(tiles))]
        return found * samples if level == 2 else found   # pixels: 4 samples a clock

    # Event simulation: recirculated items enter first, new blocks fill the gaps.
    from collections import deque
    pending, waiting = deque(), {}      # items ready to enter; clock -> items re-entering
    clock = issued = last_exit = next_block = 0
    per_level = [0, 0, 0, 0]
    while next_block < len(records) or pending or waiting:
        pending.extend(waiting.pop(clock, ()))
        if pending:
            item = pending.popleft()
        elif next_block < len(records):
            item = (0, next_block, 0, 0)
            next_block += 1
        else:
            clock += 1
            continue
        issued += 1
        per_level[item[0]] += 1
        last_exit = clock + stages
        if item[0] < 3:
            found = children(*item)
            if found:
                waiting.setdefault(clock + stages, []).extend(found)
        clock += 1
    return dict(blocks=len(records), items=issued, clocks=last_exit,
                pixels_per_clock=256 * len(records) / last_exit, items_per_level=per_level)


def _hierarchy_partials(records, subpix):
    """``[(n, 2, 2), (n, 4, 4), (n, 8, 8)]`` bool: the PARTIAL 8x8, 4x4 and 2x2 tiles of
    each record that the hierarchy reaches (inside PARTIAL parents), from the 17x17
    pixel-corner lattice of its edges, classified as :func:`span_statistics` does."""
    k = max(len(r.A) for r in records)        # triangles among quads: a neutral 4th edge

    def edges(name):
        return np.array([np.pad(getattr(r, name), (0, k - len(r.A))) for r in records],
                        dtype=np.int64)
    A, B, lo16, bias = (edges(name) for name in ("A", "B", "lo16", "bias"))
    bbox = np.array([r.bbox for r in records], dtype=np.int64)
    bx = np.array([r.bx for r in records], dtype=np.int64)
    by = np.array([r.by for r in records], dtype=np.int64)
    lat = np.arange(-8, 9, dtype=np.int64) << subpix
    lattice = (lo16[:, :, None, None] + A[:, :, None, None] * lat[None, :]
               + B[:, :, None, None] * lat[:, None])
    pos = (lattice - bias[:, :, None, None]) >= 0
    out = []
    parent = None
    for L in LEVELS[:4]:
        p = pos[:, :, ::L, ::L]
        corners4 = np.stack([p[..., :-1, :-1], p[..., :-1, 1:], p[..., 1:, :-1],
                             p[..., 1:, 1:]], axis=-1)
        edge = _classify(corners4, axes=-1)
        outside = _tile_outside(bx, by, bbox, L)
        edge[np.broadcast_to(outside[:, None], edge.shape)] = EMPTY
        comb = _combine(edge, axis=1)
        evaluated = (np.ones(comb.shape, dtype=bool) if parent is None else
                     parent.repeat(2, axis=1).repeat(2, axis=2))
        part = evaluated & (comb == PARTIAL)
        if L < BLOCK:
            out.append(part)
        parent = part
    return out


# ------------------------------------------------------------------ benchmark

def benchmark_coverage(width=1024, height=1024, n_triangles=10000, samples=4, scene="mesh",
                       seed=0, repeat=3):
    """Time :func:`coverage` on a built-in scene.

    Parameters
    ----------
    width, height, n_triangles, samples, seed : int
        Frame, scene size, MSAA mode, scene seed.
    scene : str
        A scene name of :data:`golden.scenes.SCENES`.
    repeat : int
        Runs; the fastest counts.

    Returns
    -------
    dict
        ``triangles`` (actual count), ``width, height, samples, seconds``,
        ``frame_samples_per_s`` (``width*height*samples / seconds``),
        ``tested_samples_per_s`` (box samples evaluated per second),
        ``covered_samples``.
    """
    from golden import scenes
    repeat = check_int("repeat", repeat, 1, 1000)
    cfg = _config(width, height, samples)
    verts = scenes.scene(scene, width, height, n_triangles, seed)
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        frame, tested = _frame(verts, cfg, "any")
        best = min(best, time.perf_counter() - t0)
    return dict(triangles=len(verts), width=width, height=height, samples=samples,
                scene=scene, seconds=best,
                frame_samples_per_s=width * height * samples / best,
                tested_samples_per_s=tested / best, covered_samples=int(frame.sum()))
