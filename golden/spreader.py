"""Golden model of the global spreader (spec ``spreader.md``, seed ``000_e8967f273ac2673e``:
global spreader 12, primitive table 41, vertex descriptor table 43, Fig. 10, claims 1-20).

Clock-exact, like :mod:`golden.qcc`: one call of :meth:`Spreader.cycle` is one clock of
the RTL (``hw/spreader.py``, to be built). It takes what the RTL sees on its inputs in
that clock and gives what the RTL drives and transfers. The RTL must equal it clock by
clock, so its decision log equals the model's *exactly* (entries, order and transfer
clock) for any stimulus; tests can either run the model in lock-step with the RTL (feed
it the RTL's inputs every clock and compare the outputs) or run both closed-loop against
the same deterministic EU models (:class:`ScriptedEU`, :class:`RandomEU` with a seed,
:class:`QCCEU`) and packet feeder (:class:`Feeder`) and compare the logs.
:class:`Scoreboard` checks the invariants on any run's observations, the RTL's included.
The model never imports ``hw/``.

Public API
----------
* :class:`Spreader` -- the model: :meth:`~Spreader.cycle`, :meth:`~Spreader.run`,
  observation (:meth:`~Spreader.vdt`, :meth:`~Spreader.pt`, :meth:`~Spreader.check`),
  RTL encoding (:meth:`~Spreader.layout`, :meth:`~Spreader.pack`, :meth:`~Spreader.unpack`).
* Packets :class:`VertexPacket`, :class:`TrianglePacket`, :class:`PixelPacket`,
  :class:`PatchPacket`; configuration words :class:`Config`; EU-side records
  :class:`EUStatus`, :class:`AllocRequest`, :class:`Answer`, :class:`Done`; outputs
  :class:`LogEntry`, :class:`MoveCmd`, :class:`Loc`, :class:`ReleaseCmd`,
  :class:`ErrorReport`; :class:`CycleResult`, :class:`ReqRecord`, :class:`RunResult`.
* EU models: :class:`ScriptedEU`, :class:`RandomEU`, :class:`QCCEU` (a
  :class:`golden.qcc.QCCModel` acting as an EU); :class:`DoneMerger`.
* Stimulus: :class:`Item`, :class:`Workload`, :class:`Feeder`, :func:`build_workload`,
  :func:`synthetic_workload`, :func:`scene_workload` (scenes of :mod:`golden.scenes` and
  pixel packets of :mod:`golden.raster`).
* :class:`Scoreboard` -- the invariant checker; :class:`Stats`.

Entity types are those of the QCC: 0 vertex, 1 triangle, 2 pixel, 3 patch (:class:`EType`).

Ports (RTL contract)
--------------------
Every stream is an ``amaranth.lib.stream`` interface with an ``amaranth.lib.data``
struct payload, fields in the order listed, first field in the low bits (``pack``/
``unpack`` give the exact encoding; :meth:`Spreader.layout` the widths). Widths below are
at the defaults; ``I = index_bits`` (16), ``R = prid_bits`` (16), ``C = coord_bits`` (12),
``SR = bit_length(eu_records)`` (9), ``SL = bit_length(eu_lines)`` (9),
``D = max(I, R, 12)``, ``N = n_eus``.

=================  =====  ===================================================================
port               dir    payload
=================  =====  ===================================================================
``i_vtx``          in     ``base I, count 4, size 4, noref 1`` (25 bits)
``i_tri``          in     ``prid R, i0 I, i1 I, i2 I, size 4, last 3`` (71 bits)
``i_pix``          in     ``prid R, x C, y C, mask 16, last 1, size 4`` (61 bits)
``i_pat``          in     ``base I, size 4, noref 1`` (21 bits)
``cfg``            in     ``op 2, etype 2, count 5, eus 64 (entry i in bits 4i..4i+3),
                          records SR, lines SL, limit 8`` (99 bits); ``ready`` = 1
``done``           in     ``eu 4, entity 8`` (12 bits); ``ready`` = 1
``status[e]``      in     plain: ``free_records SR, free_entities 9, free_lines SL``, e < N
``alloc[e]``       out    ``etype 2, lines 4, hold 1, seq 16`` (23 bits); the answer rides on
                          the transfer: plain inputs ``accept[e]`` (1), ``entity[e]`` (8),
                          sampled when ``alloc[e].valid & alloc[e].ready``
``move``           out    ``eu 4, entity 8, etype 2, seq 16, size 4, ref 2, index D,
                          count 5, src 3 x (eu 4, entity 8, elem 4), x C, y C, mask 16``
``release``        out    ``eu 4, entity 8, etype 2, rec 8``
``log``            out    ``kind 2, etype 2, seq 16, eu 4, entity 8, ref 2, passes 8,
                          refused 16, code 4`` (62 bits)
``err``            out    ``code 4, src 3, seq 16, eu 4, detail D``
``error``          out    plain, sticky (reset only); ``lost`` plain, sticky: a report dropped
=================  =====  ===================================================================

Packet fields. ``size`` is the data size in cache lines (the buffer the EU allocates,
1..``max_lines``). A vertex packet holds ``count`` (1..8) vertices ``base .. base+count-1``
of one group (``base`` a multiple of 8); ``noref`` = no triangle will reference the group.
A triangle names its primitive id and three vertex indices; ``last`` bit i = no later
triangle references the group of vertex i (closes that VDT record). A pixel packet is a 4x4
span: its triangle's ``prid``, top-left pixel ``x, y``, 16-bit pixel mask (bit
``4*py + px``), ``last`` = the last packet of that primitive; ``mask = 0, last = 1`` is an
*end marker* (the primitive got no more pixels; it allocates nothing). A patch is 16
control points ``base .. base+15`` (``base`` a multiple of 8; two VDT groups).

Configuration (``cfg``, op): 0 LIST -- the priority list of ``etype``: ``count`` (0..N)
distinct EUs < N in ``eus``; 1 MIN -- minimum free ``records`` (<= ``eu_records``) and
``lines`` (<= ``eu_lines``) for ``etype``; 2 STARVE -- the anti-starvation ``limit``
(0 = off); 3 is malformed. Reset: every list ``0, 1, .., N-1``, minimum 1 record and 1
line, limit ``starve_limit``.

Outputs. ``alloc[e]`` (one EU at a time): a request; ``hold`` is 1 for vertex, patch and
triangle entities (kept until the spreader's release command), 0 for pixels; ``seq`` is a
trace tag (EUs ignore it). ``move``: per allocation, what the EU's data move machine
needs: ``index`` = base (vertex, patch) or prid (triangle, pixel), ``count`` = vertices
(vertex 1..8, patch 16), ``src[i]`` = where vertex i of a triangle is (``elem`` =
``index & 7``, plus 8 for a patch's second group), for a pixel ``src[0]`` = its triangle
(``elem`` 0); ``ref`` 0 none (vertex, patch), 1 local (all referenced data in the chosen
EU), 2 global (some of it elsewhere: the ``src`` entries of other EUs are the addresses
to fetch from). ``release``: tells EU ``eu`` to release held entity ``entity`` (its VDT
or PT record ``rec`` is freed with it). ``log``: one entry per input packet consumed, in
consumption order: ``kind`` 0 ALLOC, 1 CLOSE (end marker), 2 ERROR; ``seq`` = the
packet's number on its stream (counts every consumed packet, mod 2**16); ``eu, entity``
where it went (CLOSE: the triangle's); ``passes`` how many passes it took (saturates at
255); ``refused`` bit e = EU e refused it in the final pass; ``code`` the error code.
``err``: ``src`` 0..3 a packet stream, 4 cfg, 5 done, 6 an EU's answer; ``detail``:
the missing vertex index, the prid, the entity, the etype or the size (see :class:`Err`).

Per-clock behaviour (timing contract)
-------------------------------------
``S_t`` is the state after the edge that ends cycle t-1; everything in cycle t reads
``S_t`` and the inputs of cycle t, and all writes happen at the edge ending cycle t.

1. **Allocator**: one packet at a time, in a *pass*. When no pass is active and the
   ``log`` and ``move`` FIFOs each have a free entry in ``S_t``, the arbiter picks among
   the input streams whose ``valid`` is high: a *starving* stream (its counter >=
   ``limit``, limit > 0) if any, else fixed priority pixel > triangle > vertex > patch
   (among starving streams the same order). The counter of every other valid stream is
   incremented (saturating at 255), the winner's and every idle stream's cleared. A pass
   starts in the same clock: checks, lookups (VDT, PT), candidate list and minimum
   (S104-S115) are combinational from the head's payload and ``S_t``.
2. A bad packet (:class:`Err` codes 1-5) and an end marker are consumed in the clock
   their pass starts (``ready`` high, log entry, error report). A vertex or patch packet
   whose VDT record(s), or a triangle whose PT record, is still occupied *waits*: the
   pass ends at once, nothing is requested, nothing is logged.
3. **Scan** (S118-S124): in the clock the pass starts, and in the clock after each
   refusal, the spreader drives ``alloc[e]`` for the first candidate at or after the
   current position whose ``status[e]`` *in that clock* meets the minimum. If none
   does, the pass ends in that clock (the packet stays at its input, un-acknowledged)
   and the next pass is arbitrated the next clock -- "retry from the top".
4. The request is held (payload constant) until the EU takes it (``ready``); the EU
   answers in that clock. ``accept`` with an entity that is still in flight for that EU
   is a bad answer (error, treated as a refusal). Accept: the packet is consumed in that
   very clock (its input ``ready`` is combinational from the answer), the tables, the
   log and the move command are written at the edge. Refuse: next clock, scan on.
   So with EUs that answer in the clock of the request (``N = 0``) the allocator takes
   one packet per clock when the first candidate accepts, one extra clock per refused
   candidate; an EU that answers N clocks late adds N clocks per request.
   Measured by :class:`Stats` (``alloc_cycles``: clocks from the first request of an
   allocation's final pass to its accept, so ``allocations_per_clock`` is 1.0 when
   every first candidate accepts at N = 0; ``per_eu`` is the load balance).
5. **Completion** (``done``, one per clock): looked up in the in-flight table
   (``eu, entity`` -> type, record) of ``S_t``; unknown is bad input. Vertex/patch:
   ``vdone``; triangle: ``tdone`` and one reference less on each distinct VDT record it
   named; pixel: one pixel packet less in flight on its PT record. Effects from t+1.
6. **Release engine**: when the ``release`` FIFO has a free entry in ``S_t``, it frees
   one record per clock: the lowest VDT record that is valid, ``vdone``, closed and
   unreferenced (a patch: both its records, checked at its first), else the lowest PT
   record that is valid, ``tdone``, closed and has no pixel packet in flight. A vertex
   group is closed by ``noref`` or by the ``last`` bit of a triangle that is allocated;
   a primitive by its ``last`` pixel packet or end marker. (A record a pass can still
   name is never releasable: a closed record is "unknown" to lookups, and the packet
   that closes it takes its reference on the same edge.)
7. **Configuration** applies at the edge; a pass keeps the list and minimum it started
   with.
8. Output FIFOs (``fifo_depth`` each): a push at the edge ending t is visible from t+1;
   a pop happens at an edge where ``valid & ready``; a push needs a free entry in
   ``S_t``. At most one error report per clock (precedence: packet, EU answer, ``done``,
   ``cfg``); one that finds the FIFO full or comes second in a clock is dropped and sets
   ``lost``. ``error`` is exact.

Decisions (where spec and issue are silent)
-------------------------------------------
1. **Candidate lists** (S111): vertex, patch: the type's list. Triangle: the EUs holding
   its vertices that are *in the triangle list* (dedication wins over locality), most
   vertices first, ties in list order; then the rest of the list. Pixel: its triangle's
   EU if in the pixel list, then the rest. **Minimum** (S115):
   ``free_records >= max(1, min_records)``, ``free_entities >= 1``,
   ``free_lines >= max(min_lines, size)``.
2. **Local/global** is decided against the EU that accepts: local when every vertex (the
   triangle, for a pixel) is in that EU; the seed's S108 case turns global when the
   holding EU refuses.
3. **Lifetimes**: a vertex group is held until released; the release condition of the
   spec ("done and no triangle in flight references it") needs to know that no later
   triangle will reference it, hence the ``last``/``noref`` closing bits (and the
   pixel ``last``/end marker for primitives). A triangle naming a closed group, or a
   pixel packet naming a closed primitive, is bad input (unknown vertex / prid).
4. **Tables**: VDT record ``(index >> 3) mod vdt_records``, tagged with the upper index
   bits; a hit needs valid, equal tag, ``index & 7 < count`` and the group not closed.
   PT record ``prid mod pt_records``, tagged likewise. A packet whose record is
   occupied waits (no error): a producer reuses a record only after closing it.
5. **Passes re-arbitrate**: a packet that cannot be placed does not block the other
   streams; fixed priority plus the starvation limit decides who gets the next pass.
6. **Checks**, in precedence: MALFORMED (vertex ``count`` not 1..8 or ``base`` not
   aligned; patch ``base`` not aligned; ``size`` 0 except for an end marker; pixel
   mask 0 without ``last``), TOO_LARGE (``size > max_lines``), NO_EU (empty list),
   UNKNOWN_VERTEX (first missing vertex in slot order), UNKNOWN_PRID; then waits.
7. **In-flight table** (claim 1's "logical table"): ``(eu, entity)`` -> type and record,
   set on accept, cleared on completion; a held entity is remembered by its VDT/PT
   record until released.
8. Completions come on one shared stream (an external merge of the EUs'), one per clock;
   ``done.ready`` and ``cfg.ready`` are constant 1.

Producer contract (not checked beyond the errors above): a triangle is presented only
after the vertex packets it names were consumed; pixel packets after their triangle; a
group's or primitive's record is reused only after it was closed. :func:`build_workload`
emits workloads with these dependencies (:class:`Item` ``after``). Progress also needs
the driver to configure minimum resources so that held vertex data cannot crowd out the
triangles and pixels that free it (e.g. records: vertex > triangle > pixel).
"""

