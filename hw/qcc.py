"""Queue/cache controller (QCC) of an execution unit.

An execution unit runs several logical pipelines (vertex, triangle, pixel, patch, state)
over one cache. An *entity* is allocated once; its data stays where it was put and its
progress is a stage number in a table. The QCC holds that table and sequences the
entities through their stages:

* the **entity descriptor table (EDT)**, ``records`` records searched as a CAM by
  ``(entity, frame)``; a record maps one logical frame of an entity to a physical buffer;
* the **address rename table (ART)**: a buffer is 1-8 contiguous cache lines taken
  first-fit from a free-line bitmap; TRANSLATE turns (buffer, line offset) into a line
  address;
* the **stage parser**: a stage program per entity type (up to 8 stages, each NUMERIC or
  MOVE with a descriptor pointer), one logical FIFO of record indices per (type, stage),
  and two issue ports (NUMERIC to the thread controller, MOVE to the data move machine)
  whose completions advance the entities.

The golden model ``golden/qcc.py`` is the executable reference: its module docstring is
the contract (ports, opcodes, response codes, what happens within one clock) and this
block implements it cycle for cycle. In one clock: the requests taken on ``cmd`` and
``query``, the completions on ``n_done``/``m_done`` and the issues (each port pops the
FIFO it decided on in an earlier clock and decides the next) all read the state at the
start of the clock; their writes combine as if applied in the order issues, command,
completions.

Ports
-----
``cmd`` (in) / ``resp`` (out)
    Every operation (:class:`Op`); one response per command, in order, shown from the
    clock after the command is taken.
``query`` (in) / ``qresp`` (out)
    SEARCH and TRANSLATE only, one per clock, answer one clock later; a SEARCH or
    TRANSLATE on ``cmd`` waits while ``query`` offers one.
``n_issue``, ``m_issue`` (out)
    Issues to the thread controller (NUMERIC stages) and the data move machine (MOVE).
``n_done``, ``m_done`` (in)
    Completions (a record index); ``ready`` is always 1.
``status``
    ``free_records``, ``free_entities``, ``free_lines``, ``free_run`` (the longest run of
    contiguous free lines, :data:`RUN_DELAY` clocks late less the lines taken since:
    what an ALLOC of a multi-line buffer needs, never more than the state has, so a
    minimum check against it that passes means the ALLOC is accepted) and the sticky
    ``error``.

How it is built, and why
------------------------
* **The CAM is a RAM indexed by entity.** The key space is only 12 bits (entity,
  frame), so the *entity map* (``ent_map``, ``entities`` words of ``frames`` slots,
  each slot a record index and a "mapped" bit) holds per entity number the record of
  each of its frames. A search is one synchronous read of its entity's word, started
  in the clock the search is taken; in the next clock the slot of its frame gives hit
  and record, and ``ent_free`` (read with the word) tells whether the entity was in use
  (the map keeps the stale words of free entities). So a search costs a RAM read port,
  not a comparator per record, and one can start every clock on each of ``cmd`` and
  ``query``. ALLOC writes its entity's whole word (frame 0 mapped, no other frame), MAP
  the slot of its frame (a write port with one enable per slot); both in the clock they
  are taken, one write a clock.
* **Dead entities are freed by a reaper** (golden decision 12). DELETE, RELEASE and a
  last completion without ``hold`` (up to three entities a clock) only *kill* the
  entity: its bit in ``ent_live`` clears (so searches miss and look-ups answer
  UNKNOWN from the next clock, and TRANSLATE checks the ``ent_live`` bit of the
  buffer's entity, read from ``meta``) and it is marked ``to_reap``. A completion's
  kill is registered first (its number and a flag) and decoded into ``ent_live`` and
  ``to_reap`` a clock later (golden decision 15: the reaper sees it a cycle later),
  so that the completion's check (the ``busy`` pick) and the decoder into those
  vectors are not one path (the routed worst path, 15.55 ns); in that clock the
  reads of ``ent_live`` (a search's ``in_use``, the look-up's "live") are ANDed with
  a comparison against the registered kills (:meth:`QCC._live_now`). Nothing is
  written in the map. The reaper picks the lowest entity in ``to_reap`` and reads its
  map word (a third read port; the address from a tree that gives the lowest index
  itself, :func:`_lowest_index`, not the one-hot and an encoder), walks its mapped
  frames one a clock (a priority encoder over 16 slots; the walked record from a
  tree of its own beside it, :func:`_lowest_entry`, whose nodes choose their lower
  half's record by its "any", not picked by the encoder's one-hot; whether the walk is
  the entity's last, at most one slot left, is a third tree), and in the
  clock after a walk frees that record (a decoder
  of its index), its lines (its buffer's base and length from the ART, decoded to a
  range) and, with the last, the entity number. The number stays taken until then,
  so the word cannot be overwritten before it is read. One record a clock is as fast
  as ``cmd`` can allocate them. It replaces three 8-bit comparators per record (on an
  ``entity`` copy in flip-flops) and per line (on an owner in flip-flops); the cost
  is a later reuse: a one-record entity killed in clock t is free for ALLOC from t+4
  instead of t+1.
* **Write-once fields in RAM.** ``entity``, ``etype`` and ``hold`` are copied into a
  small RAM (``meta``) and the buffer's first line and length are the address rename
  table (``art``), both indexed by record. Reads by index (completions, issues, search
  results, TRANSLATE) cost a RAM read port instead of a multiplexer across every
  record. A LUT-RAM read of 256 entries still costs a 16-way multiplexer per bit
  (about 13 LUT4), so the reads whose address is known a clock ahead (the look-up's
  ``meta`` and ``stage``, bank 0's read of the other ``stage`` banks by the lowest
  free record) read copies synchronously: Yosys maps each to block RAM or to
  LUT-RAM with the read multiplexers before the output register, so the read's data
  starts the next clock from a register. (Forcing every copy into block RAM,
  ``ram_style`` block, took 418 LUT4 fewer at 256 records but the block RAM's 5.8 ns
  clock-to-output started the worst path: the 32-record build routed at 54.2 MHz
  against 61.5 without it; README, block 2.) Where that address came at the end of
  a deep choice, the read waits for the clock in which it is used and is addressed
  by a register: the issue ports read the head's entity (``rec_entity``) by the
  decided record, not by the decision's next record, and the reaper reads the ART by
  the record it frees, not by the one it walks (each of these synchronous reads put
  the choice and the RAM's address on one path, the decision's the routed worst).
  What stays flip-flops per record is what changes while it lives or what every
  record is looked at for at once: ``valid`` (allocated and not yet reaped), ``busy``
  (one bit per kind of issue: ``busy_numeric``, ``busy_move``) and ``tomb``. Whether
  a record is queued is not kept: the look-up needs it only for a live entity's
  frame-0 record, which is then queued if and only if it is neither busy nor done.
* **``stage`` is a table with three write ports.** It changes while a record lives
  but is only ever read by index (completions, the look-up of MAP/DELETE/RELEASE,
  search responses), and written by three writers that never write one record in
  the same clock: ALLOC's or MAP's record (stage 0, a clock after it was taken, from
  the ``placed_*`` registers, as the ART) and the two completion ports. So it is a
  LUT-RAM per writer, each bank holding its writes XOR the other two banks at that
  address, and a read is the XOR of the three banks
  (LaForest and Steffan's XOR multi-ported memory): every read port and every
  writer's read of the other banks is a copy of a bank (17 copies of 256 x 4 bits,
  272 DPR16X4 when the completions still read it), in
  place of 1024 flip-flops, five 256-way 4-bit multiplexers and each record's stage
  update.
* **A completion's check is one pick, its push needs one RAM read.** ``busy`` is kept
  per kind of issue, so "busy in a stage of this port's kind" is one bit picked by the
  completed record's index. What the completion then needs (type, stage, whether it is
  the last) is written by the issue port at the issue into a small LUT-RAM of its own
  (``issued_numeric``, ``issued_move``; 7 bits by record index, from the decision's
  registers): a busy record's stage does not change, nor its type's program (CONFIG's
  "in flight" check). Before, the completion read the type from ``meta`` and the kind
  and last stage from that type's program (a 5-type, 8-stage pick): on the routed
  worst path of the small build (52.7 MHz).
* **Search results are read one clock later.** The map word for a search is read
  once for both ports (a read port of its own, addressed by the entity of the
  request that takes the shared reads, below, with its frame registered as a
  one-hot), so in the clock after the search its record is one slot pick from one
  word, an AND-OR of the slots with that one-hot (a LUT4 level fewer than a
  multiplexer by the frame's 4 bits). Then the
  response is read from the RAMs by that record (comb read ports) and
  ``busy`` from a per-record copy one clock old (``busy_d``); its type and ``hold``
  come from ``ent_meta``, per entity number, read with the map word; ``stage`` is
  the table's value now unless a completion of that record was taken in the search's
  clock (both
  completions' record and old stage are registered for that). The other fields do not
  change while a record is valid, and a freed record keeps them until it is
  allocated again (only ``valid`` clears; a record is written only while it is the
  lowest free one, from the clock after it was freed), so the response shows the
  state of the clock of the search.
* **MAP, DELETE and RELEASE look up before they are taken.** Every clock ``cmd``'s
  entity is read from the map; in the next clock the map
  word gives the index of its frame-0 record and of (entity, frame), and the frame-0
  record's changing fields (stage, busy) are read by that index into
  registers, corrected for what that clock does to them. These three operations are
  taken two clocks after their command is first offered (``cmd.ready`` depends on
  ``op``), or one more if the frame-0 record was completed in between: no other
  command can add a record of the entity meanwhile, and whether the entity is still
  live is read in the clock before the take, into a register (no command is taken in
  that clock, and a completion that kills the entity is one of its frame-0 record,
  which delays the take a clock). So their checks and the updates they cause start
  from registers. The accepts use the take without ``cmd.ready``'s SEARCH /
  TRANSLATE term (``cmd_take_update``; the same for the operations they accept), so
  ``query``'s offer is not on their path. ALLOC and CONFIG are taken in the clock they are offered, SEARCH
  and TRANSLATE too unless ``query`` offers one in that clock (below).
* **One set of read ports for searches and translations.** ``cmd`` and ``query``
  share the reads a SEARCH or TRANSLATE makes (a TRANSLATE's reads when it is taken;
  the ART, ``stage`` and ``busy_d`` by the found record a clock later; a TRANSLATE's
  ART read, by its registered buffer, is a read port of its own, so that its
  ``addr`` adder is not after a search's map word and reads): a ``cmd``
  SEARCH or TRANSLATE waits while ``query`` offers one (``query`` is for them;
  ``cmd`` carries them rarely), so which port's request is read follows ``query``'s
  offer, not its ``ready`` (the response queue's count). Two sets of those LUT-RAM
  reads and record-wide picks cost about 700 LUT4 more at 256 records.
* **A TRANSLATE is checked in two clocks.** In the clock it is taken, its buffer's
  ``valid`` bit, whether its entity (``meta``) is live (the ``ent_live`` pick, as a
  search's ``in_use``) and whether the offset is past the length (``art_len``) are
  read into registers; in the next the code is formed from them, with the response.
  The request's choice, the ``meta`` read, the ``ent_live`` pick, the code and the
  response were one path (the routed worst path at 15.8-16.5 ns); with the pick a
  clock later, from the registered entity (corrected by that clock's kills), the pick
  (which Yosys mapped as a ripple of 7 LUT4 at 32 entities), the code and the
  response were (14.73 ns, session 19).
* **The sticky error from registers.** A request's bad code (>= 8) is known in the
  clock it is taken and goes into the pending response register anyway (a
  TRANSLATE's is formed in the next clock, from registers); the error flag is set
  from those codes (and a completion's registered "bad") a clock later, and
  ``status.error`` is the flag or those codes' "bad", so it rises in the clock after
  the bad input as the model says.
* **Logical FIFOs in memory.** Each FIFO (type, stage) is a ring buffer of record
  indices (:class:`_Queue`, depth ``records`` rounded up to a power of two: a memory
  with its head in a register and the entry after it on the output of its one
  synchronous read port, so both are known at the start of the clock, and no level
  counter: an "empty" and a "one entry" flag).
  Its memory is written at the tail every clock with the entry a push would add (for
  stage 0 ALLOC's lowest free record; for a later stage the record the completion
  port of the previous stage's kind, the only port that pushes there, took in the
  clock before: a completion's push is registered, ``fifo<t>_<i>_pushing``, and
  moves the FIFO a clock later, golden decision 16, so that the completion's check
  and the FIFO's flags are not one path, a routed worst path at 15.01 ns), and the
  push itself moves only the tail pointer and the flags: the late "push or not"
  (ALLOC's accept) drives a small counter instead of the
  memory's write enable, data multiplexer and level adder (it replaces
  ``amaranth.lib.fifo.SyncFIFOBuffered``, whose write enable and level were the end
  of the routed worst path, and takes 979 fewer LUT4 at 32 records). Pushes
  (ALLOC into stage 0, each completion port into the next stage) always go to
  different FIFOs, and so do the two pops, so every FIFO has one write and one read a
  clock; a record takes no logic for its place in a queue. Nothing is removed from
  the middle: DELETE of a queued entity leaves its frame-0 record in the FIFO as a
  *tombstone* (a ``tomb`` bit per record: neither valid nor free) that the pop drops.
* **Issue selection decided a clock ahead.** Per kind, registers hold the FIFO the
  next issue comes from and its head, the record (``decided_record_<kind>``). In a
  clock where the port can load, that record is popped and loaded into the port with
  its RAM fields (or dropped if it is a tombstone), and the next FIFO and its head
  after this clock's pop (the head, or the entry after it if this FIFO is the one
  popped) are decided from the FIFOs less this clock's pops: each type offers the
  latest non-empty stage of that kind (drain before fill), a round-robin pointer per
  kind picks the type. A decision is made only when the port holds none or pops now,
  and only that port pops a FIFO of its kind, so the FIFOs after the pops are known
  from registers (less the held decision's head, if there is one) and the port's
  late ``ready`` only enables the write. Each type's latest and second latest
  waiting stage of each kind are themselves registers (``cand1_*``, ``cand2_*``),
  computed a clock ahead from the FIFOs' flags after that clock's pops and pushes,
  less ALLOC's push (golden decision 17: a record ALLOC pushes is offered a clock
  later; its accept comes late in the clock); the decision only corrects them for
  its own FIFO's pop (``emptied_*``: that pop empties the type's latest stage, so the
  second latest is offered). Only the type decided last can be emptied so, and the
  round robin tries it last, so the round robin runs on the registered offers and
  ``emptied`` only withdraws that type's win (no second latest stage either). The FIFOs' flags → ``waiting``
  → the latest stage → the round robin → ``decided_*`` had been one path (the routed
  worst, 15.0 ns). The decided FIFO is also held as a one-hot
  over (type, stage) (``dec_hot``), so that the next decision and the pops read one
  bit per FIFO, not a comparison of the decided type and stage. So the choice (FIFOs,
  round-robin) and its
  effect on the records (busy, the pop) are a clock apart, the issue path starts from
  the record register (no multiplexer of FIFO heads on it), and a decided FIFO cannot
  run empty nor change its head before its pop (only that pop takes from it).
* **Allocation.** The lowest free record and the entity number to give are registers
  (``free_record``, ``free_entity``, with "one exists" and the counts). The number is
  the head of a FIFO of free numbers (golden decision 19: the number free the
  longest; the never-used ones from a counter, the reaper's in a LUT-RAM ring), the
  next head a RAM read from a register (:meth:`QCC._free_list`). The record is
  computed a
  clock ahead (golden decision 18: a record or number freed in a clock is free from
  the clock after the next, so the next clock's lowest free one is this clock's
  unless it is taken now or a lower one cools now, and otherwise the lowest of the
  records not in use now less this clock's: one index tree, :func:`_lowest_index`,
  from registers, and the accept only chooses, :meth:`QCC._lowest_free_next`); their
  one-hots, which drive the records' and numbers' updates, are decoded from the
  registered index. Before, the priority trees over the free bits ran into every
  table the accept writes (the stage table's read a clock ahead, the entity map's
  write enable: routed worst paths, 14.6-15.4 ns) and a port's drop of a tombstone
  into the free-record count's adder (14.95 ns); the frees are now counted from
  registers. (The ALLOC or MAP response takes the record from ``placed_record`` a
  clock later.) The lines come from a first fit of the length the
  command asks for (runs of free lines, then the lowest start). The lowest free record and the RAMs
  are written every clock with what ALLOC or MAP would put there (it is free, so
  nothing reads it); only the ``valid`` bits and the first fit's start
  wait for the accept decision. The first fit's one-hot start and the command's
  length (a thermometer, 0 without an accept: the accept masks the length, not the
  start, so that it is no level of the loop below) end in registers (``take_start``,
  ``take_need``), and its lines are taken a clock later: ``line_free`` holds the free
  lines less those of the buffer placed in the clock before, and the lines free now
  (``lines_free_now``, what the first fit, the ``free_run`` tree and the next
  ``line_free`` read) are ``line_free`` less that start's one-hot spread over its
  length (line i is taken if the start is one of the ``lines`` lines up to i), two
  LUT4 levels from registers. So the loop from the free lines through the runs and
  the lowest-start tree back to them holds the spread once, and the accept and the
  update of ``line_free`` are off it (before, the spread, the accept and the update
  followed the tree in one clock: the routed worst path, 15.11 ns, 13 LUT4). The
  contract is unchanged: the lines free now are exactly those of ``S_t``. A range
  from an encoded base (:func:`_range_mask`, as the reaper frees lines) takes about
  a LUT4 a line instead of five, but puts the encoder and the range's sum and
  compares on that loop. The base (``placed_base``) is encoded from the registered
  start a clock later: the ART is written then from registers (nothing reads a
  record's ART in the clock after it was taken), and the ALLOC or MAP response takes
  its ``addr`` from it. The accept decision
  is the AND of every other check (``alloc_rest``,
  ``map_rest``: registers and the lowest-free trees) with ``run_ok``, ``free_run >=
  lines`` (golden decision 14: ``run >= run_window + lines``, registers and the
  command only), and each "any" of a priority encoder (a free record, a free entity
  number) is a flat OR tree of its own: shared with the encoder's "none below" terms,
  it had become a chain of one level per group of four on the routed worst path.
  The first fit only places the buffer (it always finds one on an accept, since
  ``free_run`` is never above the longest free run): before decision 14 "a fit
  exists" (the runs of free lines for the command's length, the lowest-start tree
  and its "any") was the last input of the accept, and the accept's wide nets to
  every record, line and FIFO came after it (the routed worst path, 18.9 ns at 32
  records).
* **Each record tells an issue from a drop by its own ``tomb`` bit**: the popped
  head's one-hot goes to every record, and ``busy`` or the tombstone's end follow
  from the record's own bit, so the pick of the head's ``tomb`` bit (``go``) drives
  only the issue port's ``valid`` and the busy counters, not every record's state;
  the port's payload loads on every pop (the port is empty or being taken then), so
  ``go`` has one flip-flop per port to drive.
* **CONFIG's "type in flight" check** reads one register per type (``in_flight_<t>``;
  so it reads the FIFOs of the clock's start, golden decision 20: a tombstone dropped
  in CONFIG's clock still counts), computed a clock ahead from one counter per type of its busy entities, its FIFOs'
  "not empty" flags and its registered pushes, each after this clock's pops, pushes,
  issues and completions, instead of searching every record: an entity becomes busy
  only by an issue and stops only by an accepted completion, and up to two of each
  can happen in a clock, so the counter adds the clock's issues of that type and
  subtracts its accepted completions. The issues are added a clock late
  (``busy<t>_issued_late``), so that ``go``, the end of the issue path (decision →
  FIFO head → its ``tomb`` bit), drives registers only, not the counters' adders. (The
  flags ORed in CONFIG's clock, a FIFO's flags → the OR → CONFIG's code → its
  response, were a chain of 12 LUT4.)
* **Responses** go through a two-entry queue with a bypass; ``cmd.ready`` and
  ``query.ready`` come from registers (and ``cmd``'s ``op``, and whether ``query``
  offers a SEARCH or TRANSLATE), never from ``resp.ready``/``qresp.ready``.
  ``free_records``, ``free_entities`` and ``free_lines`` are counters (the reaper
  frees at most one record, number and buffer a clock, a port drops at most one
  tombstone, ALLOC or MAP takes at most one), whose next
  values wait for the accept decision only through a multiplexer.
* **``free_run`` is pipelined** (golden decision 13). The longest free run is a
  balanced tree over the free-line bitmap whose nodes join the free runs at the ends
  of two halves: log2(``lines``) levels of adders, comparators and multiplexers,
  which was the worst routed path of the small build (24.7 ns). Its levels are cut
  into :data:`RUN_DELAY` (4) register stages of at most two levels at 256 lines (the
  reset values are those of all lines free), so the tree gives the run of the state 4
  clocks ago; the port shows it less ``run_window``, the lines ALLOC and MAP took in
  those 4 clocks (a register updated by a multiplexer on the accept decision). That
  difference is itself a register, ``run_room``, computed a clock ahead from the D
  input of the tree's last register and the next window, once for each outcome of
  the accept, which only chooses: so the accept's ``free_run >= lines`` compares a
  register with the command's 4 bits. Likewise "a free record exists"
  (``any_free_record``) and "a free entity number exists" (``any_free_entity``) are
  kept a clock ahead, from the counts' next values (the frees of the clock before,
  golden decision 18, less the one taken now). The accept waits for no priority
  encoder's tree. First
  fit takes a buffer from the start of a free run, so that is never more than the
  longest run now and the spreader's minimum check stays safe; the cost is a status
  that may under-report for 4 clocks after an ALLOC, MAP or reap, and the stage
  registers: the tree alone at 256 lines takes 2326 LUT4 and about 1000 more
  flip-flops than unpipelined (2210 LUT4; Yosys, ``-nowidelut``).
* Timing: :class:`QCCTiming` puts a flip-flop on every port so that an out-of-context
  place and route also times the paths from and to the ports.
* Where it stands (ECP5-85F, Yosys ``synth_ecp5``, ``qcc.qcc_timing``; README, block 2):
  256 records, entities and lines took 49021 LUT4 (CCU2C counted as 2), 12086 FF,
  364 DPR16X4 and 48 DP16KD before ``stage`` moved into its table (62 % of the
  device's logic after packing; the flip-flop CAM did not fit, 114 %). With
  ``stage`` in its table, kind and last read from the programs, ``free_entities`` a
  counter, and Yosys mapping to LUT4s only (``-nowidelut``, ``tb/synth.py``), they take
  40322 LUT4, 9561 FF, 636 DPR16X4 and 48 DP16KD (48 % of the device's LUT4); the
  figures after the reaper and the range masks are in the README (block 2). A
  32-record build of that RTL routed at 36.1 MHz; its critical path ran from a
  port's decision through the 64-way multiplexer of FIFO heads, the head's one-hot
  and tombstone bit, ``go``, a DELETE's "issued in this clock" check and
  ``delete_ok`` into the kill comparators of every record. The reaper took the
  comparators out of it and the DELETE check now uses the pop (``carry``), not
  ``go``: 256 records then take 31319 LUT4, 5545 FF, 748 DPR16X4 and 52 DP16KD (37 %
  of the device's LUT4; the target is 30 %), and the small build routed at 40.4 MHz
  with the ``free_run`` tree (line bits to the status port, six levels of adders and
  comparators) as its worst path. With ``free_run`` pipelined, issue and drop told
  apart by each record's ``tomb`` bit, ``free_lines`` a counter and range masks
  without a carry chain, the longest path between registers of the small build
  (Yosys ``ltp``) fell from 28 to 16 LUT4/CCU2C cells, for 529 more LUT4 and 324
  more flip-flops (9831 and 2802); it is now a port's decision → the FIFO head
  multiplexer → ``go`` → the busy counters. Routed before the range masks changed,
  the small build reached 46.0 MHz, its worst path ALLOC's first fit (the runs of
  free lines → the lowest start → ``alloc_ok`` → a FIFO's write enable, 21.7 ns,
  mostly wire), and 256 records took 32011 LUT4 (38 %). With the accept as the
  other checks AND a flat "a fit exists", the busy counters a clock late and the
  issue payload loaded on every pop (9823 LUT4, 2794 FF), the small build routes at
  52.7 MHz; ALLOC is off the worst path, which is now a completion's check (the
  record's type from ``meta`` → its stage's kind from the program → ``ok`` →
  ``advance`` → the next stage's FIFO push, 19.0 ns), and 256 records take 31670
  LUT4, 6543 FF, 748 DPR16X4 and 52 DP16KD (38 % of the device's LUT4; target 30 %).
  With ``busy`` per kind, the completion's fields from ``issued_<kind>`` and the FIFOs
  (:class:`_Queue`) written before the push, 256 records take 30503 LUT4, 6117 FF,
  780 DPR16X4 and 52 DP16KD (36 %), the small build 8610 LUT4 (was 9823); it still
  routes at 52.7 MHz: the completion's chain is off the worst path, but the issue
  path (a port's decision → the 40-way multiplexer of FIFO heads → the head's one-hot
  → ``issued`` → the look-up's pick of ``queued``, 18.97 ns) was as long. With the
  record held in the decision (made from registers), each FIFO's head in a register
  and the entry after it from its one read port, no FIFO level counters and the
  look-up's checks as comparisons, the issue path starts from a register and is off
  the worst path; the small build takes 8211 LUT4 and routes at 52.9 MHz, its worst
  path ALLOC's first fit (the runs of free lines → the lowest start → ``alloc_ok`` →
  every record's ``valid``, 18.9 ns); 256 records take 29048 LUT4, 6133 FF,
  780 DPR16X4 and 52 DP16KD (35 % of the device's LUT4; target 30 %). With ALLOC
  and MAP accepted on ``free_run`` (golden decision 14) the first fit is off the
  accept: the small build takes 8236 LUT4 and routes at 57.7 MHz, its worst path the
  lowest-free-record tree's "any" → the MAP accept → its wide nets (17.3 ns); 256
  records take 29288 LUT4, 6353 FF, 752 DPR16X4 and 52 DP16KD (28828 on the RTL
  before, whose response queue had moved into registers). With "a free record
  exists" and ``free_run`` as registers kept a clock ahead (``any_free_record``,
  ``run_room``; below), the small build takes 8498 LUT4 and routes at 59.7 MHz, its
  worst path the first fit's placement (``cmd.lines`` → the runs of free lines → the
  lowest start → the range mask → a line's free bit, 16.7 ns). With ALLOC's lines from
  the first fit's one-hot and its base into a register, the decision's one-hot and
  the reaper's "last" and its pick's index from trees of their own, it routes at
  65.2 MHz, its worst path ALLOC's lowest free record into the ``stage`` table (the
  free-record tree → ``new_record`` → the other banks' read → bank 0's write data,
  15.4 ns). With that entry written a clock later from the ``placed_*`` registers it
  routes at 64.8 MHz (one seed, 8658 LUT4), its worst path ALLOC's first fit again
  (``cmd.lines`` → the runs of free lines → the lowest start → ``fit_mask`` → a line's
  free bit, 15.4 ns). With the FIFO pointers as de Bruijn counters, no ``keep``
  attribute but on the first fit's nodes, no ``queued`` bit and two priority trees
  fewer (the reaper's one-hot pick, "two or more free"), 256 records take 26602 LUT4,
  6190 FF, 752 DPR16X4 and 52 DP16KD (32 %; was 31140) and the small build 7659 LUT4;
  it routes at 65.6 MHz, its worst path a TRANSLATE's ``meta`` read → the owner's
  ``ent_live`` pick → the sticky ``error`` (15.2 ns). With synchronous-read copies for
  the reads addressed a clock ahead, ``free_records`` a counter and one set of SEARCH /
  TRANSLATE reads for both ports, 256 records take 24514 LUT4, 6261 FF, 480 DPR16X4
  and 56 DP16KD (29 %: the 30 % target is met for logic LUT4) and the small build
  routes at 61.5 MHz, its worst path the issue decision → ``meta_sync``'s read
  address (16.3 ns). With the issue ports' entity, the reaper's ART read and the
  ``error`` flag from registers (above), 256 records take 24724 LUT4 and the small
  build routes at 60.7 / 64.6 / 63.3 MHz at placement seeds 1 / 2 / 3 (before: 61.5 /
  57.5 / 56.6). With a TRANSLATE checked in two clocks, the shared reads chosen by
  ``query``'s offer and ``new_record`` from an index tree (above), 256 records take
  24556 LUT4 and the small build routes at 64.3 / 64.0 / 66.4 MHz at seeds 1 / 2 /
  3, its worst paths a completion's kill (``n_done``'s record → ``meta``'s ``hold``
  and entity → ``to_reap``) and a search's or translation's response (the ART's read
  → ``addr``). With a completion's kill applied a clock later (golden decision 15),
  the search's reads from one map word, the TRANSLATE's own ART read, the accepts'
  take without ``query``'s offer and the look-up's "live" a clock ahead, 256 records
  take 24566 LUT4 (``qcc.qcc``; 25067 before them, by the same run) and the small build
  routes at 66.6 / 66.1 / 66.6 MHz at seeds 1 / 2 / 3, its worst paths the issue
  decision (a FIFO's flags → ``waiting`` → the latest stage → the round robin →
  ``decided_*``) and a completion's push (the ``busy`` pick → ``advance`` → the next
  stage's FIFO flags). With the push a clock after the completion (golden decision
  16) and the decision from registered candidates (decision 17: a record ALLOC pushes
  is offered a clock later), both are off the worst path: 256 records take 24871 LUT4
  and the small build routes at 66.2 / 66.2 MHz at seeds 1 / 2, its worst path
  ALLOC's first fit (``cmd.lines`` → the runs of free lines → the lowest start →
  ``line_free``, 15.11 ns). With the first fit's lines taken a clock later from its
  registered start (contract unchanged), 256 records take 24650 LUT4 and the small
  build routes at 66.57 MHz at seed 1, its worst path the issue decision (the decided
  FIFO's ``one`` → ``emptied`` → the offers → the round robin → ``decided_stage``,
  15.02 ns). With the round robin on the registered offers (``emptied`` only withdraws
  the win of the type decided last), 256 records take 24793 LUT4 and the small build
  routes at 66.89 / 68.63 MHz at seeds 1 / 2, its worst paths a port's drop of a
  tombstone → ``drop_frees`` → the free-record count (seed 1, 14.95 ns) and ALLOC's
  lowest free entity number → the entity map's write enable (seed 2, 14.57 ns).
  With the lowest free record and entity number in registers a clock ahead (golden
  decision 18), the free counts from registered frees and CONFIG's "in flight" flags
  as registers, 256 records take 24808 LUT4 and the small build routes at 71.11 /
  69.43 MHz at seeds 1 / 2, its worst paths a search's slot pick → the stage table's
  read → the response (seed 1, 14.06 ns) and ALLOC's first fit (seed 2, 14.40 ns).
  With a search's frame as a one-hot, the reaper's walked record from a tree of its
  own, the first fit's accept on its length and a TRANSLATE's liveness picked in its
  take clock, 256 records take 24692 LUT4 and only the first fit's and the lowest
  free entity number's loops are 12 LUT4 or more by Yosys's count; the small build
  routes at 66.36 / 70.79 MHz at seeds 1 / 2, its worst path ALLOC's first fit loop
  (``take_start`` → the spread and runs → the lowest-start tree, 15.07 ns at seed 1)
  and a TRANSLATE's ``ent_live`` pick after its ``meta`` read (14.13 ns at seed 2).
  With the entity number from a FIFO of free numbers (golden decision 19), 256
  records take 23794 LUT4 and the first fit is the only chain of 13 LUT4 by Yosys's
  count; the small build routes at 71.52 / 69.37 MHz at seeds 1 / 2, its worst path
  ALLOC's first fit loop (``take_need`` → the spread and the runs → the lowest-start
  tree → ``take_start``, 13.98 ns at seed 1) and 14.42 ns at seed 2.
  README, block 2; ``docs/qcc.md``.

Decisions beyond the golden model
---------------------------------
* ``lines`` is limited to 1..1024 (the free-line bitmap, first fit and the range masks
  are logic per line); the other parameters have the model's ranges.
* MAP, DELETE and RELEASE are taken two (or three) clocks after they are first offered
  on ``cmd`` (above), and a SEARCH or TRANSLATE on ``cmd`` waits while ``query`` offers
  one (taken or not); the model sees each request in the clock it is taken.
* A completion's ``ready`` is always 1; a rejected completion only sets ``error``.
"""

