"""Scenes for the rasterizer: a loader and built-in geometry, deterministic from a seed.

Every function returns vertices snapped to fixed point (:func:`golden.raster.snap`,
round to nearest, ties to even), ready for :func:`golden.raster.coverage` and the RTL:
int64 arrays of shape ``(n, 3, 2)`` (triangles) or ``(n, 4, 2)`` (quads), ``(x, y)``
in ``2**-subpix`` pixels, y down. Coordinates are clamped to the representable range
``0 .. (2**(int_bits+subpix) - 1) / 2**subpix`` pixels before snapping.

Scenes (:data:`SCENES`, :func:`scene`):

* ``mesh`` -- a jittered grid triangulation covering the frame ``[0, width] x [0,
  height]`` exactly: every shared edge is shared exactly, so every sample of the frame
  is covered exactly once (with random winding unless told otherwise).
* ``random`` -- random triangles of log-uniform size, some hanging over the right and
  bottom edges of the frame, both windings, a few degenerate ones.
* ``slivers`` -- long, very thin triangles (thickness 1/256 .. 1 pixel).
* ``fan`` -- a closed triangle fan around a centre on a pixel centre: shared edges meet
  at a shared vertex; every sample is covered at most once, all triangles clockwise.
* ``lines`` -- wide lines as 4-vertex quads (:func:`line_quad`).
"""

import math
from pathlib import Path

import numpy as np

from golden.raster import INT_BITS, SUBPIX, snap
from golden.params import check_int

__all__ = ["SCENES", "scene", "mesh", "random_triangles", "slivers", "fan", "wide_lines",
           "line_quad", "load"]


def _rng(seed):
    return np.random.default_rng(check_int("seed", seed, 0, 2**63 - 1))


def _frame_args(width, height, n, name="n_triangles"):
    width = check_int("width", width, 1, 1 << 16)
    height = check_int("height", height, 1, 1 << 16)
    n = check_int(name, n, 0, 1 << 24)
    return width, height, n


def _finish(coords, subpix, int_bits):
    top = ((1 << (int_bits + subpix)) - 1) / (1 << subpix)
    return snap(np.clip(coords, 0.0, top), subpix, int_bits)


