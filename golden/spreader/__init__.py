"""Golden model of the global spreader (spec ``spreader.md``, seed ``000_e8967f273ac2673e``:
global spreader 12, primitive table 41, vertex descriptor table 43, Fig. 10, claims 1-20).

Clock-exact, like :mod:`golden.qcc`: one call of :meth:`Spreader.cycle` is one clock of
the RTL (``hw/spreader.py``). It takes what the RTL sees on its inputs in
that clock and gives what the RTL drives and transfers. The RTL must equal it clock by
clock, so its decision log equals the model's *exactly* (entries, order and transfer
clock) for any stimulus; tests can either run the model in lock-step with the RTL (feed
it the RTL's inputs every clock and compare the outputs) or run both closed-loop against
the same deterministic EU models (:class:`ScriptedEU`, :class:`RandomEU` with a seed,
:class:`QCCEU`) and packet feeder (:class:`Feeder`) and compare the logs.
:class:`Scoreboard` checks the invariants on any run's observations, the RTL's included.
The model never imports ``hw/``.

Package layout: :mod:`~golden.spreader.types` (constants, codes, packets and records),
:mod:`~golden.spreader.codec` (port layouts, ``pack``/``unpack``),
:mod:`~golden.spreader.model` (:class:`Spreader`), :mod:`~golden.spreader.eus` (EU
models), :mod:`~golden.spreader.workloads` (stimulus), :mod:`~golden.spreader.scoreboard`
(invariants, figures). Everything public is importable from ``golden.spreader``.

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

The allocator is a three-stage pipeline (issue 12): stage **P** (prepare) arbitrates and
does the checks, table lookups, candidate list, minimum and the scan for the pass's
first request; stage **R** (request) holds one prepared *pass*, drives its request
from a register, takes the answer, scans for the request after a refusal, and on an
accept pushes the log entry and the move command; stage **C** (commit, issue 12 cut 3)
writes the accepted packet's tables a clock after its accept. Each stage's logic reads
only registers and the inputs of its own clock; no request depends on the status of
its own clock (rule 3), and no table write depends on an answer of its own clock.

1. **Packets inside**: each stream holds at most one packet inside the spreader, taken
   from its input (``ready`` high) when stage P prepares it and kept until it is
   *consumed* (allocated, closed or refused: its log entry). It is in R, or *parked*
   after a pass that placed it nowhere; a parked packet goes before its input's head.
2. **Stage P** (clock t): the arbiter picks among the streams with a packet to offer --
   a parked one, else the input's head (for R's own stream the input's head, the next
   packet) -- except a triangle that names a vertex group the vertex or patch packet
   inside the spreader provides, and a pixel packet (or end marker) whose ``prid`` is
   the triangle's inside (they would only wait; a stream that does not offer counts as
   idle): a *starving* stream (its counter >= ``limit``, limit > 0) if any, else fixed
   priority pixel > triangle > vertex > patch (among starving streams the same order).
   The winner is prepared from ``S_t`` and the packets inside: checks, lookups (VDT,
   PT), candidate list, minimum (S104-S115) and its first request's scan (rule 3). It
   enters R at the edge (a pass starts:
   its counter and every idle stream's are cleared, every other offering stream's
   incremented, saturating at 255) when (a) R is empty or its pass ends in this clock,
   (b) the ``log`` and ``move`` FIFOs each keep a free entry after this clock's pushes
   (``level + push < fifo_depth`` in ``S_t``) and (c) it is not the next packet of R's
   stream while R's packet is not consumed in this clock (no overtaking). Else nothing
   enters and nothing is taken. Outcomes: a bad packet (:class:`Err` codes 1-5) or an
   end marker is consumed in R's first clock; a *wait* ends R's pass in its first clock
   (parked): a vertex or patch packet whose VDT record(s) are valid or written by R's
   or C's vertex or patch packet; a triangle whose PT record is valid or R's or C's
   triangle's; a triangle naming a vertex that misses the VDT while the vertex or patch
   packet inside the spreader or in C provides its group, or a group that R's or C's
   triangle closes (``last``); a pixel packet or end marker whose ``prid`` misses the
   PT while the triangle inside or in C has that ``prid`` (these two are not offered,
   see above, so they never reach R), or whose primitive R's or C's pixel packet
   closes (``last``). A vertex that misses with no such provider is UNKNOWN_VERTEX, a
   ``prid`` UNKNOWN_PRID, as before. (Stage P cannot see the table writes of R's
   packet, a clock after its accept at the earliest, nor C's of this clock: these
   waits make the prepared pass equal to one prepared after them.) In the offers
   above, "inside the spreader" includes C's packet: a triangle whose vertex packet
   was accepted in the clock before offers itself only after C wrote the VDT.
3. **Scan** (S118-S124), a clock before its request: in R's first clock and in the
   clock after each refusal, the spreader drives ``alloc[e]`` for the first candidate
   at or after the current position whose status met the pass's minimum in the scan.
   Every scan reads the **status register** (issue 12/15: no status port reaches a
   scan): the EUs' status of the clock before the scan, less R's request of that
   clock (:attr:`Spreader.scan_status`; at reset every EU empty). The first request's
   scan is stage P's, in the clock it prepares the pass, over that register less what
   R's request of P's clock would take (the EU R requests counts one record, one
   entity and the request's ``lines`` less, answered or not: its accept shows in its
   status only from the next clock; :meth:`Spreader.debited`), so a request two clocks
   after the status it was scanned on is counted out of it by both debits; an EU
   loses room only to the spreader's requests, so a check that passes on the older
   status still means the EU has the room when asked (or it refuses, and the scan
   goes on). Each debit applies in the request's first clock only: an EU that answers
   later (the QCC: a clock after its ALLOC) shows the allocation in its status from
   the clock after it took the request, so a debit in a later clock counted it twice
   (parameter ``debit_held=True``: in every clock R holds the request, for EUs whose
   status changes only at their answer). An EU that takes a request later than its
   first clock (the QCC adapter, when a RELEASE goes first) must count it out of the
   status it shows until it takes it (:class:`QCCEU`, ``hw.spreader.SpreaderQCC``),
   else a check in between passes on what the held request is about to take. The request after a refusal comes from R's scan in the
   refusal's clock (over the register), from the candidate after the refusing one (that
   EU is not scanned again, so no debit of the refused request). If no candidate met the minimum, the pass ends in the clock
   its request would have been driven (the packet is parked) and the packet is
   prepared again later -- "retry from the top". (Issue 12 cut 1: the request comes
   from a register, so no status compare, scan or choice of EU lies between the
   status and the answer's effects.)
4. The request is held (payload constant) until the EU takes it (``ready``); the EU
   answers in that clock. ``accept`` with an entity that is still in flight for that EU
   (in the in-flight table or in C, rule 5) is a bad answer (error, treated as a
   refusal). Accept: the packet is consumed, the log entry and the move command are
   pushed and the rotation remembers the EU at the edge (and the stream's next packet,
   prepared in this clock, enters R); the packet moves to **stage C**, which writes its
   tables (VDT/PT record, reference and pixel counters, closing bits) and its in-flight
   entry at the edge ending the next clock. Refuse: next clock, scan on. So with EUs
   that answer in the clock of the request (``N = 0``) the allocator consumes one packet
   per clock when the first candidate accepts (each packet is taken one clock before its
   request), one extra clock per refused candidate; an EU that answers N clocks late
   adds N clocks per request. Sustained one per clock needs ``fifo_depth >= 3`` (rule
   2b counts this clock's push but not its pop). Measured by :class:`Stats`
   (``alloc_cycles``: clocks from the first request of an allocation's final pass to its
   accept, so ``allocations_per_clock`` is 1.0 when every first candidate accepts at
   N = 0; ``per_eu`` is the load balance).
5. **Completion** (``done``, one per clock): looked up in the in-flight table
   (``eu, entity`` -> type, record) of ``S_t`` and in stage C (an entity accepted in
   the clock before is known, so a completion may come in the clock after the accept;
   one in the accept's own clock is unknown); unknown is bad input (reported in
   clock t). A known entity leaves the in-flight table at the edge ending t (so an
   answer naming it from t+1 is good, a second completion of it from t+1 unknown); its
   table effects come a clock later, from **stage D** (issue 12: the lookup's result is
   a register, so no in-flight select lies ahead of the tables' counters) at the edge
   ending t+1, after C's writes of that edge: vertex/patch ``vdone``; triangle
   ``tdone``; pixel one pixel packet less in flight on its PT record. A triangle's
   references (one less on each distinct VDT record it named) drop a clock later, at
   the edge ending t+2, from **stage E** (issue 12: the VDT records read from the
   triangle's PT record in D's clock go into registers, so no table read lies ahead
   of the VDT's reference counters). So the release scans see a completion from t+2,
   a triangle's references from t+3 (a record leaves a clock after the scans see it,
   rule 6). (No record can change in between: a record is released only
   after its ``vdone``/``tdone`` and with no reference or pixel packet left, and the
   counters take an increment and a decrement of one edge together.)
6. **Release engine** (issue 12: a choice register per table, so that no scan lies
   between the tables' bits and the release's ``ready``, the FIFO push and the freed
   records): a VDT record is releasable when it is valid, ``vdone``, closed and
   unreferenced (a patch: both its records, at its first), a PT record when it is
   valid, ``tdone``, closed and has no pixel packet in flight. In clock t each table's
   scan reads ``S_t`` and chooses its lowest releasable record other than the one in
   its choice register; the register takes that choice at the edge ending t when it
   is empty or its record is released at that edge, else keeps its record. When the
   ``release`` FIFO has a free entry in ``S_t``, the VDT's register's record is
   released at the edge ending t (pushed, freed), else the PT's. So a record
   releasable from t is pushed at the edge ending t+1 at the earliest (one clock later
   than a release straight from the scan), still one record per clock, the VDT's
   first; a chosen record stays releasable until it is released (nothing un-closes,
   un-completes or references a closed record). :meth:`Spreader.releasing` shows the
   registers. A vertex
   group is closed by ``noref`` or by the ``last`` bit of a triangle that is allocated;
   a primitive by its ``last`` pixel packet or end marker. (A record a pass can still
   name is never releasable: a closed record is "unknown" to lookups, and the packet
   that closes it takes its reference on the same edge.)
7. **Configuration** applies at the edge; a pass keeps the list and minimum it was
   prepared with.
8. Output FIFOs (``fifo_depth`` each): a push at the edge ending t is visible from t+1;
   a pop happens at an edge where ``valid & ready``; a push needs a free entry in
   ``S_t``. At most one error report per clock (precedence: packet, EU answer, ``done``,
   ``cfg``); one that finds the FIFO full or comes second in a clock is dropped and sets
   ``lost``. ``error`` is exact.

Decisions (where spec and issue are silent)
-------------------------------------------
1. **Candidate lists** (S111): vertex, patch: the type's list in walk order (decision
   9). Triangle: the EUs holding its vertices that are *in the triangle list*
   (dedication wins over locality), most vertices first, ties in walk order; then the
   rest of the list in walk order. Pixel: its triangle's EU if in the pixel list, then
   the rest. **Minimum** (S115):
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
9. **Load balance** (the spec's "rotating start", parameter ``rotate``, default on): a
   type's priority list is walked from the entry after the EU that type's last
   request went to (from its first entry before any request, or when that EU is not
   in the list). Locality still comes first: the EUs holding a triangle's vertices (a
   pixel packet's triangle) head the candidate list, the rotation orders only the
   rest (and breaks locality ties). A pass keeps the list it was prepared with; the EU
   is remembered at the edge of a request's first clock (stage R's request register,
   whatever the answer: a refused request's EU counts too, and the next request of
   the pass replaces it), so a pass of that type prepared later walks from the next
   EU. The request, not the accept, moves the walk because an EU's answer comes
   clocks after its request (the QCC's two): remembered at the accept, the next
   packet, prepared in the clock its predecessor is accepted, walked from the EU
   before, and on 4 QCCs the ``mesh`` scene's four vertex groups went to EUs 0, 0, 1,
   2, leaving EU 3 without data to draw its triangles (smallest share 0.13). A packet
   prepared in the very clock its predecessor of the same type presents its first
   request (EUs that answer at once, back to back) still walks from the EU before
   that one, so such a stream goes round the EUs two packets at a time. Without it
   (``rotate=False``) every type starts at its list's first entry and, with the reset
   lists, the first EUs take most of the work (the ``mesh`` scene on 4 QCCs left one EU
   idle); vertex packets, which have no locality, now go round the EUs and the
   triangles and pixels follow their data.
10. **Locality against load** (issue 12, item 6; parameters, default off):
   ``patience`` -- in its first ``patience`` passes (:meth:`Spreader.pass_number`: 1
   for the input's head, 1 + the passes it took for a parked packet) a pixel packet's
   candidate list is its triangle's EU alone, when that EU is in the pixel list: a
   pass that finds it without room (or refused) parks the packet, which is prepared
   again two clocks later, rather than placing it on another EU; from pass
   ``patience + 1`` on the whole list as in decision 1. ``local_records`` -- a
   vertex-holding EU heads a triangle's candidate list (decision 1) only while it has
   at least ``local_records`` free records in the status the pass's first scan reads
   (rule 3, debited); one with fewer keeps its place in the walk, so a triangle (and
   then its pixel packets) moves off an EU busy with earlier primitives. Pixel packets
   of one primitive come back to back, faster than one EU completes them, so they
   spill off their triangle's EU when it runs out of records (the mesh scene on 4
   QCCs: every pixel packet placed elsewhere was skipped because its triangle's QCC
   showed no free record); patience trades clocks for that locality, and
   ``local_records`` keeps the shares even, since with patience the pixel work follows
   the triangles, which follow their vertex groups.
11. **Stage L** (issue 12; parameter ``input_stage``, default off): a register per
   input stream in front of stage P. A stream's input is taken (``ready`` high) when
   its register is empty or stage P takes the register's packet in this clock, except
   a triangle naming a vertex group that a vertex or patch packet inside the
   spreader, in C or in stage L provides, and a pixel packet (or end marker) whose
   ``prid`` is such a triangle's (rule 2's offers, moved to the input and extended to
   stage L): so a triangle is taken only once its vertex groups are written, as
   without stage L, and a producer that reuses a record once the packet closing it
   was taken (producer contract) still finds that packet's data written. (With the
   offers alone, a triangle taken into stage L ahead of its parked patch let the
   producer send a vertex packet that took the patch's record first: a deadlock.)
   Several inputs may be taken in one clock (:attr:`CycleResult.inputs`). Stage P's
   "input's head" in rules 1-4 is the register's packet (the arbiter offers it, P
   prepares it, it leaves the register at the edge it enters R:
   :attr:`CycleResult.taken`), never the port's. A packet is inside one clock longer
   (taken in clock t, prepared in t+1 at the earliest, requested in t+2), and a
   stream still gives one packet per clock back to back (the register reloads at the
   edge its packet leaves). Stage P reads the tables as before (the RTL makes stage
   L's lookups on the way into the register and keeps them up to date while the
   packet waits, so that stage P starts from flip-flops for the heads as for parked
   packets; hw/spreader.py, decision 28).

Producer contract (not checked beyond the errors above): a triangle is presented only
after the vertex packets it names were taken (their ``ready``); pixel packets after their
triangle; a group's or primitive's record is reused only after the packet that closes it
was taken. :func:`build_workload`
emits workloads with these dependencies (:class:`Item` ``after``). Progress also needs
the driver to configure minimum resources so that held vertex data cannot crowd out the
triangles and pixels that free it: :func:`held_room_minima` gives MIN words by a rule
derived from the packet-size bound (graded along the chain of holds).
"""

