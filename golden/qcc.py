"""Golden model of an execution unit's queue/cache controller (QCC).

Transaction level, cycle-exact in the command/response sense: one call of
:meth:`QCCModel.cycle` is one clock of the RTL and takes the transfers the RTL accepted
on that clock; it returns the responses to them and the issues the stage parser makes
on that clock. Convenience methods (:meth:`QCCModel.allocate`, :meth:`QCCModel.step`,
...) are single cycles with one port active, and :meth:`QCCModel.run` plays a whole
command script against processors modelled as fixed-, scripted- or random-latency,
out-of-order responders. The model never imports ``hw/``.

Spec: ``qcc.md`` (source ``seeds/000_e8967f273ac2673e.txt``, Fig. 3-9). Every decision
the spec leaves open is made below; the RTL (``hw/qcc.py``) implements exactly this.

Structure
---------
* **Entity descriptor table (EDT)**, ``records`` records (default 256), a CAM keyed by
  ``(entity, frame)``. Record fields as in the spec: ``valid, entity (8), frame (4),
  etype (3), stage (4), busy, hold, buf (8)``.
* **Entity numbers** ``0 .. entities-1`` (default 256); a number is in use from its
  ALLOC until the entity is deleted.
* **Address rename table (ART)** over ``lines`` cache lines (default 256): a buffer is
  1..8 contiguous lines, first-fit (lowest start address) in the free-line bitmap
* **Stage parser**: a stage program per entity type, a logical FIFO of record indices
  per (type, stage), two issue ports (NUMERIC, MOVE), two completion ports.

Decisions
---------
1. **Lowest free** records: ALLOC and MAP take the lowest free record index (a simple
   priority encoder). ALLOC takes the entity number free the longest (decision 19).
2. **Physical buffer number = the record index** of the frame's record (one buffer per
   record; the ART is indexed by record). Records and buffers are allocated and freed
   together, so a separate lowest-free buffer pool would give the same numbers.
3. **Types** are 0 vertex, 1 triangle, 2 pixel, 3 patch, 4 state; ``etype`` 5..7 is
   malformed. **Kinds** are NUMERIC = 0, MOVE = 1.
4. **Stages** are numbered 0..n-1 in the program (n = 1..8). ALLOC puts the entity in
   stage 0 (tail of FIFO (type, 0)). An entity that finished its last stage with
   ``hold`` stays allocated with ``stage = 15`` (:data:`DONE_STAGE`) until RELEASE or
   DELETE; without ``hold`` it dies (decision 12) on the clock of its last completion. ``hold``
   is given at ALLOC. Records of frames > 0 copy ``etype`` and ``hold`` of the entity and
   always read ``stage = 0, busy = 0``; only frame-0 records are issued.
5. **Default stage programs** (reset values; descriptor pointer = ``etype << 4 | stage``
   so a pointer names its program and stage in a waveform):

   =========  ===========================================================================
   vertex     MOVE 00 load geometry, NUMERIC 01 transform, MOVE 02 load attributes,
              NUMERIC 03 lighting, NUMERIC 04 post-shading, MOVE 05 write out
   triangle   MOVE 10 receive geometry, NUMERIC 11 back-face cull, MOVE 12 fetch vertex
              data, NUMERIC 13 clip test/split, NUMERIC 14 small-triangle setup,
              MOVE 15 send on
   pixel      NUMERIC 20 interpolation setup, NUMERIC 21 Z interpolation, MOVE 22 receive
              XYZ and mask, NUMERIC 23 texture coordinates, MOVE 24 texture fetch,
              NUMERIC 25 filter/shade, MOVE 26 write out
   patch      MOVE 30 load control points, NUMERIC 31 evaluate/tessellate,
              MOVE 32 write out
   state      MOVE 40 load state
   =========  ===========================================================================

   (patch and state are not sequenced in the seed; these are the shortest useful ones.)
6. **CONFIG** writes a whole program atomically (``nstages`` and 8 ``(kind, desc)``
   entries; entries at index >= ``nstages`` are ignored). It is refused (BUSY) while an
   entity of that type is queued or busy; held (done) entities do not block it.
7. **Issue selection is decided a clock ahead**, per kind k independently. Port k
   keeps one *decision*: the FIFO (type, stage) its next issue comes from, or none.
   In a cycle where port k can take an issue and holds a decision, the decision is
   *carried out*: the head of that FIFO is popped and issued (``busy`` set), or, if the
   head is a tombstone (decision 9), dropped with no issue. In a cycle where port k
   holds no decision or carries its decision out, it *decides* the next one from
   ``S_t`` less the pop of this very cycle: candidate types are those with a non-empty
   FIFO (tombstones count; a stage-0 FIFO also non-empty before the last cycle's
   ALLOC, decision 17) at a stage of kind k; each candidate type offers its
   *latest* such stage (drain before fill); the type is chosen round-robin: with
   ``rr[k]`` the type port k decided on last (reset: 4, so type 0 comes first), the
   first candidate among ``rr[k]+1, rr[k]+2, ... (mod 5)`` wins and ``rr[k]`` becomes
   that type. No candidate leaves ``rr[k]`` unchanged and port k without a decision.
   Stage numbers of different types are never compared (each pipeline is served in
   turn; within a pipeline, drain first). A decided FIFO cannot run empty before the
   decision is carried out: only its own decision pops it and DELETE leaves a
   tombstone. So an entity pushed in cycle t is decided on in t+1 at the earliest,
   issued in t+2 and shown from t+3 (one cycle later after ALLOC into an empty
   stage-0 FIFO, decision 17; a completion pushes a cycle late, decision 16), and an
   always-ready port issues every clock.
8. **Completions** arrive on two ports, ``n_done`` (NUMERIC) and ``m_done`` (MOVE),
   each one record index per clock (so two issues per clock can be sustained). A
   completion clears ``busy`` and moves the entity to its next stage, whose FIFO it
   joins at the tail a cycle later (decision 16), or finishes it (decision 4). Two
   completions of one clock always target different FIFOs (different kinds =>
   different stages of a type), and never the stage-0 FIFO an ALLOC enqueues into, so
   FIFO arrival order is total.
9. **DELETE** of an entity that is queued kills it (decision 12), and its frame-0
   record stays in its FIFO as a *tombstone* (the others keep their order): it is not
   free for ALLOC or MAP (nor counted in ``free_records``) until both its FIFO's
   decision has dropped it (decision 7) and the reaper has freed it, and a cycle more
   (decision 18). DELETE of a busy entity is refused (BUSY), as a completion would come back for a freed record. MAP
   is allowed at any stage (also busy or held).
10. **Resource refusals are not errors**: ALLOC/MAP refused for lack of records, entity
    numbers or lines, and a search miss, do not set the error flag. Precedence of the
    refusal reasons: NO_RECORD, then NO_ENTITY, then NO_LINES (``free_run`` below
    ``lines``, decision 14; enough scattered lines is not enough).
11. **Bad input** (codes >= 8, the code's bit 3 is the error bit): ignored, state
    unchanged, sticky ``error`` set (cleared only by reset). Field values that cannot be
    encoded in a port field are Python errors (ValueError/TypeError), not bad input.
12. **Dead entities are freed by a reaper, one record a clock.** An entity *dies* in
    the cycle of its accepted DELETE or RELEASE or of its last completion without
    ``hold``; from the next cycle it and its records are gone for every request
    (SEARCH misses, MAP/DELETE/RELEASE answer UNKNOWN, TRANSLATE of its buffers and
    completions of its records UNKNOWN), but its records, lines and entity number are
    not free yet (not counted in ``status``, not taken by ALLOC or MAP). The reaper
    frees them: in a cycle where it walks no entity, or walks the last record of one,
    it *picks* the lowest-numbered entity that died before this cycle (by its last
    completion: before the cycle before, decision 15); from the next
    cycle it *walks* one of that entity's records a cycle, in frame order; a record
    walked in cycle t is freed with its lines in cycle t+1 (its lines free from t+2,
    the record from t+3: decision 18), and with the last one the entity number. So an
    entity with n records that dies in cycle t while the reaper is idle is picked in
    t+1, walked in t+2..t+n+1, and its records are free from t+5..t+n+4 (its lines a
    cycle earlier), its number with the last (before this decision all at
    t+1: an ALLOC sees them 3 cycles later at best, more while several die at once).
    The reaper frees one record a cycle, as many as ``cmd`` can allocate (one ALLOC
    or MAP a cycle), so it does not fall behind on average.
13. **``free_run`` is pipelined over** :data:`RUN_DELAY` **(4) cycles, less what was
    taken since.** The longest run of contiguous free lines is a tree over the whole
    free-line bitmap (log2(``lines``) levels of adders and comparators), too deep for
    one clock; the RTL registers it every two levels or so. So ``free_run`` in cycle t
    is ``max(0, run(S_{t-4}) - n)``, with ``run(S)`` the longest free run of state S
    (all lines free before cycle 0) and ``n`` the lines ALLOC and MAP took in cycles
    t-4..t-1. It is never more than the longest free run of ``S_t``: first fit takes
    a buffer's lines from the start of a free run (a lower start would fit
    otherwise), so each ALLOC or MAP of k lines shortens the longest run by at most
    k, and the reaper only adds free lines. So the guarantee holds: with a free
    record and entity number, an ALLOC of ``n`` lines in cycle t finds its lines
    whenever ``free_run >= n`` in cycle t (decision 14 accepts it exactly then). The
    cost: lines the reaper frees count in ``free_run`` 4 cycles after
    they count in ``free_lines``, and a buffer taken from another run than the
    longest one lowers ``free_run`` for 4 cycles. After 4 cycles with nothing taken
    or freed, ``free_run`` is the longest free run exactly.
14. **ALLOC and MAP are accepted on** ``free_run``: with the other checks passed, an
    ALLOC or MAP of ``n`` lines in cycle t is accepted if and only if ``free_run >= n``
    in cycle t (the status of decision 13, shown in that cycle), else NO_LINES; the
    buffer is then placed first fit, which always exists (decision 13: ``free_run``
    is never above the longest free run of ``S_t``). So the RTL's accept reads
    registers only, and the first fit only places the buffer (before, "a fit exists"
    over the free lines was on the path to every record, line and FIFO written by the
    accept, the routed worst path). The cost: while ``free_run`` lags (4 cycles after
    lines were freed, or after a buffer was taken from another run than the longest
    one), an ALLOC that first fit could place is refused (NO_LINES); back-to-back
    ALLOCs that fit in the longest run are not (each lowers ``free_run`` by its own
    lines only). A spreader that checks ``free_run`` sees every refusal coming: a
    passing check means accept, a failing one means refuse. (First tried and reverted
    when the spreader's EU adapter held a request behind a RELEASE uncounted; its
    adapters now count such a request out of the status, README block 2.)
15. **An entity that dies by its last completion reaches the reaper a cycle later.**
    It is gone for every request from the next cycle, as any dead entity (decision 12),
    but the reaper can pick it from the cycle after that: one that dies by a
    completion in cycle t while the reaper is idle is picked in t+2 (t+1 for DELETE or
    RELEASE) and a one-record entity's record, lines and number are free from t+5
    (t+4). So the RTL registers a completion's kill (whether it kills: the busy bit
    picked by the record, its last stage, no ``hold``; and the record's entity) and
    only decodes the entity into its live and dead vectors a clock later: the check and the decoder into those
    vectors were one path, the routed worst path (15.55 ns). Its reads of the live
    vector in that clock are corrected by the registered kills instead. The cost: a
    completion's kill frees its resources one cycle later.
16. **A completion's push reaches its next stage's FIFO a cycle later.** A completion
    accepted in cycle t clears ``busy`` and sets the next ``stage`` at the end of t, as
    before, but its record joins the tail of that stage's FIFO at the end of cycle
    t+1 (in ``S_{t+2}``), so it is decided on in t+2 at the earliest, issued in t+3
    and shown from t+4 (one cycle more per stage). Meanwhile (cycle t+1) the entity
    counts as queued: a DELETE leaves its frame-0 record as a tombstone (pushed as
    such), and CONFIG of its type is refused (BUSY). So the RTL registers the push
    (which FIFO, the record) and moves the FIFO's tail and flags from those registers
    in the next clock: the completion's check (the ``busy`` picked by the record),
    ``advance`` and the FIFO's flags were one path (15.01 ns routed, the worst at one
    seed). Order in a FIFO is kept: every push into a stage > 0 is a completion's, and
    all are a cycle late. The cost: a cycle of latency per stage (the ports' rates
    stand while enough entities are in flight).
17. **A record ALLOC pushes is decided on a cycle later.** The decision of cycle t
    (decision 7) offers a type's stage-0 FIFO only if that FIFO, besides holding a
    record after this cycle's pop, held one after the pop of cycle t-1, before that
    cycle's ALLOC pushed into it. So a record ALLOC pushes in cycle t into an empty
    stage-0 FIFO (or one that cycle's pop empties) is decided on in t+2 at the
    earliest, issued in t+3 and shown from t+4, a cycle later than before; behind
    other records it waits as before. The FIFOs of later stages are offered as before
    (their pushes come a cycle after the completion, decision 16). So the RTL keeps,
    per kind and type, the latest and the second latest waiting stage in registers,
    computed a clock ahead from the FIFOs' next flags less ALLOC's push (which its
    accept decides late in the clock); the decision corrects them only for its own
    FIFO's pop (when that pop empties the latest stage, the second latest is offered)
    before the round robin: a FIFO's flags, the latest waiting stage, the round robin
    and the decision were one path (15.0 ns routed, the worst). Always-ready ports
    still issue every clock from deep FIFOs. The cost: a cycle from ALLOC to the first
    issue when the entity finds its stage-0 FIFO empty.

18. **A record or entity number that becomes free is taken a cycle later.** A record
    the reaper frees (decision 12) or whose tombstone a port drops (decision 9) in
    cycle t, and an entity number the reaper frees in cycle t, are not in use from
    t+1 as before, but free for ALLOC and MAP, and counted in ``free_records`` and
    ``free_entities``, only from t+2 (they *cool* for a cycle: in ``S_{t+1}`` they are
    neither in use nor free). Which record and number an ALLOC or MAP takes is still
    the lowest free one (decision 1; the number: decision 19 since). So the RTL keeps
    the lowest free record and the lowest free entity number in registers, computed a
    clock ahead from the state at
    the start of the clock (every record not in use, less the one taken in this
    clock), and the counts from the registered frees: before, the lowest-free trees
    ran from the records' bits into every table written by the accept (the stage
    table's read, the entity map's write enable: the routed worst path at one seed,
    14.57 ns), and a port's drop of a tombstone ran through its record's picks into
    the count's adder (the worst at the other, 14.95 ns). The cost: a freed record or
    number waits a cycle more before it is taken again (lines are freed as before).

19. **ALLOC takes the entity number free the longest.** The free entity numbers are
    a FIFO: from reset ``0, 1, .., entities-1`` in order, and the reaper appends each
    number it frees (decision 12), which is free from two cycles later (decision 18;
    it is the only one of the list that can cool, the last one). ALLOC takes the
    head, unless it cools (then NO_ENTITY: no other number is free). So the RTL
    keeps the head in a register, the numbers not taken since reset in a counter and
    the reaper's in a LUT-RAM ring, and the next head is the counter or a RAM read
    from a register: before, the lowest free number (decision 1) was a
    register computed a clock ahead by a decoder of the register and a priority tree
    over every number (a 13-LUT4 loop by Yosys's count, with the first fit the
    deepest left). Numbers are reused as late as they can be instead of as early.
20. **CONFIG's check reads the FIFOs of** ``S_t``. A type is in flight for CONFIG
    (decision 6) if a FIFO of it held an entry (a tombstone too) at the start of the
    cycle, a completion's push into it is pending (decision 16) or an entity of it is
    busy; a tombstone a port drops in the same cycle still counts (before, the check
    read the FIFOs after this cycle's pops, as the order *issues, command* says, so a
    CONFIG in the clock of the drop of its type's last tombstone was accepted). The
    RTL's check is a register per type computed a clock ahead from the FIFOs' flags
    after that clock's pops, which cannot see the drop of the clock it is read in;
    an issue's pop makes its entity busy, so only a drop differs. Found when decision
    19's order of entity numbers made a random test reach that corner
    (``tb/test_qcc.py`` at ``SEED=611703378``).

Response codes (:class:`Code`), with the checks of each request in precedence order:

* CONFIG: BAD_ARG (etype > 4, nstages not in 1..8), BUSY (type in flight), OK.
* ALLOC: BAD_ARG (etype > 4, lines not in 1..8), NO_RECORD, NO_ENTITY, NO_LINES, OK.
* MAP: BAD_ARG (lines not in 1..8, frame >= ``frames``), UNKNOWN (entity not in use),
  MAPPED (frame 0, or a frame already mapped), NO_RECORD, NO_LINES, OK.
* SEARCH: OK (hit) or MISS (``hit`` = 0).
* DELETE: UNKNOWN, BUSY (busy, or issued in this very cycle), OK.
* RELEASE: UNKNOWN, NOT_HELD (not finished with ``hold``), OK.
* TRANSLATE: UNKNOWN (buffer >= ``records`` or not in use), RANGE (offset >= the
  buffer's length), OK.
* op 7 on ``cmd``, and every op but SEARCH and TRANSLATE on ``query``: BAD_OP.
* ``n_done``/``m_done``: UNKNOWN (record >= ``records`` or not in use), NOT_BUSY (not
  busy, or busy in a stage of the other kind), OK. Completions have no response
  stream; a rejected one only sets ``error``.

RTL contract (``hw/qcc.py``)
----------------------------
Ports, all ``amaranth.lib.stream`` with ``amaranth.lib.data`` struct payloads (field
order as listed, first field in the low bits); ``A = max(1, ceil(log2(lines)))``:

* ``cmd`` (in), :class:`Command`, 111 bits: ``op 3, etype 3, hold 1, lines 4,
  entity 8, frame 4, buf 8, offset 4, nstages 4, kinds 8`` (bit i = kind of stage i)
  ``, descs 64`` (descriptor i in bits 8i..8i+7). Any op.
* ``resp`` (out), :class:`Response`, 48 + A bits: ``op 3, code 4, entity 8, record 8,
  frame 4, etype 3, stage 4, busy 1, hold 1, buf 8, addr A, lines 4``. One per
  ``cmd`` transfer, in order.
* ``query`` (in, ``cmd`` layout) and ``qresp`` (out, ``resp`` layout): SEARCH and
  TRANSLATE only. Read-only, so that a search and an allocation can both happen every
  clock (spec: one search and one allocation per clock); tie ``query.valid`` low to
  use ``cmd`` alone.
* ``n_issue`` (out, to the thread controller) and ``m_issue`` (out, to the data move
  machine), :class:`Issue` without ``kind``: ``record 8, entity 8, etype 3, stage 4,
  desc 8, buf 8`` (39 bits).
* ``n_done``, ``m_done`` (in): ``record 8``; ``ready`` is constant 1.
* ``status`` (plain outputs): ``free_records``, ``free_entities``, ``free_lines``,
  ``free_run`` (each wide enough for its full count, 9 bits at 256) and the sticky
  ``error``. ``free_run`` is the longest run of contiguous free lines 4 cycles ago
  less the lines taken since (decision 13): with a free record and entity number, an
  ALLOC of ``n`` lines in cycle t is accepted if and only if ``free_run >= n`` in
  cycle t (decision 14; ``free_lines`` alone can pass while first fit fails, which deadlocks a system that
  waits on data holding the scattered lines).

Response fields not listed for an op are 0, and *every* field but ``op`` and ``code``
is 0 when ``code`` is not OK. ALLOC/MAP: ``entity, record, frame, etype, stage (0),
hold, buf, addr`` (first line of the buffer) and ``lines``; SEARCH hit: the record's
fields plus its buffer's ``addr`` and ``lines``; DELETE/RELEASE: ``entity``;
TRANSLATE: ``buf, addr`` (the line), ``lines`` (the buffer's length); CONFIG:
``etype``.

Timing. Cycle t of the model is clock t of the RTL; ``S_t`` is the state after the
rising edge that ends cycle t-1.

* ``cycle(cmd, query, ncompl, mcompl, n_ready, m_ready)`` takes the payloads the RTL
  consumed (``valid & ready``) at the edge ending cycle t, and ``n_ready``/``m_ready``
  = the issue port can load a new issue in cycle t, i.e. ``~valid | ready`` of the
  registered issue output. The RTL carries out a decision in cycle t (decision 7) and
  shows the issue from cycle t+1 until it is taken; the decision itself was made in
  an earlier cycle, from the state of that cycle. Responses to requests consumed in cycle t are
  shown from cycle t+1 (search latency one clock); ``status`` in cycle t shows ``S_t``
  (``free_run``: decision 13).
* Every check and every response of cycle t reads ``S_t``: a SEARCH or TRANSLATE does
  not see this cycle's ALLOC, MAP, DELETE, completion or issue; an entity killed in
  cycle t is gone from t+1 and its records, lines and number are freed by the reaper
  later (decision 12); a record whose tombstone is dropped in cycle t (and already
  reaped) is free from t+2 (decision 18);
  deletions, allocations and completions of cycle t are visible to the decisions of
  cycle t+1, but a completion's push into its next FIFO only to those of t+2
  (decision 16); a completion of a record issued in cycle t is NOT_BUSY (it is not busy in
  ``S_t``).
* The writes of cycle t combine as if applied in the order *issues (carried-out
  decisions, then new decisions), command, completions*. Two observable consequences:
  a DELETE of an entity issued in the same cycle is refused (BUSY); a MAP of an entity
  whose last stage completes (without hold) in the same cycle answers OK but its record
  dies with the entity on the same edge (and is reaped with it).
* The reaper runs at the end of the cycle: it frees the record it walked in the cycle
  before, walks the next, then picks among the entities that died before this cycle
  (by a completion: before the cycle before, decision 15).

Checking the RTL: per clock, collect the payloads transferred on ``cmd``, ``query``,
``n_done`` and ``m_done`` and the ``~valid | ready`` of each issue port, call
:meth:`QCCModel.cycle` with them, and compare ``resp``/``qresp`` (in order per port),
the issues (in order per port, each taken later by the processor) and ``status`` (every
clock) with the model's.

RTL consequences: there are 5 x 8 logical FIFOs over record indices; each is a ring
buffer in a memory with its own length. Per clock: up to two pops (the carried-out
decisions, from FIFOs of different kinds) and up to three pushes into three different
FIFOs (ALLOC into (type, 0), one per completion port into stages >= 1); nothing is
ever removed from the middle of a FIFO (DELETE leaves a tombstone), and the next
issue of a port is known a clock before it is popped, so no path runs from the FIFO
lengths through the round-robin choice to the record table in one clock. The
reaper (decision 12) reads the dead entity's map word (its records by frame) and frees
one record, its range of lines and at the end the entity number per clock, so no
logic compares every record's or line's owner with the entities that die. A
completion on port k is accepted only for a record busy in an issue of kind k, and
neither that record's stage nor its type's program (decision 6) changes while it is
busy: so the RTL keeps "busy" per kind and takes the type, stage and "last stage"
a completion needs from what the issue port wrote at the issue, and it pushes a
stage's FIFO only from the completion port of the previous stage's kind (its entry
known before the completion's check). None of this changes the contract.
"""

