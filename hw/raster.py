"""The rasterizer (spec ``raster.md``; seed Fig. 12-20): primitives in, pixel packets out.

Units (each a ``wiring.Component`` with stream ports; ``python -m hw.gen raster.<name>``)
-----------------------------------------------------------------------------------------
``raster.setup`` (:class:`TriangleSetup`)
    A primitive (3 or 4 vertices, id, MSAA code, cull flags, scissor) -> per edge ``A``,
    ``B``, the top-left ``bias`` and ``lo16`` (E at the centre of the box's first 16x16
    block), the clipped pixel box; culls and counts zero-area, back-facing (optional) and
    off-scissor primitives; drops malformed ones (sticky ``error``). One primitive a
    clock, 6 stages, 2 multipliers per edge and 2 for the area (MULT18X18D on the ECP5).
``raster.traversal`` (:class:`BlockTraversal`)
    Walks the box's blocks row by row, one candidate a clock, skips blocks that an edge
    rejects at all four corners, steps ``lo16`` with adds; emits the block records below.
``raster.block`` (:class:`BlockRasterizer`)
    The 16x16 span-parallel block rasterizer (unit 3), described below.
``raster.packer`` (:class:`PixelPacker`)
    Each non-empty 4x4 span of a block -> a pixel packet; ``packets`` of them per output
    word.
``raster.pipeline`` (:class:`RasterPipeline`)
    The four in a row, bit-exact, packet by packet, to ``golden.raster.pixel_packets``.

The rest of this docstring is the block rasterizer's; each other class has its own.

What the block does
-------------------
A primitive (a triangle or a 4-edge quad such as a wide line) is the set of samples where
every edge function ``E(x, y) = A*x + B*y + C`` passes ``E - bias >= 0`` (``bias`` is 0
on top/left edges, 1 on the others) and whose pixel lies in the primitive's bounding
box clipped to the scissor. Coordinates are fixed point with ``subpix`` fractional bits.
Block traversal (upstream) hands this unit one 16x16-pixel block at a time: its position
``(bx, by)``, per edge ``A``, ``B``, ``bias`` and ``lo16`` (E at the block centre), the
clipped box, the MSAA mode and the number of edges. The unit answers, per block, with
the coverage mask of all ``256 * samples`` samples and, per edge, the class of each of the
sixteen 4x4-pixel *spans*: EMPTY, FULL or PARTIAL.

Every edge value it needs is ``lo16`` plus a constant multiple of ``A`` and ``B``, so the
unit has no multiplier: odd multiples (3A, 5A, 7A) are one adder each, the rest shifts.

Pipeline (one clock per row, latency 7 clocks from input handshake to output valid)
------------------------------------------------------------------------------------
(``latency=8``, MSAA builds only: one stage more, 3b below; ``latency=9``: two, 2b and
3b.)

0. *Input buffer*: a two-entry skid buffer of registers whose ``ready`` is one of its
   own registers, so no combinational path runs from ``o.ready`` to ``i.ready``.
   Malformed blocks are dropped here (below).
1. *Offsets*: per edge the 12 corner offsets ``a*A + b*B`` (``a, b`` in -2..2, the
   lattice half with ``b > 0`` or ``b = 0 < a``), the odd multiples of A and B, and
   ``lo = sat(lo16) - bias`` (the bias is folded in once, so every later test is ``>= 0``;
   ``lo16 - bias`` is computed beside the range test, and the saturated values are
   constants); in MSAA builds also ``-A`` and ``-B`` where two or more sample offsets
   with no positive term use them (``_negated``: each such offset is then one
   subtraction in stage 2, not an addition and a negation), and the box's pixel columns
   and rows and its columns and rows of spans, from the block's index compared with the
   box's (:meth:`BlockRasterizer._in_box`; the 1x build registers the box relative to
   the block here and forms them in stage 2).
2. *Corners*: the 25 span corners lie at ``(4c - 8, 4r - 8)`` pixels from the centre;
   corner ``i`` and ``24 - i`` have opposite offsets ``+-o``. Given the signs of ``lo``
   and ``o`` one of ``lo + o`` and ``lo - o`` has a known sign, so one add/subtract per
   pair decides both corners: 12 comparators per edge (the seed's Fig. 17). Also the
   pixel-centre offsets ``half_j = (2px - 3)A + (2py - 3)B`` (8, the others by
   symmetry), each lane's sample offset in the block's mode, and the box's column/row
   masks. MSAA builds also form the combined span classes here (below), from the
   corner signs before their registers, and from them the ranks and the count (below),
   registered, so that stage 3 forms ``order`` and the batch count from registers.
2b. *Ranks* (``latency=9`` only; it moves with stages 1-3): stage 2 ends at the
   registered combined classes, and stage 2b forms the ranks, the count and "more than
   one batch" from them, so that no path runs from a corner's carry chain through the
   classes into the count (the ``(1, 4)`` build's routed critical path at 8 lanes,
   README Block 4). The pixel-centre offsets and the lane sample offsets, which stage 2
   forms at ``latency`` 7 and 8, are formed here from the odd multiples of ``A`` and
   ``B`` that stage 2 passes on (fewer flip-flops than passing the offsets on). One
   clock more latency in every mode of the build; the clocks per block are unchanged.
3. *Span select*: per edge and span, FULL when its 4 corners pass, PARTIAL when some do,
   EMPTY otherwise or when no pixel of the span lies in the box. Combined class: EMPTY if
   any edge is, FULL if all are, PARTIAL otherwise -- only combined-PARTIAL spans need
   sample tests. Their ranks by a short prefix count (per row of 4 spans the local
   counts, then the row totals added in a balanced tree: 2 small adders, not a chain of
   15, written as gates so that yosys makes LUTs of them, not carry chains; MSAA builds
   count in stage 2) and, from the ranks, ``order``: the PARTIAL spans in rank order,
   and whether the block has more than one batch (more than ``lanes / S`` PARTIAL spans,
   as gates from the count, in stage 2). Per lane
   ``lane_lo = lo +`` its sample offset (MSAA builds; at 1x ``lo``, one copy per quad of
   lanes). Per edge the FULL bits the lanes use, with "edge unused" folded in (an unused
   edge passes every sample), so that bit does not fan out to every lane's mask logic.
3b. *Span choice* (``latency=8`` only; it moves with stages 4-6, one batch a clock):
   each lane's choice of stage 4 below -- its span, then per edge the chosen ``half_j``
   (the bits the adder uses), the sign and the span's FULL / PARTIAL bits -- is
   registered here, and what stage 4 reads of stage 3 is passed on, so that stage 4's
   lane adders start from registers (:meth:`BlockRasterizer._span_choice`). On the
   ECP5 the ``(1, 4)`` build's routed critical path ran from ``order`` through a lane's
   span choice and its adder into stage 4 (README, Block 4). One clock more latency in
   every mode of the build; the clocks per block are unchanged.
4. *Lane select* (one row per *batch*; the schedule below, here at 16 lanes): at 1x
   lane ``l`` takes span ``l``; with ``S`` samples lane group ``r`` (lanes ``rS .. rS +
   S - 1``) takes span ``order[r]``, and ``order`` moves on by ``16 / S`` entries per
   batch, so no lane looks at the batch number. A span's centre offset is
   ``+-half_j << (subpix + 1)`` (spans ``k`` and
   ``15 - k`` are opposite), so each lane picks its span (one choice for all edges:
   span ``l`` at 1x, ``order[l // S]`` at ``S`` samples), then per edge one of 8
   ``half_j`` and a sign, and adds it: in the lanes' units (``>> subpix - 1``, see below)
   ``t = lane_lo + (half_j << 2)``, or ``~lane_lo + ...`` for the minus sign
   (``lane_lo - x = ~(~lane_lo + x)``, and the inversion cancels in the fold below).
   The lane keeps ``b`` folded, ``b`` or ``-b - 1`` (its bits inverted when negative),
   and the mask bits its pixels get when a comparator passes or fails, which fold in
   the edge's FULL/PARTIAL class and "edge unused". Also ``|half_j|``, one copy per
   quad of lanes (each bit feeds 4 lanes' comparators, not 16).
5. *Edge determination*: each lane tests its 16 pixels ``b + lo_pixel`` with 8
   comparators by the same +-symmetry (the seed's Fig. 18a "8 columns"): one unsigned
   comparison of folded ``b`` with ``|lo_pixel|`` decides both pixels of a pair, and
   each mask bit is one LUT of that comparison and the stage-4 pass/fail bits
   (:meth:`BlockRasterizer._lane_mask`). The per-edge lane masks are registered here,
   apart from the AND over the edges (Timing, below). So is the *mask plan*, per 16-bit
   chunk of the output mask: which of the lane groups that can reach the chunk (in any
   mode) writes it, whether this batch writes it, and whether the first batch fills it
   with the box mask (a FULL span) (:meth:`BlockRasterizer._mask_plan`). At 1x the
   combined span classes, which are only reported there, are formed here from copies
   of each edge's FULL and EMPTY bits registered in stage 4 (the edges' registers sit
   apart on the device; MSAA builds form them in stage 2 for the ranks).
6. *Lane masks*: each lane ANDs its edges' masks, registered (the comparators of the
   four edges sit apart on the device, and the crossbar below spans the lanes).
7. *Final mask*: each output bit is one multiplexer over the lane bits that can reach
   it (in every mode together: at most 16, and span ``k`` can only come from groups
   ``0..k``), then one LUT with the box mask and the fill bit, into the output
   register, which is the output port's payload.

Throughput: the MSAA schedule
-----------------------------
Per edge the ``L = lanes`` lanes (default 16) test ``16 L`` samples per clock. With 16
lanes, at 1x lane ``k`` is span ``k``: every block takes one clock. With ``S`` samples
the ``p`` combined-PARTIAL spans are numbered in order (their *rank*) and their
``(rank, sample)`` pairs go through the lanes ``L`` at a time: for ``S <= L`` in batches
of ``L / S`` spans, the ``S`` lanes of group ``r`` holding the ``S`` samples of span
``order[r]``; for ``S > L`` (a *wide* mode: 16x at 8 lanes, 8x and 16x at 4) a span's
samples take ``S / L`` batches, lane ``l`` holding sample ``bL + l`` in the span's batch
``b``. With fewer than 16 lanes 1x is batched too (as ``S = 1``: lane ``r`` takes span
``order[r]``). A block takes ``max(1, ceil(p*S/L))`` clocks
(``golden.raster.block_clocks``; at 16 lanes ``max(1, ceil(16*p*S/256))``, the
seed's); FULL and EMPTY spans are written in the first batch and cost nothing. Earlier
stages hold while a block's batches go through. In a wide mode each lane's sample
values (``lane_lo``) are kept in stage 3 as ``S / L`` sets that rotate with each batch
(:meth:`BlockRasterizer._rotate_samples`), ``order`` moves on after a span's last
batch, and the output mask's chunks that a wide mode reaches are written in pieces of
``L`` bits, each by the batch that holds its samples.

Clocks per block on the bench's mixed workload (638 blocks per mode; blocks / samples
per clock from ``block_clocks``):

=====  ===============  ===============  ===============
mode   16 lanes         8 lanes          4 lanes
=====  ===============  ===============  ===============
1x     1.000 / 256      0.889 / 227      0.679 / 174
2x     0.889 / 455      0.679 / 348      0.440 / 225
4x     0.679 / 696      0.440 / 451      0.251 / 258
8x     0.440 / 902      0.251 / 515      0.126 / 258
16x    0.251 / 1030     0.126 / 515      0.063 / 258
=====  ===============  ===============  ===============

Flow control
------------
The stages form a rigid pipeline: stages 4-6 (3b-6 at ``latency`` 8 and 9) and the
output register move together whenever the output word is not complete or is being
taken (``adv = ~o.valid | o.ready``); stages 1-3 (and 2b) and the input buffer move with
them unless stage 3 still has batches of its block to issue (a register, ``more``). In
MSAA builds the two signals that every copy's ``more`` reads are registers: ``more_in``
("the block in stage 2 has more than one batch", loaded with stage 2 from the count of
the block entering it; at ``latency=9`` stage 2b's, from the count of the block
entering stage 2b) and ``more_on`` ("the block in stage 3 has batches after this
one"). Every register
enable is one LUT of ``o.ready`` and registers, and the malformed check of the input
buffer is decoded as a block enters it (a bubble-squeezing pipeline chains the enables
through every stage, which was the critical path on the ECP5). One enable for a whole
stage would fan out to thousands of flip-flops across the device, so each group of
registers has an enable of its own, from its own copy of the state (:class:`_Flow`): an
edge's registers of one of stages 1-3, a quad of lanes' of one edge (one copy in stage
3, one in stages 4-5), an edge's class registers in stages 4-6, a quarter of the output
word, the rest of each stage, and each of the input buffer's 14 parts (the box, the
other block fields, and each edge's ``lo16``, ``A`` and ``B``): 75 copies, each two to
four flip-flops and a few LUTs. The one signal every copy reads, "stage 5 holds a
block's last batch", is a register that each copy loads into a ``done`` register of its
own, so its net runs from register to register. A bubble inside the pipeline stays while
the output is stalled; with the output ready a block per clock goes through. ``i.ready``
is the input buffer's registered "not full".

Exact arithmetic in few bits
----------------------------
With ``W = int_bits + subpix``, ``|A|, |B| <= 2**W``. A span corner is at most 8 pixels
from the centre, so ``|corner offset| <= 2**(W + subpix + 4)``; ``lo16`` is saturated to
``W + subpix + 6`` bits, which keeps every corner sign. Where an edge is PARTIAL on a
span, its corners straddle zero, so every value inside the span (centre, pixels,
samples) lies in ``[-2**(W + subpix + 3), 2**(W + subpix + 3))``: the lane arithmetic is
done modulo ``2**(W + subpix + 4)`` and is exact wherever its result is used; elsewhere
the class (FULL/EMPTY) decides. Every pixel and span offset is a multiple of
``2**(subpix - 1)`` (pixel centres lie on half pixels), and ``x + o >= 0`` exactly when
``(x >> k) + (o >> k) >= 0`` for ``o`` a multiple of ``2**k`` (floor shifts), so the
lanes drop those ``subpix - 1`` low bits: their adders and comparators are ``W + 5``
bits wide (25 at the default 12.8 format, not 32), and the corner tests likewise drop
the ``subpix + 2`` low bits of ``lo``.

Timing
------
Figures are in the README's Block 4 section (ECP5-85F, ``make synth`` flow). Before
issue 16 the 1x build ran at 74.4 MHz after routing, its critical path a stage-4
register, one lane's comparator chain and long routes into a stage-5 lane-mask
register. Earlier, any logic shared between two stage enables had chained two long
routes on one path, hence every enable is one LUT of ``o.ready`` and registers of its
own; and as one enable per stage drove the clock enables of thousands of flip-flops
across the block, each group of registers now has its own (:class:`_Flow`). The other
changes for the 1x build: the lane-mask stage 6 (latency 6 -> 7, the spec allows 7),
``lo16 - bias`` beside the saturation's range test, the span-in-box bits registered in
stage 2, "edge unused" folded in stage 3, ``|half_j|`` per quad of lanes, a ``done``
register per flow copy and the combined classes formed in stage 5 at 1x (from per-edge
copies registered in stage 4). So the 1x build routed at 82.15 MHz, its critical path
the input buffer's: one part's ``move`` enable, built by yosys as two LUTs (``~ok |
adv``) and driving the clock enables of that part's 85-bit head and spare registers
spread across the device, into its copy's ``ok`` register (12.2 ns, 11.2 ns of it
routing). Hence ``move`` is now one LUT of a register ``hold`` (:class:`_Flow`), the
input buffer is in 14 parts with flags of their own and a spare with no enable, an
edge's stages 1-3 have a flow copy per stage, and constants are not registered (a
constant register is one net to all its users): 115.49 MHz routed (placement
estimate 82.52 MHz).

The MSAA builds are harder to route (the lane multiplexers of stage 4 and the crossbar
into the output mask). Before issue 16 the ``(1, 4)`` build routed at 33.8 MHz, its
critical path a chain of 15 adders that counted the span ranks in stage 3, now a prefix
count of 3 small adders; the ``(1, 2, 4)`` build fitted but did not route. In the
``(1, 4)`` build the longest chains then ran from the stage-2 corner signs through the
span classes, their combination, the ranks and the count into ``order`` and into the
``more`` registers of every flow copy; hence the combined classes are registered in
stage 2, and the ranks, the count and "more than one batch" are gates (:func:`_add_bits`,
:func:`_greater`; ``+`` on 2-5 bits became carry chains). The area of the MSAA
builds hangs on how ABC maps stage 4's 8:1 choices of ``half_j`` (24 bits, 64 lanes and
edges): mapped for the best delay (yosys's default), they took thousands of LUT4 more
once these cuts made them the deepest logic (every mode 61,689 LUT4, 73.8 %); with a
delay target for ABC9 (10 ns, ``tb.synth.yosys_prefix``) the every-mode build takes
58,192 (69.6 %). The output
mask was half the area of the every-mode build: written mode by mode (a ``Switch`` over
the modes, in each a span field chosen from the lane groups), its 4,096 bits took
32,107 LUT4 (the output stage alone, ``synth_ecp5``); written chunk by chunk from the
plan of stage 5 (:meth:`BlockRasterizer._write_mask`), 17,129. With those changes the
``(1, 4)`` build routed at 49.83 MHz, its critical path from ``order`` through a lane's
span choice and its adder into stage 4 (79 % routing); ``latency=8`` cuts that path
with stage 3b (the chosen ``half_j`` registered before the adder) at one clock of
latency and about 4,300 flip-flops: 53.69 MHz routed, the critical path then stage 3's
count into "more than one batch" and its long routes to every flow copy's ``more``;
hence that bit is now a stage-2 register (its count from stage 2's combined classes
before their registers), and so is "batches after this one". The deepest logic was then
stage 3's ranks into ``order`` and stage 2's count (by a netlist model, README step 11):
the ranks and the count are now counted once, in stage 2, and registered, and the box
bits that led stage 2's chain are registered in stage 1. With 8 lanes the ``(1, 4)``
build routed at 54.27 MHz, its critical path stage 2's chain from a corner's carry chain
through the classes and the ranks' count into ``more_in``; ``latency=9`` cuts it with
stage 2b, and registers each lane's span in stage 3 (the next deepest logic by the
netlist model: ``order`` and the mode through the span into stage 3b's choice of
``half_j``; docs/raster.md, step 13).

Decisions where the spec is open
--------------------------------
* **Ports.** ``i`` takes :meth:`BlockRasterizer.in_layout`, ``o`` gives
  :meth:`BlockRasterizer.out_layout`, one word per block, in input order. ``msaa`` is
  ``log2(samples)``. ``tag`` (``tag_bits``) is carried through unchanged, for the
  primitive id. The mask is span-major, bit ``(16*k + p)*S + s`` for span ``k``, pixel
  ``p = 4*py + px`` in it, sample ``s`` (the standard D3D11 order); bits from
  ``256*S`` up are zero.
* **Triangles on a 4-edge build** send ``n_edges = 3``: edge 3's fields are ignored and
  its reported classes are zero (neither FULL nor PARTIAL).
* **Box**: ``x0, y0, x1, y1`` inclusive pixels; an empty box (``x0 > x1``) gives an
  all-empty block. Spans with no pixel in the box are EMPTY on every edge.
* **Malformed input** -- an ``msaa`` code the build does not support, or ``n_edges``
  other than 3 (or 4 on a 4-edge build) -- is dropped in the input buffer without using
  a pipeline slot, and sets the sticky ``error`` output until reset. Nothing else is
  lost or reordered.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.sync import StreamBuffer
from hw.params import check_int, check_pow2

__all__ = ["SAMPLE_COUNTS", "SAMPLE_PATTERNS", "BlockRasterizer", "TriangleSetup", "BlockTraversal",
           "PixelPacker", "RasterPipeline", "DESIGNS"]

#: MSAA modes: samples per pixel.
SAMPLE_COUNTS = (1, 2, 4, 8, 16)

#: Standard D3D11/Vulkan sample offsets from the pixel centre, 1/16 pixel, (x, y), y down.
SAMPLE_PATTERNS = {
    1: ((0, 0),),
    2: ((4, 4), (-4, -4)),
    4: ((-2, -6), (6, -2), (-6, 2), (2, 6)),
    8: ((1, -3), (-1, 3), (5, 1), (-3, -5), (-5, 5), (-7, -1), (3, 7), (7, -7)),
    16: ((1, 1), (-1, -3), (-3, 2), (4, -1), (-5, -2), (2, 5), (5, 3), (3, -5),
         (-2, 6), (0, -7), (-4, -6), (-6, 4), (-8, 0), (7, -4), (6, 7), (-7, -8)),
}

SPANS = 16          # 4x4 spans per block
LANES = 16          # lanes per edge, 16 pixels each: 256 samples per edge per clock

# The 12 lattice entries i = 13..24 (offset (4(c-2), 4(r-2)) px, i = 5r + c); entry
# 24 - i has the opposite offset. As (i, a, b): corner offset = (a*A + b*B) << (subpix+2).
_CORNER_PAIRS = tuple((i, i % 5 - 2, i // 5 - 2) for i in range(13, 25))

# Pixels p = 8..15 (py = 2, 3): pixel-centre offset = ((2px-3)*A + (2py-3)*B) << (subpix-1),
# span-centre offset of span k = same for k << (subpix+1); p and 15-p are opposite.
_HALF = tuple((p, 2 * (p % 4) - 3, 2 * (p // 4) - 3) for p in range(8, 16))


def _check_modes(modes):
    try:
        items = tuple(modes)
    except TypeError:
        raise TypeError(f"modes must be a sequence of sample counts, not {modes!r}") from None
    allowed = ", ".join(map(str, SAMPLE_COUNTS))
    for item in items:
        if not isinstance(item, int) or isinstance(item, bool):
            raise TypeError(f"modes must hold integers, not {item!r}")
        if item not in SAMPLE_COUNTS:
            raise ValueError(f"modes must hold sample counts from {allowed}, not {item}")
    if not items or len(set(items)) != len(items):
        raise ValueError(f"modes must hold 1 to 5 distinct sample counts from {allowed}, "
                         f"not {items!r}")
    return tuple(sorted(items))


def _log2(n):
    return n.bit_length() - 1


def _odd_parts(values):
    """Odd parts of the magnitudes of nonzero ``values``."""
    return {abs(v) >> _log2(abs(v) & -abs(v)) for v in values if v}


def _multiple(odd, k):
    """``k * X`` from the odd multiples ``odd`` of X (shifts and at most a negation)."""
    if k == 0:
        return Const(0, 1)
    shift = _log2(abs(k) & -abs(k))
    value = odd[abs(k) >> shift] << shift
    return -value if k < 0 else value


def _negated(a, b):
    """Which of ``a*A``, ``b*B`` (``"a"``, ``"b"`` or ``None``) :func:`_lin` takes from
    ``-A`` or ``-B`` shifted, so that ``a*A + b*B`` with no positive term is one
    subtraction (or none), not an addition and a negation: a coefficient ``<= -1`` whose
    magnitude is a power of two, the other ``<= 0``."""
    for name, k, other in (("a", a, b), ("b", b, a)):
        if k < 0 and (-k & (-k - 1)) == 0 and other <= 0:
            return name
    return None


def _lin(odd_a, odd_b, a, b):
    """``a*A + b*B`` with one adder when at most one coefficient is negative, or when
    ``odd_a`` / ``odd_b`` hold ``-A`` / ``-B`` under the key ``-1`` (:func:`_negated`)."""
    negated = _negated(a, b)
    if negated == "a" and -1 in odd_a:
        x = odd_a[-1] << _log2(-a)
        return x - _multiple(odd_b, -b) if b else x
    if negated == "b" and -1 in odd_b:
        x = odd_b[-1] << _log2(-b)
        return x - _multiple(odd_a, -a) if a else x
    if a < 0 and b < 0:
        return -(_multiple(odd_a, -a) + _multiple(odd_b, -b))
    if a < 0:
        return _multiple(odd_b, b) - _multiple(odd_a, -a)
    if b < 0:
        return _multiple(odd_a, a) - _multiple(odd_b, -b)
    return _multiple(odd_a, a) + _multiple(odd_b, b)


def _pair_signs(m, lo, off, name):
    """Signs of ``lo + off`` and ``lo - off`` (1: ``>= 0``) with one add/subtract.

    If ``lo`` and ``off`` have the same sign one of the two sums has that sign too; only
    the other needs computing (the seed's symmetry, Fig. 17).
    """
    lo_neg, off_neg = lo[-1], off[-1]
    ok = _wire(m, ~Mux(lo_neg ^ off_neg, lo + off, lo - off)[-1], name)
    plus = Mux(lo_neg, Mux(off_neg, 0, ok), Mux(off_neg, ok, 1))
    minus = Mux(lo_neg, Mux(off_neg, ok, 0), Mux(off_neg, 1, ok))
    return plus, minus


def _add_bits(m, a, b, name):
    """``a + b`` of two small unsigned values as gates (ripple carry), one bit longer
    than the wider, as a named signal: yosys maps ``+`` to carry chains even at two or
    three bits, and the chains' entry and exit cost more than the LUTs that ABC makes of
    these gates."""
    width = max(len(a), len(b))
    a, b = Cat(a, Const(0, width - len(a))), Cat(b, Const(0, width - len(b)))
    carry, bits = Const(0, 1), []
    for i in range(width):
        bits.append(a[i] ^ b[i] ^ carry)
        carry = (a[i] & b[i]) | (carry & (a[i] ^ b[i]))
    return _wire(m, Cat(*bits, carry), name)


def _popcount(m, bits, name):
    """The number of set bits of ``bits``, as gates (:func:`_add_bits`, a balanced tree)."""
    values = [Cat(bit) for bit in bits]
    if not values:
        return Const(0, 1)
    level = 0
    while len(values) > 1:
        values = [_add_bits(m, values[i], values[i + 1], f"{name}_{level}_{i}")
                  if i + 1 < len(values) else values[i] for i in range(0, len(values), 2)]
        level += 1
    return values[0]


def _greater(value, limit):
    """``value > limit`` for a constant ``limit``, as gates (no carry chain)."""
    if limit >= (1 << len(value)) - 1:
        return Const(0, 1)
    terms, equal = [], Const(1, 1)
    for i in reversed(range(len(value))):
        if not limit >> i & 1:
            terms.append(equal & value[i])
            equal = equal & ~value[i]
        else:
            equal = equal & value[i]
    return Cat(terms).any()


def _encode(one_hot):
    """Index of the set bit of a one-hot (or zero) vector."""
    return Cat(Cat(one_hot[k] for k in range(len(one_hot)) if k >> b & 1).any()
               for b in range((len(one_hot) - 1).bit_length()))


def _wire(m, value, name, shape=None):
    """``value`` as a named combinational signal, so that its uses share one copy."""
    sig = Signal(shape if shape is not None else value.shape(), name=name)
    m.d.comb += sig.eq(value)
    return sig


class _Stage:
    """The registers of one pipeline stage, all loaded when the stage advances. Each
    register belongs to a *group* (an edge, a quad of lanes, ...) whose enable is its own
    copy of the stage's (:class:`_Flow`)."""

    def __init__(self, name):
        self.name = name
        self.loads = {}                         # group -> assignments

    def reg(self, value, name, shape=None, group="misc"):
        """A register loaded with ``value`` (its shape unless given); a constant is
        passed on as it is (a constant register would be one net to all its users)."""
        if isinstance(value, Const):
            return value
        if shape is None:
            shape = value.shape() if hasattr(value, "shape") else unsigned(1)
        sig = Signal(shape, name=f"{self.name}_{name}", reset_less=True)
        self.loads.setdefault(group, []).append(sig.eq(value))
        return sig

    def regs(self, values, name, shape=None, group="misc"):
        """One register per value; ``group`` may be a function of the index."""
        return [self.reg(v, f"{name}{k}", shape, group(k) if callable(group) else group)
                for k, v in enumerate(values)]

    def commit(self, m, enable):
        """Load each group's registers when ``enable(group)``."""
        for group, loads in self.loads.items():
            with m.If(enable(group)):
                m.d.sync += loads


class _Flow:
    """Copies of the pipeline's flow-control state, one per group of registers.

    The stage enables -- ``adv`` (stages 4, 5 and the output word move: ``~full |
    o.ready``), ``load`` (stages 1-3: ``adv & ~more``) and ``move`` (the input buffer's
    head: ``load | ~ok``) -- would each drive the clock enables of thousands of flip-flops
    spread across the device, and such a net's long routes were the timing budget. So
    each group of registers (an edge's in one stage, a quad of lanes', a field of the
    input buffer, ...) gets an enable of its own: one LUT of ``o.ready`` and the
    registers of its own copy of the state (``full``: the output word is complete,
    ``done``: stage 6 holds a block's last batch, ``more``: stage 3 has batches left).
    Every copy follows the same next-state rule from the same inputs, so all are equal at
    every clock; as each copy's next state reads its own registers, yosys does not merge
    them. Each copy's ``done`` loads ``ending`` (a register: stage 5 holds a block's last
    batch) directly, so the one net that reaches every copy goes from a register to the
    copies' registers with no logic on the way.

    A ``move`` copy keeps ``hold`` = ``ok & (more | full)`` (``ok``: a well-formed block
    is at the input buffer's head) instead of ``ok``, so that ``move = ~hold | (~more &
    o.ready)`` is one LUT that shares nothing with ``adv``. (Kept as ``ok``, yosys built
    ``move`` as ``~ok | adv``, two LUTs with a long route between them: the 1x build's
    critical path.) Its next state needs no ``ok``: the head holds only while ``ok``.
    The copy's ``ok_in`` (a well-formed block enters the head when it moves) comes from
    its own part of the input buffer.
    """

    def __init__(self, m, ready, batches):
        self.m, self.ready, self.batches = m, ready, batches
        self.ending = Signal()      # a register: stage 5 holds the last batch of a block
        self.more_in = Signal()     # the block entering stage 3 has batches after its first
        self.more_on = Signal()     # the block in stage 3 has batches after this one
        self.copies = {}

    def enable(self, kind, group, ok_in=None):
        """The enable ``kind`` ("adv", "load" or "move") of the registers of ``group``;
        a "move" copy needs its ``ok_in`` when first asked for."""
        return self.copy(kind, group, ok_in)["enable"]

    def copy(self, kind, group, ok_in=None):
        """The copy of the state behind ``enable(kind, group)``: its ``enable``, ``full``
        and ``more`` (a constant 0 in a 1x-only build, which has no batches)."""
        key = (kind, group)
        if key not in self.copies:
            self.copies[key] = self._new_copy(kind, "_".join(map(str, (kind,) + (
                group if isinstance(group, tuple) else (group,)))), ok_in)
        return self.copies[key]

    def _new_copy(self, kind, name, ok_in):
        m, ready = self.m, self.ready
        full = Signal(name=f"{name}_full")
        done = Signal(name=f"{name}_done")
        more = Signal(name=f"{name}_more") if self.batches and kind != "adv" else Const(0, 1)
        adv = ~full | ready
        load = ~more & adv
        full_next = Mux(adv, done, full)
        more_next = Const(0, 1)
        m.d.sync += [done.eq(Mux(adv, self.ending, done)), full.eq(full_next)]
        if isinstance(more, Signal):
            more_next = Mux(load, self.more_in, Mux(adv, self.more_on, more))
            m.d.sync += more.eq(more_next)
        if kind == "move":
            hold = Signal(name=f"{name}_hold")  # ok & (more | full): the head stays
            enable = _wire(m, ~hold | (~more & ready), name)
            # ok after this clock: ok_in if the head moves, else ok (= 1 while it holds)
            m.d.sync += hold.eq((~enable | ok_in) & (more_next | full_next))
        else:
            enable = _wire(m, adv if kind == "adv" else load, name)
        return {"enable": enable, "full": full, "more": more}


class BlockRasterizer(wiring.Component):
    """The 16x16 span-parallel block rasterizer; the module docstring explains it.

    Parameters
    ----------
    edges : int
        Edges supported per primitive: 3 (triangles) or 4 (also quads / wide lines).
    modes : sequence of int
        MSAA modes supported (samples per pixel, from 1, 2, 4, 8, 16); the output mask
        holds ``256 * max(modes)`` bits.
    subpix : int
        Fractional bits of a coordinate (4 to 12).
    int_bits : int
        Integer bits of a coordinate (5 to 16): frames up to ``2**int_bits`` pixels.
    tag_bits : int
        Width of the ``tag`` carried from input to output (1 to 64).
    latency : int
        Clocks from an input handshake to the output word: 7 (the spec's bound), or 8 in
        a build with an MSAA mode, which registers each lane's span choice before its
        adder (stage 3b) for a shorter path on the FPGA, or 9, which also ranks and
        counts the PARTIAL spans in a stage of their own (stage 2b) after the corner
        signs and span classes of stage 2. The clocks per block are the same either way
        (every mode: ``max(1, ceil(p*S/lanes))``); only the latency of every mode of the
        build grows, by one or two.
    lanes : int
        16-pixel lanes per edge: 16 (the spec's 256 samples per edge per clock), or 8 or
        4 in a build with an MSAA mode, for area: a block with ``p`` PARTIAL spans at
        ``S`` samples takes ``max(1, ceil(p*S/lanes))`` clocks (module docstring, "the
        MSAA schedule"), every mode batched, 1x too. Any mode works with any lanes (16x
        at 8 lanes takes two batches a span). A 1x-only build keeps 16 (lane ``k`` is
        span ``k``, one clock a block; fewer lanes are refused).

    Attributes
    ----------
    i : stream of :meth:`in_layout`, in
        One block per word.
    o : stream of :meth:`out_layout`, out
        One word per accepted well-formed block, in order.
    error : unsigned(1), out
        Sticky: set when a malformed block was dropped; cleared by reset only.

    Notes
    -----
    Figures (12.8 coordinates, 4 edges; ``synth_ecp5`` as ``tb.synth`` runs it, the MSAA
    builds with an ABC9 delay target of 10 ns; LUT4 counting a CCU2C as 2, of the
    ECP5-85F's 83,640; the README's Block 4 section has the history):

    ==================================  ==================  ==============  ==================
    build                               LUT4                flip-flops      Fmax
    ==================================  ==================  ==============  ==================
    ``modes=(1,)``                      25,285 (30.2 %)     12,849          115.49 MHz routed
    ``modes=(1, 4)``                    37,842 (45.2 %)     15,502          49.83 MHz routed
    every mode (default)                58,192 (69.57 %)    20,607          not measured
    ``modes=(1, 4), latency=8``         37,773 (45.16 %)    19,762          53.69 MHz routed
    every mode, ``latency=8``           58,179 (69.56 %)    24,886          not measured
    ``(1, 4), latency=8, lanes=8``      26,211 (31.34 %)    15,537          54.27 MHz routed
    ``(1, 4), latency=9, lanes=8``      26,858 (32.11 %)    16,350          81.97 MHz routed
    ``(1, 2, 4), latency=9, lanes=8``   29,182 (34.89 %)    16,578          91.37 MHz routed
    every mode, ``latency=9, lanes=8``  43,616 (52.15 %)    22,753          82.03 MHz routed
    ==================================  ==================  ==============  ==================

    For the ECP5 the MSAA builds take ``latency=9, lanes=8`` (``tb/synth.py``'s targets);
    the defaults keep the spec's schedule (16 lanes) for simulation.

    Per mode (the schedule, any build): 1x 1.000 block / 256 samples per clock, 2x
    0.889 / 455, 4x 0.679 / 696, 8x 0.440 / 902, 16x 0.251 / 1030 on the bench's mixed
    workload; latency 7 clocks (8 at ``latency=8``, 9 at ``latency=9``); fewer at
    fewer lanes (module docstring).
    """

    def __init__(self, *, edges=4, modes=SAMPLE_COUNTS, subpix=8, int_bits=12, tag_bits=16,
                 latency=7, lanes=LANES):
        self.edges = check_int("edges", edges, 3, 4)
        self.modes = _check_modes(modes)
        self.subpix = check_int("subpix", subpix, 4, 12)
        self.int_bits = check_int("int_bits", int_bits, 5, 16)
        self.tag_bits = check_int("tag_bits", tag_bits, 1, 64)
        self.latency = check_int("latency", latency, 7, 9)
        if self.latency > 7 and max(self.modes) == 1:
            raise ValueError(f"latency must be 7 in a build without an MSAA mode (its lanes "
                             f"have no span choice to register), not {self.latency}")
        w = int_bits + subpix
        self.coef_bits = w + 1                  # A, B
        self.lo16_bits = 2 * w + 2              # lo16
        self.sat_bits = w + subpix + 6          # lo16 saturated for the corner tests
        self.lane_bits = w + subpix + 4         # span, pixel and sample values (modular)
        self.test_bits = w + 5                  # the same without their subpix - 1 LSBs
        self.max_samples = max(self.modes)
        self.msaa_modes = tuple(s for s in self.modes if s > 1)
        self.lanes = self._check_lanes(lanes)
        # the modes whose blocks go through the lanes in batches of PARTIAL spans (at 1x
        # with 16 lanes lane k is span k: one batch)
        self.batched = tuple(s for s in self.modes if s > 1 or self.lanes < LANES)
        # the wide modes: more samples than lanes, several batches per span
        self.wide = tuple(s for s in self.modes if s > self.lanes)
        # the batch number of a block: up to 16 spans' samples, lanes at a time
        self.batch_bits = max(4, (SPANS * self.max_samples // self.lanes - 1).bit_length())
        self.lane_groups = 4                    # register groups with enables of their own
        super().__init__({
            "i": In(stream.Signature(self.in_layout())),
            "o": Out(stream.Signature(self.out_layout())),
            "error": Out(1),
        })

    def _check_lanes(self, lanes):
        """``lanes``: a power of two from 4 to 16; below 16 only in an MSAA build."""
        check_pow2("lanes", lanes, 4, LANES)
        if lanes < LANES and not self.msaa_modes:
            raise ValueError(f"lanes must be 16 in a build without an MSAA mode (lane k "
                             f"is span k), not {lanes}")
        return lanes

    def _subs(self, n):
        """Batches per span at ``n`` samples: ``n / lanes`` in a wide mode (more samples
        than lanes: a span's samples go through ``lanes`` at a time), else 1."""
        return max(1, n // self.lanes)

    def _one_x(self, mode):
        """The 1x mode bit where 1x has a lane per span (lane ``k`` is span ``k``, 16
        lanes) beside batched modes; ``None`` where 1x is batched or not a mode."""
        return mode[0] if 1 in self.modes and 1 not in self.batched else None

    # ------------------------------------------------------------------ layouts

    def edge_layout(self):
        """One edge: ``lo16`` (E at the block centre), ``A``, ``B``, ``bias``."""
        return data.StructLayout({
            "lo16": signed(self.lo16_bits),
            "A": signed(self.coef_bits),
            "B": signed(self.coef_bits),
            "bias": unsigned(1),
        })

    def in_layout(self):
        """A block: position, clipped box (inclusive pixels), mode, edges, tag."""
        coord = unsigned(self.int_bits)
        return data.StructLayout({
            "bx": unsigned(self.int_bits - 4),
            "by": unsigned(self.int_bits - 4),
            "bbox": data.StructLayout({"x0": coord, "y0": coord, "x1": coord, "y1": coord}),
            "msaa": unsigned(3),
            "n_edges": unsigned(3),
            "tag": unsigned(self.tag_bits),
            "edge": data.ArrayLayout(self.edge_layout(), self.edges),
        })

    def out_layout(self):
        """A block's result: position, tag, mode, classes (bit k = span k), mask."""
        return data.StructLayout({
            **self._block_fields(),
            "edge_full": data.ArrayLayout(SPANS, self.edges),
            "edge_partial": data.ArrayLayout(SPANS, self.edges),
            "span_full": unsigned(SPANS),
            "span_partial": unsigned(SPANS),
            "mask": unsigned(256 * self.max_samples),
        })

    def _block_fields(self):
        """The fields a block carries from input to output: position, tag, mode, edges."""
        return {
            "bx": unsigned(self.int_bits - 4),
            "by": unsigned(self.int_bits - 4),
            "tag": unsigned(self.tag_bits),
            "msaa": unsigned(3),
            "n_edges": unsigned(3),
        }

    def _meta_layout(self):
        """What travels with a block through the stages unchanged."""
        return data.StructLayout({
            **self._block_fields(),
            "mode": unsigned(len(self.modes)),      # one-hot over self.modes
            "used": unsigned(self.edges),           # the edges that take part
        })

    # ------------------------------------------------------------------ helpers

    def _by_mode(self, mode, values):
        """``values[S]`` for the mode ``S`` selected by the one-hot ``mode``."""
        items = [(self.modes.index(s), v) for s, v in values.items()]
        result = items[-1][1]
        for index, value in reversed(items[:-1]):
            result = Mux(mode[index], value, result)
        return result

    def _quad(self, lane):
        """The register group of lane ``lane`` (lanes ``4q .. 4q + 3`` at 4 groups)."""
        return lane * self.lane_groups // self.lanes

    def _odd_multiples(self, x, odd_set):
        """``{k: k*x}`` for the odd ``k`` in ``odd_set`` (and ``-1``): one adder each
        beyond 1."""
        table = {-1: -x, 1: x, 3: (x << 1) + x, 5: (x << 2) + x, 7: (x << 3) - x}
        return {k: table[k] for k in sorted(odd_set)}

    # ------------------------------------------------------------------ elaboration

    def elaborate(self, platform):
        m = Module()
        flow = _Flow(m, self.o.ready, bool(self.msaa_modes))
        head, head_ok = self._input(m, flow)

        v1, v2, v3, v4 = (Signal(name=f"v{k}") for k in range(1, 5))
        s1, s2, s3, s4, s5, s6 = (_Stage(f"s{k}") for k in range(1, 7))
        r1 = self._offsets(m, head, s1)
        # latency 9: stage 2 ends at the combined classes, stage 2b ranks and counts them
        s2b = _Stage("s2b") if self.latency == 9 else None
        r2 = self._corners(m, r1, s2, split=s2b is not None)
        r2b = r2 if s2b is None else self._rank_stage(m, r2, s2b)
        r3 = self._span_select(m, r2b, s3)
        batch = Signal(self.batch_bits)         # batch of the block in stage 3
        misc = flow.copy("load", "misc")        # more: stage 3 holds, batches are left
        # latency 8 and 9: stage 3b registers each lane's span choice, stage 4 adds it
        s3b = _Stage("s3b") if self.latency >= 8 else None
        r3b = r3 if s3b is None else self._span_choice(m, r3, batch, misc["more"], s3b)
        r4 = self._lane_select(m, r3b, r3b.get("batch", batch), r3b.get("more", misc["more"]),
                               s4)
        r5 = self._edge_masks(m, r4, s5)
        r6 = self._and_edges(m, r5, s6)
        self._output(m, r6, flow)

        # A rigid pipeline (see the module docstring and _Flow).
        if self.msaa_modes:
            # more_in and more_on reach every flow copy's `more`: both are registers, so
            # their nets run from a register (computed from stage 3's registers, the
            # count behind more_in was the (1, 4) build's routed critical path with its
            # long routes to the copies). more_in: stage 2 holds a block with more than
            # one batch, loaded with stage 2 from the block entering it; more_on: the
            # block in stage 3 has batches after this one (batch + 1 != n_last), kept
            # for the batch that follows each load and advance.
            # (latency 9: more_in is stage 2b's, from the registered combined classes)
            last = s2 if s2b is None else s2b
            more_in, more_on = Signal(name=f"{last.name}_more_in"), Signal(name="more_on")
            last.loads.setdefault("misc", []).append(more_in.eq(
                (v1 if s2b is None else v2) & r2b["more"]))
            advance = flow.enable("adv", "misc")
            with m.If(misc["enable"]):
                m.d.sync += more_on.eq(~r3["second_last"])
            with m.Elif(advance):
                m.d.sync += more_on.eq(batch + 2 != r3["n_last"])
        else:                                   # 1x only: no batches (constants)
            more_in, more_on = v2 & r3["more_in"], batch + 1 != r3["n_last"]
        m.d.comb += [
                     flow.more_in.eq(more_in),
                     flow.more_on.eq(more_on),
                     self.o.valid.eq(flow.copy("adv", "out")["full"])]
        stages = ((s1, "load"), (s2, "load")) + (
            () if s2b is None else ((s2b, "load"),)) + ((s3, "load"),) + (
            () if s3b is None else ((s3b, "adv"),)) + ((s4, "adv"), (s5, "adv"), (s6, "adv"))
        for stage, kind in stages:
            stage.commit(m, lambda group, kind=kind, stage=stage:
                         flow.enable(kind, self._flow_group(stage, kind, group)))
        load, adv = misc["enable"], flow.enable("adv", "misc")
        with m.If(load):
            if s2b is None:
                m.d.sync += [v1.eq(head_ok), v2.eq(v1), v3.eq(v2), batch.eq(0)]
            else:
                v2b = Signal(name="v2b")
                m.d.sync += [v1.eq(head_ok), v2.eq(v1), v2b.eq(v2), v3.eq(v2b), batch.eq(0)]
        with m.Elif(adv):                       # here more = 1: the next batch
            m.d.sync += batch.eq(batch + 1)
        with m.If(adv):                         # ending: stage 5 holds a block's last batch
            if s3b is None:
                m.d.sync += v4.eq(v3)
            else:
                v3b = Signal(name="v3b")
                m.d.sync += [v3b.eq(v3), v4.eq(v3b)]
            m.d.sync += flow.ending.eq(v4 & r4["last"])
        if self.msaa_modes:                     # the next batch's spans move to the front
            order = r3["order"]
            with m.If(adv & misc["more"]):
                m.d.sync += [order[j].eq(self._by_mode(r3["meta"].mode, {
                    n: self._next_order(order, j, n, batch) for n in self.batched}))
                    for j in range(SPANS)]
            self._rotate_samples(m, r3, flow)
            self._advance_spans(m, r3, batch, flow)
        return m

    def _next_order(self, order, j, n, batch):
        """``order[j]`` for the next batch at ``n`` samples: ``lanes / n`` spans on, or in
        a wide mode one span on after the span's last batch."""
        step = max(1, self.lanes // n)
        after = order[j + step] if j + step < SPANS else 0
        if n not in self.wide:
            return after
        subs = self._subs(n)
        return Mux(batch[:_log2(subs)] == subs - 1, after, order[j])

    def _rotate_samples(self, m, r3, flow):
        """Wide modes: each lane's sample values move on by one set with each batch of
        a block (set ``r`` holds the lane's ``lo`` plus its sample ``r*lanes + l``), so
        that the lane reads the batch's set from one register with no batch number; a
        span's last batch brings back set 0 for the next span. Each quad of lanes of an
        edge rotates with its own flow copy's ``adv & more``."""
        if not self.wide:
            return
        mode = r3["meta"].mode
        wide = Cat(mode[self.modes.index(n)] for n in self.wide).any()
        for e, edge in enumerate(r3["edges"]):
            sets = [edge["lane_lo"]] + edge["lane_sets"]
            for lane in range(self.lanes):
                copy = flow.copy("load", (e, self._quad(lane)))
                with m.If((~copy["full"] | self.o.ready) & copy["more"] & wide):
                    m.d.sync += [sets[r][lane].eq(self._by_mode(mode, {
                        n: sets[(r + 1) % self._subs(n)][lane] if r < self._subs(n)
                        else sets[r][lane] for n in self.wide}))
                        for r in range(len(sets))]

    def _advance_spans(self, m, r3, batch, flow):
        """``latency=9``: each lane's span register (stage 3, one per edge) moves on with
        ``order`` to the next batch's span, with its quad's flow copy (``adv & more``)."""
        if "span" not in r3["edges"][0]:
            return
        order, mode = r3["order"], r3["meta"].mode
        spans = self._lane_spans(m, order, mode, "span_next",
                                 lambda j, n: self._next_order(order, j, n, batch))
        for e, edge in enumerate(r3["edges"]):
            for lane, span in enumerate(edge["span"]):
                copy = flow.copy("load", (e, self._quad(lane)))
                with m.If((~copy["full"] | self.o.ready) & copy["more"]):
                    m.d.sync += span.eq(spans[lane])

    @staticmethod
    def _flow_group(stage, kind, group):
        """The flow copy (:class:`_Flow`) of a stage's register group: in stages 1-3 each
        edge's registers and the rest, in stages 4-6 the rest, have one per stage (an
        edge's stages 1-3 were 739 flip-flops on one enable at 1x); lane quads, the
        edges' class registers of stages 4-6 and the output word's quarters have one
        across their stages."""
        if group == "misc" or (kind == "load" and isinstance(group, int)):
            return (stage.name, group)
        return group

    def _input(self, m, flow):
        """The two-entry input buffer and the malformed-block filter.

        The buffer is a skid buffer: two registers, the head always in the first, so
        stage 1 reads it with no multiplexer or RAM in the way and ``i.ready`` is the
        register "the spare is empty". (With a LUT-RAM FIFO here the long route from its
        read pointer to the RAM was the critical path.) Each entry's "malformed" bit is
        decoded as it enters. ``move`` (stage 1 takes the head, or the head is empty or
        malformed) refills the head. The buffer is kept in parts (:meth:`_input_parts`:
        the box, the other block fields, and each edge's ``lo16``, ``A``, ``B``), each
        with its own copy of ``move`` (:class:`_Flow`), of "the spare is full" (which
        chooses between the spare and the input for every bit of the part) and of the
        spare's "malformed" bit, from which the part's copy of the flow state learns
        whether a well-formed block enters the head. An empty spare takes the input at
        every clock (its clock enable is "the spare is empty", a register), so only the
        head's registers hang on ``move``.

        Returns ``(head, ok)``: the block at the head and whether it is a well-formed
        block.
        """
        layout = self.in_layout()
        head_bits = Signal(layout.size, reset_less=True)
        spare_bits = Signal(layout.size, reset_less=True)
        head_ok, head_bad = Signal(), Signal()  # a well-formed / malformed block at the head
        payload, bad_in = self.i.payload.as_value(), self._malformed(self.i.payload)
        for k, ranges in enumerate(self._input_parts()):
            spare_valid = Signal(name=f"spare_valid{k}")
            spare_bad = Signal(name=f"spare_bad{k}")
            src_bad = Mux(spare_valid, spare_bad, bad_in)   # what enters the head
            src_valid = spare_valid | self.i.valid
            move = flow.enable("move", ("in", k), ok_in=src_valid & ~src_bad)
            with m.If(~spare_valid):
                m.d.sync += [spare_bits[lo:hi].eq(payload[lo:hi]) for lo, hi in ranges]
                m.d.sync += spare_bad.eq(bad_in)
            with m.If(move):
                m.d.sync += [head_bits[lo:hi].eq(Mux(spare_valid, spare_bits[lo:hi],
                                                     payload[lo:hi])) for lo, hi in ranges]
                m.d.sync += spare_valid.eq(0)
            with m.Elif(self.i.valid):          # taken only while the spare is empty
                m.d.sync += spare_valid.eq(1)
            if k == 0:                          # the block fields' part: flags and ready
                m.d.comb += self.i.ready.eq(~spare_valid)
                with m.If(move):
                    m.d.sync += [head_ok.eq(src_valid & ~src_bad),
                                 head_bad.eq(src_valid & src_bad)]

        error = Signal()
        with m.If(head_bad):
            m.d.sync += error.eq(1)
        m.d.comb += self.error.eq(error)
        return layout(head_bits), head_ok

    def _input_parts(self):
        """The input buffer's parts, each a list of ``(lo, hi)`` bit ranges of a block:
        the block fields but the box (with the flags and ``i.ready``), the box, and per
        edge ``lo16``, ``A`` and ``B`` with ``bias``."""
        layout, edge = self.in_layout(), self.edge_layout()
        box_at, box_end = layout["bbox"].offset, layout["bbox"].offset + layout["bbox"].shape.size
        edge_at = layout["edge"].offset
        parts = [[(0, box_at), (box_end, edge_at)], [(box_at, box_end)]]
        for e in range(self.edges):
            base = edge_at + e * edge.size
            parts += [[(base + edge[f].offset, base + edge[f].offset + edge[f].shape.width)]
                      for f in ("lo16", "A")]
            parts.append([(base + edge["B"].offset, base + edge.size)])    # B, bias
        return parts

    def _malformed(self, block):
        """An ``msaa`` code the build lacks, or an ``n_edges`` it does not take."""
        mode_ok = Cat(block.msaa == _log2(s) for s in self.modes).any()
        edges_ok = (block.n_edges == 3) | ((block.n_edges == 4) if self.edges == 4 else 0)
        return ~(mode_ok & edges_ok)

    def _offsets(self, m, head, st):
        """Stage 1: saturated ``lo``, corner offsets, odd multiples, box relative to block
        (MSAA builds: the box's pixel and span columns and rows)."""
        s = self.subpix
        samples = [xy for mode in self.msaa_modes for xy in SAMPLE_PATTERNS[mode]]
        odd = {1, 3} | _odd_parts(c for xy in samples for c in xy)
        # -A (-B) when two or more sample offsets save a negation with it (_negated)
        negated = [_negated(*xy) for xy in samples]
        neg_a, neg_b = ({-1} if negated.count(n) >= 2 else set() for n in ("a", "b"))
        wide = signed(self.coef_bits + 4)
        edges = []
        for e in range(self.edges):
            edge = head.edge[e]
            lo16 = edge.lo16
            top = lo16[self.sat_bits - 1:]
            inside = (top == 0) | (top == (1 << len(top)) - 1)
            limit = (1 << (self.sat_bits - 1)) - 1
            # sat(lo16) - bias: the subtraction runs beside the range test, not after it
            lo = Mux(inside, lo16[:self.sat_bits].as_signed() - edge.bias,
                     Mux(lo16[-1], Mux(edge.bias, -limit - 1, -limit),
                         Mux(edge.bias, limit - 1, limit)))
            odd_a = {k: _wire(m, v, f"a{k}x{e}".replace("-", "m")) for k, v in
                     self._odd_multiples(edge.A, odd | neg_a).items()}
            odd_b = {k: _wire(m, v, f"b{k}x{e}".replace("-", "m")) for k, v in
                     self._odd_multiples(edge.B, odd | neg_b).items()}
            edges.append({
                "lo": st.reg(lo, f"lo{e}", signed(self.sat_bits + 1), e),
                "off": st.regs([_lin(odd_a, odd_b, a, b) for _, a, b in _CORNER_PAIRS],
                               f"off{e}_", wide, e),
                "odd_a": {k: st.reg(v, f"a{k}x{e}".replace("-", "m"), wide, e)
                          for k, v in odd_a.items()},
                "odd_b": {k: st.reg(v, f"b{k}x{e}".replace("-", "m"), wide, e)
                          for k, v in odd_b.items()},
            })
        box = head.bbox
        if self.msaa_modes:
            # MSAA builds: the box's pixel columns and rows and the columns and rows of
            # spans with a pixel in it, here from the block's index, not in stage 2 from
            # the box relative to the block (there the span bits led the chain through
            # the combined classes, the ranks and the count into stage 2's registers).
            box = {
                "col": st.reg(self._in_box(box.x0, box.x1, head.bx, 1), "col"),
                "row": st.reg(self._in_box(box.y0, box.y1, head.by, 1), "row"),
                "span_cols": st.reg(self._in_box(box.x0, box.x1, head.bx, 4), "span_cols"),
                "span_rows": st.reg(self._in_box(box.y0, box.y1, head.by, 4), "span_rows")}
        else:
            origin_x, origin_y = head.bx << 4, head.by << 4
            rel = signed(self.int_bits + 1)
            box = {k: st.reg(v - o, k, rel) for k, v, o in (
                ("dx0", box.x0, origin_x), ("dx1", box.x1, origin_x),
                ("dy0", box.y0, origin_y), ("dy1", box.y1, origin_y))}
        mode = Cat(head.msaa == _log2(s) for s in self.modes)
        used = Cat(Const(0b111, 3), head.n_edges == 4) if self.edges == 4 else Const(0b111, 3)
        meta_value = Cat(head.bx, head.by, head.tag, head.msaa, head.n_edges, mode, used)
        return {"edges": edges, "box": box,
                "meta": self._meta_layout()(st.reg(meta_value, "meta",
                                                   self._meta_layout().size))}

    @staticmethod
    def _in_box(lo, hi, block, step):
        """Bit ``x``: pixels ``16*block + step*x .. + step - 1`` (a pixel column or row at
        ``step`` 1, a column or row of spans at 4) meet ``lo .. hi``: ``lo <= 16*block +
        step*x + step - 1``, ``hi >= 16*block + step*x`` (and ``lo <= hi``, implied at
        ``step`` 1), from the block's index compared with ``lo >> 4`` and ``hi >> 4`` and
        the bits of ``lo``, ``hi`` within the block (no subtraction)."""
        low = _log2(step)
        lo_before, lo_here = lo[4:] < block, lo[4:] == block
        hi_after, hi_here = hi[4:] > block, hi[4:] == block
        bits = [(lo_before | (lo_here & (lo[low:4] <= x)))
                & (hi_after | (hi_here & (hi[low:4] >= x))) for x in range(16 // step)]
        return Cat(b & (lo <= hi) if step > 1 else b for b in bits)

    def _corners(self, m, r1, st, split=False):
        """Stage 2: the 25 corner signs, pixel offsets, lane sample offsets, box masks;
        MSAA builds also the combined span classes, their ranks and count. ``split``
        (``latency=9``): the ranks, the count and the offsets are stage 2b's
        (:meth:`_rank_stage`); the odd multiples of ``A`` and ``B`` are passed on."""
        s = self.subpix
        edges, corner_signs = [], []
        mode, used = r1["meta"].mode, r1["meta"].used
        for e, edge in enumerate(r1["edges"]):
            lo = edge["lo"]
            pos = [None] * 25
            pos[12] = ~lo[-1]
            for (i, _, _), off in zip(_CORNER_PAIRS, edge["off"]):
                # lo + (off << s + 2) >= 0 exactly when (lo >> s + 2) + off >= 0.
                pos[i], pos[24 - i] = _pair_signs(m, lo >> (s + 2), off, f"corner{e}_{i}")
            corner_signs.append(Cat(pos))
            entry = {"pos": st.reg(Cat(pos), f"pos{e}", group=e)}
            if not split:
                entry["half"] = self._halves(edge, st, e)
            entry["lo"] = st.reg(lo[:self.lane_bits], f"lo{e}", group=e)
            # edge 3 may be unused (a triangle): its flag with the edge's registers
            entry["used"] = st.reg(used[e], f"used{e}", group=e) if e == 3 else Const(1, 1)
            if split:
                for key in ("odd_a", "odd_b"):
                    entry[key] = {k: st.reg(v, f"{key}{e}_{k}".replace("-", "m"), group=e)
                                  for k, v in edge[key].items()}
            else:
                entry["lane_msaa"], entry["lane_msaa_sets"] = \
                    self._lane_msaa(m, edge, mode, st, e)
            edges.append(entry)
        box = r1["box"]
        if self.msaa_modes:                     # registered in stage 1 (_offsets)
            col, row, cols, rows = box["col"], box["row"], box["span_cols"], box["span_rows"]
        else:
            col = Cat((box["dx0"] <= x) & (box["dx1"] >= x) for x in range(16))
            row = Cat((box["dy0"] <= y) & (box["dy1"] >= y) for y in range(16))
            # the spans with a pixel in the box: a column of spans x, a row y
            wide, high = box["dx0"] <= box["dx1"], box["dy0"] <= box["dy1"]
            cols = [wide & (box["dx0"] <= 4 * x + 3) & (box["dx1"] >= 4 * x)
                    for x in range(4)]
            rows = [high & (box["dy0"] <= 4 * y + 3) & (box["dy1"] >= 4 * y)
                    for y in range(4)]
        inbox = Cat(cols[k % 4] & rows[k // 4] for k in range(SPANS))
        result = {"edges": edges, "col": st.reg(col, "col"), "row": st.reg(row, "row"),
                  "inbox": st.reg(inbox, "inbox"),
                  "meta": self._meta_layout()(st.reg(r1["meta"].as_value(), "meta"))}
        if not self.msaa_modes:
            return result
        # MSAA builds: the combined classes a stage early, so that stage 3 starts the
        # ranks from registers (classes, combination and ranks were one chain).
        fulls, empties, inbox = [], [], _wire(m, inbox, "inbox")
        for e, pos in enumerate(corner_signs):
            pos = _wire(m, pos, f"pos{e}")
            full, part = (_wire(m, v, f"{n}_in{e}") for v, n in
                          zip(self._classes(pos, inbox), ("full", "part")))
            edge_used = used[e] if e == 3 else Const(1, 1)
            fulls.append(full | ~edge_used.replicate(SPANS))
            empties.append(~(full | part) & edge_used.replicate(SPANS))
        comb_full, comb_part = self._combine(m, inbox, fulls, empties)
        if split:
            return {**result, "comb_full": st.reg(comb_full, "comb_full"),
                    "comb_part": st.reg(comb_part, "comb_part")}
        # The ranks and the count once per block, here, from the combined PARTIAL spans
        # before their registers: stage 3 forms `order` and `n_last` from registers
        # (counted there, they were the deepest logic of the MSAA builds). The same
        # count gives `more`, for the register that reaches every flow copy (elaborate:
        # the block entering stage 2 has more than one batch).
        ranks, count = self._ranks_balanced(m, comb_part)
        return {**result, "comb_full": st.reg(comb_full, "comb_full"),
                "comb_part": st.reg(comb_part, "comb_part"),
                "rank": st.regs(ranks, "rank", unsigned(4)),
                "count": st.reg(count, "count", unsigned(5)),
                "more": self._more_batches(count, mode)}

    def _halves(self, edge, st, e):
        """The pixel-centre offsets ``half_j`` of one edge, registered in ``st``."""
        half = [_lin(edge["odd_a"], edge["odd_b"], a, b) for _, a, b in _HALF]
        return st.regs(half, f"half{e}_", signed(self.coef_bits + 3), e)

    def _rank_stage(self, m, r2, st):
        """Stage 2b (``latency=9`` only): the ranks, the count and "more than one batch"
        from stage 2's registered combined PARTIAL spans (at ``latency`` 7 and 8 they
        follow the corner carry chains and the classes in stage 2: the ``(1, 4)``
        build's routed critical path at 8 lanes); and the pixel-centre and lane sample
        offsets from the registered odd multiples, which are not on that path (so that
        they need no register stage of their own). The rest of stage 2 is passed on."""
        mode = r2["meta"].mode
        edges = []
        for e, edge in enumerate(r2["edges"]):
            entry = {"pos": st.reg(edge["pos"], f"pos{e}", group=e),
                     "half": self._halves(edge, st, e),
                     "lo": st.reg(edge["lo"], f"lo{e}", group=e),
                     "used": st.reg(edge["used"], f"used{e}", group=e)}
            entry["lane_msaa"], entry["lane_msaa_sets"] = self._lane_msaa(m, edge, mode,
                                                                          st, e)
            edges.append(entry)
        ranks, count = self._ranks_balanced(m, r2["comb_part"])
        return {"edges": edges, "col": st.reg(r2["col"], "col"),
                "row": st.reg(r2["row"], "row"), "inbox": st.reg(r2["inbox"], "inbox"),
                "meta": self._meta_layout()(st.reg(r2["meta"].as_value(), "meta")),
                "comb_full": st.reg(r2["comb_full"], "comb_full"),
                "comb_part": st.reg(r2["comb_part"], "comb_part"),
                "rank": st.regs(ranks, "rank", unsigned(4)),
                "count": st.reg(count, "count", unsigned(5)),
                "more": self._more_batches(count, mode)}

    def _more_batches(self, count, mode):
        """The block has more than one batch: more than ``lanes / S`` PARTIAL spans in
        its mode (``count`` of them; in a wide mode any), as gates from the count (no
        carry chain)."""
        return self._by_mode(mode, {n: _greater(count, self.lanes // n) if n in self.batched
                                    else Const(0, 1) for n in self.modes})

    def _lane_msaa(self, m, edge, mode, st, e):
        """Per lane ``ox*A + oy*B`` for the lane's sample ``l % S`` in the block's mode;
        and in a build with wide modes (:meth:`_subs`) the sets of the batches after a
        span's first (set ``r`` >= 1: the lane's sample ``r*lanes + l``). Returns
        ``(lanes, sets)``."""
        if not self.msaa_modes:
            return None, []
        per_mode = {}
        for samples in self.modes:
            per_mode[samples] = [
                _wire(m, _lin(edge["odd_a"], edge["odd_b"], *SAMPLE_PATTERNS[samples][k]),
                      f"msaa{e}_{samples}x{k}") for k in range(samples)]
        lanes = [self._by_mode(mode, {n: v[lane % n] for n, v in per_mode.items()})
                 for lane in range(self.lanes)]
        shape = signed(self.coef_bits + 5)
        sets = [st.regs([self._by_mode(mode, {n: per_mode[n][r * self.lanes + lane]
                                              for n in self.wide if r < self._subs(n)})
                         for lane in range(self.lanes)], f"msaa{e}_set{r}_", shape, e)
                for r in range(1, max(map(self._subs, self.modes)))]
        return st.regs(lanes, f"msaa{e}_", shape, e), sets

    def _span_select(self, m, r2, st):
        """Stage 3: per-edge span classes, the rank-ordered list of the PARTIAL spans (from
        stage 2's ranks), the number of batches, and per lane ``lo`` plus its sample
        offset."""
        s, meta, inbox = self.subpix, r2["meta"], r2["inbox"]
        edges, fulls, empties = [], [], []
        if self.msaa_modes:
            ranks, count = r2["rank"], r2["count"]
            order = self._order(m, r2["comb_part"], ranks)
        for e, edge in enumerate(r2["edges"]):
            full, part = (_wire(m, v, f"{n}{e}") for v, n in
                          zip(self._classes(edge["pos"], inbox), ("full", "part")))
            used = edge["used"]
            fulls.append(full | ~used.replicate(SPANS))
            empties.append(~(full | part) & used.replicate(SPANS))
            quad = lambda lane, e=e: (e, self._quad(lane))
            if edge["lane_msaa"] is None:       # 1x only: every lane starts from lo
                lo = [st.reg(edge["lo"][s - 1:], f"lo{e}_{q}", group=quad(q * 4))
                      for q in range(LANES // 4)]
                lane_lo = [lo[lane // 4] for lane in range(LANES)]
            else:                               # (lo + (msaa << s - 4)) >> s - 1
                lane_lo = st.regs([(edge["lo"][s - 4:] + msaa)[3:3 + self.test_bits]
                                   for msaa in edge["lane_msaa"]], f"lane_lo{e}_",
                                  group=quad)
            # wide modes: the sets of the later batches of a span (_rotate_samples)
            lane_sets = [st.regs([(edge["lo"][s - 4:] + msaa)[3:3 + self.test_bits]
                                  for msaa in values], f"lane_lo{e}_set{r + 1}_", group=quad)
                         for r, values in enumerate(edge["lane_msaa_sets"])]
            edges.append({
                "full": st.reg(full & used.replicate(SPANS), f"full{e}", group=e),
                "part": st.reg(part & used.replicate(SPANS), f"part{e}", group=e),
                # FULL for the lanes: an unused edge passes every sample.
                "lane_full": st.reg(fulls[-1], f"lane_full{e}", group=e),
                "lane_lo": lane_lo,
                "lane_sets": lane_sets,
                "half": st.regs(edge["half"], f"half{e}_", group=e),
                "empty": st.reg(empties[-1], f"empty{e}", group=e),
            })
        result = {"edges": edges, "col": st.reg(r2["col"], "col"),
                  "row": st.reg(r2["row"], "row"), "inbox": st.reg(inbox, "inbox"),
                  "meta": self._meta_layout()(st.reg(meta.as_value(), "meta")),
                  "order": None, "rank": None, "n_last": Const(0, 4),
                  # no block has a second batch at 1x (written as the comparison it was,
                  # so that the 1x build's Verilog, routed at 115.49 MHz, is unchanged)
                  "more_in": Const(0, 4) != 0}
        if not self.msaa_modes:
            # At 1x the combined classes are only reported: stage 4 combines the edges'.
            return result
        comb_full, comb_part = r2["comb_full"], r2["comb_part"]
        n_last = self._by_mode(meta.mode, {n: self._last_batch(count, n) for n in self.modes})
        if self.latency == 9:
            # each lane's span, registered per edge and quad of lanes (moved on with
            # `order`: _advance_spans), so that stage 3b's choice of half_j starts
            # from a register, not from `order` and the mode (_lane_spans)
            spans = self._lane_spans(m, order, meta.mode, "span_in")
            for e, edge in enumerate(edges):
                edge["span"] = st.regs(spans, f"span{e}_", unsigned(4),
                                       lambda lane, e=e: (e, self._quad(lane)))
        return {**result,
                "span_full": st.reg(comb_full, "span_full"),
                "span_part": st.reg(comb_part, "span_part"),
                "rank": st.regs(ranks, "rank", unsigned(4)),
                "order": st.regs(order, "order", unsigned(4)),
                "n_last": st.reg(n_last, "n_last", unsigned(self.batch_bits)),
                # the entering block's last batch is its second: its more_on at batch 0
                "second_last": n_last == 1}

    def _last_batch(self, count, n):
        """The number of a block's last batch at ``n`` samples from its ``count`` of
        PARTIAL spans: ``ceil(count * n / lanes) - 1`` (0 for none)."""
        if n not in self.batched:
            return Const(0, 4)
        if n in self.wide:
            return Mux(count == 0, 0, (count << _log2(self._subs(n))) - 1)
        return Mux(count == 0, 0, (count - 1) >> _log2(self.lanes // n))

    @staticmethod
    def _order(m, part, ranks):
        """The PARTIAL spans in rank order (``order[j]``: the span of rank ``j``)."""
        # rank[k] <= k: only spans j.. can have rank j.
        return [_wire(m, _encode(Cat(part[k] & (ranks[k] == j) if k >= j else Const(0, 1)
                                     for k in range(SPANS))), f"order_in{j}", unsigned(4))
                for j in range(SPANS)]

    @staticmethod
    def _combine(m, inbox, fulls, empties):
        """The combined classes from each edge's FULL (or unused) and EMPTY spans:
        EMPTY if any edge is, FULL if all are, PARTIAL otherwise; only spans in the box."""
        comb_full = _wire(m, inbox & BlockRasterizer._and_all(fulls), "comb_full")
        comb_part = _wire(m, ~BlockRasterizer._or_all(empties) & inbox & ~comb_full,
                          "comb_part")
        return comb_full, comb_part

    @staticmethod
    def _row_counts(m, flags, prefix=""):
        """Per row of 4 span flags: the count of set flags before each column (LUTs) and
        the row's total."""
        local, totals = [], []
        for row in range(4):
            bits = flags[4 * row:4 * row + 4]
            local.append([_popcount(m, bits[:c], f"{prefix}local{row}_{c}") if c
                          else Const(0, 1) for c in range(4)])
            totals.append(_popcount(m, bits, f"{prefix}row_count{row}"))
        return local, totals

    @staticmethod
    def _ranks_balanced(m, flags):
        """Each span's rank among the set ``flags`` (the count of set flags before it)
        and the total, with the row totals added as a balanced tree: a span of row 1
        adds ``T0``, of row 2 ``T0 + T1``, of row 3 ``(T0 + T1) + (T2 + local)``, and the
        count is ``(T0 + T1) + (T2 + T3)`` (``Tr``: row ``r``'s total), two small adders
        after the rows' counts, not three in a row."""
        local, totals = BlockRasterizer._row_counts(m, flags, "b_")
        first_two = _add_bits(m, totals[0], totals[1], "b_rows01")
        ranks = ([local[0][c] for c in range(4)]
                 + [_add_bits(m, totals[0], local[1][c], f"b_rank{4 + c}")
                    for c in range(4)]
                 + [_add_bits(m, first_two, local[2][c], f"b_rank{8 + c}")
                    for c in range(4)]
                 + [_add_bits(m, first_two, _add_bits(m, totals[2], local[3][c],
                                                      f"b_row2_local{c}"), f"b_rank{12 + c}")
                    for c in range(4)])
        count = _add_bits(m, first_two, _add_bits(m, totals[2], totals[3], "b_rows23"),
                          "b_count")
        # rank 0 is a constant (passed on as one, not registered)
        return [Const(0, 4)] + [Cat(r, Const(0, 4))[:4] for r in ranks[1:]], count[:5]

    @staticmethod
    def _and_all(vectors):
        result = vectors[0]
        for v in vectors[1:]:
            result = result & v
        return result

    @staticmethod
    def _or_all(vectors):
        result = vectors[0]
        for v in vectors[1:]:
            result = result | v
        return result

    @staticmethod
    def _classes(pos, inbox):
        """FULL and PARTIAL span masks of one edge from its 25 corner signs."""
        full, part = [], []
        for k in range(SPANS):
            base = 5 * (k // 4) + k % 4
            corners = Cat(pos[base], pos[base + 1], pos[base + 5], pos[base + 6])
            full.append(corners.all())
            part.append(corners.any() & ~corners.all())
        return Cat(full) & inbox, Cat(part) & inbox

    def _span_choice(self, m, r3, batch, more, st):
        """Stage 3b (``latency=8`` only): each lane's span choice of this batch
        (:meth:`_lane_choice`: the chosen ``half_j`` bits that the lane's adder uses, the
        sign, the FULL / PARTIAL bits), registered per edge and lane, so that stage 4's
        lane adders start from registers; and what stage 4 reads of stage 3, passed on.
        It moves with stages 4-6, one batch a clock, so ``order`` moves on as before."""
        meta = r3["meta"]
        # latency 9: each edge's lanes' spans are stage-3 registers
        spans = None if "span" in r3["edges"][0] else \
            self._lane_spans(m, r3["order"], meta.mode)
        one_x = self._one_x(meta.mode)
        edges = []
        for e, edge in enumerate(r3["edges"]):
            quad = lambda lane, e=e: (e, self._quad(lane))
            choice = []
            for lane, k in enumerate(edge["span"] if spans is None else spans):
                half, neg, f, p = self._lane_choice(m, edge, k, one_x, e, lane)
                choice.append((st.reg(half[:self.test_bits - 2], f"hsel{e}_{lane}",
                                      group=quad(lane)),
                               st.reg(neg, f"neg{e}_{lane}", group=quad(lane)),
                               st.reg(f, f"full{e}_{lane}", group=quad(lane)),
                               st.reg(p, f"part{e}_{lane}", group=quad(lane))))
            edges.append({"choice": choice,
                          "lane_lo": st.regs(edge["lane_lo"], f"lane_lo{e}_", group=quad),
                          "half": st.regs(edge["half"], f"half{e}_", group=e),
                          "full": st.reg(edge["full"], f"full{e}", group=e),
                          "part": st.reg(edge["part"], f"part{e}", group=e)})
        return {"edges": edges, "batch": st.reg(batch, "batch"), "more": st.reg(more, "more"),
                "col": st.reg(r3["col"], "col"), "row": st.reg(r3["row"], "row"),
                "rank": st.regs(r3["rank"], "rank", unsigned(4)),
                "span_full": st.reg(r3["span_full"], "span_full"),
                "span_part": st.reg(r3["span_part"], "span_part"),
                "meta": self._meta_layout()(st.reg(meta.as_value(), "meta"))}

    def _lane_select(self, m, r3, batch, more, st):
        """Stage 4: the spans of this batch into the lanes. Lane ``l`` holds
        ``b = lane_lo[l] + c_span`` with ``c_span = +-half[j] << (subpix + 1)`` its span
        centre offset (spans ``k`` and ``15 - k`` have opposite offsets), kept folded.
        ``r3`` is stage 3's registers, or stage 3b's (``latency=8``: the lanes' span
        choices registered there)."""
        meta = r3["meta"]
        spans = None if "choice" in r3["edges"][0] else \
            self._lane_spans(m, r3["order"], meta.mode)
        one_x = self._one_x(meta.mode) if self.msaa_modes else None
        edges = []
        for e, edge in enumerate(r3["edges"]):
            folded, negative, full, part = self._edge_lanes(m, edge, spans, one_x, e)
            mag_neg = [h[-1] for h in edge["half"]]
            mag = [_wire(m, Mux(h[-1], -h, h), f"mag{e}_{j}", unsigned(self.test_bits - 1))
                   for j, h in enumerate(edge["half"])]
            quad = lambda lane, e=e: (e, self._quad(lane))
            edges.append({"folded": st.regs(folded, f"folded{e}_", group=quad),
                          # |half_j| for each lane group: 16 lanes' comparators read it
                          "mag": [st.regs(mag, f"mag{e}_{q}_", group=(e, q))
                                  for q in range(self.lane_groups)],
                          "pass": st.regs([f | (p & ~n) for f, p, n in
                                           zip(full, part, negative)], f"pass{e}_",
                                          group=quad),
                          "fail": st.regs([self._fail_bits(full[lane], part[lane], mag_neg)
                                           for lane in range(self.lanes)], f"fail{e}_",
                                          group=quad),
                          "class_full": st.reg(edge["full"], f"cfull{e}", group=e),
                          "class_part": st.reg(edge["part"], f"cpart{e}", group=e)})
        write, group = self._write_plan(r3, batch)
        return {"edges": edges, "write": st.reg(write, "write"),
                "group": st.regs(group, "group", unsigned(3)),
                "first": st.reg(batch == 0, "first"),
                # wide modes: which of a span's batches this is (its samples' set)
                **({"sub": st.reg(batch[:_log2(max(map(self._subs, self.modes)))], "sub")}
                   if self.wide else {}),
                "last": st.reg(~more, "last"),
                "col": st.reg(r3["col"], "col"), "row": st.reg(r3["row"], "row"),
                **self._span_classes(m, r3, st),
                "meta": self._meta_layout()(st.reg(meta.as_value(), "meta"))}

    def _span_classes(self, m, r3, st):
        """The combined span classes into stage 4 in the MSAA builds (stage 3 formed them
        for the ranks); at 1x, where they are only reported, a copy of each edge's FULL
        (or unused) and EMPTY bits and the span-in-box bits, which stage 5 combines (the
        edges' registers sit apart on the device: one register stage on the way)."""
        if self.msaa_modes:
            return {"span_full": st.reg(r3["span_full"], "span_full"),
                    "span_part": st.reg(r3["span_part"], "span_part")}
        return {"edge_fulls": [st.reg(e["lane_full"], f"efull{k}")
                               for k, e in enumerate(r3["edges"])],
                "edge_empties": [st.reg(e["empty"], f"eempty{k}")
                                 for k, e in enumerate(r3["edges"])],
                "inbox": st.reg(r3["inbox"], "inbox")}

    @staticmethod
    def _span_offset(half, k):
        """Span ``k``'s centre offset as ``(half index, negate)``: spans 8..15 are
        ``+half[k - 8]``, spans 0..7 ``-half[7 - k]`` (``k`` a constant or a signal)."""
        if isinstance(k, int):
            return half[k - 8] if k >= 8 else half[7 - k], Const(k < 8, 1)
        return Array(half)[k[:3] ^ (~k[3]).replicate(3)], ~k[3]

    def _lane_spans(self, m, order, mode, name="span", entry=None):
        """The span each lane tests in this batch, for every edge: at 1x with 16 lanes
        lane ``l`` tests span ``l`` (a constant in a 1x-only build); at ``S`` samples
        (and at 1x with fewer lanes) lane ``l`` is sample ``l % S`` of group ``l // S``,
        which tests ``order[l // S]`` (the batch's PARTIAL span of that rank; in a wide
        mode every lane tests ``order[0]``). ``entry(j, S)`` replaces ``order[j]`` (the
        next batch's: :meth:`_advance_spans`)."""
        if not self.msaa_modes:
            return list(range(LANES))
        entry = entry or (lambda j, n: order[j])
        spans = []
        for lane in range(self.lanes):
            choice = {n: entry(lane // n, n) for n in self.batched}
            if 1 in self.modes and 1 not in self.batched:
                choice[1] = Const(lane, 4)
            spans.append(_wire(m, self._by_mode(mode, choice), f"{name}{lane}", unsigned(4)))
        return spans

    def _lane_choice(self, m, edge, k, one_x, e, lane):
        """A lane's choice for span ``k`` (a constant or a signal) on one edge: one of the
        8 ``half_j``, the sign, and the span's FULL / PARTIAL bits. ``one_x`` is the 1x
        mode bit (``None`` in a build with one kind of mode)."""
        half, neg = self._span_offset(edge["half"], k)
        if isinstance(k, int):
            return half, neg, edge["lane_full"][k], edge["part"][k]
        half = _wire(m, half, f"hsel{e}_{lane}")
        f = edge["lane_full"].bit_select(k, 1)
        # At 1x a lane tests its span whatever its class; at S samples a span is
        # combined-PARTIAL, so on each edge PARTIAL unless FULL (or unused).
        p = ~f if one_x is None else Mux(one_x, edge["part"].bit_select(k, 1), ~f)
        return half, neg, f, p

    def _edge_lanes(self, m, edge, spans, one_x, e):
        """One edge's 16 lanes: folded ``b``, its sign, and the lane's FULL / PARTIAL
        bits, each lane from its span ``spans[lane]`` (:meth:`_lane_spans`): one choice
        of the 8 ``half_j`` and the FULL / PARTIAL bits per lane (:meth:`_lane_choice`),
        or, with ``spans`` ``None``, the choices stage 3b registered (``edge["choice"]``)."""
        folded, negative, full, part = [], [], [], []
        for lane in range(self.lanes):
            if spans is None:
                half, neg, f, p = edge["choice"][lane]
            else:
                half, neg, f, p = self._lane_choice(m, edge, spans[lane], one_x, e, lane)
            # b = lo + half or lo - half = ~(~lo + half): add to lo or ~lo, and the
            # inversion cancels in the fold (folded b = t ^ sign(t)).
            t = _wire(m, ((edge["lane_lo"][lane] ^ neg.replicate(self.test_bits)) +
                          (half << 2))[:self.test_bits], f"t{e}_{lane}")
            folded.append((t ^ t[-1].replicate(self.test_bits))[:-1])
            negative.append(t[-1] ^ neg)
            full.append(_wire(m, f, f"full{e}_{lane}"))
            part.append(_wire(m, p, f"part{e}_{lane}"))
        return folded, negative, full, part

    def _write_plan(self, r3, batch):
        """Which spans this batch writes, and the lane group that holds each."""
        mode, part, ranks = r3["meta"].mode, r3.get("span_part"), r3["rank"]
        write = self._by_mode(mode, {
            n: (part & Cat(self._in_batch(ranks[k], n, batch) for k in range(SPANS))
                if n in self.batched else Const((1 << SPANS) - 1, SPANS)) for n in self.modes})
        group = [self._by_mode(mode, {n: (ranks[k] & (max(1, self.lanes // n) - 1))
                                      if n in self.batched else
                                      Const(0, 3) for n in self.modes})
                 for k in range(SPANS)]
        return write, group

    def _in_batch(self, rank, n, batch):
        """Whether batch ``batch`` holds the PARTIAL span of rank ``rank`` at ``n``
        samples: ``lanes / n`` spans a batch, or in a wide mode ``n / lanes`` batches a
        span."""
        if n in self.wide:
            return (batch >> _log2(self._subs(n))) == rank
        return (rank >> _log2(self.lanes // n)) == batch

    @staticmethod
    def _fail_bits(full, part, mag_neg):
        """A lane's 16 mask bits where its comparator fails (:meth:`_lane_mask`)."""
        bits = [None] * 16
        for j, (p, _, _) in enumerate(_HALF):
            bits[p] = full | (part & ~mag_neg[j])
            bits[15 - p] = full | (part & mag_neg[j])
        return Cat(bits)

    def _lane_mask(self, m, edge, lane, name):
        """One edge's 16-pixel mask of a lane: ``b + lo_pixel >= 0`` for its 16 pixels
        with 8 comparators, pixels p and 15 - p having opposite offsets ``+-o`` (the
        seed's Fig. 18a). ``folded`` is ``b`` with its bits inverted when ``b < 0``
        (``b`` or ``-b - 1``, both ``>= 0``) and ``mag`` is ``|o|``: of ``b + |o|`` and
        ``b - |o|`` one has the sign of ``b``; the other is ``>= 0`` exactly when
        ``folded >= |o|`` (``b >= 0``) or ``folded < |o|`` (``b < 0``). So when
        ``folded >= |o|`` both pixels test ``b >= 0``, else the one on the ``+|o|`` side
        passes and the other fails. Stage 4 has folded in the lane's FULL/PARTIAL bits:
        ``pass`` is the mask bit of both pixels when the comparator holds, ``fail`` the
        pixel's bit when it does not."""
        bits = [None] * 16
        folded, passed, failed = edge["folded"][lane], edge["pass"][lane], edge["fail"][lane]
        for j, (p, _, _) in enumerate(_HALF):
            ok = _wire(m, folded >= edge["mag"][self._quad(lane)][j], f"{name}_{p}")
            bits[p] = Mux(ok, passed, failed[p])
            bits[15 - p] = Mux(ok, passed, failed[15 - p])
        return Cat(bits)

    def _edge_masks(self, m, r4, st):
        """Stage 5: each edge's 16-pixel mask per lane (the lane's 8 comparators, FULL
        gives ones, an unused edge ones), registered apart from the AND over the edges:
        the comparators of different edges sit far apart on the device."""
        edges = []
        for e, edge in enumerate(r4["edges"]):
            masks = [self._lane_mask(m, edge, lane, f"ok{e}_{lane}")
                     for lane in range(self.lanes)]
            edges.append({"mask": st.regs(masks, f"mask{e}_",
                                          group=lambda lane, e=e: (e, self._quad(lane))),
                          "class_full": st.reg(edge["class_full"], f"cfull{e}", group=e),
                          "class_part": st.reg(edge["class_part"], f"cpart{e}", group=e)})
        if self.msaa_modes:
            full, part = r4["span_full"], r4["span_part"]
        else:                                   # 1x: from stage 4's copies (_span_classes)
            full, part = self._combine(m, r4["inbox"], r4["edge_fulls"], r4["edge_empties"])
        passed = {k: st.reg(r4[k], k) for k in ("first", "col", "row")}
        return {"edges": edges, **passed, **self._mask_plan(r4, st),
                "span_full": st.reg(full, "span_full"), "span_part": st.reg(part, "span_part"),
                "meta": self._meta_layout()(st.reg(r4["meta"].as_value(), "meta"))}

    def _chunk_modes(self, c):
        """The modes whose mask reaches 16-bit chunk ``c`` of the output mask."""
        return [n for n in self.modes if c < 16 * n]

    def _chunk_sources(self, c):
        """The lanes that can fill chunk ``c``, as ``(mode, group)``: at 1x the chunk is
        span ``c``, lane ``c`` (with 16 lanes); at ``n`` samples it is part of span ``k =
        c // n``, from one of the groups ``0 .. min(k, lanes/n - 1)`` (a span's rank is
        at most ``k``; one group in a wide mode)."""
        sources = []
        for n in self._chunk_modes(c):
            k = c // n
            sources += ([(n, g) for g in range(min(k, max(1, self.lanes // n) - 1) + 1)]
                        if n in self.batched else [(1, k)])
        return sources

    def _pieces(self, c):
        """The pieces of chunk ``c`` written apart, as bit ranges within the chunk: the
        chunk, or where a wide mode reaches it ``16 / lanes`` pieces of ``lanes`` bits
        (in a wide mode piece ``q`` holds samples of the span's batch ``q % (n/lanes)``)."""
        if not any(n in self.wide for n in self._chunk_modes(c)):
            return [(0, 16)]
        return [(q * self.lanes, (q + 1) * self.lanes) for q in range(16 // self.lanes)]

    def _mask_plan(self, r4, st):
        """Per 16-bit chunk ``c`` of the output mask, registered in stage 5: ``src``, the
        index of the lane group that writes it among :meth:`_chunk_sources` (for chunks
        with more than one), ``wr``, whether this batch writes it from the lanes, and
        ``fill``, whether the first batch fills it with the box mask (a FULL span)."""
        mode, write, group = r4["meta"].mode, r4["write"], r4["group"]
        # A 1x-only build writes every chunk from its lane: wr and fill are constants (no
        # registers), and its combined classes are formed in stage 5 (_span_classes).
        full, first = r4.get("span_full", Const(0, SPANS)), r4["first"]
        src, wr, fill = [], [], []
        for c in range(16 * self.max_samples):
            here = self._chunk_modes(c)
            sources = self._chunk_sources(c)
            if not self.msaa_modes:
                src.append(None), wr.append([Const(1, 1)]), fill.append(Const(0, 1))
                continue
            # (a one-mode build has only well-formed blocks of its mode)
            on = {n: mode[self.modes.index(n)] if len(self.modes) > 1 else Const(1, 1)
                  for n in here}
            wr.append([Cat(self._sub_is(r4, n, q, on[n] & write[c // n]) for n in here).any()
                       for q in range(len(self._pieces(c)))])
            fill.append(first & Cat(on[n] & full[c // n] for n in here).any())
            if len(sources) == 1:
                src.append(None)
                continue
            base = {n: sources.index((n, 0 if n in self.batched else c)) for n in here}
            index = self._by_mode(mode, {n: base[n] + group[c // n] if n in self.batched else
                                         Const(base[n], 5) for n in here})
            src.append(st.reg(index, f"src{c}", unsigned((len(sources) - 1).bit_length()),
                              self._chunk_group(c)))
        return {"src": src, "wr": self._plan_regs(st, "wr", wr),
                "fill": [st.reg(v, f"fill{c}", group=self._chunk_group(c))
                         for c, v in enumerate(fill)]}

    def _plan_regs(self, st, name, chunks):
        """Registers of a per-piece plan bit (``wr``: a list of pieces per chunk,
        :meth:`_pieces`), named ``wr{c}`` for a whole chunk, ``wr{c}_{q}`` for pieces."""
        return [[st.reg(v, f"{name}{c}" if len(values) == 1 else f"{name}{c}_{q}",
                        group=self._chunk_group(c)) for q, v in enumerate(values)]
                for c, values in enumerate(chunks)]

    def _sub_is(self, r4, n, q, write):
        """``write`` (this batch writes the chunk at ``n`` samples) for piece ``q`` of
        the chunk (:meth:`_pieces`): in a wide mode only when the batch is the span's
        ``q % (n/lanes)``."""
        if n not in self.wide:
            return write
        subs = self._subs(n)
        return write & (r4["sub"][:_log2(subs)] == q % subs)

    def _chunk_group(self, c):
        """The register group of chunk ``c`` of the output mask (``lane_groups`` in all;
        at 1x chunk ``c`` is lane ``c``'s)."""
        return ("out", c * self.lane_groups // (16 * self.max_samples))

    def _and_edges(self, m, r5, st):
        """Stage 6: each lane's mask, the AND of its edges' masks, registered before the
        crossbar into the output word (the edges' comparators sit apart on the device);
        the rest passes through."""
        lanes = [st.reg(self._and_all([edge["mask"][lane] for edge in r5["edges"]]),
                        f"lane{lane}", group=("out", self._quad(lane)))
                 for lane in range(self.lanes)]
        edges = [{k: st.reg(edge[k], f"{k}{e}", group=e) for k in ("class_full", "class_part")}
                 for e, edge in enumerate(r5["edges"])]
        plan = {}
        for k in ("src", "wr", "fill"):         # in this order: the Verilog's names
            plan[k] = self._plan_regs(st, k, r5[k]) if k == "wr" else [
                v if v is None else st.reg(v, f"{k}{c}", group=self._chunk_group(c))
                for c, v in enumerate(r5[k])]
        passed = {k: st.reg(r5[k], k) for k in
                  ("first", "col", "row", "span_full", "span_part")}
        return {"lanes": lanes, "edges": edges, **plan, **passed,
                "meta": self._meta_layout()(st.reg(r5["meta"].as_value(), "meta"))}

    def _output(self, m, r5, flow):
        """Stage 7: the lanes and the box mask, written into the output word when it
        advances (``adv``; stage 6 may hold a bubble, whose word is not valid and is
        overwritten by the next block's first batch)."""
        meta, lanes = r5["meta"], r5["lanes"]
        inside = _wire(m, Cat(r5["col"][4 * (k % 4) + p % 4] & r5["row"][4 * (k // 4) + p // 4]
                              for k in range(SPANS) for p in range(16)), "inside")
        box = [[inside[16 * k + p] for p in range(16)] for k in range(SPANS)]

        out = self.o.payload
        self._write_mask(m, r5, lanes, box, out.mask, flow)
        with m.If(flow.enable("adv", "out")):
            m.d.sync += [out.bx.eq(meta.bx), out.by.eq(meta.by), out.tag.eq(meta.tag),
                         out.msaa.eq(meta.msaa), out.n_edges.eq(meta.n_edges),
                         out.span_full.eq(r5["span_full"]),
                         out.span_partial.eq(r5["span_part"])]
            for e, edge in enumerate(r5["edges"]):
                m.d.sync += [out.edge_full[e].eq(edge["class_full"]),
                             out.edge_partial[e].eq(edge["class_part"])]

    def _write_mask(self, m, r5, lanes, box, mask, flow):
        """Write this batch's lanes into ``mask``, chunk by chunk of 16 bits (the plan of
        :meth:`_mask_plan`): a chunk written by the lanes takes its source lanes' bits,
        a chunk of a FULL span the box mask, any other chunk zeros on the first batch;
        always ANDed with the box mask. Each bit is one multiplexer over the lanes that
        can reach it (in every mode) and one LUT. The chunks are written in
        ``lane_groups`` groups, each with its own ``adv``."""
        mode, first = r5["meta"].mode, r5["first"]
        chunks = 16 * self.max_samples
        for c in range(chunks):
            here, sources = self._chunk_modes(c), self._chunk_sources(c)
            bits = range(16 * c, 16 * c + 16)
            values = [Cat(self._lane_bit(lanes, n, g, i) for i in bits) for n, g in sources]
            lane = values[0] if len(values) == 1 else Cat(values).word_select(r5["src"][c], 16)
            inside = self._by_mode(mode, {n: Cat(box[c // n][i % (16 * n) // n] for i in bits)
                                          for n in here})
            adv = flow.enable("adv", ("out", c * self.lane_groups // chunks))
            pieces = self._pieces(c)
            for (lo, hi), wr in zip(pieces, r5["wr"][c]):
                part_in, part_lane = ((inside, lane) if len(pieces) == 1 else
                                      (inside[lo:hi], lane[lo:hi]))
                with m.If(adv & (wr | first)):
                    m.d.sync += mask[16 * c + lo:16 * c + hi].eq(
                        part_in & Mux(wr, part_lane, r5["fill"][c].replicate(hi - lo)))

    def _lane_bit(self, lanes, n, g, i):
        """Mask bit ``i`` at ``n`` samples from group ``g`` (at 1x ``g`` is the lane):
        pixel ``p``, sample ``s`` of the span come from lane ``g*n + s``, its pixel ``p``
        (in a wide mode lane ``s % lanes``, in the span's batch ``s // lanes``)."""
        if n == 1:
            return lanes[g][i % 16]
        p, smp = divmod(i % (16 * n), n)
        return lanes[(g * n + smp) % self.lanes][p]



# ====================================================================== the other units

class _Format:
    """Parameters, widths and layouts shared by setup, traversal, packer and pipeline.

    The block records between traversal and the block rasterizer, and the results between
    the block rasterizer and the packer, are the block rasterizer's own layouts
    (:meth:`BlockRasterizer.in_layout`, :meth:`BlockRasterizer.out_layout`).
    """

    def _format(self, edges, modes, subpix, int_bits, tag_bits):
        self.edges = check_int("edges", edges, 3, 4)
        self.modes = _check_modes(modes)
        self.subpix = check_int("subpix", subpix, 4, 12)
        self.int_bits = check_int("int_bits", int_bits, 5, 16)
        self.tag_bits = check_int("tag_bits", tag_bits, 1, 64)
        w = int_bits + subpix
        self.coord_bits = w + 2                 # port coordinates: signed, range-checked
        self.coef_bits = w + 1                  # A, B
        self.lo16_bits = 2 * w + 2              # edge values at block centres
        self.max_samples = max(self.modes)

    edge_layout = BlockRasterizer.edge_layout
    block_layout = BlockRasterizer.in_layout
    result_layout = BlockRasterizer.out_layout
    _block_fields = BlockRasterizer._block_fields

    def primitive_layout(self):
        """A primitive at the setup's input (and the pipeline's).

        ``v``: vertices ``(x, y)``, signed, valid ``0 .. 2**(int_bits+subpix) - 1``;
        ``n_verts``: 3 or 4 (vertex 3 is ignored for 3); ``prim``: the primitive id;
        ``msaa``: log2(samples); ``cull_back``, ``front_ccw``: facing and culling;
        ``scissor``: ``left, top, right, bottom`` pixels, right/bottom exclusive.
        """
        coord = signed(self.coord_bits)
        edge = unsigned(self.int_bits + 1)
        return data.StructLayout({
            "v": data.ArrayLayout(data.StructLayout({"x": coord, "y": coord}), self.edges),
            "n_verts": unsigned(3),
            "prim": unsigned(self.tag_bits),
            "msaa": unsigned(3),
            "cull_back": unsigned(1),
            "front_ccw": unsigned(1),
            "scissor": data.StructLayout({"left": edge, "top": edge, "right": edge,
                                          "bottom": edge}),
        })

    def setup_layout(self):
        """A set-up primitive (setup out, traversal in): per edge ``A``, ``B``, ``bias``
        and ``lo16`` = E at the centre of the box's first block ``(x0 >> 4, y0 >> 4)``."""
        coord = unsigned(self.int_bits)
        return data.StructLayout({
            "prim": unsigned(self.tag_bits),
            "msaa": unsigned(3),
            "n_edges": unsigned(3),
            "bbox": data.StructLayout({"x0": coord, "y0": coord, "x1": coord, "y1": coord}),
            "edge": data.ArrayLayout(self.edge_layout(), self.edges),
        })

    def packet_layout(self):
        """A pixel packet: one non-empty 4x4 span of one block (``golden.raster.PixelPacket``)."""
        return data.StructLayout({
            "prim": unsigned(self.tag_bits),
            "bx": unsigned(self.int_bits - 4),
            "by": unsigned(self.int_bits - 4),
            "span": unsigned(4),
            "msaa": unsigned(3),
            "pixel_mask": unsigned(16),
            "sample_mask": unsigned(16 * self.max_samples),
            "full": unsigned(1),
        })


class TriangleSetup(_Format, wiring.Component):
    """Triangle and quad setup (spec ``raster.md`` unit 1), one primitive per clock.

    Per primitive: the signed doubled area fixes the orientation (``area2 < 0``:
    the edges are reversed, keeping vertex 0 first, which negates each edge function);
    per oriented edge ``A = -dy``, ``B = dx``, the top-left ``bias`` and ``lo16``, the edge
    value at the centre of the first block of the box, ``dx*(yc - ay) - dy*(xc - ax)``
    (so that traversal steps from it with adds only); the box ``bbox`` = the vertices'
    pixel box clipped to the scissor. Primitives of zero area, back-facing ones when
    ``cull_back`` is set, and those whose clipped box is empty are culled (nothing comes
    out) and counted in ``culled`` (precedence zero area, back face, outside, as in
    ``golden.raster``).

    Pipeline: 8 register stages, all moving together when the output register is free
    or taken (``i.ready = ~o.valid | o.ready``): 1 input checks, 2 edge vectors and the
    vertex box, 3 scissor clip, 4 the offsets of the first block's centre, 5 the partial
    products of the 2 + 2 per edge products and of the area (``(W+1) x (W+1)`` signed,
    ``W = int_bits + subpix``, each operand wider than 18 bits cut at bit 17 so that
    every partial product fits one 18x18 MULT18X18D), 6 the products (sums of their
    partial products), 7 their differences, 8 orientation, culling and the output word.
    Each clock holds one compare-and-choose, one carry chain or one DSP: the 12.8 build
    routes at 104.9 MHz on the ECP5-85F (the 6-stage design, with the clip feeding the
    offsets and a whole product in one clock, at 74.7 MHz).

    Malformed primitives -- an ``msaa`` code the build lacks, ``n_verts`` other than 3
    or 4 (4 only on a 4-edge build), a used vertex coordinate outside ``0 ..
    2**(int_bits+subpix) - 1``, a scissor with ``left >= right``, ``top >= bottom`` (empty
    or inverted) or ``right``/``bottom`` beyond ``2**int_bits`` -- are accepted and
    dropped at stage 1 and set the sticky ``error``; nothing else is lost.

    Parameters
    ----------
    edges, modes, subpix, int_bits, tag_bits
        As :class:`BlockRasterizer` (``tag_bits`` is the primitive id's width).

    Attributes
    ----------
    i : stream of :meth:`primitive_layout`, in
    o : stream of :meth:`setup_layout`, out
    error : unsigned(1), out
        Sticky: a malformed primitive was dropped.
    culled : array of 3 unsigned(32), out
        Primitives culled for zero area, back face, outside the scissor (wrapping counts).
    """

    LATENCY = 8
    #: operand bits below the cut of a split product: a 17-bit unsigned low part and a
    #: signed high part both fit the 18-bit signed inputs of a MULT18X18D.
    PRODUCT_CUT = 17

    def __init__(self, *, edges=4, modes=SAMPLE_COUNTS, subpix=8, int_bits=12, tag_bits=16):
        self._format(edges, modes, subpix, int_bits, tag_bits)
        super().__init__({
            "i": In(stream.Signature(self.primitive_layout())),
            "o": Out(stream.Signature(self.setup_layout())),
            "error": Out(1),
            "culled": Out(data.ArrayLayout(32, 3)),
        })

    def malformed(self, prim):
        """The input checks of the docstring, on a :meth:`primitive_layout` value."""
        top = (1 << (self.int_bits + self.subpix)) - 1
        n_ok = (prim.n_verts == 3) | ((prim.n_verts == 4) if self.edges == 4 else 0)
        mode_ok = Cat(prim.msaa == _log2(s) for s in self.modes).any()
        coord_ok = []
        for j in range(self.edges):
            ok = Cat((c >= 0) & (c <= top) for c in (prim.v[j].x, prim.v[j].y)).all()
            coord_ok.append(ok | (prim.n_verts == 3) if j == 3 else ok)
        sc, side = prim.scissor, 1 << self.int_bits
        scissor_ok = ((sc.left < sc.right) & (sc.top < sc.bottom) &
                      (sc.right <= side) & (sc.bottom <= side))
        return ~(n_ok & mode_ok & Cat(coord_ok).all() & scissor_ok)

    def elaborate(self, platform):
        m = Module()
        s, w, ib = self.subpix, self.int_bits + self.subpix, self.int_bits
        en = Signal()                           # every stage moves
        valid = [Signal(name=f"v{k}") for k in range(1, 9)]
        st = [_Stage(f"s{k}") for k in range(1, 8)]
        m.d.comb += [en.eq(~self.o.valid | self.o.ready), self.i.ready.eq(en)]

        # Stage 1: checks; vertices in range from here on (a triangle's v3 := v0).
        p = self.i.payload
        bad = _wire(m, self.malformed(p), "bad")
        quad = (p.n_verts == 4) if self.edges == 4 else Const(0, 1)
        xs = [p.v[j].x[:w] for j in range(3)]
        ys = [p.v[j].y[:w] for j in range(3)]
        if self.edges == 4:
            xs.append(Mux(quad, p.v[3].x[:w], xs[0]))
            ys.append(Mux(quad, p.v[3].y[:w], ys[0]))
        else:
            xs.append(xs[0])
            ys.append(ys[0])
        x1 = st[0].regs(xs, "x", unsigned(w))
        y1 = st[0].regs(ys, "y", unsigned(w))
        quad1 = st[0].reg(quad, "quad")
        meta_layout = data.StructLayout({"prim": unsigned(self.tag_bits), "msaa": unsigned(3),
                                         "cull_back": 1, "front_ccw": 1})
        meta1 = meta_layout(st[0].reg(Cat(p.prim, p.msaa, p.cull_back, p.front_ccw), "meta"))
        sc1 = st[0].reg(p.scissor.as_value(), "scissor")
        error = Signal()
        with m.If(self.i.valid & en & bad):
            m.d.sync += error.eq(1)
        m.d.comb += self.error.eq(error)

        # Stage 2: edge vectors (input order, edge e from vertex e to e+1 mod 4), the
        # area vectors, the vertices' pixel box.
        nxt = [1, 2, 3, 0]
        dx2 = st[1].regs([x1[nxt[e]] - x1[e] for e in range(4)], "dx", signed(w + 1))
        dy2 = st[1].regs([y1[nxt[e]] - y1[e] for e in range(4)], "dy", signed(w + 1))
        ax2 = st[1].regs(x1, "ax")
        ay2 = st[1].regs(y1, "ay")
        u = [Mux(quad1, c[2] - c[0], c[1] - c[0]) for c in (x1, y1)]
        v = [Mux(quad1, c[3] - c[1], c[2] - c[0]) for c in (x1, y1)]
        u2 = st[1].regs(u, "u", signed(w + 1))
        v2 = st[1].regs(v, "w", signed(w + 1))
        box2 = [st[1].reg(self._extreme([c[j][s:] for j in range(4)], smallest), name)
                for c, smallest, name in ((x1, True, "xmin"), (y1, True, "ymin"),
                                          (x1, False, "xmax"), (y1, False, "ymax"))]
        quad2 = st[1].reg(quad1, "quad")
        meta2 = st[1].reg(meta1.as_value(), "meta")
        sc2 = data.View(self.primitive_layout().members["scissor"],
                        st[1].reg(sc1, "scissor"))

        # Stage 3: clip to the scissor. The box is empty when the vertices' box lies
        # beyond the scissor on a side (the vertices' box is never inverted, nor is a
        # scissor that passed the checks): compares of the inputs, not of the clip.
        bx0 = Mux(box2[0] > sc2.left, box2[0], sc2.left)[:ib]
        by0 = Mux(box2[1] > sc2.top, box2[1], sc2.top)[:ib]
        right, bottom = (sc2.right - 1)[:ib], (sc2.bottom - 1)[:ib]
        bx1 = Mux(box2[2] < right, box2[2], right)
        by1 = Mux(box2[3] < bottom, box2[3], bottom)
        outside = ((box2[0] >= sc2.right) | (box2[1] >= sc2.bottom) |
                   (box2[2] < sc2.left) | (box2[3] < sc2.top))
        outside3 = st[2].reg(outside, "outside")
        bbox3 = st[2].reg(Cat(bx0, by0, bx1, by1), "bbox")
        ax3, ay3 = st[2].regs(ax2, "ax"), st[2].regs(ay2, "ay")
        dx3, dy3 = st[2].regs(dx2, "dx"), st[2].regs(dy2, "dy")
        u3, v3 = st[2].regs(u2, "u"), st[2].regs(v2, "w")
        quad3, meta3 = st[2].reg(quad2, "quad"), st[2].reg(meta2, "meta")

        # Stage 4: offsets of the first block's centre from each edge's start vertex.
        bx3, by3 = bbox3[:ib], bbox3[ib:2 * ib]
        xc = Cat(Const(0, s), Const(8, 4), bx3[4:])      # ((x0 >> 4) * 16 + 8) << subpix
        yc = Cat(Const(0, s), Const(8, 4), by3[4:])
        relx4 = st[3].regs([xc - ax3[e] for e in range(4)], "relx", signed(w + 1))
        rely4 = st[3].regs([yc - ay3[e] for e in range(4)], "rely", signed(w + 1))
        dx4, dy4 = st[3].regs(dx3, "dx"), st[3].regs(dy3, "dy")
        u4, v4 = st[3].regs(u3, "u"), st[3].regs(v3, "w")
        pass4 = {k: st[3].reg(val, k) for k, val in (
            ("quad", quad3), ("meta", meta3), ("outside", outside3), ("bbox", bbox3))}

        # Stage 5: partial products. Stage 6: products. Stage 7: differences.
        pairs = {"pa": [(dx4[e], rely4[e]) for e in range(4)],
                 "pb": [(dy4[e], relx4[e]) for e in range(4)],
                 "area": [(u4[0], v4[1]), (u4[1], v4[0])]}
        split = {name: [self._partial_products(a, b) for a, b in ab]
                 for name, ab in pairs.items()}
        part5 = {name: [(st[4].regs([p for p, _ in parts], f"{name}{k}_"),
                         [shift for _, shift in parts]) for k, parts in enumerate(products)]
                 for name, products in split.items()}
        pass5 = {k: st[4].reg(val, k) for k, val in (
            ("dx", Cat(dx4)), ("dy", Cat(dy4)), *pass4.items())}
        prod = signed(2 * w + 2)
        prod6 = {name: st[5].regs([self._sum_partials(*p) for p in parts], name, prod)
                 for name, parts in part5.items()}
        pass6 = {k: st[5].reg(val, k) for k, val in pass5.items()}
        pa6, pb6, area6 = prod6["pa"], prod6["pb"], prod6["area"]
        lo7 = st[6].regs([pa6[e] - pb6[e] for e in range(4)], "lo", signed(2 * w + 3))
        area7 = st[6].reg(area6[0] - area6[1], "area2", signed(2 * w + 3))
        pass7 = {k: st[6].reg(val, k) for k, val in pass6.items()}

        for stage in st:
            stage.commit(m, lambda group: en)
        with m.If(en):
            m.d.sync += [valid[0].eq(self.i.valid & ~bad)]
            m.d.sync += [valid[k].eq(valid[k - 1]) for k in range(1, 7)]

        # Stage 8: orientation, top-left bias, culling, the output word.
        dx7 = [pass7["dx"][(w + 1) * e:(w + 1) * (e + 1)].as_signed() for e in range(4)]
        dy7 = [pass7["dy"][(w + 1) * e:(w + 1) * (e + 1)].as_signed() for e in range(4)]
        meta7 = meta_layout(pass7["meta"])
        flipped = area7 < 0
        zero = area7 == 0
        back = meta7.cull_back & Mux(meta7.front_ccw, area7 > 0, area7 < 0)
        cull = _wire(m, Mux(zero, 1, Mux(back, 2, Mux(pass7["outside"], 3, 0))), "cull",
                     unsigned(2))
        out = self.o.payload
        with m.If(en):
            m.d.sync += [valid[7].eq(valid[6] & (cull == 0)),
                         out.prim.eq(meta7.prim), out.msaa.eq(meta7.msaa),
                         out.n_edges.eq(Mux(pass7["quad"], 4, 3)),
                         out.bbox.as_value().eq(pass7["bbox"])]
            for j in range(self.edges):
                # Oriented edge j: input edge j, or -(input edge k-1-j) when flipped.
                def pick(vals, j=j):        # input edge k-1-j (k = 3 or 4 edges)
                    return (Mux(pass7["quad"], vals[3 - j], vals[2 - j]) if j < 3 else
                            vals[0])
                dxo = Mux(flipped, -pick(dx7), dx7[j])
                dyo = Mux(flipped, -pick(dy7), dy7[j])
                loo = Mux(flipped, -pick(lo7), lo7[j])
                topleft = (dyo < 0) | ((dyo == 0) & (dxo >= 0))
                used = pass7["quad"] if j == 3 else 1
                edge = out.edge[j]
                m.d.sync += [edge.A.eq(Mux(used, -dyo, 0)), edge.B.eq(Mux(used, dxo, 0)),
                             edge.lo16.eq(Mux(used, loo, 0)), edge.bias.eq(used & ~topleft)]
        counts = [Signal(32, name=f"culled{code}") for code in range(1, 4)]
        for code, count in enumerate(counts, start=1):
            with m.If(en & valid[6] & (cull == code)):
                m.d.sync += count.eq(count + 1)
            m.d.comb += self.culled[code - 1].eq(count)
        m.d.comb += self.o.valid.eq(valid[7])
        return m

    @classmethod
    def _partial_products(cls, a, b):
        """The partial products of signed ``a * b`` as ``(product, shift)`` pairs: an
        operand wider than 18 bits is cut at :attr:`PRODUCT_CUT` into an unsigned low
        and a signed high part, so that every partial product fits one MULT18X18D."""
        def parts(x):
            cut = cls.PRODUCT_CUT
            if len(x) <= 18:
                return [(x, 0)]
            return [(x[:cut], 0), (x[cut:].as_signed(), cut)]
        return [(xa * xb, sa + sb) for xa, sa in parts(a) for xb, sb in parts(b)]

    @staticmethod
    def _sum_partials(products, shifts):
        """``a * b`` from the (registered) products of :meth:`_partial_products`."""
        total = 0
        for product, shift in zip(products, shifts):
            total = total + (product << shift)
        return total

    @staticmethod
    def _extreme(values, smallest):
        """Minimum or maximum of ``values`` as a two-level tree."""
        def pick(a, b):
            return Mux((a < b) if smallest else (a > b), a, b)
        return pick(pick(values[0], values[1]), pick(values[2], values[3]))


class BlockTraversal(_Format, wiring.Component):
    """Block traversal (spec ``raster.md`` unit 2): set-up primitives in, block records
    for :class:`BlockRasterizer` out.

    Per primitive it walks the 16x16 blocks its box touches, row by row (``by`` outer,
    ``bx`` inner), one candidate block per clock, stepping each edge's block-centre value
    by ``A << (subpix+4)`` along a row and ``B << (subpix+4)`` from row to row (adds
    only; ``lo16`` of the first block comes from setup). A block is skipped -- its clock
    produces no word -- when some used edge is negative at all four block corners; the
    largest of the four is ``lo16 + ((|A| + |B|) << (subpix+3))``, so the test is one
    add per edge with ``reach = ((|A| + |B|) << (subpix+3)) - bias``, formed as the
    primitive is taken. The next primitive is taken in the clock the last candidate
    block of the previous one goes out, so a primitive of ``c`` candidate blocks costs
    ``c`` clocks.

    Flow control: the output word is a register; the walk advances when it is free or
    taken. ``i.ready`` is ``~busy | (advancing & last block)``.

    Parameters
    ----------
    edges, modes, subpix, int_bits, tag_bits
        As :class:`BlockRasterizer`.

    Attributes
    ----------
    i : stream of :meth:`setup_layout`, in
    o : stream of :meth:`block_layout` (:meth:`BlockRasterizer.in_layout`), out
    """

    def __init__(self, *, edges=4, modes=SAMPLE_COUNTS, subpix=8, int_bits=12, tag_bits=16):
        self._format(edges, modes, subpix, int_bits, tag_bits)
        super().__init__({
            "i": In(stream.Signature(self.setup_layout())),
            "o": Out(stream.Signature(self.block_layout())),
        })

    def elaborate(self, platform):
        m = Module()
        s, bw = self.subpix, self.int_bits - 4
        wide = signed(self.lo16_bits + 1)
        busy = Signal()
        prim = Signal(self.setup_layout())              # the primitive being walked
        cur = [Signal(wide, name=f"cur{e}") for e in range(self.edges)]
        row = [Signal(wide, name=f"row{e}") for e in range(self.edges)]
        reach = [Signal(wide, name=f"reach{e}") for e in range(self.edges)]
        bx, by, bx_first, bx_last, by_last = (Signal(bw, name=n) for n in
                                              ("bx", "by", "bx_first", "bx_last", "by_last"))
        # registers (issue 15): the block at (bx, by) ends its row / the walk, kept a
        # clock ahead, so that the walk's enables (``go``, ``take``: every register of
        # the unit) and ``i.ready`` start at flip-flops, not at the block compares
        row_end, last = Signal(), Signal()
        go = _wire(m, busy & (~self.o.valid | self.o.ready), "go")
        take = _wire(m, self.i.valid & self.i.ready, "take")
        m.d.comb += self.i.ready.eq(~busy | (go & last))

        used = [1, 1, 1, prim.n_edges == 4][:self.edges]
        reject = Cat((cur[e] + reach[e] < 0) & used[e] for e in range(self.edges)).any()
        out = self.o.payload
        with m.If(go):
            m.d.sync += [self.o.valid.eq(~reject), out.bx.eq(bx), out.by.eq(by),
                         out.bbox.eq(prim.bbox), out.msaa.eq(prim.msaa),
                         out.n_edges.eq(prim.n_edges), out.tag.eq(prim.prim)]
            for e in range(self.edges):
                edge = prim.edge[e]
                m.d.sync += [out.edge[e].lo16.eq(cur[e]), out.edge[e].A.eq(edge.A),
                             out.edge[e].B.eq(edge.B), out.edge[e].bias.eq(edge.bias)]
            with m.If(row_end):
                m.d.sync += [bx.eq(bx_first), by.eq(by + 1)]
                self._ends(m, row_end, last, bx_first, (by + 1)[:bw], bx_last, by_last)
                for e in range(self.edges):
                    down = row[e] + (prim.edge[e].B << (s + 4))
                    m.d.sync += [row[e].eq(down), cur[e].eq(down)]
            with m.Else():
                m.d.sync += bx.eq(bx + 1)
                self._ends(m, row_end, last, (bx + 1)[:bw], by, bx_last, by_last)
                m.d.sync += [cur[e].eq(cur[e] + (prim.edge[e].A << (s + 4)))
                             for e in range(self.edges)]
            with m.If(last):
                m.d.sync += busy.eq(0)
        with m.Elif(self.o.ready):
            m.d.sync += self.o.valid.eq(0)

        new = self.i.payload
        with m.If(take):
            box = new.bbox
            m.d.sync += [busy.eq(1), prim.eq(new), bx.eq(box.x0[4:]), bx_first.eq(box.x0[4:]),
                         by.eq(box.y0[4:]), bx_last.eq(box.x1[4:]), by_last.eq(box.y1[4:])]
            self._ends(m, row_end, last, box.x0[4:], box.y0[4:], box.x1[4:], box.y1[4:])
            for e in range(self.edges):
                edge = new.edge[e]
                mag = Mux(edge.A < 0, -edge.A, edge.A) + Mux(edge.B < 0, -edge.B, edge.B)
                m.d.sync += [cur[e].eq(edge.lo16), row[e].eq(edge.lo16),
                             reach[e].eq((mag << (s + 3)) - edge.bias)]
        return m

    @staticmethod
    def _ends(m, row_end, last, bx, by, bx_last, by_last):
        """Load ``row_end`` and ``last`` for the block ``(bx, by)`` the walk goes to."""
        m.d.sync += [row_end.eq(bx == bx_last), last.eq((bx == bx_last) & (by == by_last))]


class PixelPacker(_Format, wiring.Component):
    """The pixel packer (spec ``raster.md`` unit 4): block results in, pixel packets out.

    Each non-empty 4x4 span of a block becomes one packet (:meth:`packet_layout`, as
    ``golden.raster.pack_block``): primitive id, block, span ``k``, 16-bit pixel mask,
    the span's ``16*S``-bit sample mask (bit ``p*S + s``), ``full`` (all ``16*S``
    samples covered), the MSAA code. Spans go out in order ``k = 0..15``.

    An output word carries up to ``packets`` packets (``count`` of them, in slots
    ``0 .. count-1``, in order), so a block with ``n`` non-empty spans costs
    ``max(1, ceil(n / packets))`` clocks, and a block with none costs one clock and gives
    no word. Three register stages, each doing one thing per clock: A splits the block's
    mask into span fields, pixel masks and full bits (by the block's mode); B holds the
    block with each non-empty span's rank among them (a short prefix count, as the
    block rasterizer's); the output register takes the packets of the next ``packets``
    ranks, each slot a compare of a rank register and an AND-OR over the 16 spans. (With
    the ranks counted in the clock that chose the packets, the 1x packer routed at 42.6
    MHz; with a 16-adder chain for the ranks in B, at 53.5 MHz; now at 115.2 MHz.)
    ``i.ready`` is high while A
    is empty or moves to B, which it does when B's block sends its last word; it is one
    LUT of registers (``idle``: A or B is empty; ``done``; ``o.valid``) and ``o.ready``,
    as the block rasterizer's flow copies read it.

    Parameters
    ----------
    edges, modes, subpix, int_bits, tag_bits
        As :class:`BlockRasterizer`.
    packets : int
        Packets per output word, 1 to 16. The default, 16, takes a whole block in one
        word, so the packer never holds the block rasterizer up; fewer make a narrower
        port and cost ``ceil(n / packets)`` clocks for a block of ``n`` packets.

    Attributes
    ----------
    i : stream of :meth:`result_layout` (:meth:`BlockRasterizer.out_layout`), in
    o : stream of :meth:`word_layout`, out
    """

    def __init__(self, *, edges=4, modes=SAMPLE_COUNTS, subpix=8, int_bits=12, tag_bits=16,
                 packets=16):
        self._format(edges, modes, subpix, int_bits, tag_bits)
        self.packets = check_int("packets", packets, 1, 16)
        super().__init__({
            "i": In(stream.Signature(self.result_layout())),
            "o": Out(stream.Signature(self.word_layout())),
        })

    def word_layout(self):
        """An output word: ``count`` packets in ``packet[0 .. count-1]``."""
        return data.StructLayout({
            "count": unsigned(self.packets.bit_length()),
            "packet": data.ArrayLayout(self.packet_layout(), self.packets),
        })

    def _split(self, m, result):
        """Per span: its sample field (``16*S`` bits), pixel mask and full bit."""
        mode = Cat(result.msaa == _log2(n) for n in self.modes)
        fields, pixels, fulls = [], [], []
        for k in range(SPANS):
            per_mode = {}
            for n in self.modes:
                field = result.mask[16 * n * k:16 * n * (k + 1)]
                pix = Cat(field[p * n:(p + 1) * n].any() for p in range(16))
                per_mode[n] = (field, pix, field.all())
            fields.append(self._by_mode(mode, {n: v[0] for n, v in per_mode.items()}))
            pixels.append(self._by_mode(mode, {n: v[1] for n, v in per_mode.items()}))
            fulls.append(self._by_mode(mode, {n: v[2] for n, v in per_mode.items()}))
        return fields, pixels, fulls

    _by_mode = BlockRasterizer._by_mode

    def elaborate(self, platform):
        m = Module()
        a = self._span_registers("a")       # stage A: the block split into spans
        b = self._span_registers("b")       # stage B: the block whose words go out
        a_valid, b_holding = Signal(), Signal()
        rank = [Signal(4, name=f"rank{k}") for k in range(SPANS)]
        # the rank each slot of the next word takes: first + j (registers, no adders)
        target = [Signal(6, name=f"target{j}") for j in range(self.packets)]

        # Output: the packets of ranks target[0] .. target[0] + packets - 1. A slot is a
        # compare of two registers; its packet an AND-OR over the 16 spans.
        free = _wire(m, ~self.o.valid | self.o.ready, "free")
        go = _wire(m, b_holding & free, "go")
        slots = [_wire(m, Cat(b["nonempty"][k] & (rank[k] == target[j])
                              for k in range(SPANS)), f"slot{j}")
                 for j in range(self.packets)]
        # Packets of B's block not yet sent, and whether they fit in this word: registers
        # (from the count as B loads, less `packets` a word), so `i.ready` -- which the
        # block rasterizer's stall enable follows -- is one LUT of registers and o.ready.
        left = Signal(signed(7))
        done = Signal()
        b_free = _wire(m, ~b_holding | (go & done), "b_free")
        # i.ready = ~a_valid | b_free, with "A or B is empty" kept as a register of its
        # own (`idle`), so that i.ready is one LUT4 of `idle`, `done`, o.valid and
        # o.ready (the block rasterizer's flow copies read it; as a LUT of five inputs
        # it was two LUTs on the front end's routed critical path, issue 15)
        idle = Signal(init=1)
        m.d.comb += self.i.ready.eq(idle | (done & free))
        m.d.sync += idle.eq(~Mux(self.i.ready, self.i.valid, a_valid)
                            | ~Mux(b_free, a_valid, b_holding))
        out = self.o.payload
        with m.If(go):
            m.d.sync += [self.o.valid.eq(left > 0), out.count.eq(Mux(done, left, self.packets))]
            m.d.sync += [t.eq(t + self.packets) for t in target]
            m.d.sync += [left.eq(left - self.packets), done.eq(left - self.packets <= self.packets)]
            for j, slot in enumerate(slots):
                pkt = out.packet[j]
                pick = lambda values: self._or_all([Mux(slot[k], values[k], 0)
                                                    for k in range(SPANS)])
                m.d.sync += [pkt.prim.eq(b["meta"].tag), pkt.bx.eq(b["meta"].bx),
                             pkt.by.eq(b["meta"].by), pkt.msaa.eq(b["meta"].msaa),
                             pkt.span.eq(_encode(slot)), pkt.pixel_mask.eq(pick(b["pixels"])),
                             pkt.sample_mask.eq(pick(b["field"])),
                             pkt.full.eq((slot & b["full"]).any())]
        with m.Elif(self.o.ready):
            m.d.sync += self.o.valid.eq(0)

        # Stage B takes A's block when its own last word goes (or it is empty), with each
        # non-empty span's rank among them.
        with m.If(b_free):
            m.d.sync += b_holding.eq(a_valid)
        ranks, count = BlockRasterizer._ranks_balanced(m, a["nonempty"])
        with m.If(b_free & a_valid):
            m.d.sync += self._copy(b, a)
            m.d.sync += [r.eq(v) for r, v in zip(rank, ranks)]
            m.d.sync += [left.eq(count), done.eq(count <= self.packets)]
            m.d.sync += [t.eq(j) for j, t in enumerate(target)]

        # Stage A: the block's mask split into span fields, pixel masks, full bits.
        with m.If(self.i.ready):
            m.d.sync += a_valid.eq(self.i.valid)
        with m.If(self.i.valid & self.i.ready):
            fields, pix, fulls = self._split(m, self.i.payload)
            m.d.sync += self._copy(a, {
                "meta": Cat(self.i.payload[name] for name in self._block_fields()),
                "field": fields, "pixels": pix, "full": Cat(fulls),
                "nonempty": Cat(p.any() for p in pix)})
        return m

    def _span_registers(self, stage):
        """The registers of a block split into spans, named after ``stage``."""
        return {
            "meta": Signal(data.StructLayout(self._block_fields()), name=f"{stage}_meta"),
            "field": [Signal(16 * self.max_samples, name=f"{stage}_field{k}")
                      for k in range(SPANS)],
            "pixels": [Signal(16, name=f"{stage}_pixels{k}") for k in range(SPANS)],
            "full": Signal(SPANS, name=f"{stage}_full"),
            "nonempty": Signal(SPANS, name=f"{stage}_nonempty"),
        }

    @staticmethod
    def _copy(dst, src):
        """Assignments of every register of ``dst`` from the matching value of ``src``."""
        out = []
        for name, reg in dst.items():
            if isinstance(reg, list):
                out += [r.eq(v) for r, v in zip(reg, src[name])]
            else:
                out.append(reg.eq(src[name]))
        return out

    _or_all = staticmethod(BlockRasterizer._or_all)


class RasterPipeline(_Format, wiring.Component):
    """The whole rasterizer: :class:`TriangleSetup` -> :class:`BlockTraversal` ->
    :class:`BlockRasterizer` -> :class:`PixelPacker`, primitives in, pixel packets out.

    Streams between the units; back-pressure at ``o`` stalls every unit upstream, and
    nothing is lost or duplicated. No ``ready`` runs combinationally through two units:
    the block rasterizer's ``i.ready`` is a register, the packer's is one LUT of
    registers and ``o.ready``, and a :class:`hw.sync.StreamBuffer` separates the setup
    (whose stall enable reaches every stage and DSP) from the traversal. The packets equal ``golden.raster.pixel_packets``
    packet by packet, in order, for a scissor given per primitive (the golden model's
    frame is the scissor ``(0, 0, width, height)``: the hardware's frame is
    ``2**int_bits`` square and the scissor clips it). Malformed primitives are dropped by
    the setup and set ``error`` (see :class:`TriangleSetup`).

    Parameters
    ----------
    edges, modes, subpix, int_bits, tag_bits
        As :class:`BlockRasterizer`.
    packets : int
        Packets per output word (:class:`PixelPacker`).
    latency : int
        The block rasterizer's latency (:class:`BlockRasterizer`; 7, or 8 or 9 in a
        build with an MSAA mode: its extra stages for the FPGA). Default 7.
    lanes : int
        The block rasterizer's lanes per edge (:class:`BlockRasterizer`; 16, or 4 or 8
        in a build with an MSAA mode).

    Attributes
    ----------
    i : stream of :meth:`primitive_layout`, in
    o : stream of :meth:`PixelPacker.word_layout`, out
    error : unsigned(1), out
        Sticky: a malformed primitive was dropped (setup), or a malformed block (never
        expected from the traversal).
    culled : array of 3 unsigned(32), out
        As :class:`TriangleSetup`.
    """

    def __init__(self, *, edges=4, modes=SAMPLE_COUNTS, subpix=8, int_bits=12, tag_bits=16,
                 packets=16, latency=7, lanes=LANES):
        self._format(edges, modes, subpix, int_bits, tag_bits)
        self.packets = check_int("packets", packets, 1, 16)
        kwargs = dict(edges=edges, modes=modes, subpix=subpix, int_bits=int_bits,
                      tag_bits=tag_bits)
        self.setup = TriangleSetup(**kwargs)
        self.traversal = BlockTraversal(**kwargs)
        self.block = BlockRasterizer(**kwargs, latency=latency, lanes=lanes)   # checks them
        self.packer = PixelPacker(**kwargs, packets=packets)
        super().__init__({
            "i": In(stream.Signature(self.primitive_layout())),
            "o": Out(stream.Signature(self.packer.word_layout())),
            "error": Out(1),
            "culled": Out(data.ArrayLayout(32, 3)),
        })

    def word_layout(self):
        """An output word: :meth:`PixelPacker.word_layout`."""
        return self.packer.word_layout()

    def elaborate(self, platform):
        m = Module()
        m.submodules.setup = self.setup
        m.submodules.setup_out = setup_out = StreamBuffer(self.setup.o.payload.shape())
        m.submodules.traversal = self.traversal
        m.submodules.block = self.block
        m.submodules.packer = self.packer
        wiring.connect(m, wiring.flipped(self.i), self.setup.i)
        wiring.connect(m, self.setup.o, setup_out.i)
        wiring.connect(m, setup_out.o, self.traversal.i)
        wiring.connect(m, self.traversal.o, self.block.i)
        wiring.connect(m, self.block.o, self.packer.i)
        wiring.connect(m, self.packer.o, wiring.flipped(self.o))
        m.d.comb += [self.error.eq(self.setup.error | self.block.error),
                     self.culled.eq(self.setup.culled)]
        return m


#: Designs of this block that ``python -m hw.gen`` builds, by name.
DESIGNS = {
    "block": BlockRasterizer,
    "setup": TriangleSetup,
    "traversal": BlockTraversal,
    "packer": PixelPacker,
    "pipeline": RasterPipeline,
}