from golden.spreader.eus import QCCEU, DoneMerger, RandomEU, ScriptedEU
from golden.spreader.model import Spreader
from golden.spreader.scoreboard import Scoreboard, Stats
from golden.spreader.types import (
    GROUP, PATCH_POINTS, PRIORITY, AllocRequest, Answer, CfgOp, Config, CycleResult, Done,
    EType, Err, ErrorReport, EUStatus, Kind, Loc, LogEntry, MoveCmd, PatchPacket,
    PixelPacket, Ref, ReleaseCmd, ReqRecord, RunResult, Src, TrianglePacket, VertexPacket,
    held_room_minima,
)
from golden.spreader.workloads import (
    Feeder, Item, Workload, build_workload, scene_workload, synthetic_workload,
)

__all__ = [
    "EType", "Err", "Src", "Kind", "Ref", "CfgOp", "PRIORITY", "GROUP", "PATCH_POINTS",
    "VertexPacket", "TrianglePacket", "PixelPacket", "PatchPacket", "Config", "EUStatus",
    "AllocRequest", "Answer", "Done", "Loc", "MoveCmd", "ReleaseCmd", "LogEntry",
    "ErrorReport", "CycleResult", "ReqRecord", "RunResult", "Spreader", "held_room_minima",
    "ScriptedEU", "RandomEU", "QCCEU", "DoneMerger",
    "Item", "Workload", "Feeder", "build_workload", "synthetic_workload", "scene_workload",
    "Scoreboard", "Stats",
]