import enum
import heapq
import math
from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from golden.params import check_field, check_int

__all__ = [
    "Kind", "EType", "Op", "Code", "Stage", "Command", "Response", "Issue", "Status",
    "CycleResult", "RunResult", "QCCModel", "DEFAULT_PROGRAMS", "DONE_STAGE", "DRAIN",
    "N_TYPES", "MAX_STAGES", "MAX_BUF_LINES", "RUN_DELAY", "addr_width",
]

N_TYPES = 5
MAX_STAGES = 8
MAX_BUF_LINES = 8
DONE_STAGE = 15
#: Cycles ``status.free_run`` lags the state by (decision 13).
RUN_DELAY = 4

# Port field widths (bits).
OP_W, ETYPE_W, ENTITY_W, FRAME_W, LINES_W = 3, 3, 8, 4, 4
BUF_W, OFFSET_W, NSTAGES_W, DESC_W, RECORD_W, STAGE_W, CODE_W = 8, 4, 4, 8, 8, 4, 4


class Kind(enum.IntEnum):
    """Kind of a stage: which processor an issue goes to."""
    NUMERIC = 0
    MOVE = 1


class EType(enum.IntEnum):
    """Entity types (``etype`` 5..7 is malformed)."""
    VERTEX = 0
    TRIANGLE = 1
    PIXEL = 2
    PATCH = 3
    STATE = 4


