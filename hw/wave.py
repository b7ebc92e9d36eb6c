"""The wave scheduler for merged vertex/geometry (VS|GS) shaders.

A draw command goes in, wave records come out, one per transfer. ``golden/wave.py`` is
the executable reference: the output stream equals its :func:`golden.wave.schedule`,
record for record (its docstring has the packing rules and address formulas).

Blocks
------
:class:`Assembler` (``wave.assembler``)
    ``draw`` (:func:`draw_layout`) and, for indexed draws, ``index`` (:func:`index_layout`:
    up to three 32-bit indices per transfer and their ``count``; exactly ``count`` indices
    per indexed draw, in transfers of its own) -> ``o``, a stream of :func:`prim_layout`
    words: a DRAW word with the draw's settings, its primitives (K vertex ids each, Vulkan
    order, restart honoured), an END word. One primitive per clock for non-indexed draws,
    indexed strips and indexed triangle lists in full transfers (three indices a clock).
:class:`Builder` (``wave.builder``)
    Primitive words -> wave records (:func:`record_layout`) on ``o``. One triangle per
    clock into waves in both modes, wave boundaries included.
:class:`Scheduler` (``wave.scheduler``)
    The two connected.

Wave record (``o.payload``, LSB first; invalid fields are 0)
-----------------------------------------------------------
``last`` (1, last wave of its draw), ``mode`` (1: 0 replicated, 1 non-replicated),
``n_fibers``, ``n_prims``, ``k`` (6), ``f`` (fibers per primitive; 1 non-replicated),
``vs_size`` (8), ``first_prim`` (32, id of the wave's primitive 0); then ``fibers[L]``:
``vertex_valid``, ``vertex`` (32), ``prim_valid``, ``rel_prim`` (the primitive within
the wave), ``gs_valid``, ``gs_out_vert``; then ``prims[L]``: ``max_k`` input slots of
log2(L) bits. Addresses are in registers: a fiber's vertex-shader output is at
``fiber * vs_size``, input j of primitive r at ``prims[r][j] * vs_size`` (replicated:
``(r * F + j) * vs_size``, the seed's PRIM_SIZE = F·vs_size and VERT_SIZE = vs_size).
The record carries slots, not products, so that no multiplier sits behind each of the
L·max_k fields: the shader multiplies by its draw's ``vs_size``, as the seed's address
formulas do.

Decisions (also in README.md)
-----------------------------
* ``count`` is the number of primitives of a non-indexed draw and the number of indices
  an indexed draw reads (Vulkan's ``indexCount``): with primitive restart, the number of
  primitives of an indexed draw is not known in advance.
* The ``index`` port carries up to three indices per transfer (``count`` 0 to 3, lanes
  in order), so an indexed triangle list reaches one triangle per clock. A transfer
  holds indices of one draw only; the assembler takes a transfer's lanes in order, up to
  one completed primitive per clock (a transfer takes one clock per primitive it
  completes, at least one). Lanes beyond an indexed draw's ``count`` are bad input: dropped, error
  set.
* Every bad input is found from the draw command, so a bad draw is dropped whole: an
  unknown topology or a patch size outside 1..``max_k`` in the assembler (an indexed
  draw's indices are still read and dropped), an unknown mode (3), N outside 1..1024 or
  a primitive that cannot fit an empty wave in the builder (which drops the draw's words
  up to its END). Each sets the sticky ``error`` output.
* The reuse table is the wave's own vertex-id fields (the record being built must hold
  them anyway) with a comparator per entry and lane: three lanes of L comparators search
  three vertex ids per clock (the spec's small CAM). A primitive of K > 3 vertices takes
  ⌈K/3⌉ clocks; its new vertices are written tentatively, and if it does not fit after
  all, the wave goes out without it and the primitive is searched again in a new wave.
  A primitive of K <= 3 that does not fit goes into the new wave in the same clock
  (its slots are its own first-use ranks), so wave boundaries cost no clock.

Structure and timing
--------------------
The assembler writes into a 4-word FIFO whose read side is ``o``; the builder reads its
input through a 4-word FIFO. Their ``ready`` outputs come from FIFO levels, so no output
``ready`` reaches an input ``ready``. The builder's search, packing decision and table
update happen in one clock (from the FIFO's output register to the table registers);
the wave record goes out from a register. That one-clock chain is the expected critical
path; README.md says where Fmax stands and how a registered search stage would cut it.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.params import check_int, check_pow2

__all__ = ["Topology", "Mode", "Kind", "RESTART", "draw_layout", "index_layout", "prim_layout",
           "record_layout", "Assembler", "Builder", "Scheduler", "DESIGNS"]

RESTART = 0xFFFF_FFFF
INDEX_LANES = 3                     # indices per transfer on the index port
MAX_N = 1024
LANES = 3                           # vertex ids searched per clock


class Topology:
    """Vulkan topology codes."""
    POINT_LIST = 0
    LINE_LIST = 1
    LINE_STRIP = 2
    TRIANGLE_LIST = 3
    TRIANGLE_STRIP = 4
    PATCH_LIST = 10


class Mode:
    """A draw's ``mode`` field (3 is bad input)."""
    REPLICATED = 0
    NON_REPLICATED = 1
    AUTOMATIC = 2


