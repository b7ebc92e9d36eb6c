"""Golden model of the integrated front end (``hw/frontend.py``, issue 15).

Transaction level: a command stream (the words of ``hw/frontend.py``'s module docstring)
in; per frame the framebuffer (per sample the highest primitive id covering it, 0 for
none), the packets the front end presents to the spreader (a
:class:`golden.spreader.Workload`, for :class:`golden.spreader.Scoreboard`), and whether
a malformed command was seen. Coverage is ``golden.raster``'s; the model never imports
``hw/``.

The colour rule: per sample, ``max`` over the ids of the draws covering it. ``max`` does
not depend on the order of the writes, so the RTL's frame equals this one bit for bit
whatever the EUs' timing.

Command words (ints: bit 0 ``is_token``, bits 1.. ``data``) are built with
:func:`frame_cmd`, :func:`draw_cmd`, :func:`latency_cmd` and :func:`end_cmd`.
"""

from dataclasses import dataclass, field

import numpy as np

from golden import raster as R
from golden.spreader import PixelPacket, TrianglePacket, VertexPacket, Workload

SUBPIX = 8
COORD_BITS = 24
END_BATCH = 0x06
GROUP_STATE, GROUP_PRIM, GROUP_3D, GROUP_2D = 0, 1, 2, 3
OP_FRAME, OP_DRAW, OP_VERTEX = 1, 2, 3
OP_LATENCY = 1


# ---------------------------------------------------------------- command words

def data_word(group, op, value):
    """A data word of ``group`` with opcode ``op`` and operand ``value``."""
    return ((group << 30) | (op << 26) | value) << 1


def token_word(code, arg=0):
    return ((arg << 8 | code) << 1) | 1


def frame_cmd(samples):
    """FRAME: start a frame with ``samples`` samples per pixel (clears the framebuffer)."""
    return [data_word(GROUP_PRIM, OP_FRAME, int(samples).bit_length() - 1)]


def draw_cmd(prid, vertices):
    """DRAW of a triangle: ``vertices`` ``(3, 2)`` in 16.8 fixed point."""
    v = np.asarray(vertices, dtype=np.int64).reshape(3, 2)
    return [data_word(GROUP_PRIM, OP_DRAW, prid)] + [
        data_word(GROUP_PRIM, OP_VERTEX, int(c)) for c in v.reshape(-1)]


def latency_cmd(numeric, move):
    """LATENCY of the pixel engines' NUMERIC and MOVE stages."""
    return [data_word(GROUP_STATE, OP_LATENCY, (move << 8) | numeric)]


def end_cmd():
    return [token_word(END_BATCH)]


def scene_cmds(vertices, samples, prids=None):
    """A frame drawing ``vertices`` (``(n, 3, 2)``), ids ``1..n`` unless ``prids``."""
    prids = range(1, len(vertices) + 1) if prids is None else prids
    words = frame_cmd(samples)
    for p, v in zip(prids, vertices):
        words += draw_cmd(int(p), v)
    return words + end_cmd()


# ---------------------------------------------------------------- the model

@dataclass
class Frame:
    """One frame as the front end sees it."""
    samples: int
    draws: list = field(default_factory=list)        # (prid, (3, 2) vertices)


@dataclass
class Result:
    frames: list
    error: bool


def int_bits_for(width, height):
    """The rasterizer's integer bits for a frame (``hw.frontend``: log2(side) + 1)."""
    return max(5, max(width, height).bit_length())


def parse(words, *, width, height, modes=(1, 2, 4, 8, 16), prid_bits=8):
    """The frames and draws a command stream holds, malformed commands dropped.

    Returns
    -------
    Result
    """
    limit = 1 << (int_bits_for(width, height) + SUBPIX)
    modes = set(modes)
    frames, error = [], False
    cur = None                  # the open frame
    draw = None                 # (prid, coordinates so far)
    for w in words:
        is_token, d = w & 1, w >> 1
        group, op, value = d >> 30, (d >> 26) & 15, d & ((1 << 26) - 1)
        if is_token:
            if (d & 0xFF) == END_BATCH:
                error |= draw is not None
                draw = None
                if cur is not None:
                    frames.append(cur)
                    cur = None
            continue
        if group == GROUP_STATE:
            error |= op != OP_LATENCY
            continue
        if group != GROUP_PRIM:
            error = True
            continue
        if op == OP_VERTEX:
            c = value & ((1 << COORD_BITS) - 1)
            if draw is None or c >= limit:
                error, draw = True, None
                continue
            draw[1].append(c)
            if len(draw[1]) == 6:
                if cur is None:
                    error = True
                else:
                    cur.draws.append((draw[0], np.array(draw[1]).reshape(3, 2)))
                draw = None
            continue
        if draw is not None:
            error, draw = True, None
        if op == OP_FRAME:
            samples = 1 << (value & 7)
            if (value & 7) > 4 or samples not in modes or cur is not None:
                error = True
            else:
                cur = Frame(samples)
        elif op == OP_DRAW:
            prid = value & 0xFFFF
            if prid == 0 or prid >= (1 << prid_bits):
                error = True
            else:
                draw = (prid, [])
        else:
            error = True
    return Result(frames, error)