class Op(enum.IntEnum):
    """Command opcodes (7 is reserved: BAD_OP)."""
    CONFIG = 0
    ALLOC = 1
    MAP = 2
    SEARCH = 3
    DELETE = 4
    RELEASE = 5
    TRANSLATE = 6


class Code(enum.IntEnum):
    """Response codes; codes >= 8 are bad input and set the sticky error flag."""
    OK = 0
    NO_RECORD = 1
    NO_ENTITY = 2
    NO_LINES = 3
    MISS = 4
    BAD_OP = 8
    BAD_ARG = 9
    UNKNOWN = 10
    MAPPED = 11
    BUSY = 12
    NOT_BUSY = 13
    NOT_HELD = 14
    RANGE = 15

    @property
    def is_error(self):
        """True for bad-input codes (bit 3 set)."""
        return self >= 8


class Stage(NamedTuple):
    """One stage of a stage program."""
    kind: int
    desc: int


def _prog(etype, *kinds):
    return tuple(Stage(Kind(k), etype << 4 | i) for i, k in enumerate(kinds))


_N, _M = Kind.NUMERIC, Kind.MOVE
#: Reset stage programs, indexed by entity type (see decision 5).
DEFAULT_PROGRAMS = (
    _prog(EType.VERTEX, _M, _N, _M, _N, _N, _M),
    _prog(EType.TRIANGLE, _M, _N, _M, _N, _N, _M),
    _prog(EType.PIXEL, _N, _N, _M, _N, _M, _N, _M),
    _prog(EType.PATCH, _M, _N, _M),
    _prog(EType.STATE, _M),
)