class Kind:
    """What a primitive word is."""
    DRAW = 0
    PRIM = 1
    END = 2


def _check_params(wave_size, max_k):
    check_pow2("wave_size", wave_size, 4, 64)
    check_int("max_k", max_k, 3, 32)


def draw_layout():
    """A draw command: topology, index flag, mode settings, first vertex, count."""
    return data.StructLayout({
        "topology": 4, "indexed": 1, "mode": 2, "k": 6, "n": 11, "vs_size": 8,
        "gs_size": 8, "first": 32, "count": 32, "threshold": 32})


def index_layout():
    """An index transfer: ``count`` (0 to 3) indices in lanes ``0 .. count-1``."""
    return data.StructLayout({"count": 2, "index": data.ArrayLayout(32, INDEX_LANES)})


def settings_layout():
    """The settings a DRAW word carries to the builder (``k``: vertices per primitive)."""
    return data.StructLayout({"mode": 2, "k": 6, "n": 11, "vs_size": 8, "gs_size": 8,
                              "threshold": 32})


def prim_layout(max_k):
    """Assembler -> builder word: ``kind`` and a DRAW's settings or a PRIM's vertices."""
    return data.StructLayout({
        "kind": 2,
        "body": data.UnionLayout({"settings": settings_layout(),
                                  "vertex": data.ArrayLayout(32, max_k)})})


def _bits(wave_size):
    return wave_size.bit_length() - 1


def fiber_layout(wave_size):
    b = _bits(wave_size)
    return data.StructLayout({"vertex_valid": 1, "vertex": 32, "prim_valid": 1,
                              "rel_prim": b, "gs_valid": 1, "gs_out_vert": b})


def record_layout(wave_size, max_k):
    """One wave record (see the module docstring)."""
    b = _bits(wave_size)
    return data.StructLayout({
        "last": 1, "mode": 1, "n_fibers": b + 1, "n_prims": b + 1, "k": 6, "f": b + 1,
        "vs_size": 8, "first_prim": 32,
        "fibers": data.ArrayLayout(fiber_layout(wave_size), wave_size),
        "prims": data.ArrayLayout(data.ArrayLayout(b, max_k), wave_size)})


# ---------------------------------------------------------------- assembler