def _grid(cells, aspect):
    """``(nx, ny)``: exactly ``cells`` cells if a factor pair has ``nx/ny`` within a factor
    of 2 of ``aspect``, else the rounded pair closest to it."""
    best, err = None, math.log(2) + 1e-9
    for f in range(1, math.isqrt(cells) + 1):
        if cells % f == 0:
            for nx in (f, cells // f):
                e = abs(math.log(nx * nx / cells / aspect))
                if e <= err:
                    best, err = (nx, cells // nx), e
    if best:
        return best
    nx = max(1, round(math.sqrt(cells * aspect)))
    return nx, max(1, round(cells / nx))


def mesh(width, height, n_triangles=200, seed=0, *, jitter=0.2, random_winding=True,
         subpix=SUBPIX, int_bits=INT_BITS):
    """A jittered grid triangulation of the whole frame.

    Parameters
    ----------
    width, height : int
        Frame in pixels.
    n_triangles : int
        Wanted count; the mesh has ``2*nx*ny`` triangles in ``nx`` by ``ny`` cells:
        exactly ``n_triangles`` (rounded down to even) when a factor pair of
        ``n_triangles/2`` has a cell count ratio within a factor 2 of the frame's
        aspect ratio, else the nearest grid to it (at least 2 triangles).
    seed : int
        Random seed.
    jitter : float
        Vertex displacement, as a fraction of a cell (0 .. 0.2 keeps every triangle's
        orientation). Border vertices move along the border only; corners stay.
    random_winding : bool
        Give each triangle a random vertex order (else all clockwise on the screen).

    Returns
    -------
    numpy.ndarray
        ``(2*nx*ny, 3, 2)`` int64.
    """
    width, height, n = _frame_args(width, height, n_triangles)
    if not 0 <= jitter <= 0.2:
        raise ValueError(f"jitter must be in 0..0.2, not {jitter}")
    rng = _rng(seed)
    nx, ny = _grid(max(1, n // 2), width / height)
    gx = np.linspace(0.0, width, nx + 1)
    gy = np.linspace(0.0, height, ny + 1)
    X, Y = np.meshgrid(gx, gy)                       # (ny+1, nx+1)
    jx = rng.uniform(-jitter, jitter, X.shape) * (width / nx)
    jy = rng.uniform(-jitter, jitter, Y.shape) * (height / ny)
    jx[:, [0, -1]] = 0.0                             # left/right border: move along y only
    jy[[0, -1], :] = 0.0                             # top/bottom border: move along x only
    P = np.stack([X + jx, Y + jy], axis=-1)
    v00, v10 = P[:-1, :-1], P[:-1, 1:]
    v01, v11 = P[1:, :-1], P[1:, 1:]
    diag = rng.random((ny, nx)) < 0.5
    # Clockwise on the screen (y down): top-left, top-right, bottom-...
    t1 = np.where(diag[..., None, None], np.stack([v00, v10, v11], -2),
                  np.stack([v00, v10, v01], -2))
    t2 = np.where(diag[..., None, None], np.stack([v00, v11, v01], -2),
                  np.stack([v10, v11, v01], -2))
    tris = np.stack([t1, t2], axis=2).reshape(-1, 3, 2)
    if random_winding:
        swap = rng.random(len(tris)) < 0.5
        tris[swap] = tris[swap][:, [0, 2, 1]]
    return _finish(tris, subpix, int_bits)


def random_triangles(width, height, n_triangles=200, seed=0, *, min_size=0.25,
                     max_size=None, overhang=0.1, degenerate=0.02, subpix=SUBPIX,
                     int_bits=INT_BITS):
    """Random triangles: log-uniform size, both windings, some off the frame.

    Parameters
    ----------
    min_size, max_size : float
        Range of the triangle's extent in pixels (default max: a quarter of the frame).
    overhang : float
        Centres are drawn over the frame enlarged by this fraction to the right and
        bottom (coordinates are unsigned, so nothing hangs over the left or top).
    degenerate : float
        Fraction of triangles made collinear (zero area).
    """
    width, height, n = _frame_args(width, height, n_triangles)
    rng = _rng(seed)
    if max_size is None:
        max_size = max(width, height) / 4
    size = np.exp(rng.uniform(math.log(min_size), math.log(max(max_size, min_size)), n))
    cx = rng.uniform(0, width * (1 + overhang), n)
    cy = rng.uniform(0, height * (1 + overhang), n)
    d = rng.uniform(-0.5, 0.5, (n, 3, 2)) * size[:, None, None]
    tris = np.stack([cx, cy], -1)[:, None, :] + d
    deg = rng.random(n) < degenerate
    t = rng.uniform(0, 1, deg.sum())[:, None]
    tris[deg, 2] = tris[deg, 0] + t * (tris[deg, 1] - tris[deg, 0])
    tris[deg, 2] = np.round(tris[deg, 2])            # keep them exactly collinear after snap
    tris[deg, 0] = np.round(tris[deg, 0])
    tris[deg, 1] = 2 * tris[deg, 2] - tris[deg, 0]
    return _finish(tris, subpix, int_bits)


def slivers(width, height, n_triangles=50, seed=0, *, subpix=SUBPIX, int_bits=INT_BITS):
    """Long thin triangles: length up to half the frame, thickness 1/256 .. 1 pixel."""
    width, height, n = _frame_args(width, height, n_triangles)
    rng = _rng(seed)
    p0 = rng.uniform(0, 1, (n, 2)) * (width, height)
    ang = rng.uniform(0, 2 * math.pi, n)
    length = rng.uniform(0.25, 0.5, n) * max(width, height)
    u = np.stack([np.cos(ang), np.sin(ang)], -1)
    p1 = p0 + length[:, None] * u
    thick = np.exp(rng.uniform(math.log(1 / 256), 0.0, n))
    along = rng.uniform(0.1, 0.9, n)[:, None]
    normal = np.stack([-u[:, 1], u[:, 0]], -1)
    p2 = p0 + along * (p1 - p0) + thick[:, None] * normal
    return _finish(np.stack([p0, p1, p2], axis=1), subpix, int_bits)


def fan(width, height, n_triangles=32, seed=0, *, subpix=SUBPIX, int_bits=INT_BITS):
    """A closed fan of ``n_triangles`` (at least 3) clockwise triangles around a centre
    placed on a pixel centre, with rim points at random radii and angles."""
    width, height, n = _frame_args(width, height, n_triangles)
    n = max(n, 3)
    rng = _rng(seed)
    c = np.array([math.floor(width * rng.uniform(0.4, 0.6)) + 0.5,
                  math.floor(height * rng.uniform(0.4, 0.6)) + 0.5])
    w = np.ones(n) if n < 5 else 1 + 0.8 * (rng.random(n) - 0.5)
    ang = np.concatenate([[0.0], np.cumsum(w)[:-1]]) / w.sum() * 2 * math.pi
    ang += rng.uniform(0, 2 * math.pi)
    rad = rng.uniform(0.25, 0.45, n) * min(width, height)
    rim = c + rad[:, None] * np.stack([np.cos(ang), np.sin(ang)], -1)
    # Increasing angle with y down turns clockwise on the screen.
    tris = np.stack([np.broadcast_to(c, (n, 2)), rim, np.roll(rim, -1, axis=0)], axis=1)
    return _finish(tris, subpix, int_bits)


def line_quad(p0, p1, line_width):
    """The quad of a wide line: the segment p0-p1 widened by ``line_width/2`` each side.

    Parameters
    ----------
    p0, p1 : array_like of float
        ``(..., 2)`` end points in pixels.
    line_width : float or array_like
        Width in pixels.

    Returns
    -------
    numpy.ndarray
        ``(..., 4, 2)`` float corners in order ``p0+n, p1+n, p1-n, p0-n`` (n the half-width
        normal); unsnapped. A zero-length line gives a zero-area quad.
    """
    p0 = np.asarray(p0, dtype=np.float64)
    p1 = np.asarray(p1, dtype=np.float64)
    d = p1 - p0
    length = np.linalg.norm(d, axis=-1, keepdims=True)
    u = np.divide(d, length, out=np.zeros_like(d), where=length > 0)
    nrm = np.stack([-u[..., 1], u[..., 0]], -1) * (np.asarray(line_width) / 2)[..., None]
    return np.stack([p0 + nrm, p1 + nrm, p1 - nrm, p0 - nrm], axis=-2)


def wide_lines(width, height, n_lines=50, seed=0, *, line_width=(0.5, 4.0), subpix=SUBPIX,
               int_bits=INT_BITS):
    """Random wide lines as ``(n, 4, 2)`` quads, widths uniform in ``line_width``."""
    width, height, n = _frame_args(width, height, n_lines, "n_lines")
    rng = _rng(seed)
    p0 = rng.uniform(0, 1, (n, 2)) * (width, height)
    p1 = p0 + rng.normal(0, max(width, height) / 6, (n, 2))
    wdt = rng.uniform(line_width[0], line_width[1], n)
    return _finish(line_quad(p0, p1, wdt), subpix, int_bits)


SCENES = {
    "mesh": mesh,
    "random": random_triangles,
    "slivers": slivers,
    "fan": fan,
    "lines": wide_lines,
}


def scene(name, width, height, n=200, seed=0, **kwargs):
    """A built-in scene by name (see :data:`SCENES`); ``n`` primitives, snapped."""
    if name not in SCENES:
        raise ValueError(f"name must be one of {', '.join(SCENES)}, not {name!r}")
    return SCENES[name](width, height, n, seed, **kwargs)


def load(source, *, subpix=SUBPIX, int_bits=INT_BITS):
    """Load float geometry in pixels and snap it to fixed point.

    Parameters
    ----------
    source : array_like, str or pathlib.Path
        An array of shape ``(n, 3, 2)``, ``(n, 4, 2)``, ``(n, 6)`` or ``(n, 8)``; a
        ``.npy`` file of such an array; or a text file with one primitive per line,
        ``x0 y0 x1 y1 x2 y2 [x3 y3]`` (whitespace or commas; ``#`` starts a comment).

    Returns
    -------
    numpy.ndarray
        ``(n, 3, 2)`` or ``(n, 4, 2)`` int64 vertices.
    """
    if isinstance(source, (str, Path)):
        path = Path(source)
        if path.suffix == ".npy":
            data = np.load(path)
        else:
            text = path.read_text().replace(",", " ")
            rows = [line.split("#", 1)[0].split() for line in text.splitlines()]
            rows = [r for r in rows if r]
            if len({len(r) for r in rows}) > 1:
                raise ValueError(f"source {path}: every line must hold 6 or 8 numbers")
            data = np.array(rows, dtype=np.float64).reshape(len(rows), -1) if rows else \
                np.zeros((0, 6))
    else:
        data = np.asarray(source, dtype=np.float64)
    if data.ndim == 2 and data.shape[1] in (6, 8):
        data = data.reshape(len(data), -1, 2)
    if data.ndim != 3 or data.shape[1:] not in ((3, 2), (4, 2)):
        raise ValueError(f"source must hold primitives of shape (n, 3, 2), (n, 4, 2), "
                         f"(n, 6) or (n, 8), not {data.shape}")
    return snap(data, subpix, int_bits)