def addr_width(lines):
    """Width of a cache line address for ``lines`` lines."""
    return max(1, math.ceil(math.log2(lines)))


@dataclass(frozen=True)
class Command:
    """A request on the ``cmd`` or ``query`` port.

    Build one with the class methods (:meth:`config`, :meth:`alloc`, ...). Every field
    is checked against its port width (``ValueError``/``TypeError``); values that fit
    the field but are meaningless (``lines = 0``, ``etype = 7``) are bad input the
    model answers with an error code.

    Attributes
    ----------
    op : int
        Opcode (:class:`Op`), 3 bits; 7 is reserved.
    etype, hold, lines, entity, frame, buf, offset, nstages : int
        Fields as in the RTL layout (3, 1, 4, 8, 4, 8, 4, 4 bits).
    program : tuple of Stage
        Exactly 8 ``(kind, desc)`` entries (CONFIG); padded with ``(NUMERIC, 0)``.
    """
    op: int
    etype: int = 0
    hold: int = 0
    lines: int = 0
    entity: int = 0
    frame: int = 0
    buf: int = 0
    offset: int = 0
    nstages: int = 0
    program: tuple = field(default=())

    def __post_init__(self):
        for name, width in (("op", OP_W), ("etype", ETYPE_W), ("lines", LINES_W),
                            ("entity", ENTITY_W), ("frame", FRAME_W), ("buf", BUF_W),
                            ("offset", OFFSET_W), ("nstages", NSTAGES_W)):
            object.__setattr__(self, name, check_field(name, getattr(self, name), width))
        hold = int(self.hold) if isinstance(self.hold, bool) else self.hold
        object.__setattr__(self, "hold", check_field("hold", hold, 1))
        prog = tuple(self.program)
        if len(prog) > MAX_STAGES:
            raise ValueError(f"program must have at most {MAX_STAGES} stages, not {len(prog)}")
        checked = []
        for i, st in enumerate(prog):
            try:
                kind, desc = st
            except (TypeError, ValueError):
                raise TypeError(f"program[{i}] must be a (kind, desc) pair, not {st!r}") from None
            kind = Kind(check_field(f"program[{i}].kind", kind, 1))
            checked.append(Stage(kind, check_field(f"program[{i}].desc", desc, DESC_W)))
        checked += [Stage(Kind.NUMERIC, 0)] * (MAX_STAGES - len(checked))
        object.__setattr__(self, "program", tuple(checked))

    # -- constructors -------------------------------------------------------------
    @classmethod
    def config(cls, etype, program, nstages=None):
        """CONFIG: write the stage program of ``etype`` (``nstages`` defaults to its length)."""
        program = tuple(program)
        return cls(Op.CONFIG, etype=etype, program=program,
                   nstages=len(program) if nstages is None else nstages)

    @classmethod
    def alloc(cls, etype, lines, hold=False):
        """ALLOC: a new entity of ``etype`` with ``lines`` cache lines for frame 0."""
        return cls(Op.ALLOC, etype=etype, lines=lines, hold=hold)

    @classmethod
    def map(cls, entity, frame, lines):
        """MAP: give ``frame`` of ``entity`` a buffer of ``lines`` lines."""
        return cls(Op.MAP, entity=entity, frame=frame, lines=lines)

    @classmethod
    def search(cls, entity, frame=0):
        """SEARCH the CAM for ``(entity, frame)``."""
        return cls(Op.SEARCH, entity=entity, frame=frame)

    @classmethod
    def delete(cls, entity):
        """DELETE every record and buffer of ``entity``."""
        return cls(Op.DELETE, entity=entity)

    @classmethod
    def release(cls, entity):
        """RELEASE a finished entity kept by ``hold``."""
        return cls(Op.RELEASE, entity=entity)

    @classmethod
    def translate(cls, buf, offset):
        """TRANSLATE line ``offset`` of buffer ``buf`` to a cache line address."""
        return cls(Op.TRANSLATE, buf=buf, offset=offset)

    # -- RTL encoding -------------------------------------------------------------
    @property
    def kinds(self):
        """The ``kinds`` field: bit i is the kind of program stage i."""
        return sum(int(st.kind) << i for i, st in enumerate(self.program))

    @property
    def descs(self):
        """The ``descs`` field: descriptor i in bits 8i..8i+7."""
        return sum(st.desc << (DESC_W * i) for i, st in enumerate(self.program))