class Assembler(wiring.Component):
    """Primitive assembler: draw commands (and indices) -> primitive words.

    Parameters
    ----------
    max_k : int
        Largest patch (control points) taken, 3 to 32; a larger one is bad input.

    Attributes
    ----------
    draw : stream of :func:`draw_layout`, in
    index : stream of :func:`index_layout`, in (``count`` indices per indexed draw)
    o : stream of :func:`prim_layout`, out
    error : out
        Sticky: a draw had an unknown topology or a patch size outside 1..``max_k``, or
        an index transfer carried more indices than its draw had left.
    """

    def __init__(self, *, max_k=32):
        check_int("max_k", max_k, 3, 32)
        self.max_k = max_k
        super().__init__({
            "draw": In(stream.Signature(draw_layout())),
            "index": In(stream.Signature(index_layout())),
            "o": Out(stream.Signature(prim_layout(max_k))),
            "error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        K = self.max_k
        layout = prim_layout(K)
        m.submodules.out = out = fifo.SyncFIFOBuffered(width=layout.size, depth=4)
        m.d.comb += [self.o.valid.eq(out.r_rdy), self.o.payload.eq(out.r_data),
                     out.r_en.eq(self.o.ready)]
        word = Signal(layout)
        m.d.comb += out.w_data.eq(word)

        cmd = self.draw.payload
        topology = Signal(4)
        k = Signal(6)                         # vertices per primitive
        remaining = Signal(32)                # primitives (non-indexed) or indices left
        base = Signal(32)                     # next vertex id (non-indexed)
        odd = Signal()                        # the next strip triangle is odd
        window = Signal(data.ArrayLayout(32, K))
        fill = Signal(6)                      # indices held in the window
        strip = (topology == Topology.LINE_STRIP) | (topology == Topology.TRIANGLE_STRIP)
        cmd_k = Signal(6)
        with m.Switch(cmd.topology):
            with m.Case(Topology.POINT_LIST):
                m.d.comb += cmd_k.eq(1)
            with m.Case(Topology.LINE_LIST, Topology.LINE_STRIP):
                m.d.comb += cmd_k.eq(2)
            with m.Case(Topology.TRIANGLE_LIST, Topology.TRIANGLE_STRIP):
                m.d.comb += cmd_k.eq(3)
            with m.Case(Topology.PATCH_LIST):
                m.d.comb += cmd_k.eq(cmd.k)
        cmd_good = (cmd_k >= 1) & (cmd_k <= K)

        def emit(vertices):
            m.d.comb += [word.kind.eq(Kind.PRIM), out.w_en.eq(1)]
            m.d.comb += [word.body.vertex[j].eq(v) for j, v in enumerate(vertices)]

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.draw.ready.eq(out.w_rdy)
                with m.If(self.draw.valid & out.w_rdy):
                    m.d.sync += [topology.eq(cmd.topology), k.eq(cmd_k), base.eq(cmd.first),
                                 remaining.eq(cmd.count), odd.eq(0), fill.eq(0)]
                    with m.If(cmd_good):
                        settings = word.body.settings
                        m.d.comb += [word.kind.eq(Kind.DRAW), out.w_en.eq(1),
                                     settings.mode.eq(cmd.mode), settings.k.eq(cmd_k),
                                     settings.n.eq(cmd.n), settings.vs_size.eq(cmd.vs_size),
                                     settings.gs_size.eq(cmd.gs_size),
                                     settings.threshold.eq(cmd.threshold)]
                        with m.If(cmd.count == 0):
                            m.next = "END"
                        with m.Elif(cmd.indexed):
                            m.next = "INDEXED"
                        with m.Else():
                            m.next = "SEQUENTIAL"
                    with m.Else():
                        m.d.sync += self.error.eq(1)
                        with m.If(cmd.indexed & (cmd.count != 0)):
                            m.next = "DROP"

            with m.State("SEQUENTIAL"):
                with m.If(out.w_rdy):
                    ids = [base + j for j in range(K)]
                    with m.If(strip & odd & (topology == Topology.TRIANGLE_STRIP)):
                        emit([ids[0], ids[2], ids[1]] + ids[3:])
                    with m.Else():
                        emit(ids)
                    m.d.sync += [base.eq(base + Mux(strip, 1, k)), odd.eq(~odd),
                                 remaining.eq(remaining - 1)]
                    with m.If(remaining == 1):
                        m.next = "END"

            with m.State("INDEXED"):
                done = self._indexed(m, out, emit, k, strip, topology, remaining, odd,
                                     window, fill)
                with m.If(done):
                    m.next = "END"

            with m.State("END"):
                with m.If(out.w_rdy):
                    m.d.comb += [word.kind.eq(Kind.END), out.w_en.eq(1)]
                    m.next = "IDLE"

            with m.State("DROP"):
                m.d.comb += self.index.ready.eq(1)
                with m.If(self.index.valid):
                    m.d.sync += remaining.eq(remaining - self.index.payload.count)
                    with m.If(self.index.payload.count >= remaining):
                        m.next = "IDLE"
        return m

    def _indexed(self, m, out, emit, k, strip, topology, remaining, odd, window, fill):
        """One clock of an indexed draw; returns the signal that the draw has all its
        indices. The clock takes lanes of the index transfer from ``lane`` on, in order,
        up to (not including) a second lane that completes a primitive, so at most one
        primitive goes out per clock: a transfer takes one clock per primitive it
        completes (at least one), so three indices of a triangle list take one clock.
        The transfer is acknowledged when its last lane is taken, or when the draw has
        all its indices (lanes left over then are bad input: dropped, error set)."""
        K = self.max_k
        lane = Signal(range(INDEX_LANES), name="index_lane")   # next lane of the transfer
        transfer = self.index.payload

        win = [window[p] for p in range(K)]   # the window before each lane, in turn
        fill_now, odd_now = fill, odd
        taken_before, emitted_before = Const(1), Const(0)
        taken_count = Const(0, 2)
        emitters = []                         # per lane: (emits, vertices)
        for j in range(INDEX_LANES):
            index = transfer.index[j]
            restart = index == RESTART
            completes = ~restart & Mux(strip, fill_now + 1 >= k, fill_now + 1 == k)
            take = Signal(name=f"index{j}_take")
            m.d.comb += take.eq((j >= lane) & (j < transfer.count) & (remaining > taken_count)
                                & taken_before & ~(emitted_before & completes))
            emits = Signal(name=f"index{j}_emits")
            m.d.comb += emits.eq(take & completes)
            # The primitive this lane completes: strips from the last two indices (odd
            # triangles swap the last two vertices), lists from the window.
            if_list = [Mux(fill_now == p, index, win[p]) for p in range(K)]
            triangle = [win[0], Mux(odd_now, index, win[1]), Mux(odd_now, win[1], index)]
            line = [win[1], index, triangle[2]]
            if_strip = [Mux(topology == Topology.LINE_STRIP, line[p], triangle[p])
                        for p in range(3)]
            emitters.append((emits, [Mux(strip, if_strip[p], if_list[p]) if p < 3
                                     else if_list[p] for p in range(K)]))
            # The state after this lane: strips shift the window, lists fill it.
            shifted = [win[1], index] + win[2:]
            stepped = [Mux(strip, shifted[p], if_list[p]) for p in range(K)]
            win = [Mux(take & ~restart, stepped[p], win[p]) for p in range(K)]
            fill_next = Mux(restart, 0, Mux(completes, Mux(strip, fill_now, 0), fill_now + 1))
            odd_next = Mux(restart, 0, Mux(completes & strip, ~odd_now, odd_now))
            fill_now = Mux(take, fill_next, fill_now)
            odd_now = Mux(take, odd_next, odd_now)
            taken_before = taken_before & ((j < lane) | take)   # lanes stay in order
            emitted_before = emitted_before | emits
            taken_count = taken_count + take
        next_lane = Signal(range(INDEX_LANES + 1))
        m.d.comb += next_lane.eq(lane + taken_count)
        done = Signal()
        m.d.comb += done.eq(self.index.valid & out.w_rdy & (remaining == taken_count))
        ack = (next_lane >= transfer.count) | done
        with m.If(self.index.valid & out.w_rdy):
            m.d.comb += self.index.ready.eq(ack)
            m.d.sync += [remaining.eq(remaining - taken_count), fill.eq(fill_now),
                         odd.eq(odd_now), lane.eq(Mux(ack, 0, next_lane))]
            m.d.sync += [window[p].eq(win[p]) for p in range(K)]
            with m.If(done & (next_lane < transfer.count)):
                m.d.sync += self.error.eq(1)
            for emits, vertices in emitters:
                with m.If(emits):
                    emit(vertices)
        return done


# ---------------------------------------------------------------- builder

class Builder(wiring.Component):
    """Wave builder: primitive words -> wave records, one record per transfer.

    Parameters
    ----------
    wave_size : int
        L, fibers per wave: a power of two from 4 to 64.
    max_k : int
        Vertices a primitive word holds (3 to 32).

    Attributes
    ----------
    i : stream of :func:`prim_layout`, in
    o : stream of :func:`record_layout`, out
    error : out
        Sticky: a draw had an unknown mode, N outside 1..1024, or a primitive that
        cannot fit an empty wave; its words were dropped up to its END.
    """

    def __init__(self, *, wave_size=32, max_k=32):
        _check_params(wave_size, max_k)
        self.wave_size = wave_size
        self.max_k = max_k
        super().__init__({
            "i": In(stream.Signature(prim_layout(max_k))),
            "o": Out(stream.Signature(record_layout(wave_size, max_k))),
            "error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        L, K, b = self.wave_size, self.max_k, _bits(self.wave_size)
        chunks = -(-K // LANES)

        m.submodules.inp = inp = fifo.SyncFIFOBuffered(width=prim_layout(K).size, depth=4)
        m.d.comb += [inp.w_en.eq(self.i.valid), inp.w_data.eq(self.i.payload),
                     self.i.ready.eq(inp.w_rdy)]
        head = data.View(prim_layout(K), inp.r_data)

        # Draw settings.
        nonrep = Signal()
        k = Signal(6)
        f = Signal(b + 1)                     # fibers per primitive
        n = Signal(11)
        vs_size = Signal(8)
        dropping = Signal()

        # The wave being built.
        n_vert = Signal(range(L + 1))         # committed distinct vertices (non-rep)
        n_tent = Signal(range(L + K + 1))     # ... plus a multi-chunk primitive's new ones
        n_prims = Signal(range(L + 1))
        next_fiber = Signal(range(L + 1))     # replicated: n_prims * F
        first_prim = Signal(32)
        prim_id = Signal(32)                  # id of the next primitive of the draw
        chunk = Signal(range(chunks))
        fibers = Signal(data.ArrayLayout(fiber_layout(L), L))
        slots = Signal(data.ArrayLayout(data.ArrayLayout(b, K), L))

        # ---- the record going out
        emit_ok = ~self.o.valid | self.o.ready
        emit = Signal()
        emit_last = Signal()
        with m.If(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        record = self.o.payload
        with m.If(emit):
            m.d.sync += [self.o.valid.eq(1), record.last.eq(emit_last),
                         record.mode.eq(nonrep), record.n_prims.eq(n_prims),
                         record.k.eq(k), record.f.eq(Mux(nonrep, 1, f)),
                         record.vs_size.eq(vs_size), record.first_prim.eq(first_prim),
                         record.n_fibers.eq(Mux(nonrep, Mux(n_vert > n_prims, n_vert, n_prims),
                                                next_fiber))]
            for index in range(L):
                held, out = fibers[index], record.fibers[index]
                rep_valid = ~nonrep & (index < next_fiber)
                has_vertex = Mux(nonrep, index < n_vert, held.vertex_valid & rep_valid)
                has_prim = Mux(nonrep, index < n_prims, held.prim_valid & rep_valid)
                has_gs = held.gs_valid & rep_valid
                m.d.sync += [
                    out.vertex_valid.eq(has_vertex),
                    out.vertex.eq(Mux(has_vertex, held.vertex, 0)),
                    out.prim_valid.eq(has_prim),
                    out.rel_prim.eq(Mux(has_prim, Mux(nonrep, index, held.rel_prim), 0)),
                    out.gs_valid.eq(has_gs),
                    out.gs_out_vert.eq(Mux(has_gs, held.gs_out_vert, 0))]
                for j in range(K):
                    keep = (index < n_prims) & (j < k)
                    m.d.sync += record.prims[index][j].eq(Mux(keep, slots[index][j], 0))

        # ---- the three lanes of this clock
        lane_index = [chunk * LANES + lane for lane in range(LANES)]
        vertex_of = Array(head.body.vertex[j] for j in range(K))
        lane_vertex = [Signal(32, name=f"lane{lane}_vertex") for lane in range(LANES)]
        lane_valid = [Signal(name=f"lane{lane}_valid") for lane in range(LANES)]
        for lane in range(LANES):
            m.d.comb += [lane_vertex[lane].eq(vertex_of[lane_index[lane]]),
                         lane_valid[lane].eq(lane_index[lane] < k)]
        last_chunk = (chunk + 1) * LANES >= k

        # Lane l equals an earlier valid lane e.
        same = {(l, e): lane_valid[l] & (lane_vertex[l] == lane_vertex[e])
                for l in range(LANES) for e in range(l)}
        dup = [Const(0)] + [Cat(same[l, e] for e in range(l)).any() for l in range(1, LANES)]

        # Search: lane l against the table entries in use.
        hit, hit_slot = [], []
        for lane in range(LANES):
            match = Signal(L, name=f"lane{lane}_match")
            m.d.comb += match.eq(Cat((fibers[e].vertex == lane_vertex[lane]) & (e < n_tent)
                                     for e in range(L)))
            slot = Signal(b, name=f"lane{lane}_hit_slot")
            # Entries in use are distinct, so at most one bit is set: OR the indices.
            for bit in range(b):
                m.d.comb += slot[bit].eq(Cat(match[e] for e in range(L) if e >> bit & 1).any())
            hit.append(match.any())
            hit_slot.append(slot)

        def lane_slots(base, with_table):
            """New-lane flags and slots of the lanes, new vertices numbered from ``base``."""
            new, slot_of, count = [], [], Const(0, 2)
            for lane in range(LANES):
                found = hit[lane] if with_table else Const(0)
                is_new = Signal(name=f"lane{lane}_new{'' if with_table else '_fresh'}")
                m.d.comb += is_new.eq(lane_valid[lane] & ~found & ~dup[lane])
                slot = base + count
                for e in range(lane):      # a repeat of an earlier lane takes its slot
                    slot = Mux(same[lane, e], slot_of[e], slot)
                if with_table:
                    slot = Mux(found, hit_slot[lane], slot)
                new.append(is_new)
                slot_of.append(slot)
                count = count + is_new
            return new, slot_of, count

        new, slot_of, new_count = lane_slots(n_tent, True)
        fresh_new, fresh_slot, fresh_count = lane_slots(Const(0, 1), False)
        n_after = n_tent + new_count

        # ---- writes into the wave (done when `advance`)
        write_vertex = [Signal(name=f"lane{lane}_write") for lane in range(LANES)]
        write_pos = [Signal(range(L + K + 1), name=f"lane{lane}_pos") for lane in range(LANES)]
        write_slot = [Signal(b + 1, name=f"lane{lane}_slot") for lane in range(LANES)]
        write_prim = Signal(range(L + 1))     # the primitive record written
        range_write = Signal()                # replicated: claim F fibers from range_base
        range_base = Signal(range(L + 1))
        advance = Signal()
        for lane in range(LANES):
            hot = Signal(L + K + 1, name=f"lane{lane}_onehot")
            m.d.comb += hot.eq(Const(1, 1) << write_pos[lane])
            for e in range(L):
                with m.If(advance & write_vertex[lane] & hot[e]):
                    m.d.sync += fibers[e].vertex.eq(lane_vertex[lane])
        prim_hot = Signal(L + 1)
        m.d.comb += prim_hot.eq(Const(1, 1) << write_prim)
        for r in range(L):
            for j in range(K):
                lane = j % LANES
                with m.If(advance & prim_hot[r] & (chunk == j // LANES) & lane_valid[lane]):
                    m.d.sync += slots[r][j].eq(write_slot[lane])
        for index in range(L):
            offset = Signal(b + 1, name=f"fiber{index}_offset")
            m.d.comb += offset.eq(index - range_base)
            claimed = (index >= range_base) & (offset < f)
            with m.If(advance & range_write & claimed):
                fb = fibers[index]
                m.d.sync += [fb.prim_valid.eq(1), fb.rel_prim.eq(write_prim),
                             fb.vertex_valid.eq(offset < k), fb.gs_valid.eq(offset < n),
                             fb.gs_out_vert.eq(offset)]

        def start_wave():
            m.d.sync += [n_vert.eq(0), n_tent.eq(0), n_prims.eq(0), next_fiber.eq(0)]

        def replicated():
            """Replicated: the primitive takes F fibers from ``next_fiber`` (or a new wave)."""
            fits = (chunk != 0) | (next_fiber + f <= L)
            with m.If(fits | emit_ok):
                m.d.comb += advance.eq(1)
                base = Mux(fits, next_fiber, 0)
                rel = Mux(fits, n_prims, 0)
                m.d.comb += [write_prim.eq(rel), range_base.eq(base)]
                with m.If(chunk == 0):
                    m.d.comb += range_write.eq(1)
                for lane in range(LANES):
                    m.d.comb += [write_vertex[lane].eq(lane_valid[lane]),
                                 write_pos[lane].eq(base + lane_index[lane]),
                                 write_slot[lane].eq(base + lane_index[lane])]
                with m.If(~fits):
                    m.d.comb += emit.eq(1)
                with m.If(rel == 0):
                    m.d.sync += first_prim.eq(prim_id)
                with m.If(last_chunk):
                    m.d.comb += inp.r_en.eq(1)
                    m.d.sync += [n_prims.eq(rel + 1), next_fiber.eq(base + f), chunk.eq(0),
                                 prim_id.eq(prim_id + 1)]
                with m.Else():
                    m.d.sync += [chunk.eq(chunk + 1), n_prims.eq(rel), next_fiber.eq(base)]

        def non_replicated():
            """Non-replicated: the primitive's new vertices take the next free fibers."""
            fits = (n_after <= L) & (n_prims < L)
            single = k <= LANES
            with m.If(fits):
                # Into this wave (tentatively while a multi-chunk primitive is searched).
                m.d.comb += [advance.eq(1), write_prim.eq(n_prims)]
                for lane in range(LANES):
                    m.d.comb += [write_vertex[lane].eq(new[lane]),
                                 write_pos[lane].eq(slot_of[lane]),
                                 write_slot[lane].eq(slot_of[lane])]
                m.d.sync += n_tent.eq(n_after)
                with m.If(n_prims == 0):
                    m.d.sync += first_prim.eq(prim_id)
                with m.If(last_chunk):
                    m.d.comb += inp.r_en.eq(1)
                    m.d.sync += [n_vert.eq(n_after), n_prims.eq(n_prims + 1), chunk.eq(0),
                                 prim_id.eq(prim_id + 1)]
                with m.Else():
                    m.d.sync += chunk.eq(chunk + 1)
            with m.Elif(~last_chunk):
                # Over the wave already: keep counting (nothing is written past L); the
                # verdict comes at the last chunk.
                m.d.comb += [advance.eq(1), write_prim.eq(L)]
                m.d.sync += [n_tent.eq(n_after), chunk.eq(chunk + 1)]
            with m.Elif(emit_ok):
                m.d.comb += emit.eq(1)
                with m.If(single):
                    # The wave goes out and the primitive starts the next one, same clock.
                    m.d.comb += [advance.eq(1), write_prim.eq(0), inp.r_en.eq(1)]
                    for lane in range(LANES):
                        m.d.comb += [write_vertex[lane].eq(fresh_new[lane]),
                                     write_pos[lane].eq(fresh_slot[lane]),
                                     write_slot[lane].eq(fresh_slot[lane])]
                    m.d.sync += [n_vert.eq(fresh_count), n_tent.eq(fresh_count),
                                 n_prims.eq(1), first_prim.eq(prim_id), chunk.eq(0),
                                 prim_id.eq(prim_id + 1)]
                with m.Else():
                    # The wave goes out; the primitive is searched again in an empty wave.
                    m.d.sync += [n_vert.eq(0), n_tent.eq(0), n_prims.eq(0), chunk.eq(0)]

        with m.If(inp.r_rdy):
            with m.Switch(head.kind):
                with m.Case(Kind.DRAW):
                    s = head.body.settings
                    storage = Signal(19 + b)
                    m.d.comb += storage.eq((s.n * s.gs_size) << b)
                    use_nonrep = Mux(s.mode == Mode.AUTOMATIC, storage <= s.threshold,
                                     s.mode == Mode.NON_REPLICATED)
                    fibers_per_prim = Mux(s.n > s.k, s.n, s.k)
                    bad = ((s.mode == 3) | (s.n == 0) | (s.n > MAX_N)
                           | Mux(use_nonrep, s.k > L, fibers_per_prim > L))
                    m.d.comb += inp.r_en.eq(1)
                    m.d.sync += [nonrep.eq(use_nonrep), k.eq(s.k), n.eq(s.n),
                                 f.eq(Mux(use_nonrep, 1, fibers_per_prim)),
                                 vs_size.eq(s.vs_size), dropping.eq(bad), prim_id.eq(0),
                                 chunk.eq(0)]
                    start_wave()
                    with m.If(bad):
                        m.d.sync += self.error.eq(1)
                with m.Case(Kind.END):
                    with m.If(dropping | (n_prims == 0)):
                        m.d.comb += inp.r_en.eq(1)
                        m.d.sync += dropping.eq(0)
                    with m.Elif(emit_ok):
                        m.d.comb += [inp.r_en.eq(1), emit.eq(1), emit_last.eq(1)]
                        start_wave()
                with m.Case(Kind.PRIM):
                    with m.If(dropping):
                        m.d.comb += inp.r_en.eq(1)
                    with m.Elif(~nonrep):
                        replicated()
                    with m.Else():
                        non_replicated()
        return m

class Scheduler(wiring.Component):
    """The wave scheduler: :class:`Assembler` into :class:`Builder`.

    Parameters
    ----------
    wave_size : int
        L, fibers per wave: a power of two from 4 to 64.
    max_k : int
        Largest patch taken (3 to 32).

    Attributes
    ----------
    draw, index : streams in (see :class:`Assembler`)
    o : stream of :func:`record_layout`, out: one wave record per transfer
    error : out
        Sticky: a bad draw was dropped (either unit's flag).
    """

    def __init__(self, *, wave_size=32, max_k=32):
        _check_params(wave_size, max_k)
        self.wave_size = wave_size
        self.max_k = max_k
        super().__init__({
            "draw": In(stream.Signature(draw_layout())),
            "index": In(stream.Signature(index_layout())),
            "o": Out(stream.Signature(record_layout(wave_size, max_k))),
            "error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.assembler = assembler = Assembler(max_k=self.max_k)
        m.submodules.builder = builder = Builder(wave_size=self.wave_size, max_k=self.max_k)
        wiring.connect(m, wiring.flipped(self.draw), assembler.draw)
        wiring.connect(m, wiring.flipped(self.index), assembler.index)
        wiring.connect(m, assembler.o, builder.i)
        wiring.connect(m, builder.o, wiring.flipped(self.o))
        m.d.comb += self.error.eq(assembler.error | builder.error)
        return m


DESIGNS = {
    "assembler": Assembler,
    "builder": Builder,
    "scheduler": Scheduler,
}