import enum
import heapq
from collections import deque
from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

import numpy as np

__all__ = [
    "EType", "Err", "Src", "Kind", "Ref", "CfgOp", "PRIORITY", "GROUP", "PATCH_POINTS",
    "VertexPacket", "TrianglePacket", "PixelPacket", "PatchPacket", "Config", "EUStatus",
    "AllocRequest", "Answer", "Done", "Loc", "MoveCmd", "ReleaseCmd", "LogEntry",
    "ErrorReport", "CycleResult", "ReqRecord", "RunResult", "Spreader",
    "ScriptedEU", "RandomEU", "QCCEU", "DoneMerger",
    "Item", "Workload", "Feeder", "build_workload", "synthetic_workload", "scene_workload",
    "Scoreboard", "Stats",
]

MAX_EUS = 16
GROUP = 8
PATCH_POINTS = 16
ENTITIES = 256
EU_W, ENTITY_W, SEQ_W, SIZE_W, ELEM_W, CODE_W = 4, 8, 16, 4, 4, 4
SAT = 255


class EType(enum.IntEnum):
    """Entity / stream types (the QCC's numbering)."""
    VERTEX = 0
    TRIANGLE = 1
    PIXEL = 2
    PATCH = 3


#: Fixed arbitration priority, highest first.
PRIORITY = (EType.PIXEL, EType.TRIANGLE, EType.VERTEX, EType.PATCH)


class Err(enum.IntEnum):
    """Error codes (``err.code``, ``log.code``) and their ``detail``."""
    NONE = 0
    MALFORMED = 1        #: bad count / alignment / size 0 / empty pixel mask; detail 0
    TOO_LARGE = 2        #: size > max_lines; detail size
    NO_EU = 3            #: the type's list is empty (also on the cfg write); detail etype
    UNKNOWN_VERTEX = 4   #: detail the vertex index
    UNKNOWN_PRID = 5     #: detail the prid
    UNKNOWN_DONE = 6     #: completion of an entity not in flight; detail entity
    BAD_CONFIG = 7       #: malformed cfg word (ignored); detail op
    BAD_ANSWER = 8       #: accept with an entity already in flight; detail entity


class Src(enum.IntEnum):
    """``err.src``: 0..3 the packet streams (:class:`EType`), then these."""
    CONFIG = 4
    DONE = 5
    ANSWER = 6


class Kind(enum.IntEnum):
    """``log.kind``."""
    ALLOC = 0
    CLOSE = 1
    ERROR = 2


class Ref(enum.IntEnum):
    """``move.ref`` / ``log.ref``."""
    NONE = 0
    LOCAL = 1
    GLOBAL = 2


class CfgOp(enum.IntEnum):
    """``cfg.op`` (3 is malformed)."""
    LIST = 0
    MIN = 1
    STARVE = 2


# ------------------------------------------------------------------ parameter checks