@dataclass(frozen=True)
class Response:
    """A response on ``resp`` or ``qresp`` (fields as in the RTL layout).

    Every field but ``op`` and ``code`` is 0 unless ``code`` is OK.
    """
    op: int
    code: Code
    entity: int = 0
    record: int = 0
    frame: int = 0
    etype: int = 0
    stage: int = 0
    busy: int = 0
    hold: int = 0
    buf: int = 0
    addr: int = 0
    lines: int = 0

    @property
    def ok(self):
        """Accepted / hit / translated."""
        return self.code == Code.OK

    @property
    def hit(self):
        """SEARCH hit (same as :attr:`ok`)."""
        return self.code == Code.OK

    @property
    def error(self):
        """Bad input: the command was ignored and the error flag set."""
        return self.code >= 8


class Issue(NamedTuple):
    """An issue to the thread controller (NUMERIC) or data move machine (MOVE)."""
    kind: Kind
    record: int
    entity: int
    etype: int
    stage: int
    desc: int
    buf: int


class Status(NamedTuple):
    """The ``status`` outputs.

    ``free_run`` is the longest run of contiguous free lines :data:`RUN_DELAY` cycles
    ago less the lines ALLOC and MAP took since (decision 13): never more than the
    longest run now, so an ALLOC or MAP of ``n`` lines finds its lines whenever
    ``free_run >= n`` (first fit), which a count of scattered free lines cannot tell;
    it is accepted exactly then (decision 14).
    """
    free_records: int
    free_entities: int
    free_lines: int
    free_run: int
    error: bool


class CycleResult(NamedTuple):
    """What one clock produces.

    ``resp``/``qresp`` answer the ``cmd``/``query`` request of the cycle (None if
    none); ``n_issue``/``m_issue`` are the issues made in the cycle (None if none);
    ``ncode``/``mcode`` tell whether the completion on ``n_done``/``m_done`` was taken
    (OK) or rejected (UNKNOWN, NOT_BUSY), None if there was none.
    """
    resp: Response | None
    qresp: Response | None
    n_issue: Issue | None
    m_issue: Issue | None
    ncode: Code | None
    mcode: Code | None

    @property
    def issues(self):
        """The issues of the cycle, NUMERIC first."""
        return [i for i in (self.n_issue, self.m_issue) if i is not None]


class RunResult(NamedTuple):
    """Result of :meth:`QCCModel.run`.

    ``responses``: ``(cycle, command, response)`` per command; ``issues``:
    ``(cycle, issue)`` in issue order (NUMERIC before MOVE within a cycle);
    ``completions``: ``(cycle, kind, record)``; ``cycles``: clocks run.
    """
    responses: list
    issues: list
    completions: list
    cycles: int


class _Drain:
    def __repr__(self):
        return "DRAIN"


#: Script marker for :meth:`QCCModel.run`: idle until no entity is queued or busy.
DRAIN = _Drain()