import enum
import functools
import itertools
from types import SimpleNamespace

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib import enum as hdl_enum
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from hw.params import check_int

__all__ = [
    "Kind", "EType", "Op", "Code", "DEFAULT_PROGRAMS", "DONE_STAGE", "N_TYPES",
    "MAX_STAGES", "MAX_BUF_LINES", "RUN_DELAY", "COMMAND", "ISSUE", "DONE", "addr_width",
    "response_layout", "QCC", "QCCTiming", "DESIGNS",
]

N_TYPES = 5
MAX_STAGES = 8
MAX_BUF_LINES = 8
DONE_STAGE = 15
#: Clocks ``status.free_run`` lags the state by (golden decision 13).
RUN_DELAY = 4
_SLOTS = 8 * MAX_STAGES        # FIFO index space: type in bits 3-5, stage in bits 0-2


class Kind(enum.IntEnum):
    """Kind of a stage: which processor its issue goes to."""
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
    """Command opcodes (7 is reserved)."""
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


def _program(etype, kinds):
    return tuple((Kind(k), etype << 4 | i) for i, k in enumerate(kinds))


_N, _M = Kind.NUMERIC, Kind.MOVE
#: Reset stage programs per type, ``(kind, descriptor)`` per stage; a descriptor pointer
#: is ``etype << 4 | stage`` so that it names its program and stage in a waveform.
DEFAULT_PROGRAMS = (
    _program(EType.VERTEX, (_M, _N, _M, _N, _N, _M)),
    _program(EType.TRIANGLE, (_M, _N, _M, _N, _N, _M)),
    _program(EType.PIXEL, (_N, _N, _M, _N, _M, _N, _M)),
    _program(EType.PATCH, (_M, _N, _M)),
    _program(EType.STATE, (_M,)),
)