def render(frame, width, height, max_samples):
    """``(height, width, max_samples)`` int64: per sample the highest id covering it."""
    ib = int_bits_for(width, height)
    ids = np.zeros((height, width, max_samples), dtype=np.int64)
    if not frame.draws:
        return ids
    prids = np.array([p for p, _ in frame.draws])
    verts = np.stack([v for _, v in frame.draws])
    order = np.argsort(prids, kind="stable")   # the last covering primitive = the highest id
    last = R.coverage_ids(verts[order], width, height, frame.samples, subpix=SUBPIX,
                          int_bits=ib)
    ids[:, :, :frame.samples] = np.where(last >= 0, prids[order][last], 0)
    return ids


def workload(frame, width, height):
    """The packets the front end presents to the spreader for ``frame``, in stream order:
    per draw ``k`` (numbered from 0 in the frame... and on across frames by ``seq``) a
    vertex packet, a triangle packet, its pixel packets (size 1) and an end marker."""
    return workload_from(frame, width, height, seq0=0)


def workload_from(frame, width, height, seq0=0):
    ib = int_bits_for(width, height)
    n = len(frame.draws)
    pix = [[] for _ in range(n)]
    if n:
        verts = np.stack([v for _, v in frame.draws])
        side = 1 << ib
        for pk in R.pixel_packets(verts, side, side, frame.samples, (0, 0, width, height),
                                  subpix=SUBPIX, int_bits=ib):
            pix[pk.prim].append(pk)
    vs, ts, ps = [], [], []
    for k in range(n):
        seq = (seq0 + k) & 0xFFFF
        base = (seq & 0x1FFF) * 8
        vs.append(VertexPacket(base, 3, 1, False))
        ts.append(TrianglePacket(seq, (base, base + 1, base + 2), 1, 0b111))
        ps += [PixelPacket(seq, pk.x, pk.y, pk.pixel_mask, False, 1) for pk in pix[k]]
        ps.append(PixelPacket(seq, 0, 0, 0, True, 0))
    return Workload(vs, ts, ps, [])


def packets_per_draw(frame, width, height):
    """Pixel packets of the frame (not counting end markers)."""
    wl = workload(frame, width, height)
    return sum(1 for it in wl.streams[2] if it.packet.mask)


# ---------------------------------------------------------------- framebuffer words

def fb_words(ids, prid_bits):
    """The framebuffer words of ``ids`` (``(H, W, S)``), as ``hw.frontend`` lays them out:
    word ``(y * W + x) / 4`` holds pixels ``x .. x+3``, sample ``s`` of pixel ``q`` at
    bits ``(q * S + s) * prid_bits``."""
    h, w, s = ids.shape
    flat = ids.reshape(h, w // 4, 4 * s)
    words = []
    for row in flat.reshape(-1, 4 * s):
        v = 0
        for k, x in enumerate(row):
            v |= int(x) << (k * prid_bits)
        words.append(v)
    return words


def ids_from_words(words, width, height, max_samples, prid_bits):
    """Inverse of :func:`fb_words`."""
    mask = (1 << prid_bits) - 1
    out = np.zeros((height * width // 4, 4 * max_samples), dtype=np.int64)
    for i, v in enumerate(words):
        for k in range(4 * max_samples):
            out[i, k] = (v >> (k * prid_bits)) & mask
    return out.reshape(height, width, max_samples)


def checksum(words, word_bits):
    """The board's frame checksum: CRC-32 (IEEE) of the framebuffer words in address
    order, each little-endian in ``ceil(word_bits / 8)`` bytes."""
    import zlib
    n = (word_bits + 7) // 8
    return zlib.crc32(b"".join(int(v).to_bytes(n, "little") for v in words)) & 0xFFFFFFFF