class QCCModel:
    """Transaction-level model of the queue/cache controller.

    Parameters
    ----------
    records : int
        EDT records (and physical buffers), 1..256. Default 256.
    entities : int
        Entity numbers, 1..256. Default 256.
    lines : int
        Cache lines, 1..65536. Default 256.
    frames : int
        Logical frames per entity, 1..16 (MAP of a frame >= ``frames`` is BAD_ARG).
        Default 16.
    programs : sequence of sequences of (kind, desc), optional
        Reset stage programs per type (5 entries, each 1..8 stages); default
        :data:`DEFAULT_PROGRAMS`.

    Notes
    -----
    All state is public for reading through :meth:`snapshot`, :meth:`status`,
    :meth:`entity_info` and :meth:`queue`; change it only through the ports.
    """

    def __init__(self, records=256, entities=256, lines=256, frames=16, programs=None):
        self.records = check_int("records", records, 1, 256)
        self.entities = check_int("entities", entities, 1, 256)
        self.lines = check_int("lines", lines, 1, 65536)
        self.frames = check_int("frames", frames, 1, 16)
        if programs is None:
            programs = DEFAULT_PROGRAMS
        programs = list(programs)
        if len(programs) != N_TYPES:
            raise ValueError(f"programs must have {N_TYPES} entries, not {len(programs)}")
        self._prog = []
        for t, p in enumerate(programs):
            p = tuple(p)
            if not 1 <= len(p) <= MAX_STAGES:
                raise ValueError(f"programs[{t}] must have 1..{MAX_STAGES} stages, "
                                 f"not {len(p)}")
            self._prog.append(Command.config(0, p).program[:len(p)])
        self.addr_width = addr_width(self.lines)
        r = self.records
        self._valid = np.zeros(r, bool)
        self._entity = np.zeros(r, np.int32)
        self._frame = np.zeros(r, np.int32)
        self._etype = np.zeros(r, np.int32)
        self._stage = np.zeros(r, np.int32)
        self._busy = np.zeros(r, bool)
        self._hold = np.zeros(r, bool)
        self._base = np.zeros(r, np.int32)      # ART: first line of buffer = record
        self._len = np.zeros(r, np.int32)       # ART: lines of buffer (0 = unused)
        self._line_free = np.ones(self.lines, bool)
        self._ent_free = np.ones(self.entities, bool)
        # The free entity numbers, longest free first (decision 19).
        self._ent_list = deque(range(self.entities))
        self._queued_start = [False] * N_TYPES
        self._queues = [[deque() for _ in range(MAX_STAGES)] for _ in range(N_TYPES)]
        self._tomb = np.zeros(r, bool)          # frame-0 record of a deleted queued entity
        # Completions' pushes (type, stage, record), into their FIFOs a cycle later (16).
        self._pushing = []
        # The reaper (decision 12): records of dead entities wait to be freed, one a clock.
        self._dead = np.zeros(r, bool)          # record of a dead entity, not yet freed
        self._ent_dead = np.zeros(self.entities, bool)   # dead, number not yet free
        self._to_reap = set()                   # dead entities the reaper has not picked
        self._killed = []                       # dead before the cycle ends: to reap
        self._killed_next = []                  # by a completion now: a cycle later (15)
        self._reaping = None                    # (entity, records left, frame order)
        self._walked = None                     # (record, entity, last): freed next cycle
        # Records and entity numbers freed in the last cycle: free a cycle later (18).
        self._cooling = np.zeros(r, bool)
        self._ent_cooling = np.zeros(self.entities, bool)
        # ``free_run`` (decision 13): the longest free run of S_{t-4} .. S_{t-1} and
        # the lines taken in cycles t-4 .. t-1 (all free, nothing taken before cycle 0).
        self._runs = deque([self.lines] * RUN_DELAY, maxlen=RUN_DELAY)
        self._taken = deque([0] * RUN_DELAY, maxlen=RUN_DELAY)
        self._rr = [N_TYPES - 1, N_TYPES - 1]
        self._decision = [None, None]           # per kind: (type, stage) to pop next
        # Per type: its stage-0 FIFO's length after the last cycle's pops, before that
        # cycle's ALLOC (decision 17).
        self._settled = [0] * N_TYPES
        self.error = False
        self.t = 0

    # ================================================================ the clock
    def cycle(self, cmd=None, query=None, ncompl=None, mcompl=None, n_ready=True,
              m_ready=True):
        """One clock.

        Parameters
        ----------
        cmd, query : Command or None
            The request consumed on the ``cmd`` / ``query`` port this clock.
        ncompl, mcompl : int or None
            The record index consumed on ``n_done`` / ``m_done`` this clock.
        n_ready, m_ready : bool
            Whether the NUMERIC / MOVE issue port can take a new issue this clock.

        Returns
        -------
        CycleResult
        """
        for name, c in (("cmd", cmd), ("query", query)):
            if c is not None and not isinstance(c, Command):
                raise TypeError(f"{name} must be a Command or None, not {type(c).__name__!r}")
        for name, rec in (("ncompl", ncompl), ("mcompl", mcompl)):
            if rec is not None:
                check_field(name, rec, RECORD_W)
        run_now = self._longest_free_run()
        unused, ent_unused = self._unused(), self._ent_free.copy()
        # 1. Everything that only reads S_t.
        qresp = self._query(query) if query is not None else None
        ncode = self._check_done(ncompl, Kind.NUMERIC) if ncompl is not None else None
        mcode = self._check_done(mcompl, Kind.MOVE) if mcompl is not None else None
        early = None
        if cmd is not None and cmd.op in (Op.SEARCH, Op.TRANSLATE):
            early = self._query(cmd, port="cmd")
        # (CONFIG's check reads the FIFOs of S_t: decision 20)
        self._queued_start = [any(qs) for qs in self._queues]
        # 2. Issues: carry out the decisions, then decide (S_t less this cycle's pops).
        n_issue, n_dropped = self._carry_out(Kind.NUMERIC, n_ready)
        m_issue, m_dropped = self._carry_out(Kind.MOVE, m_ready)
        settled = [len(qs[0]) for qs in self._queues]
        for k, ready in ((Kind.NUMERIC, n_ready), (Kind.MOVE, m_ready)):
            if ready or self._decision[k] is None:
                self._decide(k)
        self._settled = settled
        # 3. The command (sees the records issued now as busy).
        resp = early if early is not None else (self._command(cmd) if cmd is not None
                                                else None)
        taken = 0
        if resp is not None and resp.ok and cmd.op in (Op.ALLOC, Op.MAP):
            taken = resp.lines
        # 4. Completions (validated on S_t above), after the pushes of the last cycle's
        # (decision 16).
        for t, s, r in self._pushing:
            self._queues[t][s].append(r)
        self._pushing = []
        for code, rec in ((ncode, ncompl), (mcode, mcompl)):
            if code == Code.OK:
                self._complete(rec)
        for r in (n_dropped, m_dropped):      # free for ALLOC and MAP from t+1
            if r is not None:
                self._tomb[r] = False
        self._reap()
        # (decision 18: what became free in this cycle cools in the next)
        self._cooling = self._unused() & ~unused
        self._ent_cooling = self._ent_free & ~ent_unused
        self._runs.append(run_now)
        self._taken.append(taken)
        for c in (ncode, mcode, getattr(resp, "code", None), getattr(qresp, "code", None)):
            if c is not None and c >= 8:
                self.error = True
        self.t += 1
        return CycleResult(resp, qresp, n_issue, m_issue, ncode, mcode)

    # ================================================================ one-port cycles
    def command(self, cmd):
        """One clock with only ``cmd`` active (issue ports not ready); its response."""
        return self.cycle(cmd=cmd, n_ready=False, m_ready=False).resp

    def configure(self, etype, program, nstages=None):
        """CONFIG (one clock, no issue). See :meth:`Command.config`."""
        return self.command(Command.config(etype, program, nstages))

    def allocate(self, etype, lines, hold=False):
        """ALLOC (one clock, no issue). See :meth:`Command.alloc`."""
        return self.command(Command.alloc(etype, lines, hold))

    def map_frame(self, entity, frame, lines):
        """MAP (one clock, no issue). See :meth:`Command.map`."""
        return self.command(Command.map(entity, frame, lines))

    def search(self, entity, frame=0):
        """SEARCH (one clock, no issue). See :meth:`Command.search`."""
        return self.command(Command.search(entity, frame))

    def delete(self, entity):
        """DELETE (one clock, no issue). See :meth:`Command.delete`."""
        return self.command(Command.delete(entity))

    def release(self, entity):
        """RELEASE (one clock, no issue). See :meth:`Command.release`."""
        return self.command(Command.release(entity))

    def translate(self, buf, offset):
        """TRANSLATE (one clock, no issue). See :meth:`Command.translate`."""
        return self.command(Command.translate(buf, offset))

    def complete(self, record, kind=None):
        """One clock with only a completion of ``record``; its code.

        ``kind`` picks the port; by default the kind of the stage the record is busy
        in (NUMERIC if it is not busy).
        """
        if kind is None:
            kind = Kind.NUMERIC
            if 0 <= record < self.records and self._busy[record]:
                kind = self._kind_of(record)
        if Kind(kind) == Kind.NUMERIC:
            return self.cycle(ncompl=record, n_ready=False, m_ready=False).ncode
        return self.cycle(mcompl=record, n_ready=False, m_ready=False).mcode

    def step(self, n_ready=True, m_ready=True):
        """One clock with no request: the issues made (NUMERIC first)."""
        return self.cycle(n_ready=n_ready, m_ready=m_ready).issues

    issue = step

    # ================================================================ script runner
    def run(self, script, latency=1, ready=None, drain=True, max_cycles=100_000):
        """Play a command script with modelled processors.

        Parameters
        ----------
        script : iterable of Command, None or DRAIN
            One ``cmd`` request per clock, in order; ``None`` is an idle clock,
            :data:`DRAIN` idles until no entity is queued or busy.
        latency : int, sequence of int or callable
            Clocks from an issue to its completion (>= 1): one value for
            all, one per issue in issue order, or ``latency(issue) -> int``.
            Completions due on the same port are delivered one per clock, earliest
            due first (ties: earlier issue first), so different latencies give
            out-of-order completions.
        ready : callable, optional
            ``ready(cycle) -> (n_ready, m_ready)``; default always ready.
        drain : bool
            After the script, keep clocking until nothing is queued or busy.
        max_cycles : int
            Give up (``RuntimeError``) after this many clocks.

        Returns
        -------
        RunResult
        """
        if callable(latency):
            lat_of = latency
        elif isinstance(latency, (int, np.integer)) and not isinstance(latency, bool):
            check_int("latency", latency, 1, 1 << 30)
            lat_of = lambda issue: latency  # noqa: E731
        else:
            lats = iter(list(latency))

            def lat_of(issue):
                try:
                    return next(lats)
                except StopIteration:
                    raise ValueError("latency sequence is shorter than the issues") from None
        pending = {Kind.NUMERIC: [], Kind.MOVE: []}
        responses, issues, completions = [], [], []
        seq = 0
        items = list(script)
        i = 0
        start = self.t
        while True:
            while i < len(items) and items[i] is DRAIN and self.idle():
                i += 1
            if i < len(items):
                cmd = None if items[i] is DRAIN else items[i]
                if items[i] is not DRAIN:
                    i += 1
            elif drain and not self.idle():
                cmd = None
            else:
                break
            if self.t - start >= max_cycles:
                raise RuntimeError(f"run did not finish within {max_cycles} cycles")
            done = {}
            for k, heap in pending.items():
                if heap and heap[0][0] <= self.t:
                    done[k] = heapq.heappop(heap)[2]
            n_rdy, m_rdy = ready(self.t) if ready is not None else (True, True)
            now = self.t
            res = self.cycle(cmd=cmd, ncompl=done.get(Kind.NUMERIC),
                             mcompl=done.get(Kind.MOVE), n_ready=n_rdy, m_ready=m_rdy)
            for k, rec in done.items():
                completions.append((now, k, rec))
            if cmd is not None:
                responses.append((now, cmd, res.resp))
            for iss in res.issues:
                lat = check_int("latency", lat_of(iss), 1, 1 << 30)
                heapq.heappush(pending[iss.kind], (now + lat, seq, iss.record))
                seq += 1
                issues.append((now, iss))
        return RunResult(responses, issues, completions, self.t - start)

    # ================================================================ observation
    def status(self):
        """The ``status`` outputs in the current cycle."""
        return Status(int((self._unused() & ~self._cooling).sum()),
                      int((self._ent_free & ~self._ent_cooling).sum()),
                      int(self._line_free.sum()), self._reported_run(), self.error)

    def idle(self):
        """True when no entity is queued or busy, no tombstone waits and the reaper has
        freed every dead entity (held entities may remain)."""
        return (not self._busy.any() and not any(q for qs in self._queues for q in qs)
                and not self._pushing and self.reaped())

    def reaped(self):
        """True when the reaper has freed every dead entity (decision 12)."""
        return (not self._to_reap and not self._killed and self._reaping is None
                and self._walked is None and not self._cooling.any()
                and not self._ent_cooling.any())

    def program(self, etype):
        """The current stage program of ``etype`` as a tuple of :class:`Stage`."""
        return self._prog[check_int("etype", etype, 0, N_TYPES - 1)]

    def queue(self, etype, stage):
        """The record indices of the entities in the logical FIFO (etype, stage), head
        first (tombstones left out)."""
        return tuple(r for r in self._queues[etype][stage] if not self._tomb[r])

    def dead_records(self):
        """Records of dead entities the reaper has not freed yet (decision 12), ascending."""
        return [int(r) for r in np.flatnonzero(self._dead)]

    def tombstones(self):
        """Records held by tombstones (decision 9), ascending."""
        return [int(r) for r in np.flatnonzero(self._tomb)]

    def decision(self, kind):
        """``(etype, stage)`` of the FIFO port ``kind`` pops next, or None."""
        return self._decision[Kind(kind)]

    def live_entities(self):
        """Entity numbers in use, ascending."""
        return [int(e) for e in np.flatnonzero(~self._ent_free & ~self._ent_dead)]

    def record_entity(self, record):
        """The entity number record ``record`` holds (or last held)."""
        return int(self._entity[record])

    def entity_info(self, entity):
        """``{frame: Response-like dict}`` of a live entity's records, or None."""
        recs = self._match(entity)
        if recs.size == 0:
            return None
        return {int(self._frame[r]): self._fields(int(r)) for r in recs}

    def snapshot(self):
        """Everything but the error flag and the cycle count, as a comparable tuple."""
        arrays = tuple(tuple(a.tolist()) for a in (
            self._valid, self._entity, self._frame, self._etype, self._stage, self._busy,
            self._hold, self._base, self._len, self._line_free, self._ent_free, self._tomb,
            self._dead, self._ent_dead, self._cooling, self._ent_cooling))
        queues = tuple(tuple(tuple(q) for q in qs) for qs in self._queues)
        reaper = (tuple(sorted(self._to_reap)), tuple(sorted(self._killed)),
                  None if self._reaping is None else (self._reaping[0], tuple(self._reaping[1])),
                  self._walked)
        return (arrays, tuple(self._ent_list), queues, tuple(self._pushing), tuple(self._settled),
                tuple(self._prog), tuple(self._rr), tuple(self._decision), reaper)

    def check(self):
        """Assert the model's internal invariants (for tests)."""
        v = self._valid
        used = np.zeros(self.lines, bool)
        for r in np.flatnonzero(v | self._dead):
            b, n = int(self._base[r]), int(self._len[r])
            assert 1 <= n <= MAX_BUF_LINES and b + n <= self.lines, f"record {r}: bad buffer"
            assert not used[b:b + n].any(), f"record {r}: lines overlap"
            used[b:b + n] = True
            assert not self._ent_free[self._entity[r]], f"record {r}: entity not in use"
        assert (used == ~self._line_free).all(), "free-line bitmap out of step"
        assert (self._len[~v & ~self._dead] == 0).all(), "buffer left on a free record"
        assert not (v & self._dead).any(), "record both live and dead"
        for r in np.flatnonzero(self._dead):
            assert self._ent_dead[self._entity[r]], f"record {r}: dead, its entity not"
        assert not (self._ent_dead & self._ent_free).any(), "entity both dead and free"
        assert sorted(self._ent_list) == list(np.flatnonzero(self._ent_free)), \
            "free-number list out of step"
        assert not (self._cooling & ~self._unused()).any(), "cooling record in use"
        assert not (self._ent_cooling & ~self._ent_free).any(), "cooling entity in use"
        live = np.flatnonzero(~self._ent_free & ~self._ent_dead)
        for e in live:
            assert (v & (self._entity == e) & (self._frame == 0)).sum() == 1, \
                f"entity {e}: not exactly one frame-0 record"
        keys = set()
        for r in np.flatnonzero(v):
            key = (int(self._entity[r]), int(self._frame[r]))
            assert key not in keys, f"duplicate CAM key {key}"
            keys.add(key)
        queued = {}
        for t in range(N_TYPES):
            for s in range(MAX_STAGES):
                for r in self._queues[t][s]:
                    assert r not in queued, f"record {r} queued twice"
                    queued[r] = (t, s)
                assert not self._queues[t][s] or s < len(self._prog[t]), "queue past program"
        for t, s, r in self._pushing:                # (decision 16: as good as queued)
            assert r not in queued and 0 < s < len(self._prog[t]), f"record {r}: bad push"
            queued[r] = (t, s)
        for r, (t, s) in list(queued.items()):
            if self._tomb[r]:
                assert not v[r] and not self._busy[r], f"record {r}: live tombstone"
                del queued[r]
        assert not (self._tomb & ~np.isin(np.arange(self.records),
                                         [r for qs in self._queues for q in qs for r in q]
                                         + [r for _, _, r in self._pushing])).any(), \
            "tombstone outside a FIFO"
        for k, d in enumerate(self._decision):
            if d is not None:
                t, s = d
                assert self._queues[t][s] and self._prog[t][s].kind == k, "bad decision"
        for r in np.flatnonzero(v):
            r = int(r)
            if self._frame[r] != 0:
                assert not self._busy[r] and self._stage[r] == 0 and r not in queued
                continue
            t, s = int(self._etype[r]), int(self._stage[r])
            if self._busy[r]:
                assert s < len(self._prog[t]) and r not in queued, f"record {r}: busy"
            elif s == DONE_STAGE:
                assert self._hold[r] and r not in queued, f"record {r}: done"
            else:
                assert queued.get(r) == (t, s), f"record {r}: not in its FIFO"
        assert all(r < self.records and v[r] for r in queued), "free record queued"
        assert not self._busy[~v].any(), "free record busy"

    # ================================================================ internals
    def _match(self, entity, frame=None):
        m = self._valid & (self._entity == entity)
        if frame is not None:
            m &= self._frame == frame
        return np.flatnonzero(m)

    def _rec0(self, entity):
        hit = self._match(entity, 0)
        return int(hit[0]) if hit.size else None

    def _kind_of(self, record):
        return self._prog[self._etype[record]][self._stage[record]].kind

    def _fields(self, r):
        return dict(entity=int(self._entity[r]), record=r, frame=int(self._frame[r]),
                    etype=int(self._etype[r]), stage=int(self._stage[r]),
                    busy=int(self._busy[r]), hold=int(self._hold[r]), buf=r,
                    addr=int(self._base[r]), lines=int(self._len[r]))

    def _reported_run(self):
        """``status.free_run`` (decision 13)."""
        return max(0, self._runs[0] - sum(self._taken))

    def longest_free_run(self):
        """The longest run of contiguous free lines of the current state (``free_run``
        shows it :data:`RUN_DELAY` cycles later, decision 13)."""
        return self._longest_free_run()

    def _longest_free_run(self):
        edges = np.flatnonzero(np.diff(np.concatenate(([0], self._line_free, [0])).astype(np.int8)))
        return int((edges[1::2] - edges[0::2]).max()) if edges.size else 0

    def _first_fit(self, n):
        if n > self.lines:
            return None
        c = np.concatenate(([0], np.cumsum(self._line_free, dtype=np.int64)))
        fits = (c[n:] - c[:-n]) == n
        return int(np.argmax(fits)) if fits.any() else None

    def _unused(self):
        """Records neither valid, dead nor tombstones: free, or cooling (decision 18)."""
        return ~self._valid & ~self._tomb & ~self._dead

    def _free_record(self):
        free = np.flatnonzero(self._unused() & ~self._cooling)
        return int(free[0]) if free.size else None

    def _new_record(self, r, entity, frame, etype, hold, base, n):
        self._valid[r] = True
        self._entity[r], self._frame[r], self._etype[r] = entity, frame, etype
        self._stage[r], self._busy[r], self._hold[r] = 0, False, hold
        self._base[r], self._len[r] = base, n
        self._line_free[base:base + n] = False

    def _kill_entity(self, entity, completed=False):
        """The entity is dead from the next cycle: its records stop answering at once,
        the reaper frees them, their lines and the entity number later (decision 12;
        killed by its last completion, the reaper sees it a cycle later: decision 15)."""
        for r in self._match(entity):
            self._valid[r], self._busy[r], self._dead[r] = False, False, True
        self._ent_dead[entity] = True
        (self._killed_next if completed else self._killed).append(entity)

    def _reap(self):
        """One clock of the reaper, at the end of the cycle (decision 12)."""
        if self._walked is not None:                 # free the record walked last cycle
            r, entity, last = self._walked
            self._line_free[self._base[r]:self._base[r] + self._len[r]] = True
            for a in (self._dead, self._entity, self._frame, self._etype, self._stage,
                      self._busy, self._hold, self._base, self._len):
                a[r] = 0
            if last:
                self._ent_dead[entity], self._ent_free[entity] = False, True
                self._ent_list.append(entity)
            self._walked = None
        if self._reaping is not None:                # walk the next record
            entity, left = self._reaping
            self._walked = (left.popleft(), entity, not left)
            if not left:
                self._reaping = None
        if self._reaping is None and self._to_reap:  # pick among those dead before now
            entity = min(self._to_reap)
            self._to_reap.remove(entity)
            recs = np.flatnonzero(self._dead & (self._entity == entity))
            self._reaping = (entity, deque(int(r) for r in sorted(recs,
                                                                  key=lambda r: self._frame[r])))
        self._to_reap.update(self._killed)
        self._killed, self._killed_next = self._killed_next, []

    def _query(self, cmd, port="query"):
        if cmd.op == Op.SEARCH:
            hit = self._match(cmd.entity, cmd.frame)
            if hit.size == 0:
                return Response(cmd.op, Code.MISS)
            return Response(cmd.op, Code.OK, **self._fields(int(hit[0])))
        if cmd.op == Op.TRANSLATE:
            b = cmd.buf
            if b >= self.records or not self._valid[b]:
                return Response(cmd.op, Code.UNKNOWN)
            if cmd.offset >= self._len[b]:
                return Response(cmd.op, Code.RANGE)
            return Response(cmd.op, Code.OK, buf=b, addr=int(self._base[b]) + cmd.offset,
                            lines=int(self._len[b]))
        return Response(cmd.op, Code.BAD_OP)

    def _check_done(self, rec, kind):
        if rec >= self.records or not self._valid[rec]:
            return Code.UNKNOWN
        if not self._busy[rec] or self._kind_of(rec) != kind:
            return Code.NOT_BUSY
        return Code.OK

    def _carry_out(self, kind, ready):
        """Pop the FIFO port ``kind`` decided on: ``(issue, None)``, or ``(None, record)``
        when the head was a tombstone, or ``(None, None)``."""
        if not ready or self._decision[kind] is None:
            return None, None
        t, s = self._decision[kind]
        self._decision[kind] = None
        r = self._queues[t][s].popleft()
        if self._tomb[r]:
            return None, r
        self._busy[r] = True
        return Issue(Kind(kind), r, int(self._entity[r]), t, s, self._prog[t][s].desc, r), None

    def _decide(self, kind):
        for i in range(1, N_TYPES + 1):
            t = (self._rr[kind] + i) % N_TYPES
            prog = self._prog[t]
            for s in range(len(prog) - 1, -1, -1):
                if (prog[s].kind == kind and self._queues[t][s]
                        and (s > 0 or self._settled[t])):     # (decision 17)
                    self._decision[kind] = (t, s)
                    self._rr[kind] = t
                    return

    def _complete(self, r):
        t, s = int(self._etype[r]), int(self._stage[r])
        self._busy[r] = False
        if s + 1 < len(self._prog[t]):
            self._stage[r] = s + 1
            self._pushing.append((t, s + 1, r))         # in its FIFO a cycle later (16)
        elif self._hold[r]:
            self._stage[r] = DONE_STAGE
        else:
            self._kill_entity(int(self._entity[r]), completed=True)

    def _command(self, cmd):
        op = cmd.op
        if op == Op.CONFIG:
            return self._do_config(cmd)
        if op == Op.ALLOC:
            return self._do_alloc(cmd)
        if op == Op.MAP:
            return self._do_map(cmd)
        if op in (Op.DELETE, Op.RELEASE):
            return self._do_delete(cmd)
        return Response(op, Code.BAD_OP)

    def _do_config(self, cmd):
        t, n = cmd.etype, cmd.nstages
        if t >= N_TYPES or not 1 <= n <= MAX_STAGES:
            return Response(cmd.op, Code.BAD_ARG)
        if (self._queued_start[t] or any(p[0] == t for p in self._pushing)
                or (self._busy & self._valid & (self._etype == t)).any()):
            return Response(cmd.op, Code.BUSY)
        self._prog[t] = cmd.program[:n]
        return Response(cmd.op, Code.OK, etype=t)

    def _do_alloc(self, cmd):
        t, n = cmd.etype, cmd.lines
        if t >= N_TYPES or not 1 <= n <= MAX_BUF_LINES:
            return Response(cmd.op, Code.BAD_ARG)
        r = self._free_record()
        if r is None:
            return Response(cmd.op, Code.NO_RECORD)
        # decision 19: the number free the longest, unless that one still cools (then
        # it is the only one in the list: the reaper frees one number a cycle at most)
        if not self._ent_list or self._ent_cooling[self._ent_list[0]]:
            return Response(cmd.op, Code.NO_ENTITY)
        if self._reported_run() < n:             # decision 14
            return Response(cmd.op, Code.NO_LINES)
        base = self._first_fit(n)
        assert base is not None, "free_run above the longest free run (decision 13)"
        e = self._ent_list.popleft()
        self._ent_free[e] = False
        self._new_record(r, e, 0, t, bool(cmd.hold), base, n)
        self._queues[t][0].append(r)
        return Response(cmd.op, Code.OK, **self._fields(r))

    def _do_map(self, cmd):
        e, f, n = cmd.entity, cmd.frame, cmd.lines
        if not 1 <= n <= MAX_BUF_LINES or f >= self.frames:
            return Response(cmd.op, Code.BAD_ARG)
        r0 = self._rec0(e)
        if r0 is None:
            return Response(cmd.op, Code.UNKNOWN)
        if f == 0 or self._match(e, f).size:
            return Response(cmd.op, Code.MAPPED)
        r = self._free_record()
        if r is None:
            return Response(cmd.op, Code.NO_RECORD)
        if self._reported_run() < n:             # decision 14
            return Response(cmd.op, Code.NO_LINES)
        base = self._first_fit(n)
        assert base is not None, "free_run above the longest free run (decision 13)"
        self._new_record(r, e, f, int(self._etype[r0]), bool(self._hold[r0]), base, n)
        return Response(cmd.op, Code.OK, **self._fields(r))

    def _do_delete(self, cmd):
        e = cmd.entity
        r0 = self._rec0(e)
        if r0 is None:
            return Response(cmd.op, Code.UNKNOWN)
        if cmd.op == Op.RELEASE:
            if self._stage[r0] != DONE_STAGE:
                return Response(cmd.op, Code.NOT_HELD)
        elif self._busy[r0]:   # busy in S_t, or issued in this cycle
            return Response(cmd.op, Code.BUSY)
        queued = self._stage[r0] != DONE_STAGE    # (not busy: checked above)
        self._kill_entity(e)
        self._tomb[r0] = queued
        return Response(cmd.op, Code.OK, entity=e)