#: ``cmd`` and ``query`` payload (111 bits); ``kinds`` bit i is the kind of stage i,
#: ``descs`` bits 8i..8i+7 the descriptor of stage i (CONFIG).
COMMAND = data.StructLayout({
    "op": 3, "etype": 3, "hold": 1, "lines": 4, "entity": 8, "frame": 4, "buf": 8,
    "offset": 4, "nstages": 4, "kinds": 8, "descs": 64,
})

#: ``n_issue`` and ``m_issue`` payload (39 bits).
ISSUE = data.StructLayout({
    "record": 8, "entity": 8, "etype": 3, "stage": 4, "desc": 8, "buf": 8,
})

#: ``n_done`` and ``m_done`` payload.
DONE = data.StructLayout({"record": 8})


def addr_width(lines):
    """Width of a cache line address for ``lines`` lines."""
    return max(1, (lines - 1).bit_length())


def response_layout(lines):
    """``resp`` and ``qresp`` payload (48 + :func:`addr_width` bits)."""
    return data.StructLayout({
        "op": 3, "code": 4, "entity": 8, "record": 8, "frame": 4, "etype": 3, "stage": 4,
        "busy": 1, "hold": 1, "buf": 8, "addr": addr_width(lines), "lines": 4,
    })


def _check_programs(programs):
    """The reset programs as a tuple of 5 tuples of ``(kind, desc)``."""
    if not isinstance(programs, (tuple, list)):
        raise TypeError(f"programs must be a sequence of {N_TYPES} stage programs, "
                        f"not {programs!r}")
    if len(programs) != N_TYPES:
        raise ValueError(f"programs must have {N_TYPES} entries, not {len(programs)}")
    checked = []
    for t, program in enumerate(programs):
        if not isinstance(program, (tuple, list)) or not 1 <= len(program) <= MAX_STAGES:
            raise ValueError(f"programs[{t}] must be a sequence of 1 to {MAX_STAGES} "
                             f"(kind, desc) stages, not {program!r}")
        stages = []
        for s, stage in enumerate(program):
            if not isinstance(stage, (tuple, list)) or len(stage) != 2:
                raise TypeError(f"programs[{t}][{s}] must be a (kind, desc) pair, "
                                f"not {stage!r}")
            check_int(f"programs[{t}][{s}] kind", stage[0], 0, 1)
            check_int(f"programs[{t}][{s}] desc", stage[1], 0, 255)
            stages.append((Kind(stage[0]), int(stage[1])))
        checked.append(tuple(stages))
    return tuple(checked)


# ---------------------------------------------------------------- logic helpers

# Shared signals carry no ``keep`` attribute: with it, ABC still copied the logic
# behind them into their users where that saved a level, and left the kept drivers,
# often with no reader (784 dead LUT4 at 256 records); without it 256 records took
# 2669 LUT4 fewer (README, block 2).


def _sig(m, value, name, shape=None, keep=False):
    """A named signal driven by ``value``, for a value used in several places; ``keep``
    (ALLOC's first fit only) makes Yosys keep it as a node of its own."""
    signal = Signal(shape if shape is not None else value.shape(), name=name,
                    attrs={"keep": 1} if keep else {})
    m.d.comb += signal.eq(value)
    return signal


def _tree(op, values):
    """``op``-reduce ``values`` as a balanced tree (log depth)."""
    values = list(values)
    while len(values) > 1:
        values = [op(values[i], values[i + 1]) if i + 1 < len(values) else values[i]
                  for i in range(0, len(values), 2)]
    return values[0]


def _any(bits):
    """OR of a sequence of 1-bit values (0 if empty)."""
    bits = list(bits)
    return Cat(bits).any() if bits else Const(0, 1)


def _read(onehot, values):
    """The entry of ``values`` selected by a one-hot vector (an AND-OR tree; 0 if none)."""
    return _tree(lambda a, b: a | b,
                 [Mux(onehot[i], value, 0) for i, value in enumerate(values)])


def _encode(onehot, width):
    """Index of the set bit of a one-hot vector, ``width`` bits (0 if none)."""
    return Cat(_any(onehot[i] for i in range(len(onehot)) if i >> b & 1)
               for b in range(width))


def _decode(index, count):
    """One-hot of ``index`` over ``count`` bits."""
    return Cat(index == i for i in range(count))


