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
:class:`Spreader` wires its parts and keeps the per-stream packet registers and the pass
registers between the two allocation stages (decision 1); each part is a component with
its own signature:

* :class:`Configuration`: the ``cfg`` words, priority lists, minima, starvation limit;
* :class:`Arbiter`: which stream's packet gets the next pass (priority, starvation);
* :class:`PacketChecks`: stage P's checks, table lookups and waits of all four streams;
* :class:`Rotation` and :class:`CandidateList`: each list's walk order (a register;
  load balance) and a type's candidate order (locality first; decision 6) with its
  first request, one per stream, built in parallel and chosen by the arbiter's winner;
* :class:`StatusScan`: stage R's scan after a refusal (the next candidate in that order
  whose status meets the minimum);
* :class:`VertexTable` (VDT) and :class:`PrimitiveTable` (PT), each with its release
  scan and choice register (decision 23); the spreader merges their release streams
  (VDT first, the release engine);
* :class:`InFlightTable`: ``(eu, entity) -> (type, record)`` of the entities in flight;
* :class:`ErrorReporter`: the ``err`` reports in precedence, ``error`` and ``lost``,
  into the error FIFO, a :class:`StagedFIFO` (decision 18).

Stage R's request, answer and accept (log entry, move command), stage C's table writes
and the completions (lookup, then stage D's table effects a clock later) are short methods of :class:`Spreader`. Codes and outcomes are
``amaranth.lib.enum`` enumerations (:class:`EType`, :class:`Err`, :class:`Src`,
:class:`Kind`, :class:`Ref`, :class:`CfgOp`, :class:`Outcome`); a unit test
(``tb/unit/test_spreader.py``) checks them and every port layout against the golden
model. Figures are in README.md (section "Block 3").

Decisions
---------
1. Pipelined allocation (issue 12, item 3; the golden model's timing contract, changed
   first): stage P (arbiter, packet checks, VDT/PT lookups, candidate list, minimum)
   reads the input heads or the parked packets (``held``, one register per stream) and
   the tables, and loads the pass registers (``r_*``) of stage R, with the first
   request's scan (``CandidateList.first`` over the status of P's clock less R's
   request of that clock, compared with raised thresholds: decision 11; every stream's
   list and scan in parallel, the arbiter's winner choosing among them last); stage R (request, answer, the scan after a refusal, commit)
   reads only those registers, the status and the answer. Every request comes from a
   register (``q_v``: one-hot ``alloc[e].valid``, and ``q_eu``) loaded by a
   scan of the clock before: the status compares and the choice of EU are off the path
   from the answer to its effects (issue 12 cut 1). An input's ``ready`` is high when
   P's pass enters R, one clock before its first request; a packet whose pass ends
   unplaced is parked in its stream's register. The EU's answer still decides, in its
   clock, whether the packet is consumed and so whether P's next pass may enter R (an
   enable: ``load``), and the input ``ready`` signals depend on it combinationally; an
   EU's ``ready`` and answer must not depend on the spreader's input ``ready`` signals.
   Stage C (issue 12 cut 3): an accepted packet's table writes (VDT/PT record,
   reference and pixel counters, closing bits) and its in-flight entry are made a clock
   after the accept, from registers (``c_*``: the EU, the entity, the record, the
   triangle's VDT records and a copy of each stream's packet register), so the accept
   no longer reaches the tables' one-hot decoders and the counters' carry chains. The
   log entry, the move command and the rotation stay in the accept's clock; the
   completion lookup and the bad-answer check see C's entity (compares with
   ``c_eu``/``c_ent``; a completion of it takes its type, record and VDT records from
   C, and its in-flight clear wins over C's set).
   P cannot see R's nor C's table writes, so P makes a packet *wait* where they could
   change its outcome (hazards with R's and C's packets: same record, a group or
   primitive they close, a vertex group or ``prid`` a packet inside the spreader or in
   C provides). A triangle or pixel packet that would wait for such a provider is not
   offered to the arbiter (``offer``: compares of its indices / ``prid`` with the held
   and C's packets, no table lookup), so another stream's packet fills the clock:
   a mixed stream keeps one packet per clock.
2. Tables (issue 12): the fields written once per allocation (tag, EU, entity, vertex
   count; for the PT also the triangle's VDT records) are ``Memory`` with asynchronous
   read ports (LUT-RAM; the VDT in an even and an odd bank, so that a patch writes its
   two records in one clock through one write port per bank). Only the bits the release
   scan reads every clock stay flip-flops: vectors of valid, done, closed, patch, half
   bits and the reference counters (the pixel counts moved to LUT-RAM, decision 25),
   each written through one decoded one-hot per write site (no ``Array``-indexed
   writes). The release scan finds the lowest
   releasable record with a tree of 2:1 choices (:func:`_lowest`). The
   Verilog at the defaults (256/256 records) is 0.84 MB (87 MB before).
3. The in-flight table ``(eu, entity) -> (type, record)`` is a memory of ``N*256`` words
   with one write port (written on accept) and an asynchronous read port (the
   completion), plus ``N*256`` valid flip-flops (set on accept, cleared on completion,
   both possible in one clock at different addresses). The bad-answer check reads the
   valid bit of every EU's answered entity in parallel, and the answer (taken, accepted,
   refused, bad) is decided per EU and OR-ed, so that it does not wait for the scan's
   choice of EU; the FIFO room of the next pass is computed for both outcomes and
   chosen by the answer. Same function, shorter path (decision 8). A completion
   (issue 12, stage D; the golden model's rule 5, changed first) clears its entity's
   valid bit at the edge of its clock with no lookup ahead of the clear (an entity not
   in flight has its bit clear already), and its lookup (valid bit, type, record; C's
   entity by compare) goes into registers (``d_*``); its table effects (done bits, the
   triangle's VDT reference decrements through the PT's word, the pixel count) are made
   a clock later from those registers, so the select of one of the ``N*256`` valid bits
   reaches only the unknown-completion report and stage D's registers, not the tables'
   counters. No record can change in between (a record is released only after its done
   bit and with no reference or pixel packet left), so stage D needs no forwarding.
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
   walk order, then the rest of the list". The list is never built as a sequence:
   :class:`CandidateList` gives the order as a relation on the EUs (``ahead[a][b]``:
   EU ``a`` is listed and sorted ahead of listed EU ``b``, from each EU's walk position
   and held count), the first request is the one-hot of the EU that meets the minimum
   with none that meets it ahead of it, and stage R keeps the relation as a pass
   register (``r_ahead``) for the scan after a refusal, which continues after the EU
   asked (``q_v``). No rank adders, rank decoders or N-way list selects (issue 12: the
   8-EU build's sort).
7. :class:`SpreaderQCC` is the co-simulation design with real QCCs (``hw/qcc.py``): its
   docstring says how requests, answers, releases, completions and status map onto the
   QCC's commands, responses, issues and status. Each allocation request there costs
   three clocks per tried EU (the QCC responds one clock after its command, and the
   adapter registers the response as the answer: issue 15), and no ALLOC
   goes to an EU while one of its entity completions waits to reach the spreader, because
   the QCC reuses the number of an entity without ``hold`` in the clock after its last
   stage completes (the spreader would see an answer naming an entity still in flight).
   The completion queues reach ``done`` through a register (issue 15: the front end's
   critical path ran from a queue's LUT-RAM read into the spreader's completion
   handling and the error FIFO), which needs no wait of its own: an ALLOC offered once
   the completion left its queue is answered after the spreader took it.
8. Fmax (README.md has the table and stage C's figures): 4 EUs, 32/32 records, ECP5-85F: 20 MHz before item 3
   (arbitration, lookups, candidate list, scan and commit in one clock), 30.9 MHz with
   the two stages, its critical path all stage R (pass register -> status compare ->
   first candidate -> the EU's answer -> in-flight bad-answer check -> ``accepted`` ->
   FIFO room / ``load`` -> the VDT's reference counters). The answer decided per EU and
   the FIFO room chosen by it (decision 3) kept the contract (32.3 MHz placement
   estimate). Cut 1 of stage R (decision 1: the request from a register, the scan a
   clock before it) closes at 38.9 MHz routed (LUT4 14,289, FF 2,677, DPR16X4 272),
   its critical path then all stage P: the parked patch's second group compared with
   the triangle's vertices (``provider``) -> the offers -> the arbiter's winner -> the
   winner's walk -> the first request (``q_v``). Two cuts of P kept the contract: the
   patch's second group in a register (``held_pat_g1``), and one
   :class:`CandidateList` per type, all built in parallel, the winner choosing the
   list and the one-hot first request last. They close at 48.6 MHz routed (LUT4
   15,253, FF 2,691, DPR16X4 272); the critical path is stage R again: an in-flight
   valid bit -> the bad-answer check -> ``accepted`` -> :class:`Rotation`'s next start.
   That start is now computed for both outcomes (from registers only) and chosen by
   ``accepted`` (46.6 MHz routed, no gain). Stage C (decision 1, cut 3) takes the
   table writes off the accept's path (what is left of it: the bad-answer check, a
   256-to-1 select per EU, -> ``accepted`` -> ``load`` and the pass registers'
   enables): 49.5 MHz routed (LUT4 16,693, FF 2,815, DPR16X4 272), the critical path
   now stage P's first-request scan (R's request size, selected from the held packets
   -> its debit from an EU's free lines -> the minimum's compare -> a pass register).
   Registering the answer (cut 2) needs more than one packet of a stream inside the
   spreader and a new contract (README.md). Stage P's registers (decision 11) took
   that path apart (the longest path after ECP5 mapping 28 -> 24 cells): 50.8 MHz
   routed (4 EUs, 32/32, before ``parked``), the critical path still stage P's
   (``parked`` -> the source's size -> ``size + r_size`` and the status compare ->
   the first request). With that compare made for both sources and ``parked``
   choosing last: 51.0 MHz routed, and the critical path is the completion's: the
   done's (eu, entity) selecting one of the ``N*256`` in-flight valid bits
   (:class:`InFlightTable` ``known``) -> the completion's type -> the triangle's
   reference decrement -> the VDT's reference counters. Stage D (decision 3: the
   completion's lookup into registers, its table effects a clock later) takes that
   path out: 48.4 MHz routed (one seed; LUT4 16,145, FF 2,925, DPR16X4 272), the
   critical path stage P's again (``parked`` -> the source select -> a VDT lookup ->
   the offers -> the arbiter -> ``load`` -> a stream's ``passes`` counter); 8 EUs:
   44.8 MHz routed (34.5 at stage C), the critical path stage R's accept (an in-flight
   valid bit -> the bad-answer check -> ``accepted`` -> :class:`Rotation`'s walk).
   Decisions 12-16 and the walk registered (decision 14) since: 4 EUs 54.8 MHz routed
   (one seed), the critical path a parked pixel packet's PT lookup -> the pixel list's
   order -> the first request, which decision 17 takes out (54.8 MHz, one seed, the
   critical path then stage R's accept into ``q_v``; the
   same for a parked triangle's VDT lookups measured 49.1 MHz and was not kept);
   figures per step in README.md's Fmax table.
9. Load balance (``rotate``, default on; decision 9 of the golden model): each type's
   priority list is walked from the entry after the EU of that type's last request
   (``last_eu``/``last_ok`` per type, set at the edge of a request's first clock, from
   stage R's registers; it was the accept's until the QCC's answer came two clocks
   after the request, when the next packet walked from the EU before and the mesh
   scene's vertex groups went two to EU 0); locality still heads the candidate list.
10. Status debit (``debit_held``, default False; the golden model's rule 3): stage P's
   first-request scan counts R's request out of its EU's status only in the request's
   first clock (``q_first``: the request register was loaded at the last edge). The
   QCC behind :class:`SpreaderQCC` shows the allocation in its counts from the clock
   after its ALLOC (its answer comes a clock later still), so debiting the held request
   again counted it twice and made a QCC with one free entity look full (pixel packets
   spilled from their triangle's QCC: locality 0.57 -> 0.61 on the bench's mesh scene).
11. Stage P's registers (issue 12; contract unchanged): R's request size is a pass
   register (``r_size``, before a select of the held packets by ``r_stream``); the
   first-request scan does not subtract R's request from its EU's status but compares
   the status with thresholds raised by it (``need_records`` + 1, two entities,
   ``need_lines_debit[t]``: type t's minimum lines + ``r_size``, a register loaded
   from the next minimum and the next ``r_size``; ``x - r >= y``, saturating at 0, is
   ``y == 0 | x >= y + r``), so one carry chain lies between a status and the
   candidate choice; each type's walk order is a register of :class:`Rotation`
   (before, each :class:`CandidateList` rotated the list with an adder, a modulo and a
   select); ``parked`` is a register (before, a compare of ``r_stream`` ahead of the
   source select and the table lookups). Each register's next value is computed for
   both outcomes of ``load`` or of the accept, which chooses last. The size term
   likewise: a parked packet's size + ``r_size`` is a register per stream
   (``held_size_debit``), the input head's is added from the port, and ``parked``
   chooses between the two compares last (before, ``parked`` selected the size ahead
   of an adder and the compare: the routed critical path at 50.8 MHz).
12. ``load``'s fan-out (issue 12; contract unchanged): ``load`` (the offers -> the
   arbiter -> the enable of every register a pass loads) enabled stage R's pass
   registers, the winner's held packet and its ``passes`` counter: hundreds of
   flip-flops behind the arbiter. Now R's pass registers are loaded with the winner's
   data whenever R does not keep its pass (``stays``: R's registers and the answer),
   whether a pass enters R or not (with none, ``active`` falls and they are not read);
   each stream's ``held`` register is loaded from its source whenever it is not R's
   kept packet (a parked packet reloads itself; with none held the input's head is
   loaded and not read until ``held_v``); ``passes`` counts from R (1 at the consume,
   +1 when R parks the packet: the same count as 1 per pass entering R). ``load`` is
   left in the valid bits (``held_v``, ``parked``, ``active``, ``q_v``), the inputs'
   ``ready`` and the arbiter's starvation counters. 4 EUs, 32/32: 52.5 MHz routed (48.4
   before, one seed each); the critical path is stage R's accept again (an in-flight
   valid bit -> the bad-answer check -> ``accepted`` -> ``stays`` -> ``q_v``); 8 EUs:
   42.0 MHz (44.8 before), its critical path that same accept path, as before.
13. Locality against load (issue 12 item 6; the golden model's decision 10; parameters,
   default off): ``patience`` makes a pixel packet's :class:`CandidateList` its
   triangle's EU alone (``only_held``: the listed EUs holding its data, when there is
   one) while its pass number is at most ``patience``: 1 for the input's head, else
   the parked packet's ``passes`` (1 + the passes that parked it; a register, so the
   rule adds no status compare to stage P). ``local_records`` masks a vertex-holding
   EU out of a triangle's holders (``room``) unless its status, debited as for the
   first request's scan, shows that many free records: one compare per EU beside the
   minimum's, ahead of the sort.
14. The accept chosen last (issue 12; contract unchanged): the accept (``accepted``:
   an EU's answer, the in-flight valid bit of its entity, a 256-to-1 select per EU, and
   the bad-answer check) came ahead of ``consumed`` -> ``stays``/``load`` (with the
   FIFO room and the offers) -> the valid bits and the request registers. ``load`` is
   now made for both outcomes of the accept from registers, the offers and the FIFO
   levels (``load1``, ``load0``), and every register whose next value it decides
   (``held_v``, ``parked``, ``q_v``, ``q_eu``, ``r_refused``, ``active``,
   ``q_first``) likewise, the accept choosing last; the enables it drives (``stays``,
   R's kept packet) are one gate after it. What the accept still precedes: those
   multiplexers, the enables, the rotation's walk, stage C's valid bit, the ``log`` and
   ``move`` FIFOs' write enables and the bad-answer report. Taking the in-flight select
   itself out of the accept's clock needs either the answered entity a clock before
   the answer, which the EU chooses and which arrives with the answer (``entity[e]``),
   or the answer registered (cut 2, a new contract: README.md); the accept registered
   and every register it decides chosen by it after the edge (tried, README.md: "The
   accept registered") puts that multiplexer ahead of every stage-P path instead
   (43.1 MHz routed at 4 EUs against 54.8). The rotation's walk
   (:class:`Rotation`) is no longer among them: the walk after an accept and without
   one are both registers and the accept, registered, chooses between them after the
   edge (at 8 EUs ABC had merged the accept's last multiplexer into the walk's wide
   LUTs, the routed critical path).
15. Stage P's provider compares (issue 12; contract unchanged): a triangle (pixel
   packet) offers itself only when no vertex or patch packet (triangle) inside the
   spreader or in stage C provides its data (``provider``): 18 compares of its vertex
   groups with the held and C's groups (2 of its ``prid`` with the held and C's
   triangle's). For a parked packet they were made after the source select (``parked``
   -> ``src``), ahead of the offers, the arbiter and the first request: the routed
   critical path at 4 EUs. Both sides are packet registers, so the compares are now
   registers too (``held_tri_eq``, ``held_pix_eq``), computed a clock ahead from the
   registers' next values (each held packet R's kept packet or its stream's source,
   C's packets the held ones; for both outcomes of the accept, chosen by it last); the
   input head's compares are made from the port, and ``parked`` chooses between the
   two last. ``tb/unit/test_spreader_sim.py`` checks in every clock that the registers
   equal the compares they stand for (the lock-step runs rarely reach a parked packet
   with a provider inside).
16. The release scans start from flip-flops (issue 12; contract unchanged): a record is
   releasable when its reference (VDT) or pixel (PT) counter is 0, which was a compare
   of the counter ahead of the scan's lowest-record encoder, its ``freed`` one-hot and
   the counters' own reset (the routed critical path at 4 EUs after decision 15). Each
   counter's "is zero" is now a register (``refs_zero``, ``pix_zero``), updated with
   the counter: 1 on a release, ``count == all ones`` on an increment, ``count == 1``
   on a decrement (compares of the register, in parallel with the scan; ``pix_zero``
   since decision 25 from the PT's two counts).
17. A parked pixel packet's PT lookup a clock ahead (issue 12; contract unchanged): the
   lookup of a pixel packet's triangle (tag, EU, entity: a LUT-RAM read) was made after
   the source select (``parked`` -> the PT address -> the read -> the triangle's EU ->
   the pixel list's order -> the first request: the routed critical path at 4 EUs
   after decision 16). The PT now reads the word of the packet held after the edge a
   clock ahead (``PrimitiveTable.held_look``: the words at the held packet's record
   and at the input head's, each a register, transparent for the PT write at that
   edge, and which of them the packet held after the edge is, the held one if it is
   parked or R keeps it: a register the accept decides, choosing after the edge, so
   the accept reaches one flip-flop, as the rotation's walk); its valid and
   closed bits are read from the flip-flops at the held packet's record, a register.
   The input head's lookup reads from the port, and ``parked`` chooses between the two
   last. The PT's write-once fields are two memories (tag, EU, entity; the triangle's
   VDT records), so the added read port copies only the first.
   ``tb/unit/test_spreader_sim.py`` checks the register against a mirror of the PT's
   writes in every clock. (Decision 26 reads it at the held packet's record alone: a
   parked packet is held in the clock before too.) The same for a parked triangle's
   three VDT lookups at
   256/256 (words in registers that follow the held packet, the allocation forwarded,
   no read port added; commit ``efb4903``) placed at 26.72 MHz against 27.56 (seed 1,
   not routed) with 2,270 more TRELLIS_COMB, and was not kept (docs/spreader.md).
18. The error FIFO's write side ends in a register (issue 12; contract unchanged):
   :class:`StagedFIFO` shows at its ports what a ``SyncFIFO`` of the same depth shows,
   clock for clock, but a write loads a staging register (the newest entry) that moves
   into an inner FIFO at the next edge unless it is read in that clock (its room is
   the inner level plus the staged entry, registers). A completion's report
   (``done`` -> the in-flight select and C's entity compare -> ``known`` -> the
   report's enable) used to end in the error FIFO's write pointer, level counter and
   LUT-RAM write enable: the front end's critical path (its done FIFO's read -> the
   spreader's stage C forwarding -> the error FIFO). It now ends in the staging
   register; the report reaches ``err`` in the same clock as before.
20. Stage P's offers with the provider bits last (issue 12; contract unchanged; 19 is
   cut 2's number on the unmerged branch ``spreader-s13``). The
   offers of the triangle and pixel streams wait for their provider compares (the input
   head's indices or ``prid`` against the held and C's packets, from the port: the
   longest of stage P's inputs), and the arbiter's winner, ``load`` and the first
   request (``q_v``, ``q_eu``) came after them. Now the winner (:func:`_winner`) and
   ``load`` are made for each of the four values of the two provider bits from the
   sources' valid bits and the starvation registers (``Arbiter.ge``), and so are
   ``q_v``/``q_eu``'s next values; the provider bits choose among them last
   (``_State.by_provider``), before the accept. A triangle's or pixel packet's
   ``result`` no longer reads the provider bits (a missing vertex or ``prid`` is
   UNKNOWN_*): it is read only when the packet offers itself, when they are 0. R's and
   C's streams are one-hot registers (``r_is``, ``c_is``: the stage's valid bit and
   stream, decoded a clock ahead), so stage P's hazard and provider terms start from
   flip-flops, not from a decode of ``c_stream``/``r_stream``. The first-request scan's
   size compare for the input head (decision 11) was an adder behind ``r_size``
   (``in_size + r_size``) and a compare (at 4 EUs, the routed critical path once the
   offers were cut); it is ``fl - in_size >= r_size``, the subtraction from the ports.
   4 EUs, 32/32: 54.36 / 55.18 MHz routed at seeds 1 / 2 (54.76 / 53.56 before); the
   worst paths are stage P's parked-packet lookups and stage R's accept (README.md).
21. The log entry and the move command made without the accept (issue 12; contract
   unchanged): their fields were assigned under ``accepted`` (0 otherwise), so the
   accept gated every data bit of the ``log`` and ``move`` FIFOs (about 150 LUTs
   beside the LUT-RAM of the move FIFO): the routed critical path of this RTL at seeds
   1 and 2 ended in the move FIFO's write data. They are now made from stage R's
   registers alone: an entry pushed with neither an error nor a close (``consume_err``,
   ``consume_close``: registers and ``active``) is the accept's (``Kind.ALLOC`` is 0),
   and the move command is pushed only on the accept, so the accept reaches only the
   two FIFOs' write enables.
22. The scans read a registered status (issues 12 and 15; contract changed, the golden
   model's rule 3 first): every EU's ``status`` port, less R's request of that clock
   (in its first clock, or every clock with ``debit_held``; saturating at 0), goes
   into a register (``_State.st``, every EU empty at reset), and both scans (stage P's
   first request, :class:`StatusScan` after a refusal) and the ``local_records``
   compare read it a clock later, stage P's again less R's request of its own clock
   (the raised thresholds of decision 11). No status port reaches a scan: in the front
   end the QCC's ``run_room`` -> the adapter's held-request debit -> the rotation's
   walk, the held size debit and ``r_ahead`` -> ``alloc`` chain (issue 15's critical
   path) ends in this register. An EU loses room only to the spreader's requests, both
   of which are debited, so a passing check still means the EU has the room; room that
   appears shows a clock later. 4 EUs, 32/32: 53.40 / 50.99 / 55.93 MHz routed at seeds
   1-3 (52.90 / 54.76 / 56.39 before: the spread, since out of context the status port
   heads no timed path); ``spreader.spreader_qcc`` at the front end's parameters:
   61.88 MHz at seed 1 (54.48 before), its worst path now stage R's accept; 8 EUs:
   41.17 MHz at seed 1 (43.53 before), its worst path stage R's accept.
23. The release choice registered (issue 12; contract changed, the golden model's rule
   6 first): at the default tables (256/256) the routed critical path was the release
   engine's, a VDT record's bits -> the VDT scan's lowest record (a 256-bit priority
   encoder) -> the VDT's ``valid`` -> the PT's ``ready`` -> the PT's freed one-hot ->
   the PT's and VDT's bits and counters. Each table now has a choice register
   (:func:`_release_choice`: valid and record number) that its scan loads with the
   lowest releasable record, the register's own record left out, when the register is
   empty or its record is taken; the release stream is offered from the register (the
   word read at its record, the one-hot decoded from it), so the PT's ``ready``, the
   FIFO push and both freed one-hots come from registers and the scans end in the
   registers. A record leaves a clock later than before; one per clock still.
24. Stage E (issue 12; contract changed, the golden model's rule 5 first): a completed
   triangle's VDT records (the PT's ``mem_vr`` word at D's record, a LUT-RAM read)
   went through the VDT's three decoders into its reference counters in D's clock;
   they now go into registers (``e_dec``, ``e_vr``) and the counters drop a clock
   later, so every input of the per-record counters (C's and E's records, the freed
   one-hot) is a register or a decode of one. A VDT record held by a triangle is
   released a clock later.
25. The tables' counters smaller (issue 12, area; contract unchanged): at 256/256 the
   tables took 70 % of the ECP5-85F's LUT4, most of it per record. The PT's 256 pixel
   counters (13 flip-flops, an incrementer, a decrementer and their choice each) are
   two LUT-RAMs of 13-bit counts modulo ``2**13`` (:data:`PIX_W`): the pixel packets
   accepted (written by C) and completed (written by D), one write port each; a
   record has none in flight when its two counts are equal, so only ``pix_zero`` stays
   a flip-flop per record, set from compares of the counts read at C's and D's
   records (a record that takes both in one clock keeps its bit); released records
   need no clear, as they leave with equal counts. The VDT's reference counters (up to
   three increments and three decrements a clock, which one write port per memory
   cannot take) stay flip-flops, each with one adder (+1, or -1 as all ones) instead
   of an incrementer, a decrementer and a choice.
26. The parked packets' lookups from registers (issue 12; contract unchanged): at
   256/256 the routed critical path ran from ``parked`` through the source select into
   the VDT's LUT-RAM (a 256-deep read) and the triangle's checks to the first request.
   Each table now keeps, for the records the held packets name (the held triangle's
   three VDT records and its PT record, the held vertex packet's and patch's VDT
   records, the held pixel packet's PT record), registers with each record's state
   after this clock's edge (``VertexTable``/``PrimitiveTable`` ``held_look``,
   ``held_busy``): the record's ``open`` bit (valid and not closed, all a hit needs:
   one select per lookup, for the input heads' lookups too) and valid bit selected
   from the flip-flops with this
   edge's allocation, closes and release applied by compares of the record (selected
   from the bits' next values, the 256/256 build's deepest chain ran from C's record
   through the writes' one-hot decoders, a fan-out of 727, into these registers), the
   LUT-RAM word read now with this edge's allocation forwarded. A parked packet is held
   in the clock before too (it was in R or parked then, and ``held`` keeps it), so in
   its clock the registers equal its live lookups; stage P reads them for a parked
   packet and the table ports (now at the input heads' records only) for the input's
   head, ``parked`` choosing last. The VDT gets three read ports (the held triangle's
   records; decision 17's PT had one already, now read at the held record alone, not
   also at the input head's with a choice after the edge). A VDT record's ``half`` bit
   moved into its LUT-RAM word, so no lookup selects it from the flip-flops. And a
   parked packet's own stream has no packet in R or C (R's packet is a packet of its
   stream only when it is that packet, and C's was R's in the clock before), so the
   same-stream hazards (a record R's or C's packet writes or closes) are compared
   with the input head's fields only, gated by ``parked``: the 8-EU build's routed
   critical path ran from ``parked`` through the held triangle's compares with C's
   triangle. ``tb/unit/test_spreader_sim.py`` checks the registers against a mirror of
   the tables' writes in every clock, and the invariants they rely on.
27. The walk order registered (issue 12; contract unchanged): each
   :class:`CandidateList` decoded its type's walk (a register) into each EU's position
   and compared the positions pairwise ahead of the candidate order: after decision
   26 the deepest chain of the 32/32 build (18 LUT levels by the team's ``lut_depth.py``)
   ran from a walk register through that decode and the order to ``alloc[e].valid``.
   :class:`Rotation` now keeps the order itself in registers (``in_list``: the EU is
   in the list, ``before``: EU a is walked before EU b), computed from the next walk
   for both outcomes of the accept and chosen by it after the edge, as the walk was.
   Decisions 26 and 27 (4 EUs, seed 1): 256/256 43.25 MHz routed (40.06 before;
   38,164 LUT4), the worst path then stage R's accept (an in-flight bit -> the
   bad-answer check -> the held packets' enables); 32/32 49.75 MHz (54.22 before),
   its worst path the input head triangle's provider compares (from the port).
28. Stage L (issue 12; parameter ``input_stage``, default off; contract changed, the
   golden model's decision 11 first): a register per input stream (``_Head``:
   ``l_<stream>``, its valid bit, ``l_new``: loaded at the last edge) takes the
   input's head when it is empty or stage P takes its packet in this clock (the
   port's ``ready`` is ``~valid | taken``), and stage P reads it where it read the
   port. The tables' lookups of the heads are made on the way in and kept while the
   packet waits (the same after-the-edge forwarding as decision 26, not a new
   look-up): per lookup two registers, ``port`` (the live lookup at the input port's
   record -- the VDT's three vertex words and open bits for a triangle, a vertex or
   patch packet's valid bits, the PT's valid bit for a triangle and word and open bit
   for a pixel packet -- with this edge's allocation, closes and release applied) and
   ``keep`` (this clock's value at stage L's record with the same edge's writes
   applied), ``l_new`` choosing: after the edge that loaded stage L the first is its
   packet's lookup, after any other edge the second, so either equals the live
   lookup of stage L's packet in every clock (the tables change only through those
   writes; ``keep`` needs no read port, the word changes only by an allocation it
   forwards). No accept reaches these registers. Stage L does not take a triangle
   whose vertex group a vertex or patch packet held, in C or in stage L provides
   (the patch's second group a register, ``l_pat_g1``), nor a pixel packet whose
   triangle is held, in C or in stage L (the model's decision 11: compares of the
   port with registers, ``_port_provided``), so a triangle taken has its vertices
   written, as without stage L. Stage L's triangle and pixel packet's provider
   compares with the held and C's packets are registers (``l_tri_eq``, ``l_pix_eq``,
   as ``held_tri_eq``; 0 in the clock after stage L took the packet, which it took
   with no provider). 4 EUs, yosys: 32/32 16,870 LUT4 / 3,385 FF (15,663 / 2,953
   without), deepest chain 18 levels (17 without): ``l_new`` -> the lookup choice ->
   the triangle's candidate order -> ``q_v``; out of context the heads' chains were
   port paths, untimed, and are timed now. 256/256: 39,493 LUT4 / 7,659 FF (38,225 /
   7,251), 19 levels (16). docs/spreader.md has the routed figure.
29. The triangle's holder counts registered (issue 12; contract unchanged): how many
   of a triangle's three vertices each EU holds (its candidate order's first key) was
   counted in :class:`CandidateList` from the lookups' EU fields, after the lookups'
   choices (``parked``, and with stage L ``l_new``): a 4-bit compare per vertex and
   EU and a sum ahead of the order. :class:`VertexTable` now keeps the counts in
   registers beside the lookups' registers (``held_holds`` beside the held
   triangle's, and with stage L one beside each of ``port`` and ``keep``), computed
   from the same after-the-edge words, so they equal the counts of the lookups in
   every clock; stage P chooses among them as among the lookups. Without stage L the
   input head's counts are counted from the live lookups, as before.
30. The arbiter's starvation compares registered (contract unchanged): ``ge`` (a
   counter has reached the limit) was an 8-bit compare of two registers ahead of the
   winner, and so of ``load`` and stage L's enables. It is now a register, the
   compares made on the counter's next values (kept, incremented; a cleared counter
   never reaches a limit that is on) and the limit's next value (``limit_next``:
   this clock's STARVE word applied), chosen by ``load`` and the pass last.
31. The rotation's next order without a walk (contract unchanged): decision 27's
   registers were loaded from a walk built by rotating the list (the entry after
   ``last``, then an index modulo the count per entry, a select of the entry, each
   EU's position decoded, the positions compared pairwise): 20-22 LUT levels from the
   configuration's list registers and ``last_eu`` to the ``before`` registers at
   32/32, the deepest register-to-register chains of the design. ``tb.depth`` did not
   list them, since it keeps an end point's deepest chain only, and that one started
   at the ``cfg`` port (a list word of this clock), which nextpnr does not time out of
   context. Now the order is made from the list's own order, an AND-OR of the
   entries' compares (``ahead``: EU a is an entry before EU b), and the EUs listed
   after ``last`` (``after``, a select of ``ahead``'s row of ``last``): a is walked
   before b when both are on the same side of ``last`` and a is listed first, or a is
   after ``last`` and b is not. ``in_list`` is one register (it was the same in both).
   The new and the old component were equal in every clock of a simulation (3,000
   clocks of random LIST words and requests at 1, 2, 4 and 8 EUs);
   ``tb/unit/test_spreader_rotation.py`` checks the order against the golden model's
   walk. Yosys, 4 EUs, 32/32, stage L: the rotation's deepest chain 14 levels (22),
   16,590 LUT4 (17,034 with decisions 29-30 alone). Routed, 4 EUs, seed 1: 32/32 with
   stage L 56.79 MHz (48.79 with decisions 29-30 alone), 256/256 without it 46.80 MHz
   (43.25 after decision 27); the worst path is stage R's accept in both.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib import enum as hdl_enum
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from hw.params import check_int, check_pow2

__all__ = ["Spreader", "VertexTable", "PrimitiveTable", "SpreaderQCC", "EType", "Err", "Src",
           "Kind", "Ref", "CfgOp", "Outcome", "DESIGNS"]

MAX_EUS, GROUP = 16, 8
PIX_W = 13      # the PT's pixel packet counts, modulo 2**PIX_W (> N * 256 in flight)
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
STREAMS = ("i_vtx", "i_tri", "i_pix", "i_pat")      # the packet inputs, in type order
RELEASE = data.StructLayout({"eu": EU_W, "entity": ENTITY_W, "etype": 2, "rec": 8})


def _sat_inc(x):
    """``x + 1``, saturating at :data:`SAT` (an 8-bit counter)."""
    return Mux(x == SAT, SAT, x + 1)


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
    """``(any, index)`` of the lowest set bit of ``bits``: a priority encoder as a tree
    of 2:1 choices (depth ``log2 n``), not a chain over ``n`` entries."""
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
    any_, index = encode(0, n)
    return any_, (index if width else Const(0, 1))


def _holds(eus, n):
    """Per EU of ``n``, how many of ``eus`` (a triangle's three vertex EUs) name it
    (2 bits each)."""
    return Cat(sum(((eu == e).as_unsigned() for eu in eus), Const(0, 2))[:2]
               for e in range(n))


def _release_choice(m, releasable, n, width, taken):
    """A table's release choice register (decision 23; the golden model's rule 6).

    The scan's lowest releasable record, the offered one left out, is loaded when the
    register is empty or its record is ``taken`` at this edge; the register offers its
    record from the next clock. Returns ``(valid, record, low)``: the register, and
    ``low`` its record's one-hot (0 while empty), decoded from the register."""
    valid, rec, low = Signal(name="chosen"), Signal(max(1, width), name="chosen_rec"), Signal(n)
    m.d.comb += low.eq(Mux(valid, _onehot(rec[:width], n) if width else 1, 0))
    any_, index = _lowest(m, releasable & ~low, n, width, "release")
    with m.If(~valid | taken):
        m.d.sync += [valid.eq(any_), rec.eq(index)]
    return valid, rec, low


class VertexTable(wiring.Component):
    """The vertex descriptor table (VDT): one record per group of 8 vertices in flight.

    The write-once fields of a record (tag, EU, entity, vertex count) live in two
    LUT-RAM banks (even and odd records, so that a patch writes both of its records in
    one clock through one write port per bank). The bits the release scan reads every
    clock (valid, done, closed, patch, half) are flip-flop vectors and the reference
    counts are counters, each with its "is zero" bit as a register of its own (so the
    release scan starts from flip-flops, not from the counters' compares), all updated
    through one decoded one-hot per write site.

    Ports: ``busy_addr[i]``/``busy[i]`` (valid bit of a record: waits of vertex and
    patch packets), ``look_addr[i]``/``look[i]`` (the three vertex lookups of a
    triangle), both for the input heads; ``held_busy_addr[i]``/``held_busy[i]`` and
    ``held_addr[i]``/``held_look[i]``, the same for the held vertex, patch and
    triangle packets as registers (decision 26): each is the record's state after
    this clock's edge (read now and this edge's allocation, closes and release
    forwarded), so it equals the live lookup in the next clock whenever the held
    packet is the same then, which a parked packet always is; ``holds`` and
    ``held_holds`` (per EU, how many of the three lookups name it: the triangle's
    candidate order, decision 29) likewise, registers beside the lookups' where they
    are registers; ``alloc`` (write a
    vertex group, or both groups of a patch), ``close`` (a triangle's ``last`` bits),
    ``refs`` (reference count increments and decrements), ``done`` (a vertex or patch
    entity completed) and ``release`` (the record of the choice register, decision
    23; taking it frees the record).

    With ``input_stage`` (decision 28) ``busy_addr``/``look_addr`` are the records of
    the input ports' heads and ``busy``/``look`` are registers for stage L's packets:
    each lookup is made on the way into stage L (the record's state after this edge,
    as the held lookups) and kept up to date while the packet waits there (this edge's
    allocation, closes and release applied by compares of its record,
    ``head_busy_addr``/``head_addr``); ``head_new`` (per stream: stage L loaded its
    packet at the last edge) chooses between the two registers.
    """

    def __init__(self, *, records, index_bits, n_eus, input_stage=False):
        self.input_stage = input_stage
        self.records, self.n_eus = records, n_eus
        self.rbits = records.bit_length() - 1
        self.tag_bits = max(1, index_bits - 3 - self.rbits)
        R, T = self.rbits, self.tag_bits
        # ``half`` (the second record of a patch) is write-once too: it rides in the
        # word, so a lookup reads it with the word rather than from the flip-flops
        self.word = data.StructLayout({"tag": T, "eu": EU_W, "entity": ENTITY_W, "count": 4,
                                       "half": 1})
        # a lookup's record bits: ``open`` = valid and not closed (all a hit needs)
        self.entry = data.StructLayout({"open": 1} | self.word.members)
        recs = data.ArrayLayout(R, 3)
        super().__init__({
            "busy_addr": In(R).array(3), "busy": Out(1).array(3),
            "look_addr": In(R).array(3), "look": Out(self.entry).array(3),
            "held_busy_addr": In(R).array(3), "held_busy": Out(1).array(3),
            "held_addr": In(R).array(3), "held_look": Out(self.entry).array(3),
            "holds": Out(data.ArrayLayout(2, n_eus)),
            "held_holds": Out(data.ArrayLayout(2, n_eus)),
            "head_new": In(4), "head_busy_addr": In(R).array(3),
            "head_addr": In(R).array(3),
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
        # ``refs[r] == 0`` as a register (kept equal to it below), so that no counter
        # compare lies ahead of the release scan
        refs_zero = Signal(V, init=(1 << V) - 1)
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

        live_busy = [Signal(name=f"live_busy{i}") for i in range(3)]
        live_look = [Signal(self.entry, name=f"live_look{i}") for i in range(3)]
        for i in range(3):
            m.d.comb += live_busy[i].eq(valid.bit_select(self.busy_addr[i], 1))
        open_ = Signal(V)          # valid and not closed: one bit per lookup to select
        m.d.comb += open_.eq(valid & ~closed)
        for i in range(3):
            a, lk = self.look_addr[i], live_look[i]
            m.d.comb += [lk.open.eq(open_.bit_select(a, 1)), lk.as_value()[1:].eq(read(a, i))]

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
                         wp.data.count.eq(Mux(al.patch, GROUP, al.count)),
                         wp.data.half.eq(~mine)]

        # completion, triangle closes, the release scan
        d = self.done
        d_rec1 = Signal(R)
        m.d.comb += d_rec1.eq(d.rec + 1)
        done_set, close_set, ok, cand = (Signal(V, name=n) for n in
                                         ("done_set", "close_set", "ok", "cand"))
        m.d.comb += [
            done_set.eq(Mux(d.en, _onehot(d.rec, V) | Mux(d.patch, _onehot(d_rec1, V), 0), 0)),
            close_set.eq(_decode(self.close.mask, self.close.rec, V)),
            ok.eq(valid & done & closed & refs_zero),
            # a patch is released at its first record when both of its records are ready
            cand.eq(ok & (~patch | (~half & Cat(ok[1:], ok[0])))),
        ]
        # the release offered from the choice register (decision 23), its word read at
        # the register's record; a patch frees its second record too
        rl = self.release
        chosen, sel, low = _release_choice(m, cand, V, R, rl.ready)
        w, first_of_patch, freed = read(sel, 3), Signal(V), Signal(V)
        m.d.comb += [first_of_patch.eq(low & patch),
                     rl.valid.eq(chosen), rl.payload.eu.eq(w.eu),
                     rl.payload.entity.eq(w.entity),
                     rl.payload.etype.eq(Mux(first_of_patch.any(), PAT, VTX)),
                     rl.payload.rec.eq(sel),
                     freed.eq(Mux(rl.ready, low | Cat(first_of_patch[-1],
                                                      first_of_patch[:-1]), 0))]

        m.d.sync += [
            valid.eq((valid | written) & ~freed),
            done.eq(((done & ~written) | done_set) & ~freed),
            closed.eq(((closed & ~written) | Mux(al.noref, written, 0) | close_set) & ~freed),
            patch.eq(((patch & ~written) | Mux(al.patch, written, 0)) & ~freed),
            half.eq((half & ~written) | second),
        ]
        release = (rl.ready & chosen, sel, first_of_patch.any())
        self._held_lookups(m, read, (valid, open_), rec1, release)
        self._head_lookups(m, live_busy, live_look, rec1, release)
        inc, dec = Signal(V), Signal(V)
        m.d.comb += [inc.eq(_decode(self.refs.inc, self.refs.inc_rec, V)),
                     dec.eq(_decode(self.refs.dec, self.refs.dec_rec, V))]
        for r in range(V):
            with m.If(freed[r]):
                m.d.sync += [refs[r].eq(0), refs_zero[r].eq(1)]
            with m.Elif(inc[r] ^ dec[r]):
                # one adder for both steps (+1, or -1 as all ones), not two and a choice
                m.d.sync += [refs[r].eq(refs[r] + Cat(1, dec[r].replicate(8))),
                             refs_zero[r].eq(Mux(dec[r], refs[r] == 1, refs[r].all()))]
        return m

    def _after(self, m, a, v, o, w, rec1, release, name):
        """Record ``a``'s valid and open bits and word after this edge, from ``v``,
        ``o``, ``w`` before it: this edge's allocation (a patch writes ``rec`` and
        ``rec + 1``), closes and release applied by compares of the record."""
        al, cl = self.alloc, self.close
        rel_v, rel_rec, rel_patch = release
        first, second = Signal(name=f"{name}_first"), Signal(name=f"{name}_second")
        m.d.comb += [first.eq(al.en & (al.rec == a)),
                     second.eq(al.en & al.patch & (rec1 == a))]
        written = first | second
        freed = rel_v & ((rel_rec == a) | (rel_patch & ((rel_rec + 1)[:len(a)] == a)))
        closing = Cat(cl.mask[i] & (cl.rec[i] == a) for i in range(3)).any()
        new = Signal(self.word, name=f"{name}_new")
        m.d.comb += [new.tag.eq(Mux(first, al.tag, al.tag1)), new.eu.eq(al.eu),
                     new.entity.eq(al.entity),
                     new.count.eq(Mux(al.patch, GROUP, al.count)), new.half.eq(~first)]
        return ((v | written) & ~freed,
                ((o & ~written) | (written & ~al.noref)) & ~closing & ~freed,
                Mux(written, new, w))

    def _head_lookups(self, m, live_busy, live_look, rec1, release):
        """``busy``/``look``: the live lookups at the input heads' records, or with
        ``input_stage`` stage L's lookups (decision 28): a register per lookup made on
        the way into stage L (``port``: the live lookup at the input head's record,
        this edge's writes applied) and one kept while the packet waits in stage L
        (``keep``: the lookup of this clock, this edge's writes applied at stage L's
        record), ``head_new`` choosing."""
        if not self.input_stage:
            m.d.comb += [self.busy[i].eq(live_busy[i]) for i in range(3)]
            m.d.comb += [self.look[i].eq(live_look[i]) for i in range(3)]
            m.d.comb += self.holds.eq(_holds([lk.eu for lk in live_look], self.n_eus))
            return
        for i in range(3):
            new = self.head_new[VTX if i == 0 else PAT]
            port, keep = Signal(name=f"port_busy{i}"), Signal(name=f"keep_busy{i}")
            m.d.comb += self.busy[i].eq(Mux(new, port, keep))
            m.d.sync += [
                port.eq(self._after(m, self.busy_addr[i], live_busy[i], 0, 0, rec1,
                                    release, f"port_busy{i}")[0]),
                keep.eq(self._after(m, self.head_busy_addr[i], self.busy[i], 0, 0, rec1,
                                    release, f"keep_busy{i}")[0])]
        eus = {"port": [], "keep": []}
        for i in range(3):
            port = Signal(self.entry, name=f"port_look{i}")
            keep = Signal(self.entry, name=f"keep_look{i}")
            m.d.comb += self.look[i].eq(Mux(self.head_new[TRI], port, keep))
            for reg, a, lk, name in ((port, self.look_addr[i], live_look[i], "port"),
                                     (keep, self.head_addr[i], self.look[i], "keep")):
                w = Signal(self.word, name=f"{name}_word{i}")
                m.d.comb += w.eq(lk.as_value()[1:])
                _, o, w_after = self._after(m, a, 0, lk.open, w, rec1, release,
                                            f"{name}_look{i}")
                m.d.sync += [reg.open.eq(o), reg.as_value()[1:].eq(w_after)]
                eus[name].append(self.word(w_after).eu)
        # the triangle's holder counts beside each pair of registers (decision 29)
        port, keep = (Signal(data.ArrayLayout(2, self.n_eus), name=f"{n}_holds")
                      for n in ("port", "keep"))
        m.d.sync += [port.eq(_holds(eus["port"], self.n_eus)),
                     keep.eq(_holds(eus["keep"], self.n_eus))]
        m.d.comb += self.holds.eq(Mux(self.head_new[TRI], port, keep))

    def _held_lookups(self, m, read, bits, rec1, release):
        """The held packets' lookups as registers (decision 26): each record's state
        after this edge -- its valid and closed bits selected from the flip-flops with
        this edge's allocation, closes and release applied by compares of the record
        (not selected from the bits' next values, whose decoders of the writes' records
        fan out to every record), the word read now with the allocation forwarded (a
        patch writes ``rec`` and ``rec + 1``). ``bits``: the valid and the open (valid,
        not closed) vectors; ``release``: the record freed at this edge (valid,
        record, and whether it frees ``record + 1`` too: a patch)."""
        valid, open_ = bits
        for i in range(3):
            a = self.held_busy_addr[i]
            v, _, _ = self._after(m, a, valid.bit_select(a, 1), 0, 0, rec1, release,
                                  f"held_busy{i}")
            m.d.sync += self.held_busy[i].eq(v)
        eus = []
        for i in range(3):
            a, lk = self.held_addr[i], self.held_look[i]
            _, o, w = self._after(m, a, valid.bit_select(a, 1), open_.bit_select(a, 1),
                                  read(a, 4 + i), rec1, release, f"held{i}")
            m.d.sync += [lk.open.eq(o), lk.as_value()[1:].eq(w)]
            eus.append(self.word(w).eu)
        m.d.sync += self.held_holds.eq(_holds(eus, self.n_eus))


class PrimitiveTable(wiring.Component):
    """The primitive table (PT): one record per triangle in flight.

    Write-once fields (tag, EU, entity, the triangle's distinct VDT records) are
    LUT-RAM; valid, done and closed are flip-flop vectors updated through decoded
    one-hots; the pixel packets in flight are two LUT-RAMs of counts (accepted,
    completed) with a flip-flop per record for "none in flight" (decision 25).

    Ports: ``busy_addr``/``busy`` (valid bit: the input head triangle's wait),
    ``look_addr``/``look`` (the input head's pixel packet's triangle),
    ``held_busy_addr``/``held_busy`` and ``held_addr``/``held_look`` (the same for the
    held triangle and pixel packet: registers, each the record's state after this
    clock's edge -- the bits' next values, the word read now with this edge's
    allocation forwarded -- so that a parked packet's lookup starts from flip-flops;
    decisions 17 and 26), ``refs_addr``/``refs`` (the VDT records of a completed
    triangle), ``alloc`` (a triangle accepted), ``close`` (an end marker or a last
    pixel packet), ``pixels`` (a pixel packet accepted / completed), ``done`` (a
    triangle completed) and ``release`` (the record of the choice register, decision
    23). With ``input_stage``, ``busy``/``look`` are stage L's lookups, registers, as
    in :class:`VertexTable` (decision 28; ``head_new``, ``head_busy_addr``,
    ``head_addr``).
    """

    def __init__(self, *, records, prid_bits, vdt_records, input_stage=False):
        self.input_stage = input_stage
        self.records = records
        self.rbits = records.bit_length() - 1
        R, VR = max(1, self.rbits), vdt_records.bit_length() - 1
        self.tag_bits = max(1, prid_bits - self.rbits)
        # the fields a pixel packet's lookup and the release read, and a completed
        # triangle's VDT records (stage D), in two memories, so that the lookups'
        # read ports do not copy the VDT records
        self.loc = data.StructLayout({"tag": self.tag_bits, "eu": EU_W, "entity": ENTITY_W})
        self.vrs = data.StructLayout({"vrn": 3, "vr": data.ArrayLayout(VR, 3)})
        self.word = data.StructLayout(self.loc.members | self.vrs.members)
        self.entry = data.StructLayout({"open": 1} | self.loc.members)    # open: valid, not closed
        rec = data.StructLayout({"en": 1, "rec": R})
        super().__init__({
            "busy_addr": In(R), "busy": Out(1),
            "look_addr": In(R), "look": Out(self.entry),
            "held_busy_addr": In(R), "held_busy": Out(1),
            "held_addr": In(R), "held_look": Out(self.entry),
            "head_new": In(4), "head_busy_addr": In(R), "head_addr": In(R),
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
        # no pixel packet of the record in flight (decision 25), a register
        pix_zero = Signal(P, init=(1 << P) - 1)
        m.submodules.mem = mem = Memory(shape=self.loc, depth=P, init=[])
        m.submodules.mem_vr = mem_vr = Memory(shape=self.vrs, depth=P, init=[])
        wp, wp_vr = mem.write_port(), mem_vr.write_port()

        def read(addr, memory=mem):
            p = memory.read_port(domain="comb")
            m.d.comb += p.addr.eq(addr[:self.rbits])
            return p.data

        def bit(vec, addr):
            return vec.bit_select(addr[:self.rbits], 1) if self.rbits else vec[0]

        def onehot(addr):
            return _onehot(addr[:self.rbits], P) if self.rbits else Const(1, 1)

        al = self.alloc
        m.d.comb += [wp.en.eq(al.en), wp.addr.eq(al.rec[:self.rbits]),
                     wp_vr.en.eq(al.en), wp_vr.addr.eq(al.rec[:self.rbits]),
                     wp.data.tag.eq(al.word.tag), wp.data.eu.eq(al.word.eu),
                     wp.data.entity.eq(al.word.entity),
                     wp_vr.data.vrn.eq(al.word.vrn), wp_vr.data.vr.eq(al.word.vr)]
        live_busy, live_look = Signal(), Signal(self.entry)
        m.d.comb += live_busy.eq(bit(valid, self.busy_addr))
        w_in, open_ = read(self.look_addr), Signal(P)
        m.d.comb += [open_.eq(valid & ~closed),
                     live_look.open.eq(bit(open_, self.look_addr)),
                     live_look.tag.eq(w_in.tag), live_look.eu.eq(w_in.eu),
                     live_look.entity.eq(w_in.entity)]
        w_vr = read(self.refs_addr, mem_vr)
        m.d.comb += [self.refs.vrn.eq(w_vr.vrn), self.refs.vr.eq(w_vr.vr)]

        written, closing, done_set, inc, dec, ok = (
            Signal(P, name=n) for n in ("written", "closing", "done_set", "inc", "dec", "ok"))
        m.d.comb += [
            written.eq(Mux(al.en, onehot(al.rec), 0)),
            closing.eq(Mux(self.close[0].en, onehot(self.close[0].rec), 0)
                       | Mux(self.close[1].en, onehot(self.close[1].rec), 0)),
            done_set.eq(Mux(self.done.en, onehot(self.done.rec), 0)),
            inc.eq(Mux(self.pix_inc.en, onehot(self.pix_inc.rec), 0)),
            dec.eq(Mux(self.pix_dec.en, onehot(self.pix_dec.rec), 0)),
            ok.eq(valid & done & closed & pix_zero),
        ]
        rl = self.release
        chosen, sel, low = _release_choice(m, ok, P, self.rbits, rl.ready)
        w, freed = read(sel), Signal(P)
        m.d.comb += [rl.valid.eq(chosen), rl.payload.eu.eq(w.eu),
                     rl.payload.entity.eq(w.entity), rl.payload.etype.eq(TRI),
                     rl.payload.rec.eq(sel if self.rbits else 0),
                     freed.eq(Mux(rl.ready, low, 0))]
        m.d.sync += [
            valid.eq((valid | written) & ~freed),
            done.eq(((done & ~written) | done_set) & ~freed),
            closed.eq(((closed & ~written) | closing) & ~freed),
        ]
        # the held packets' lookups (decisions 17, 26): the state after this edge (the
        # bits from the flip-flops with this edge's writes and release applied by
        # compares of the record), the word read now with the allocation forwarded
        def at(rec, en, addr):
            return en & (rec[:self.rbits] == addr[:self.rbits])

        def after(addr, v=None, o=None):
            """Record ``addr``'s valid and open bits after this edge (from ``v``, ``o``
            before it; default the flip-flops') and whether this edge writes it."""
            v = bit(valid, addr) if v is None else v
            o = bit(open_, addr) if o is None else o
            written, freed = at(al.rec, al.en, addr), at(sel, rl.ready & chosen, addr)
            closing = at(self.close[0].rec, self.close[0].en, addr) \
                | at(self.close[1].rec, self.close[1].en, addr)
            return (v | written) & ~freed, (o | written) & ~closing & ~freed, written

        ha, w_held = self.held_addr, read(self.held_addr)
        _, o, fwd = after(ha)
        m.d.sync += [self.held_busy.eq(after(self.held_busy_addr)[0]),
                     self.held_look.open.eq(o),
                     self.held_look.as_value()[1:].eq(Mux(fwd, wp.data, w_held))]
        self._head_lookups(m, live_busy, live_look, after, wp.data)
        self._pixels(m, pix_zero, inc, dec, read)
        return m

    def _head_lookups(self, m, live_busy, live_look, after, written_word):
        """``busy``/``look``: the live lookups at the input heads' records, or with
        ``input_stage`` stage L's registers (decision 28; :class:`VertexTable`'s
        ``_head_lookups``)."""
        if not self.input_stage:
            m.d.comb += [self.busy.eq(live_busy), self.look.eq(live_look)]
            return
        port, keep = Signal(name="port_busy"), Signal(name="keep_busy")
        m.d.comb += self.busy.eq(Mux(self.head_new[TRI], port, keep))
        m.d.sync += [port.eq(after(self.busy_addr, v=live_busy, o=0)[0]),
                     keep.eq(after(self.head_busy_addr, v=self.busy, o=0)[0])]
        port = Signal(self.entry, name="port_look")
        keep = Signal(self.entry, name="keep_look")
        m.d.comb += self.look.eq(Mux(self.head_new[PIX], port, keep))
        for reg, a, lk in ((port, self.look_addr, live_look), (keep, self.head_addr, self.look)):
            _, o, fwd = after(a, v=0, o=lk.open)
            m.d.sync += [reg.open.eq(o),
                         reg.as_value()[1:].eq(Mux(fwd, written_word, lk.as_value()[1:]))]

    def _pixels(self, m, pix_zero, inc, dec, read):
        """The pixel packets in flight per record (decision 25): the packets accepted
        and the packets completed, counted modulo ``2**PIX_W`` in two LUT-RAMs of one
        write port each (a record has none in flight when the two are equal: both are
        0 at reset, and a record is released only when they are equal, so they need no
        clear); ``pix_zero`` follows the one or two records written in a clock."""
        counts = {n: Memory(shape=PIX_W, depth=self.records, init=[]) for n in ("acc", "cmp")}
        m.submodules.pix_acc, m.submodules.pix_cmp = counts["acc"], counts["cmp"]
        ci, di = self.pix_inc, self.pix_dec
        acc_c, cmp_c = read(ci.rec, counts["acc"]), read(ci.rec, counts["cmp"])
        acc_d, cmp_d = read(di.rec, counts["acc"]), read(di.rec, counts["cmp"])
        acc_next, cmp_next = Signal(PIX_W), Signal(PIX_W)
        m.d.comb += [acc_next.eq(acc_c + 1), cmp_next.eq(cmp_d + 1)]
        for name, port, data in (("acc", ci, acc_next), ("cmp", di, cmp_next)):
            wp = counts[name].write_port()
            m.d.comb += [wp.en.eq(port.en), wp.addr.eq(port.rec[:self.rbits]),
                         wp.data.eq(data)]
        # a record that takes both an accept and a completion keeps its bit
        only_inc, only_dec = Signal(self.records), Signal(self.records)
        m.d.comb += [only_inc.eq(inc & ~dec), only_dec.eq(dec & ~inc)]
        m.d.sync += pix_zero.eq((pix_zero & ~(only_inc | only_dec))
                                | Mux(acc_next == cmp_c, only_inc, 0)
                                | Mux(acc_d == cmp_next, only_dec, 0))


LOC = data.StructLayout({"eu": EU_W, "entity": ENTITY_W, "elem": ELEM_W})


def _eval_layout(detail_bits):
    """A stream's evaluation by the packet checks (stage P)."""
    return data.StructLayout({"outcome": Outcome, "code": Err, "detail": detail_bits,
                              "rec": 8})


def _report_layout(detail_bits):
    """One error source's report (``err``'s fields and an enable)."""
    return data.StructLayout({"en": 1, "code": Err, "src": 3, "seq": SEQ_W, "eu": EU_W,
                              "detail": detail_bits})


class Configuration(wiring.Component):
    """The configuration registers, written by ``cfg`` words (``ready`` = 1).

    ``lists[t]``/``counts[t]``: type t's priority list; ``need_records[t]`` (the
    minimum records, at least 1: the check's threshold), ``min_lines[t]``: its minimum
    (``min_lines_next[t]``: the value after this clock's edge); ``limit_next``: the
    anti-starvation limit after this clock's edge (the arbiter's compares are registers).
    ``written[t]``:
    this clock's word replaces type t's list (with ``cfg.payload.eus``/``count``, at the
    edge). ``report``: a malformed word (BAD_CONFIG, ignored) or an empty list (NO_EU,
    written).
    """

    def __init__(self, *, n_eus, layout, eu_records, eu_lines, starve_limit, detail_bits):
        self.n_eus, self.eu_records, self.eu_lines = n_eus, eu_records, eu_lines
        self.starve_limit = starve_limit
        SR, SL = layout["records"].width, layout["lines"].width
        super().__init__({
            "cfg": In(stream.Signature(layout)),
            "lists": Out(data.ArrayLayout(EU_W, n_eus)).array(4),
            "counts": Out(5).array(4),
            "need_records": Out(SR).array(4), "min_lines": Out(SL).array(4),
            "min_lines_next": Out(SL).array(4),
            "limit_next": Out(8), "written": Out(4),
            "report": Out(_report_layout(detail_bits)),
        })

    def entries(self):
        """The EU numbers of a LIST word (a list of ``MAX_EUS`` 4-bit values)."""
        return [self.cfg.payload.eus[4 * i:4 * i + 4] for i in range(MAX_EUS)]

    def elaborate(self, platform):
        m = Module()
        N = self.n_eus
        cf, entries = self.cfg.payload, self.entries()
        lists = [[Signal(EU_W, name=f"list{t}_{k}", init=k) for k in range(N)]
                 for t in range(4)]
        counts = [Signal(5, name=f"count{t}", init=N) for t in range(4)]
        needr = [Signal(len(self.need_records[0]), name=f"needr{t}", init=1) for t in range(4)]
        minl = [Signal(len(self.min_lines[0]), name=f"minl{t}", init=1) for t in range(4)]
        limit = Signal(8, init=self.starve_limit)
        for t in range(4):
            m.d.comb += [self.lists[t][k].eq(lists[t][k]) for k in range(N)]
            m.d.comb += [self.counts[t].eq(counts[t]), self.need_records[t].eq(needr[t]),
                         self.min_lines[t].eq(minl[t]), self.min_lines_next[t].eq(minl[t])]
        m.d.comb += [self.limit_next.eq(limit), self.cfg.ready.eq(1)]

        bad, no_eu = Signal(), Signal()
        with m.Switch(cf.op):
            with m.Case(CfgOp.LIST):     # too long, an EU out of range, or twice
                terms = [cf.count > N]
                for i in range(N):
                    terms.append((i < cf.count) & (entries[i] >= N))
                    terms += [(j < cf.count) & (entries[i] == entries[j])
                              for j in range(i + 1, N)]
                m.d.comb += [bad.eq(Cat(*terms).any()), no_eu.eq(cf.count == 0)]
            with m.Case(CfgOp.MIN):
                m.d.comb += bad.eq((cf.records > self.eu_records) | (cf.lines > self.eu_lines))
            with m.Case(3):
                m.d.comb += bad.eq(1)
        take = self.cfg.valid & ~bad
        for t in range(4):
            m.d.comb += self.written[t].eq(take & (cf.op == CfgOp.LIST) & (cf.etype == t))
            with m.If(self.written[t]):
                m.d.sync += [counts[t].eq(cf.count)]
                m.d.sync += [lists[t][k].eq(entries[k]) for k in range(N)]
            with m.If(take & (cf.op == CfgOp.MIN) & (cf.etype == t)):
                m.d.comb += self.min_lines_next[t].eq(cf.lines)
                m.d.sync += [needr[t].eq(Mux(cf.records == 0, 1, cf.records)),
                             minl[t].eq(cf.lines)]
        with m.If(take & (cf.op == CfgOp.STARVE)):
            m.d.comb += self.limit_next.eq(cf.limit)
            m.d.sync += limit.eq(cf.limit)
        r = self.report
        m.d.comb += [r.en.eq(self.cfg.valid & (bad | no_eu)),
                     r.code.eq(Mux(bad, Err.BAD_CONFIG, Err.NO_EU)), r.src.eq(Src.CONFIG),
                     r.detail.eq(Mux(bad, cf.op, cf.etype))]
        return m


class Arbiter(wiring.Component):
    """The starvation counters of the arbitration: which stream's packet gets the next
    pass is :func:`_winner` of the ``offer``-ing streams and ``ge`` -- fixed priority
    (pixel, triangle, vertex, patch), except that a stream passed over ``limit`` times
    in a row (0 = off) goes first. ``ge`` (a stream's counter has reached the limit) is
    from registers only, so the spreader evaluates :func:`_winner` for each value of
    stage P's provider bits and chooses by them last (decision 20); it gives the
    chosen winner back as ``win``. The counters count the passes (``load``) that
    another stream won while this one offered.

    ``ge`` is a register (decision 30): the compares of the counter's next value with
    the limit's next value (``limit_next``, a configuration word of this clock
    applied), made for the counter's three next values (kept, incremented, cleared)
    and chosen by ``load`` and the pass last, so that no 8-bit compare lies ahead of
    the arbiter's winner (a chain from the limit register through the winner to
    ``load`` and stage L's enables)."""

    def __init__(self):
        super().__init__({"offer": In(4), "limit_next": In(8), "load": In(1),
                          "win": In(2), "ge": Out(4)})

    def elaborate(self, platform):
        m = Module()
        starve = [Signal(8, name=f"starve{s}") for s in range(4)]
        on = self.limit_next != 0       # with the limit 0 no stream starves
        for s in range(4):
            passed = self.offer[s] & (self.win != s)
            inc = _sat_inc(starve[s])
            # a cleared counter (0) reaches a limit only when the limit is 0: off
            m.d.sync += self.ge[s].eq(on & Mux(self.load, passed & (inc >= self.limit_next),
                                               starve[s] >= self.limit_next))
            with m.If(self.load):
                m.d.sync += starve[s].eq(Mux(passed, inc, 0))
        return m


def _winner(offer, ge):
    """The arbiter's winner among the streams of ``offer`` (0 when none offers): the
    first in :data:`PRIORITY` among the starving ones (``offer & ge``), if any, else
    among all."""
    starving = offer & ge
    pick = Mux(starving.any(), starving, offer)
    win = Const(0, 2)
    for s in reversed(PRIORITY):            # the last one wrapped, PIX, comes first
        win = Mux(pick[s], s, win)
    return win


def _list_order(m, lst, count, n, name):
    """The order of a list (``lst``, ``count`` entries, distinct: the configuration
    refuses a list naming an EU twice) as relations on the EUs, with no positions
    decoded: ``in_list`` (EU e is one of the entries) and ``ahead`` (``ahead[a]`` bit
    ``b``: EU a is an entry before EU b's), an AND-OR of the entries' compares."""
    at = [[Signal(name=f"{name}_at{e}_{k}") for k in range(n)] for e in range(n)]
    for e in range(n):
        m.d.comb += [at[e][k].eq((k < count) & (lst[k] == e)) for k in range(n)]
    in_list = Signal(n, name=f"{name}_in")
    ahead = Signal(data.ArrayLayout(n, n), name=f"{name}_ahead")
    m.d.comb += in_list.eq(Cat(Cat(at[e]).any() for e in range(n)))
    # later[b][k]: EU b is an entry after entry k (one OR per EU and entry, shared by
    # every a rather than rebuilt per pair)
    later = [[Signal(name=f"{name}_later{b}_{k}") for k in range(n - 1)] for b in range(n)]
    for b in range(n):
        m.d.comb += [later[b][k].eq(Cat(at[b][k + 1:]).any()) for k in range(n - 1)]
    for a in range(n):
        m.d.comb += ahead[a].eq(Cat(
            Cat(at[a][k] & later[b][k] for k in range(n - 1)).any()
            if a != b else Const(0, 1) for b in range(n)))
    return in_list, ahead


class Rotation(wiring.Component):
    """Each type's priority list in walk order (load balance, ``rotate``): the list from
    the entry after the EU of the type's last request (from its first entry when
    there is none, it is not in the list or it is the list's last entry), entry j being
    the list's entry ``start + j`` modulo its ``count`` (entries from ``count`` on are
    unused), given as relations on the EUs: ``in_list[t]`` (the EU is in the list) and
    ``before[t]`` (``before[t][a]`` bit ``b``: EU a is walked before EU b). They are
    computed from the next state: the list a LIST word writes (``written[t]``,
    ``entries``, ``count``) and the EU of a request in its first clock (``asked[t]``,
    ``eu``: stage R's registers), for both cases (asked or not), each into registers,
    and ``asked`` itself is registered and chooses between them after the edge (one
    multiplexer from registers), so that stage P's candidate lists start from
    registers: the order relations, not a walk decoded into positions and compared
    (decision 27). The next relations are not built from a rotated walk either
    (decision 31): the walk from the entry after ``last`` puts the entries after
    ``last`` first, each part in list order, so EU a is walked before EU b when both
    are on the same side of ``last`` and a is listed first, or a is after ``last`` and
    b is not (with no ``last``, or ``last`` the final entry, no EU is after it: the walk
    is the list). Without ``rotate``, the lists' own order, from the configuration
    registers."""

    def __init__(self, *, n_eus, rotate):
        self.n_eus, self.rotate = n_eus, rotate
        order = {"in_list": Out(n_eus).array(4),
                 "before": Out(data.ArrayLayout(n_eus, n_eus)).array(4)}
        super().__init__({
            "lists": In(data.ArrayLayout(EU_W, n_eus)).array(4), "counts": In(5).array(4),
            "written": In(4), "entries": In(data.ArrayLayout(EU_W, n_eus)), "count": In(5),
            "asked": In(4), "eu": In(EU_W),
        } | order)

    def elaborate(self, platform):
        m = Module()
        N = self.n_eus
        if not self.rotate:
            for t in range(4):
                in_list, before = _list_order(m, self.lists[t], self.counts[t], N, f"list{t}")
                m.d.comb += [self.in_list[t].eq(in_list), self.before[t].eq(before)]
            return m
        for t in range(4):
            last_eu, last_ok = Signal(EU_W, name=f"last_eu{t}"), Signal(name=f"last_ok{t}")
            # the order after a request of this type and without one, both registers,
            # and which of them is the order (``took``: the request, registered): the
            # request reaches only a flip-flop, no logic (at 8 EUs, when it was the
            # accept, ABC had merged its final multiplexer into the walk's wide LUTs, a
            # routed critical path)
            took = Signal(name=f"took{t}")
            with m.If(self.asked[t]):
                m.d.sync += [last_eu.eq(self.eu), last_ok.eq(1)]
            m.d.sync += took.eq(self.asked[t])
            wr = self.written[t]
            lst = [Mux(wr, self.entries[k], self.lists[t][k]) for k in range(N)]
            cnt = Mux(wr, self.count, self.counts[t])
            in_list, ahead = _list_order(m, lst, cnt, N, f"list{t}")
            # the next walk's order for both outcomes (each from registers and the cfg
            # word), chosen by the request: the last multiplexer before the order
            regs = {}
            for name, last, ok in (("acc", self.eu, 1), ("keep", last_eu, last_ok)):
                # the EUs listed after ``last`` (``last`` listed): the walk's first part
                after = Signal(N, name=f"after{t}_{name}")
                m.d.comb += after.eq(Cat(
                    ok & Cat((last == k) & ahead[k][e] for k in range(N) if k != e).any()
                    for e in range(N)))
                before = Signal(data.ArrayLayout(N, N), name=f"walk{t}_{name}_before")
                m.d.comb += [before[a].eq(Cat(
                    (ahead[a][b] | ahead[b][a])       # both listed
                    & Mux(after[a] == after[b], ahead[a][b], after[a])
                    if a != b else Const(0, 1) for b in range(N))) for a in range(N)]
                # at reset every list is 0 .. N-1 in that order
                regs[name] = Signal(data.ArrayLayout(N, N), name=f"before{t}_{name}",
                                    init=[sum(1 << b for b in range(a + 1, N))
                                          for a in range(N)])
                m.d.sync += regs[name].eq(before)
            listed = Signal(N, name=f"in{t}", init=(1 << N) - 1)   # the same for both
            m.d.sync += listed.eq(in_list)
            m.d.comb += [self.in_list[t].eq(listed),
                         self.before[t].eq(Mux(took, regs["acc"], regs["keep"]))]
        return m


class CandidateList(wiring.Component):
    """One type's candidate list for its stream's packet, as an order on the EUs: its
    priority list in walk order (``in_list``, ``before``: :class:`Rotation`'s order
    relations), stably sorted by how many of the packet's data each EU holds
    (``counts``, 2 bits per EU: of a triangle's three vertices, from registers beside
    the VDT's lookups, decision 29, so that no EU compare lies between the lookups and
    the order; of a pixel packet's triangle, 0 or 1; left 0 for vertex and patch
    packets, whose list is the walk itself).

    The list is not built as a sequence: ``ahead[a]`` bit ``b`` says that EU ``a`` is
    listed and sorted ahead of listed EU ``b`` (more of the data held, or as many and
    earlier in the walk), a strict total order on the listed EUs. ``first`` (one-hot by
    EU, ``first_eu`` its number) is the first request: the listed EU whose bit in
    ``meets`` is set and that no other such EU is ahead of. Stage P builds every type's
    order in parallel, each for its stream's packet, and the arbiter's winner chooses
    among the results at the end; stage R's :class:`StatusScan` continues in the same
    order (a pass register) after a refusal."""

    def __init__(self, *, n_eus):
        self.n_eus = n_eus
        super().__init__({
            "in_list": In(n_eus), "before": In(data.ArrayLayout(n_eus, n_eus)),
            "counts": In(data.ArrayLayout(2, n_eus)),
            "meets": In(n_eus), "only_held": In(1), "room": In(n_eus, init=-1),
            "ahead": Out(data.ArrayLayout(n_eus, n_eus)),
            "first": Out(n_eus), "first_eu": Out(EU_W),
        })

    def elaborate(self, platform):
        m = Module()
        N = self.n_eus
        in_list, listed = self.in_list, Signal(N)
        # how many of the packet's data each EU holds
        held = [Signal(2, name=f"held{e}") for e in range(N)]
        for e in range(N):
            m.d.comb += held[e].eq(Mux(self.room[e], self.counts[e], 0))
        # ``only_held`` (patience): the listed EUs holding the packet's data, if any
        holding = Cat(held[e] != 0 for e in range(N)) & in_list
        m.d.comb += listed.eq(Mux(self.only_held & holding.any(), holding, in_list))
        for a in range(N):
            m.d.comb += self.ahead[a].eq(Cat(
                listed[a] & listed[b] & ((held[a] > held[b])
                                         | ((held[a] == held[b]) & self.before[a][b]))
                if a != b else Const(0, 1) for b in range(N)))
        m.d.comb += self.first.eq(_first_in_order(self.meets & listed, self.ahead, N))
        m.d.comb += self.first_eu.eq(_encode(self.first, N))
        return m


def _first_in_order(cands, ahead, n):
    """One-hot: the EU of ``cands`` that no other EU of ``cands`` is ``ahead`` of."""
    return Cat(cands[e] & ~Cat(cands[k] & ahead[k][e] for k in range(n) if k != e).any()
               if n > 1 else cands[e] for e in range(n))


def _encode(onehot, n):
    """The number of the set bit of a one-hot ``onehot`` (an OR per result bit)."""
    return Cat(Cat(onehot[e] for e in range(n) if e >> b & 1).any() if n > 1 << b
               else Const(0, 1) for b in range(EU_W))


class StatusScan(wiring.Component):
    """Stage R's scan after a refusal: among the EUs sorted after the one ``asked``
    (one-hot) in the pass's candidate order (``ahead``, :class:`CandidateList`), the
    first whose ``status`` (the scans' status register, decision 22) meets the pass's minimum (``need_records``, an entity,
    ``need_lines``): ``next`` (one-hot; 0: none) and its number ``eu``; registered, it is
    the next clock's request."""

    def __init__(self, *, n_eus, status_layout):
        self.n_eus = n_eus
        SR, SL = status_layout["free_records"].width, status_layout["free_lines"].width
        super().__init__({
            "status": In(status_layout).array(n_eus),
            "ahead": In(data.ArrayLayout(n_eus, n_eus)), "asked": In(n_eus),
            "need_records": In(SR), "need_lines": In(SL),
            "next": Out(n_eus), "eu": Out(EU_W),
        })

    def elaborate(self, platform):
        m = Module()
        N = self.n_eus
        meets, after = Signal(N), Signal(N)
        for e in range(N):
            st = self.status[e]
            m.d.comb += meets[e].eq((st.free_records >= self.need_records)
                                    & (st.free_entities >= 1)
                                    & (st.free_lines >= self.need_lines))
        # the EUs sorted after the one asked (its row of ``ahead``)
        m.d.comb += after.eq(Cat(Cat(self.asked[a] & self.ahead[a][b] for a in range(N)).any()
                                 for b in range(N)))
        m.d.comb += [self.next.eq(_first_in_order(meets & after, self.ahead, N)),
                     self.eu.eq(_encode(self.next, N))]
        return m


class InFlightTable(wiring.Component):
    """``(eu, entity) -> (type, record)`` of every entity allocated and not completed
    (the spec's logical table): a memory of ``N*256`` words with one write port
    (``record``, on accept) and an asynchronous read port (``query``: a completion's
    entity), plus ``N*256`` valid flip-flops (set on accept, cleared by ``clear`` at the
    query's address; both in one clock at different addresses). ``answer_busy[e]``: the
    entity EU e names in its answer (``answer[e]``) is still in flight (a bad answer),
    for every EU in parallel, so that the check does not wait for the scan's choice."""

    def __init__(self, *, n_eus):
        self.n_eus = n_eus
        key = {"eu": EU_W, "entity": ENTITY_W}
        super().__init__({
            "record": In(data.StructLayout({"en": 1, **key, "etype": 2, "rec": 8})),
            "answer": In(ENTITY_W).array(n_eus), "answer_busy": Out(1).array(n_eus),
            "query": In(data.StructLayout(key)), "clear": In(1),
            "known": Out(1), "etype": Out(2), "rec": Out(8),
        })

    def elaborate(self, platform):
        m = Module()
        N = self.n_eus
        m.submodules.mem = mem = Memory(shape=2 + 8, depth=N * 256, init=[])
        wp, rq = mem.write_port(), mem.read_port(domain="comb")
        W = len(wp.addr)
        busy = Signal(N * 256)
        rec, q = self.record, self.query
        w_addr, q_addr = Cat(rec.entity, rec.eu), Cat(q.entity, q.eu)
        m.d.comb += [wp.en.eq(rec.en), wp.addr.eq(w_addr[:W]), wp.data.eq(Cat(rec.etype, rec.rec)),
                     rq.addr.eq(q_addr[:W]),
                     self.known.eq((q.eu < N) & busy.bit_select(q_addr, 1)),
                     self.etype.eq(rq.data[:2]), self.rec.eq(rq.data[2:])]
        for e in range(N):
            m.d.comb += self.answer_busy[e].eq(
                busy[256 * e:256 * (e + 1)].bit_select(self.answer[e], 1))
        set_, clear = Signal(N * 256), Signal(N * 256)
        m.d.comb += [set_.eq(Mux(rec.en, Const(1, N * 256) << w_addr, 0)),
                     clear.eq(Mux(self.clear, Const(1, N * 256) << q_addr, 0))]
        m.d.sync += busy.eq((busy | set_) & ~clear)
        return m


class StagedFIFO(wiring.Component):
    """A FIFO whose ports behave exactly as those of ``SyncFIFO(width, depth)`` (an
    entry written at an edge is readable from the next clock, ``w_rdy`` while fewer
    than ``depth`` entries are held), but whose write side ends in a register: a write
    loads a staging register (the newest entry), which moves into an inner
    ``SyncFIFO`` at the next edge unless it is read in that clock. So a late ``w_en``
    reaches a flip-flop, not the write pointer, the level and the LUT-RAM's write
    enable (decision 18: the error FIFO, written by a completion's lookup)."""

    def __init__(self, *, width, depth):
        self.width, self.depth = width, depth
        super().__init__({"w_en": In(1), "w_data": In(width), "w_rdy": Out(1),
                          "r_en": In(1), "r_data": Out(width), "r_rdy": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = SyncFIFO(width=self.width, depth=self.depth)
        staged_v, staged = Signal(), Signal(self.width)
        # entries held: the inner FIFO's and the staged one (at most ``depth``)
        m.d.comb += self.w_rdy.eq(Mux(staged_v, inner.level < self.depth - 1,
                                      inner.level < self.depth))
        # the head: the inner FIFO's, else the staged entry, read straight from the
        # staging register (then it does not move into the inner FIFO)
        direct = staged_v & ~inner.r_rdy & self.r_en
        m.d.comb += [self.r_rdy.eq(inner.r_rdy | staged_v),
                     self.r_data.eq(Mux(inner.r_rdy, inner.r_data, staged)),
                     inner.r_en.eq(self.r_en),
                     inner.w_en.eq(staged_v & ~direct), inner.w_data.eq(staged)]
        m.d.sync += [staged_v.eq(self.w_en & self.w_rdy), staged.eq(self.w_data)]
        return m


class ErrorReporter(wiring.Component):
    """The ``err`` reports of one clock: the first enabled source of ``sources`` (in
    precedence order) goes to ``err`` (a FIFO's write side); the sticky ``error`` is set
    by any report, ``lost`` when a report finds no room or a second one comes in the
    same clock."""

    def __init__(self, *, n_sources, err_layout, detail_bits):
        self.n_sources = n_sources
        super().__init__({
            "sources": In(_report_layout(detail_bits)).array(n_sources),
            "err": Out(stream.Signature(err_layout)),
            "error": Out(1), "lost": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        er = self.err.payload
        for src in reversed(self.sources):
            with m.If(src.en):
                m.d.comb += [er.code.eq(src.code), er.src.eq(src.src), er.seq.eq(src.seq),
                             er.eu.eq(src.eu), er.detail.eq(src.detail)]
        n = Signal(range(self.n_sources + 1))
        m.d.comb += [n.eq(sum(s.en.as_unsigned() for s in self.sources)),
                     self.err.valid.eq(n != 0)]
        error, lost = Signal(), Signal()
        m.d.comb += [self.error.eq(error), self.lost.eq(lost)]
        with m.If(n != 0):
            m.d.sync += error.eq(1)
            with m.If(~self.err.ready | (n > 1)):
                m.d.sync += lost.eq(1)
        return m


def _provider_groups(vtx, pat, pat_g1, c_vtx, c_pat, c_pat_g1):
    """The vertex groups a packet inside the spreader or in stage C provides, in the
    order of the provider compares (:class:`PacketChecks` and the registered compares of
    a held triangle, ``Spreader._provider_compares``): the held vertex packet's, the held
    patch's two, C's vertex packet's, C's patch's two."""
    return [vtx.base[3:], pat.base[3:], pat_g1, c_vtx.base[3:], c_pat.base[3:], c_pat_g1]


class _Stage:
    """A pipeline stage's packets for stage P's hazard checks: ``is_[s]`` (the stage
    holds a packet of stream s) and the packet registers of each stream."""

    def __init__(self, is_, vtx, tri, pix, pat):
        self.is_, self.vtx, self.tri, self.pix, self.pat = is_, vtx, tri, pix, pat


class PacketChecks(wiring.Component):
    """Stage P's evaluation of every stream's packet (``vtx``, ``tri``, ``pix``, ``pat``:
    the parked packet or the input's head), in parallel: the checks in the golden
    model's precedence (MALFORMED, TOO_LARGE, NO_EU, UNKNOWN_VERTEX, UNKNOWN_PRID), the
    VDT/PT lookups and the waits (``result[s]``: outcome, code, detail, record).

    A packet waits where its record is occupied or where stage R's packet (``held_*``
    of the stream set in ``r_is``, one-hot, 0 while R is idle) or stage C's (``c_*`` of
    the stream set in ``c_is``) writes or closes a record it reads: P sees neither write (C's
    lands at this clock's edge, R's a clock after its accept). A triangle naming a
    vertex whose group a vertex or patch packet inside the spreader (``held_valid``) or
    in C provides (a patch's second group is ``held_pat_g1``/``c_pat_g1``, a register
    loaded with the patch: no adder in this compare), and a pixel packet whose triangle
    is inside the spreader or in C, would only wait: ``provider`` marks them so that
    they do not offer themselves to the arbiter. ``result`` of a triangle or pixel
    packet is therefore made as if ``provider`` were 0 (a missing vertex or prid is
    UNKNOWN_*): it is read only when the packet offers itself (decision 20).
    ``tri_locs``/``tri_recs``/``tri_distinct`` are a triangle's vertex data, VDT
    records and the mask of its distinct records; ``pix_tri`` is a pixel packet's
    triangle (its PT lookup).
    """

    def __init__(self, *, layouts, vdt_entry, pt_entry, vdt_records, pt_records,
                 index_bits, max_lines, detail_bits, input_stage=False):
        self.input_stage = input_stage
        self.vb = vdt_records.bit_length() - 1
        self.pb = pt_records.bit_length() - 1
        self.index_bits, self.max_lines = index_bits, max_lines
        VR, PR = max(1, self.vb), max(1, self.pb)
        super().__init__({
            "vtx": In(layouts["i_vtx"]), "tri": In(layouts["i_tri"]),
            "pix": In(layouts["i_pix"]), "pat": In(layouts["i_pat"]),
            "held_vtx": In(layouts["i_vtx"]), "held_tri": In(layouts["i_tri"]),
            "held_pix": In(layouts["i_pix"]), "held_pat": In(layouts["i_pat"]),
            "held_pat_g1": In(index_bits - 2),
            "held_valid": In(4), "r_is": In(4), "empty": In(4),
            "parked": In(4), "in_vtx": In(layouts["i_vtx"]), "in_tri": In(layouts["i_tri"]),
            "in_pix": In(layouts["i_pix"]), "in_pat": In(layouts["i_pat"]),
            "held_tri_eq": In(data.ArrayLayout(6, 3)), "held_pix_eq": In(2),
            "in_tri_eq": In(data.ArrayLayout(6, 3)), "in_pix_eq": In(2),
            "c_vtx": In(layouts["i_vtx"]), "c_tri": In(layouts["i_tri"]),
            "c_pix": In(layouts["i_pix"]), "c_pat": In(layouts["i_pat"]),
            "c_pat_g1": In(index_bits - 2), "c_is": In(4),
            "vdt_busy_addr": Out(VR).array(3), "vdt_busy": In(1).array(3),
            "vdt_look_addr": Out(VR).array(3), "vdt_look": In(vdt_entry).array(3),
            "vdt_held_busy": In(1).array(3), "vdt_held_look": In(vdt_entry).array(3),
            "pt_busy_addr": Out(PR), "pt_busy": In(1), "pt_held_busy": In(1),
            "pt_look_addr": Out(PR), "pt_look": In(pt_entry), "pt_held_look": In(pt_entry),
            "result": Out(_eval_layout(detail_bits)).array(4),
            "provider": Out(4),
            "tri_locs": Out(LOC).array(3), "tri_recs": Out(VR).array(3),
            "tri_distinct": Out(3), "pix_tri": Out(LOC),
        })

    # record and tag of a vertex index or a prid
    def vrec(self, index):
        return index[3:3 + self.vb] if self.vb else Const(0, 1)

    def vtag(self, index):
        return index[3 + self.vb:] if self.index_bits > 3 + self.vb else Const(0, 1)

    def prec(self, prid):
        return prid[:self.pb] if self.pb else Const(0, 1)

    def ptag(self, prid):
        return prid[self.pb:] if len(prid) > self.pb else Const(0, 1)

    def elaborate(self, platform):
        m = Module()
        # the packets whose table writes stage P cannot see: R's (written a clock after
        # its accept) and C's (written at this clock's edge)
        stages = [_Stage([self.r_is[s] for s in range(4)],
                         self.held_vtx, self.held_tri, self.held_pix, self.held_pat),
                  _Stage([self.c_is[s] for s in range(4)],
                         self.c_vtx, self.c_tri, self.c_pix, self.c_pat)]
        self._vertex(m, stages)
        self._patch(m, stages)
        self._triangle(m, stages)
        self._pixel(m, stages)
        return m

    def _vrecs(self, st):
        """The VDT records a stage's vertex or patch packet writes (the second for a
        patch)."""
        base = Mux(st.is_[PAT], st.pat.base, st.vtx.base)
        first = self.vrec(base)
        return st.is_[VTX] | st.is_[PAT], first, (first + 1)[:len(first)]

    def _vertex(self, m, stages):
        pv, res = self.vtx, self.result[VTX]
        rec, in_rec = self.vrec(pv.base), self.vrec(self.in_vtx.base)
        m.d.comb += [res.rec.eq(rec), self.vdt_busy_addr[0].eq(in_rec)]
        # R's and C's vertex packets only for the input's head: a parked packet was in
        # R in the clock before, so neither R nor C holds one of its stream (decision 26)
        hazard = Const(0, 1)
        for st in stages:
            _, r0, r1 = self._vrecs(st)
            hazard = hazard | (st.is_[VTX] & ~self.parked[VTX] & (in_rec == r0)) \
                | (st.is_[PAT] & ((rec == r0) | (rec == r1)))
        busy = Mux(self.parked[VTX], self.vdt_held_busy[0], self.vdt_busy[0])
        with m.If((pv.count == 0) | (pv.count > GROUP) | (pv.base[:3] != 0)):
            m.d.comb += [res.outcome.eq(Outcome.ERR), res.code.eq(Err.MALFORMED)]
        self._size_checks(m, VTX, pv.size)
        with m.Elif(busy | hazard):
            m.d.comb += res.outcome.eq(Outcome.WAIT)

    def _patch(self, m, stages):
        pa, res = self.pat, self.result[PAT]
        rec, rec1 = self.vrec(pa.base), Signal(max(1, self.vb))
        in_rec, in_rec1 = self.vrec(self.in_pat.base), Signal(max(1, self.vb))
        m.d.comb += [rec1.eq(rec + 1), in_rec1.eq(in_rec + 1), res.rec.eq(rec),
                     self.vdt_busy_addr[1].eq(in_rec), self.vdt_busy_addr[2].eq(in_rec1)]
        # R's and C's patches only for the input's head (as for vertex packets)
        hazard = Const(0, 1)
        for st in stages:
            _, r0, r1 = self._vrecs(st)
            hazard = hazard | (st.is_[VTX] & ((rec == r0) | (rec1 == r0))) \
                | (st.is_[PAT] & ~self.parked[PAT]
                   & ((in_rec == r0) | (in_rec1 == r0) | (in_rec == r1)))
        busy = Mux(self.parked[PAT], self.vdt_held_busy[1] | self.vdt_held_busy[2],
                   self.vdt_busy[1] | self.vdt_busy[2])
        with m.If(pa.base[:3] != 0):
            m.d.comb += [res.outcome.eq(Outcome.ERR), res.code.eq(Err.MALFORMED)]
        self._size_checks(m, PAT, pa.size)
        with m.Elif(busy | hazard):
            m.d.comb += res.outcome.eq(Outcome.WAIT)

    def _size_checks(self, m, s, size, first=False):
        """MALFORMED (size 0), TOO_LARGE and NO_EU of stream ``s``: an ``If`` chain
        (``first``) or the continuation of one."""
        res = self.result[s]
        with (m.If if first else m.Elif)(size == 0):
            m.d.comb += [res.outcome.eq(Outcome.ERR), res.code.eq(Err.MALFORMED)]
        with m.Elif(size > self.max_lines):
            m.d.comb += [res.outcome.eq(Outcome.ERR), res.code.eq(Err.TOO_LARGE),
                         res.detail.eq(size)]
        with m.Elif(self.empty[s]):
            m.d.comb += [res.outcome.eq(Outcome.ERR), res.code.eq(Err.NO_EU),
                         res.detail.eq(s)]

    def _triangle(self, m, stages):
        """Three VDT lookups. A missing vertex whose group a vertex or patch packet
        inside the spreader or in C provides makes the triangle wait, as does a group
        R's or C's triangle closes; one that none provides is UNKNOWN_VERTEX."""
        pt, res = self.tri, self.result[TRI]
        idx = [pt.i0, pt.i1, pt.i2]
        recs = [self.vrec(x) for x in idx]
        hit, prov, closing = (Signal(3, name=n) for n in ("t_hit", "t_prov", "t_closing"))
        # the groups provided (the held and C's vertex and patch packets') and whether
        # each is there; the compares for both sources, ``parked`` choosing last: the
        # input head's from the port, the parked triangle's registers (``held_tri_eq``,
        # computed a clock before from the registers' next values), so that no source
        # select and no 13-bit compare lies ahead of the offers for a parked triangle
        groups = _provider_groups(self.held_vtx, self.held_pat, self.held_pat_g1,
                                  self.c_vtx, self.c_pat, self.c_pat_g1)
        there = [self.held_valid[VTX], self.held_valid[PAT], self.held_valid[PAT],
                 stages[1].is_[VTX], stages[1].is_[PAT], stages[1].is_[PAT]]
        in_idx = [self.in_tri.i0, self.in_tri.i1, self.in_tri.i2]
        parked = self.parked[TRI]
        for i in range(3):
            x, g, in_rec = idx[i], in_idx[i][3:], self.vrec(in_idx[i])
            # the lookup: the input head's from the VDT's ports, the parked triangle's
            # from the VDT's registers (decision 26), ``parked`` choosing
            lk = Signal(self.vdt_look[i].shape(), name=f"t_look{i}")
            m.d.comb += lk.eq(Mux(parked, self.vdt_held_look[i], self.vdt_look[i]))
            if self.input_stage:    # stage L's registers (decision 28)
                prov_in = Cat(v & self.in_tri_eq[i][n] for n, v in enumerate(there)).any()
            else:
                prov_in = Cat(v & (g == gr) for v, gr in zip(there, groups)).any()
            prov_held = Cat(v & self.held_tri_eq[i][n] for n, v in enumerate(there)).any()
            m.d.comb += [
                self.vdt_look_addr[i].eq(in_rec), self.tri_recs[i].eq(recs[i]),
                hit[i].eq(lk.open & (lk.tag == self.vtag(x)) & (x[:3] < lk.count)),
                prov[i].eq(Mux(parked, prov_held, prov_in)),
                # R's and C's triangles only for the input's head: a parked triangle
                # was in R in the clock before, so neither holds one (decision 26)
                closing[i].eq(~parked & Cat(
                    st.is_[TRI] & st.tri.last[j] & (self.vrec(st.tri[f"i{j}"]) == in_rec)
                    for st in stages for j in range(3)).any()),
                self.tri_locs[i].eu.eq(lk.eu), self.tri_locs[i].entity.eq(lk.entity),
                self.tri_locs[i].elem.eq(Cat(x[:3], lk.half)),
            ]
        m.d.comb += self.tri_distinct.eq(Cat(Const(1, 1), recs[1] != recs[0],
                                             (recs[2] != recs[0]) & (recs[2] != recs[1])))
        rec, in_rec = self.prec(pt.prid), self.prec(self.in_tri.prid)
        m.d.comb += [res.rec.eq(rec), self.pt_busy_addr.eq(in_rec),
                     self.provider[TRI].eq(prov.any())]
        wait = ((~hit | closing).any() | Mux(parked, self.pt_held_busy, self.pt_busy)
                | (~parked & Cat(st.is_[TRI] & (self.prec(st.tri.prid) == in_rec)
                                 for st in stages).any()))
        self._size_checks(m, TRI, pt.size, first=True)
        for i in range(3):      # read only when the triangle offers: ``prov`` is 0
            with m.Elif(~hit[i]):
                m.d.comb += [res.outcome.eq(Outcome.ERR), res.code.eq(Err.UNKNOWN_VERTEX),
                             res.detail.eq(idx[i])]
        with m.Elif(wait):
            m.d.comb += res.outcome.eq(Outcome.WAIT)

    def _pixel(self, m, stages):
        """The PT lookup: a missing prid whose triangle is inside the spreader or in C
        waits, as does a primitive R's or C's pixel packet closes; an end marker (mask 0,
        ``last``) closes its primitive."""
        pp, res, look, held = self.pix, self.result[PIX], self.pt_look, self.pt_held_look
        rec = self.prec(pp.prid)
        hit, prov, hazard = Signal(), Signal(), Signal()
        # the input head's prid against the held and C's triangles': from the port, or
        # stage L's registers (decision 28)
        in_eq = self.in_pix_eq if self.input_stage else Cat(
            self.held_tri.prid == self.in_pix.prid, self.c_tri.prid == self.in_pix.prid)
        # the lookup for both sources, ``parked`` choosing last: the input head's from
        # the port, the parked packet's from the PT's register (``pt_held_look``, read a
        # clock ahead; decision 17), so that no source select and no LUT-RAM read lies
        # ahead of a parked packet's triangle EU and the pixel list's order
        hit_in = look.open & (look.tag == self.ptag(self.in_pix.prid))
        hit_held = held.open & (held.tag == self.ptag(self.held_pix.prid))
        parked = self.parked[PIX]
        m.d.comb += [
            self.pt_look_addr.eq(self.prec(self.in_pix.prid)), res.rec.eq(rec),
            hit.eq(Mux(parked, hit_held, hit_in)),
            # for both sources, ``parked`` choosing last (the parked packet's compares
            # are registers: ``held_pix_eq``), as a triangle's provider compares
            prov.eq(Mux(self.parked[PIX],
                        (self.held_valid[TRI] & self.held_pix_eq[0])
                        | (stages[1].is_[TRI] & self.held_pix_eq[1]),
                        (self.held_valid[TRI] & in_eq[0]) | (stages[1].is_[TRI] & in_eq[1]))),
            # R's and C's pixel packets only for the input's head (decision 26)
            hazard.eq(~parked & Cat(st.is_[PIX] & st.pix.last
                                    & (self.prec(st.pix.prid) == self.prec(self.in_pix.prid))
                                    for st in stages).any()),
            self.provider[PIX].eq(prov),
            self.pix_tri.eu.eq(Mux(parked, held.eu, look.eu)),
            self.pix_tri.entity.eq(Mux(parked, held.entity, look.entity)),
        ]
        with m.If(pp.mask == 0):
            with m.If(~pp.last):
                m.d.comb += [res.outcome.eq(Outcome.ERR), res.code.eq(Err.MALFORMED)]
            with m.Elif(~hit):  # read only when the packet offers: ``prov`` is 0
                m.d.comb += [res.outcome.eq(Outcome.ERR), res.code.eq(Err.UNKNOWN_PRID),
                             res.detail.eq(pp.prid)]
            with m.Elif(hazard):
                m.d.comb += res.outcome.eq(Outcome.WAIT)
            with m.Else():
                m.d.comb += res.outcome.eq(Outcome.CLOSE)
        self._size_checks(m, PIX, pp.size)
        with m.Elif(~hit):
            m.d.comb += [res.outcome.eq(Outcome.ERR), res.code.eq(Err.UNKNOWN_PRID),
                         res.detail.eq(pp.prid)]
        with m.Elif(hazard):
            m.d.comb += res.outcome.eq(Outcome.WAIT)


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
        Load balance: walk each type's priority list from the EU after the one the
        type's last request went to (True, default), or from its first entry.
    debit_held : bool
        Stage P's first-request scan counts stage R's request out of its EU's status in
        the request's first clock only (False, default; EUs such as the QCC show an
        allocation from the clock after they took it), or in every clock R holds it
        (True; EUs whose status changes only at their answer).
    patience : int
        Pixel locality (decision 13; the golden model's decision 10): in its first
        ``patience`` passes a pixel packet is offered only to its triangle's EU (when
        that EU is in the pixel list); a pass that finds it without room parks the
        packet. 0..255, default 0 (off).
    local_records : int
        Triangle locality yields to load (decision 13; the golden model's decision 10):
        a vertex-holding EU heads a triangle's candidate list only while it has at
        least ``local_records`` free records (in the status stage P's scan reads);
        one with fewer keeps its place in the walk. 0 .. ``eu_records``, default 0
        (off).
    answer_ahead : bool
        The EUs name the entity of each answer a clock ahead (True: the port
        ``entity_ahead[e]`` of clock t equals ``entity[e]`` of clock t + 1, as
        :class:`SpreaderQCC`'s registered answer gives it), so that the bad-answer
        check (the entity still in flight) is made a clock early and registered, this
        clock's table changes forwarded: the check's outcome is the same, clock for
        clock; or not (False, default: the check reads ``entity[e]``). An RTL option
        only: the golden model has no such parameter.
    input_stage : bool
        Stage L (decision 28; the golden model's decision 11): each input's packet is
        taken into a register of its stream, its table lookups made on the way in, a
        clock before stage P can prepare it (True), or stage P prepares the input's
        head from the port (False, default).

    Raises
    ------
    TypeError, ValueError
        On a parameter out of range, naming it.
    """

    def __init__(self, *, n_eus=4, vdt_records=256, pt_records=256, index_bits=16,
                 prid_bits=16, coord_bits=12, max_lines=8, eu_records=256, eu_lines=256,
                 starve_limit=8, fifo_depth=4, rotate=True, debit_held=False, patience=0,
                 local_records=0, answer_ahead=False, input_stage=False):
        self.n_eus = check_int("n_eus", n_eus, 1, MAX_EUS)
        self.vdt_records = check_pow2("vdt_records", vdt_records, 2, 256)
        self.pt_records = check_pow2("pt_records", pt_records, 1, 256)
        self.vbits = vdt_records.bit_length() - 1
        self.pbits = pt_records.bit_length() - 1
        self.index_bits = check_int("index_bits", index_bits, 3 + self.vbits, 32)
        self.prid_bits = check_int("prid_bits", prid_bits, max(1, self.pbits), 32)
        self.coord_bits = check_int("coord_bits", coord_bits, 4, 16)
        self.eu_records = check_int("eu_records", eu_records, 1, 256)
        self.eu_lines = check_int("eu_lines", eu_lines, 1, 65536)
        self.max_lines = check_int("max_lines", max_lines, 1, min(15, eu_lines))
        self.starve_limit = check_int("starve_limit", starve_limit, 0, SAT)
        self.fifo_depth = check_int("fifo_depth", fifo_depth, 1, 64)
        if not isinstance(rotate, bool):
            raise TypeError(f"rotate must be a bool, not {rotate!r}")
        self.rotate = rotate
        if not isinstance(debit_held, bool):
            raise TypeError(f"debit_held must be a bool, not {debit_held!r}")
        self.debit_held = debit_held
        self.patience = check_int("patience", patience, 0, SAT)
        self.local_records = check_int("local_records", local_records, 0, eu_records)
        if not isinstance(answer_ahead, bool):
            raise TypeError(f"answer_ahead must be a bool, not {answer_ahead!r}")
        self.answer_ahead = answer_ahead
        if not isinstance(input_stage, bool):
            raise TypeError(f"input_stage must be a bool, not {input_stage!r}")
        self.input_stage = input_stage
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
        ahead = {"entity_ahead": In(ENTITY_W).array(n_eus)} if answer_ahead else {}
        super().__init__(ahead | {
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
    def elaborate(self, platform):
        m = Module()
        N, V, P, L, D = self.n_eus, self.vdt_records, self.pt_records, self.lay, self.d
        fifos = self._output_fifos(m)
        m.submodules.config = cfg = Configuration(
            n_eus=N, layout=L["cfg"], eu_records=self.eu_records, eu_lines=self.eu_lines,
            starve_limit=self.starve_limit, detail_bits=D)
        wiring.connect(m, wiring.flipped(self.cfg), cfg.cfg)
        m.submodules.arbiter = arb = Arbiter()
        m.submodules.rotation = rot = Rotation(n_eus=N, rotate=self.rotate)
        cands = []      # each type's candidate list, for its stream's packet
        for t, name in enumerate(STREAMS):
            c = CandidateList(n_eus=N)
            m.submodules[f"candidates_{name[2:]}"] = c
            cands.append(c)
        m.submodules.scan = scan = StatusScan(n_eus=N, status_layout=L["status"])
        m.submodules.vdt = vdt = VertexTable(records=V, index_bits=self.index_bits,
                                             n_eus=N, input_stage=self.input_stage)
        m.submodules.pt = ptab = PrimitiveTable(records=P, prid_bits=self.prid_bits,
                                                vdt_records=V, input_stage=self.input_stage)
        m.submodules.checks = chk = PacketChecks(
            layouts=L, vdt_entry=vdt.entry, pt_entry=ptab.entry, vdt_records=V,
            pt_records=P, index_bits=self.index_bits, max_lines=self.max_lines,
            detail_bits=D, input_stage=self.input_stage)
        m.submodules.in_flight = ift = InFlightTable(n_eus=N)
        m.submodules.errors = errs = ErrorReporter(n_sources=4, err_layout=L["err"],
                                                   detail_bits=D)
        for t in range(4):
            m.d.comb += [rot.lists[t].eq(cfg.lists[t]), rot.counts[t].eq(cfg.counts[t]),
                         cands[t].in_list.eq(rot.in_list[t]),
                         cands[t].before.eq(rot.before[t])]
        m.d.comb += [rot.written.eq(cfg.written), rot.count.eq(self.cfg.payload.count),
                     arb.limit_next.eq(cfg.limit_next)]
        m.d.comb += [rot.entries[k].eq(e) for k, e in enumerate(cfg.entries()[:N])]
        m.d.comb += [chk.vdt_busy[i].eq(vdt.busy[i]) for i in range(3)]
        m.d.comb += [chk.vdt_look[i].eq(vdt.look[i]) for i in range(3)]
        m.d.comb += [chk.vdt_held_busy[i].eq(vdt.held_busy[i]) for i in range(3)]
        m.d.comb += [chk.vdt_held_look[i].eq(vdt.held_look[i]) for i in range(3)]
        m.d.comb += [chk.pt_busy.eq(ptab.busy), chk.pt_look.eq(ptab.look),
                     chk.pt_held_look.eq(ptab.held_look), chk.pt_held_busy.eq(ptab.held_busy)]
        f = fifos["err"]
        m.d.comb += [f.w_data.eq(errs.err.payload), f.w_en.eq(errs.err.valid),
                     errs.err.ready.eq(f.w_rdy)]
        m.d.comb += [self.error.eq(errs.error), self.lost.eq(errs.lost)]

        s = _State(self, m)
        self._stage_l(m, s, chk, vdt, ptab)
        self._held_lookups(m, s, vdt, ptab)
        self._scan_status(m, s)
        m.d.comb += [scan.status[e].eq(s.st[e]) for e in range(N)]
        self._stage_p(m, s, cfg, chk, arb, cands, vdt)
        self._stage_r(m, s, scan, ift)
        self._advance(m, s, fifos, cfg, chk, arb, scan)
        self._commit(m, s, fifos, ptab, rot)
        self._commit_stage(m, s, vdt, ptab, ift)
        self._completion(m, s, vdt, ptab, ift)
        self._release(m, fifos, vdt, ptab)
        m.d.comb += [errs.sources[0].eq(s.pkt_report), errs.sources[1].eq(s.answer_report),
                     errs.sources[2].eq(s.done_report), errs.sources[3].eq(cfg.report)]
        return m

    def _output_fifos(self, m):
        """The ``move``, ``log``, ``release`` and ``err`` FIFOs, their read side on the
        ports."""
        fifos = {}
        for name in ("move", "log", "release", "err"):
            # the error FIFO's write side ends in a register (decision 18)
            fifo = StagedFIFO if name == "err" else SyncFIFO
            f = fifo(width=self.lay[name].size, depth=self.fifo_depth)
            m.submodules[f"{name}_fifo"] = fifos[name] = f
            port = getattr(self, name)
            m.d.comb += [port.valid.eq(f.r_rdy), port.payload.eq(f.r_data),
                         f.r_en.eq(port.ready)]
        return fifos

    def _stage_l(self, m, s, chk, vdt, ptab):
        """The input heads' lookups: at the heads' records (the packet checks' lookup
        addresses), or with ``input_stage`` stage L (decision 28): each stream's
        register (``s.ins``: valid, payload) takes its input's head when it is empty or
        stage P takes its packet in this clock (``ready``), and the tables' lookups of
        the input's head go into registers on the way (``head_new``: loaded at the last
        edge)."""
        addrs = ((vdt.busy_addr, chk.vdt_busy_addr, vdt.head_busy_addr),
                 (vdt.look_addr, chk.vdt_look_addr, vdt.head_addr))
        if not self.input_stage:
            for port, head, _ in addrs:
                m.d.comb += [port[i].eq(head[i]) for i in range(3)]
            m.d.comb += [ptab.busy_addr.eq(chk.pt_busy_addr),
                         ptab.look_addr.eq(chk.pt_look_addr)]
            return
        VR, PR = max(1, self.vbits), max(1, self.pbits)
        provided = self._port_provided(m, s)
        for k in range(4):
            port, head = s.ports[k], s.ins[k]
            m.d.comb += port.ready.eq((~head.valid | head.ready) & ~provided[k])
            m.d.sync += s.l_new[k].eq(port.valid & port.ready)
            with m.If(port.valid & port.ready):
                m.d.sync += [head.valid.eq(1), head.payload.eq(port.payload)]
                if k == PAT:
                    m.d.sync += s.l_pat_g1.eq(port.payload.base[3:] + 1)
            with m.Elif(head.ready):
                m.d.sync += head.valid.eq(0)
        vtx, tri, pix, pat = (p.payload for p in s.ports)

        def vrec(index):
            return Cat(index[3:], Const(0, VR))[:VR]
        m.d.comb += [vdt.busy_addr[0].eq(vrec(vtx.base)), vdt.busy_addr[1].eq(vrec(pat.base)),
                     vdt.busy_addr[2].eq(vrec(pat.base) + 1),
                     ptab.busy_addr.eq(Cat(tri.prid, Const(0, PR))[:PR]),
                     ptab.look_addr.eq(Cat(pix.prid, Const(0, PR))[:PR]),
                     vdt.head_new.eq(s.l_new), ptab.head_new.eq(s.l_new),
                     ptab.head_busy_addr.eq(chk.pt_busy_addr),
                     ptab.head_addr.eq(chk.pt_look_addr)]
        m.d.comb += [vdt.look_addr[i].eq(vrec(tri[f"i{i}"])) for i in range(3)]
        for _, head, reg in addrs:
            m.d.comb += [reg[i].eq(head[i]) for i in range(3)]

    def _port_provided(self, m, s):
        """Per stream, its input's head has a provider (decision 28): a triangle names a
        group that a vertex or patch packet inside the spreader, in stage C or in stage
        L provides, a pixel packet's ``prid`` is such a triangle's; stage L does not
        take it (so a triangle taken has its vertices written, as without stage L).
        Compares of the port with registers."""
        provided = Signal(4)
        L = [h.payload for h in s.ins]
        groups = _provider_groups(s.held[VTX], s.held[PAT], s.held_pat_g1,
                                  s.c_held[VTX], s.c_held[PAT], s.c_pat_g1) \
            + [L[VTX].base[3:], L[PAT].base[3:], s.l_pat_g1]
        there = [s.held_v[VTX], s.held_v[PAT], s.held_v[PAT], s.c_is[VTX], s.c_is[PAT],
                 s.c_is[PAT], s.ins[VTX].valid, s.ins[PAT].valid, s.ins[PAT].valid]
        tri, prid = s.ports[TRI].payload, s.ports[PIX].payload.prid
        m.d.comb += [
            provided[TRI].eq(Cat(v & (tri[f"i{i}"][3:] == g) for i in range(3)
                                 for v, g in zip(there, groups)).any()),
            provided[PIX].eq((s.held_v[TRI] & (s.held[TRI].prid == prid))
                             | (s.c_is[TRI] & (s.c_held[TRI].prid == prid))
                             | (s.ins[TRI].valid & (L[TRI].prid == prid)))]
        return provided

    def _held_lookups(self, m, s, vdt, ptab):
        """The table records the held packets name (decision 26): the tables keep each
        one's state after this edge in a register, the lookup of a parked packet in the
        next clock (a parked packet is held in the clock before too)."""
        VR, PR = max(1, self.vbits), max(1, self.pbits)
        vtx, tri, pix, pat = s.held
        vrec = [Cat(x[3:], Const(0, VR))[:VR] for x in (tri.i0, tri.i1, tri.i2)]
        m.d.comb += [vdt.held_addr[i].eq(vrec[i]) for i in range(3)]
        m.d.comb += [vdt.held_busy_addr[0].eq(vtx.base[3:3 + VR]),
                     vdt.held_busy_addr[1].eq(pat.base[3:3 + VR]),
                     vdt.held_busy_addr[2].eq(pat.base[3:3 + VR] + 1),
                     ptab.held_addr.eq(pix.prid[:PR]), ptab.held_busy_addr.eq(tri.prid[:PR])]

    def _stage_p(self, m, s, cfg, chk, arb, cands, vdt):
        """Stage P: sources (a parked packet before its input's head), checks, the
        arbiter's offers, the winner's evaluation, candidates and minimum."""
        for k in range(4):
            m.d.comb += [s.src_v[k].eq(s.parked[k] | s.ins[k].valid),
                         s.src[k].eq(Mux(s.parked[k], s.held[k], s.ins[k].payload))]
        m.d.comb += [chk.vtx.eq(s.src[VTX]), chk.tri.eq(s.src[TRI]), chk.pix.eq(s.src[PIX]),
                     chk.pat.eq(s.src[PAT]), chk.held_vtx.eq(s.held[VTX]),
                     chk.held_tri.eq(s.held[TRI]), chk.held_pix.eq(s.held[PIX]),
                     chk.held_pat.eq(s.held[PAT]), chk.held_pat_g1.eq(s.held_pat_g1),
                     chk.held_valid.eq(s.held_v),
                     chk.r_is.eq(s.r_is),
                     chk.c_vtx.eq(s.c_held[VTX]), chk.c_tri.eq(s.c_held[TRI]),
                     chk.c_pix.eq(s.c_held[PIX]), chk.c_pat.eq(s.c_held[PAT]),
                     chk.c_pat_g1.eq(s.c_pat_g1), chk.c_is.eq(s.c_is),
                     chk.parked.eq(s.parked),
                     chk.in_vtx.eq(s.ins[VTX].payload), chk.in_tri.eq(s.ins[TRI].payload),
                     chk.in_pix.eq(s.ins[PIX].payload), chk.in_pat.eq(s.ins[PAT].payload),
                     chk.held_tri_eq.eq(s.held_tri_eq), chk.held_pix_eq.eq(s.held_pix_eq),
                     # stage L's: 0 in the clock after it took its packet (decision 28)
                     chk.in_tri_eq.eq(Mux(s.l_new[TRI], 0, s.l_tri_eq)),
                     chk.in_pix_eq.eq(Mux(s.l_new[PIX], 0, s.l_pix_eq)),
                     chk.empty.eq(Cat(cfg.counts[t] == 0 for t in range(4)))]
        m.d.comb += [s.offer.eq(s.src_v & ~chk.provider), arb.offer.eq(s.offer)]
        # the arbiter's winner for each value of the two provider bits (``s.prov_of``:
        # the triangle's, the pixel packet's), from the sources' valid bits and the
        # starvation registers; the provider bits, the last of stage P's offers, choose
        # last (decision 20)
        m.d.comb += [s.prov_tri.eq(chk.provider[TRI]), s.prov_pix.eq(chk.provider[PIX])]
        for a, b in s.COMBOS:
            off = s.src_v & ~Cat(Const(0, 1), Const(a, 1), Const(b, 1), Const(0, 1))
            m.d.comb += [s.off_c[a, b].eq(off), s.win_c[a, b].eq(_winner(off, arb.ge))]
        m.d.comb += [s.win.eq(s.by_provider(s.win_c)), arb.win.eq(s.win)]
        # every type's evaluation, candidate list and first request in parallel (the
        # EUs holding the packet's data: a triangle's vertices, a pixel packet's triangle
        # in loc 0); the arbiter's winner chooses among them last
        # (the triangle's as counts per EU, registers beside the VDT's lookups: decision 29)
        m.d.comb += cands[TRI].counts.eq(Mux(s.parked[TRI], vdt.held_holds, vdt.holds))
        m.d.comb += cands[PIX].counts.eq(_holds([chk.pix_tri.eu], self.n_eus))
        # patience (decision 13): a pixel packet's pass number is 1 + the passes that
        # parked it (``passes``) when it is parked, else 1
        if self.patience:
            m.d.comb += cands[PIX].only_held.eq(
                ~s.parked[PIX] | (s.passes[PIX] <= self.patience))
        meets = self._first_scan_meets(m, s, cfg)
        if self.local_records:
            # the vertex-holding EUs with room for locality (the debited status)
            for e in range(self.n_eus):
                fr, d = s.st[e].free_records, s.q_v[e] & (s.q_first | self.debit_held)
                m.d.comb += cands[TRI].room[e].eq(
                    Mux(d, fr >= self.local_records + 1, fr >= self.local_records))
        for k in range(4):
            alloc = chk.result[k].outcome == Outcome.ALLOC
            m.d.comb += [cands[k].meets.eq(meets[k]),
                         s.p_q_v[k].eq(Mux(alloc, cands[k].first, 0)),
                         s.p_q_eu[k].eq(cands[k].first_eu)]
        win = s.win
        with m.Switch(win):
            for k in range(4):
                with m.Case(k):
                    size, needr, minl = s.src[k].size, cfg.need_records[k], cfg.min_lines[k]
                    m.d.comb += [s.w_ev.eq(chk.result[k]), s.w_size.eq(size),
                                 s.w_need_r.eq(needr),
                                 s.w_need_l.eq(Mux(minl > size, minl, size)),
                                 s.w_ahead.eq(cands[k].ahead)]
        m.d.comb += [s.w_loc[i].eq(chk.tri_locs[i]) for i in range(3)]
        with m.If(win == PIX):
            m.d.comb += s.w_loc[0].eq(chk.pix_tri)

    def _scan_status(self, m, s):
        """The scans' status register (decision 22): each EU's ``status`` of this clock
        less R's request of this clock in its first clock (or every clock:
        ``debit_held``), saturating at 0; stage P's and stage R's scans read it a clock
        later, so no status port reaches a scan."""
        for e in range(self.n_eus):
            st, d = self.status[e], s.q_v[e] & (s.q_first | self.debit_held)
            fr, fn, fl = st.free_records, st.free_entities, st.free_lines
            m.d.sync += s.st[e].eq(Cat(
                Mux(d & (fr != 0), fr - 1, fr)[:len(fr)],
                Mux(d & (fn != 0), fn - 1, fn)[:len(fn)],
                Mux(d, Mux(fl > s.r_size, fl - s.r_size, 0), fl)[:len(fl)]))

    def _first_scan_meets(self, m, s, cfg):
        """Per stream, the EUs whose status meets its packet's minimum for its first
        request: the scans' status register (the status of the clock before, debited:
        decision 22) less what stage R's request of this clock would take (its EU counts
        one record, one entity and R's lines less). Every stream's
        minimum is compared in parallel with the arbiter.

        The debit is not subtracted from the status: each compare is made against a
        threshold raised by R's request (``need_records`` + 1, 2 entities, the minimum
        lines + R's size: ``need_lines_debit``, a register), so one carry chain lies
        between the status and the candidate choice, not a subtraction and a compare
        in series. ``x - r >= y`` (saturating at 0) is ``y == 0 | x >= y + r``."""
        N = self.n_eus
        meets = [Signal(N, name=f"p_meets{k}") for k in range(4)]
        for e in range(N):
            # R's request is debited in its first clock (or every clock: ``debit_held``)
            st, d = s.st[e], s.q_v[e] & (s.q_first | self.debit_held)
            fr, fl = st.free_records, st.free_lines
            per_type = Signal(4, name=f"meets{e}")
            for k in range(4):
                needr, minl = cfg.need_records[k], cfg.min_lines[k]
                rec_ok = (fr >= needr) & (~d | (fr != needr))
                ent_ok = Mux(d, st.free_entities[1:].any(), st.free_entities.any())
                min_ok = Mux(d, (minl == 0) | (fl >= s.need_lines_debit[k]), fl >= minl)
                # the size for both sources, the parked packet's against a register
                # (``held_size_debit``), chosen by ``parked`` last; a size of 0 is
                # MALFORMED (an end marker's is not used), so no ALLOC needs its case
                # the input head's: ``fl >= in_size + r_size`` as ``fl - in_size >=
                # r_size`` (when ``fl >= in_size``), the subtraction from the ports, so
                # that only one compare lies behind the register ``r_size`` (decision 20)
                held_size, in_size = s.held[k].size, s.ins[k].payload.size
                in_left = Signal(len(fl), name=f"in_left{e}_{k}")
                m.d.comb += in_left.eq(fl - in_size)
                size_ok = Mux(s.parked[k],
                              Mux(d, fl >= s.held_size_debit[k], fl >= held_size),
                              (fl >= in_size) & (~d | (in_left >= s.r_size)))
                m.d.comb += per_type[k].eq(rec_ok & ent_ok & min_ok & size_ok)
            m.d.comb += [meets[k][e].eq(per_type[k]) for k in range(4)]
        return meets

    def _stage_r(self, m, s, scan, ift):
        """Stage R: the request (from the registers ``q_v``/``q_eu``, loaded by
        a scan of the clock before), the answer, and the scan for the request after a
        refusal (the scans' status register, from the candidate after the one asked)."""
        N = self.n_eus
        m.d.comb += [scan.ahead.eq(s.r_ahead), scan.asked.eq(s.q_v),
                     scan.need_records.eq(s.r_need_r), scan.need_lines.eq(s.r_need_l)]
        m.d.comb += s.cur_seq.eq(Array(s.seq)[s.r_stream])
        m.d.comb += s.scan_none.eq(s.active & (s.r_ev.outcome == Outcome.ALLOC) & ~s.q_v.any())
        # the answer of the EU asked (at most one ``alloc[e]`` is valid), decided per EU
        # in parallel from the request register
        taken, bad, ok = Signal(N), Signal(N), Signal(N)
        busy = self._answer_busy(m, s, ift)
        for e in range(N):
            a = self.alloc[e]
            m.d.comb += [a.valid.eq(s.q_v[e]), a.payload.etype.eq(s.r_stream),
                         a.payload.lines.eq(s.r_size), a.payload.hold.eq(s.r_stream != PIX),
                         a.payload.seq.eq(s.cur_seq),
                         taken[e].eq(a.valid & a.ready),
                         bad[e].eq(self.accept[e] & busy[e]),
                         ok[e].eq(self.accept[e] & ~busy[e])]
        m.d.comb += s.ent_in.eq(Array(self.entity)[s.q_eu])
        m.d.comb += [s.taken.eq(taken.any()), s.bad_answer.eq((taken & bad).any()),
                     s.accepted.eq((taken & ok).any()), s.refused.eq(s.taken & ~s.accepted)]
        ev = s.r_ev
        m.d.comb += [s.consume_err.eq(s.active & (ev.outcome == Outcome.ERR)),
                     s.consume_close.eq(s.active & (ev.outcome == Outcome.CLOSE)),
                     s.consumed.eq(s.consume_err | s.consume_close | s.accepted),
                     s.parks.eq((s.active & (ev.outcome == Outcome.WAIT)) | s.scan_none)]
        r = s.answer_report
        m.d.comb += [r.en.eq(s.bad_answer), r.code.eq(Err.BAD_ANSWER), r.src.eq(Src.ANSWER),
                     r.seq.eq(s.cur_seq), r.eu.eq(s.q_eu), r.detail.eq(s.ent_in)]
        r = s.pkt_report
        m.d.comb += [r.en.eq(s.consume_err), r.code.eq(ev.code), r.src.eq(s.r_stream),
                     r.seq.eq(s.cur_seq), r.detail.eq(ev.detail)]

    def _answer_busy(self, m, s, ift):
        """Per EU, the entity its answer names is in flight: in the in-flight table or
        in C (accepted the clock before). With ``answer_ahead`` the same bit from a
        register (issue 15: stage R's accept starts at a flip-flop, not at the entity's
        select from the table): loaded from ``entity_ahead`` looked up in the table a
        clock early, with that clock's changes forwarded -- C's entry written (unless
        the completion of that clock clears it, as in the table), a completion's entry
        cleared, and R's accept of that clock (in C in the answer's clock)."""
        N = self.n_eus
        busy = Signal(N, name="answer_busy")
        if not self.answer_ahead:
            for e in range(N):
                m.d.comb += [ift.answer[e].eq(self.entity[e]),
                             busy[e].eq(ift.answer_busy[e] | (s.c_valid & (s.c_eu == e)
                                                              & (s.c_ent == self.entity[e])))]
            return busy
        rec, q = ift.record, ift.query
        for e in range(N):
            ent = self.entity_ahead[e]
            written = rec.en & (rec.eu == e) & (rec.entity == ent)
            cleared = ift.clear & (q.eu == e) & (q.entity == ent)
            enters_c = s.accepted & (s.q_eu == e) & (s.ent_in == ent)
            m.d.comb += ift.answer[e].eq(ent)
            m.d.sync += busy[e].eq(((ift.answer_busy[e] | written) & ~cleared) | enters_c)
        return busy

    def _advance(self, m, s, fifos, cfg, chk, arb, scan):
        """P -> R: a pass enters R (``load``) when R is free at the edge, the log and move
        FIFOs keep a free entry after this clock's pushes, and it does not overtake R's
        own packet; it brings its first request (P's scan). A refusal loads the request
        R's scan found after the refusing candidate (none: the pass ends next clock)."""
        N, win = self.n_eus, s.win
        # a free entry after this clock's pushes: both cases from the FIFO levels, then
        # chosen by the answer (no adder behind it)
        lg, mv, depth = fifos["log"].level, fifos["move"].level, self.fifo_depth
        # Every register whose next value depends on the accept is computed for both of
        # its outcomes and chosen by it last (decision 14): ``acc`` is the accept (the
        # EU's answer, the in-flight select of its entity and the bad-answer check), the
        # rest of this clock's inputs to ``load`` come from registers and the FIFO levels
        acc, c0 = s.accepted, s.consume_err | s.consume_close     # c0: consumed, no answer
        stays0 = s.active & ~c0 & ~s.parks         # R keeps its packet unless it accepts
        room1 = (lg + 1 < depth) & (mv + 1 < depth)
        room0 = Mux(c0, lg + 1 < depth, lg < depth) & (mv < depth)
        # ``load`` for both outcomes of the accept, each for every value of the provider
        # bits (decision 20), which choose before the accept
        l1, l0 = {}, {}
        for c in s.COMBOS:
            any_c, win_c = s.off_c[c].any(), s.win_c[c]
            l1[c] = any_c & room1
            l0[c] = (any_c & room0 & (~s.active | c0 | s.parks)
                     & ~(s.active & (win_c == s.r_stream) & ~c0))
        load1, load0, load = Signal(), Signal(), Signal()
        m.d.comb += [load1.eq(s.by_provider(l1)), load0.eq(s.by_provider(l0)),
                     load.eq(Mux(acc, load1, load0)), arb.load.eq(load)]
        # R keeps its packet (``stays``): otherwise R's pass registers and every held
        # packet register but R's are loaded, whether a pass enters R or not (decision
        # 12): ``load`` selects none of their data and enables none of them, only the
        # valid bits (``held_v``, ``parked``, ``active``, ``q_v``)
        stays = Signal()
        m.d.comb += stays.eq(stays0 & ~acc)
        for k in range(4):
            mine = s.consumed & (s.r_stream == k)
            in_r = s.active & (s.r_stream == k) & ~s.consumed     # R keeps or parks it
            m.d.comb += s.ins[k].ready.eq(load & (win == k) & ~s.parked[k])
            with m.If(mine):
                m.d.sync += s.seq[k].eq(s.seq[k] + 1)
            # ``held_v`` and ``parked`` after the edge, for both outcomes of the accept
            # (each for both outcomes of ``load``), chosen by the accept last
            mine1, mine0 = s.r_stream == k, c0 & (s.r_stream == k)
            hv1 = Mux(load1 & (win == k), 1, Mux(mine1, 0, s.held_v[k]))
            hv0 = Mux(load0 & (win == k), 1, Mux(mine0, 0, s.held_v[k]))
            kept1, kept0 = s.held_v[k] & ~mine1, s.held_v[k] & ~mine0
            pk1 = Mux(load1, kept1 & (win != k), kept1)
            pk0 = Mux(load0, kept0 & (win != k), kept0 & ~(stays0 & (s.r_stream == k)))
            m.d.sync += [s.held_v[k].eq(Mux(acc, hv1, hv0)),
                         s.parked[k].eq(Mux(acc, pk1, pk0))]
            # a parked packet reloads itself (its source is ``held``); a stream with no
            # held packet loads its input's head, which nothing reads until ``held_v``
            with m.If(~in_r):
                m.d.sync += s.held[k].eq(s.src[k])
                if k == PAT:        # its second group, for the triangles' provider check
                    m.d.sync += s.held_pat_g1.eq(s.src_pat_g1)
            # the passes of the packet, counted from R (1 + the passes that parked it)
            with m.If(mine):
                m.d.sync += s.passes[k].eq(1)
            with m.Elif(s.parks & (s.r_stream == k)):
                m.d.sync += s.passes[k].eq(_sat_inc(s.passes[k]))
        with m.If(~stays):
            m.d.sync += [s.r_stream.eq(win), s.r_size.eq(s.w_size), s.r_ev.eq(s.w_ev),
                         s.r_ahead.eq(s.w_ahead), s.r_need_r.eq(s.w_need_r),
                         s.r_need_l.eq(s.w_need_l), s.r_vrn.eq(chk.tri_distinct)]
            m.d.sync += [s.r_vr[i].eq(chk.tri_recs[i]) for i in range(3)]
            m.d.sync += [s.r_loc[i].eq(s.w_loc[i]) for i in range(3)]
        # the request registers: on an accept the next pass's first request (if one
        # enters R); else R's pass goes on (the request after a refusal: R's scan) or
        # ends, a pass that enters R bringing its first request
        # (the winner's first request for every value of the provider bits, which
        # choose last before the accept: decision 20)
        refusal = Const(1, MAX_EUS) << s.q_eu
        q1, q0, qe = {}, {}, {}
        for c in s.COMBOS:
            w_q_v = Array(s.p_q_v)[s.win_c[c]]
            q1[c] = Mux(l1[c], w_q_v, 0)
            q0[c] = Mux(~stays0, Mux(l0[c], w_q_v, 0), Mux(s.taken, scan.next, s.q_v))
            qe[c] = Array(s.p_q_eu)[s.win_c[c]]
        m.d.sync += [
            s.q_v.eq(Mux(acc, s.by_provider(q1), s.by_provider(q0))),
            s.q_eu.eq(Mux(acc | ~stays0, s.by_provider(qe),
                          Mux(s.taken, scan.eu, s.q_eu))),
            s.r_refused.eq(Mux(acc | ~stays0, 0,
                               Mux(s.taken, s.r_refused | refusal, s.r_refused))),
        ]
        # stage P's debited minimum for the next clock: its minimum lines + R's size
        # (R's next size: the winner's (``w_size``) unless R keeps its packet; with no
        # pass in R it is not read), every sum made before ``stays`` and the arbiter's
        # winner choose (one sum per source stream: no adder behind the arbiter)
        for k in range(4):
            nxt = cfg.min_lines_next[k]
            by_win = Array([nxt + s.src[j].size for j in range(4)])[win]
            m.d.sync += s.need_lines_debit[k].eq(Mux(stays, nxt + s.r_size, by_win))
        # each held packet's size + R's size, likewise (read only while the packet is
        # parked, when ``held`` keeps its size)
        for k in range(4):
            held = s.held[k].size
            by_win = Array([held + s.src[j].size for j in range(4)])[win]
            m.d.sync += s.held_size_debit[k].eq(Mux(stays, held + s.r_size, by_win))
        # R's stream, one-hot while R is active (stage P's hazard checks: decision 20)
        w_hot = _onehot(win, 4)
        m.d.sync += s.r_is.eq(Mux(acc, Mux(load1, w_hot, 0),
                                  Mux(stays0, s.r_is, Mux(load0, w_hot, 0))))
        m.d.sync += [s.active.eq(Mux(acc, load1, load0 | stays0)),
                     s.q_first.eq(Mux(acc, load1, load0 | s.taken))]
        self._provider_compares(m, s, acc, c0)

    def _provider_compares(self, m, s, acc, c0):
        """The held triangle's and pixel packet's provider compares (decision 15), from
        the registers' next values: each held packet is R's kept packet or its source
        (the parked packet or the input's head), C's packets are the held ones. Made for
        both outcomes of the accept (with one, R keeps no packet), chosen by it last."""
        m.d.comb += s.src_pat_g1.eq(s.src[PAT].base[3:] + 1)
        nxt = {}
        for outcome in (1, 0):
            # R keeps its packet (its stream's ``held`` is not reloaded)
            keep = [0 if outcome else s.active & (s.r_stream == k) & ~c0 for k in range(4)]
            held = [Mux(keep[k], s.held[k], s.src[k]) for k in range(4)]
            held = [s.held[k].shape()(held[k]) for k in range(4)]
            g1 = Mux(keep[PAT], s.held_pat_g1, s.src_pat_g1)
            groups = _provider_groups(held[VTX], held[PAT], g1,
                                      s.held[VTX], s.held[PAT], s.held_pat_g1)
            tri = held[TRI]
            # the held packets', and stage L's (when they stay there: decision 28)
            nxt[outcome] = [
                Cat(Cat(t[f"i{i}"][3:] == gr for gr in groups) for i in range(3))
                for t in (tri, s.ins[TRI].payload)] + [
                Cat(p.prid == tri.prid, p.prid == s.held[TRI].prid)
                for p in (held[PIX], s.ins[PIX].payload)]
        regs = [s.held_tri_eq, s.l_tri_eq, s.held_pix_eq, s.l_pix_eq]
        for n, reg in enumerate(regs if self.input_stage else regs[::2]):
            n = n if self.input_stage else 2 * n
            m.d.sync += reg.eq(Mux(acc, nxt[1][n], nxt[0][n]))

    def _commit(self, m, s, fifos, ptab, rot):
        """The end of R's pass: the log entry, the move command, an end marker's close;
        an accepted packet enters stage C. And the rotation's EU."""
        ent, eu, stream_ = s.ent_in, s.q_eu, s.r_stream
        pkt_v, pkt_t, pkt_p, pkt_a = s.held
        mv, lg, loc, rec = s.push_move, s.push_log, s.r_loc, s.r_ev.rec
        m.d.comb += [fifos["log"].w_data.eq(lg.as_value()), fifos["log"].w_en.eq(s.consumed),
                     fifos["move"].w_data.eq(mv.as_value()),
                     fifos["move"].w_en.eq(s.accepted)]
        m.d.comb += [lg.etype.eq(stream_), lg.seq.eq(s.cur_seq),
                     lg.passes.eq(Array(s.passes)[stream_])]
        local = Mux(stream_ == TRI, (loc[0].eu == eu) & (loc[1].eu == eu) & (loc[2].eu == eu),
                    loc[0].eu == eu)
        ref = Mux((stream_ == TRI) | (stream_ == PIX), Mux(local, Ref.LOCAL, Ref.GLOBAL),
                  Ref.NONE)
        # the rotation moves at a request's first clock (decision 9), from registers
        m.d.comb += [rot.asked.eq(Mux(s.q_v.any() & s.q_first, _onehot(stream_, 4), 0)),
                     rot.eu.eq(eu)]
        # The log entry and the move command are made without the accept (decision 21):
        # they are pushed only when the pass ends (``consumed``, ``accepted``), and an
        # entry pushed with neither an error nor a close is the accept's (Kind.ALLOC is
        # 0), so the accept reaches the two FIFOs' write enables, not their data
        with m.If(s.consume_err):
            m.d.comb += [lg.kind.eq(Kind.ERROR), lg.code.eq(s.r_ev.code)]
        with m.Elif(s.consume_close):
            m.d.comb += [lg.kind.eq(Kind.CLOSE), lg.eu.eq(loc[0].eu),
                         lg.entity.eq(loc[0].entity)]
        with m.Else():
            m.d.comb += [lg.kind.eq(Kind.ALLOC), lg.eu.eq(eu), lg.entity.eq(ent),
                         lg.ref.eq(ref), lg.refused.eq(s.r_refused)]
        m.d.comb += [mv.eu.eq(eu), mv.entity.eq(ent), mv.etype.eq(stream_),
                     mv.seq.eq(s.cur_seq), mv.size.eq(s.r_size), mv.ref.eq(ref)]
        with m.Switch(stream_):
            with m.Case(VTX):
                m.d.comb += [mv.index.eq(pkt_v.base), mv.count.eq(pkt_v.count)]
            with m.Case(PAT):
                m.d.comb += [mv.index.eq(pkt_a.base), mv.count.eq(16)]
            with m.Case(TRI):
                m.d.comb += mv.index.eq(pkt_t.prid)
                for i in range(3):
                    m.d.comb += [mv[f"src{i}_eu"].eq(loc[i].eu),
                                 mv[f"src{i}_entity"].eq(loc[i].entity),
                                 mv[f"src{i}_elem"].eq(loc[i].elem)]
            with m.Case(PIX):
                m.d.comb += [mv.index.eq(pkt_p.prid), mv.src0_eu.eq(loc[0].eu),
                             mv.src0_entity.eq(loc[0].entity), mv.x.eq(pkt_p.x),
                             mv.y.eq(pkt_p.y), mv.mask.eq(pkt_p.mask)]
        # an end marker closes its primitive at the edge of its clock
        PR = max(1, self.pbits)
        m.d.comb += [ptab.close[0].en.eq(s.consume_close), ptab.close[0].rec.eq(rec[:PR])]
        # the accepted packet enters stage C, which writes its tables at the next edge
        m.d.sync += s.c_is.eq(Mux(s.accepted, _onehot(stream_, 4), 0))
        m.d.sync += [s.c_valid.eq(s.accepted), s.c_stream.eq(stream_), s.c_eu.eq(eu),
                     s.c_ent.eq(ent), s.c_rec.eq(rec), s.c_vr.eq(s.r_vr), s.c_vrn.eq(s.r_vrn),
                     s.c_pat_g1.eq(s.held_pat_g1)]
        m.d.sync += [s.c_held[k].eq(s.held[k]) for k in range(4)]

    def _commit_stage(self, m, s, vdt, ptab, ift):
        """Stage C (issue 12 cut 3): the tables and the in-flight entry of the packet
        accepted in the clock before, from registers only (no answer, no carry chain of
        a table write behind an accept of this clock)."""
        ent, eu, rec = s.c_ent, s.c_eu, s.c_rec
        pkt_v, pkt_t, pkt_p, pkt_a = s.c_held
        m.d.comb += [ift.record.en.eq(s.c_valid), ift.record.eu.eq(eu),
                     ift.record.entity.eq(ent), ift.record.etype.eq(s.c_stream),
                     ift.record.rec.eq(rec)]
        acc = [s.c_valid & (s.c_stream == k) for k in range(4)]
        VR, PR, I, vb = max(1, self.vbits), max(1, self.pbits), self.index_bits, self.vbits
        va, g1 = vdt.alloc, Signal(I - 3 + 1)
        m.d.comb += [
            g1.eq(pkt_a.base[3:] + 1),
            va.en.eq(acc[VTX] | acc[PAT]), va.patch.eq(acc[PAT]), va.rec.eq(rec[:VR]),
            va.tag.eq(self._vtag(Mux(acc[PAT], pkt_a.base, pkt_v.base))),
            va.tag1.eq(g1[vb:] if I - 3 + 1 > vb else 0),
            va.eu.eq(eu), va.entity.eq(ent), va.count.eq(pkt_v.count),
            va.noref.eq(Mux(acc[PAT], pkt_a.noref, pkt_v.noref)),
            vdt.close.mask.eq(Mux(acc[TRI], pkt_t.last, 0)),
            vdt.refs.inc.eq(Mux(acc[TRI], s.c_vrn, 0)),
        ]
        m.d.comb += [vdt.close.rec[i].eq(s.c_vr[i]) for i in range(3)]
        m.d.comb += [vdt.refs.inc_rec[i].eq(s.c_vr[i]) for i in range(3)]
        pa = ptab.alloc
        m.d.comb += [pa.en.eq(acc[TRI]), pa.rec.eq(rec[:PR]),
                     pa.word.tag.eq(self._ptag(pkt_t.prid)), pa.word.eu.eq(eu),
                     pa.word.entity.eq(ent), pa.word.vrn.eq(s.c_vrn),
                     ptab.close[1].en.eq(acc[PIX] & pkt_p.last), ptab.close[1].rec.eq(rec[:PR]),
                     ptab.pix_inc.en.eq(acc[PIX]), ptab.pix_inc.rec.eq(rec[:PR])]
        m.d.comb += [pa.word.vr[i].eq(s.c_vr[i]) for i in range(3)]

    def _vtag(self, index):
        return index[3 + self.vbits:] if self.index_bits > 3 + self.vbits else Const(0, 1)

    def _ptag(self, prid):
        return prid[self.pbits:] if self.prid_bits > self.pbits else Const(0, 1)

    def _completion(self, m, s, vdt, ptab, ift):
        """A completion (``done``, ``ready`` = 1): its entity's in-flight entry is
        cleared and looked up into stage D's registers; an unknown one is reported.
        Stage D, the clock after: the record marked done, a pixel packet's count taken
        off its PT record (rule 5: from registers, so the in-flight select of the done's
        entity does not reach the tables' counters), a completed triangle's VDT records
        read from its PT word into stage E's registers; stage E, the clock after that:
        their references taken off (decision 24)."""
        dn, PR, VR = self.done.payload, max(1, self.pbits), max(1, self.vbits)
        known, in_c = Signal(), Signal()
        # an entity accepted in the clock before is known from stage C (its in-flight
        # entry is written at this edge; the clear wins over that set). The clear needs
        # no lookup: an entity not in flight has its bit clear already
        m.d.comb += [in_c.eq(s.c_valid & (dn.eu == s.c_eu) & (dn.entity == s.c_ent)),
                     self.done.ready.eq(1), ift.query.eu.eq(dn.eu),
                     ift.query.entity.eq(dn.entity), ift.clear.eq(self.done.valid),
                     known.eq(ift.known | in_c)]
        kind, rec = Mux(in_c, s.c_stream, ift.etype), Mux(in_c, s.c_rec, ift.rec)
        ok = self.done.valid & known
        m.d.sync += [s.d_vdone.eq(ok & ((kind == VTX) | (kind == PAT))),
                     s.d_patch.eq(kind == PAT), s.d_tri.eq(ok & (kind == TRI)),
                     s.d_pix.eq(ok & (kind == PIX)), s.d_rec.eq(rec)]
        # stage D: the PT word of a completed triangle holds its VDT records (written by
        # C at the latest at the completion's edge)
        m.d.comb += [
            vdt.done.en.eq(s.d_vdone), vdt.done.patch.eq(s.d_patch),
            vdt.done.rec.eq(s.d_rec[:VR]),
            ptab.done.en.eq(s.d_tri), ptab.done.rec.eq(s.d_rec[:PR]),
            ptab.pix_dec.en.eq(s.d_pix), ptab.pix_dec.rec.eq(s.d_rec[:PR]),
            ptab.refs_addr.eq(s.d_rec[:PR]),
        ]
        # stage E (decision 24): D's triangle's VDT records, read from the PT's word in
        # D's clock, into registers; their reference counters drop at the next edge
        m.d.sync += [s.e_dec.eq(Mux(s.d_tri, ptab.refs.vrn, 0)), s.e_vr.eq(ptab.refs.vr)]
        m.d.comb += vdt.refs.dec.eq(s.e_dec)
        m.d.comb += [vdt.refs.dec_rec[i].eq(s.e_vr[i]) for i in range(3)]
        r = s.done_report
        m.d.comb += [r.en.eq(self.done.valid & ~known), r.code.eq(Err.UNKNOWN_DONE),
                     r.src.eq(Src.DONE), r.eu.eq(dn.eu), r.detail.eq(dn.entity)]

    def _release(self, m, fifos, vdt, ptab):
        """The release engine: the VDT's lowest releasable record first, else the PT's,
        into the ``release`` FIFO."""
        f = fifos["release"]
        m.d.comb += [vdt.release.ready.eq(f.w_rdy),
                     ptab.release.ready.eq(f.w_rdy & ~vdt.release.valid),
                     f.w_en.eq(f.w_rdy & (vdt.release.valid | ptab.release.valid)),
                     f.w_data.eq(Mux(vdt.release.valid, vdt.release.payload,
                                     ptab.release.payload))]


class _Head:
    """Stage L's register of one stream (decision 28): ``valid``, ``payload`` and
    ``ready`` (stage P takes its packet), as the input stream it stands for."""

    def __init__(self, layout, name):
        self.valid = Signal(name=f"l_{name}_valid")
        self.payload = Signal(layout, name=f"l_{name}")
        self.ready = Signal(name=f"l_{name}_ready")


class _State:
    """The spreader's own registers and the signals its elaboration steps share."""

    #: the values (triangle's, pixel packet's) of stage P's two provider bits
    COMBOS = ((0, 0), (0, 1), (1, 0), (1, 1))

    def by_provider(self, values):
        """``values[(a, b)]`` for the provider bits' values: a multiplexer whose select
        is the provider bits, the last of its inputs (decision 20)."""
        return Mux(self.prov_tri, Mux(self.prov_pix, values[1, 1], values[1, 0]),
                   Mux(self.prov_pix, values[0, 1], values[0, 0]))

    def __init__(self, sp, m):
        N, L, D = sp.n_eus, sp.lay, sp.d
        VR = max(1, sp.vbits)
        # per stream: the packet taken from its input and not yet consumed (in stage R,
        # or parked after a pass that placed it nowhere), its sequence number and passes
        self.ports = [sp.i_vtx, sp.i_tri, sp.i_pix, sp.i_pat]
        # the heads stage P prepares: the input ports, or stage L's registers
        # (``input_stage``, decision 28; ``l_new``: loaded at the last edge)
        self.ins = self.ports
        self.l_new = Signal(4)
        self.l_pat_g1 = Signal(sp.index_bits - 2)       # stage L's patch's group + 1
        if sp.input_stage:
            self.ins = [_Head(L[n], n) for n in STREAMS]
        self.held_v = Signal(4)
        self.held = [Signal(L[n], name=f"held_{n}") for n in STREAMS]
        self.held_pat_g1 = Signal(sp.index_bits - 2)    # the held patch's group + 1
        # the held triangle's vertex groups compared with the provider groups
        # (:func:`_provider_groups`), the held pixel packet's prid with the held and C's
        # triangles': registers equal to those compares of the registers (decision 15)
        self.held_tri_eq = Signal(data.ArrayLayout(6, 3))
        self.held_pix_eq = Signal(2)
        # the same of stage L's triangle and pixel packet while they wait there
        # (decision 28; ``input_stage``)
        self.l_tri_eq = Signal(data.ArrayLayout(6, 3))
        self.l_pix_eq = Signal(2)
        self.src_pat_g1 = Signal(sp.index_bits - 2)     # the patch source's group + 1
        self.seq = [Signal(SEQ_W, name=f"seq{k}") for k in range(4)]
        # the passes of the held packet so far: 1 + the passes that parked it
        self.passes = [Signal(8, name=f"passes{k}", init=1) for k in range(4)]
        # stage R's pass registers
        self.active, self.r_stream = Signal(), Signal(2)
        self.r_is = Signal(4)           # R's stream, one-hot, 0 while R is idle
        self.r_ev = Signal(_eval_layout(D))
        # the pass's candidate order (``CandidateList.ahead``), for R's scan
        self.r_ahead = Signal(data.ArrayLayout(N, N))
        self.r_need_r, self.r_need_l = Signal(sp.sr), Signal(sp.sl)
        self.r_size = Signal(SIZE_W)    # R's packet's size (its request's ``lines``)
        # per type, its minimum lines + ``r_size``: stage P's threshold for R's EU
        self.need_lines_debit = [Signal(sp.sl + 1, name=f"need_lines_debit{k}")
                                 for k in range(4)]
        # per stream, its held packet's size + ``r_size``: the same threshold for a
        # parked packet's size
        self.held_size_debit = [Signal(SIZE_W + 1, name=f"held_size_debit{k}")
                                for k in range(4)]
        self.r_refused = Signal(MAX_EUS)
        # stage R's request: one-hot EU (``alloc[e].valid``; 0: none) and its number
        self.q_v, self.q_eu = Signal(N), Signal(EU_W)
        self.q_first = Signal()         # the request register was loaded at the last edge
        # the scans' status register (decision 22): each EU's status of the clock
        # before less R's request of that clock; at reset every EU empty
        full = {"free_records": sp.eu_records, "free_entities": 1 << ENTITY_W,
                "free_lines": sp.eu_lines}
        self.st = [Signal(L["status"], name=f"scan_status{e}", init=full)
                   for e in range(N)]
        self.r_loc = Signal(data.ArrayLayout(LOC, 3))
        self.r_vr = Signal(data.ArrayLayout(VR, 3))
        self.r_vrn = Signal(3)
        # stage C: the packet accepted in the clock before, its tables written at this
        # clock's edge (issue 12 cut 3)
        self.c_valid, self.c_stream = Signal(), Signal(2)
        self.c_is = Signal(4)           # C's stream, one-hot, 0 while C is empty
        self.c_eu, self.c_ent, self.c_rec = Signal(EU_W), Signal(ENTITY_W), Signal(8)
        self.c_held = [Signal(L[n], name=f"c_{n}") for n in STREAMS]
        self.c_pat_g1 = Signal(sp.index_bits - 2)
        self.c_vr = Signal(data.ArrayLayout(VR, 3))
        self.c_vrn = Signal(3)
        # stage D: the completion of the clock before, its table effects at this edge
        self.d_vdone, self.d_patch, self.d_tri, self.d_pix = (
            Signal(name=n) for n in ("d_vdone", "d_patch", "d_tri", "d_pix"))
        self.d_rec = Signal(8)
        # stage E: the VDT records of the triangle D completed in the clock before,
        # their references dropped at this edge (decision 24)
        self.e_dec = Signal(3)
        self.e_vr = Signal(data.ArrayLayout(VR, 3))
        # stage P
        # held and not R's packet: a register (equal to ``held_v`` less R's stream while
        # R is active), so that stage P's sources do not wait for a compare of R's stream
        self.parked = Signal(4)
        self.src_v = Signal(4)
        self.src = [Signal(L[n], name=f"src_{n}") for n in STREAMS]
        self.offer = Signal(4)
        self.w_ev = Signal(_eval_layout(D))
        self.w_size, self.w_need_r, self.w_need_l = Signal(SIZE_W), Signal(sp.sr), Signal(sp.sl)
        self.w_loc = Signal(data.ArrayLayout(LOC, 3))
        # each stream's first request (one-hot EU), and the winner's list and request
        self.p_q_v = [Signal(N, name=f"p_q_v{k}") for k in range(4)]
        self.w_ahead = Signal(data.ArrayLayout(N, N))
        self.p_q_eu = [Signal(EU_W, name=f"p_q_eu{k}") for k in range(4)]
        # the arbiter for every value of the provider bits (decision 20)
        self.prov_tri, self.prov_pix = Signal(), Signal()
        self.off_c = {c: Signal(4, name=f"offer_c{c[0]}{c[1]}") for c in self.COMBOS}
        self.win_c = {c: Signal(2, name=f"win_c{c[0]}{c[1]}") for c in self.COMBOS}
        self.win = Signal(2)
        # stage R
        self.cur_seq = Signal(SEQ_W)
        self.scan_none = Signal()
        self.ent_in = Signal(ENTITY_W)
        self.taken, self.bad_answer = Signal(), Signal()
        self.accepted, self.refused = Signal(), Signal()
        self.consume_err, self.consume_close = Signal(), Signal()
        self.consumed, self.parks = Signal(), Signal()
        self.push_move = Signal(L["move"])
        self.push_log = Signal(L["log"])
        self.pkt_report = Signal(_report_layout(D))
        self.answer_report = Signal(_report_layout(D))
        self.done_report = Signal(_report_layout(D))


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
      data of its own triangle). Less one record, one entity and the request's lines
      while a request is held past its first clock and its ALLOC not yet taken (a
      RELEASE, a queued completion or an unanswered command went first): the spreader
      counts its request out only in the request's first clock (``debit_held=False``)
      and the QCC shows an ALLOC only from the clock after it took it, so without this
      the spreader's next scan counted lines the held request was about to take (with
      a QCC that accepts on ``free_run`` alone, a refusal after a passing check;
      README, block 3).
    * An allocation request becomes the QCC command ``ALLOC`` (``etype`` = the request's
      type, the numbers agree: vertex 0, triangle 1, pixel 2, patch 3; ``lines`` = the
      packet's size; ``hold`` = the request's ``hold``, 0 only for pixel packets), sent
      once per request. The QCC responds one clock later, and the adapter registers
      that response: the answer comes two clocks after the ALLOC, ``alloc[e].ready`` =
      1, ``accept[e]`` = (code is OK), ``entity[e]`` = the response's entity, all from
      flip-flops (issue 15: the spreader's accept, which chooses every register of its
      stage R, no longer starts at the QCC's response queue and the route from the far
      QCC). The spreader is built with ``answer_ahead``: the adapter hands it the
      response's entity unregistered as well (``entity_ahead[e]``, a clock ahead of
      ``entity[e]``), and the spreader's bad-answer check (the entity still in flight)
      is looked up in that clock and registered, so that the accept starts from
      flip-flops alone (issue 15). NO_RECORD, NO_ENTITY and NO_LINES (e.g. enough
      lines but no contiguous run) are refusals, so the spreader tries its next
      candidate. An allocation therefore costs three clocks per tried EU (request and
      ALLOC, response, answer), which the spreader's contract allows (it holds the
      request until it is answered); the golden model is
      :class:`golden.spreader.QCCEU` (``ANSWER_DELAY``).
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
      first, one per clock, into a register that drives ``done`` (a completion reaches
      the spreader a clock after it leaves its queue).
    * An entity without ``hold`` (a pixel packet) is deleted by the QCC in the clock of
      its last completion, and its number can be handed out again from the next clock.
      The spreader must have taken the completion before it sees that number in an
      answer (else it reports BAD_ANSWER), so no ALLOC is offered to an EU while a
      completion of that EU waits in its queues. (The ``done`` register needs no such
      wait: an ALLOC is offered once the completion has left its queue, so it is taken
      while the register holds the completion at the earliest, and answered in the
      clock after the spreader took it.) The wait is a register per EU, loaded with the
      queues' state after each edge (issue 15: the queues' level compares no longer
      start the QCC's command path); the rule is unchanged.
    * Entity numbers cross the adapter in ``log2(entities)`` bits (the QCC names none
      above), zero-extended on the spreader's ports: the spreader's tables keyed by
      entity (the in-flight table's 256 words per EU) then keep only the words a QCC
      can name after synthesis, and its look-ups (a completion's, the bad-answer
      check) are that much shallower (issue 15). An ALLOC answered with a number not
      below ``entities`` sets ``adapter_error``.

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
    vdt_records, pt_records, fifo_depth, starve_limit, rotate, patience, local_records
        Parameters of the spreader (:class:`Spreader`); defaults 8, 4, 2, 8, True, 0, 0.
        The spreader's ``eu_records`` and ``eu_lines`` are the QCC's ``records`` and
        ``lines``, its ``max_lines`` is ``min(8, lines)``.
    input_stage : bool
        The spreader's stage L (:class:`Spreader`'s ``input_stage``, decision 28: each
        input's packet taken into a register, its table lookups made on the way in;
        several inputs may then be taken in one clock). Default False, the spreader's
        own default; the front end (``hw.frontend.Frontend``) builds it with True, so
        that stage P starts from flip-flops for the input heads too (issue 15: the board
        build's routed worst path at seed 2 ran from the triangle input's ``prid``
        through the VDT lookups). The adapters do not depend on it.

    Attributes
    ----------
    spreader_params, qcc_params : dict
        The parameters of the spreader inside (a golden model built with them agrees)
        and of each QCC.
    alloc_tap[e] : out
        ``valid``, ``ready``, ``accept``, ``entity`` and ``payload`` of the spreader's
        ``alloc[e]`` and its answer, every clock.
    status_tap[e], release_tap, done_tap : out
        The status the spreader reads; the ``release`` and ``done`` transfers
        (``valid`` = transferred this clock).
    qcc_error : out
        Per EU, the QCC's sticky ``error``.
    adapter_error : out
        Sticky: a RELEASE not answered OK, an answer without a request, an ALLOC not
        taken in the clock it was offered, or an ALLOC answered with an entity number
        not below ``entities`` (none can happen when the rules above hold).
    """

    def __init__(self, *, n_eus=2, records=8, entities=8, lines=16, vdt_records=8,
                 pt_records=4, fifo_depth=2, starve_limit=8, rotate=True, patience=0,
                 local_records=0, input_stage=False):
        from hw.qcc import DONE, ISSUE, QCC     # only here: the plain spreader needs none
        self.n_eus = check_int("n_eus", n_eus, 1, MAX_EUS)
        self.qcc_params = {"records": records, "entities": entities, "lines": lines,
                           "frames": 1}
        self.spreader_params = {
            "n_eus": n_eus, "vdt_records": vdt_records, "pt_records": pt_records,
            "eu_records": records, "eu_lines": lines, "max_lines": max(1, min(8, lines)),
            "fifo_depth": fifo_depth, "starve_limit": starve_limit, "rotate": rotate,
            "patience": patience, "local_records": local_records,
            "input_stage": input_stage}
        self._qccs = [QCC(**self.qcc_params) for _ in range(n_eus)]   # validates them
        # the bits of the QCC's entity numbers (all below ``entities``): the adapter
        # carries no more, so that the spreader's tables keyed by entity (its in-flight
        # table: 256 per EU) keep only the words a QCC can name once Yosys has
        # propagated the constant upper bits (issue 15)
        self.entity_bits = max(1, (entities - 1).bit_length())
        self._spreader = Spreader(**self.spreader_params, answer_ahead=True)
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
        rel_ent = [Signal(self.entity_bits, name=f"rel_ent{e}") for e in range(N)]
        m.d.comb += rel.ready.eq(~Array(rel_v)[rel.payload.eu])
        m.d.comb += [self.release_tap.valid.eq(rel.valid & rel.ready),
                     self.release_tap.payload.eq(rel.payload)]

        queues = []
        done_v, done_eu, done_ent = Signal(), Signal(EU_W), Signal(self.entity_bits)
        for e in range(N):
            m.submodules[f"qcc{e}"] = q = self._qccs[e]
            for k in ("n_issue", "m_issue"):
                wiring.connect(m, getattr(q, k), wiring.flipped(getattr(self, k)[e]))
            for k in ("n_done", "m_done"):
                wiring.connect(m, wiring.flipped(getattr(self, k)[e]), getattr(q, k))
            m.d.comb += [q.query.valid.eq(0), q.qresp.ready.eq(1), q.resp.ready.eq(1)]
            with m.If(rel.valid & rel.ready & (rel.payload.eu == e)):
                m.d.sync += [rel_v[e].eq(1), rel_ent[e].eq(rel.payload.entity)]
            eq, holds = zip(*(self._completions(m, q, e, kind) for kind in ("n", "m")))
            queues += eq
            # a completion of this EU waits in its queues: a register of the queues'
            # next state (equal to their ``r_rdy``), so that the levels' compares do not
            # start the QCC's command path (the board build's route at seed 2, issue 15)
            blocked = Signal(name=f"blocked{e}")
            m.d.sync += blocked.eq(holds[0] | holds[1])
            sent, errs = self._commands(m, q, sp.alloc[e], sp, e, rel_v[e], rel_ent[e],
                                        blocked, Op, Code)
            bad += errs
            self._status(m, q, sp.alloc[e], sp.status[e], e, sent)
            m.d.comb += [self.status_tap[e].eq(sp.status[e]),
                         self.qcc_error[e].eq(q.status.error)]

        # completions: the queues merged, lowest first, into a register that drives the
        # spreader's ``done`` (its ``ready`` is 1): the queues' LUT-RAM reads and the
        # merge end there, not in the spreader's completion handling and error FIFO
        for i in reversed(range(2 * N)):
            with m.If(queues[i].r_rdy):
                m.d.sync += [done_eu.eq(i // 2), done_ent.eq(queues[i].r_data)]
        m.d.sync += done_v.eq(Cat(f.r_rdy for f in queues).any())
        m.d.comb += [sp.done.valid.eq(done_v), sp.done.payload.eu.eq(done_eu),
                     sp.done.payload.entity.eq(done_ent)]
        for i in range(2 * N):
            first = queues[i].r_rdy & ~Cat(f.r_rdy for f in queues[:i]).any() if i \
                else queues[i].r_rdy
            m.d.comb += queues[i].r_en.eq(first)
        m.d.comb += [self.done_tap.valid.eq(sp.done.valid & sp.done.ready),
                     self.done_tap.payload.eq(sp.done.payload)]
        with m.If(Cat(bad).any()):
            m.d.sync += adapter_error.eq(1)
        return m

    def _status(self, m, q, a, st, e, sent):
        """EU ``e``'s status as the spreader reads it: the QCC's, less a held request
        whose ALLOC the QCC has not taken yet (``sent``: taken in an earlier clock). The
        spreader counts its request out of the EU's status only in the request's first
        clock (its ``debit_held=False``); the QCC shows an ALLOC from the clock after it
        took it. An ALLOC sent later than the request's first clock (a RELEASE or a
        completion went first, or the command before it was not answered yet) would
        otherwise be counted nowhere in between, and a check that passed on those lines
        would meet a refusal (with a QCC that accepts on ``free_run``, the one refusal it
        can make)."""
        asked = Signal(name=f"asked{e}")    # the request was driven in the clock before
        m.d.sync += asked.eq(a.valid & ~a.ready)
        pending = Signal(name=f"pending{e}")
        m.d.comb += pending.eq(asked & ~sent)
        qs, lines = q.status, Mux(pending, a.payload.lines, 0)

        def less(count, taken):                 # never below 0
            return Mux(count > taken, count - taken, 0)
        m.d.comb += [st.free_records.eq(less(qs.free_records, pending)),
                     st.free_entities.eq(less(qs.free_entities, pending)),
                     st.free_lines.eq(less(qs.free_run, lines))]

    def _completions(self, m, q, e, kind):
        """The queue of entity completions of one issue kind of EU ``e``."""
        records = self.qcc_params["records"]
        iss, done = getattr(q, f"{kind}_issue"), getattr(q, f"{kind}_done")
        last = Array(Signal(name=f"{kind}last{e}_{r}") for r in range(records))
        ent = Array(Signal(self.entity_bits, name=f"{kind}ent{e}_{r}")
                    for r in range(records))
        # the last stage of each type's program (etype 5..7 is never issued)
        final = Array([Const(len(p) - 1, 4) for p in q.programs] + [Const(15, 4)] * 3)
        with m.If(iss.valid & iss.ready):
            m.d.sync += [last[iss.payload.record].eq(iss.payload.stage
                                                     == final[iss.payload.etype]),
                         ent[iss.payload.record].eq(iss.payload.entity)]
        f = SyncFIFO(width=self.entity_bits, depth=records)
        m.submodules[f"done_{kind}{e}"] = f
        m.d.comb += [f.w_en.eq(done.valid & last[done.payload.record]),
                     f.w_data.eq(ent[done.payload.record])]
        # the queue is not empty after this clock's edge (its ``r_rdy`` of the next clock)
        holds = Signal(name=f"{kind}holds{e}")
        m.d.comb += holds.eq((f.w_en & f.w_rdy) | (f.r_level > 1)
                             | ((f.r_level == 1) & ~f.r_en))
        return f, holds

    def _commands(self, m, q, a, sp, e, rel_v, rel_ent, blocked, Op, Code):
        """EU ``e``'s command port: RELEASE first, else the spreader's ALLOC, and the
        registered answer; returns ``sent`` (the request's ALLOC taken, not yet
        answered) and the conditions that set ``adapter_error``."""
        c, r = q.cmd, q.resp
        wait = Signal(name=f"wait{e}")     # a command taken, its response not yet come
        sent = Signal(name=f"sent{e}")     # the request's ALLOC taken, its answer not given
        # The payload comes from registers alone (a RELEASE ignores the ALLOC fields, an
        # ALLOC the entity); only ``valid`` waits for the completion queues' levels, so
        # that the QCC's first fit does not start behind them (the board build's
        # critical path ran from a queue's level through the ALLOC fields).
        m.d.comb += [c.payload.op.eq(Mux(rel_v, Op.RELEASE, Op.ALLOC)),
                     c.payload.entity.eq(rel_ent),
                     c.payload.etype.eq(a.payload.etype),
                     c.payload.hold.eq(a.payload.hold),
                     c.payload.lines.eq(a.payload.lines)]
        m.d.comb += c.valid.eq(~wait & (rel_v | (a.valid & ~sent & ~blocked)))
        with m.If(c.valid & c.ready & rel_v):
            m.d.sync += rel_v.eq(0)
        with m.If(c.valid & c.ready):
            m.d.sync += wait.eq(1)
        with m.Elif(r.valid):
            m.d.sync += wait.eq(0)
        with m.If(a.ready):
            m.d.sync += sent.eq(0)
        with m.Elif(c.valid & c.ready & ~rel_v):
            m.d.sync += sent.eq(1)
        # The answer is the QCC's response registered: the spreader's accept (stage R's
        # choice of every register it loads) starts from these flip-flops, not from the
        # QCC's response queue and the route from the far QCC (issue 15)
        answer = Signal(name=f"answer{e}")
        accept = Signal(name=f"accept{e}")
        entity = Signal(self.entity_bits, name=f"entity{e}")
        named = r.payload.entity[:self.entity_bits]
        m.d.sync += [answer.eq(r.valid & (r.payload.op == Op.ALLOC)),
                     accept.eq(r.payload.code == Code.OK), entity.eq(named)]
        m.d.comb += [a.ready.eq(answer), sp.accept[e].eq(accept), sp.entity[e].eq(entity),
                     sp.entity_ahead[e].eq(named)]
        t = self.alloc_tap[e]
        m.d.comb += [t.valid.eq(a.valid), t.ready.eq(a.ready), t.accept.eq(sp.accept[e]),
                     t.entity.eq(sp.entity[e]), t.payload.eq(a.payload)]
        return sent, [answer & ~a.valid,
                r.valid & (r.payload.op == Op.RELEASE) & (r.payload.code != Code.OK),
                r.valid & r.payload.code[3],
                c.valid & ~c.ready & (c.payload.op == Op.ALLOC),
                r.valid & (r.payload.op == Op.ALLOC) & (r.payload.code == Code.OK)
                & (r.payload.entity >= self.qcc_params["entities"])]


DESIGNS = {
    "spreader": Spreader,
    "spreader_qcc": SpreaderQCC,
}
