"""Types of the spreader model: constants, codes (:class:`EType`, :class:`Err`, ...),
parameter checks, packets, configuration words, EU-side and output records, run records."""

import enum
from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

import numpy as np

from golden.params import check_field, check_int, check_pow2


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
        check_field("op", self.op, 2)
        check_field("etype", self.etype, 2)
        check_field("limit", self.limit, 8)
        if len(self.eus) > MAX_EUS:
            raise ValueError(f"eus must hold at most {MAX_EUS} entries, not {len(self.eus)}")
        for e in self.eus:
            check_field("eus entry", e, EU_W)

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


def held_room_minima(max_lines):
    """MIN words that keep held data from taking the room of the packets that free it.

    Held data waits for its consumers: a vertex group (or patch) for the triangles that
    reference it, a triangle for its pixel packets. On EUs whose status is the longest
    run of contiguous free lines (``free_run`` of the QCC), each held level is placed only
    where, after it, a run remains for one packet of every level below it in that chain,
    each at most ``max_lines`` lines and one record: vertex and patch data need a run of
    3 x ``max_lines`` and 3 free records, a triangle 2 x ``max_lines`` and 2, a pixel
    packet (not held) only its own size. So every EU that takes held data keeps room for
    the triangle and the pixel packet that let it go, and pixel packets, which free
    everything above them, always find room once running ones complete. It is the rule
    the spreader's co-simulation soaks run by (no minimum is picked by hand); it does not
    count entity numbers, which the EU's ``free_entities`` check covers one at a time.
    The EUs need at least 3 x ``max_lines`` lines for vertex data to be placed at all.

    Parameters
    ----------
    max_lines : int
        The largest packet size in lines (the spreader's ``max_lines``, 1 to 15).

    Returns
    -------
    list of :class:`Config`
        MIN words for VERTEX, PATCH and TRIANGLE (pixels keep the reset minimum).
    """
    max_lines = check_int("max_lines", max_lines, 1, 15)
    return [Config.minimum(EType.VERTEX, 3, 3 * max_lines),
            Config.minimum(EType.PATCH, 3, 3 * max_lines),
            Config.minimum(EType.TRIANGLE, 2, 2 * max_lines)]


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

    ``taken``: the stream whose packet was taken from its input (its ``ready`` was
    high), else None. ``consumed``: the stream whose packet was consumed (allocated,
    closed or refused: its log entry is written at this clock's edge), else None.
    ``request``: ``(eu, AllocRequest)`` driven on ``alloc[eu]`` this clock, else None;
    ``answer``: the :class:`Answer` if it was taken this clock (a bad answer as a
    refusal). ``started``: a pass was prepared and enters the request stage at this
    clock's edge. ``move``, ``log``, ``release``, ``err``:
    the payload transferred on that output this clock, else None. ``error``/``lost``:
    the sticky flags in this clock (``S_t``). ``inputs``: the streams whose input
    transferred this clock (``valid`` and ``ready``), in stream order: ``(taken,)`` or
    ``()`` without stage L; with it (``input_stage``, decision 11) every stream whose
    packet entered stage L, while ``taken`` is the stream whose packet stage P took
    from stage L.
    """
    taken: int | None
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
    inputs: tuple = ()


class ReqRecord(NamedTuple):
    """One allocation request: first clock, answer clock, EU, payload, every EU's
    status as the request's scan read it in the clock before the first clock (the
    status register, :attr:`Spreader.scan_status`, less the request driven in that
    clock: :meth:`Spreader.debited`), and the answer."""
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
    ``release``, ``err``; ``consumed`` ``(cycle, stream)`` of every packet taken from an
    input (its ``ready`` high: the observable event; the packet is consumed, i.e.
    logged, later); ``completions``
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
