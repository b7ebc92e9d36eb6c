"""The global spreader (spec ``spreader.md``; issues 5 and 12): RTL of the contract in the
docstring of the ``golden.spreader`` package, which it follows clock by clock.

Ports (defaults: ``N = n_eus`` 4, widths of the golden model's :meth:`layout`)
------------------------------------------------------------------------------
``i_vtx``, ``i_tri``, ``i_pix``, ``i_pat`` (stream in), ``cfg`` and ``done`` (stream in,
``ready`` = 1), ``status[e]`` (plain in, ``status__<e>``), ``alloc[e]`` (stream out,
``alloc__<e>__valid`` ...) with the answer ``accept[e]``/``entity[e]`` (plain in, sampled
on the ``alloc[e]`` transfer), ``move``, ``release``, ``log``, ``err`` (stream out, each
behind a ``fifo_depth`` FIFO), ``error`` and ``lost`` (sticky flags). Field order and widths
are those of ``golden.spreader.Spreader.layout``.

Structure
---------
:class:`Spreader` (arbitration, packet checks, candidate list, status scan and request,
commit, configuration, errors) and two table components with their own signatures:
:class:`VertexTable` (the VDT) and :class:`PrimitiveTable` (the PT), each with its
release scan; the spreader merges their release streams (VDT first). Codes and outcomes
are ``amaranth.lib.enum`` enumerations (:class:`EType`, :class:`Err`, :class:`Src`,
:class:`Kind`, :class:`Ref`, :class:`CfgOp`, :class:`Outcome`); a unit test
(``tb/unit/test_spreader.py``) checks them and every port layout against the golden
model. Figures are in README.md (section "Block 3").

Decisions
---------
1. Pipelined allocation (issue 12, item 3; the golden model's timing contract, changed
   first): stage P (arbiter, packet checks, VDT/PT lookups, candidate list, minimum)
   reads the input heads or the parked packets (``held``, one register per stream) and
   the tables, and loads the pass registers (``r_*``) of stage R; stage R (status scan,
   request, answer, commit) reads only those registers, the status and the answer. An
   input's ``ready`` is high when P's pass enters R, one clock before its first
   request; a packet whose pass ends unplaced is parked in its stream's register. The
   EU's answer still decides, in its clock, whether the packet is consumed and so
   whether P's next pass may enter R (an enable: ``load``), and the input ``ready`` signals
   depend on it combinationally; an EU's ``ready`` and answer must not depend on the
   spreader's input ``ready`` signals. P cannot see R's commit of the same clock, so P makes
   a packet *wait* where that commit could change its outcome (hazards with R's packet:
   same record, a group or primitive R closes, a vertex group or ``prid`` a packet
   inside the spreader provides). A triangle or pixel packet that would wait for a
   provider inside the spreader is not offered to the arbiter (``offer``: compares of
   its indices / ``prid`` with the held packets, no table lookup), so another stream's
   packet fills the clock: a mixed stream keeps one packet per clock.
2. Tables (issue 12): the fields written once per allocation (tag, EU, entity, vertex
   count; for the PT also the triangle's VDT records) are ``Memory`` with asynchronous
   read ports (LUT-RAM; the VDT in an even and an odd bank, so that a patch writes its
   two records in one clock through one write port per bank). Only the bits the release
   scan reads every clock stay flip-flops: vectors of valid, done, closed, patch, half
   bits and the reference / pixel counters, each written through one decoded one-hot
   per write site (no ``Array``-indexed writes). The release scan finds the lowest
   releasable record with a carry chain (``x & -x``) and an OR-tree encoder. The
   Verilog at the defaults (256/256 records) is 0.73 MB (87 MB before).
3. The in-flight table ``(eu, entity) -> (type, record)`` is a memory of ``N*256`` words
   with one write port (written on accept) and two asynchronous read ports (the answer
   check and the completion), plus ``N*256`` valid flip-flops (set on accept, cleared on
   completion, both possible in one clock at different addresses).
4. Two points where the golden model disagreed with its own contract were changed in
   the golden model (its unit tests still pass): the error FIFO's room is now
   taken from ``S_t`` like every other push (rule 8; the model had looked after that
   clock's pop, which a plain synchronous FIFO cannot do), and the :class:`Scoreboard`
   starts a new pass also when a request does not start in the clock after the previous
   answer (a pass that ended with no candidate meeting the minimum was otherwise merged
   with the next one, wrongly mixing their refusals). Later the :class:`Scoreboard`
   was made to keep a pass's candidate list and minimum for the whole pass, as the model
   and the RTL do: a configuration word taken mid-pass had made it start a new pass and
   fail a correct run (``dedicated_eus``, seed 870733251).
5. Known difference, not tested: a patch in the very last group of the index space
   (``base >> 3 == 2**(index_bits-3) - 1``) stores its second half with a tag that the
   model keeps one bit wider; the RTL truncates it. The producer contract never sends
   such a patch (its second group would wrap to index 0).
6. Candidate lists are a stable sort of the type's priority list, in walk order
   (decision 9), by how many of the packet's referenced data each EU holds (triangle:
   vertices, pixel: its triangle), which is the model's "local EUs by count, ties in
   walk order, then the rest of the list".
7. :class:`SpreaderQCC` is the co-simulation design with real QCCs (``hw/qcc.py``): its
   docstring says how requests, answers, releases, completions and status map onto the
   QCC's commands, responses, issues and status. Each allocation request there costs
   two clocks per tried EU (the QCC answers one clock after its command), and no ALLOC
   goes to an EU while one of its entity completions waits to reach the spreader, because
   the QCC reuses the number of an entity without ``hold`` in the clock after its last
   stage completes (the spreader would see an answer naming an entity still in flight).
8. Fmax: figures in README.md. Before item 3 the contract (one allocation per clock,
   answer in the request's clock, everything combinational from the input payload)
   made arbitration, lookups, candidate list, scan and commit one clock (20 MHz).
9. Load balance (``rotate``, default on; decision 9 of the golden model): each type's
   priority list is walked from the entry after the EU of that type's last allocation
   (``last_eu``/``last_ok`` per type, set at the accept's edge); locality still heads
   the candidate list.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib import enum as hdl_enum
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["Spreader", "VertexTable", "PrimitiveTable", "SpreaderQCC", "EType", "Err", "Src",
           "Kind", "Ref", "CfgOp", "Outcome", "DESIGNS"]

MAX_EUS, GROUP = 16, 8
EU_W, ENTITY_W, SEQ_W, SIZE_W, ELEM_W, CODE_W = 4, 8, 16, 4, 4, 4


class EType(hdl_enum.Enum, shape=2):
    """Entity / stream types (the QCC's numbering; ``golden.spreader.EType``)."""
    VERTEX = 0
    TRIANGLE = 1
    PIXEL = 2
    PATCH = 3


class Err(hdl_enum.Enum, shape=CODE_W):
    """``err.code`` / ``log.code`` (``golden.spreader.Err``)."""
    NONE = 0
    MALFORMED = 1
    TOO_LARGE = 2
    NO_EU = 3
    UNKNOWN_VERTEX = 4
    UNKNOWN_PRID = 5
    UNKNOWN_DONE = 6
    BAD_CONFIG = 7
    BAD_ANSWER = 8


class Src(hdl_enum.Enum, shape=3):
    """``err.src`` beyond the four packet streams (``golden.spreader.Src``)."""
    CONFIG = 4
    DONE = 5
    ANSWER = 6


class Kind(hdl_enum.Enum, shape=2):
    """``log.kind`` (``golden.spreader.Kind``)."""
    ALLOC = 0
    CLOSE = 1
    ERROR = 2


class Ref(hdl_enum.Enum, shape=2):
    """``move.ref`` / ``log.ref`` (``golden.spreader.Ref``)."""
    NONE = 0
    LOCAL = 1
    GLOBAL = 2


class CfgOp(hdl_enum.Enum, shape=2):
    """``cfg.op``; 3 is malformed (``golden.spreader.CfgOp``)."""
    LIST = 0
    MIN = 1
    STARVE = 2


class Outcome(hdl_enum.Enum, shape=2):
    """What the start of a pass decides for its packet."""
    ALLOC = 0       #: scan the candidates and request
    ERR = 1         #: refuse it (consumed, logged, reported)
    CLOSE = 2       #: an end marker (consumed, logged)
    WAIT = 3        #: its table record is occupied: end the pass, try again later


# plain integers of the codes, for the expressions below
VTX, TRI, PIX, PAT = (t.value for t in EType)
PRIORITY = (PIX, TRI, VTX, PAT)
SAT = 255
(_, MALFORMED, TOO_LARGE, NO_EU, UNKNOWN_VERTEX, UNKNOWN_PRID, UNKNOWN_DONE, BAD_CONFIG,
 BAD_ANSWER) = (e.value for e in Err)
SRC_CONFIG, SRC_DONE, SRC_ANSWER = (s.value for s in Src)
K_ALLOC, K_CLOSE, K_ERROR = (k.value for k in Kind)
REF_NONE, REF_LOCAL, REF_GLOBAL = (r.value for r in Ref)
RELEASE = data.StructLayout({"eu": EU_W, "entity": ENTITY_W, "etype": 2, "rec": 8})


def _check_int(name, value, lo, hi):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer from {lo} to {hi}, not {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be an integer from {lo} to {hi}, not {value!r}")
    return value


def _check_pow2(name, value, lo, hi):
    _check_int(name, value, lo, hi)
    if value & (value - 1):
        raise ValueError(f"{name} must be a power of two from {lo} to {hi}, not {value!r}")
    return value


def _onehot(index, n):
    """``n``-bit one-hot decode of ``index`` (the one decoder per table write site)."""
    return (Const(1, n) << index)[:n]


def _decode(enables, indices, n):
    """The OR of the one-hot decodes of ``indices[i]`` whose ``enables[i]`` is set."""
    mask = Const(0, n)
    for i in range(len(enables)):
        mask = mask | Mux(enables[i], _onehot(indices[i], n), 0)
    return mask


def _lowest(m, bits, n, width, name):
    """``(one-hot of the lowest set bit of bits, its index)``: a priority encoder as a
    tree of 2:1 choices (depth ``log2 n``), not a chain over ``n`` entries."""
    def encode(lo, hi):
        """``(any, index - lo)`` of the lowest set bit of ``bits[lo:hi]``."""
        if hi - lo == 1:
            return bits[lo], Const(0, 0)
        mid = (lo + hi) // 2
        (a_lo, i_lo), (a_hi, i_hi) = encode(lo, mid), encode(mid, hi)
        k = (mid - lo).bit_length() - 1
        any_ = Signal(name=f"{name}_any_{lo}_{hi}")
        index = Signal(k + 1, name=f"{name}_at_{lo}_{hi}")
        m.d.comb += [any_.eq(a_lo | a_hi),
                     index.eq(Mux(a_lo, i_lo, Cat(i_hi, Const(1, 1))))]
        return any_, index
    index = Signal(max(1, width), name=f"{name}_index")
    if width:
        m.d.comb += index.eq(encode(0, n)[1])
    low = Signal(n, name=f"{name}_low")
    m.d.comb += low.eq(Mux(bits.any(), _onehot(index[:width], n) if width else 1, 0))
    return low, index


class VertexTable(wiring.Component):
    """The vertex descriptor table (VDT): one record per group of 8 vertices in flight.

    The write-once fields of a record (tag, EU, entity, vertex count) live in two
    LUT-RAM banks (even and odd records, so that a patch writes both of its records in
    one clock through one write port per bank). The bits the release scan reads every
    clock (valid, done, closed, patch, half) are flip-flop vectors and the reference
    counts are counters, all updated through one decoded one-hot per write site.

    Ports: ``busy_addr[i]``/``busy[i]`` (valid bit of a record: waits of vertex and
    patch packets), ``look_addr[i]``/``look[i]`` (the three vertex lookups of a
    triangle), ``alloc`` (write a vertex group, or both groups of a patch), ``close``
    (a triangle's ``last`` bits), ``refs`` (reference count increments and decrements),
    ``done`` (a vertex or patch entity completed) and ``release`` (the lowest releasable
    record; taking it frees the record).
    """

    def __init__(self, *, records, index_bits):
        self.records = records
        self.rbits = records.bit_length() - 1
        self.tag_bits = max(1, index_bits - 3 - self.rbits)
        R, T = self.rbits, self.tag_bits
        self.word = data.StructLayout({"tag": T, "eu": EU_W, "entity": ENTITY_W, "count": 4})
        self.entry = data.StructLayout({"valid": 1, "closed": 1, "half": 1} | self.word.members)
        recs = data.ArrayLayout(R, 3)
        super().__init__({
            "busy_addr": In(R).array(3), "busy": Out(1).array(3),
            "look_addr": In(R).array(3), "look": Out(self.entry).array(3),
            "alloc": In(data.StructLayout({"en": 1, "patch": 1, "rec": R, "tag": T,
                                           "tag1": T, "eu": EU_W, "entity": ENTITY_W,
                                           "count": 4, "noref": 1})),
            "close": In(data.StructLayout({"mask": 3, "rec": recs})),
            "refs": In(data.StructLayout({"inc": 3, "inc_rec": recs, "dec": 3,
                                          "dec_rec": recs})),
            "done": In(data.StructLayout({"en": 1, "patch": 1, "rec": R})),
            "release": Out(stream.Signature(RELEASE)),
        })

    def elaborate(self, platform):
        m = Module()
        V, R = self.records, self.rbits
        valid, done, closed, patch, half = (Signal(V, name=n) for n in
                                            ("valid", "done", "closed", "patch", "half"))
        refs = [Signal(9, name=f"refs{r}") for r in range(V)]
        banks = [Memory(shape=self.word, depth=V // 2, init=[]) for _ in range(2)]
        m.submodules.even, m.submodules.odd = banks
        writes = [b.write_port() for b in banks]

        def read(addr, n):
            """The word of record ``addr`` (one read port per bank, muxed by the low bit)."""
            ports = [b.read_port(domain="comb") for b in banks]
            word = Signal(self.word, name=f"word{n}")
            for p in ports:
                m.d.comb += p.addr.eq(addr[1:])
            m.d.comb += word.eq(Mux(addr[0], ports[1].data, ports[0].data))
            return word

        for i in range(3):
            m.d.comb += self.busy[i].eq(valid.bit_select(self.busy_addr[i], 1))
        for i in range(3):
            a, lk = self.look_addr[i], self.look[i]
            w = read(a, i)
            m.d.comb += [lk.valid.eq(valid.bit_select(a, 1)),
                         lk.closed.eq(closed.bit_select(a, 1)),
                         lk.half.eq(half.bit_select(a, 1)),
                         lk.tag.eq(w.tag), lk.eu.eq(w.eu), lk.entity.eq(w.entity),
                         lk.count.eq(w.count)]

        # allocation: record rec (half 0) and, for a patch, rec + 1 (half 1)
        al = self.alloc
        rec1 = Signal(R)
        m.d.comb += rec1.eq(al.rec + 1)
        first, second, written = Signal(V), Signal(V), Signal(V)
        m.d.comb += [first.eq(Mux(al.en, _onehot(al.rec, V), 0)),
                     second.eq(Mux(al.en & al.patch, _onehot(rec1, V), 0)),
                     written.eq(first | second)]
        for b, wp in enumerate(writes):
            mine = al.rec[0] == b          # the first record is in this bank
            m.d.comb += [wp.en.eq(al.en & (mine | al.patch)),
                         wp.addr.eq(Mux(mine, al.rec, rec1)[1:]),
                         wp.data.tag.eq(Mux(mine, al.tag, al.tag1)),
                         wp.data.eu.eq(al.eu), wp.data.entity.eq(al.entity),
                         wp.data.count.eq(Mux(al.patch, GROUP, al.count))]

        # completion, triangle closes, the release scan
        d = self.done
        d_rec1 = Signal(R)
        m.d.comb += d_rec1.eq(d.rec + 1)
        done_set, close_set, ok, cand = (Signal(V, name=n) for n in
                                         ("done_set", "close_set", "ok", "cand"))
        m.d.comb += [
            done_set.eq(Mux(d.en, _onehot(d.rec, V) | Mux(d.patch, _onehot(d_rec1, V), 0), 0)),
            close_set.eq(_decode(self.close.mask, self.close.rec, V)),
            ok.eq(valid & done & closed & Cat(*[r == 0 for r in refs])),
            # a patch is released at its first record when both of its records are ready
            cand.eq(ok & (~patch | (~half & Cat(ok[1:], ok[0])))),
        ]
        low, sel = _lowest(m, cand, V, R, "release")
        w = read(sel, 3)
        rl = self.release
        m.d.comb += [rl.valid.eq(cand.any()), rl.payload.eu.eq(w.eu),
                     rl.payload.entity.eq(w.entity),
                     rl.payload.etype.eq(Mux(patch.bit_select(sel, 1), PAT, VTX)),
                     rl.payload.rec.eq(sel)]
        freed = Signal(V)
        m.d.comb += freed.eq(Mux(rl.valid & rl.ready,
                                 low | Mux(patch.bit_select(sel, 1), Cat(low[-1], low[:-1]), 0),
                                 0))

        m.d.sync += [
            valid.eq((valid | written) & ~freed),
            done.eq(((done & ~written) | done_set) & ~freed),
            closed.eq(((closed & ~written) | Mux(al.noref, written, 0) | close_set) & ~freed),
            patch.eq(((patch & ~written) | Mux(al.patch, written, 0)) & ~freed),
            half.eq((half & ~written) | second),
        ]
        inc, dec = Signal(V), Signal(V)
        m.d.comb += [inc.eq(_decode(self.refs.inc, self.refs.inc_rec, V)),
                     dec.eq(_decode(self.refs.dec, self.refs.dec_rec, V))]
        for r in range(V):
            with m.If(freed[r]):
                m.d.sync += refs[r].eq(0)
            with m.Elif(inc[r] & ~dec[r]):
                m.d.sync += refs[r].eq(refs[r] + 1)
            with m.Elif(dec[r] & ~inc[r]):
                m.d.sync += refs[r].eq(refs[r] - 1)
        return m


class PrimitiveTable(wiring.Component):
    """The primitive table (PT): one record per triangle in flight.

    Write-once fields (tag, EU, entity, the triangle's distinct VDT records) are one
    LUT-RAM; valid, done and closed are flip-flop vectors and the pixel packets in flight
    are counters, updated through decoded one-hots.

    Ports: ``busy_addr``/``busy`` (valid bit: a triangle's wait), ``look_addr``/``look``
    (a pixel packet's triangle), ``refs_addr``/``refs`` (the VDT records of a completed
    triangle), ``alloc`` (a triangle accepted), ``close`` (an end marker or a last pixel
    packet), ``pixels`` (a pixel packet accepted / completed), ``done`` (a triangle
    completed) and ``release`` (the lowest releasable record).
    """

    def __init__(self, *, records, prid_bits, vdt_records):
        self.records = records
        self.rbits = records.bit_length() - 1
        R, VR = max(1, self.rbits), vdt_records.bit_length() - 1
        self.tag_bits = max(1, prid_bits - self.rbits)
        self.word = data.StructLayout({"tag": self.tag_bits, "eu": EU_W, "entity": ENTITY_W,
                                       "vrn": 3, "vr": data.ArrayLayout(VR, 3)})
        self.entry = data.StructLayout({"valid": 1, "closed": 1} | self.word.members)
        rec = data.StructLayout({"en": 1, "rec": R})
        super().__init__({
            "busy_addr": In(R), "busy": Out(1),
            "look_addr": In(R), "look": Out(self.entry),
            "refs_addr": In(R), "refs": Out(self.word),
            "alloc": In(data.StructLayout({"en": 1, "rec": R, "word": self.word})),
            "close": In(rec).array(2), "pix_inc": In(rec), "pix_dec": In(rec),
            "done": In(rec),
            "release": Out(stream.Signature(RELEASE)),
        })

    def elaborate(self, platform):
        m = Module()
        P, R = self.records, max(1, self.rbits)
        valid, done, closed = (Signal(P, name=n) for n in ("valid", "done", "closed"))
        pix = [Signal(13, name=f"pix{q}") for q in range(P)]
        m.submodules.mem = mem = Memory(shape=self.word, depth=P, init=[])
        wp = mem.write_port()

        def read(addr):
            p = mem.read_port(domain="comb")
            m.d.comb += p.addr.eq(addr[:self.rbits])
            return p.data

        def bit(vec, addr):
            return vec.bit_select(addr[:self.rbits], 1) if self.rbits else vec[0]

        def onehot(addr):
            return _onehot(addr[:self.rbits], P) if self.rbits else Const(1, 1)

        m.d.comb += self.busy.eq(bit(valid, self.busy_addr))
        w = read(self.look_addr)
        m.d.comb += [self.look.valid.eq(bit(valid, self.look_addr)),
                     self.look.closed.eq(bit(closed, self.look_addr)),
                     self.look.tag.eq(w.tag), self.look.eu.eq(w.eu),
                     self.look.entity.eq(w.entity), self.look.vrn.eq(w.vrn),
                     self.look.vr.eq(w.vr)]
        m.d.comb += self.refs.eq(read(self.refs_addr))

        al = self.alloc
        m.d.comb += [wp.en.eq(al.en), wp.addr.eq(al.rec[:self.rbits]), wp.data.eq(al.word)]
        written, closing, done_set, inc, dec, ok = (
            Signal(P, name=n) for n in ("written", "closing", "done_set", "inc", "dec", "ok"))
        m.d.comb += [
            written.eq(Mux(al.en, onehot(al.rec), 0)),
            closing.eq(Mux(self.close[0].en, onehot(self.close[0].rec), 0)
                       | Mux(self.close[1].en, onehot(self.close[1].rec), 0)),
            done_set.eq(Mux(self.done.en, onehot(self.done.rec), 0)),
            inc.eq(Mux(self.pix_inc.en, onehot(self.pix_inc.rec), 0)),
            dec.eq(Mux(self.pix_dec.en, onehot(self.pix_dec.rec), 0)),
            ok.eq(valid & done & closed & Cat(*[n == 0 for n in pix])),
        ]
        low, sel = _lowest(m, ok, P, self.rbits, "release")
        w = read(sel)
        rl = self.release
        m.d.comb += [rl.valid.eq(ok.any()), rl.payload.eu.eq(w.eu),
                     rl.payload.entity.eq(w.entity), rl.payload.etype.eq(TRI),
                     rl.payload.rec.eq(sel if self.rbits else 0)]
        freed = Signal(P)
        m.d.comb += freed.eq(Mux(rl.valid & rl.ready, low, 0))
        m.d.sync += [
            valid.eq((valid | written) & ~freed),
            done.eq(((done & ~written) | done_set) & ~freed),
            closed.eq(((closed & ~written) | closing) & ~freed),
        ]
        for q in range(P):
            with m.If(freed[q]):
                m.d.sync += pix[q].eq(0)
            with m.Elif(inc[q] & ~dec[q]):
                m.d.sync += pix[q].eq(pix[q] + 1)
            with m.Elif(dec[q] & ~inc[q]):
                m.d.sync += pix[q].eq(pix[q] - 1)
        return m


class Spreader(wiring.Component):
    """The global spreader.

    Parameters
    ----------
    n_eus : int
        Execution units, 1..16. Default 4.
    vdt_records : int
        Vertex descriptor table records, a power of two 2..256. Default 256.
    pt_records : int
        Primitive table records, a power of two 1..256. Default 256.
    index_bits : int
        Vertex index width, ``3 + log2(vdt_records)`` .. 32. Default 16.
    prid_bits : int
        Primitive id width, ``max(1, log2(pt_records))`` .. 32. Default 16.
    coord_bits : int
        Pixel coordinate width, 4..16. Default 12.
    max_lines : int
        Largest buffer of one entity, 1 .. ``min(15, eu_lines)``. Default 8.
    eu_records : int
        Records of an EU (status width, MIN check), 1..256. Default 256.
    eu_lines : int
        Cache lines of an EU (status width, MIN check), 1..65536. Default 256.
    starve_limit : int
        Reset value of the anti-starvation limit, 0..255 (0 = off). Default 8.
    fifo_depth : int
        Depth of the ``move``, ``log``, ``release`` and ``err`` FIFOs, 1..64. Default 4.
    rotate : bool
        Load balance: walk each type's priority list from the EU after the one that
        took the type's last allocation (True, default), or from its first entry.

    Raises
    ------
    TypeError, ValueError
        On a parameter out of range, naming it.
    """

    def __init__(self, *, n_eus=4, vdt_records=256, pt_records=256, index_bits=16,
                 prid_bits=16, coord_bits=12, max_lines=8, eu_records=256, eu_lines=256,
                 starve_limit=8, fifo_depth=4, rotate=True):
        self.n_eus = _check_int("n_eus", n_eus, 1, MAX_EUS)
        self.vdt_records = _check_pow2("vdt_records", vdt_records, 2, 256)
        self.pt_records = _check_pow2("pt_records", pt_records, 1, 256)
        self.vbits = vdt_records.bit_length() - 1
        self.pbits = pt_records.bit_length() - 1
        self.index_bits = _check_int("index_bits", index_bits, 3 + self.vbits, 32)
        self.prid_bits = _check_int("prid_bits", prid_bits, max(1, self.pbits), 32)
        self.coord_bits = _check_int("coord_bits", coord_bits, 4, 16)
        self.eu_records = _check_int("eu_records", eu_records, 1, 256)
        self.eu_lines = _check_int("eu_lines", eu_lines, 1, 65536)
        self.max_lines = _check_int("max_lines", max_lines, 1, min(15, eu_lines))
        self.starve_limit = _check_int("starve_limit", starve_limit, 0, SAT)
        self.fifo_depth = _check_int("fifo_depth", fifo_depth, 1, 64)
        if not isinstance(rotate, bool):
            raise TypeError(f"rotate must be a bool, not {rotate!r}")
        self.rotate = rotate
        I, R, C = index_bits, prid_bits, coord_bits
        SR, SL = eu_records.bit_length(), eu_lines.bit_length()
        D = max(I, R, 12)
        self.sr, self.sl, self.d = SR, SL, D
        self.lay = {
            "i_vtx": data.StructLayout({"base": I, "count": 4, "size": SIZE_W, "noref": 1}),
            "i_tri": data.StructLayout({"prid": R, "i0": I, "i1": I, "i2": I,
                                        "size": SIZE_W, "last": 3}),
            "i_pix": data.StructLayout({"prid": R, "x": C, "y": C, "mask": 16, "last": 1,
                                        "size": SIZE_W}),
            "i_pat": data.StructLayout({"base": I, "size": SIZE_W, "noref": 1}),
            "cfg": data.StructLayout({"op": 2, "etype": 2, "count": 5, "eus": 4 * MAX_EUS,
                                      "records": SR, "lines": SL, "limit": 8}),
            "done": data.StructLayout({"eu": EU_W, "entity": ENTITY_W}),
            "status": data.StructLayout({"free_records": SR, "free_entities": 9,
                                         "free_lines": SL}),
            "alloc": data.StructLayout({"etype": 2, "lines": SIZE_W, "hold": 1,
                                        "seq": SEQ_W}),
            "move": data.StructLayout(
                {"eu": EU_W, "entity": ENTITY_W, "etype": 2, "seq": SEQ_W, "size": SIZE_W,
                 "ref": 2, "index": D, "count": 5}
                | {f"src{i}_{n}": w for i in range(3)
                   for n, w in (("eu", EU_W), ("entity", ENTITY_W), ("elem", ELEM_W))}
                | {"x": C, "y": C, "mask": 16}),
            "release": RELEASE,
            "log": data.StructLayout({"kind": 2, "etype": 2, "seq": SEQ_W, "eu": EU_W,
                                      "entity": ENTITY_W, "ref": 2, "passes": 8,
                                      "refused": MAX_EUS, "code": CODE_W}),
            "err": data.StructLayout({"code": CODE_W, "src": 3, "seq": SEQ_W, "eu": EU_W,
                                      "detail": D}),
        }
        L = self.lay
        super().__init__({
            "i_vtx": In(stream.Signature(L["i_vtx"])),
            "i_tri": In(stream.Signature(L["i_tri"])),
            "i_pix": In(stream.Signature(L["i_pix"])),
            "i_pat": In(stream.Signature(L["i_pat"])),
            "cfg": In(stream.Signature(L["cfg"])),
            "done": In(stream.Signature(L["done"])),
            "status": In(L["status"]).array(n_eus),
            "alloc": Out(stream.Signature(L["alloc"])).array(n_eus),
            "accept": In(1).array(n_eus),
            "entity": In(ENTITY_W).array(n_eus),
            "move": Out(stream.Signature(L["move"])),
            "release": Out(stream.Signature(L["release"])),
            "log": Out(stream.Signature(L["log"])),
            "err": Out(stream.Signature(L["err"])),
            "error": Out(1),
            "lost": Out(1),
        })

    # ------------------------------------------------------------------------------
    def _walk(self, m, win, lst, lcnt, start):
        """The winner type's priority list in walk order: from entry ``start[t]`` of its
        list (a register, see :meth:`_walk_start`). Every type's walk is built from
        registers in parallel with the arbiter, then the winner's is selected."""
        N = self.n_eus
        walks = []
        for t in range(4):
            walk = [Signal(EU_W, name=f"walk{t}_{j}") for j in range(N)]
            for j in range(N):
                at = Signal(6, name=f"walk{t}_at{j}")
                m.d.comb += at.eq(start[t] + j)
                m.d.comb += walk[j].eq(Array(lst[t])[Mux(at >= lcnt[t], at - lcnt[t], at)[:5]])
            walks.append(walk)
        w_lst = [Signal(EU_W, name=f"w_lst{j}") for j in range(N)]
        for t in range(4):
            with m.If(win == t):
                m.d.comb += [w_lst[j].eq(walks[t][j]) for j in range(N)]
        return w_lst

    def _walk_start(self, m, start, lst, lcnt, last_eu, last_ok, cfg_list, entries, count,
                    accept, eu):
        """Keep ``start[t]``, where type t's walk begins, equal to the entry after the EU
        of the type's last allocation (0 when there is none, it is not in the list or it
        is the list's last entry; always 0 without ``rotate``), computed from the next
        state: the list written by a LIST word (``cfg_list[t]``), the EU of an accept
        (``accept[t]``, ``eu``)."""
        if not self.rotate:
            return
        N = self.n_eus
        for t in range(4):
            lst_n = [Mux(cfg_list[t], entries[k], lst[t][k]) for k in range(N)]
            cnt_n = Mux(cfg_list[t], count, lcnt[t])
            last_n = Mux(accept[t], eu, last_eu[t])
            ok_n = accept[t] | last_ok[t]
            nxt = Signal(5, name=f"walk_start{t}_next")
            for k in range(N):      # the entries are distinct: at most one matches
                with m.If(ok_n & (k + 1 < cnt_n) & (lst_n[k] == last_n)):
                    m.d.comb += nxt.eq(k + 1)
            m.d.sync += start[t].eq(nxt)

    def elaborate(self, platform):
        m = Module()
        N, V, P = self.n_eus, self.vdt_records, self.pt_records
        vb, pb = self.vbits, self.pbits
        I, R, SR, SL, D = self.index_bits, self.prid_bits, self.sr, self.sl, self.d
        VT = max(1, I - 3 - vb)
        PTG = max(1, R - pb)
        VR = max(1, vb)
        PR = max(1, pb)
        L = self.lay

        # ---------------------------------------------------------------- output FIFOs
        fifos = {}
        for name in ("move", "log", "release", "err"):
            f = SyncFIFO(width=L[name].size, depth=self.fifo_depth)
            m.submodules[f"{name}_fifo"] = fifos[name] = f
            port = getattr(self, name)
            m.d.comb += [port.valid.eq(f.r_rdy), port.payload.eq(f.r_data),
                         f.r_en.eq(port.ready)]
        push = {n: Signal(L[n], name=f"push_{n}") for n in fifos}
        push_en = {n: Signal(name=f"push_{n}_en") for n in fifos}
        for n, f in fifos.items():
            m.d.comb += [f.w_data.eq(push[n].as_value()), f.w_en.eq(push_en[n])]

        # ---------------------------------------------------------------- configuration
        lst = [[Signal(EU_W, name=f"lst{t}_{k}", init=k if k < N else 0)
                for k in range(N)] for t in range(4)]
        lcnt = [Signal(5, name=f"lcnt{t}", init=N) for t in range(4)]
        minr = [Signal(SR, name=f"minr{t}", init=1) for t in range(4)]
        minl = [Signal(SL, name=f"minl{t}", init=1) for t in range(4)]
        limit = Signal(8, init=self.starve_limit)
        # load balance: per type, the EU of its last allocation (valid once there is one)
        last_eu = [Signal(EU_W, name=f"last_eu{t}") for t in range(4)]
        last_ok = [Signal(name=f"last_ok{t}") for t in range(4)]
        walk_start = [Signal(5, name=f"walk_start{t}") for t in range(4)]

        # ---------------------------------------------------------------- tables
        m.submodules.vdt = vdt = VertexTable(records=V, index_bits=I)
        m.submodules.pt = ptab = PrimitiveTable(records=P, prid_bits=R, vdt_records=V)

        m.submodules.ift = ift = Memory(shape=2 + 8, depth=N * 256, init=[])
        ift_w = ift.write_port()
        ift_ra = ift.read_port(domain="comb")
        ift_rd = ift.read_port(domain="comb")
        ift_v = Signal(N * 256)

        seq = [Signal(SEQ_W, name=f"seq{s}") for s in range(4)]
        passes = [Signal(8, name=f"passes{s}") for s in range(4)]
        starve = [Signal(8, name=f"starve{s}") for s in range(4)]
        error, lost = Signal(), Signal()
        m.d.comb += [self.error.eq(error), self.lost.eq(lost)]

        ins = [self.i_vtx, self.i_tri, self.i_pix, self.i_pat]
        valid = Cat(i.valid for i in ins)

        def vrec(index):
            return index[3:3 + vb] if vb else Const(0, 1)

        def vtag(index):
            return index[3 + vb:] if I > 3 + vb else Const(0, 1)

        def prec(prid):
            return prid[:pb] if pb else Const(0, 1)

        def ptag(prid):
            return prid[pb:] if R > pb else Const(0, 1)

        def sat_inc(x):
            return Mux(x == SAT, SAT, x + 1)

        # ---------------------------------------------------------------- held packets
        # Per stream, the packet taken from its input and not yet consumed (in the
        # request stage R, or parked after a pass that placed it nowhere).
        held_v = Signal(4)
        held = [Signal(L[n], name=f"held_{n}") for n in ("i_vtx", "i_tri", "i_pix", "i_pat")]

        # ---------------------------------------------------------------- stage R registers
        active = Signal()                       # R holds a pass
        r_stream = Signal(2)
        r_out, r_code, r_detail = Signal(2), Signal(4), Signal(D)
        r_cands = [Signal(EU_W, name=f"r_cand{i}") for i in range(N)]
        r_ncand = Signal(5)
        r_need_r, r_need_l = Signal(SR), Signal(SL)
        r_pos = Signal(5)
        r_refused = Signal(MAX_EUS)
        r_held, r_idx, r_eu = Signal(), Signal(5), Signal(EU_W)
        r_loc = [[Signal(EU_W, name=f"r_loc{i}_eu"), Signal(ENTITY_W, name=f"r_loc{i}_ent"),
                  Signal(ELEM_W, name=f"r_loc{i}_elem")] for i in range(3)]
        r_vr = [Signal(VR, name=f"r_vr{i}") for i in range(3)]
        r_vrn = Signal(3)
        r_rec = Signal(8)
        r_is = [active & (r_stream == s) for s in range(4)]

        # ---------------------------------------------------------------- stage P sources
        # a parked packet goes before its input's head; the stream of R's packet offers
        # its input's head (the next packet: loaded only if R's packet is consumed now)
        src_v = Signal(4)
        parked = [held_v[s] & ~r_is[s] for s in range(4)]
        src = [Signal(L[n], name=f"src_{n}") for n in ("i_vtx", "i_tri", "i_pix", "i_pat")]
        for s in range(4):
            m.d.comb += [src_v[s].eq(parked[s] | valid[s]),
                         src[s].eq(Mux(parked[s], held[s], ins[s].payload))]

        # ---------------------------------------------------------------- arbitration
        # a triangle whose vertex group, or a pixel packet whose triangle, is still inside
        # the spreader would only wait: it does not offer itself (t_prov, p_prov below)
        offer = Signal(4)
        starving = Signal(4)
        for s in range(4):
            m.d.comb += starving[s].eq(offer[s] & (limit != 0) & (starve[s] >= limit))
        win = Signal(2)
        with m.If(starving.any()):
            for s in reversed(PRIORITY):
                with m.If(starving[s]):
                    m.d.comb += win.eq(s)
        with m.Else():
            for s in reversed(PRIORITY):
                with m.If(offer[s]):
                    m.d.comb += win.eq(s)

        # ---------------------------------------------------------------- stage P: checks
        O_ALLOC, O_ERR, O_CLOSE, O_WAIT = (o.value for o in Outcome)
        ev = []   # per stream: dict of comb signals
        for s in range(4):
            e = dict(out=Signal(2, name=f"ev{s}_out"), code=Signal(4, name=f"ev{s}_code"),
                     detail=Signal(D, name=f"ev{s}_detail"), rec=Signal(8, name=f"ev{s}_rec"),
                     size=Signal(SIZE_W, name=f"ev{s}_size"))
            ev.append(e)
        pv, pt, pp, pa = src
        m.d.comb += [ev[VTX]["size"].eq(pv.size), ev[TRI]["size"].eq(pt.size),
                     ev[PIX]["size"].eq(pp.size), ev[PAT]["size"].eq(pa.size)]

        def common(s, size, m_):
            """size checks and the empty list, after a MALFORMED check in ``m_``."""
            with m_.Elif(size == 0):
                m.d.comb += [ev[s]["out"].eq(O_ERR), ev[s]["code"].eq(MALFORMED)]
            with m_.Elif(size > self.max_lines):
                m.d.comb += [ev[s]["out"].eq(O_ERR), ev[s]["code"].eq(TOO_LARGE),
                             ev[s]["detail"].eq(size)]
            with m_.Elif(lcnt[s] == 0):
                m.d.comb += [ev[s]["out"].eq(O_ERR), ev[s]["code"].eq(NO_EU),
                             ev[s]["detail"].eq(s)]

        # what R's packet writes or closes at this clock's edge (hazards of stage P)
        r_vrec0, r_vrec1 = Signal(VR), Signal(VR)
        m.d.comb += [r_vrec0.eq(vrec(Mux(r_is[PAT], held[PAT].base, held[VTX].base))),
                     r_vrec1.eq(r_vrec0 + 1)]
        r_vp = r_is[VTX] | r_is[PAT]
        r_tri, r_pix = held[TRI], held[PIX]
        r_tri_idx = [r_tri.i0, r_tri.i1, r_tri.i2]

        # vertex
        vrec_v = vrec(pv.base)
        m.d.comb += ev[VTX]["rec"].eq(vrec_v)
        m.d.comb += vdt.busy_addr[0].eq(vrec_v)
        v_hazard = r_vp & ((vrec_v == r_vrec0) | (r_is[PAT] & (vrec_v == r_vrec1)))
        with m.If((pv.count == 0) | (pv.count > GROUP) | (pv.base[:3] != 0)):
            m.d.comb += [ev[VTX]["out"].eq(O_ERR), ev[VTX]["code"].eq(MALFORMED)]
        common(VTX, pv.size, m)
        with m.Elif(vdt.busy[0] | v_hazard):
            m.d.comb += ev[VTX]["out"].eq(O_WAIT)
        # patch
        vrec_a = vrec(pa.base)
        vrec_a1 = Signal(VR)
        m.d.comb += [vrec_a1.eq(vrec_a + 1), ev[PAT]["rec"].eq(vrec_a)]
        m.d.comb += [vdt.busy_addr[1].eq(vrec_a), vdt.busy_addr[2].eq(vrec_a1)]
        a_hazard = r_vp & ((vrec_a == r_vrec0) | (vrec_a1 == r_vrec0)
                           | (r_is[PAT] & (vrec_a == r_vrec1)))
        with m.If(pa.base[:3] != 0):
            m.d.comb += [ev[PAT]["out"].eq(O_ERR), ev[PAT]["code"].eq(MALFORMED)]
        common(PAT, pa.size, m)
        with m.Elif(vdt.busy[1] | vdt.busy[2] | a_hazard):
            m.d.comb += ev[PAT]["out"].eq(O_WAIT)
        # triangle: lookups; a missing vertex whose group a vertex or patch packet inside
        # the spreader provides makes it wait, as does a group R's triangle closes now
        t_idx = [pt.i0, pt.i1, pt.i2]
        t_r = [vrec(x) for x in t_idx]
        t_hit = [Signal(name=f"t_hit{i}") for i in range(3)]
        t_prov = [Signal(name=f"t_prov{i}") for i in range(3)]
        t_closing = [Signal(name=f"t_closing{i}") for i in range(3)]
        t_loc = [[Signal(EU_W, name=f"t_loc{i}_eu"), Signal(ENTITY_W, name=f"t_loc{i}_ent"),
                  Signal(ELEM_W, name=f"t_loc{i}_elem")] for i in range(3)]
        hv_g, ha_g = held[VTX].base[3:], held[PAT].base[3:]
        ha_g1 = Signal(I - 3 + 1)
        m.d.comb += ha_g1.eq(ha_g + 1)
        for i in range(3):
            lk, x = vdt.look[i], t_idx[i]
            g = x[3:]
            m.d.comb += [
                vdt.look_addr[i].eq(t_r[i]),
                t_hit[i].eq(lk.valid & (lk.tag == vtag(x)) & ~lk.closed & (x[:3] < lk.count)),
                t_prov[i].eq((held_v[VTX] & (g == hv_g))
                             | (held_v[PAT] & ((g == ha_g) | (g == ha_g1)))),
                t_closing[i].eq(r_is[TRI] & Cat(
                    r_tri.last[j] & (vrec(r_tri_idx[j]) == t_r[i]) for j in range(3)).any()),
                t_loc[i][0].eq(lk.eu), t_loc[i][1].eq(lk.entity),
                t_loc[i][2].eq(Cat(x[:3], lk.half)),
            ]
        t_vrn = Cat(Const(1, 1), t_r[1] != t_r[0], (t_r[2] != t_r[0]) & (t_r[2] != t_r[1]))
        prec_t = prec(pt.prid)
        m.d.comb += ev[TRI]["rec"].eq(prec_t)
        m.d.comb += ptab.busy_addr.eq(prec_t)
        t_wait = Signal()
        m.d.comb += t_wait.eq(Cat(~t_hit[i] | t_closing[i] for i in range(3)).any()
                              | ptab.busy | (r_is[TRI] & (prec(r_tri.prid) == prec_t)))
        with m.If(pt.size == 0):
            m.d.comb += [ev[TRI]["out"].eq(O_ERR), ev[TRI]["code"].eq(MALFORMED)]
        with m.Elif(pt.size > self.max_lines):
            m.d.comb += [ev[TRI]["out"].eq(O_ERR), ev[TRI]["code"].eq(TOO_LARGE),
                         ev[TRI]["detail"].eq(pt.size)]
        with m.Elif(lcnt[TRI] == 0):
            m.d.comb += [ev[TRI]["out"].eq(O_ERR), ev[TRI]["code"].eq(NO_EU),
                         ev[TRI]["detail"].eq(TRI)]
        for i in range(3):
            with m.Elif(~t_hit[i] & ~t_prov[i]):
                m.d.comb += [ev[TRI]["out"].eq(O_ERR), ev[TRI]["code"].eq(UNKNOWN_VERTEX),
                             ev[TRI]["detail"].eq(t_idx[i])]
        with m.Elif(t_wait):
            m.d.comb += ev[TRI]["out"].eq(O_WAIT)
        # pixel: a missing prid whose triangle is inside the spreader waits, as does a
        # primitive R's pixel packet closes now
        prec_p = prec(pp.prid)
        p_hit, p_prov, p_hazard = Signal(), Signal(), Signal()
        p_look = ptab.look
        m.d.comb += [ptab.look_addr.eq(prec_p),
                     p_hit.eq(p_look.valid & (p_look.tag == ptag(pp.prid)) & ~p_look.closed),
                     p_prov.eq(held_v[TRI] & (held[TRI].prid == pp.prid)),
                     p_hazard.eq(r_is[PIX] & r_pix.last & (prec(r_pix.prid) == prec_p)),
                     ev[PIX]["rec"].eq(prec_p)]
        with m.If(pp.mask == 0):
            with m.If(~pp.last):
                m.d.comb += [ev[PIX]["out"].eq(O_ERR), ev[PIX]["code"].eq(MALFORMED)]
            with m.Elif(~p_hit & ~p_prov):
                m.d.comb += [ev[PIX]["out"].eq(O_ERR), ev[PIX]["code"].eq(UNKNOWN_PRID),
                             ev[PIX]["detail"].eq(pp.prid)]
            with m.Elif(~p_hit | p_hazard):
                m.d.comb += ev[PIX]["out"].eq(O_WAIT)
            with m.Else():
                m.d.comb += ev[PIX]["out"].eq(O_CLOSE)
        with m.Elif(pp.size == 0):
            m.d.comb += [ev[PIX]["out"].eq(O_ERR), ev[PIX]["code"].eq(MALFORMED)]
        with m.Elif(pp.size > self.max_lines):
            m.d.comb += [ev[PIX]["out"].eq(O_ERR), ev[PIX]["code"].eq(TOO_LARGE),
                         ev[PIX]["detail"].eq(pp.size)]
        with m.Elif(lcnt[PIX] == 0):
            m.d.comb += [ev[PIX]["out"].eq(O_ERR), ev[PIX]["code"].eq(NO_EU),
                         ev[PIX]["detail"].eq(PIX)]
        with m.Elif(~p_hit & ~p_prov):
            m.d.comb += [ev[PIX]["out"].eq(O_ERR), ev[PIX]["code"].eq(UNKNOWN_PRID),
                         ev[PIX]["detail"].eq(pp.prid)]
        with m.Elif(~p_hit | p_hazard):
            m.d.comb += ev[PIX]["out"].eq(O_WAIT)

        m.d.comb += offer.eq(src_v & ~Cat(0, Cat(t_prov).any(), p_prov, 0))

        # the winner's evaluation
        w_out, w_code, w_detail = Signal(2), Signal(4), Signal(D)
        w_rec = Signal(8)
        for s in range(4):
            with m.If(win == s):
                m.d.comb += [w_out.eq(ev[s]["out"]), w_code.eq(ev[s]["code"]),
                             w_detail.eq(ev[s]["detail"]), w_rec.eq(ev[s]["rec"])]
        # candidates of the winner: stable sort of its list (in walk order) by held-data
        # count
        w_lcnt = Signal(5)
        for s in range(4):
            with m.If(win == s):
                m.d.comb += w_lcnt.eq(lcnt[s])
        w_lst = self._walk(m, win, lst, lcnt, walk_start)
        cnt = [Signal(2, name=f"cnt{k}") for k in range(N)]
        for k in range(N):
            with m.If(win == TRI):
                m.d.comb += cnt[k].eq(sum((t_loc[i][0] == w_lst[k]).as_unsigned()
                                          for i in range(3)))
            with m.Elif(win == PIX):
                m.d.comb += cnt[k].eq(p_look.eu == w_lst[k])
        in_l = [Signal(name=f"in_l{k}") for k in range(N)]
        rank = [Signal(5, name=f"rank{k}") for k in range(N)]
        for k in range(N):
            m.d.comb += in_l[k].eq(k < w_lcnt)
        for j in range(N):
            terms = [(in_l[k] & ((cnt[k] > cnt[j]) | ((cnt[k] == cnt[j]) & (k < j))))
                     .as_unsigned() for k in range(N) if k != j]
            m.d.comb += rank[j].eq(sum(terms) if terms else 0)
        w_cands = [Signal(EU_W, name=f"w_cand{i}") for i in range(N)]
        for i in range(N):
            m.d.comb += w_cands[i].eq(0)
            for j in range(N):
                with m.If(in_l[j] & (rank[j] == i)):
                    m.d.comb += w_cands[i].eq(w_lst[j])
        w_need_r, w_need_l = Signal(SR), Signal(SL)
        for s in range(4):
            with m.If(win == s):
                m.d.comb += [w_need_r.eq(Mux(minr[s] == 0, 1, minr[s])),
                             w_need_l.eq(Mux(minl[s] > ev[s]["size"], minl[s],
                                             ev[s]["size"]))]
        w_loc = [[Signal(EU_W, name=f"w_loc{i}_eu"), Signal(ENTITY_W, name=f"w_loc{i}_ent"),
                  Signal(ELEM_W, name=f"w_loc{i}_elem")] for i in range(3)]
        for i in range(3):
            m.d.comb += [w_loc[i][k].eq(t_loc[i][k]) for k in range(3)]
        with m.If(win == PIX):      # a pixel packet's triangle, in loc 0
            m.d.comb += [w_loc[0][0].eq(p_look.eu), w_loc[0][1].eq(p_look.entity),
                         w_loc[0][2].eq(0)]

        # ---------------------------------------------------------------- stage R: scan
        r_size = Signal(SIZE_W)
        m.d.comb += r_size.eq(Array([held[s].size for s in range(4)])[r_stream])
        meets = Signal(N)
        for e in range(N):
            st = self.status[e]
            m.d.comb += meets[e].eq((st.free_records >= r_need_r) & (st.free_entities >= 1)
                                    & (st.free_lines >= r_need_l))
        meets_a = Array(meets[e] for e in range(N))
        hit = [Signal(name=f"scan_hit{i}") for i in range(N)]
        for i in range(N):
            m.d.comb += hit[i].eq((i >= r_pos) & (i < r_ncand) & meets_a[r_cands[i]])
        s_found, s_idx, s_eu = Signal(), Signal(5), Signal(EU_W)
        for i in reversed(range(N)):
            with m.If(hit[i]):
                m.d.comb += [s_found.eq(1), s_idx.eq(i), s_eu.eq(r_cands[i])]

        in_alloc = Signal()
        m.d.comb += in_alloc.eq(active & (r_out == O_ALLOC))
        req, q_idx, q_eu = Signal(), Signal(5), Signal(EU_W)
        m.d.comb += [q_idx.eq(Mux(r_held, r_idx, s_idx)),
                     q_eu.eq(Mux(r_held, r_eu, s_eu)),
                     req.eq(in_alloc & (r_held | s_found))]
        scan_none = Signal()
        m.d.comb += scan_none.eq(in_alloc & ~r_held & ~s_found)
        cur_seq = Signal(SEQ_W)
        m.d.comb += cur_seq.eq(Array(seq)[r_stream])
        for e in range(N):
            a = self.alloc[e]
            m.d.comb += [a.valid.eq(req & (q_eu == e)), a.payload.etype.eq(r_stream),
                         a.payload.lines.eq(r_size), a.payload.hold.eq(r_stream != PIX),
                         a.payload.seq.eq(cur_seq)]
        taken, acc_in, ent_in = Signal(), Signal(), Signal(ENTITY_W)
        for e in range(N):
            with m.If(q_eu == e):
                m.d.comb += [acc_in.eq(self.accept[e]), ent_in.eq(self.entity[e])]
        m.d.comb += taken.eq(req & Array(self.alloc[e].ready for e in range(N))[q_eu])
        ift_addr_a = Cat(ent_in, q_eu)
        m.d.comb += ift_ra.addr.eq(ift_addr_a[:ift_ra.addr.shape().width])
        bad_answer = Signal()
        m.d.comb += bad_answer.eq(taken & acc_in & ift_v.bit_select(ift_addr_a, 1))
        accepted, refused = Signal(), Signal()
        m.d.comb += [accepted.eq(taken & acc_in & ~bad_answer),
                     refused.eq(taken & ~(acc_in & ~bad_answer))]

        # consumption and the end of R's pass
        consume_err, consume_close, consumed, parks = Signal(), Signal(), Signal(), Signal()
        m.d.comb += [consume_err.eq(active & (r_out == O_ERR)),
                     consume_close.eq(active & (r_out == O_CLOSE)),
                     consumed.eq(consume_err | consume_close | accepted),
                     parks.eq((active & (r_out == O_WAIT)) | scan_none)]

        # ---------------------------------------------------------------- stage P -> R
        # a pass enters R when R is free at the edge, the log and move FIFOs keep a free
        # entry after this clock's pushes, and it does not overtake R's own packet
        room = Signal()
        m.d.comb += room.eq((fifos["log"].level + consumed < self.fifo_depth)
                            & (fifos["move"].level + accepted < self.fifo_depth))
        load = Signal()
        m.d.comb += load.eq(offer.any() & room & (~active | consumed | parks)
                            & ~(active & (win == r_stream) & ~consumed))
        for s in range(4):
            m.d.comb += ins[s].ready.eq(load & (win == s) & ~parked[s])
        with m.If(load):
            for s in range(4):
                m.d.sync += starve[s].eq(Mux(~offer[s] | (win == s), 0, sat_inc(starve[s])))
        for s in range(4):
            with m.If(consumed & (r_stream == s)):
                m.d.sync += [seq[s].eq(seq[s] + 1), passes[s].eq(0), held_v[s].eq(0)]
            with m.If(load & (win == s)):
                m.d.sync += [held_v[s].eq(1), held[s].eq(src[s]),
                             passes[s].eq(sat_inc(Mux(consumed & (r_stream == s), 0,
                                                      passes[s])))]
        with m.If(load):
            m.d.sync += [r_stream.eq(win), r_out.eq(w_out), r_code.eq(w_code),
                         r_detail.eq(w_detail), r_ncand.eq(w_lcnt), r_need_r.eq(w_need_r),
                         r_need_l.eq(w_need_l), r_vrn.eq(t_vrn), r_rec.eq(w_rec),
                         r_pos.eq(0), r_refused.eq(0)]
            m.d.sync += [r_cands[i].eq(w_cands[i]) for i in range(N)]
            m.d.sync += [r_vr[i].eq(t_r[i]) for i in range(3)]
            m.d.sync += [r_loc[i][k].eq(w_loc[i][k]) for i in range(3) for k in range(3)]
        with m.Elif(refused):
            m.d.sync += [r_pos.eq(q_idx + 1),
                         r_refused.eq(r_refused | (Const(1, MAX_EUS) << q_eu))]
        m.d.sync += active.eq(load | (active & ~consumed & ~parks))
        m.d.sync += r_held.eq(req & ~taken & ~load)
        with m.If(req):
            m.d.sync += [r_idx.eq(q_idx), r_eu.eq(q_eu)]

        # ---------------------------------------------------------------- commit
        ent = ent_in
        e_ = q_eu
        pkt_v, pkt_t, pkt_p, pkt_a = held
        mv = push["move"]
        lg = push["log"]
        m.d.comb += [push_en["log"].eq(consumed), push_en["move"].eq(accepted)]
        m.d.comb += [lg.etype.eq(r_stream), lg.seq.eq(cur_seq),
                     lg.passes.eq(Array(passes)[r_stream])]
        with m.If(consume_err):
            m.d.comb += [lg.kind.eq(K_ERROR), lg.code.eq(r_code)]
        with m.Elif(consume_close):
            m.d.comb += [lg.kind.eq(K_CLOSE), lg.eu.eq(r_loc[0][0]),
                         lg.entity.eq(r_loc[0][1]),
                         ptab.close[0].en.eq(1), ptab.close[0].rec.eq(r_rec[:PR])]
        local = Signal()
        with m.If(r_stream == TRI):
            m.d.comb += local.eq((r_loc[0][0] == e_) & (r_loc[1][0] == e_)
                                 & (r_loc[2][0] == e_))
        with m.Else():
            m.d.comb += local.eq(r_loc[0][0] == e_)
        ref = Signal(2)
        m.d.comb += ref.eq(Mux((r_stream == TRI) | (r_stream == PIX),
                               Mux(local, REF_LOCAL, REF_GLOBAL), REF_NONE))
        with m.If(accepted):
            for s in range(4):
                with m.If(r_stream == s):
                    m.d.sync += [last_eu[s].eq(e_), last_ok[s].eq(1)]
            m.d.comb += [lg.kind.eq(K_ALLOC), lg.eu.eq(e_), lg.entity.eq(ent),
                         lg.ref.eq(ref), lg.refused.eq(r_refused)]
            m.d.comb += [mv.eu.eq(e_), mv.entity.eq(ent), mv.etype.eq(r_stream),
                         mv.seq.eq(cur_seq), mv.size.eq(r_size), mv.ref.eq(ref)]
            with m.Switch(r_stream):
                with m.Case(VTX):
                    m.d.comb += [mv.index.eq(pkt_v.base), mv.count.eq(pkt_v.count)]
                with m.Case(PAT):
                    m.d.comb += [mv.index.eq(pkt_a.base), mv.count.eq(16)]
                with m.Case(TRI):
                    m.d.comb += mv.index.eq(pkt_t.prid)
                    for i in range(3):
                        m.d.comb += [mv[f"src{i}_eu"].eq(r_loc[i][0]),
                                     mv[f"src{i}_entity"].eq(r_loc[i][1]),
                                     mv[f"src{i}_elem"].eq(r_loc[i][2])]
                with m.Case(PIX):
                    m.d.comb += [mv.index.eq(pkt_p.prid), mv.src0_eu.eq(r_loc[0][0]),
                                 mv.src0_entity.eq(r_loc[0][1]), mv.x.eq(pkt_p.x),
                                 mv.y.eq(pkt_p.y), mv.mask.eq(pkt_p.mask)]
            # in-flight table
            m.d.comb += [ift_w.addr.eq(Cat(ent, e_)[:ift_w.addr.shape().width]),
                         ift_w.data.eq(Cat(r_stream, r_rec)), ift_w.en.eq(1)]

        # VDT / PT writes on accept
        acc_v = accepted & (r_stream == VTX)
        acc_a = accepted & (r_stream == PAT)
        acc_t = accepted & (r_stream == TRI)
        acc_p = accepted & (r_stream == PIX)
        va, g1 = vdt.alloc, Signal(I - 3 + 1)
        m.d.comb += [
            g1.eq(pkt_a.base[3:] + 1),
            va.en.eq(acc_v | acc_a), va.patch.eq(acc_a), va.rec.eq(r_rec[:VR]),
            va.tag.eq(vtag(Mux(acc_a, pkt_a.base, pkt_v.base))),
            va.tag1.eq(g1[vb:] if I - 3 + 1 > vb else 0),
            va.eu.eq(e_), va.entity.eq(ent), va.count.eq(pkt_v.count),
            va.noref.eq(Mux(acc_a, pkt_a.noref, pkt_v.noref)),
            vdt.close.mask.eq(Mux(acc_t, pkt_t.last, 0)),
            vdt.refs.inc.eq(Mux(acc_t, r_vrn, 0)),
        ] + [vdt.close.rec[i].eq(r_vr[i]) for i in range(3)] \
          + [vdt.refs.inc_rec[i].eq(r_vr[i]) for i in range(3)]
        pa_ = ptab.alloc
        m.d.comb += [pa_.en.eq(acc_t), pa_.rec.eq(r_rec[:PR]),
                     pa_.word.tag.eq(ptag(pkt_t.prid)), pa_.word.eu.eq(e_),
                     pa_.word.entity.eq(ent), pa_.word.vrn.eq(r_vrn),
                     ptab.close[1].en.eq(acc_p & pkt_p.last), ptab.close[1].rec.eq(r_rec[:PR]),
                     ptab.pix_inc.en.eq(acc_p), ptab.pix_inc.rec.eq(r_rec[:PR])]
        m.d.comb += [pa_.word.vr[i].eq(r_vr[i]) for i in range(3)]

        # ---------------------------------------------------------------- completion
        dn = self.done.payload
        m.d.comb += self.done.ready.eq(1)
        d_addr = Cat(dn.entity, dn.eu)
        d_in = Signal()
        m.d.comb += [d_in.eq((dn.eu < N) & ift_v.bit_select(d_addr, 1)),
                     ift_rd.addr.eq(d_addr[:ift_rd.addr.shape().width])]
        d_ok = Signal()
        d_bad = Signal()
        m.d.comb += [d_ok.eq(self.done.valid & d_in), d_bad.eq(self.done.valid & ~d_in)]
        d_type = ift_rd.data[:2]
        d_rec = ift_rd.data[2:]
        # in-flight valid bits
        set_mask = Signal(N * 256)
        clr_mask = Signal(N * 256)
        with m.If(accepted):
            m.d.comb += set_mask.eq(Const(1, N * 256) << Cat(ent, e_))
        with m.If(d_ok):
            m.d.comb += clr_mask.eq(Const(1, N * 256) << d_addr)
        m.d.sync += ift_v.eq((ift_v | set_mask) & ~clr_mask)
        d_tri = Signal()
        m.d.comb += d_tri.eq(d_ok & (d_type == TRI))
        dq = d_rec[:PR]
        m.d.comb += [
            vdt.done.en.eq(d_ok & ((d_type == VTX) | (d_type == PAT))),
            vdt.done.patch.eq(d_type == PAT), vdt.done.rec.eq(d_rec[:VR]),
            ptab.done.en.eq(d_tri), ptab.done.rec.eq(dq),
            ptab.pix_dec.en.eq(d_ok & (d_type == PIX)), ptab.pix_dec.rec.eq(dq),
            # a completed triangle's references: one less on each distinct VDT record
            ptab.refs_addr.eq(dq), vdt.refs.dec.eq(Mux(d_tri, ptab.refs.vrn, 0)),
        ] + [vdt.refs.dec_rec[i].eq(ptab.refs.vr[i]) for i in range(3)]

        # ---------------------------------------------------------------- release engine
        # the VDT's releasable record first, else the PT's
        rl = push["release"]
        rel_room = fifos["release"].w_rdy
        m.d.comb += [vdt.release.ready.eq(rel_room),
                     ptab.release.ready.eq(rel_room & ~vdt.release.valid),
                     push_en["release"].eq(rel_room & (vdt.release.valid | ptab.release.valid)),
                     rl.eq(Mux(vdt.release.valid, vdt.release.payload, ptab.release.payload))]

        # ---------------------------------------------------------------- configuration
        cf = self.cfg.payload
        m.d.comb += self.cfg.ready.eq(1)
        ent_c = [cf.eus[4 * i:4 * i + 4] for i in range(MAX_EUS)]
        c_bad, c_noeu = Signal(), Signal()
        with m.Switch(cf.op):
            with m.Case(0):
                bad_terms = [cf.count > N]
                for i in range(N):
                    bad_terms.append((i < cf.count) & (ent_c[i] >= N))
                    for j in range(i + 1, N):
                        bad_terms.append((j < cf.count) & (ent_c[i] == ent_c[j]))
                m.d.comb += [c_bad.eq(Cat(*bad_terms).any()), c_noeu.eq(cf.count == 0)]
            with m.Case(1):
                m.d.comb += c_bad.eq((cf.records > self.eu_records) | (cf.lines > self.eu_lines))
            with m.Case(3):
                m.d.comb += c_bad.eq(1)
        with m.If(self.cfg.valid & ~c_bad):
            with m.Switch(cf.op):
                with m.Case(0):
                    for t in range(4):
                        with m.If(cf.etype == t):
                            m.d.sync += lcnt[t].eq(cf.count)
                            m.d.sync += [lst[t][k].eq(ent_c[k]) for k in range(N)]
                with m.Case(1):
                    for t in range(4):
                        with m.If(cf.etype == t):
                            m.d.sync += [minr[t].eq(cf.records), minl[t].eq(cf.lines)]
                with m.Case(2):
                    m.d.sync += limit.eq(cf.limit)
        cfg_list = [self.cfg.valid & ~c_bad & (cf.op == 0) & (cf.etype == t) for t in range(4)]
        self._walk_start(m, walk_start, lst, lcnt, last_eu, last_ok, cfg_list, ent_c,
                         cf.count, [accepted & (r_stream == t) for t in range(4)], e_)

        # ---------------------------------------------------------------- errors
        e_pkt = consume_err
        e_ans = bad_answer
        e_done = d_bad
        e_cfg = self.cfg.valid & (c_bad | c_noeu)
        er = push["err"]
        with m.If(e_pkt):
            m.d.comb += [er.code.eq(r_code), er.src.eq(r_stream), er.seq.eq(cur_seq),
                         er.detail.eq(r_detail)]
        with m.Elif(e_ans):
            m.d.comb += [er.code.eq(BAD_ANSWER), er.src.eq(SRC_ANSWER), er.seq.eq(cur_seq),
                         er.eu.eq(e_), er.detail.eq(ent_in)]
        with m.Elif(e_done):
            m.d.comb += [er.code.eq(UNKNOWN_DONE), er.src.eq(SRC_DONE), er.eu.eq(dn.eu),
                         er.detail.eq(dn.entity)]
        with m.Elif(e_cfg):
            m.d.comb += [er.code.eq(Mux(c_bad, BAD_CONFIG, NO_EU)), er.src.eq(SRC_CONFIG),
                         er.detail.eq(Mux(c_bad, cf.op, cf.etype))]
        n_err = Signal(3)
        m.d.comb += n_err.eq(e_pkt.as_unsigned() + e_ans + e_done + e_cfg)
        any_err = n_err != 0
        m.d.comb += push_en["err"].eq(any_err & fifos["err"].w_rdy)
        with m.If(any_err):
            m.d.sync += error.eq(1)
            with m.If(~fifos["err"].w_rdy | (n_err > 1)):
                m.d.sync += lost.eq(1)
        return m


class SpreaderQCC(wiring.Component):
    """The spreader driving ``n_eus`` real QCCs (:class:`hw.qcc.QCC`): the co-simulation
    design of issue 5 ("one test must run it against real QCC instances").

    The spreader's EU interface is a request/answer handshake (the answer rides on the
    ``alloc[e]`` transfer), a ``status`` per EU, one ``done`` stream and one ``release``
    stream; the QCC has a command/response port, status outputs and stage issue and
    completion ports. A small adapter per EU maps one onto the other:

    * ``status[e]`` is the QCC's ``status``: ``free_records``, ``free_entities`` and, as
      ``free_lines``, the QCC's ``free_run`` (its longest run of contiguous free lines),
      so the spreader's minimum check reads the QCC's own counts, and a check that
      passes means the ALLOC finds its lines (a count of scattered free lines can pass
      while first fit fails, which deadlocked a packet waiting on lines held by the
      data of its own triangle).
    * An allocation request becomes the QCC command ``ALLOC`` (``etype`` = the request's
      type, the numbers agree: vertex 0, triangle 1, pixel 2, patch 3; ``lines`` = the
      packet's size; ``hold`` = the request's ``hold``, 0 only for pixel packets). The
      QCC answers one clock later; that response is the answer: ``alloc[e].ready`` = 1,
      ``accept[e]`` = (code is OK), ``entity[e]`` = the response's entity. NO_RECORD,
      NO_ENTITY and NO_LINES (e.g. enough lines but no contiguous run) are refusals, so
      the spreader tries its next candidate. An allocation therefore costs two clocks
      per tried EU (request, then answer), which the spreader's contract allows (it
      holds the request until it is answered).
    * A command is offered only while none is outstanding (one response per command,
      in order); the release of the spreader (``release``, one stream, routed by its
      ``eu`` into a one-entry register per EU) has priority over an allocation and
      becomes the QCC command ``RELEASE`` of its entity (taken two or three clocks after
      it is offered, as the QCC contract says).
    * ``done``: the adapter remembers, for every issue the processors take, the record's
      entity and whether the issued stage is the last of its type's stage program. A
      completion (``n_done``/``m_done``) of a last stage is the entity's completion: it
      is queued (one FIFO per EU and issue kind, ``records`` deep, so it cannot overflow)
      and the queues are merged onto the spreader's ``done``, lowest EU and NUMERIC
      first, one per clock.
    * An entity without ``hold`` (a pixel packet) is deleted by the QCC in the clock of
      its last completion, and its number can be handed out again from the next clock.
      The spreader must have taken the completion before it sees that number in an
      answer (else it reports BAD_ANSWER), so no ALLOC is offered to an EU while a
      completion of that EU waits in its queues.

    The processors (thread controller, data move machine) are the testbench's: each QCC's
    ``n_issue``/``m_issue`` and ``n_done``/``m_done`` are ports of this design, as are
    taps of what crosses the adapters (plain outputs, for the scoreboard).

    Parameters
    ----------
    n_eus : int
        EUs (QCCs), 1..16. Default 2.
    records, entities, lines : int
        Parameters of every QCC (its ``frames`` is 1: the spreader maps no frames).
        Defaults 8, 8, 16.
    vdt_records, pt_records, fifo_depth, starve_limit, rotate
        Parameters of the spreader (:class:`Spreader`); defaults 8, 4, 2, 8, True. The
        spreader's ``eu_records`` and ``eu_lines`` are the QCC's ``records`` and
        ``lines``, its ``max_lines`` is ``min(8, lines)``.

    Attributes
    ----------
    spreader_params : dict
        The parameters of the spreader inside (a golden model built with them agrees).
    alloc_tap[e] : out
        ``valid``, ``ready``, ``accept``, ``entity`` and ``payload`` of the spreader's
        ``alloc[e]`` and its answer, every clock.
    status_tap[e], release_tap, done_tap : out
        The status the spreader reads; the ``release`` and ``done`` transfers
        (``valid`` = transferred this clock).
    qcc_error : out
        Per EU, the QCC's sticky ``error``.
    adapter_error : out
        Sticky: a RELEASE not answered OK, an answer without a request, or an ALLOC not
        taken in the clock it was offered (none can happen when the rules above hold).
    """

    def __init__(self, *, n_eus=2, records=8, entities=8, lines=16, vdt_records=8,
                 pt_records=4, fifo_depth=2, starve_limit=8, rotate=True):
        from hw.qcc import DONE, ISSUE, QCC     # only here: the plain spreader needs none
        self.n_eus = _check_int("n_eus", n_eus, 1, MAX_EUS)
        self.spreader_params, self.qcc_params = self.split_params(
            n_eus=n_eus, records=records, entities=entities, lines=lines,
            vdt_records=vdt_records, pt_records=pt_records, fifo_depth=fifo_depth,
            starve_limit=starve_limit, rotate=rotate)
        self._qccs = [QCC(**self.qcc_params) for _ in range(n_eus)]   # validates them
        self._spreader = Spreader(**self.spreader_params)
        L = self._spreader.lay
        self.lay = L
        tap = data.StructLayout({"valid": 1, "ready": 1, "accept": 1, "entity": ENTITY_W,
                                 "payload": L["alloc"]})
        members = {n: In(stream.Signature(L[n]))
                   for n in ("i_vtx", "i_tri", "i_pix", "i_pat", "cfg")}
        members |= {n: Out(stream.Signature(L[n])) for n in ("move", "log", "err")}
        members |= {
            "n_issue": Out(stream.Signature(ISSUE)).array(n_eus),
            "m_issue": Out(stream.Signature(ISSUE)).array(n_eus),
            "n_done": In(stream.Signature(DONE)).array(n_eus),
            "m_done": In(stream.Signature(DONE)).array(n_eus),
            "alloc_tap": Out(tap).array(n_eus),
            "status_tap": Out(L["status"]).array(n_eus),
            "release_tap": Out(data.StructLayout({"valid": 1, "payload": L["release"]})),
            "done_tap": Out(data.StructLayout({"valid": 1, "payload": L["done"]})),
            "error": Out(1), "lost": Out(1),
            "qcc_error": Out(n_eus), "adapter_error": Out(1),
        }
        super().__init__(members)

    @staticmethod
    def split_params(*, n_eus=2, records=8, entities=8, lines=16, vdt_records=8,
                     pt_records=4, fifo_depth=2, starve_limit=8, rotate=True):
        """``(spreader parameters, QCC parameters)`` of a parameter set, unchecked."""
        qcc = {"records": records, "entities": entities, "lines": lines, "frames": 1}
        spreader = {"n_eus": n_eus, "vdt_records": vdt_records, "pt_records": pt_records,
                    "eu_records": records, "eu_lines": lines,
                    "max_lines": max(1, min(8, lines)), "fifo_depth": fifo_depth,
                    "starve_limit": starve_limit, "rotate": rotate}
        return spreader, qcc

    def elaborate(self, platform):
        from hw.qcc import Code, Op
        m = Module()
        N = self.n_eus
        m.submodules.spreader = sp = self._spreader
        for n in ("i_vtx", "i_tri", "i_pix", "i_pat", "cfg"):
            wiring.connect(m, wiring.flipped(getattr(self, n)), getattr(sp, n))
        for n in ("move", "log", "err"):
            wiring.connect(m, getattr(sp, n), wiring.flipped(getattr(self, n)))
        m.d.comb += [self.error.eq(sp.error), self.lost.eq(sp.lost)]
        adapter_error = Signal()
        m.d.comb += self.adapter_error.eq(adapter_error)
        bad = []

        # release: one register per EU, loaded from the spreader's single stream
        rel = sp.release
        rel_v = [Signal(name=f"rel_v{e}") for e in range(N)]
        rel_ent = [Signal(ENTITY_W, name=f"rel_ent{e}") for e in range(N)]
        m.d.comb += rel.ready.eq(~Array(rel_v)[rel.payload.eu])
        m.d.comb += [self.release_tap.valid.eq(rel.valid & rel.ready),
                     self.release_tap.payload.eq(rel.payload)]

        queues = []
        for e in range(N):
            m.submodules[f"qcc{e}"] = q = self._qccs[e]
            for k in ("n_issue", "m_issue"):
                wiring.connect(m, getattr(q, k), wiring.flipped(getattr(self, k)[e]))
            for k in ("n_done", "m_done"):
                wiring.connect(m, wiring.flipped(getattr(self, k)[e]), getattr(q, k))
            m.d.comb += [q.query.valid.eq(0), q.qresp.ready.eq(1), q.resp.ready.eq(1)]
            st = sp.status[e]
            m.d.comb += [st.free_records.eq(q.status.free_records),
                         st.free_entities.eq(q.status.free_entities),
                         st.free_lines.eq(q.status.free_run),
                         self.status_tap[e].eq(st), self.qcc_error[e].eq(q.status.error)]
            with m.If(rel.valid & rel.ready & (rel.payload.eu == e)):
                m.d.sync += [rel_v[e].eq(1), rel_ent[e].eq(rel.payload.entity)]
            eq = [self._completions(m, q, e, kind) for kind in ("n", "m")]
            queues += eq
            blocked = eq[0].r_rdy | eq[1].r_rdy
            bad += self._commands(m, q, sp.alloc[e], sp, e, rel_v[e], rel_ent[e], blocked,
                                  Op, Code)

        # completions: the queues merged onto the spreader's ``done``, lowest first
        for i in reversed(range(2 * N)):
            with m.If(queues[i].r_rdy):
                m.d.comb += [sp.done.valid.eq(1), sp.done.payload.eu.eq(i // 2),
                             sp.done.payload.entity.eq(queues[i].r_data)]
        for i in range(2 * N):
            first = queues[i].r_rdy & ~Cat(f.r_rdy for f in queues[:i]).any() if i \
                else queues[i].r_rdy
            m.d.comb += queues[i].r_en.eq(first & sp.done.ready)
        m.d.comb += [self.done_tap.valid.eq(sp.done.valid & sp.done.ready),
                     self.done_tap.payload.eq(sp.done.payload)]
        with m.If(Cat(bad).any()):
            m.d.sync += adapter_error.eq(1)
        return m

    def _completions(self, m, q, e, kind):
        """The queue of entity completions of one issue kind of EU ``e``."""
        records = self.qcc_params["records"]
        iss, done = getattr(q, f"{kind}_issue"), getattr(q, f"{kind}_done")
        last = Array(Signal(name=f"{kind}last{e}_{r}") for r in range(records))
        ent = Array(Signal(ENTITY_W, name=f"{kind}ent{e}_{r}") for r in range(records))
        # the last stage of each type's program (etype 5..7 is never issued)
        final = Array([Const(len(p) - 1, 4) for p in q.programs] + [Const(15, 4)] * 3)
        with m.If(iss.valid & iss.ready):
            m.d.sync += [last[iss.payload.record].eq(iss.payload.stage
                                                     == final[iss.payload.etype]),
                         ent[iss.payload.record].eq(iss.payload.entity)]
        f = SyncFIFO(width=ENTITY_W, depth=records)
        m.submodules[f"done_{kind}{e}"] = f
        m.d.comb += [f.w_en.eq(done.valid & last[done.payload.record]),
                     f.w_data.eq(ent[done.payload.record])]
        return f

    def _commands(self, m, q, a, sp, e, rel_v, rel_ent, blocked, Op, Code):
        """EU ``e``'s command port: RELEASE first, else the spreader's ALLOC; returns
        the conditions that set ``adapter_error``."""
        c, r = q.cmd, q.resp
        wait = Signal(name=f"wait{e}")
        with m.If(~wait):
            with m.If(rel_v):
                m.d.comb += [c.valid.eq(1), c.payload.op.eq(Op.RELEASE),
                             c.payload.entity.eq(rel_ent)]
                with m.If(c.ready):
                    m.d.sync += rel_v.eq(0)
            with m.Elif(a.valid & ~blocked):
                m.d.comb += [c.valid.eq(1), c.payload.op.eq(Op.ALLOC),
                             c.payload.etype.eq(a.payload.etype),
                             c.payload.hold.eq(a.payload.hold),
                             c.payload.lines.eq(a.payload.lines)]
        with m.If(c.valid & c.ready):
            m.d.sync += wait.eq(1)
        with m.Elif(r.valid):
            m.d.sync += wait.eq(0)
        answer = r.valid & (r.payload.op == Op.ALLOC)
        m.d.comb += [a.ready.eq(answer), sp.accept[e].eq(r.payload.code == Code.OK),
                     sp.entity[e].eq(r.payload.entity)]
        t = self.alloc_tap[e]
        m.d.comb += [t.valid.eq(a.valid), t.ready.eq(a.ready), t.accept.eq(sp.accept[e]),
                     t.entity.eq(sp.entity[e]), t.payload.eq(a.payload)]
        return [answer & ~a.valid,
                r.valid & (r.payload.op == Op.RELEASE) & (r.payload.code != Code.OK),
                r.valid & r.payload.code[3],
                c.valid & ~c.ready & (c.payload.op == Op.ALLOC)]


DESIGNS = {
    "spreader": Spreader,
    "spreader_qcc": SpreaderQCC,
}