def _check_int(name, value, lo, hi):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer from {lo} to {hi}, not {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be an integer from {lo} to {hi}, not {value!r}")
    return int(value)


def _check_pow2(name, value, lo, hi):
    v = _check_int(name, value, lo, hi)
    if v & (v - 1):
        raise ValueError(f"{name} must be a power of two from {lo} to {hi}, not {value!r}")
    return v


def _field(name, value, width):
    return _check_int(name, value, 0, (1 << width) - 1)


# ------------------------------------------------------------------ payload records

@dataclass(frozen=True)
class VertexPacket:
    """A vertex packet: ``count`` vertices ``base .. base+count-1`` of one group of 8.

    Attributes
    ----------
    base : int
        First vertex index (a multiple of 8 to be well formed).
    count : int
        Vertices, 1..8 to be well formed (4-bit field).
    size : int
        Data size in cache lines (4-bit field).
    noref : bool
        No triangle will reference this group: it closes at allocation.
    """
    base: int
    count: int = GROUP
    size: int = 1
    noref: bool = False
    etype: ClassVar[EType] = EType.VERTEX


@dataclass(frozen=True)
class TrianglePacket:
    """A triangle packet.

    Attributes
    ----------
    prid : int
        Primitive id.
    indices : tuple of int
        The three vertex indices.
    size : int
        Data size in cache lines.
    last : int
        3 bits; bit i closes the group of vertex i (no later triangle references it).
    """
    prid: int
    indices: tuple
    size: int = 1
    last: int = 0
    etype: ClassVar[EType] = EType.TRIANGLE

    def __post_init__(self):
        object.__setattr__(self, "indices", tuple(self.indices))
        if len(self.indices) != 3:
            raise ValueError(f"indices must hold 3 vertex indices, not {len(self.indices)}")


@dataclass(frozen=True)
class PixelPacket:
    """A pixel packet: up to 16 pixels of a 4x4 span of primitive ``prid``.

    Attributes
    ----------
    prid : int
        The triangle's primitive id.
    x, y : int
        Top-left pixel of the span.
    mask : int
        16 bits, bit ``4*py + px``; 0 with ``last`` is an end marker.
    last : bool
        Last packet of the primitive.
    size : int
        Data size in cache lines (ignored for an end marker).
    """
    prid: int
    x: int = 0
    y: int = 0
    mask: int = 0xFFFF
    last: bool = False
    size: int = 1
    etype: ClassVar[EType] = EType.PIXEL

    @property
    def is_end(self):
        """An end marker (``mask == 0`` and ``last``)."""
        return self.mask == 0 and bool(self.last)


@dataclass(frozen=True)
class PatchPacket:
    """A Bezier patch: 16 control points ``base .. base+15`` (two VDT groups).

    Attributes
    ----------
    base : int
        First control point (a multiple of 8 to be well formed).
    size : int
        Data size in cache lines.
    noref : bool
        No triangle will reference its control points.
    """
    base: int
    size: int = 1
    noref: bool = True
    etype: ClassVar[EType] = EType.PATCH


PACKET_TYPES = (VertexPacket, TrianglePacket, PixelPacket, PatchPacket)


@dataclass(frozen=True)
class Config:
    """A word on the configuration port; build it with :meth:`priority`,
    :meth:`minimum` or :meth:`starve`.

    Attributes
    ----------
    op : int
        :class:`CfgOp` (2 bits; 3 is malformed).
    etype : int
        Entity type (LIST, MIN).
    eus : tuple of int
        Priority list, up to 16 EU numbers (LIST).
    records, lines : int
        Minimum free records and lines (MIN).
    limit : int
        Anti-starvation limit, 0 = off (STARVE).
    """
    op: int
    etype: int = 0
    eus: tuple = ()
    records: int = 0
    lines: int = 0
    limit: int = 0

    def __post_init__(self):
        object.__setattr__(self, "eus", tuple(int(e) for e in self.eus))
        _field("op", self.op, 2)
        _field("etype", self.etype, 2)
        _field("limit", self.limit, 8)
        if len(self.eus) > MAX_EUS:
            raise ValueError(f"eus must hold at most {MAX_EUS} entries, not {len(self.eus)}")
        for e in self.eus:
            _field("eus entry", e, EU_W)

    @classmethod
    def priority(cls, etype, eus):
        """LIST: the priority list of ``etype``."""
        return cls(CfgOp.LIST, etype=etype, eus=tuple(eus))

    @classmethod
    def minimum(cls, etype, records, lines):
        """MIN: the minimum free records and lines of ``etype``."""
        return cls(CfgOp.MIN, etype=etype, records=records, lines=lines)

    @classmethod
    def starve(cls, limit):
        """STARVE: the anti-starvation limit (0 = off)."""
        return cls(CfgOp.STARVE, limit=limit)


class EUStatus(NamedTuple):
    """One EU's ``status`` inputs (its QCC's free counts)."""
    free_records: int
    free_entities: int
    free_lines: int


class AllocRequest(NamedTuple):
    """Payload of ``alloc[e]``."""
    etype: int
    lines: int
    hold: int
    seq: int


class Answer(NamedTuple):
    """An EU's answer, sampled with the ``alloc[e]`` transfer."""
    accept: bool
    entity: int = 0


class Done(NamedTuple):
    """Payload of ``done``."""
    eu: int
    entity: int


class Loc(NamedTuple):
    """Where a vertex (or a pixel packet's triangle) lives."""
    eu: int = 0
    entity: int = 0
    elem: int = 0


NO_SRC = (Loc(), Loc(), Loc())


@dataclass(frozen=True)
class MoveCmd:
    """Payload of ``move`` (see the module docstring)."""
    eu: int
    entity: int
    etype: int
    seq: int
    size: int
    ref: int = Ref.NONE
    index: int = 0
    count: int = 0
    src: tuple = NO_SRC
    x: int = 0
    y: int = 0
    mask: int = 0


class ReleaseCmd(NamedTuple):
    """Payload of ``release``."""
    eu: int
    entity: int
    etype: int
    rec: int


class LogEntry(NamedTuple):
    """Payload of ``log``."""
    kind: int
    etype: int
    seq: int
    eu: int = 0
    entity: int = 0
    ref: int = Ref.NONE
    passes: int = 1
    refused: int = 0
    code: int = Err.NONE


class ErrorReport(NamedTuple):
    """Payload of ``err``."""
    code: int
    src: int
    seq: int = 0
    eu: int = 0
    detail: int = 0


class CycleResult(NamedTuple):
    """What one clock does.

    ``consumed``: the stream whose packet was taken (its ``ready`` was high), else None.
    ``request``: ``(eu, AllocRequest)`` driven on ``alloc[eu]`` this clock, else None;
    ``answer``: the :class:`Answer` if it was taken this clock. ``started``: a pass
    started (arbitration happened) this clock. ``move``, ``log``, ``release``, ``err``:
    the payload transferred on that output this clock, else None. ``error``/``lost``:
    the sticky flags in this clock (``S_t``).
    """
    consumed: int | None
    request: tuple | None
    answer: Answer | None
    started: bool
    move: MoveCmd | None
    log: LogEntry | None
    release: ReleaseCmd | None
    err: ErrorReport | None
    error: bool
    lost: bool


# ------------------------------------------------------------------ the model

class _Fifo:
    def __init__(self, depth):
        self.depth = depth
        self.q = deque()

    def room(self):
        return len(self.q) < self.depth


class _Pass:
    __slots__ = ("stream", "packet", "seq", "outcome", "code", "detail", "cands", "need",
                 "pos", "req", "refused", "locs", "rec", "vrecs", "tri")

    def __init__(self, stream, packet, seq):
        self.stream, self.packet, self.seq = stream, packet, seq
        self.outcome = None      # None (allocate), "error", "close", "wait"
        self.code, self.detail = Err.NONE, 0
        self.cands, self.need, self.pos = (), (1, 1), 0
        self.req = None          # (index in cands, eu, AllocRequest)
        self.refused = 0
        self.locs = ()           # triangle: Loc per vertex
        self.rec = None          # VDT record (vertex/patch) or PT record (triangle/pixel)
        self.vrecs = ()          # triangle: distinct VDT records named
        self.tri = None          # pixel: the triangle's Loc


class Spreader:
    """Clock-exact model of the global spreader.

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
        Largest buffer an EU can allocate for one entity (bigger packets are TOO_LARGE),
        1 .. ``min(15, eu_lines)``. Default 8 (the QCC's).
    eu_records : int
        Records (and entity numbers) of an EU, for the status widths and MIN checks,
        1..256. Default 256.
    eu_lines : int
        Cache lines of an EU, 1..65536. Default 256.
    starve_limit : int
        Reset value of the anti-starvation limit, 0..255 (0 = off). Default 8.
    fifo_depth : int
        Depth of the ``move``, ``log``, ``release`` and ``err`` FIFOs, 1..64. Default 4.

    Notes
    -----
    Drive it with :meth:`cycle` (one clock) or :meth:`run` (a closed loop with EU
    models and a :class:`Feeder`). State is read through :meth:`vdt`, :meth:`pt`,
    :meth:`in_flight`, :meth:`config` and :meth:`check`.
    """

    def __init__(self, n_eus=4, vdt_records=256, pt_records=256, index_bits=16,
                 prid_bits=16, coord_bits=12, max_lines=8, eu_records=256, eu_lines=256,
                 starve_limit=8, fifo_depth=4):
        self.n_eus = _check_int("n_eus", n_eus, 1, MAX_EUS)
        self.vdt_records = _check_pow2("vdt_records", vdt_records, 2, 256)
        self.pt_records = _check_pow2("pt_records", pt_records, 1, 256)
        self._vbits = self.vdt_records.bit_length() - 1
        self._pbits = self.pt_records.bit_length() - 1
        self.index_bits = _check_int("index_bits", index_bits, 3 + self._vbits, 32)
        self.prid_bits = _check_int("prid_bits", prid_bits, max(1, self._pbits), 32)
        self.coord_bits = _check_int("coord_bits", coord_bits, 4, 16)
        self.eu_records = _check_int("eu_records", eu_records, 1, 256)
        self.eu_lines = _check_int("eu_lines", eu_lines, 1, 65536)
        self.max_lines = _check_int("max_lines", max_lines, 1, min(15, self.eu_lines))
        self.starve_limit = _check_int("starve_limit", starve_limit, 0, SAT)
        self.fifo_depth = _check_int("fifo_depth", fifo_depth, 1, 64)
        self.status_widths = (self.eu_records.bit_length(), 9, self.eu_lines.bit_length())
        self.detail_bits = max(self.index_bits, self.prid_bits, 12)
        self.reset()

    # ================================================================ state
    def reset(self):
        """Back to the reset state."""
        n, V, P = self.n_eus, self.vdt_records, self.pt_records
        self._list = [tuple(range(n)) for _ in range(4)]
        self._min = [(1, 1) for _ in range(4)]
        self._limit = self.starve_limit
        self.v_valid = np.zeros(V, bool)
        self.v_tag = np.zeros(V, np.int64)
        self.v_eu = np.zeros(V, np.int64)
        self.v_ent = np.zeros(V, np.int64)
        self.v_count = np.zeros(V, np.int64)
        self.v_half = np.zeros(V, np.int64)
        self.v_patch = np.zeros(V, bool)
        self.v_done = np.zeros(V, bool)
        self.v_closed = np.zeros(V, bool)
        self.v_refs = np.zeros(V, np.int64)
        self.p_valid = np.zeros(P, bool)
        self.p_tag = np.zeros(P, np.int64)
        self.p_eu = np.zeros(P, np.int64)
        self.p_ent = np.zeros(P, np.int64)
        self.p_done = np.zeros(P, bool)
        self.p_closed = np.zeros(P, bool)
        self.p_pix = np.zeros(P, np.int64)
        self.p_vrecs = [()] * P
        self._ift = {}
        self._fifo = {k: _Fifo(self.fifo_depth) for k in ("move", "log", "release", "err")}
        self._seq = [0] * 4
        self._passes = [0] * 4
        self._starve = [0] * 4
        self._pass = None
        self.error = False
        self.lost = False
        self.t = 0

    def config(self):
        """``(lists, minimums, limit)`` now in force."""
        return tuple(self._list), tuple(self._min), self._limit

    def in_flight(self):
        """``{(eu, entity): (etype, record)}`` of the in-flight table."""
        return dict(self._ift)

    def vdt(self, rec):
        """A VDT record as a dict (``valid`` False if free)."""
        return dict(valid=bool(self.v_valid[rec]), tag=int(self.v_tag[rec]),
                    eu=int(self.v_eu[rec]), entity=int(self.v_ent[rec]),
                    count=int(self.v_count[rec]), half=int(self.v_half[rec]),
                    patch=bool(self.v_patch[rec]), done=bool(self.v_done[rec]),
                    closed=bool(self.v_closed[rec]), refs=int(self.v_refs[rec]))

    def pt(self, rec):
        """A primitive table record as a dict (``valid`` False if free)."""
        return dict(valid=bool(self.p_valid[rec]), tag=int(self.p_tag[rec]),
                    eu=int(self.p_eu[rec]), entity=int(self.p_ent[rec]),
                    done=bool(self.p_done[rec]), closed=bool(self.p_closed[rec]),
                    pixels=int(self.p_pix[rec]), vrecs=tuple(self.p_vrecs[rec]))

    def idle(self):
        """No record held, nothing in flight, no pass active, all FIFOs empty."""
        return (not self.v_valid.any() and not self.p_valid.any() and not self._ift
                and self._pass is None and not any(f.q for f in self._fifo.values()))

    def pending(self, port):
        """Entries waiting in an output FIFO (``move``, ``log``, ``release``, ``err``)."""
        return tuple(self._fifo[port].q)

    def check(self):
        """Assert the internal invariants (for tests)."""
        V = self.vdt_records
        for r in range(V):
            if not self.v_valid[r]:
                assert self.v_refs[r] == 0 and not self.v_done[r], f"free VDT {r} dirty"
                continue
            assert self.v_refs[r] >= 0, f"VDT {r}: negative refs"
            if self.v_patch[r]:
                o = (r + 1) % V if self.v_half[r] == 0 else (r - 1) % V
                assert self.v_valid[o] and self.v_patch[o] and self.v_ent[o] == self.v_ent[r]
        for q in range(self.pt_records):
            if self.p_valid[q]:
                assert self.p_pix[q] >= 0, f"PT {q}: negative pixel count"
                for r in self.p_vrecs[q]:
                    if not self.p_done[q]:
                        assert self.v_valid[r] and self.v_refs[r] > 0, f"PT {q}: lost ref {r}"
        refs = np.zeros(V, np.int64)
        for q in range(self.pt_records):
            if self.p_valid[q] and not self.p_done[q]:
                for r in self.p_vrecs[q]:
                    refs[r] += 1
        assert (refs == self.v_refs).all(), "VDT reference counts out of step"
        pix = np.zeros(self.pt_records, np.int64)
        for (eu, ent), (t, rec) in self._ift.items():
            if t == EType.PIXEL:
                pix[rec] += 1
            elif t == EType.TRIANGLE:
                assert self.p_valid[rec] and not self.p_done[rec]
                assert (self.p_eu[rec], self.p_ent[rec]) == (eu, ent)
            else:
                assert self.v_valid[rec] and not self.v_done[rec]
                assert (self.v_eu[rec], self.v_ent[rec]) == (eu, ent)
        assert (pix == self.p_pix).all(), "pixel counts out of step"

    # ================================================================ encoding
    def layout(self, port):
        """``[(field, width), ...]`` of a port's payload, first field in the low bits.

        ``port`` is one of ``i_vtx, i_tri, i_pix, i_pat, cfg, done, status, alloc,
        answer, move, release, log, err``.
        """
        I, R, C, D = self.index_bits, self.prid_bits, self.coord_bits, self.detail_bits
        SR, SE, SL = self.status_widths
        loc = [("eu", EU_W), ("entity", ENTITY_W), ("elem", ELEM_W)]
        lay = {
            "i_vtx": [("base", I), ("count", 4), ("size", SIZE_W), ("noref", 1)],
            "i_tri": [("prid", R), ("i0", I), ("i1", I), ("i2", I), ("size", SIZE_W),
                      ("last", 3)],
            "i_pix": [("prid", R), ("x", C), ("y", C), ("mask", 16), ("last", 1),
                      ("size", SIZE_W)],
            "i_pat": [("base", I), ("size", SIZE_W), ("noref", 1)],
            "cfg": [("op", 2), ("etype", 2), ("count", 5), ("eus", 4 * MAX_EUS),
                    ("records", SR), ("lines", SL), ("limit", 8)],
            "done": [("eu", EU_W), ("entity", ENTITY_W)],
            "status": [("free_records", SR), ("free_entities", SE), ("free_lines", SL)],
            "alloc": [("etype", 2), ("lines", SIZE_W), ("hold", 1), ("seq", SEQ_W)],
            "answer": [("accept", 1), ("entity", ENTITY_W)],
            "move": [("eu", EU_W), ("entity", ENTITY_W), ("etype", 2), ("seq", SEQ_W),
                     ("size", SIZE_W), ("ref", 2), ("index", D), ("count", 5)]
                    + [(f"src{i}_{n}", w) for i in range(3) for n, w in loc]
                    + [("x", C), ("y", C), ("mask", 16)],
            "release": [("eu", EU_W), ("entity", ENTITY_W), ("etype", 2), ("rec", 8)],
            "log": [("kind", 2), ("etype", 2), ("seq", SEQ_W), ("eu", EU_W),
                    ("entity", ENTITY_W), ("ref", 2), ("passes", 8), ("refused", MAX_EUS),
                    ("code", CODE_W)],
            "err": [("code", CODE_W), ("src", 3), ("seq", SEQ_W), ("eu", EU_W), ("detail", D)],
        }
        if port not in lay:
            raise ValueError(f"port must be one of {', '.join(lay)}, not {port!r}")
        return lay[port]

    @staticmethod
    def _fields(port, obj):
        if port == "i_tri":
            d = dict(prid=obj.prid, i0=obj.indices[0], i1=obj.indices[1], i2=obj.indices[2],
                     size=obj.size, last=obj.last)
        elif port == "cfg":
            d = dict(op=obj.op, etype=obj.etype, count=len(obj.eus),
                     eus=sum(e << (4 * i) for i, e in enumerate(obj.eus)),
                     records=obj.records, lines=obj.lines, limit=obj.limit)
        elif port == "move":
            d = {k: getattr(obj, k) for k in ("eu", "entity", "etype", "seq", "size", "ref",
                                              "index", "count", "x", "y", "mask")}
            for i, s in enumerate(obj.src):
                d.update({f"src{i}_eu": s.eu, f"src{i}_entity": s.entity,
                          f"src{i}_elem": s.elem})
        elif isinstance(obj, tuple) and hasattr(obj, "_asdict"):
            d = obj._asdict()
        else:
            d = {k: getattr(obj, k) for k in obj.__dataclass_fields__}
        return {k: int(v) for k, v in d.items()}

    def pack(self, port, obj):
        """The RTL encoding (an int) of a payload record for ``port``."""
        d = self._fields(port, obj)
        word, pos = 0, 0
        for name, width in self.layout(port):
            word |= _field(f"{port}.{name}", d.get(name, 0), width) << pos
            pos += width
        return word

    def unpack(self, port, word):
        """The payload record of ``port`` encoded in ``word``."""
        d, pos = {}, 0
        for name, width in self.layout(port):
            d[name] = (int(word) >> pos) & ((1 << width) - 1)
            pos += width
        if port == "i_vtx":
            return VertexPacket(d["base"], d["count"], d["size"], bool(d["noref"]))
        if port == "i_tri":
            return TrianglePacket(d["prid"], (d["i0"], d["i1"], d["i2"]), d["size"], d["last"])
        if port == "i_pix":
            return PixelPacket(d["prid"], d["x"], d["y"], d["mask"], bool(d["last"]), d["size"])
        if port == "i_pat":
            return PatchPacket(d["base"], d["size"], bool(d["noref"]))
        if port == "cfg":
            return Config(d["op"], d["etype"],
                          tuple((d["eus"] >> (4 * i)) & 15 for i in range(d["count"])),
                          d["records"], d["lines"], d["limit"])
        if port == "move":
            src = tuple(Loc(d.pop(f"src{i}_eu"), d.pop(f"src{i}_entity"), d.pop(f"src{i}_elem"))
                        for i in range(3))
            return MoveCmd(src=src, **d)
        if port == "answer":
            return Answer(bool(d["accept"]), d["entity"])
        cls = dict(done=Done, status=EUStatus, alloc=AllocRequest, release=ReleaseCmd,
                   log=LogEntry, err=ErrorReport)[port]
        return cls(**d)

    def _check_packet(self, s, p):
        if not isinstance(p, PACKET_TYPES[s]):
            raise TypeError(f"heads[{s}] must be a {PACKET_TYPES[s].__name__} or None, "
                            f"not {type(p).__name__!r}")
        self.pack(("i_vtx", "i_tri", "i_pix", "i_pat")[s], p)

    # ================================================================ helpers
    def _vrec(self, index):
        return (index >> 3) & (self.vdt_records - 1)

    def _vtag(self, index):
        return index >> (3 + self._vbits)

    def _prec(self, prid):
        return prid & (self.pt_records - 1)

    def _ptag(self, prid):
        return prid >> self._pbits

    def _vlookup(self, index):
        r = self._vrec(index)
        if (self.v_valid[r] and self.v_tag[r] == self._vtag(index) and not self.v_closed[r]
                and (index & 7) < self.v_count[r]):
            return r
        return None

    def _plookup(self, prid):
        q = self._prec(prid)
        if self.p_valid[q] and self.p_tag[q] == self._ptag(prid) and not self.p_closed[q]:
            return q
        return None

    def need(self, etype, size):
        """``(records, lines)`` an EU must have free for a packet (decision 1)."""
        mr, ml = self._min[etype]
        return max(1, mr), max(ml, size)

    @staticmethod
    def meets(status, need):
        """True when an :class:`EUStatus` meets a ``need`` of :meth:`need`."""
        return (status.free_records >= need[0] and status.free_entities >= 1
                and status.free_lines >= need[1])

    def candidates(self, etype, local=()):
        """The candidate list: the EUs of ``local`` that are in the type's list (in the
        given order), then the rest of the list."""
        lst = self._list[etype]
        first = [e for e in local if e in lst]
        return tuple(first + [e for e in lst if e not in first])

    # ================================================================ pass start
    def _start(self, s, pkt):
        p = _Pass(s, pkt, self._seq[s])
        V = self.vdt_records
        if s == EType.VERTEX:
            if not 1 <= pkt.count <= GROUP or pkt.base & 7:
                return self._bad(p, Err.MALFORMED, 0)
        elif s == EType.PATCH:
            if pkt.base & 7:
                return self._bad(p, Err.MALFORMED, 0)
        elif s == EType.PIXEL:
            if pkt.mask == 0:
                if not pkt.last:
                    return self._bad(p, Err.MALFORMED, 0)
                q = self._plookup(pkt.prid)
                if q is None:
                    return self._bad(p, Err.UNKNOWN_PRID, pkt.prid)
                p.outcome, p.rec = "close", q
                return p
        if pkt.size == 0:
            return self._bad(p, Err.MALFORMED, 0)
        if pkt.size > self.max_lines:
            return self._bad(p, Err.TOO_LARGE, pkt.size)
        if not self._list[s]:
            return self._bad(p, Err.NO_EU, s)
        p.need = self.need(s, pkt.size)
        if s == EType.VERTEX:
            p.rec = self._vrec(pkt.base)
            if self.v_valid[p.rec]:
                p.outcome = "wait"
            p.cands = self.candidates(s)
        elif s == EType.PATCH:
            p.rec = self._vrec(pkt.base)
            if self.v_valid[p.rec] or self.v_valid[(p.rec + 1) % V]:
                p.outcome = "wait"
            p.cands = self.candidates(s)
        elif s == EType.TRIANGLE:
            locs, recs = [], []
            for i in pkt.indices:
                r = self._vlookup(i)
                if r is None:
                    return self._bad(p, Err.UNKNOWN_VERTEX, i)
                locs.append(Loc(int(self.v_eu[r]), int(self.v_ent[r]),
                                int(self.v_half[r]) * 8 + (i & 7)))
                if r not in recs:
                    recs.append(r)
            p.locs, p.vrecs = tuple(locs), tuple(recs)
            p.rec = self._prec(pkt.prid)
            if self.p_valid[p.rec]:
                p.outcome = "wait"
            lst = self._list[s]
            count = {}
            for loc in locs:
                count[loc.eu] = count.get(loc.eu, 0) + 1
            local = sorted((e for e in count if e in lst),
                           key=lambda e: (-count[e], lst.index(e)))
            p.cands = self.candidates(s, local)
        else:
            q = self._plookup(pkt.prid)
            if q is None:
                return self._bad(p, Err.UNKNOWN_PRID, pkt.prid)
            p.rec = q
            p.tri = Loc(int(self.p_eu[q]), int(self.p_ent[q]), 0)
            p.cands = self.candidates(s, (p.tri.eu,))
        return p

    @staticmethod
    def _bad(p, code, detail):
        p.outcome, p.code, p.detail = "error", code, detail
        return p

    def _arbitrate(self, heads):
        valid = [s for s in PRIORITY if heads[s] is not None]
        if not valid:
            return None
        starving = [s for s in valid if self._limit and self._starve[s] >= self._limit]
        win = (starving or valid)[0]
        for s in range(4):
            self._starve[s] = (0 if heads[s] is None or s == win
                               else min(SAT, self._starve[s] + 1))
        return win

    # ================================================================ the clock
    def cycle(self, heads=(None, None, None, None), cfg=None, done=None, status=None,
              respond=None, ready=None):
        """One clock.

        Parameters
        ----------
        heads : sequence of 4 packets or None
            The payload of each input stream (vertex, triangle, pixel, patch) whose
            ``valid`` is high in this clock, else None. While a packet is not taken it
            must stay the same (stream rule).
        cfg : Config or None
            The word on ``cfg`` this clock (``ready`` is 1: it is taken).
        done : Done or tuple or None
            The completion on ``done`` this clock (taken).
        status : sequence of EUStatus, optional
            ``status[e]`` this clock; default every EU empty (full capacity).
        respond : callable, Answer, tuple or None
            The answer of the EU the model requests this clock: ``respond(eu, request)``
            returning None (``ready`` low: no answer this clock) or an :class:`Answer` /
            ``(accept, entity)``; or that value itself. Called only when a request is
            driven.
        ready : sequence of 4 bool or dict, optional
            ``ready`` of ``move``, ``log``, ``release``, ``err`` this clock (default all 1).

        Returns
        -------
        CycleResult
        """
        heads = tuple(heads)
        if len(heads) != 4:
            raise ValueError(f"heads must hold 4 entries, not {len(heads)}")
        for s, h in enumerate(heads):
            if h is not None:
                self._check_packet(s, h)
        if cfg is not None and not isinstance(cfg, Config):
            raise TypeError(f"cfg must be a Config or None, not {type(cfg).__name__!r}")
        if cfg is not None:
            self.pack("cfg", cfg)
        if done is not None:
            done = Done(_field("done.eu", done[0], EU_W), _field("done.entity", done[1], ENTITY_W))
        if status is None:
            status = [EUStatus(self.eu_records, ENTITIES, self.eu_lines)] * self.n_eus
        status = [EUStatus(*st) for st in status]
        if len(status) != self.n_eus:
            raise ValueError(f"status must hold {self.n_eus} entries, not {len(status)}")
        if ready is None:
            ready = dict(move=True, log=True, release=True, err=True)
        elif not isinstance(ready, dict):
            ready = dict(zip(("move", "log", "release", "err"), ready))
        p = self._pass
        if p is not None and heads[p.stream] != p.packet:
            raise ValueError(f"stream {p.stream} changed its head while not taken")

        # -- outputs: FIFO heads transferred this clock (popped at the edge)
        out = {k: (f.q[0] if f.q and ready.get(k, True) else None)
               for k, f in self._fifo.items()}
        errors = []            # (ErrorReport) in precedence order
        writes = []            # callables applied at the edge, in order
        consumed, request, answer, started = None, None, None, False

        # -- allocator
        if p is None and self._fifo["log"].room() and self._fifo["move"].room():
            s = self._arbitrate(heads)
            if s is not None:
                p = self._pass = self._start(s, heads[s])
                self._passes[s] = min(SAT, self._passes[s] + 1)
                started = True
        if p is not None:
            if p.outcome == "error":
                consumed = p.stream
                errors.append(ErrorReport(p.code, p.stream, p.seq, 0, p.detail))
                writes.append(lambda p=p: self._commit_log(p, Kind.ERROR))
            elif p.outcome == "close":
                consumed = p.stream
                writes.append(lambda p=p: self._commit_close(p))
            elif p.outcome == "wait":
                writes.append(self._end_pass)
            else:
                if p.req is None:
                    for i in range(p.pos, len(p.cands)):
                        e = p.cands[i]
                        if self.meets(status[e], p.need):
                            pkt = p.packet
                            p.req = (i, e, AllocRequest(
                                p.stream, pkt.size, int(p.stream != EType.PIXEL), p.seq))
                            break
                    else:
                        writes.append(self._end_pass)
                if p.req is not None:
                    i, e, req = p.req
                    request = (e, req)
                    ans = respond(e, req) if callable(respond) else respond
                    if ans is not None:
                        ans = Answer(bool(ans[0]), _field("entity", ans[1], ENTITY_W))
                        answer = ans
                        if ans.accept and (e, ans.entity) in self._ift:
                            errors.append(ErrorReport(Err.BAD_ANSWER, Src.ANSWER, p.seq, e,
                                                      ans.entity))
                            ans = Answer(False, 0)
                        if ans.accept:
                            consumed = p.stream
                            writes.append(lambda p=p, e=e, n=ans.entity: self._commit(p, e, n))
                        else:
                            p.refused |= 1 << e
                            p.pos, p.req = i + 1, None

        # -- completion (reads S_t)
        if done is not None:
            key = (done.eu, done.entity)
            if done.eu >= self.n_eus or key not in self._ift:
                errors.append(ErrorReport(Err.UNKNOWN_DONE, Src.DONE, 0, done.eu, done.entity))
            else:
                writes.append(lambda key=key: self._complete(key))

        # -- release engine (reads S_t)
        rel = None
        if self._fifo["release"].room():
            rel = self._pick_release()
            if rel is not None:
                writes.append(lambda rel=rel: self._release(rel))

        # -- configuration
        if cfg is not None:
            code = self._check_config(cfg)
            if code == Err.BAD_CONFIG:
                errors.append(ErrorReport(Err.BAD_CONFIG, Src.CONFIG, 0, 0, cfg.op))
            else:
                if code == Err.NO_EU:
                    errors.append(ErrorReport(Err.NO_EU, Src.CONFIG, 0, 0, cfg.etype))
                writes.append(lambda cfg=cfg: self._apply_config(cfg))

        # -- the edge
        res = CycleResult(consumed, request, answer, started, out["move"], out["log"],
                          out["release"], out["err"], self.error, self.lost)
        err_room = self._fifo["err"].room()         # a free entry in S_t (rule 8)
        for k, f in self._fifo.items():
            if out[k] is not None:
                f.q.popleft()
        for w in writes:
            w()
        if errors:
            self.error = True
            if err_room:
                self._fifo["err"].q.append(errors[0])
                errors = errors[1:]
            if errors:
                self.lost = True
        self.t += 1
        return res

    def _check_config(self, cfg):
        if cfg.op == CfgOp.LIST:
            if (len(cfg.eus) > self.n_eus or any(e >= self.n_eus for e in cfg.eus)
                    or len(set(cfg.eus)) != len(cfg.eus)):
                return Err.BAD_CONFIG
            return Err.NO_EU if not cfg.eus else Err.NONE
        if cfg.op == CfgOp.MIN:
            if cfg.records > self.eu_records or cfg.lines > self.eu_lines:
                return Err.BAD_CONFIG
            return Err.NONE
        if cfg.op == CfgOp.STARVE:
            return Err.NONE
        return Err.BAD_CONFIG

    def _apply_config(self, cfg):
        if cfg.op == CfgOp.LIST:
            self._list[cfg.etype] = tuple(cfg.eus)
        elif cfg.op == CfgOp.MIN:
            self._min[cfg.etype] = (cfg.records, cfg.lines)
        else:
            self._limit = cfg.limit

    # ================================================================ edge writes
    def _end_pass(self):
        self._pass = None

    def _consume(self, p, entry):
        self._fifo["log"].q.append(entry)
        self._seq[p.stream] = (self._seq[p.stream] + 1) & 0xFFFF
        self._passes[p.stream] = 0
        self._pass = None

    def _commit_log(self, p, kind):
        self._consume(p, LogEntry(kind, p.stream, p.seq, passes=self._passes[p.stream],
                                  code=p.code))

    def _commit_close(self, p):
        q = p.rec
        self.p_closed[q] = True
        self._consume(p, LogEntry(Kind.CLOSE, p.stream, p.seq, int(self.p_eu[q]),
                                  int(self.p_ent[q]), passes=self._passes[p.stream]))

    def _commit(self, p, e, ent):
        pkt, s, V = p.packet, p.stream, self.vdt_records
        ref, index, count, src, xy = Ref.NONE, 0, 0, NO_SRC, (0, 0, 0)
        if s in (EType.VERTEX, EType.PATCH):
            recs = [p.rec] if s == EType.VERTEX else [p.rec, (p.rec + 1) % V]
            for h, r in enumerate(recs):
                g = (pkt.base >> 3) + h
                self.v_valid[r], self.v_tag[r] = True, g >> self._vbits
                self.v_eu[r], self.v_ent[r] = e, ent
                self.v_count[r] = pkt.count if s == EType.VERTEX else GROUP
                self.v_half[r], self.v_patch[r] = h, s == EType.PATCH
                self.v_done[r], self.v_closed[r], self.v_refs[r] = False, pkt.noref, 0
            index = pkt.base
            count = pkt.count if s == EType.VERTEX else PATCH_POINTS
        elif s == EType.TRIANGLE:
            q = p.rec
            self.p_valid[q], self.p_tag[q] = True, self._ptag(pkt.prid)
            self.p_eu[q], self.p_ent[q] = e, ent
            self.p_done[q], self.p_closed[q], self.p_pix[q] = False, False, 0
            self.p_vrecs[q] = p.vrecs
            for r in p.vrecs:
                self.v_refs[r] += 1
            for i in range(3):
                if pkt.last >> i & 1:
                    self.v_closed[self._vrec(pkt.indices[i])] = True
            ref = Ref.LOCAL if all(loc.eu == e for loc in p.locs) else Ref.GLOBAL
            index, src = pkt.prid, p.locs
        else:
            q = p.rec
            self.p_pix[q] += 1
            if pkt.last:
                self.p_closed[q] = True
            ref = Ref.LOCAL if p.tri.eu == e else Ref.GLOBAL
            index, src, xy = pkt.prid, (p.tri, Loc(), Loc()), (pkt.x, pkt.y, pkt.mask)
        self._ift[(e, ent)] = (s, p.rec)
        self._fifo["move"].q.append(MoveCmd(e, ent, s, p.seq, pkt.size, ref, index, count,
                                            src, *xy))
        self._consume(p, LogEntry(Kind.ALLOC, s, p.seq, e, ent, ref, self._passes[s],
                                  p.refused))

    def _complete(self, key):
        t, rec = self._ift.pop(key)
        if t == EType.VERTEX:
            self.v_done[rec] = True
        elif t == EType.PATCH:
            self.v_done[rec] = self.v_done[(rec + 1) % self.vdt_records] = True
        elif t == EType.TRIANGLE:
            self.p_done[rec] = True
            for r in self.p_vrecs[rec]:
                self.v_refs[r] -= 1
        else:
            self.p_pix[rec] -= 1

    def _pick_release(self):
        ok = self.v_valid & self.v_done & self.v_closed & (self.v_refs == 0)
        if ok.any():
            partner = np.roll(ok, -1)                     # ok[r + 1]
            cand = ok & (~self.v_patch | ((self.v_half == 0) & partner))
            if cand.any():
                return ("v", int(np.argmax(cand)))
        ok = self.p_valid & self.p_done & self.p_closed & (self.p_pix == 0)
        if ok.any():
            return ("p", int(np.argmax(ok)))
        return None

    def _release(self, rel):
        kind, r = rel
        if kind == "v":
            patch = bool(self.v_patch[r])
            cmd = ReleaseCmd(int(self.v_eu[r]), int(self.v_ent[r]),
                             EType.PATCH if patch else EType.VERTEX, r)
            for x in ([r, (r + 1) % self.vdt_records] if patch else [r]):
                self.v_valid[x] = self.v_done[x] = self.v_closed[x] = self.v_patch[x] = False
                self.v_refs[x] = 0
        else:
            cmd = ReleaseCmd(int(self.p_eu[r]), int(self.p_ent[r]), EType.TRIANGLE, r)
            self.p_valid[r] = self.p_done[r] = self.p_closed[r] = False
            self.p_pix[r] = 0
            self.p_vrecs[r] = ()
        self._fifo["release"].q.append(cmd)

    # ================================================================ closed loop
    def run(self, workload, eus, config=(), ready=None, max_cycles=100_000,
            stall_cycles=None, check=False, cycles=None):
        """Run a workload against EU models until everything is consumed and drained.

        Parameters
        ----------
        workload : Workload or Feeder
            The packets (a :class:`Feeder` gives random input gaps).
        eus : sequence of EU models
            ``n_eus`` objects with the EU model interface (:class:`ScriptedEU`).
        config : iterable of Config or (cycle, Config)
            Words for ``cfg``, one per clock from their cycle on (plain words: from 0).
        ready : callable, optional
            ``ready(t) -> (move, log, release, err)`` back-pressure; default always ready.
        max_cycles : int
            ``RuntimeError`` when not finished by then.
        stall_cycles : int, optional
            ``RuntimeError`` (deadlock) when no packet is consumed for this many clocks
            while one is waiting.
        check : bool
            Call :meth:`check` every clock.
        cycles : int, optional
            Run exactly this many clocks instead (no completion check).

        Returns
        -------
        RunResult
        """
        if len(eus) != self.n_eus:
            raise ValueError(f"eus must hold {self.n_eus} EU models, not {len(eus)}")
        feeder = workload if isinstance(workload, Feeder) else Feeder(workload)
        cfgq = deque(sorted(((c if isinstance(c, tuple) else (0, c)) for c in config),
                            key=lambda x: x[0]))
        merger = DoneMerger(eus)
        r = RunResult(self, feeder.workload)
        start, last_progress = self.t, self.t
        req_open = None
        while True:
            t = self.t
            if cycles is not None:
                if t - start >= cycles:
                    break
            elif feeder.finished() and self.idle() and all(eu.idle() for eu in eus) \
                    and not merger.pending():
                break
            if t - start >= max_cycles:
                raise RuntimeError(f"run did not finish within {max_cycles} cycles")
            if stall_cycles and feeder.waiting() and t - last_progress > stall_cycles:
                raise RuntimeError(f"deadlock: nothing consumed for {stall_cycles} cycles "
                                   f"(cycle {t})")
            heads = feeder.heads(t)
            cfg = cfgq.popleft()[1] if cfgq and cfgq[0][0] <= t else None
            done = merger.take()
            status = [eu.status() for eu in eus]
            rd = ready(t) if ready is not None else None
            res = self.cycle(heads, cfg, done, status, lambda e, q: eus[e].answer(q), rd)
            if res.request is not None:
                e, q = res.request
                if req_open is None:
                    req_open = [t, e, q, tuple(status)]
                if res.answer is not None:
                    r.requests.append(ReqRecord(req_open[0], t, e, q, req_open[3],
                                                res.answer.accept, res.answer.entity))
                    req_open = None
            if res.consumed is not None:
                feeder.ack(res.consumed, t)
                r.consumed.append((t, res.consumed))
                last_progress = t
            if not feeder.waiting():
                last_progress = t
            if done is not None:
                r.completions.append((t, done.eu, done.entity))
            if cfg is not None:
                r.config.append((t, cfg))
            for name in ("move", "log", "release", "err"):
                item = getattr(res, name)
                if item is not None:
                    getattr(r, name).append((t, item))
            if res.move is not None:
                eus[res.move.eu].move(res.move)
            if res.release is not None:
                eus[res.release.eu].release(res.release)
            for eu in eus:
                eu.tick()
            merger.collect()
            if check:
                self.check()
        r.cycles = self.t - start
        r.error, r.lost = self.error, self.lost
        return r


class ReqRecord(NamedTuple):
    """One allocation request: first clock, answer clock, EU, payload, every EU's
    status in the first clock, and the answer."""
    start: int
    end: int
    eu: int
    req: AllocRequest
    status: tuple
    accept: bool
    entity: int


@dataclass
class RunResult:
    """The observations of a run (the same an RTL testbench collects).

    Every list holds ``(cycle, payload)`` transfers in order: ``log``, ``move``,
    ``release``, ``err``; ``consumed`` ``(cycle, stream)``; ``completions``
    ``(cycle, eu, entity)``; ``config`` ``(cycle, Config)``; ``requests``
    :class:`ReqRecord` per answered request.
    """
    spreader: object
    workload: object
    log: list = field(default_factory=list)
    move: list = field(default_factory=list)
    release: list = field(default_factory=list)
    err: list = field(default_factory=list)
    consumed: list = field(default_factory=list)
    completions: list = field(default_factory=list)
    config: list = field(default_factory=list)
    requests: list = field(default_factory=list)
    cycles: int = 0
    error: bool = False
    lost: bool = False

    def entries(self):
        """The log entries without their cycles."""
        return [e for _, e in self.log]


# ------------------------------------------------------------------ EU models

class _EUBase:
    """Interface of an EU model, called by the environment every clock in this order:
    :meth:`status` (its state ``S_t``), :meth:`answer` (only when the spreader drives a
    request to it; None = not answering this clock), :meth:`move` / :meth:`release`
    (commands transferred to it this clock), :meth:`delivered` (its completion taken
    on ``done`` this clock), :meth:`tick` (end of the clock). Finished entities are
    queued in ``completions`` (entity numbers) from the clock after.

    EU-side contract: an entity finishes only after its data-move command arrived; an
    entity number is reused only after its completion was taken on ``done`` (and, when
    held, released).
    """

    def __init__(self, entities=ENTITIES):
        self.entities = _check_int("entities", entities, 1, ENTITIES)
        self.completions = deque()
        self.t = 0
        self.live = {}          # entity -> AllocRequest, allocated and not finished
        self.finished = {}      # entity -> AllocRequest, completion not yet taken
        self.done = set()       # held entities finished, waiting for release
        self.moves, self.releases, self.errors = [], [], []
        self._moved = set()     # live entities whose move command arrived
        self._early = set()     # live entities due to finish, waiting for their move
        self._asked = None      # [first cycle, request, latency]
        self._asked_now = False

    def _free_entity(self):
        for e in range(self.entities):
            if e not in self.live and e not in self.finished and e not in self.done:
                return e
        return None

    def _latency_for(self, req):
        return 0

    def answer(self, req):
        """The answer to ``req`` in this clock, or None (not ready)."""
        if self._asked is None or self._asked[1] != req:
            self._asked = [self.t, req, self._latency_for(req)]
        self._asked_now = True
        if self.t - self._asked[0] < self._asked[2]:
            return None
        self._asked = None
        return self._decide(req)

    def move(self, cmd):
        """A data-move command transferred to this EU."""
        self.moves.append((self.t, cmd))
        if cmd.entity not in self.live or cmd.entity in self._moved:
            self.errors.append((self.t, "move for an entity not allocated", cmd))
            return
        self._moved.add(cmd.entity)
        self._started(cmd.entity)
        if cmd.entity in self._early:
            self._early.discard(cmd.entity)
            self._finish(cmd.entity)

    def _started(self, entity):
        pass

    def release(self, cmd):
        """A release command transferred to this EU."""
        self.releases.append((self.t, cmd))
        if cmd.entity not in self.done:
            self.errors.append((self.t, "release of an entity not finished and held", cmd))
            return
        self.done.discard(cmd.entity)
        self._freed(cmd.entity, True)

    def delivered(self, entity):
        """Its completion of ``entity`` was taken on ``done`` this clock."""
        req = self.finished.pop(entity)
        if req.hold:
            self.done.add(entity)
        else:
            self._freed(entity, False)

    def _freed(self, entity, held):
        pass

    def _finish(self, entity):
        if entity not in self._moved:
            self._early.add(entity)
            return False
        self._moved.discard(entity)
        self.finished[entity] = self.live.pop(entity)
        self.completions.append(entity)
        return True

    def tick(self):
        """End of the clock."""
        if not self._asked_now:
            self._asked = None
        self._asked_now = False
        self.t += 1

    def idle(self):
        """Nothing allocated, held or waiting to be reported."""
        return not self.live and not self.finished and not self.done


class ScriptedEU(_EUBase):
    """An EU whose answers, latencies and status are scripted.

    Parameters
    ----------
    answers : iterable of bool or callable, optional
        Accept (True) / refuse (False) per request answered, in order; when exhausted
        every request is accepted. A callable ``answers(req, t) -> bool`` decides each.
    latency : int, iterable of int or callable
        Clocks N between a request's first clock and its answer (0 = same clock): one
        value, one per request, or ``latency(req) -> int``.
    status : EUStatus, tuple or list of (cycle, EUStatus)
        The status it reports: fixed, or changing at scripted cycles only. Default 256
        records and entities, 256 lines.
    done_after : int, iterable, callable or None
        Clocks from acceptance to completion (>= 1; later if its data-move command has
        not arrived by then), or None: only :meth:`complete` finishes an entity.
    entities : int
        Entity numbers, 1..256 (the lowest free one is given; a refusal is forced when
        none is free).
    """

    def __init__(self, answers=None, latency=0, status=None, done_after=1, entities=ENTITIES):
        super().__init__(entities)
        self._answers = answers if callable(answers) else iter(answers or ())
        self._lat = self._source("latency", latency)
        self._done = None if done_after is None else self._source("done_after", done_after, 1)
        if status is None:
            status = EUStatus(ENTITIES, ENTITIES, 256)
        if isinstance(status, list):
            self._status = sorted((int(c), EUStatus(*s)) for c, s in status)
        else:
            self._status = [(0, EUStatus(*status))]
        self._due = []
        self.accepted = []      # (cycle, entity, request)

    @staticmethod
    def _source(name, value, lo=0):
        if callable(value):
            return value
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            v = _check_int(name, value, lo, 1 << 30)
            return lambda req: v
        it = iter(value)

        def nxt(req):
            try:
                return _check_int(name, next(it), lo, 1 << 30)
            except StopIteration:
                raise ValueError(f"{name} sequence is shorter than the requests") from None
        return nxt

    def status(self):
        """The scripted status in force now."""
        cur = self._status[0][1]
        for c, s in self._status:
            if c <= self.t:
                cur = s
        return cur

    def _latency_for(self, req):
        return self._lat(req)

    def _decide(self, req):
        if callable(self._answers):
            ok = bool(self._answers(req, self.t))
        else:
            ok = bool(next(self._answers, True))
        ent = self._free_entity() if ok else None
        if ent is None:
            return Answer(False, 0)
        self.live[ent] = req
        self.accepted.append((self.t, ent, req))
        if self._done is not None:
            heapq.heappush(self._due, (self.t + self._done(req), ent))
        return Answer(True, ent)

    def complete(self, entity):
        """Finish ``entity`` at the end of this clock."""
        heapq.heappush(self._due, (self.t, entity))

    def tick(self):
        while self._due and self._due[0][0] <= self.t:
            _, ent = heapq.heappop(self._due)
            if ent in self.live:
                self._finish(ent)
        super().tick()


class RandomEU(_EUBase):
    """A free-running EU with random latencies and real resource accounting.

    Parameters
    ----------
    rng : numpy.random.Generator or int
        Random source (or seed).
    records, entities, lines : int
        Capacity; an entity takes one record and ``req.lines`` lines until it finishes
        (not held) or is released (held).
    latency : (int, int)
        Inclusive range of the answer delay N.
    refuse : float
        Probability of refusing a request it has room for (a stale-status race).
    work : (int, int)
        Inclusive range of clocks from the data-move command to completion.
    stall : float
        Probability per clock that finished entities are held back (long busy spells).
    """

    def __init__(self, rng, records=16, entities=16, lines=64, latency=(0, 0), refuse=0.0,
                 work=(1, 20), stall=0.0):
        super().__init__(entities)
        self.rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        self.records = _check_int("records", records, 1, 256)
        self.lines = _check_int("lines", lines, 1, 65536)
        self.latency, self.refuse, self.work, self.stall = latency, refuse, work, stall
        self.free_records, self.free_lines = self.records, self.lines
        self._due = []
        self._size = {}

    def status(self):
        used = len(self.live) + len(self.finished) + len(self.done)
        return EUStatus(self.free_records, self.entities - used, self.free_lines)

    def _latency_for(self, req):
        return int(self.rng.integers(self.latency[0], self.latency[1] + 1))

    def _decide(self, req):
        ent = self._free_entity()
        if (ent is None or self.free_records < 1 or self.free_lines < req.lines
                or self.rng.random() < self.refuse):
            return Answer(False, 0)
        self.free_records -= 1
        self.free_lines -= req.lines
        self._size[ent] = req.lines
        self.live[ent] = req
        return Answer(True, ent)

    def _started(self, entity):
        heapq.heappush(self._due, (self.t + int(self.rng.integers(self.work[0],
                                                                   self.work[1] + 1)), entity))

    def _finish(self, entity):
        req = self.live[entity]
        if super()._finish(entity) and not req.hold:   # data no longer needed: free it now
            self.free_records += 1
            self.free_lines += self._size.pop(entity)
        return True

    def _freed(self, entity, held):
        if held:
            self.free_records += 1
            self.free_lines += self._size.pop(entity)

    def tick(self):
        if not (self.stall and self.rng.random() < self.stall):
            while self._due and self._due[0][0] <= self.t:
                _, ent = heapq.heappop(self._due)
                self._finish(ent)
        super().tick()


class QCCEU(_EUBase):
    """A :class:`golden.qcc.QCCModel` acting as an EU.

    The allocation request becomes the QCC's ALLOC (etype, lines) in the clock it is
    presented (the QCC decides from its state ``S_t``, so N = 0), unless a RELEASE is
    waiting: the ``cmd`` port then carries the RELEASE first and the request is
    answered a clock later. Every entity is allocated with ``hold`` so that its number
    stays in use until the spreader has taken its completion; the adapter itself
    releases the ones the spreader did not ask to hold. Stage issues are completed by
    processors with random latencies; an entity is complete when it reaches
    ``DONE_STAGE``. ``status`` is the QCC's, with its longest run of contiguous free
    lines (``free_run``) as ``free_lines``: a minimum check that passes means the ALLOC
    finds its lines.

    Parameters
    ----------
    qcc : golden.qcc.QCCModel
        The controller (fresh).
    rng : numpy.random.Generator or int
        Random source for the processor latencies.
    work : (int, int)
        Inclusive range of clocks from an issue to its completion.
    """

    def __init__(self, qcc, rng, work=(1, 4)):
        from golden import qcc as _q
        super().__init__(qcc.entities)
        self._q = _q
        self.qcc = qcc
        self.rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        self.work = work
        self._rel = deque()
        self._pending = {0: [], 1: []}
        self._seq = 0
        self._ran = False
        self.responses = []

    def status(self):
        st = self.qcc.status()       # free lines as the longest contiguous run (first fit)
        return EUStatus(st.free_records, st.free_entities, st.free_run)

    def _clock(self, cmd):
        q = self._q
        done = {}
        for k, heap in self._pending.items():
            if heap and heap[0][0] <= self.qcc.t:
                done[k] = heapq.heappop(heap)[2]
        res = self.qcc.cycle(cmd=cmd, ncompl=done[0][0] if 0 in done else None,
                             mcompl=done[1][0] if 1 in done else None)
        for iss in res.issues:
            lat = int(self.rng.integers(self.work[0], self.work[1] + 1))
            heapq.heappush(self._pending[int(iss.kind)],
                           (self.qcc.t - 1 + lat, self._seq, (iss.record, iss.entity)))
            self._seq += 1
        for _, ent in done.values():
            info = self.qcc.entity_info(ent)
            if ent in self.live and info is not None and info[0]["stage"] == q.DONE_STAGE:
                self._finish(ent)
        if cmd is not None:
            self.responses.append((self.t, cmd, res.resp))
            if res.resp.error:
                self.errors.append((self.t, "QCC refused a command as bad input", cmd, res.resp))
        self._ran = True
        return res

    def answer(self, req):
        if self._rel and not self._ran:
            self._clock(self._q.Command.release(self._rel.popleft()))
            self._asked_now = True
            return None
        return super().answer(req)

    def _decide(self, req):
        res = self._clock(self._q.Command.alloc(req.etype, req.lines, True))
        if not res.resp.ok:
            return Answer(False, 0)
        self.live[res.resp.entity] = req
        return Answer(True, res.resp.entity)

    def _freed(self, entity, held):
        self._rel.append(entity)

    def tick(self):
        if not self._ran:
            self._clock(self._q.Command.release(self._rel.popleft()) if self._rel else None)
        self._ran = False
        super().tick()

    def idle(self):
        return super().idle() and not self._rel and self.qcc.idle()


class DoneMerger:
    """Merges the EUs' completions onto the single ``done`` stream, one per clock:
    the lowest-numbered EU with a queued completion first.

    Parameters
    ----------
    eus : sequence of EU models
    """

    def __init__(self, eus):
        self.eus = eus
        self._ready = [deque() for _ in eus]
        self._taken = None

    def take(self):
        """The completion driven on ``done`` this clock (it is taken), or None."""
        for e, q in enumerate(self._ready):
            if q:
                self._taken = Done(e, q.popleft())
                return self._taken
        return None

    def collect(self):
        """End of a clock, after the EUs' ``tick``: tell the EU whose completion was
        taken, and queue the completions the EUs produced."""
        if self._taken is not None:
            self.eus[self._taken.eu].delivered(self._taken.entity)
            self._taken = None
        for e, eu in enumerate(self.eus):
            while eu.completions:
                self._ready[e].append(eu.completions.popleft())

    def pending(self):
        """True when a completion waits."""
        return any(self._ready)


# ------------------------------------------------------------------ stimulus

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
    rng = np.random.default_rng(_check_int("seed", seed, 0, 2**63 - 1))
    n_triangles = _check_int("n_triangles", n_triangles, 0, 1 << 16)
    cols = _check_int("cols", cols, 1, 1 << 10)
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


# ------------------------------------------------------------------ scoreboard

@dataclass
class Stats:
    """Figures of a checked run.

    Attributes
    ----------
    cycles, allocations, closes, errors : int
    per_eu : list of int
        Allocations per EU (the load balance).
    local, global_, preferred_taken, preferred_room : int
        Triangle/pixel allocations by reference kind; allocations whose preferred
        (first locality) EU was asked first in their final pass, and how many of those
        had room.
    refusals, requests, failed_passes : int
    alloc_cycles : int
        Clocks from the first request to the last answer of each allocation, summed
        (one per allocation when every first candidate accepts at N = 0).
    """
    cycles: int = 0
    allocations: int = 0
    closes: int = 0
    errors: int = 0
    per_eu: list = field(default_factory=list)
    local: int = 0
    global_: int = 0
    preferred_taken: int = 0
    preferred_room: int = 0
    refusals: int = 0
    requests: int = 0
    failed_passes: int = 0
    alloc_cycles: int = 0

    @property
    def allocations_per_clock(self):
        """Allocations divided by the clocks spent requesting them."""
        return self.allocations / self.alloc_cycles if self.alloc_cycles else 0.0


class Scoreboard:
    """Invariant checker for a spreader run, the model's or the RTL's.

    It needs only what a testbench observes: the packets (the workload), the
    configuration words with their clocks, and a :class:`RunResult` with the transfers
    on ``log``, ``move``, ``release``, ``err``, ``done`` and the allocation requests
    (:class:`ReqRecord`: EU, payload, every EU's status in the request's first clock,
    answer). :meth:`check` raises ``AssertionError`` naming the first broken rule:

    * every packet consumed exactly once, in stream order, as ALLOC (good packets),
      CLOSE (end markers) or ERROR with the expected code; an error report for each
      ERROR unless ``lost``;
    * each allocation accepted by exactly one request, to an EU whose status met the
      minimum when asked; requests in candidate-list order (each goes to the first
      candidate after the previous request's that meets the minimum in its first
      clock; going back up the list, or a request that does not start in the clock
      after the previous answer, starts a new pass), so locality is honoured
      whenever the preferred EU had room; the list is rebuilt from the configuration
      words and the log's own vertex and triangle allocations;
    * a move command per allocation with the right fields (the vertex / triangle
      addresses, local or global);
    * per ``(eu, entity)``: a completion after each allocation and before its reuse;
      releases only of held entities (vertex, patch, triangle), exactly once, after
      their completion, after the packet that closed them and after every triangle
      (pixel packet) that used them completed.

    Parameters
    ----------
    spreader : Spreader
        A model with the RTL's parameters (reset configuration, minimum rule).
    workload : Workload
    """

    def __init__(self, spreader, workload):
        self.sp = spreader
        self.workload = workload

    def check(self, result, complete=True):
        """Check a run; returns :class:`Stats`.

        Parameters
        ----------
        result : RunResult
        complete : bool
            Also require that every packet was consumed, every allocation completed and
            every held one released (a drained run).
        """
        sp, wl = self.sp, self.workload
        n = sp.n_eus
        st = Stats(cycles=result.cycles, per_eu=[0] * n)
        lists = [tuple(range(n)) for _ in range(4)]
        mins = [(1, 1)] * 4
        cfgs = deque(result.config)
        reqs = {}
        for rq in result.requests:
            reqs.setdefault((rq.req.etype, rq.req.seq), []).append(rq)
        moves = deque(result.move)
        errs = deque(e for _, e in result.err if e.src < 4)
        seqs = [0] * 4
        groups, prims = {}, {}
        allocs, closes = [], []

        def apply_cfg(upto):
            while cfgs and cfgs[0][0] < upto:
                _, c = cfgs.popleft()
                if sp._check_config(c) == Err.BAD_CONFIG:
                    continue
                if c.op == CfgOp.LIST:
                    lists[c.etype] = tuple(c.eus)
                elif c.op == CfgOp.MIN:
                    mins[c.etype] = (c.records, c.lines)

        assert len(result.log) <= len(result.consumed), "log entries without a consumed packet"
        for (t, sc), (_, e) in zip(result.consumed, result.log):
            s = e.etype
            assert s == sc, f"log entry {e} for a packet consumed on stream {sc} at {t}"
            items = wl.streams[s]
            assert seqs[s] < len(items), f"log at {t}: stream {s} consumed more than was sent"
            assert e.seq == seqs[s] & 0xFFFF, \
                f"log at {t}: stream {s} seq {e.seq}, expected {seqs[s] & 0xFFFF}"
            it = items[seqs[s]]
            seqs[s] += 1
            pkt = it.packet
            if it.expect is not None:
                assert e.kind == Kind.ERROR and e.code == it.expect, \
                    f"log at {t}: {pkt} must be refused with {Err(it.expect).name}, got {e}"
            if e.kind == Kind.ERROR:
                st.errors += 1
                assert it.expect is not None, f"log at {t}: good packet {pkt} refused: {e}"
                if not result.lost:
                    assert errs, f"log at {t}: no error report for {e}"
                    rep = errs.popleft()
                    assert (rep.code, rep.src, rep.seq) == (e.code, s, e.seq), \
                        f"error report {rep} does not match {e}"
                continue
            if e.kind == Kind.CLOSE:
                st.closes += 1
                assert s == EType.PIXEL and pkt.is_end, f"log at {t}: CLOSE of {pkt}"
                pr = prims.get(pkt.prid)
                assert pr is not None and not pr["closed"], \
                    f"log at {t}: end marker of a primitive not open: {pkt}"
                assert (e.eu, e.entity) == (pr["eu"], pr["entity"]), f"log at {t}: {e}"
                pr["closed"] = True
                closes.append((t, pkt))
                continue
            assert e.kind == Kind.ALLOC, f"log at {t}: unknown kind {e.kind}"
            assert 0 <= e.eu < n, f"log at {t}: EU {e.eu}"
            allocs.append((t, e, pkt))
            st.allocations += 1
            st.per_eu[e.eu] += 1
            rq = reqs.get((s, e.seq), [])
            assert rq and rq[-1].accept and (rq[-1].eu, rq[-1].entity, rq[-1].end) == \
                (e.eu, e.entity, t), f"log at {t}: {e} has no matching accepted request"
            assert not any(r.accept for r in rq[:-1]), f"log at {t}: {e} accepted twice"
            apply_cfg(rq[0].start)          # words taken before the pass started
            if s == EType.TRIANGLE:
                locs = []
                for i in pkt.indices:
                    g = groups.get(i >> 3)
                    assert g is not None and (i & 7) < g["count"] and not g["closed"], \
                        f"log at {t}: triangle names vertex {i} not in flight"
                    locs.append(Loc(g["eu"], g["entity"], g["half"] * 8 + (i & 7)))
                cnt = {}
                for loc in locs:
                    cnt[loc.eu] = cnt.get(loc.eu, 0) + 1
            elif s == EType.PIXEL:
                pr = prims.get(pkt.prid)
                assert pr is not None and not pr["closed"], \
                    f"log at {t}: pixel packet of a primitive not open: {pkt}"
                locs = [Loc(pr["eu"], pr["entity"], 0)]
            else:
                locs = []

            def candidates():
                """The preferred (local) EUs and the candidate list under the
                configuration now in force."""
                lst = lists[s]
                if s == EType.TRIANGLE:
                    local = sorted((x for x in cnt if x in lst),
                                   key=lambda x: (-cnt[x], lst.index(x)))
                elif s == EType.PIXEL:
                    local = [pr["eu"]]
                else:
                    local = []
                first = [x for x in local if x in lst]
                return first, first + [x for x in lst if x not in first]

            pos, refused, k = 0, set(), 0
            for j, r in enumerate(rq):
                # A pass keeps the candidate list and minimum it started with (configuration
                # words taken meanwhile count from the next pass). A new pass: the first
                # request, one not in the clock after the previous answer (a refusal is
                # followed by the next request in the very next clock unless the pass
                # ends), or one that goes back up (or off) the pass's list.
                new = j == 0 or r.start > rq[j - 1].end + 1
                if not new:
                    new = r.eu not in cands or cands.index(r.eu) < pos
                if new:
                    apply_cfg(r.start)
                    nd = (max(1, mins[s][0]), max(mins[s][1], pkt.size))
                    first, cands = candidates()
                    pos, refused, k = 0, set(), j
                assert r.eu in cands, f"log at {t}: request to EU {r.eu}, not in {cands}"
                i = cands.index(r.eu)
                for c in cands[pos:i]:
                    assert not sp.meets(EUStatus(*r.status[c]), nd), \
                        (f"log at {t}: EU {r.eu} asked at {r.start} while the earlier "
                         f"candidate EU {c} met the minimum {nd}")
                assert sp.meets(EUStatus(*r.status[r.eu]), nd), \
                    f"log at {t}: EU {r.eu} asked at {r.start} without the minimum {nd}"
                assert r.eu not in refused, f"log at {t}: EU {r.eu} asked twice in a pass"
                st.requests += 1
                if not r.accept:
                    st.refusals += 1
                    refused.add(r.eu)
                pos = i + 1
            st.alloc_cycles += rq[-1].end - rq[k].start + 1
            refused_mask = sum(1 << x for x in refused)
            assert e.refused == refused_mask, \
                f"log at {t}: refused mask {e.refused:#x}, requests say {refused_mask:#x}"
            ref = Ref.NONE
            if s in (EType.TRIANGLE, EType.PIXEL):
                ref = Ref.LOCAL if all(x.eu == e.eu for x in locs) else Ref.GLOBAL
                if ref == Ref.LOCAL:
                    st.local += 1
                else:
                    st.global_ += 1
                if first:
                    st.preferred_taken += rq[k].eu == first[0]
                    if sp.meets(EUStatus(*rq[k].status[first[0]]), nd):
                        st.preferred_room += 1
            assert e.ref == ref, f"log at {t}: ref {e.ref}, expected {ref}"
            assert moves, f"log at {t}: no move command"
            _, mv = moves.popleft()
            assert (mv.eu, mv.entity, mv.etype, mv.seq, mv.size, mv.ref) == \
                (e.eu, e.entity, s, e.seq, pkt.size, ref), f"move {mv} does not match {e}"
            if s == EType.TRIANGLE:
                assert mv.src == tuple(locs) and mv.index == pkt.prid, \
                    f"move {mv}: vertex addresses, expected {tuple(locs)}"
                for i in range(3):
                    if pkt.last >> i & 1:
                        groups[pkt.indices[i] >> 3]["closed"] = True
                prims[pkt.prid] = dict(eu=e.eu, entity=e.entity, closed=False)
            elif s == EType.PIXEL:
                assert (mv.src[0], mv.x, mv.y, mv.mask, mv.index) == \
                    (locs[0], pkt.x, pkt.y, pkt.mask, pkt.prid), f"move {mv} for {pkt}"
                if pkt.last:
                    prims[pkt.prid]["closed"] = True
            else:
                cnt = pkt.count if s == EType.VERTEX else PATCH_POINTS
                assert (mv.index, mv.count) == (pkt.base, cnt), f"move {mv} for {pkt}"
                for h in range(1 if s == EType.VERTEX else 2):
                    groups[(pkt.base >> 3) + h] = dict(
                        eu=e.eu, entity=e.entity, half=h, closed=pkt.noref,
                        count=pkt.count if s == EType.VERTEX else GROUP)
        if complete:
            assert len(result.log) == len(result.consumed), "consumed packets without a log entry"
            assert seqs == [len(x) for x in wl.streams], \
                f"not every packet consumed: {seqs} of {list(wl.counts())}"
            assert not moves, "move commands without an allocation"
        self._check_lifetimes(result, allocs, closes, complete)
        return st

    def _check_lifetimes(self, result, allocs, closes, complete):
        comp, rels = {}, {}
        for t, eu, ent in result.completions:
            comp.setdefault((eu, ent), []).append(t)
        for t, r in result.release:
            rels.setdefault((r.eu, r.entity), []).append((t, r))
        by_key = {}
        for t, e, pkt in allocs:
            by_key.setdefault((e.eu, e.entity), []).append((t, e, pkt))
        life = {}
        for key, lst in by_key.items():
            cs, rs = sorted(comp.pop(key, [])), sorted(rels.pop(key, []))
            for i, (t, e, pkt) in enumerate(lst):
                nxt = lst[i + 1][0] if i + 1 < len(lst) else None
                hold = e.etype != EType.PIXEL
                c = next((x for x in cs if x > t and (nxt is None or x < nxt)), None)
                r = next((x for x in rs if x[0] > t and (nxt is None or x[0] < nxt)), None)
                if nxt is not None:
                    assert c is not None, f"{key} allocated at {t} and again at {nxt} " \
                                          f"without a completion in between"
                    assert r is not None or not hold, \
                        f"{key} allocated at {t} and again at {nxt} without a release"
                if c is not None:
                    cs.remove(c)
                if r is not None:
                    rs.remove(r)
                    assert hold, f"release of pixel entity {key} at {r[0]}"
                    assert r[1].etype == e.etype, f"release {r[1]} of a {EType(e.etype).name}"
                    assert c is not None and c < r[0], \
                        f"release of {key} at {r[0]} before its completion ({c})"
                if complete:
                    assert c is not None, \
                        f"{key} ({EType(e.etype).name} seq {e.seq}) never completed"
                    assert r is not None or not hold, \
                        f"{key} ({EType(e.etype).name} seq {e.seq}) never released"
                life[(key, t)] = (c, r[0] if r else None)
            assert not rs, f"release of {key} at {[x[0] for x in rs]} without an allocation"
        for key, cs in comp.items():
            assert not cs, f"completion of {key} at {cs} without an allocation"
        for key, rs in rels.items():
            assert not rs, f"release of {key} without an allocation"
        groups, prims, objs = {}, {}, []
        events = sorted([(t, 0, e, pkt) for t, e, pkt in allocs]
                        + [(t, 1, None, pkt) for t, pkt in closes], key=lambda x: (x[0], x[1]))
        for t, _, e, pkt in events:
            if e is None:                       # end marker
                prims[pkt.prid]["closed"] = t
                continue
            key = (e.eu, e.entity)
            c, r = life[(key, t)]
            if e.etype in (EType.VERTEX, EType.PATCH):
                o = dict(name=f"group of {pkt}", rel=r, closed=t if pkt.noref else None,
                         users=[])
                objs.append(o)
                for h in range(1 if e.etype == EType.VERTEX else 2):
                    groups[(pkt.base >> 3) + h] = o
            elif e.etype == EType.TRIANGLE:
                for i in range(3):
                    g = groups[pkt.indices[i] >> 3]
                    if not any(u[0] == key for u in g["users"]):
                        g["users"].append((key, c))
                    if pkt.last >> i & 1 and g["closed"] is None:
                        g["closed"] = t
                o = dict(name=f"primitive {pkt.prid}", rel=r, closed=None, users=[])
                objs.append(o)
                prims[pkt.prid] = o
            else:
                prims[pkt.prid]["users"].append((key, c))
                if pkt.last:
                    prims[pkt.prid]["closed"] = t
        for o in objs:
            r = o["rel"]
            if r is None:
                continue
            assert o["closed"] is not None and o["closed"] < r, \
                f"{o['name']} released at {r} before it was closed ({o['closed']})"
            for ukey, uc in o["users"]:
                assert uc is not None and uc < r, \
                    f"{o['name']} released at {r} while its user {ukey} was in flight"
