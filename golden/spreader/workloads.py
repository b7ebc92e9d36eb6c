"""Stimulus: :class:`Item`, :class:`Workload`, :class:`Feeder` and the workload builders
(:func:`build_workload`, :func:`synthetic_workload`, :func:`scene_workload`)."""

from dataclasses import dataclass

import numpy as np

from golden.spreader.types import (
    EType, GROUP, PACKET_TYPES, PatchPacket, PixelPacket, TrianglePacket, VertexPacket,
)
from golden.params import check_int


@dataclass(frozen=True)
class Item:
    """A packet in a workload.

    Attributes
    ----------
    packet : VertexPacket, TrianglePacket, PixelPacket or PatchPacket
    after : tuple of (stream, index)
        Packets that must have been consumed (in an earlier clock) before this one is
        presented.
    at : int
        Earliest clock at which it is presented.
    expect : Err or None
        The error the packet must be refused with, None for a good packet.
    """
    packet: object
    after: tuple = ()
    at: int = 0
    expect: object = None


class Workload:
    """Four packet streams (indexed by :class:`EType`) of :class:`Item`.

    Parameters
    ----------
    vertex, triangle, pixel, patch : sequences of Item or packets
    """

    def __init__(self, vertex=(), triangle=(), pixel=(), patch=()):
        self.streams = tuple([x if isinstance(x, Item) else Item(x) for x in s]
                             for s in (vertex, triangle, pixel, patch))
        for s, items in enumerate(self.streams):
            for it in items:
                if not isinstance(it.packet, PACKET_TYPES[s]):
                    raise TypeError(f"stream {s} must hold {PACKET_TYPES[s].__name__}s, "
                                    f"not {type(it.packet).__name__}")

    def __len__(self):
        return sum(len(s) for s in self.streams)

    def counts(self):
        """Packets per stream."""
        return tuple(len(s) for s in self.streams)


class Feeder:
    """Presents a workload's packets on the four input streams.

    A stream's next packet is presented from the first clock in which every packet of
    its ``after`` was consumed in an earlier clock, its ``at`` has come and (with
    ``gap``) a random draw lets it; once presented it stays until consumed.

    Parameters
    ----------
    workload : Workload
    gap : float
        Probability per clock of holding back a packet that could be presented.
    rng : numpy.random.Generator or int, optional
    """

    def __init__(self, workload, gap=0.0, rng=None):
        self.workload = workload
        self.gap = gap
        self.rng = (rng if isinstance(rng, np.random.Generator)
                    else np.random.default_rng(0 if rng is None else rng))
        self.next = [0, 0, 0, 0]
        self.acked = {}
        self._shown = [False] * 4

    def heads(self, t):
        """The payloads with ``valid`` high in clock t (None where low)."""
        out = []
        for s, items in enumerate(self.workload.streams):
            i = self.next[s]
            h = None
            if i < len(items):
                it = items[i]
                if self._shown[s]:
                    h = it.packet
                elif it.at <= t and all(self.acked.get(d, t) < t for d in it.after):
                    if not self.gap or self.rng.random() >= self.gap:
                        h = it.packet
                        self._shown[s] = True
            out.append(h)
        return tuple(out)

    def ack(self, s, t):
        """The head of stream s was consumed in clock t."""
        self.acked[(s, self.next[s])] = t
        self.next[s] += 1
        self._shown[s] = False

    def finished(self):
        """Every packet consumed."""
        return all(n == len(s) for n, s in zip(self.next, self.workload.streams))

    def waiting(self):
        """Some packet is presented and not yet consumed."""
        return any(self._shown)