def _range_mask(m, base, length, count, name):
    """``count`` bits, set from ``base`` to ``base + length - 1`` (``length`` 1..8).

    In blocks of 8 bits such a range touches at most two blocks: the block of its first
    bit from an offset on and, if it crosses, the next block up to an offset. So each
    bit is a function of four shared signals (its block is the first, the block below
    is, its offset is in range in the first or in the next block): one LUT4 per bit
    instead of a comparison with ``base``. Only the offset within a block is added to
    ``length`` (a 4-bit sum); the next block's one-hot is the first one's, shifted.
    """
    start = Signal(max(len(base), 3), name=f"{name}_start")
    m.d.comb += start.eq(base)
    offset = start[:3]
    end = _sig(m, offset + length - 1, f"{name}_end", 4)       # 0..14: bit 3 = crosses
    crosses = end[3]
    blocks = -(-count // 8)
    in_first = _sig(m, Cat((o >= offset) & (crosses | (o <= end[:3])) for o in range(8)),
                    f"{name}_in_first")
    in_next = _sig(m, Cat(crosses & (o <= end[:3]) for o in range(8)), f"{name}_in_next")
    first = _sig(m, _decode(start[3:], blocks), f"{name}_first")
    return Cat((first[i >> 3] & in_first[i & 7])
               | ((first[(i >> 3) - 1] & in_next[i & 7]) if i >= 8 else 0)
               for i in range(count))


def _lowest(m, vector, name, keep=False):
    """Signal holding the one-hot of the lowest set bit of ``vector``, and its ``any``.

    A tree of groups of four: a bit is the lowest if it is the lowest in its group and
    no lower group at any level has a bit set (depth grows with log4 of the width).
    """
    if not isinstance(vector, Signal):
        vector = _sig(m, vector, name + "_in")
    bits = [vector[i] for i in range(len(vector))]
    onehot, _ = _lowest_bits(m, bits, name, keep)
    result = Signal(len(vector), name=name, attrs={"keep": 1} if keep else {})
    m.d.comb += result.eq(Cat(onehot))
    # "Any" from a flat OR tree of its own: the groups' "none below" terms form a chain
    # (each group's adds one level), which logic optimisation would otherwise share.
    return result, _sig(m, vector.any(), name + "_exists")


def _lowest_bits(m, bits, name, keep=False):
    if len(bits) <= 4:
        return ([bits[i] & ~_any(bits[:i]) for i in range(len(bits))],
                _sig(m, _any(bits), name, keep=keep))
    size = -(-len(bits) // 4)
    groups = [_lowest_bits(m, bits[j:j + size], f"{name}_{j // size}", keep)
              for j in range(0, len(bits), size)]
    onehot = []
    for j, (group, _) in enumerate(groups):
        none_below = _sig(m, ~_any(any_ for _, any_ in groups[:j]), f"{name}_{j}_clear",
                          keep=keep)
        onehot += [bit & none_below for bit in group]
    return onehot, _sig(m, _any(any_ for _, any_ in groups), name + "_any", keep=keep)


def _lowest_index(m, vector, name):
    """Index of the lowest set bit of ``vector`` (any index if none): :func:`_lowest_entry`
    of the indices, one LUT4 level per level of the tree, not a one-hot and then an
    encoder after it."""
    width = (len(vector) - 1).bit_length()
    return _lowest_entry(m, vector, [Const(i, width) for i in range(len(vector))], name)


def _lowest_entry(m, vector, values, name):
    """The entry of ``values`` at the lowest set bit of ``vector`` (any entry if none),
    from a binary tree whose nodes choose between their halves' entries by the lower
    half's "any": a LUT4 level per level of the tree, not the lowest bit's one-hot and
    then an AND-OR of the entries after it."""
    nodes = [(vector[i], values[i]) for i in range(len(vector))]
    level = 0
    while len(nodes) > 1:
        level += 1
        joined = []
        for j in range(0, len(nodes), 2):
            if j + 1 == len(nodes):
                joined.append(nodes[j])
                continue
            (a0, v0), (a1, v1) = nodes[j], nodes[j + 1]
            joined.append((_sig(m, a0 | a1, f"{name}{level}_{j // 2}_any"),
                           _sig(m, Mux(a0, v0, v1), f"{name}{level}_{j // 2}_entry",
                                len(v0))))
        nodes = joined
    return nodes[0][1]


def _round_robin(m, offers, last, name):
    """One-hot of the first set bit of ``offers`` after position ``last``, cyclically."""
    n = len(offers)
    winner = Signal(n, name=name)
    with m.Switch(last):
        for p in range(n):
            with m.Case(p):
                order = [(p + i) % n for i in range(1, n + 1)]
                m.d.comb += winner.eq(Cat(
                    offers[t] & ~_any(offers[u] for u in order[:order.index(t)])
                    for t in range(n)))
    return winner


def _two_or_more(m, bits, name):
    """Whether at least two of ``bits`` are set: a balanced tree of (any, two) pairs,
    ``two`` of a node being ``two`` of either half or ``any`` of both."""
    nodes = [(bits[i], Const(0, 1)) for i in range(len(bits))]
    level = 0
    while len(nodes) > 1:
        level += 1
        joined = []
        for j in range(0, len(nodes) - 1, 2):
            (a0, t0), (a1, t1) = nodes[j], nodes[j + 1]
            joined.append((_sig(m, a0 | a1, f"{name}{level}_{j // 2}_any"),
                           _sig(m, t0 | t1 | (a0 & a1), f"{name}{level}_{j // 2}_two")))
        if len(nodes) % 2:
            joined.append(nodes[-1])
        nodes = joined
    return nodes[0][1]


def _popcount(bits):
    """Number of set bits, as a balanced adder tree."""
    return _tree(lambda a, b: a + b, [bits[i] for i in range(len(bits))])


def _longest_run(m, bits, stages, name):
    """Length of the longest run of set bits ``stages`` clocks ago, as a balanced tree of
    segments registered every few levels (``stages`` registers on each path), and the
    value its last register takes at the end of this clock (the run of the next clock).

    Each segment knows whether it is all set, its run from its low end, its run into
    its high end and its longest run; joining two segments adds the high-end run of
    the lower one to the low-end run of the upper one. The levels are cut into
    ``stages`` groups of as equal depth as can be (fewer levels than stages: the result
    waits in plain registers), each ending in registers whose reset values are those of
    all bits set. Every node's values are signals: an expression would be copied into
    each of its users, doubling the logic with every level.
    """
    nexts = {}

    def node(n, level, values, registered):
        names = ("all", "low", "high", "best")
        shapes = (1, range(n + 1), range(n + 1), range(n + 1))
        inits = (1, n, n, n)
        out = []
        for field, shape, init, value in zip(names, shapes, inits, values):
            if registered:
                signal = Signal(shape, name=f"{name}{level}_{field}", init=init)
                m.d.sync += signal.eq(value)
                nexts[id(signal)] = value
            else:
                signal = Signal(shape, name=f"{name}{level}_{field}")
                m.d.comb += signal.eq(value)
            out.append(signal)
        return (n, *out)

    def join(lo, hi, level, registered):
        (lo_n, lo_all, lo_low, lo_high, lo_best) = lo
        (hi_n, hi_all, hi_low, hi_high, hi_best) = hi
        across = lo_high + hi_low
        wider = Mux(lo_best > hi_best, lo_best, hi_best)
        return node(lo_n + hi_n, level,
                    (lo_all & hi_all, Mux(lo_all, lo_n + hi_low, lo_low),
                     Mux(hi_all, hi_n + lo_high, hi_high),
                     Mux(across > wider, across, wider)), registered)

    def carry(segment, level, registered):
        return node(segment[0], level, segment[1:], True) if registered else segment

    segments = [(1, bits[i], bits[i], bits[i], bits[i]) for i in range(len(bits))]
    levels = (len(bits) - 1).bit_length()
    done = 0
    for level in range(1, levels + 1):
        registered = level * stages // levels > (level - 1) * stages // levels
        segments = [join(segments[i], segments[i + 1], level, registered)
                    if i + 1 < len(segments) else carry(segments[i], level, registered)
                    for i in range(0, len(segments), 2)]
        done += registered
    best = segments[0][4]
    for k in range(done, stages):
        later = Signal(range(len(bits) + 1), name=f"{name}_wait{k}", init=len(bits))
        m.d.sync += later.eq(best)
        nexts[id(later)] = best
        best = later
    return best, nexts[id(best)]


class _ResponseQueue(wiring.Component):
    """Two-entry response queue with a bypass.

    ``fresh`` (from a register) says that ``payload`` is a new response this clock. It
    goes straight out when the queue is empty and the port takes it; otherwise it is
    stored. ``room`` (registers only) says the owner may take a request this clock:
    its response, fresh in the next clock, will have a place. The two entries are
    registers, not a LUT-RAM FIFO: a stored response goes out from a flip-flop (the
    LUT-RAM read and its multiplexer were the start of the board build's critical
    path, the QCC's answer into the spreader's accept).
    """

    def __init__(self, layout):
        self.layout = layout
        super().__init__({
            "fresh": In(1),
            "payload": In(layout),
            "o": Out(stream.Signature(layout)),
            "room": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        first = Signal(self.layout.size)        # the oldest stored response
        second = Signal(self.layout.size)
        count = Signal(range(3))                # stored responses
        fresh = self.payload.as_value()
        m.d.comb += [
            self.o.valid.eq((count != 0) | self.fresh),
            self.o.payload.eq(Mux(count == 0, fresh, first)),
            self.room.eq(count + self.fresh < 2),
        ]
        taken = self.o.valid & self.o.ready
        # After this clock, oldest first: the stored entries and the fresh response, less
        # the one taken (the oldest); ``room`` keeps them at two.
        with m.If(count == 0):
            with m.If(self.fresh & ~taken):
                m.d.sync += [first.eq(fresh), count.eq(1)]
        with m.Elif(count == 1):
            with m.If(taken & self.fresh):
                m.d.sync += first.eq(fresh)
            with m.Elif(taken):
                m.d.sync += count.eq(0)
            with m.Elif(self.fresh):
                m.d.sync += [second.eq(fresh), count.eq(2)]
        with m.Else():
            with m.If(taken):
                m.d.sync += [first.eq(second), count.eq(1 + self.fresh)]
                with m.If(self.fresh):
                    m.d.sync += second.eq(fresh)
        return m


# ---------------------------------------------------------------- the block

@functools.cache
def _successor_taps(bits):
    """Taps of a ``bits``-bit shift register whose feedback (the taps' XOR, inverted
    when every bit but the top one is 0) steps through all ``2 ** bits`` values, 0
    included (a de Bruijn counter): the fewest taps, always the top bit's (which makes
    the step a permutation). Found by trying them, checked by walking the cycle."""
    def walks_all(taps):
        value = 0
        for step in range(1, (1 << bits) + 1):
            value = _step(value, bits, taps)
            if value == 0:
                return step == 1 << bits
        return False
    for count in range(1, bits + 1):
        for taps in itertools.combinations(range(bits), count):
            if bits - 1 in taps and walks_all(taps):
                return taps
    raise ValueError(bits)


def _step(value, bits, taps):
    """The successor of ``value`` (an int) in the counter of :func:`_successor_taps`."""
    if bits == 1:
        return value ^ 1
    feedback = sum(value >> t & 1 for t in taps) & 1
    feedback ^= (value & ((1 << (bits - 1)) - 1)) == 0
    return ((value << 1) | feedback) & ((1 << bits) - 1)


def _successor(value, taps):
    """The successor of the ``len(value)``-bit signal ``value`` in the counter of
    :func:`_successor_taps` (a shift and a LUT4 or three, not an adder's carry chain)."""
    bits = len(value)
    if bits == 1:
        return ~value
    feedback = _tree(lambda a, b: a ^ b, [value[t] for t in taps]) ^ (value[:bits - 1] == 0)
    return Cat(feedback, value[:bits - 1])


class _Queue(wiring.Component):
    """A FIFO of record indices whose memory is written before the push is decided, with
    its first two entries known at the start of the clock.

    Every clock the memory is written at the tail with ``w_data``, the entry a push
    would add; ``w_en`` (the push) moves only the tail pointer, so the late decision
    whether to push drives a counter, not the memory's write enable and data. The slot
    at the tail is free (beyond the last entry, or, when the FIFO holds ``depth``
    entries, the head's, whose entry is in the head register), so a write there
    without a push changes nothing. ``head`` (the first entry, valid unless ``empty``)
    is a register, and ``second`` (the entry after it, valid unless ``empty`` or
    ``one``) is the output of the memory's one synchronous read port (transparent to
    the write), addressed by the slot after the head's after this clock's pop: a pop
    moves ``second`` into ``head`` (or the entry pushed in that clock, if it was the
    only one left), and one read port per FIFO keeps it in block RAM. There is no
    level counter: ``empty`` and ``one`` are flags, and whether a pop leaves one entry
    compares the tail with the pointers. The owner must not pop while ``empty`` nor
    push more than ``depth`` entries (the QCC's FIFOs hold record indices, each record
    in at most one FIFO once: at most ``records`` entries). Depth: a power of two (every
    value of a pointer is a slot).

    Parameters
    ----------
    width : int
        Bits per entry.
    depth_bits : int
        log2 of the depth.
    """

    def __init__(self, width, depth_bits):
        self.depth = 1 << depth_bits
        super().__init__({
            "w_data": In(width), "w_en": In(1), "r_en": In(1),
            "head": Out(width), "second": Out(width), "empty": Out(1, init=1), "one": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        storage = m.submodules.storage = Memory(shape=len(self.w_data), depth=self.depth,
                                                init=[])
        bits = (self.depth - 1).bit_length()
        # The pointers step through the slots in the order of a de Bruijn counter, not
        # 0, 1, 2, ...: any order that visits every slot once serves a ring, and a
        # step is a shift and a LUT4 or three instead of an adder (40 FIFOs, 2 each).
        taps = _successor_taps(bits)
        tail = Signal(bits)
        # the slot after the head's: ``second``'s
        ahead = Signal(bits, init=_step(0, bits, taps))
        one, empty = self.one, self.empty
        write = storage.write_port()
        read = storage.read_port(transparent_for=(write,))
        beyond = Signal(bits)
        m.d.comb += beyond.eq(_successor(ahead, taps))
        ahead_next = Mux(self.r_en, beyond, ahead)
        m.d.comb += [write.addr.eq(tail), write.data.eq(self.w_data), write.en.eq(1),
                     read.addr.eq(ahead_next), self.second.eq(read.data)]
        # The head register takes the entry pushed now if the FIFO is empty, or holds one
        # entry and is popped (the flags are registers, so the late pop only chooses).
        m.d.sync += self.head.eq(Mux(self.r_en, Mux(one, self.w_data, self.second),
                                     Mux(empty, self.w_data, self.head)))
        # The push (late) only chooses among values computed from registers. A pop of
        # two entries leaves one: the tail is two past the head.
        push_only, pop_only = self.w_en & ~self.r_en, self.r_en & ~self.w_en
        m.d.sync += [ahead.eq(ahead_next),
                     tail.eq(Mux(self.w_en, _successor(tail, taps), tail)),
                     one.eq(Mux(push_only, empty, Mux(pop_only, tail == beyond, one))),
                     empty.eq(Mux(push_only, 0, Mux(pop_only, one, empty)))]
        return m


class QCC(wiring.Component):
    """Queue/cache controller: entity descriptor CAM, stage parser, address rename table.

    Parameters
    ----------
    records : int
        Records of the entity descriptor table, which are also the physical buffers
        (1 to 256).
    entities : int
        Entity numbers handed out by ALLOC (1 to 256).
    lines : int
        Cache lines managed by the address rename table (1 to 1024).
    frames : int
        Logical frames per entity; MAP of a frame >= ``frames`` is bad input (1 to 16).
    programs : sequence of 5 sequences of (kind, desc), optional
        Reset stage programs, one per type, 1 to 8 stages each; default
        :data:`DEFAULT_PROGRAMS`.

    Attributes
    ----------
    cmd : stream of :data:`COMMAND`, in
        Commands. ``ready`` comes from registers, the offered ``op`` and whether
        ``query`` offers a SEARCH or TRANSLATE: MAP, DELETE and RELEASE are taken two
        clocks after they are first offered (three if their entity's frame-0 record
        completes a stage in between), SEARCH and TRANSLATE in a clock in which
        ``query`` offers neither, the others at once.
    resp : stream of :func:`response_layout`, out
        One response per command, in order, from the clock after the command.
    query : stream of :data:`COMMAND`, in
        SEARCH and TRANSLATE (any other op is answered BAD_OP); ``ready`` comes from
        registers only.
    qresp : stream of :func:`response_layout`, out
        One response per query, from the clock after it is taken.
    n_issue, m_issue : stream of :data:`ISSUE`, out
        Issues to the thread controller (NUMERIC) and the data move machine (MOVE).
    n_done, m_done : stream of :data:`DONE`, in
        Completions of NUMERIC and MOVE issues; ``ready`` is always 1.
    status : free_records, free_entities, free_lines, free_run, error; out
        Counts of the state at the start of the clock; ``free_run`` is the longest run of
        contiguous free lines :data:`RUN_DELAY` clocks ago less the lines taken since
        (an ALLOC of n lines is accepted if and only if ``free_run >= n``, given a
        free record and entity number: golden decision 14); ``error`` is sticky
        (reset only).
    """

    def __init__(self, *, records=256, entities=256, lines=256, frames=16, programs=None):
        check_int("records", records, 1, 256)
        check_int("entities", entities, 1, 256)
        check_int("lines", lines, 1, 1024)
        check_int("frames", frames, 1, 16)
        self.records = records
        self.entities = entities
        self.lines = lines
        self.frames = frames
        self.programs = _check_programs(DEFAULT_PROGRAMS if programs is None else programs)
        self.addr_width = addr_width(lines)
        self.index_width = max(1, (records - 1).bit_length())
        self.response = response_layout(lines)
        super().__init__({
            "cmd": In(stream.Signature(COMMAND)),
            "resp": Out(stream.Signature(self.response)),
            "query": In(stream.Signature(COMMAND)),
            "qresp": Out(stream.Signature(self.response)),
            "n_issue": Out(stream.Signature(ISSUE)),
            "m_issue": Out(stream.Signature(ISSUE)),
            "n_done": In(stream.Signature(DONE)),
            "m_done": In(stream.Signature(DONE)),
            "status": Out(wiring.Signature({
                "free_records": Out(range(records + 1)),
                "free_entities": Out(range(entities + 1)),
                "free_lines": Out(range(lines + 1)),
                "free_run": Out(range(lines + 1)),
                "error": Out(1),
            })),
        })

    def config(self):
        """The parameters as keyword arguments (``golden.qcc.QCCModel`` takes the same)."""
        return {"records": self.records, "entities": self.entities, "lines": self.lines,
                "frames": self.frames, "programs": self.programs}

    def elaborate(self, platform):
        m = Module()
        s = self._state(m)
        ev = SimpleNamespace()
        ev.done = [self._completion(m, s, k, port)
                   for k, port in zip(Kind, (self.n_done, self.m_done))]
        self._lookup(m, s, ev)
        self._select(m, s, ev)
        self._allocator(m, s, ev)
        self._reaper(m, s, ev)
        self._command(m, s, ev)
        self._configure(m, s, ev)
        self._fifo_pushes(m, s, ev)
        self._update_in_flight(m, s, ev)
        self._update_records(m, s, ev)
        self._write_tables(m, s, ev)
        self._update_entities(m, s, ev)
        self._update_lines(m, s, ev)
        for k, port in zip(Kind, (self.n_issue, self.m_issue)):
            self._issue_port(m, s, ev, k, port)
        self._response_ports(m, s, ev)
        self._status(m, s, ev)
        s.stage.finish()
        return m

    # ------------------------------------------------------------ state

    def _state(self, m):
        """Every register and memory of the block, named as in a waveform."""
        R, A = self.records, self.addr_width
        s = SimpleNamespace()
        # The entity descriptor table: what changes while a record lives is flip-flops,
        # one signal per record and field. 1-bit fields are vectors across the records
        # (``valid[r]``), so that the logic over every record at once (priority
        # encoders, counts, picks by index) reads one signal.

        def bits(name):
            vector = Signal(R, name=name)
            return vector, [vector[r] for r in range(R)]
        s.valid, s.valid_bit = bits("valid")
        # ``busy`` per kind of issue (NUMERIC, MOVE): a completion's check is one pick.
        s.busy_kind = [bits(f"busy_{k.name.lower()}") for k in Kind]
        s.busy = Signal(R, name="busy")
        m.d.comb += s.busy.eq(s.busy_kind[0][0] | s.busy_kind[1][0])
        s.tomb, s.tomb_bit = bits("tomb")          # entity deleted while queued: a tombstone
        s.busy_d, s.busy_d_bit = bits("busy_d")    # busy one clock ago, for search reads
        # ``stage`` changes while a record lives but is read by index only: a table
        # with a write port per writer (the lowest free record, each completion port).
        s.stage = _MultiWriteTable(m, "stage", 4, R, writers=3)
        # Fields written once, at ALLOC or MAP, and read by record index: RAMs. ``meta``
        # copies entity and etype and holds ``hold``; ``art`` is the address rename
        # table (first line and length of the buffer of each record).
        s.meta = m.submodules.meta = Memory(shape=META, depth=R, init=[])
        # The entity map: per entity number, the record of each of its frames. A search
        # is one read; ALLOC writes the whole word, MAP the slot of its frame.
        s.ent_map = m.submodules.ent_map = Memory(
            shape=data.ArrayLayout(_slot_layout(self.index_width), self.frames),
            depth=self.entities, init=[])
        s.art = m.submodules.art = Memory(shape=ART(A), depth=R, init=[])
        # A copy of ``meta`` for the look-up, whose address is known a clock ahead: a
        # synchronous read, so its data comes from a register (block RAM's, or after the
        # LUT-RAM's read multiplexers); written as the original.
        s.meta_sync = m.submodules.meta_sync = Memory(shape=META, depth=R, init=[])
        # The entity of each record for the issue ports: read without a clock by the
        # decided record (a register), so the decision does not drive a RAM address.
        s.rec_entity = m.submodules.rec_entity = Memory(
            shape=max(1, (self.entities - 1).bit_length()), depth=R, init=[])
        # Per entity number, the type and ``hold`` its ALLOC gave it (every record of
        # the entity has them): what a search hit shows of ``meta``, read with the map
        # word in the clock the search is taken (not two ``meta`` reads by the record
        # found).
        s.ent_meta = m.submodules.ent_meta = Memory(shape=ENT_META, depth=self.entities,
                                                    init=[])
        s.art_len = m.submodules.art_len = Memory(shape=4, depth=R, init=[])
        # Per kind: what a completion needs of the record that port issued (its type,
        # stage and whether it is the last), written by that port at the issue.
        s.issued = [Memory(shape=ISSUED, depth=R, init=[]) for _ in Kind]
        for k in Kind:
            m.submodules[f"issued_{k.name.lower()}"] = s.issued[k]
        # Entity numbers: free (for ALLOC), live (for look-ups), dead and not yet picked
        # by the reaper; and the free lines.
        s.ent_live = Signal(self.entities)
        s.to_reap = Signal(self.entities)
        s.free_ent_count = Signal(range(self.entities + 1), init=self.entities)
        s.any_free_entity = Signal(init=1)      # (the count != 0, kept a clock ahead)
        # Some record is free (neither valid nor a tombstone, nor freed in the last
        # clock: golden decision 18), kept a clock ahead; the lowest free record
        # (``_lowest_free_next``) and the entity number to give (``_free_list``), kept
        # a clock ahead.
        s.any_free_record = Signal(init=1)
        s.free_record = Signal(self.index_width, name="free_record")
        s.free_entity = Signal(max(1, (self.entities - 1).bit_length()), name="free_entity")
        s.free_rec_count = Signal(range(R + 1), init=R, name="free_record_count")
        s.line_free = Signal(self.lines, init=(1 << self.lines) - 1)
        s.free_line_count = Signal(range(self.lines + 1), init=self.lines)
        # The stage parser: programs, FIFO lengths, round-robin pointers.
        progs = self.programs
        s.nstages = [Signal(4, init=len(p), name=f"prog{t}_nstages")
                     for t, p in enumerate(progs)]
        s.kinds = [Signal(MAX_STAGES, init=sum(int(k) << i for i, (k, _) in enumerate(p)),
                          name=f"prog{t}_kinds") for t, p in enumerate(progs)]
        s.desc = [[Signal(8, init=p[i][1] if i < len(p) else 0, name=f"prog{t}_desc{i}")
                   for i in range(MAX_STAGES)] for t, p in enumerate(progs)]
        # The logical FIFOs: a ring buffer of record indices in a memory per (type,
        # stage), with its read end registered (``r_data`` is the head).
        s.fifo = [[_Queue(self.index_width, self.index_width)
                   for i in range(MAX_STAGES)] for t in range(N_TYPES)]
        for t in range(N_TYPES):
            for i in range(MAX_STAGES):
                m.submodules[f"fifo{t}_{i}"] = s.fifo[t][i]
        # Per (type, stage > 0): a completion's push into that FIFO, registered (golden
        # decision 16: the push is a clock after the completion).
        s.pushing = [[Const(0, 1)] + [Signal(name=f"fifo{t}_{i}_pushing")
                                      for i in range(1, MAX_STAGES)] for t in range(N_TYPES)]
        # Per kind: the FIFO decided on for the next issue (valid, type, stage).
        s.dec_valid = [Signal(name=f"decided_{k.name.lower()}") for k in Kind]
        s.dec_type = [Signal(3, name=f"decided_type_{k.name.lower()}") for k in Kind]
        s.dec_stage = [Signal(3, name=f"decided_stage_{k.name.lower()}") for k in Kind]
        # The same FIFO as a one-hot over (type, stage), ``dec_hot[k][t][i]``: the next
        # decision and the pops read one bit, not a comparison of type and stage.
        s.dec_hot = [[Signal(MAX_STAGES, name=f"decided_{k.name.lower()}_{t}")
                      for t in range(N_TYPES)] for k in Kind]
        s.dec_record = [Signal(self.index_width, name=f"decided_record_{k.name.lower()}")
                        for k in Kind]
        s.rr = [Signal(range(N_TYPES), init=N_TYPES - 1, name=f"rr_{k.name.lower()}")
                for k in Kind]
        s.busy_count = [Signal(range(R + 1), name=f"busy{t}_count") for t in range(N_TYPES)]
        s.in_flight = [Signal(name=f"in_flight_{t}") for t in range(N_TYPES)]
        s.error = Signal()
        return s

    def _index(self, value):
        """A record number from a port, cut to the width of a record index."""
        return value[:self.index_width]

    def _live(self, s, entity):
        """Whether the 8-bit ``entity`` is live (0 for numbers >= ``entities``: the
        vector is padded, so that no select runs off its end, which simulates as X)."""
        return Cat(s.ent_live, Const(0, 256 - self.entities)).bit_select(entity, 1)

    def _live_now(self, s, ev, entity):
        """Whether ``entity`` is live now: its ``ent_live`` bit, unless a completion
        killed it in the last clock (golden decision 15: that kill is registered and
        clears the bit only at the end of this clock). A comparison of the low bits
        with each registered kill: a number >= ``entities`` is never live anyway."""
        width = max(1, (self.entities - 1).bit_length())
        late = _any(d.killed & (d.killed_entity[:width] == entity[:width]) for d in ev.done)
        return self._live(s, entity) & ~late

    def _pick(self, vector, index):
        """Bit ``index`` of a per-record bit vector (a multiplexer)."""
        return vector.bit_select(index, 1)

    # ------------------------------------------------------------ the CAM

    def _lookup(self, m, s, ev):
        """Searches of ``cmd`` and ``query`` in the entity map, and the look-up of the
        records and lines of ``cmd``'s entity (for DELETE and RELEASE)."""
        R, c = self.records, self.cmd.payload
        ev.take = _sig(m, self.cmd.valid & self.cmd.ready, "cmd_take")
        ev.qtake = _sig(m, self.query.valid & self.query.ready, "query_take")
        # The two ports share the read ports of the tables that a SEARCH or TRANSLATE
        # reads: ``query`` takes one whenever it can, ``cmd`` only in a clock in which
        # ``query`` offers none (its ``ready`` waits meanwhile). The choice is made on
        # the offer, not the take: ``query.ready`` (the response queue's count) stays
        # off the TRANSLATE check's read address (a routed worst path, 15.8 ns).
        q_op = self.query.payload.op
        ev.query_reads = _sig(m, self.query.valid
                              & ((q_op == Op.SEARCH) | (q_op == Op.TRANSLATE)),
                              "query_reads")
        # TRANSLATE's reads, for whichever port takes one now; its code a clock later.
        request = Mux(ev.query_reads, self.query.payload.as_value(), c.as_value())
        ev.translate = self._translate_reads(m, s, ev, COMMAND(request))
        # The map word of ``cmd``'s entity, read every clock (out one clock later) for
        # the look-up; and one for the searches, of the request that takes the shared
        # reads (``query``'s if it offers one), with its frame registered: a search's
        # record is one slot pick from one word, not a choice between two ports' picks.
        ev.cmd_map = self._map_read(m, s, ev, c.entity, "cmd")
        ev.search_map = self._map_read(m, s, ev, COMMAND(request).entity, "search",
                                       search=True)
        ev.search_frame = Signal(self.frames, name="search_frame")
        m.d.sync += ev.search_frame.eq(_decode(COMMAND(request).frame, self.frames))
        ev.looked = Signal()          # the command offered now was offered last clock
        m.d.sync += ev.looked.eq(self.cmd.valid & ~self.cmd.ready)
        # The frame-0 record and the record of (entity, frame) from the word read last
        # clock (``cmd`` holds its payload while it waits). Nothing adds a record of the
        # entity between the look-up and the take. Whether it is still live (it may
        # have died in between; its records stay allocated until reaped) is read in the
        # clock before the take, into a register, so that the ``ent_live`` pick stays
        # off the accept's path: in that clock no command is taken (nothing else
        # kills the entity or gives its number out), and a completion that kills it
        # is one of its frame-0 record, after which the take waits a clock more
        # (``changed``, :meth:`_rec0`).
        rec0 = ev.cmd_map.slot(Const(0, 4), "cmd_frame0")
        match = ev.cmd_map.slot(c.frame, "cmd_frame")
        live = Signal(name="cmd_entity_live")
        m.d.sync += live.eq(self._live_now(s, ev, c.entity))
        ev.rec0_index = rec0.record
        ev.rec0_any = _sig(m, rec0.mapped & live, "lookup_found")
        ev.match_any = _sig(m, match.mapped & live, "match_found")

    def _map_read(self, m, s, ev, entity, name, search=False):
        """Read the map word of ``entity``; synchronous, so the word is out next clock.

        Returns a namespace whose ``slot(frame, name)`` gives the ``record`` of that frame
        and ``mapped``; for a ``search`` read also ``hit`` (the entity was in use at the
        read and the frame mapped) and ``meta`` (its type and ``hold``). The map keeps
        the stale words of free entities; whether the entity was in use is read from
        ``ent_live`` with the word.
        """
        F = self.frames
        port = s.ent_map.read_port()
        in_use = Signal(name=f"{name}_map_in_use")
        # (a number >= ``entities`` reads word 0, masked by ``in_use``: never past the
        # end, which simulates as X)
        m.d.comb += port.addr.eq(Mux(entity < self.entities, entity, 0))
        if search:
            meta = s.ent_meta.read_port()
            m.d.comb += meta.addr.eq(port.addr)
            m.d.sync += in_use.eq(self._live_now(s, ev, entity))
        records = Cat(port.data[f].record for f in range(F))
        valids = Cat(port.data[f].valid for f in range(F))

        def slot(frame, slot_name, onehot=False):
            if onehot:
                record = _read(frame, [port.data[f].record for f in range(F)])
                valid = (frame & valids).any()
            elif isinstance(frame, Const):
                record, valid = port.data[frame.value].record, port.data[frame.value].valid
            else:
                record = records.word_select(frame, self.index_width)
                valid = (frame < F) & valids.bit_select(frame, 1)
            found = SimpleNamespace(record=_sig(m, record, f"{slot_name}_record"),
                                    mapped=valid)
            if search:
                found.hit = _sig(m, in_use & valid, f"{slot_name}_hit")
            return found
        return SimpleNamespace(slot=slot, meta=meta.data if search else None)

    # ------------------------------------------------------------ issue selection

    def _select(self, m, s, ev):
        """Per kind: carry out the decision taken in an earlier clock (pop the head of
        the decided FIFO, whose record the decision holds: issue it, or drop it if it is
        a tombstone), and decide the next FIFO and its record from the FIFO lengths less
        this clock's pops. Each type offers the latest non-empty stage of that kind
        (drain before fill); a round-robin pointer per kind picks the type."""
        R = self.records
        ev.popped = [[Const(0, 1)] * MAX_STAGES for _ in range(N_TYPES)]
        ev.carry, ev.go, ev.drop, ev.head = [], [], [], []
        for k, port in zip(Kind, (self.n_issue, self.m_issue)):
            name = k.name.lower()
            carry = _sig(m, s.dec_valid[k] & (~port.valid | port.ready), f"carry_{name}")
            # The decided FIFO's head, registered with the decision (nothing else pops
            # that FIFO meanwhile, and it is not empty, so a push does not change it).
            head = s.dec_record[k]
            tomb = _sig(m, self._pick(s.tomb, head), f"head_tomb_{name}")
            ev.carry.append(carry)
            ev.head.append(head)
            ev.go.append(_sig(m, carry & ~tomb, f"go_{name}"))
            ev.drop.append(_sig(m, carry & tomb, f"drop_{name}"))
            for t in range(N_TYPES):
                for i in range(MAX_STAGES):
                    ev.popped[t][i] |= carry & s.dec_hot[k][t][i]
        ev.popped = [[_sig(m, ev.popped[t][i], f"fifo{t}_{i}_popped") for i in range(MAX_STAGES)]
                     for t in range(N_TYPES)]
        ev.nonempty = [[_sig(m, ~s.fifo[t][i].empty, f"fifo{t}_{i}_nonempty")
                        for i in range(MAX_STAGES)] for t in range(N_TYPES)]
        for t in range(N_TYPES):
            for i in range(MAX_STAGES):
                m.d.comb += s.fifo[t][i].r_en.eq(ev.popped[t][i])
        for k in Kind:
            self._decide(m, s, ev, k)
        # Each record tells an issue from a drop by its own ``tomb`` bit: the pick of the
        # head's bit (``go``) stays off the path into every record's state.
        popped = [_sig(m, Mux(ev.carry[k], _decode(ev.head[k], R), 0),
                       f"popped_{k.name.lower()}") for k in Kind]
        ev.issued_kind = [_sig(m, popped[k] & ~s.tomb, f"issued_{k.name.lower()}")
                          for k in Kind]
        ev.dropped = _sig(m, (popped[0] | popped[1]) & s.tomb, "dropped")

    def _decide(self, m, s, ev, k):
        """The FIFO port ``k`` pops next and its head after this clock, decided when the
        port has no decision or pops now.

        A decision is made only in a clock in which the port holds none (then it pops
        nothing) or pops its decided FIFO (``carry``). Only port ``k`` pops a FIFO of
        kind ``k``, and only the one it decided on. Each type's latest and second latest
        waiting stage of kind ``k`` (``cand1``, ``cand2``) are registers, computed in the
        clock before from the FIFOs' next flags (:meth:`_candidates`); the decision only
        corrects them for its own FIFO's pop (``emptied``: the decided FIFO is the
        type's latest and holds one entry, so the second latest is offered) before the
        round robin. The late ``carry`` (the port's ``ready``) only enables the write.
        A FIFO popped now has as its head next its ``second`` entry.
        """
        name = k.name.lower()
        cand1, cand2, any1 = self._candidates(m, s, ev, k)
        # Only the type decided last (``rr``, whose FIFO ``dec_hot`` names) can have its
        # latest stage emptied by this clock's pop, and the round robin tries that type
        # last: so the round robin runs on the registered offers (``any1``) and
        # ``emptied`` only withdraws that type's win when its second latest stage is
        # not waiting either. (``emptied`` → the offers → the round robin → the
        # decision was one path, the routed worst, 15.02 ns.)
        latest, records, withdrawn = [], [], []
        for t in range(N_TYPES):
            fifos, hot = s.fifo[t], s.dec_hot[k][t]
            emptied = _sig(m, _any(hot[i] & cand1[t][i] & fifos[i].one
                                   for i in range(MAX_STAGES)), f"emptied_{name}_{t}")
            latest.append(_sig(m, Mux(emptied, cand2[t], cand1[t]), f"latest_{name}_{t}"))
            withdrawn.append(emptied & ~cand2[t].any())
            # (the latest FIFO's head after this clock's pop)
            records.append(_read(latest[t], [Mux(hot[i], fifos[i].second, fifos[i].head)
                                             for i in range(MAX_STAGES)]))
        early = _round_robin(m, Cat(any1), s.rr[k], f"winner_{name}_early")
        winner = _sig(m, early & ~Cat(withdrawn), f"winner_{name}")
        hots = [_sig(m, Mux(winner[t], latest[t], 0), f"deciding_{name}_{t}")
                for t in range(N_TYPES)]
        deciding = ~s.dec_valid[k] | ev.carry[k]
        with m.If(deciding):
            m.d.sync += [s.dec_valid[k].eq(winner.any()),
                         s.dec_record[k].eq(_read(winner, records)),
                         s.dec_type[k].eq(_encode(winner, 3)),
                         s.dec_stage[k].eq(_encode(_tree(lambda a, b: a | b, hots), 3))]
            m.d.sync += [s.dec_hot[k][t].eq(hots[t]) for t in range(N_TYPES)]
            with m.If(winner.any()):
                m.d.sync += s.rr[k].eq(_encode(winner, 3))

    def _candidates(self, m, s, ev, k):
        """Per type, registers: the one-hots of the latest and the second latest stage of
        kind ``k`` whose FIFO is waiting, and whether there is one.

        Computed from the FIFOs' flags after this clock's pops and pushes, for the
        decision of the next clock, except ALLOC's push into stage 0 (golden decision
        17: its accept comes late in the clock), so a stage-0 FIFO that only holds what
        ALLOC pushed in the clock before is not offered. A later stage's push is
        registered (decision 16), so that FIFO is offered as soon as it is not empty.
        """
        name = k.name.lower()
        cand1 = [Signal(MAX_STAGES, name=f"cand1_{name}_{t}") for t in range(N_TYPES)]
        cand2 = [Signal(MAX_STAGES, name=f"cand2_{name}_{t}") for t in range(N_TYPES)]
        any1 = [Signal(name=f"cand1_{name}_{t}_any") for t in range(N_TYPES)]
        for t in range(N_TYPES):
            waiting = []
            for i in range(MAX_STAGES):
                fifo = s.fifo[t][i]
                kept = ~fifo.empty & ~(ev.popped[t][i] & fifo.one)
                waiting.append(_sig(m, (kept | s.pushing[t][i]) & (s.kinds[t][i] == k),
                                    f"waiting_{name}_{t}_{i}"))
            above = [_any(waiting[i + 1:]) for i in range(MAX_STAGES)]
            two_above = [_two_or_more(m, waiting[i + 1:], f"two_{name}_{t}_{i}")
                         if i + 2 < MAX_STAGES else Const(0, 1) for i in range(MAX_STAGES)]
            m.d.sync += [
                cand1[t].eq(Cat(waiting[i] & ~above[i] for i in range(MAX_STAGES))),
                cand2[t].eq(Cat(waiting[i] & above[i] & ~two_above[i]
                                for i in range(MAX_STAGES))),
                any1[t].eq(_any(waiting)),
            ]
        return cand1, cand2, any1

    # ------------------------------------------------------------ completions

    def _completion(self, m, s, kind, port):
        """Check the completion on ``port`` against the state and decide what it does."""
        R, name = self.records, kind.name.lower()
        rec = self._index(port.payload.record)
        m.d.comb += port.ready.eq(1)
        meta = s.meta.read_port(domain="comb")
        m.d.comb += meta.addr.eq(rec)
        # Type, stage and "last stage" as this port issued them: a busy record's stage
        # does not change, nor (CONFIG) its type's program.
        issued = s.issued[kind].read_port(domain="comb")
        m.d.comb += issued.addr.eq(rec)
        etype = _sig(m, issued.data.etype, f"{name}_done_etype")
        stage = _sig(m, issued.data.stage, f"{name}_done_stage", 4)
        last = _sig(m, issued.data.last, f"{name}_done_last")
        d = SimpleNamespace(etype=etype, record=rec, stage=stage)
        d.ok = Signal(name=f"{name}_done_ok")
        d.bad = Signal(name=f"{name}_done_bad")
        d.onehot = Signal(R, name=f"{name}_done_rec")
        d.advance = Signal(name=f"{name}_done_advance")   # into the next stage's FIFO
        d.kill = Signal(name=f"{name}_done_kill")         # last stage without hold
        d.entity = _sig(m, meta.data.entity, f"{name}_done_entity")
        d.next_stage = _sig(m, stage[:3] + 1, f"{name}_done_next", 3)
        m.d.comb += [
            # (a busy record is valid: only a live entity's frame-0 record is issued, and
            # an entity dies only while it is not busy)
            d.ok.eq(port.valid & (port.payload.record < R)
                    & self._pick(s.busy_kind[kind][0], rec)),
            d.bad.eq(port.valid & ~d.ok),
            d.onehot.eq(Mux(d.ok, _decode(rec, R), 0)),
            d.advance.eq(d.ok & ~last),
            d.kill.eq(d.ok & last & ~meta.data.hold),
        ]
        # The kill, registered: it clears the entity's ``ent_live`` bit and marks it
        # ``to_reap`` a clock later (golden decision 15), so that the check (the busy
        # pick) and the entity's decoder into those vectors are not one path (the
        # routed worst path, 15.55 ns); the reads of ``ent_live`` meanwhile are
        # corrected (:meth:`_live_now`).
        d.killed = Signal(name=f"{name}_done_killed")
        d.killed_entity = Signal(8, name=f"{name}_done_killed_entity")
        m.d.sync += [d.killed.eq(d.kill), d.killed_entity.eq(d.entity)]
        return d

    # ------------------------------------------------------------ allocation

    def _allocator(self, m, s, ev):
        """Lowest free record and entity number; whether ``free_run`` covers the lines
        the command asks for (the accept, golden decision 14); first fit of those lines
        (runs of free lines, then the lowest start), which only places the buffer."""
        L = self.lines
        # The lowest free record, the entity number to give, and whether they exist,
        # are registers (golden decision 18: what is freed in a clock is taken from the
        # clock after the next, so they are computed a clock ahead,
        # ``_lowest_free_next`` and ``_free_list``); their one-hots decoded from the
        # registered index.
        # So the accept and every table it writes wait for no priority tree (the
        # lowest-free trees into the stage table's read and the entity map's write
        # enable were routed worst paths, 14.6-15.4 ns).
        ev.any_rec = s.any_free_record
        ev.new_record = _sig(m, s.free_record, "new_record", 8)
        ev.free_rec = _sig(m, Mux(ev.any_rec, _decode(s.free_record, self.records), 0),
                           "free_record_hot")
        ev.any_ent = s.any_free_entity
        ev.alloc_entity = _sig(m, s.free_entity, "alloc_entity", 8)
        ev.free_ent = _sig(m, Mux(ev.any_ent, _decode(s.free_entity, self.entities), 0),
                           "free_entity_hot")
        n = self.cmd.payload.lines
        # ``free_run`` (golden decision 13): the longest run ``RUN_DELAY`` clocks ago
        # less ``run_window``, the lines ALLOC and MAP took since, kept in a register
        # (``run_room``) computed a clock ahead (``_status``), so that ``free_run >= n``
        # compares a register with the command's 4 bits, with no carry chain.
        # The lines free now (``S_t``): ``line_free`` less the buffer placed in the clock
        # before, whose lines are taken from the registers of its start (``take_start``,
        # a one-hot) and length (0 if none) a clock late (below).
        ev.take_start = Signal(L, name="take_start")
        ev.take_need = Signal(MAX_BUF_LINES, name="take_need")     # (bit j: length > j)
        taking = _sig(m, Cat(_any(ev.take_start[i - j] & ev.take_need[j]
                                  for j in range(MAX_BUF_LINES) if j <= i)
                             for i in range(L)), "lines_taking")
        ev.free_now = _sig(m, s.line_free & ~taking, "lines_free_now")
        _, ev.run_next = _longest_run(m, ev.free_now, RUN_DELAY, "free_run")
        ev.run_window = Signal(range(RUN_DELAY * MAX_BUF_LINES + 1), name="run_window")
        ev.run_room = Signal(range(L + 1), name="run_room", init=L)
        room = ev.run_room
        ev.run_ok = _sig(m, (room[4:] != 0) | (room[:4] >= n), "run_ok")
        need = _sig(m, Cat(n > j for j in range(MAX_BUF_LINES)), "fit_need", keep=True)
        free = [ev.free_now[i] for i in range(L)] + [Const(0, 1)] * MAX_BUF_LINES
        fits = _sig(m, Cat(Cat(free[b + j] | ~need[j] for j in range(MAX_BUF_LINES)).all()
                           for b in range(L)), "fit_runs", keep=True)
        start, _ = _lowest(m, fits, "fit_start", keep=True)   # (always found on an accept)
        # The start ends in a register (``_update_lines``); the lines are taken from it
        # a clock later (``free_now`` above: the start's one-hot spread over the length,
        # line i taken if the start is one of the ``n`` lines up to i) and its base is
        # encoded from it then (``placed_base``). Before, the spread, the accept and
        # the update of ``line_free`` followed the lowest-start tree in the same clock
        # (the routed worst path, 15.11 ns, 13 LUT4). A range from an encoded base
        # (``_range_mask``) takes fewer LUT4 but needs the encoder first.
        ev.fit_start, ev.fit_need = start, need

    # ------------------------------------------------------------ the reaper

    def _reaper(self, m, s, ev):
        """Free the records, lines and numbers of dead entities, one record a clock
        (golden decision 12), in three registered steps: *pick* the lowest dead entity
        and read its map word; *walk* its mapped frames, one a clock, in frame order;
        *free* the record walked the clock before, the lines of its buffer (a range
        from the ART) and, with the last, the entity number."""
        E, F, R = self.entities, self.frames, self.records
        word = s.ent_map.read_port()          # held while walking (``en`` low)
        walking = Signal(name="reap_walking")
        loaded = Signal(name="reap_loaded")   # the word was read last clock
        entity = Signal(8, name="reap_entity")
        left = Signal(F, name="reap_left")    # frames not walked yet
        pick_any = _sig(m, s.to_reap.any(), "reap_pick_any")
        slots = _sig(m, Mux(loaded, Cat(word.data[f].valid for f in range(F)), left),
                     "reap_slots")
        frame, _ = _lowest(m, slots, "reap_frame")
        # (the record from a tree of its own beside the one-hot's, not picked by it)
        record = _sig(m, _lowest_entry(m, slots, [word.data[f].record for f in range(F)],
                                       "reap_record"), "reap_record")
        # (at most one slot left: a tree of its own, beside the lowest frame's, not after it)
        last = _sig(m, ~_two_or_more(m, slots, "reap_two"), "reap_last_frame")
        can_pick = _sig(m, ~walking | last, "reap_can_pick")
        # (the index from a tree of its own, beside the one-hot's: the map's read address)
        pick_index = _lowest_index(m, s.to_reap, "reap_pick_index")
        m.d.comb += [word.addr.eq(pick_index), word.en.eq(can_pick)]
        # (the entity cleared from ``to_reap`` decoded from that index: a decoder, not a
        # second priority tree beside the index's)
        ev.reap_picked = _sig(m, Mux(can_pick, _decode(pick_index, E), 0), "reap_picked")
        m.d.sync += [left.eq(slots & ~frame), loaded.eq(0)]
        with m.If(can_pick):
            m.d.sync += [walking.eq(pick_any), loaded.eq(1), entity.eq(pick_index)]
        # Free: the record walked last clock; its buffer is read from the ART then, by
        # that registered record (a read addressed by the walk's record, a clock ahead,
        # put the map word's lowest frame and the RAM's address on one path).
        freeing = Signal(name="reap_freeing")
        freed = Signal(self.index_width, name="reap_freed")
        freed_last = Signal(name="reap_freed_last")
        freed_entity = Signal(8, name="reap_freed_entity")
        art = s.art.read_port(domain="comb")
        m.d.comb += art.addr.eq(freed)
        m.d.sync += [freeing.eq(walking), freed.eq(record), freed_last.eq(walking & last),
                     freed_entity.eq(entity)]
        ev.reaped = _sig(m, Mux(freeing, _decode(freed, R), 0), "reaped")
        ev.reap_lines = _sig(m, Mux(freeing, _range_mask(m, art.data.base, art.data.length,
                                                         self.lines, "reap_range"), 0),
                             "reap_lines")
        ev.reap_length = _sig(m, Mux(freeing, art.data.length, 0), "reap_length")
        ev.reap_last, ev.reap_freed_entity = freed_last, freed_entity
        ev.reap_freeing, ev.reap_freed = freeing, freed

    # ------------------------------------------------------------ commands

    def _command(self, m, s, ev):
        """Check the command offered on ``cmd`` and build its response."""
        c = self.cmd.payload
        needs_lookup = (c.op == Op.MAP) | (c.op == Op.DELETE) | (c.op == Op.RELEASE)
        ev.room = Signal()
        self._rec0(m, s, ev)
        reads = (c.op == Op.SEARCH) | (c.op == Op.TRANSLATE)
        # (the take of an operation that changes the state: ``ready`` without its
        # SEARCH / TRANSLATE term, so that ``query``'s offer is not on the accepts' path)
        ev.take_update = _sig(m, self.cmd.valid & ev.room & (~needs_lookup | ev.rec0_ready),
                              "cmd_take_update")
        m.d.comb += self.cmd.ready.eq(ev.room & (~needs_lookup | ev.rec0_ready)
                                      & ~(reads & ev.query_reads))
        ev.is_alloc = _sig(m, c.op == Op.ALLOC, "is_alloc")
        ev.new_entity = _sig(m, Mux(ev.is_alloc, ev.alloc_entity, c.entity), "new_entity")
        ev.new_etype = _sig(m, Mux(ev.is_alloc, c.etype, ev.rec0_etype), "new_etype")
        ev.new_hold = _sig(m, Mux(ev.is_alloc, c.hold, ev.rec0_hold), "new_hold")
        lines_ok = (c.lines >= 1) & (c.lines <= MAX_BUF_LINES)
        resp = ev.resp = Signal(self.response)
        ev.resp_kind = Signal(_Pending)
        code = Signal(Code)
        m.d.comb += [resp.op.eq(c.op), resp.code.eq(code)]
        ev.config_bad = _sig(m, (c.etype >= N_TYPES) | (c.nstages == 0)
                             | (c.nstages > MAX_STAGES), "config_bad")
        ev.config_busy = _sig(m, Array(s.in_flight + [Const(0, 1)] * 3)[c.etype],
                              "config_busy")
        with m.Switch(c.op):
            with m.Case(Op.CONFIG):
                m.d.comb += code.eq(_first((ev.config_bad, Code.BAD_ARG),
                                           (ev.config_busy, Code.BUSY)))
                m.d.comb += resp.etype.eq(Mux(code == Code.OK, c.etype, 0))
            with m.Case(Op.ALLOC, Op.MAP):
                self._allocate_code(m, ev, code, lines_ok)
                with m.If(code == Code.OK):
                    # (``record``, ``buf`` and ``addr`` a clock later: _response_ports)
                    m.d.comb += [resp.entity.eq(ev.new_entity),
                                 resp.frame.eq(Mux(ev.is_alloc, 0, c.frame)),
                                 resp.etype.eq(ev.new_etype), resp.hold.eq(ev.new_hold),
                                 resp.lines.eq(c.lines)]
            with m.Case(Op.SEARCH):
                m.d.comb += ev.resp_kind.eq(_Pending.SEARCH)
            with m.Case(Op.DELETE):
                m.d.comb += code.eq(_first((~ev.rec0_any, Code.UNKNOWN),
                                           (ev.rec0_busy, Code.BUSY)))
                m.d.comb += resp.entity.eq(Mux(code == Code.OK, c.entity, 0))
            with m.Case(Op.RELEASE):
                m.d.comb += code.eq(_first((~ev.rec0_any, Code.UNKNOWN),
                                           (ev.rec0_stage != DONE_STAGE, Code.NOT_HELD)))
                m.d.comb += resp.entity.eq(Mux(code == Code.OK, c.entity, 0))
            with m.Case(Op.TRANSLATE):
                # (its code a clock later: _translate_code)
                m.d.comb += ev.resp_kind.eq(_Pending.TRANSLATE)
            with m.Default():
                m.d.comb += code.eq(Code.BAD_OP)
        self._accept(m, s, ev, lines_ok)
        # A queued entity deleted leaves a tombstone (its frame-0 record) in its FIFO.
        ev.entombed = _sig(m, Mux(ev.delete_ok & ev.rec0_queued,
                                  _decode(ev.rec0_index, self.records), 0), "entombed")

    def _accept(self, m, s, ev, lines_ok):
        """Whether the command taken now is carried out: the AND of its checks (the same
        checks as its response code, without the precedence chain, so that the state
        updates get them early)."""
        c = self.cmd.payload
        take = ev.take_update     # (the same as ``take`` for the operations below)
        # Every check but the lines, so that ``free_run >= n`` is one AND away from the
        # decision (golden decision 14: on ``free_run``, from registers; the first fit
        # only places the buffer, and always finds one then).
        alloc_rest = _sig(m, take & ev.is_alloc & (c.etype < N_TYPES) & lines_ok & ev.any_rec
                          & ev.any_ent, "alloc_rest")
        map_rest = _sig(m, take & (c.op == Op.MAP) & lines_ok & (c.frame < self.frames)
                        & (c.frame != 0) & ev.rec0_any & ~ev.match_any & ev.any_rec,
                        "map_rest")
        ev.alloc_ok = _sig(m, alloc_rest & ev.run_ok, "alloc_ok")
        ev.map_ok = _sig(m, map_rest & ev.run_ok, "map_ok")
        ev.config_ok = _sig(m, take & (c.op == Op.CONFIG) & ~ev.config_bad & ~ev.config_busy,
                            "config_ok")
        ev.delete_ok = _sig(m, take & (c.op == Op.DELETE) & ev.rec0_any & ~ev.rec0_busy,
                            "delete_ok")
        release_ok = take & (c.op == Op.RELEASE) & ev.rec0_any & (ev.rec0_stage == DONE_STAGE)
        ev.kill_cmd = _sig(m, ev.delete_ok | release_ok, "kill_cmd")

    def _rec0(self, m, s, ev):
        """The looked-up entity's frame-0 record, for MAP, DELETE and RELEASE.

        In the clock after the comparison its changing fields are read by the
        registered index into registers, corrected for what that clock does to them (a
        pop of its FIFO, its issue); the RAM fields are read then too. The command is
        taken in the clock after that, unless the record was completed in between (its
        stage and FIFO changed): then it is read once more.
        """
        index = ev.rec0_index
        looked2 = Signal()
        changed = Signal()
        m.d.sync += [looked2.eq(ev.looked & self.cmd.valid & ~self.cmd.ready),
                     # (the completion's record compared with the index: a comparator,
                     # not a 1-of-``records`` pick of its one-hot)
                     changed.eq(_any(d.ok & (d.record == index) for d in ev.done))]
        ev.rec0_ready = _sig(m, looked2 & ~changed, "lookup_ready")
        ev.meta_cmd = meta = s.meta_sync.read_port()
        ev.rec0_etype = _sig(m, meta.data.etype, "lookup_etype")
        ev.rec0_hold = _sig(m, meta.data.hold, "lookup_hold")
        # Issued now: popped now (``carry`` and the head compared with the index, not
        # ``go`` nor a pick of the one-hot ``issued``). These values count only for a
        # live entity, whose frame-0 record is never a tombstone, so a pop of it is an
        # issue, and the tombstone bit and the decoder stay out of this path.
        issued = _sig(m, _any(ev.carry[k] & (ev.head[k] == index) for k in Kind),
                      "lookup_popped")
        # The stage, read by the index into registers: a synchronous read of a copy of
        # each bank (its read multiplexers before the register).
        ev.rec0_stage = s.stage.read_sync(index, "lookup_stage")
        busy = Signal()
        m.d.sync += busy.eq(self._pick(s.busy, index) | issued)
        ev.rec0_busy = _sig(m, busy | issued, "lookup_busy")
        # Queued (in its FIFO): a live entity's frame-0 record is queued, busy or done
        # (stage DONE, held), one at a time, from its ALLOC until its entity dies; so
        # it is queued if and only if it is neither busy nor done, and no per-record
        # ``queued`` bit is kept.
        ev.rec0_queued = _sig(m, ~busy & (ev.rec0_stage != DONE_STAGE), "lookup_queued")

    def _allocate_code(self, m, ev, code, lines_ok):
        """Response code of ALLOC or MAP, checks in the model's order of precedence."""
        c = self.cmd.payload
        with m.If(ev.is_alloc):
            m.d.comb += code.eq(_first(
                ((c.etype >= N_TYPES) | ~lines_ok, Code.BAD_ARG),
                (~ev.any_rec, Code.NO_RECORD), (~ev.any_ent, Code.NO_ENTITY),
                (~ev.run_ok, Code.NO_LINES)))
        with m.Else():
            m.d.comb += code.eq(_first(
                (~lines_ok | (c.frame >= self.frames), Code.BAD_ARG),
                (~ev.rec0_any, Code.UNKNOWN), ((c.frame == 0) | ev.match_any, Code.MAPPED),
                (~ev.any_rec, Code.NO_RECORD), (~ev.run_ok, Code.NO_LINES)))

    def _update_in_flight(self, m, s, ev):
        """Per type: whether an entity of that type is queued (or being pushed) or busy
        (``in_flight``, CONFIG's check).

        A count of busy entities per type stands in for a search of every record: an
        entity becomes busy only by an issue and stops only by an accepted completion.
        The count adds a clock's issues one clock later (``issued_late``, registered),
        so that ``go`` (the decision, the FIFO head and its tombstone bit) ends in a
        register. The busy entities of a type are ``busy_count + issued_late``, both
        never negative (an entity issued in the clock before is still counted in
        ``issued_late`` when it completes).

        The flags are registers, computed a clock ahead from the next state of what
        they OR (the FIFOs' flags after this clock's pops and pushes, the pushes
        registered now, the busy count after this clock's issues and completions), so
        that CONFIG's check reads a register (a FIFO's flags → the OR → CONFIG's
        code → its response was a chain of 12 LUT4).
        """
        c = self.cmd.payload
        for t in range(N_TYPES):
            busy = s.busy_count[t]
            late = Signal(2, name=f"busy{t}_issued_late")
            went = _sig(m, Cat(ev.go[k] & (s.dec_type[k] == t) for k in Kind),
                        f"busy{t}_went")
            m.d.sync += late.eq(_popcount(went))
            done = _sig(m, _popcount(Cat(d.ok & (d.etype == t) for d in ev.done)),
                        f"busy{t}_done", 2)
            m.d.sync += busy.eq(busy + late - done)
            # (busy after this clock, but for its issues: ``busy + late - done != 0``,
            # with ``busy + late`` compared with each value ``done`` can take)
            held = _sig(m, busy + late, f"busy{t}_held", len(busy) + 1)
            busy_next = Mux(done == 0, held != 0, Mux(done == 1, held != 1, held != 2))
            queued_next = []
            for i, fifo in enumerate(s.fifo[t]):
                push = (ev.alloc_ok & (c.etype == t)) if i == 0 else s.pushing[t][i]
                queued_next.append(push | (~fifo.empty & ~(ev.popped[t][i] & fifo.one)))
            # (an entity whose push is registered is queued: golden decision 16)
            pushing_next = _any(d.advance & (d.etype == t) for d in ev.done)
            m.d.sync += s.in_flight[t].eq(_any(queued_next) | pushing_next | busy_next
                                          | went.any())

    def _translate_reads(self, m, s, ev, request):
        """What TRANSLATE ``request`` is checked by, read in the clock it is taken into
        registers: whether its buffer is allocated (and not reaped), whether the
        buffer's entity (``meta``) is live (its ``ent_live`` bit, corrected for the
        completions' registered kills, as a search's) and whether the offset is past
        the buffer's length. The code is formed a clock later from these registers
        (:meth:`_translate_code`), so that the pick and the code are not one path."""
        buf, offset = request.buf, request.offset
        length = s.art_len.read_port(domain="comb")
        owner = s.meta.read_port(domain="comb")
        m.d.comb += [length.addr.eq(self._index(buf)), owner.addr.eq(self._index(buf))]
        t = SimpleNamespace(valid=Signal(name="translate_valid"),
                            live=Signal(name="translate_live"),
                            over=Signal(name="translate_over"))
        m.d.sync += [t.valid.eq((buf < self.records)
                                & self._pick(s.valid, self._index(buf))),
                     t.live.eq(self._live_now(s, ev, owner.data.entity)),
                     t.over.eq(offset >= length.data)]
        return t

    def _translate_code(self, m, s, ev):
        """Response code of the TRANSLATE taken in the last clock, from its registered
        reads: in use if its buffer was allocated and its entity live in that clock."""
        t = ev.translate
        known = t.valid & t.live
        return _sig(m, _first((~known, Code.UNKNOWN), (t.over, Code.RANGE)),
                    "translate_code", 4)

    def _configure(self, m, s, ev):
        """CONFIG: write a whole stage program at once."""
        c = self.cmd.payload
        for t in range(N_TYPES):
            with m.If(ev.config_ok & (c.etype == t)):
                m.d.sync += [s.nstages[t].eq(c.nstages), s.kinds[t].eq(c.kinds)]
                m.d.sync += [s.desc[t][i].eq(c.descs[8 * i:8 * i + 8])
                             for i in range(MAX_STAGES)]

    # ------------------------------------------------------------ state updates

    def _fifo_pushes(self, m, s, ev):
        """ALLOC pushes into stage 0 of its type, a completion into the next stage of its
        entity a clock later (golden decision 16): up to three pushes a clock, always
        into different FIFOs."""
        c = self.cmd.payload
        n_done, m_done = ev.done
        # A completion's push, registered: which FIFO it goes to (the completion's
        # check, ``advance`` and the stage's decoder end here) and the record; the
        # FIFO's tail and flags move in the next clock, from these registers (the
        # check, ``advance`` and the flags were one path, 15.01 ns routed).
        records = [Signal(self.index_width, name=f"{d_name}_done_pushed")
                   for d_name in ("numeric", "move")]
        m.d.sync += [records[0].eq(n_done.record), records[1].eq(m_done.record)]
        for t in range(N_TYPES):
            buffer = s.fifo[t][0]
            m.d.comb += [buffer.w_en.eq(ev.alloc_ok & (c.etype == t)),
                         buffer.w_data.eq(self._index(ev.new_record))]
            for i in range(1, MAX_STAGES):
                # Only completions of stage i - 1 push here, all of its kind (which
                # CONFIG cannot change meanwhile: the entity is in flight).
                buffer = s.fifo[t][i]
                m.d.sync += s.pushing[t][i].eq(_any(d.advance & (d.etype == t)
                                                     & (d.next_stage == i) for d in ev.done))
                m.d.comb += [buffer.w_en.eq(s.pushing[t][i]),
                             buffer.w_data.eq(Mux(s.kinds[t][i - 1], records[1],
                                                  records[0]))]

    def _update_records(self, m, s, ev):
        """Next state of every record, from a few events per record.

        ``fresh``: it is the lowest free record, written every clock with what ALLOC or
        MAP would put there (it is free, so nothing reads it); only ``valid`` waits
        for the decision. ``reaped``: the reaper frees it. ``issued``:
        it is the head a port pops and issues. ``done``: a completion of it was taken.
        ``tomb``: set when its entity is deleted while queued, cleared when a port pops
        it (``dropped``); meanwhile it is not free.
        """
        R = self.records
        # (A frame mapped in the clock its entity dies is in the map word the reaper
        # reads: it is reaped with the others.)
        new_valid = _sig(m, ev.alloc_ok | ev.map_ok, "new_valid")
        m.d.sync += s.busy_d.eq(s.busy)
        # ``stage``: a completion moves its record on (ALLOC's or MAP's record starts
        # at 0: _write_tables).
        for w, d in enumerate(ev.done, start=1):
            s.stage.write(w, d.record, Mux(d.advance, d.next_stage, DONE_STAGE), d.ok)
        # The free records (neither valid nor a tombstone) are counted: a record becomes
        # free when the reaper frees it and it is no tombstone (or its tombstone is
        # dropped now), or when a port drops its tombstone and it is no longer valid
        # (or is reaped now); at most three a clock, all different. ALLOC and MAP take
        # one. So the count needs three picks, not a population count of every
        # record, and "a free record exists" next clock is the count's next value
        # != 0, for both outcomes of the accept (which only chooses): from registers,
        # not from the next state of every record.
        # Those frees are registered (``cooled``): the records cool for a clock (golden
        # decision 18), and the count and the next lowest free record take them from
        # registers (a port's drop → its record's picks → the count's adder was the
        # routed worst path, 14.95 ns).
        reaping = [ev.reap_freeing, ev.reap_freed]
        reap_frees = _sig(m, reaping[0] & ~self._pick(s.tomb, reaping[1]), "reap_frees")
        drop_frees = [_sig(m, ev.drop[k] & (~self._pick(s.valid, ev.head[k])
                                            | (reaping[0] & (reaping[1] == ev.head[k]))),
                           f"drop_frees_{k.name.lower()}") for k in Kind]
        cooled = []
        for j, (flag, index) in enumerate(zip((reap_frees, *drop_frees),
                                              (reaping[1], *ev.head))):
            cooled.append((Signal(name=f"cooled_record{j}"),
                           Signal(self.index_width, name=f"cooled_record{j}_index")))
            m.d.sync += [cooled[j][0].eq(flag), cooled[j][1].eq(index)]
        count = s.free_rec_count
        freed = _sig(m, count + _popcount(Cat(flag for flag, _ in cooled)),
                     "free_records_freed", len(count))
        m.d.sync += [count.eq(Mux(new_valid, freed - 1, freed)),
                     s.any_free_record.eq(Mux(new_valid, freed[1:] != 0, freed != 0)),
                     s.free_record.eq(self._lowest_free_next(
                         m, ~s.valid & ~s.tomb, ev.free_rec, s.free_record, new_valid,
                         cooled, ev.any_rec, "free_record"))]
        for r in range(R):
            fresh = ev.free_rec[r]
            # A dead record keeps ``busy`` (0: an entity dies only while not busy) until
            # it is fresh again.
            m.d.sync += [
                s.valid_bit[r].eq(Mux(fresh, new_valid, s.valid_bit[r] & ~ev.reaped[r])),
                *(busy[r].eq(~fresh & (ev.issued_kind[k][r] | (busy[r] & ~d.onehot[r])))
                  for k, ((_, busy), d) in enumerate(zip(s.busy_kind, ev.done))),
                s.tomb_bit[r].eq(Mux(ev.dropped[r], 0, s.tomb_bit[r] | ev.entombed[r])),
            ]

    def _lowest_free_next(self, m, unused, hot, index, taken, cooled, exists, name):
        """The lowest free entry of the next clock (golden decision 18), from registers
        but for the late ``taken``.

        ``unused`` (entries not in use now: the free ones and those that cool, freed in
        the last clock) less this clock's lowest free entry (``index``, its one-hot
        ``hot``, 0 if ``exists`` is low) is what the next clock can take if the entry
        is taken now. If it is not, the lowest of the next clock is the same entry
        unless one that cools now (``cooled``: registered flags and indices) is lower,
        and then it is the lowest of ``unused`` less that entry too. So one tree over
        ``unused & ~hot`` serves both, and ``taken`` only chooses.
        """
        others = _sig(m, _lowest_index(m, unused & ~hot, f"{name}_others"),
                      f"{name}_others", len(index))
        lower = _any(flag & (cooled_index < index) for flag, cooled_index in cooled)
        return Mux(taken | lower | ~exists, others, index)

    def _write_tables(self, m, s, ev):
        """The RAM fields of a record taken by ALLOC or MAP."""
        c = self.cmd.payload
        meta = Cat(ev.new_entity, ev.new_etype, ev.new_hold)
        for memory, value in ((s.meta, meta), (s.meta_sync, meta),
                              (s.rec_entity, ev.new_entity),
                              (s.art_len, c.lines)):
            port = memory.write_port()
            m.d.comb += [port.addr.eq(self._index(ev.new_record)), port.data.eq(value),
                         port.en.eq(ev.any_rec)]     # the free record: see _update_records
        # The ART (base line and length) is written a clock later, from registers: the
        # first fit's start ends in a register (``take_start``, encoded into
        # ``placed_base`` then), not the encoder in a RAM's write data. Nothing reads
        # the ART of a record in the clock after it was taken (a search or TRANSLATE
        # taken then reads it a clock later; the reaper, after a kill and a walk), and
        # the ALLOC or MAP response takes its ``addr`` from the same start.
        ev.placed = Signal(name="placed")
        ev.placed_record = Signal(self.index_width, name="placed_record")
        ev.placed_base = Signal(self.addr_width, name="placed_base")
        ev.placed_lines = Signal(4, name="placed_lines")
        m.d.sync += [ev.placed.eq(ev.alloc_ok | ev.map_ok),
                     ev.placed_record.eq(self._index(ev.new_record)),
                     ev.placed_lines.eq(c.lines)]
        m.d.comb += ev.placed_base.eq(_encode(ev.take_start, self.addr_width))
        # ``ent_meta``: the lowest free entity number, written every clock with what
        # ALLOC would give it (it is free, so no search hits it).
        port = s.ent_meta.write_port()
        m.d.comb += [port.addr.eq(ev.alloc_entity), port.en.eq(ev.any_ent),
                     port.data.eq(Cat(c.etype, c.hold))]
        port = s.art.write_port()
        m.d.comb += [port.addr.eq(ev.placed_record), port.en.eq(ev.placed),
                     port.data.eq(Cat(ev.placed_base, ev.placed_lines))]
        # Likewise the record's ``stage`` (0), so that the lowest-free tree does not
        # drive the other banks' read for bank 0's write data. The first read of it is
        # a clock after that write: a search or look-up of the record is taken in the
        # clock after its ALLOC or MAP at the earliest (the map is written then) and
        # reads ``stage`` in the clock after it; no completion of it comes before its
        # issue. A record is written only when taken.
        s.stage.write(0, ev.placed_record, Const(0, 4), ev.placed,
                      ahead=self._index(ev.new_record))
        # The entity map: ALLOC writes the entity's whole word (frame 0 mapped, no other
        # frame), MAP the slot of its frame. Nothing is written when an entity is freed.
        port = s.ent_map.write_port(granularity=1)
        m.d.comb += [port.addr.eq(ev.new_entity),
                     port.en.eq(Mux(ev.alloc_ok, (1 << self.frames) - 1,
                                    Mux(ev.map_ok, _decode(c.frame, self.frames), 0)))]
        for f in range(self.frames):
            m.d.comb += [port.data[f].record.eq(ev.new_record),
                         port.data[f].valid.eq(~ev.is_alloc | (f == 0))]

    def _update_entities(self, m, s, ev):
        """Entity numbers taken by ALLOC, killed by DELETE or RELEASE (in this clock) and
        by completions (registered, of the last clock: golden decision 15), up to three
        a clock, all different; freed by the reaper."""
        E, c = self.entities, self.cmd.payload
        kills = [(ev.kill_cmd, c.entity)] + [(d.killed, d.killed_entity) for d in ev.done]
        terms = [Mux(flag, _decode(entity, E), 0) for flag, entity in kills]
        killed = terms[0]
        for term in terms[1:]:
            killed = killed | term
        killed = _sig(m, killed, "killed")
        taken = Mux(ev.alloc_ok, ev.free_ent, 0)
        # The number the reaper frees now cools in the next clock (golden decision 18):
        # registered for the count and the list of free numbers.
        cooled = (Signal(name="cooled_entity"), Signal(len(s.free_entity),
                                                        name="cooled_entity_index"))
        m.d.sync += [cooled[0].eq(ev.reap_last), cooled[1].eq(ev.reap_freed_entity)]
        freed = _sig(m, s.free_ent_count + cooled[0], "free_entities_freed",
                     len(s.free_ent_count))
        m.d.sync += [s.ent_live.eq((s.ent_live & ~killed) | taken),
                     s.to_reap.eq((s.to_reap & ~ev.reap_picked) | killed),
                     s.free_ent_count.eq(Mux(ev.alloc_ok, freed - 1, freed)),
                     s.any_free_entity.eq(Mux(ev.alloc_ok, freed[1:] != 0, freed != 0)),
                     s.free_entity.eq(self._free_list(m, s, cooled, ev.alloc_ok))]

    def _free_list(self, m, s, pushed, taken):
        """The next clock's first free entity number (golden decision 19), the
        register ``free_entity``. The free numbers are, in order, those never taken
        since reset (a counter, ``fresh``: the RAM keeps its contents over a reset)
        and those the reaper freed, in a FIFO: a LUT-RAM ring of ``entities`` words.
        The reaper's number (``pushed``, registered: it cools a clock, decision 18)
        joins the ring; ALLOC (``taken``) takes the head, and the next head is the
        next fresh number, else the ring's oldest word (read at a registered address),
        else the number pushed now. So a RAM read from a register and a few
        multiplexers lie between the registers (before: the lowest free number's
        decoder and index tree over every number, a 13-LUT4 loop by Yosys's count)."""
        E, W = self.entities, len(s.free_entity)

        def step(pointer):
            return Mux(pointer == E - 1, 0, pointer + 1)

        ring = Memory(shape=W, depth=E, init=[])
        m.submodules.free_numbers = ring
        fresh = Signal(range(E + 1), init=min(1, E), name="free_numbers_fresh")
        first = Signal(range(E), name="free_numbers_first")     # the ring's oldest
        tail = Signal(range(E), name="free_numbers_tail")
        write, read = ring.write_port(), ring.read_port(domain="comb")
        flag, number = pushed
        m.d.comb += [write.addr.eq(tail), write.data.eq(number), write.en.eq(flag),
                     read.addr.eq(first)]
        count = s.free_ent_count
        fresh_left = _sig(m, fresh != E, "free_numbers_fresh_left")
        # The head comes from the ring (its oldest word, or the pushed one if the ring
        # is empty) when ALLOC takes it and no fresh number is left, or when there is
        # none; the ring's oldest word is consumed if there is one.
        from_ring = _sig(m, Mux(taken, ~fresh_left, count == 0), "free_numbers_from_ring")
        ring_empty = _sig(m, Mux(taken, count == 1, count == 0), "free_numbers_ring_empty")
        m.d.sync += [tail.eq(Mux(flag, step(tail), tail)),
                     first.eq(Mux(from_ring & (flag | ~ring_empty), step(first), first)),
                     fresh.eq(Mux(taken & fresh_left, fresh + 1, fresh))]
        return Mux(taken & fresh_left, fresh,
                   Mux(from_ring, Mux(ring_empty, number, read.data), s.free_entity))

    def _update_lines(self, m, s, ev):
        """Lines taken by ALLOC/MAP, lines of a reaped record freed (never the same)."""
        ok = ev.alloc_ok | ev.map_ok
        # The lines placed now are taken a clock later, from the registered start and
        # length. The accept masks the length, not the start, so that it is not one
        # more level of the first fit's loop (the free lines → the runs → the lowest
        # start → ``take_start`` → the lines it takes → the free lines).
        m.d.sync += [s.line_free.eq(ev.free_now | ev.reap_lines),
                     ev.take_start.eq(ev.fit_start),
                     ev.take_need.eq(Mux(ok, ev.fit_need, 0))]
        # Their count, so that ``status`` needs no population count of the bitmap (only
        # a multiplexer waits for the accept decision).
        count = s.free_line_count
        freed = _sig(m, count + ev.reap_length, "free_lines_freed", len(count))
        m.d.sync += count.eq(Mux(ok, freed - self.cmd.payload.lines, freed))

    # ------------------------------------------------------------ outputs

    def _issue_port(self, m, s, ev, k, port):
        """Issue register of kind ``k``: loaded with the head the port pops and the RAM
        fields of its record, held until taken; valid unless the head was a tombstone.
        The payload loads on every pop (the port is empty or being taken then), so
        that only ``valid`` waits for the head's tombstone bit (``go``)."""
        # The head's entity, read without a clock by the decided record (a register: the
        # head now; a record in a FIFO is not written meanwhile). A synchronous read
        # addressed by the decision's next record put the decision and the RAM's
        # address on one path (61.5 MHz routed).
        entity = s.rec_entity.read_port(domain="comb")
        descs = Array(Cat(s.desc[t]) for t in range(N_TYPES))
        m.d.comb += entity.addr.eq(s.dec_record[k])
        # What the completion of this issue will need (``_completion``).
        issued = s.issued[k].write_port()
        nstages = Array(s.nstages + [Const(1, 4)] * 3)[s.dec_type[k]]
        m.d.comb += [issued.addr.eq(ev.head[k]), issued.en.eq(ev.carry[k]),
                     issued.data.etype.eq(s.dec_type[k]), issued.data.stage.eq(s.dec_stage[k]),
                     issued.data.last.eq(s.dec_stage[k] + 1 >= nstages)]
        with m.If(ev.carry[k]):
            m.d.sync += [port.valid.eq(ev.go[k]),
                         port.payload.record.eq(ev.head[k]), port.payload.buf.eq(ev.head[k]),
                         port.payload.entity.eq(entity.data),
                         port.payload.etype.eq(s.dec_type[k]),
                         port.payload.stage.eq(s.dec_stage[k]),
                         port.payload.desc.eq(descs[s.dec_type[k]].word_select(
                             s.dec_stage[k], 8))]
        with m.Elif(port.ready):
            m.d.sync += port.valid.eq(0)

    def _response_ports(self, m, s, ev):
        """``resp`` and ``qresp``: a pending register, then a queue with a bypass."""
        q = self.query.payload
        qresp = Signal(self.response)
        q_kind = Signal(_Pending)
        m.d.comb += [qresp.op.eq(q.op), qresp.code.eq(Code.BAD_OP)]
        with m.Switch(q.op):
            with m.Case(Op.SEARCH):
                m.d.comb += q_kind.eq(_Pending.SEARCH)
            with m.Case(Op.TRANSLATE):
                # (its code a clock later: _translate_code)
                m.d.comb += [q_kind.eq(_Pending.TRANSLATE), qresp.code.eq(Code.OK)]
        c = self.cmd.payload
        m.d.comb += ev.meta_cmd.addr.eq(ev.rec0_index)
        # A search shows the stage at the start of its clock: the table's stage now,
        # unless a completion of the record moved it on in that clock.
        moved = []
        for d in ev.done:
            ok, record, stage = Signal(), Signal(self.index_width), Signal(4)
            m.d.sync += [ok.eq(d.ok), record.eq(d.record), stage.eq(d.stage)]
            moved.append((ok, record, stage))
        ev.moved = moved
        ports = (("resp", self.resp, ev.take, c, ev.resp_kind, ev.resp),
                 ("qresp", self.qresp, ev.qtake, q, q_kind, qresp))
        pendings = [self._pending(m, name, take, request, kind, direct)
                    for name, port, take, request, kind, direct in ports]
        # Bad input (a code >= 8) of a request taken in the last clock, from its pending
        # register (a SEARCH's code is never bad; a TRANSLATE's is checked now), and of a
        # completion, registered: the sticky flag takes them a clock later and
        # ``status.error`` shows them at once, so the flag rises in the clock after the
        # bad input as the model says.
        done_bad = Signal(name="done_bad")
        m.d.sync += done_bad.eq(ev.done[0].bad | ev.done[1].bad)
        ev.translate_code = self._translate_code(m, s, ev)
        translating = _any(p.valid & (p.kind == _Pending.TRANSLATE) for p in pendings)
        ev.bad = _sig(m, done_bad | (translating & ev.translate_code[3])
                      | _any(p.valid & (p.kind == _Pending.DIRECT) & p.direct.code[3]
                             for p in pendings), "bad_input")
        with m.If(ev.bad):
            m.d.sync += s.error.eq(1)
        # One set of table reads for both ports: at most one of them has a SEARCH or
        # TRANSLATE pending (``query_reads``). A search's reads are addressed by the
        # record its map word gives (one slot pick); a TRANSLATE's by its buffer, a
        # register, through an ART read of its own, so that its ``addr`` adder is not
        # after the search's map word and read (a routed worst path, 15.07 ns).
        found = ev.search_map.slot(ev.search_frame, "search", onehot=True)
        art = s.art.read_port(domain="comb")
        m.d.comb += art.addr.eq(found.record)
        q_reads = _sig(m, pendings[1].valid & (pendings[1].kind != _Pending.DIRECT),
                       "qresp_reads")
        translated = s.art.read_port(domain="comb")
        m.d.comb += translated.addr.eq(Mux(q_reads, pendings[1].buf, pendings[0].buf))
        read = SimpleNamespace(
            hit=found.hit, record=found.record, meta=ev.search_map.meta, art=art.data,
            stage=self._searched_stage(m, s, ev, found.record, "search"),
            busy=_sig(m, self._pick(s.busy_d, found.record), "search_busy"),
            translated=translated.data)
        for (name, port, _, _, _, _), pending in zip(ports, pendings):
            queue = m.submodules[f"{name}_queue"] = _ResponseQueue(self.response)
            payload = self._resolve(m, s, ev, name, pending, read)
            m.d.comb += [queue.fresh.eq(pending.valid), queue.payload.eq(payload)]
            wiring.connect(m, queue.o, wiring.flipped(port))
            if name == "resp":
                m.d.comb += ev.room.eq(queue.room)
                # An accepted ALLOC or MAP: its record and base line, registered with its
                # ART write (the record not through the pending response's register).
                with m.If(ev.placed):
                    m.d.comb += [payload.record.eq(ev.placed_record),
                                 payload.buf.eq(ev.placed_record),
                                 payload.addr.eq(ev.placed_base)]
            else:
                m.d.comb += self.query.ready.eq(queue.room)

    def _pending(self, m, name, take, request, kind, direct):
        """The request taken this clock, registered for its response in the next one."""
        p = SimpleNamespace(valid=Signal(name=f"{name}_pending"),
                            kind=Signal(_Pending, name=f"{name}_kind"),
                            direct=Signal(self.response, name=f"{name}_direct"),
                            buf=Signal(self.index_width, name=f"{name}_buf"),
                            entity=Signal(8, name=f"{name}_key_entity"),
                            frame=Signal(4, name=f"{name}_key_frame"),
                            offset=Signal(4, name=f"{name}_offset"))
        m.d.sync += [p.valid.eq(take), p.kind.eq(kind), p.direct.eq(direct),
                     p.buf.eq(self._index(request.buf)),
                     p.entity.eq(request.entity), p.frame.eq(request.frame),
                     p.offset.eq(request.offset)]
        return p

    def _searched_stage(self, m, s, ev, index, name):
        """Stage of record ``index`` at the start of the last clock (see ``ev.moved``)."""
        stage = s.stage.read(index, f"{name}_stage_now")
        for ok, record, before in reversed(ev.moved):
            stage = Mux(ok & (record == index), before, stage)
        return _sig(m, stage, f"{name}_stage", 4)

    def _resolve(self, m, s, ev, name, p, read):
        """The response of a pending request: SEARCH and TRANSLATE read the tables now
        (``read``, shared by the ports; a search's type and ``hold`` from ``ent_meta``,
        read with its map word)."""
        resp = Signal(self.response, name=f"{name}_payload")
        m.d.comb += resp.eq(p.direct)
        with m.If(p.kind == _Pending.SEARCH):
            m.d.comb += [resp.op.eq(Op.SEARCH),
                         resp.code.eq(Mux(read.hit, Code.OK, Code.MISS))]
            with m.If(read.hit):
                m.d.comb += [
                    resp.entity.eq(p.entity), resp.record.eq(read.record),
                    resp.frame.eq(p.frame), resp.etype.eq(read.meta.etype),
                    resp.stage.eq(read.stage), resp.busy.eq(read.busy),
                    resp.hold.eq(read.meta.hold), resp.buf.eq(read.record),
                    resp.addr.eq(read.art.base), resp.lines.eq(read.art.length)]
        with m.Elif(p.kind == _Pending.TRANSLATE):
            m.d.comb += resp.code.eq(ev.translate_code)
            with m.If(ev.translate_code == Code.OK):
                m.d.comb += [resp.buf.eq(p.buf),
                             resp.addr.eq(read.translated.base + p.offset),
                             resp.lines.eq(read.translated.length)]
        return resp

    def _status(self, m, s, ev):
        """Counts of free records, entity numbers and lines, the longest free run
        :data:`RUN_DELAY` clocks ago less the lines taken since, and the error flag."""
        st, c = self.status, self.cmd.payload
        window = ev.run_window
        # The lines ALLOC and MAP took in the last RUN_DELAY clocks (golden decision 13):
        # ``taken[j]`` j + 1 clocks ago, ``window`` their sum. Only a multiplexer waits
        # for the accept decision.
        taken = [Signal(4, name=f"run_taken{j}") for j in range(RUN_DELAY)]
        ok = ev.alloc_ok | ev.map_ok
        kept = _sig(m, window - taken[-1], "run_window_kept", len(window))
        grown = _sig(m, kept + c.lines, "run_window_grown", len(window))
        m.d.sync += [taken[0].eq(Mux(ok, c.lines, 0)), window.eq(Mux(ok, grown, kept))]
        # Next clock's ``free_run``: the tree's next run less the next window, for both
        # outcomes of the accept; the accept only chooses.
        run_next = _sig(m, ev.run_next, "free_run_next", range(self.lines + 1))
        room_kept = _sig(m, Mux(run_next > kept, run_next - kept, 0), "run_room_kept",
                         range(self.lines + 1))
        room_grown = _sig(m, Mux(run_next > grown, run_next - grown, 0), "run_room_grown",
                          range(self.lines + 1))
        m.d.sync += ev.run_room.eq(Mux(ok, room_grown, room_kept))
        m.d.sync += [taken[j].eq(taken[j - 1]) for j in range(1, RUN_DELAY)]
        m.d.comb += [st.free_records.eq(s.free_rec_count),
                     st.free_entities.eq(s.free_ent_count),
                     st.free_lines.eq(s.free_line_count),
                     st.free_run.eq(ev.run_room),
                     st.error.eq(s.error | ev.bad)]


class _MultiWriteTable:
    """A table with one write port per writer and any number of read ports (comb, or
    synchronous through copies of the banks), in LUT-RAM: one bank per writer, each holding its writes XOR the other banks'
    contents at the same address, so that a read is the XOR of the banks (the
    XOR-based multi-ported memory of LaForest and Steffan, FPGA 2012). Each read port
    and each writer's reads of the other banks is a copy of a bank; the writers must
    never write one address in the same clock."""

    def __init__(self, m, name, width, depth, *, writers):
        self.m, self.name, self.width, self.depth = m, name, width, depth
        self.banks = [Memory(shape=width, depth=depth, init=[]) for _ in range(writers)]
        for w, bank in enumerate(self.banks):
            m.submodules[f"{name}_bank{w}"] = bank
        # Copies of the banks for synchronous reads, written as the banks:
        # the write ports are made by :meth:`finish`, once every copy exists.
        self.copies = [[] for _ in range(writers)]
        self.writes = {}

    def _xor(self, banks, addr):
        values = []
        for bank in banks:
            port = bank.read_port(domain="comb")
            self.m.d.comb += port.addr.eq(addr)
            values.append(port.data)
        return _tree(lambda a, b: a ^ b, values)

    def read(self, addr, name):
        """The entry at ``addr`` (as written before this clock)."""
        return _sig(self.m, self._xor(self.banks, addr), name, self.width)

    def read_sync(self, addr, name, banks=None):
        """The XOR of ``banks`` (default all: the entry) at ``addr`` as written before
        this clock, out in the next clock: a synchronous read of a copy of each bank
        (its read multiplexers before the register, off the next clock's paths)."""
        values = []
        for w in range(len(self.banks)) if banks is None else banks:
            copy = Memory(shape=self.width, depth=self.depth, init=[])
            self.m.submodules[f"{self.name}_bank{w}_{name}"] = copy
            self.copies[w].append(copy)
            port = copy.read_port()
            self.m.d.comb += port.addr.eq(addr)
            values.append(port.data)
        return _sig(self.m, _tree(lambda a, b: a ^ b, values), name, self.width)

    def write(self, writer, addr, value, en, *, ahead=None):
        """Writer ``writer`` writes ``value`` at ``addr`` at the end of this clock if
        ``en``. With ``ahead`` (``addr`` of the next clock, whose entry no other writer
        writes in this clock) the other banks are read a clock ahead, synchronously."""
        others = [w for w in range(len(self.banks)) if w != writer]
        if not others:
            rest = 0
        elif ahead is not None:
            rest = self.read_sync(ahead, f"w{writer}_others", others)
        else:
            rest = self._xor([self.banks[w] for w in others], addr)
        self.writes[writer] = (addr, _sig(self.m, value ^ rest, f"{self.name}_w{writer}_data",
                                          self.width), en)

    def finish(self):
        """Make the write ports of the banks and their copies."""
        for writer, (addr, data, en) in self.writes.items():
            for memory in [self.banks[writer], *self.copies[writer]]:
                port = memory.write_port()
                self.m.d.comb += [port.addr.eq(addr), port.en.eq(en), port.data.eq(data)]


class _Pending(hdl_enum.Enum, shape=2):
    """What a pending response still has to read: nothing, a search hit, a translation."""
    DIRECT = 0
    SEARCH = 1
    TRANSLATE = 2


def _slot_layout(index_width):
    """A frame's slot in the entity map: its record, and whether the frame is mapped."""
    return data.StructLayout({"record": index_width, "valid": 1})


#: What a completion reads of the record it completes, written by its port at the issue.
ISSUED = data.StructLayout({"etype": 3, "stage": 3, "last": 1})

#: What ``ent_meta`` holds per entity number.
ENT_META = data.StructLayout({"etype": 3, "hold": 1})

#: The RAM fields of a record: a copy of ``entity`` and ``etype``, and ``hold``.
META = data.StructLayout({"entity": 8, "etype": 3, "hold": 1})


def ART(addr_bits):
    """An address rename table entry: first line and length of a buffer."""
    return data.StructLayout({"base": addr_bits, "length": 4})


def _first(*checks):
    """Response code of the first failing check, in order; OK if none fails."""
    code = Const(Code.OK, 4)
    for failed, failure in reversed(checks):
        code = Mux(failed, failure, code)
    return code


class QCCTiming(wiring.Component):
    """:class:`QCC` with a flip-flop on every port bit, for timing only.

    Out of context, the FPGA flow times paths between flip-flops only, so paths that
    start at an input port (a command's key into the comparators, a completion's record
    into the table reads) or end at an output port would not count. With every port
    registered here, they are timed as they would be between registered neighbours.
    The extra clock on every port breaks the handshakes: this design is not for use.
    Parameters as :class:`QCC`.
    """

    def __init__(self, **params):
        self.core = QCC(**params)
        super().__init__(dict(self.core.signature.members))

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        for path, member, outer in self.signature.flatten(self):
            inner = core
            for part in path:
                inner = getattr(inner, part)
            if member.flow == wiring.In:
                m.d.sync += inner.eq(outer)
            else:
                m.d.sync += outer.eq(inner)
        return m


def _timing(*, records=256, entities=256, lines=256, frames=16):
    return QCCTiming(records=records, entities=entities, lines=lines, frames=frames)


#: Designs that ``python -m hw.gen`` can build.
DESIGNS = {
    "qcc": QCC,
    "qcc_timing": _timing,
}
