"""The 16x16 span-parallel block rasterizer (spec ``raster.md``, unit 3; seed Fig. 15-20).

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

Pipeline (one clock per row, latency 6 clocks from input handshake to output valid)
------------------------------------------------------------------------------------
0. *Input buffer*: a two-entry skid buffer of registers whose ``ready`` is one of its
   own registers, so no combinational path runs from ``o.ready`` to ``i.ready``.
   Malformed blocks are dropped here (below).
1. *Offsets*: per edge the 12 corner offsets ``a*A + b*B`` (``a, b`` in -2..2, the
   lattice half with ``b > 0`` or ``b = 0 < a``), the odd multiples of A and B, and
   ``lo = sat(lo16) - bias`` (the bias is folded in once, so every later test is ``>= 0``).
2. *Corners*: the 25 span corners lie at ``(4c - 8, 4r - 8)`` pixels from the centre;
   corner ``i`` and ``24 - i`` have opposite offsets ``+-o``. Given the signs of ``lo``
   and ``o`` one of ``lo + o`` and ``lo - o`` has a known sign, so one add/subtract per
   pair decides both corners: 12 comparators per edge (the seed's Fig. 17). Also the
   pixel-centre offsets ``(2px - 3)A + (2py - 3)B`` (8, the others by symmetry), each
   lane's sample offset, and the box's column/row masks.
3. *Span select*: per edge and span, FULL when its 4 corners pass, PARTIAL when some do,
   EMPTY otherwise or when no pixel of the span lies in the box. Combined class: EMPTY if
   any edge is, FULL if all are, PARTIAL otherwise -- only combined-PARTIAL spans need
   sample tests. Span centre values ``c_k = lo + lo4x4_k`` (8 adds, 8 subtracts).
4. *Lane select* (one row per *batch*): 16 lanes per edge each take one (span, sample)
   pair and form ``b = c_span + lo_msaa``, kept folded: ``b`` or ``-b - 1`` (its bits
   inverted when negative) and its sign. Also ``|lo_pixel|`` once per edge.
5. *Edge determination*: each lane tests its 16 pixels ``b + lo_pixel`` with 8
   comparators by the same +-symmetry (the seed's Fig. 18a "8 columns"): one unsigned
   comparison of folded ``b`` with ``|lo_pixel|`` decides both pixels of a pair
   (:func:`_folded_signs`). FULL edges and unused edges give ones. The per-edge lane
   masks are registered here, apart from the AND over the edges (Timing, below).
6. *Final mask*: each lane ANDs its edges' masks and the pixel-level box mask, and writes
   the result into the output register, which is the output port's payload.

Throughput: the MSAA schedule
-----------------------------
Per edge the lanes test 256 samples per clock. At 1x lane ``k`` is span ``k``: every
block takes one clock. With ``S`` samples the ``p`` combined-PARTIAL spans are numbered
in order (their *rank*) and go through in batches of ``16 / S`` spans, the ``S`` lanes
of a group holding the ``S`` samples of one span: a block takes ``max(1, ceil(p*S/16))``
clocks, ``= max(1, ceil(16*p*S/256))``; FULL and EMPTY spans are written in the first
batch and cost nothing. Earlier stages hold while a block's batches go through.

Flow control
------------
The stages form a rigid pipeline: stages 4, 5 and the output register move together
whenever the output word is not complete or is being taken (``~o.valid | o.ready``);
stages 1-3 and the input buffer move with them unless stage 3 still has batches of its
block to issue (a register, ``more``). Every register enable is thus one LUT of
``o.ready`` and registers, and the malformed check of the input buffer is decoded as a
block enters it: an enable net fans out across the whole block, and its long routes are
the timing budget (a bubble-squeezing pipeline chains the enables through every stage,
which was the critical path on the ECP5). A bubble inside the pipeline stays while the
output is stalled; with the output ready a block per clock goes through. ``i.ready`` is
the input buffer's registered "not full".

Exact arithmetic in few bits
----------------------------
With ``W = int_bits + subpix``, ``|A|, |B| <= 2**W``. A span corner is at most 8 pixels
from the centre, so ``|corner offset| <= 2**(W + subpix + 4)``; ``lo16`` is saturated to
``W + subpix + 6`` bits, which keeps every corner sign. Where an edge is PARTIAL on a
span, its corners straddle zero, so every value inside the span (centre, pixels,
samples) lies in ``[-2**(W + subpix + 3), 2**(W + subpix + 3))``: the lane arithmetic is
done modulo ``2**(W + subpix + 4)`` (32 bits at the default 12.8 format) and is exact
wherever its result is used; elsewhere the class (FULL/EMPTY) decides.

Timing
------
The 1x build (12.8 coordinates, ``make synth`` flow, ECP5-85F) runs at 74.4 MHz after
routing. Its critical path runs from a stage-4 register through one lane's comparator
chain and, over long routes, into a stage-5 lane-mask register: 13.5 ns, 10.4 ns of it
routing. Three changes got it there from 70.8 MHz: the stage-5 registers between the
comparators and the AND over the edges (latency 5 -> 6; the spec allows 7), the skid
buffer at the input instead of a LUT-RAM FIFO, and every stage enable computed by one
LUT from ``o.ready`` and registers of its own (the enable nets span the whole block, so
any logic shared between two of them chains two long routes on one path).

The MSAA builds are harder to route (the lane multiplexers of stage 4 and the crossbar
into the output mask). The ``(1, 4)`` build routed at 33.8 MHz; its critical path is the
chain of adders that counts the span ranks in stage 3. The ``(1, 2, 4)`` build fits the
device by cell count but did not route. The README's Block 4 section has the details.

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

__all__ = ["SAMPLE_COUNTS", "SAMPLE_PATTERNS", "BlockRasterizer", "DESIGNS"]

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


def _check_int(name, value, minimum, maximum):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if not minimum <= value <= maximum:
        raise ValueError(f"{name} must be an integer from {minimum} to {maximum}, not {value}")
    return value


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


def _lin(odd_a, odd_b, a, b):
    """``a*A + b*B`` with one adder when at most one coefficient is negative."""
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


def _folded_signs(m, folded, negative, magnitude, offset_neg, name):
    """Signs of ``b + o`` and ``b - o`` (1: ``>= 0``) with one comparator.

    ``folded`` is ``b`` with its bits inverted when ``negative`` (``b`` or ``-b - 1``:
    both non-negative), ``magnitude`` is ``|o|`` and ``offset_neg`` the sign of ``o``. Of
    ``b + |o|`` and ``b - |o|`` one has the sign of ``b``; the other is ``>= 0`` exactly
    when ``folded >= |o|`` (``b >= 0``) or ``folded < |o|`` (``b < 0``).
    """
    ok = _wire(m, folded >= magnitude, name)
    plus = Mux(negative, ~ok, 1)          # b + |o| >= 0
    minus = Mux(negative, 0, ok)          # b - |o| >= 0
    return Mux(offset_neg, minus, plus), Mux(offset_neg, plus, minus)


def _popcount(bits):
    total = Const(0, 1)
    for bit in bits:
        total = total + bit
    return total


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
    """The registers of one pipeline stage, all loaded together when the stage advances."""

    def __init__(self, name):
        self.name = name
        self.loads = []

    def reg(self, value, name, shape=None):
        """A register loaded with ``value`` (its shape unless given)."""
        if shape is None:
            shape = value.shape() if hasattr(value, "shape") else unsigned(1)
        sig = Signal(shape, name=f"{self.name}_{name}", reset_less=True)
        self.loads.append(sig.eq(value))
        return sig

    def regs(self, values, name, shape=None):
        return [self.reg(v, f"{name}{k}", shape) for k, v in enumerate(values)]

    def commit(self, m, enable):
        with m.If(enable):
            m.d.sync += self.loads


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

    Attributes
    ----------
    i : stream of :meth:`in_layout`, in
        One block per word.
    o : stream of :meth:`out_layout`, out
        One word per accepted well-formed block, in order.
    error : unsigned(1), out
        Sticky: set when a malformed block was dropped; cleared by reset only.
    """

    def __init__(self, *, edges=4, modes=SAMPLE_COUNTS, subpix=8, int_bits=12, tag_bits=16):
        self.edges = _check_int("edges", edges, 3, 4)
        self.modes = _check_modes(modes)
        self.subpix = _check_int("subpix", subpix, 4, 12)
        self.int_bits = _check_int("int_bits", int_bits, 5, 16)
        self.tag_bits = _check_int("tag_bits", tag_bits, 1, 64)
        w = int_bits + subpix
        self.coef_bits = w + 1                  # A, B
        self.lo16_bits = 2 * w + 2              # lo16
        self.sat_bits = w + subpix + 6          # lo16 saturated for the corner tests
        self.lane_bits = w + subpix + 4         # span, pixel and sample values (modular)
        self.max_samples = max(self.modes)
        self.msaa_modes = tuple(s for s in self.modes if s > 1)
        super().__init__({
            "i": In(stream.Signature(self.in_layout())),
            "o": Out(stream.Signature(self.out_layout())),
            "error": Out(1),
        })

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

    def _odd_multiples(self, x, odd_set):
        """``{k: k*x}`` for the odd ``k`` in ``odd_set``: one adder each beyond 1."""
        table = {1: x, 3: (x << 1) + x, 5: (x << 2) + x, 7: (x << 3) - x}
        return {k: table[k] for k in sorted(odd_set)}

    # ------------------------------------------------------------------ elaboration

    def elaborate(self, platform):
        m = Module()
        move = Signal()                         # the input buffer's head moves on
        head, head_ok, head_ok_next = self._input(m, move)

        v1, v2, v3, v4, v5 = (Signal(name=f"v{k}") for k in range(1, 6))
        s1, s2, s3, s4, s5 = (_Stage(f"s{k}") for k in range(1, 6))
        r1 = self._offsets(m, head, s1)
        r2 = self._corners(m, r1, s2)
        r3 = self._span_select(m, r2, s3)
        batch = Signal(4)                       # batch of the block in stage 3
        more = Signal()                         # stage 3 holds: its block has batches left
        r4 = self._lane_select(m, r3, batch, more, s4)
        r5 = self._edge_masks(m, r4, s5)
        adv = Signal()                          # stages 4, 5 and the output register move
        load = Signal()                         # stages 1-3 move
        self._output(m, r5, v5, adv)

        # A rigid pipeline (see the module docstring). Its state:
        out_full = Signal()                     # the output word is complete: o.valid
        out_full_next = Mux(adv, v5 & r5["last"], out_full)
        more_next = Mux(load, v2 & (r3["n_last_in"] != 0),
                        Mux(adv, batch + 1 != r3["n_last"], more))
        m.d.sync += [out_full.eq(out_full_next), more.eq(more_next)]
        # adv = ~out_full | o.ready, load = adv & ~more, move = load | ~head_ok, each one
        # LUT of o.ready and registers of its own: the nets fan out across the block, and
        # a LUT shared between them would put two long routes on one path.
        load_free, load_if_ready, move_free, move_if_ready = (
            Signal(init=1, name=n) for n in
            ("load_free", "load_if_ready", "move_free", "move_if_ready"))
        m.d.sync += [load_free.eq(~out_full_next & ~more_next),
                     load_if_ready.eq(~more_next),
                     move_free.eq((~out_full_next & ~more_next) | ~head_ok_next),
                     move_if_ready.eq(~more_next | ~head_ok_next)]
        m.d.comb += [self.o.valid.eq(out_full),
                     adv.eq(~out_full | self.o.ready),
                     load.eq(load_free | (self.o.ready & load_if_ready)),
                     move.eq(move_free | (self.o.ready & move_if_ready))]

        for stage, enable in ((s1, load), (s2, load), (s3, load), (s4, adv), (s5, adv)):
            stage.commit(m, enable)
        with m.If(load):
            m.d.sync += [v1.eq(head_ok), v2.eq(v1), v3.eq(v2), batch.eq(0)]
        with m.Elif(adv):                       # here more = 1: the next batch
            m.d.sync += batch.eq(batch + 1)
        with m.If(adv):
            m.d.sync += [v4.eq(v3), v5.eq(v4)]
        return m

    def _input(self, m, move):
        """The two-entry input buffer and the malformed-block filter.

        The buffer is a skid buffer: two registers, the head always in the first, so
        stage 1 reads it with no multiplexer or RAM in the way and ``i.ready`` is the
        register "the spare is empty". (With a LUT-RAM FIFO here the long route from its
        read pointer to the RAM was the critical path.) Each entry's "malformed" bit is
        decoded as it enters. ``move`` (stage 1 takes the head, or the head is empty or
        malformed) refills the head.

        Returns ``(head, ok, ok_next)``: the block at the head, whether it is a
        well-formed block, and that flag's next value.
        """
        width = self.in_layout().size
        head_bits = Signal(width, reset_less=True)
        spare_bits = Signal(width, reset_less=True)
        head_ok, head_bad = Signal(), Signal()  # a well-formed / malformed block at the head
        spare_valid, spare_bad = Signal(), Signal()
        m.d.comb += self.i.ready.eq(~spare_valid)
        push = self.i.valid & ~spare_valid

        src_valid = spare_valid | push          # what enters the head when it moves
        src_bad = Mux(spare_valid, spare_bad, self._malformed(self.i.payload))
        with m.If(move):
            m.d.sync += [head_bits.eq(Mux(spare_valid, spare_bits, self.i.payload)),
                         head_ok.eq(src_valid & ~src_bad),
                         head_bad.eq(src_valid & src_bad),
                         spare_valid.eq(0)]
        with m.Elif(push):
            m.d.sync += [spare_bits.eq(self.i.payload),
                         spare_bad.eq(self._malformed(self.i.payload)),
                         spare_valid.eq(1)]

        error = Signal()
        with m.If(head_bad):
            m.d.sync += error.eq(1)
        m.d.comb += self.error.eq(error)
        return self.in_layout()(head_bits), head_ok, Mux(move, src_valid & ~src_bad, head_ok)

    def _malformed(self, block):
        """An ``msaa`` code the build lacks, or an ``n_edges`` it does not take."""
        mode_ok = Cat(block.msaa == _log2(s) for s in self.modes).any()
        edges_ok = (block.n_edges == 3) | ((block.n_edges == 4) if self.edges == 4 else 0)
        return ~(mode_ok & edges_ok)

    def _offsets(self, m, head, st):
        """Stage 1: saturated ``lo``, corner offsets, odd multiples, box relative to block."""
        s = self.subpix
        odd = {1, 3} | _odd_parts(c for mode in self.msaa_modes
                                  for xy in SAMPLE_PATTERNS[mode] for c in xy)
        wide = signed(self.coef_bits + 4)
        edges = []
        for e in range(self.edges):
            edge = head.edge[e]
            lo16 = edge.lo16
            top = lo16[self.sat_bits - 1:]
            inside = (top == 0) | (top == (1 << len(top)) - 1)
            limit = (1 << (self.sat_bits - 1)) - 1
            sat = Mux(inside, lo16[:self.sat_bits].as_signed(), Mux(lo16[-1], -limit, limit))
            odd_a = {k: _wire(m, v, f"a{k}x{e}") for k, v in
                     self._odd_multiples(edge.A, odd).items()}
            odd_b = {k: _wire(m, v, f"b{k}x{e}") for k, v in
                     self._odd_multiples(edge.B, odd).items()}
            edges.append({
                "lo": st.reg(sat - edge.bias, f"lo{e}", signed(self.sat_bits + 1)),
                "off": st.regs([_lin(odd_a, odd_b, a, b) for _, a, b in _CORNER_PAIRS],
                               f"off{e}_", wide),
                "odd_a": {k: st.reg(v, f"a{k}x{e}", wide) for k, v in odd_a.items()},
                "odd_b": {k: st.reg(v, f"b{k}x{e}", wide) for k, v in odd_b.items()},
            })
        origin_x, origin_y = head.bx << 4, head.by << 4
        rel = signed(self.int_bits + 1)
        box = {k: st.reg(v - o, k, rel) for k, v, o in (
            ("dx0", head.bbox.x0, origin_x), ("dx1", head.bbox.x1, origin_x),
            ("dy0", head.bbox.y0, origin_y), ("dy1", head.bbox.y1, origin_y))}
        mode = Cat(head.msaa == _log2(s) for s in self.modes)
        used = Cat(Const(0b111, 3), head.n_edges == 4) if self.edges == 4 else Const(0b111, 3)
        meta_value = Cat(head.bx, head.by, head.tag, head.msaa, head.n_edges, mode, used)
        return {"edges": edges, "box": box,
                "meta": self._meta_layout()(st.reg(meta_value, "meta",
                                                   self._meta_layout().size))}

    def _corners(self, m, r1, st):
        """Stage 2: the 25 corner signs, pixel offsets, lane sample offsets, box masks."""
        s = self.subpix
        edges = []
        mode = r1["meta"].mode
        for e, edge in enumerate(r1["edges"]):
            lo = edge["lo"]
            pos = [None] * 25
            pos[12] = ~lo[-1]
            for (i, _, _), off in zip(_CORNER_PAIRS, edge["off"]):
                pos[i], pos[24 - i] = _pair_signs(m, lo, off << (s + 2), f"corner{e}_{i}")
            half = [_lin(edge["odd_a"], edge["odd_b"], a, b) for _, a, b in _HALF]
            edges.append({
                "pos": st.reg(Cat(pos), f"pos{e}"),
                "half": st.regs(half, f"half{e}_", signed(self.coef_bits + 3)),
                "lo": st.reg(lo[:self.lane_bits], f"lo{e}"),
                "lane_msaa": self._lane_msaa(m, edge, mode, st, e),
            })
        box = r1["box"]
        col = Cat((box["dx0"] <= x) & (box["dx1"] >= x) for x in range(16))
        row = Cat((box["dy0"] <= y) & (box["dy1"] >= y) for y in range(16))
        return {"edges": edges, "col": st.reg(col, "col"), "row": st.reg(row, "row"),
                "meta": self._meta_layout()(st.reg(r1["meta"].as_value(), "meta"))}

    def _lane_msaa(self, m, edge, mode, st, e):
        """Per lane ``ox*A + oy*B`` for the lane's sample ``l % S`` in the block's mode."""
        if not self.msaa_modes:
            return None
        per_mode = {}
        for samples in self.modes:
            per_mode[samples] = [
                _wire(m, _lin(edge["odd_a"], edge["odd_b"], *SAMPLE_PATTERNS[samples][k]),
                      f"msaa{e}_{samples}x{k}") for k in range(samples)]
        lanes = [self._by_mode(mode, {n: v[lane % n] for n, v in per_mode.items()})
                 for lane in range(LANES)]
        return st.regs(lanes, f"msaa{e}_", signed(self.coef_bits + 5))

    def _span_select(self, m, r2, st):
        """Stage 3: per-edge and combined span classes, span centres, ranks, batches."""
        s, meta = self.subpix, r2["meta"]
        col_span = [r2["col"][4 * x:4 * x + 4].any() for x in range(4)]
        row_span = [r2["row"][4 * y:4 * y + 4].any() for y in range(4)]
        inbox = _wire(m, Cat(col_span[k % 4] & row_span[k // 4] for k in range(SPANS)),
                      "inbox")
        edges, fulls, empties = [], [], []
        for e, edge in enumerate(r2["edges"]):
            full, part = (_wire(m, v, f"{n}{e}") for v, n in
                          zip(self._classes(edge["pos"], inbox), ("full", "part")))
            used = meta.used[e]
            fulls.append(full | ~used.replicate(SPANS))
            empties.append(~(full | part) & used.replicate(SPANS))
            centres = [None] * SPANS
            for (k, _, _), half in zip(_HALF, edge["half"]):
                centres[k] = edge["lo"] + (half << (s + 1))
                centres[15 - k] = edge["lo"] - (half << (s + 1))
            edges.append({
                "full": st.reg(full & used.replicate(SPANS), f"full{e}"),
                "part": st.reg(part & used.replicate(SPANS), f"part{e}"),
                "centre": st.regs([c[:self.lane_bits] for c in centres], f"c{e}_"),
                "half": st.regs(edge["half"], f"half{e}_"),
                "lane_msaa": (st.regs(edge["lane_msaa"], f"msaa{e}_")
                              if edge["lane_msaa"] is not None else None),
            })
        comb_full = _wire(m, inbox & self._and_all(fulls), "comb_full")
        comb_part = _wire(m, ~self._or_all(empties) & inbox & ~comb_full, "comb_part")
        ranks = [_popcount(comb_part[:k])[:4] if k else Const(0, 4) for k in range(SPANS)]
        count = _wire(m, _popcount(comb_part), "count")
        n_last = self._by_mode(meta.mode, {
            n: Mux(count == 0, 0, (count - 1) >> (4 - _log2(n))) if n > 1 else Const(0, 4)
            for n in self.modes})
        return {"edges": edges, "col": st.reg(r2["col"], "col"), "row": st.reg(r2["row"], "row"),
                "span_full": st.reg(comb_full, "span_full"),
                "span_part": st.reg(comb_part, "span_part"),
                "rank": st.regs(ranks, "rank", unsigned(4)),
                "n_last": st.reg(n_last, "n_last", unsigned(4)),
                "n_last_in": n_last,            # the value being loaded
                "meta": self._meta_layout()(st.reg(meta.as_value(), "meta"))}

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

    def _lane_select(self, m, r3, batch, more, st):
        """Stage 4: the spans of this batch into the lanes; ``b = c_span + lo_msaa``."""
        meta = r3["meta"]
        span_of = self._batch_spans(m, r3, batch)
        edges = []
        for e, edge in enumerate(r3["edges"]):
            lanes, full, part = self._edge_lanes(m, edge, span_of, meta.mode, e)
            lanes = [_wire(m, b, f"b{e}_{lane}") for lane, b in enumerate(lanes)]
            offsets = [half << (self.subpix - 1) for half in edge["half"]]
            edges.append({"folded": st.regs([(b ^ b[-1].replicate(len(b)))[:-1]
                                             for b in lanes], f"folded{e}_"),
                          "negative": st.reg(Cat(b[-1] for b in lanes), f"negative{e}"),
                          "full": st.reg(full, f"full{e}"),
                          "part": st.reg(part, f"part{e}"),
                          "mag": st.regs([Mux(o[-1], -o, o) for o in offsets], f"mag{e}_",
                                         unsigned(self.lane_bits - 1)),
                          "mag_neg": st.reg(Cat(o[-1] for o in offsets), f"mag_neg{e}"),
                          "class_full": st.reg(edge["full"], f"cfull{e}"),
                          "class_part": st.reg(edge["part"], f"cpart{e}")})
        write, group = self._write_plan(r3, batch)
        return {"edges": edges, "write": st.reg(write, "write"),
                "group": st.regs(group, "group", unsigned(3)),
                "first": st.reg(batch == 0, "first"),
                "last": st.reg(~more, "last"),
                "col": st.reg(r3["col"], "col"), "row": st.reg(r3["row"], "row"),
                "span_full": st.reg(r3["span_full"], "span_full"),
                "span_part": st.reg(r3["span_part"], "span_part"),
                "meta": self._meta_layout()(st.reg(meta.as_value(), "meta"))}

    def _batch_spans(self, m, r3, batch):
        """Span index held by lane group ``r`` in this batch, for ``r < 16 / min(S > 1)``:
        the PARTIAL span of rank ``batch * G + r`` (``G = 16 / S`` groups)."""
        mode, part, ranks = r3["meta"].mode, r3["span_part"], r3["rank"]
        groups = LANES // min(self.msaa_modes) if self.msaa_modes else 0
        span_of = []
        for r in range(groups):
            want = _wire(m, self._by_mode(mode, {n: (batch << (4 - _log2(n))) + r
                                                 for n in self.msaa_modes if r < LANES // n}),
                         f"rank_of{r}", unsigned(4))
            one_hot = _wire(m, Cat(part[k] & (ranks[k] == want) for k in range(SPANS)),
                            f"in_group{r}")
            span_of.append(_wire(m, _encode(one_hot), f"span_of{r}"))
        return span_of

    def _edge_lanes(self, m, edge, span_of, mode, e):
        """One edge's 16 lane values ``b`` and the lanes' FULL / PARTIAL bits: at 1x lane
        ``l`` is span ``l``; at ``S`` samples lane ``l`` is group ``l // S``, sample
        ``l % S``."""
        picked = [(_wire(m, Array(edge["centre"])[k], f"csel{e}_{r}"),
                   edge["full"].bit_select(k, 1), edge["part"].bit_select(k, 1))
                  for r, k in enumerate(span_of)]
        lanes, full, part = [], [], []
        for lane in range(LANES):
            choice = {1: (edge["centre"][lane], edge["full"][lane], edge["part"][lane])}
            for n in self.msaa_modes:
                choice[n] = picked[lane // n]
            choice = {n: v for n, v in choice.items() if n in self.modes}
            centre = self._by_mode(mode, {n: v[0] for n, v in choice.items()})
            if edge["lane_msaa"] is not None:
                centre = centre + (edge["lane_msaa"][lane] << (self.subpix - 4))
            lanes.append(centre[:self.lane_bits])
            full.append(self._by_mode(mode, {n: v[1] for n, v in choice.items()}))
            part.append(self._by_mode(mode, {n: v[2] for n, v in choice.items()}))
        return lanes, Cat(full), Cat(part)

    def _write_plan(self, r3, batch):
        """Which spans this batch writes, and the lane group that holds each."""
        mode, part, ranks = r3["meta"].mode, r3["span_part"], r3["rank"]
        write = self._by_mode(mode, {
            n: (part & Cat((ranks[k] >> (4 - _log2(n))) == batch for k in range(SPANS))
                if n > 1 else Const((1 << SPANS) - 1, SPANS)) for n in self.modes})
        group = [self._by_mode(mode, {n: (ranks[k] & ((LANES // n) - 1)) if n > 1 else
                                      Const(0, 3) for n in self.modes})
                 for k in range(SPANS)]
        return write, group

    def _lane_hits(self, m, edge, lane, name):
        """The 16 pixel tests ``b + lo_pixel >= 0`` of a lane: 8 comparators (pixels p
        and 15 - p have opposite offsets, the seed's Fig. 18a)."""
        hits = [None] * 16
        folded, negative = edge["folded"][lane], edge["negative"][lane]
        for j, (p, _, _) in enumerate(_HALF):
            hits[p], hits[15 - p] = _folded_signs(m, folded, negative, edge["mag"][j],
                                                  edge["mag_neg"][j], f"{name}_{p}")
        return Cat(hits)

    def _edge_masks(self, m, r4, st):
        """Stage 5: each edge's 16-pixel mask per lane (the lane's 8 comparators, FULL
        gives ones, an unused edge ones), registered apart from the AND over the edges:
        the comparators of different edges sit far apart on the device."""
        edges = []
        for e, edge in enumerate(r4["edges"]):
            unused = ~r4["meta"].used[e]
            masks = []
            for lane in range(LANES):
                hits = _wire(m, self._lane_hits(m, edge, lane, f"hit{e}_{lane}"),
                             f"hits{e}_{lane}")
                masks.append(edge["full"][lane].replicate(16) | unused.replicate(16) |
                             (edge["part"][lane].replicate(16) & hits))
            edges.append({"mask": st.regs(masks, f"mask{e}_"),
                          "class_full": st.reg(edge["class_full"], f"cfull{e}"),
                          "class_part": st.reg(edge["class_part"], f"cpart{e}")})
        passed = {k: st.reg(r4[k], k) for k in
                  ("write", "first", "last", "col", "row", "span_full", "span_part")}
        return {"edges": edges, **passed,
                "group": st.regs(r4["group"], "group"),
                "meta": self._meta_layout()(st.reg(r4["meta"].as_value(), "meta"))}

    def _output(self, m, r5, v5, adv):
        """Stage 6: AND over the edges and the box mask, written into the output word
        when ``adv``."""
        meta = r5["meta"]
        lanes = [_wire(m, self._and_all([edge["mask"][lane] for edge in r5["edges"]]),
                       f"lane{lane}") for lane in range(LANES)]
        inside = _wire(m, Cat(r5["col"][4 * (k % 4) + p % 4] & r5["row"][4 * (k // 4) + p // 4]
                              for k in range(SPANS) for p in range(16)), "inside")
        box = [[inside[16 * k + p] for p in range(16)] for k in range(SPANS)]

        out = self.o.payload
        with m.If(adv & v5):
            self._write_mask(m, r5, lanes, box, out.mask)
            m.d.sync += [out.bx.eq(meta.bx), out.by.eq(meta.by), out.tag.eq(meta.tag),
                         out.msaa.eq(meta.msaa), out.n_edges.eq(meta.n_edges),
                         out.span_full.eq(r5["span_full"]),
                         out.span_partial.eq(r5["span_part"])]
            for e, edge in enumerate(r5["edges"]):
                m.d.sync += [out.edge_full[e].eq(edge["class_full"]),
                             out.edge_partial[e].eq(edge["class_part"])]

    def _write_mask(self, m, r5, lanes, box, mask):
        """Write this batch's spans into ``mask``; the first batch also writes the FULL
        spans (box mask) and clears everything else."""
        mode, first = r5["meta"].mode, r5["first"]
        with m.Switch(mode):
            for index, n in enumerate(self.modes):
                fields = self._group_fields(m, lanes, n)
                with m.Case(1 << index):
                    for k in range(SPANS):
                        field = mask[16 * n * k:16 * n * (k + 1)]
                        inside = Cat(box[k][p].replicate(n) for p in range(16))
                        data = fields[k] if n == 1 else (
                            Array(fields)[r5["group"][k]] if len(fields) > 1 else fields[0])
                        with m.If(r5["write"][k]):
                            m.d.sync += field.eq(data & inside)
                        with m.Elif(first):
                            m.d.sync += field.eq(Mux(r5["span_full"][k], inside, 0))
                    if 256 * n < len(mask):
                        with m.If(first):
                            m.d.sync += mask[256 * n:].eq(0)

    @staticmethod
    def _group_fields(m, lanes, n):
        """The ``16*n``-bit span fields (bit ``p*n + s``) of the lane groups at ``n``
        samples: group ``g`` is lanes ``g*n .. g*n + n - 1``, one sample each."""
        if n == 1:
            return lanes
        return [_wire(m, Cat(lanes[g * n + smp][p] for p in range(16) for smp in range(n)),
                      f"group{n}x_{g}") for g in range(LANES // n)]


#: Designs of this block that ``python -m hw.gen`` builds, by name.
DESIGNS = {
    "block": BlockRasterizer,
}