def build_workload(triangles, pixels=None, *, n_vertices=None, patches=(), vdt_records=256,
                   pt_records=256, vertex_size=2, triangle_size=1, pixel_size=1,
                   patch_size=4, prid_base=0, prid_bits=16):
    """Spreader packets for an indexed triangle list, with the producer dependencies.

    Vertex groups are sent in order of first use, each before the first triangle that
    names it; a triangle's ``last`` bits close the groups it is the last user of; a
    triangle's pixel packets follow it, the last marked ``last`` (an end marker when it
    has none). A group (primitive) whose VDT (PT) record was used before waits for the
    packet that closed the previous user.

    Parameters
    ----------
    triangles : array_like of int, shape (n, 3)
        Vertex indices.
    pixels : sequence of sequences of (x, y, mask), optional
        Pixel packets of each triangle (default: none, only end markers).
    n_vertices : int, optional
        Vertex count (default: largest index + 1).
    patches : sequence of int
        Base indices of Bezier patches (multiples of 8, ``noref``).
    vdt_records, pt_records : int
        The spreader's table sizes (for the reuse dependencies).
    vertex_size, triangle_size, pixel_size, patch_size : int
        Packet ``size`` fields.
    prid_base : int
        prid of the first triangle (prids are consecutive, mod ``2**prid_bits``).

    Returns
    -------
    Workload
    """
    tris = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    n = len(tris)
    if n_vertices is None:
        n_vertices = int(tris.max()) + 1 if n else 0
    pixels = [[] for _ in range(n)] if pixels is None else list(pixels)
    if len(pixels) != n:
        raise ValueError(f"pixels must hold {n} entries, not {len(pixels)}")
    groups = tris >> 3
    last_use = {}
    for k in range(n):
        for g in groups[k]:
            last_use[int(g)] = k
    vstream, tstream, pstream = [], [], []
    sent = {}                      # group -> vertex item index
    closer = {}                    # VDT record -> (stream, index) that closed its last user
    pt_closer = {}
    for k in range(n):
        after = []
        for g in dict.fromkeys(int(x) for x in groups[k]):
            if g not in sent:
                rec = g % vdt_records
                dep = (closer[rec],) if rec in closer else ()
                base = g * GROUP
                vstream.append(Item(VertexPacket(base, min(GROUP, n_vertices - base),
                                                 vertex_size), after=dep))
                sent[g] = len(vstream) - 1
            after.append((EType.VERTEX, sent[g]))
        last = 0
        for i in range(3):
            g = int(groups[k][i])
            if last_use[g] == k:
                last |= 1 << i
        prid = (prid_base + k) % (1 << prid_bits)
        q = prid % pt_records
        if q in pt_closer:
            after.append(pt_closer[q])
        tstream.append(Item(TrianglePacket(prid, tuple(int(x) for x in tris[k]),
                                           triangle_size, last), after=tuple(after)))
        ti = (EType.TRIANGLE, len(tstream) - 1)
        for g in dict.fromkeys(int(x) for x in groups[k]):
            if last_use[g] == k:
                closer[g % vdt_records] = ti
        pk = list(pixels[k])
        if not pk:
            pstream.append(Item(PixelPacket(prid, 0, 0, 0, True, 0), after=(ti,)))
        for j, (x, y, mask) in enumerate(pk):
            pstream.append(Item(PixelPacket(prid, int(x), int(y), int(mask), j == len(pk) - 1,
                                            pixel_size), after=(ti,) if j == 0 else ()))
        pt_closer[q] = (EType.PIXEL, len(pstream) - 1)
    pat = [Item(PatchPacket(int(b), patch_size, True)) for b in patches]
    return Workload(vstream, tstream, pstream, pat)


def synthetic_workload(seed=0, n_triangles=64, cols=8, max_pixels=4, n_patches=2,
                       vdt_records=256, pt_records=256):
    """A small independent workload: a strip-ordered grid mesh with random pixel packets.

    Parameters
    ----------
    seed : int
        Random seed.
    n_triangles : int
        Triangles (two per grid cell, ``cols`` cells per row).
    cols : int
        Grid cells per row.
    max_pixels : int
        Each triangle gets 0..max_pixels random pixel packets.
    n_patches : int
        Patches, placed after the mesh's vertices.
    vdt_records, pt_records : int
        Table sizes (see :func:`build_workload`).

    Returns
    -------
    Workload
    """
    rng = np.random.default_rng(check_int("seed", seed, 0, 2**63 - 1))
    n_triangles = check_int("n_triangles", n_triangles, 0, 1 << 16)
    cols = check_int("cols", cols, 1, 1 << 10)
    tris = []
    w = cols + 1
    c = 0
    while len(tris) < n_triangles:
        r, col = divmod(c, cols)
        a, b, d, e = r * w + col, r * w + col + 1, (r + 1) * w + col, (r + 1) * w + col + 1
        tris += [(a, b, d), (b, e, d)]
        c += 1
    tris = np.array(tris[:n_triangles], dtype=np.int64).reshape(-1, 3)
    nv = int(tris.max()) + 1 if len(tris) else 0
    pix = []
    for _ in range(len(tris)):
        m = int(rng.integers(0, max_pixels + 1))
        pix.append([(int(rng.integers(0, 256)) & ~3, int(rng.integers(0, 256)) & ~3,
                     int(rng.integers(1, 1 << 16))) for _ in range(m)])
    pbase = ((nv + 7) // 8) * 8
    patches = [pbase + 16 * i for i in range(n_patches)]
    return build_workload(tris, pix, n_vertices=nv, patches=patches,
                          vdt_records=vdt_records, pt_records=pt_records)


def scene_workload(name="mesh", width=64, height=64, n=32, seed=0, samples=1,
                   vdt_records=256, pt_records=256, n_patches=0):
    """Spreader packets for a built-in scene of :mod:`golden.scenes`.

    Equal vertices are merged into one index (the scene's triangles share vertices in a
    mesh), indices numbered in order of first use; pixel packets are the raster golden
    model's (:func:`golden.raster.pixel_packets`), one 4x4 span each. Triangles only
    (quad scenes such as ``lines`` are refused).

    Returns
    -------
    Workload
    """
    from golden import raster, scenes       # the raster engineer's models, read-only

    verts = scenes.scene(name, width, height, n, seed)
    if verts.shape[1] != 3:
        raise ValueError(f"name must be a triangle scene, not {name!r}")
    flat = verts.reshape(-1, 2)
    _, first, inverse = np.unique(flat, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))         # renumber by first appearance
    idx = order[inverse.reshape(-1)].reshape(-1, 3)
    pix = [[] for _ in range(len(verts))]
    for pk in raster.pixel_packets(verts, width, height, samples):
        pix[pk.prim].append((pk.x, pk.y, pk.pixel_mask))
    nv = int(idx.max()) + 1 if len(idx) else 0
    pbase = ((nv + 7) // 8) * 8
    return build_workload(idx, pix, n_vertices=nv,
                          patches=[pbase + 16 * i for i in range(n_patches)],
                          vdt_records=vdt_records, pt_records=pt_records)
