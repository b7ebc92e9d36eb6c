"""The global spreader on QCC golden models: the QCC's status must be one the spreader
can trust (issue 11).

A QCC places a buffer first fit in contiguous lines. The spreader's minimum check
compares ``free_lines`` with the packet's size; fed with the QCC's count of free lines
it passed while the lines were scattered, the QCC refused, and with those lines held by
data that waits for the refused packet (the vertices of its own triangle) the run
deadlocked. Fed with the QCC's ``free_run`` (longest run of contiguous free lines), a
check that passes means the ALLOC is accepted.
"""

import dataclasses

import numpy as np
import pytest

from golden.qcc import MAX_BUF_LINES, Code, Op, QCCModel
from golden.spreader import (AllocRequest, Config, EType, EUStatus, Feeder, QCCEU, Scoreboard, Spreader,
                             Workload, held_room_minima, synthetic_workload)


class CountingQCCEU(QCCEU):
    """The adapter as it was before issue 11: the status reports the free-line count."""

    def status(self):
        st = self.qcc.status()
        return EUStatus(st.free_records, st.free_entities, st.free_lines)


class UnregisteredQCCEU(QCCEU):
    """The adapter's answer as it was before issue 15 in this model: in the clock of
    its ALLOC (the answer was not registered)."""

    ANSWER_DELAY = 0


class HeldUncountedQCCEU(UnregisteredQCCEU):
    """The adapter as it was before issue 12's held-request count (and issue 15): a
    request held over a RELEASE is in neither the spreader's debit (first clock only)
    nor the status until its ALLOC is taken."""

    def status(self):
        st = self.qcc.status()
        return EUStatus(st.free_records, st.free_entities, st.free_run)


def mixed_sizes(workload, rng):
    """``workload`` with every packet (vertex, triangle, pixel, patch) resized to a random
    1..MAX_BUF_LINES lines."""
    def resize(item):
        size = int(rng.integers(1, MAX_BUF_LINES + 1))
        return dataclasses.replace(item, packet=dataclasses.replace(item.packet, size=size))
    return Workload(*[[resize(item) for item in stream] for stream in workload.streams])


def run(seed, eu_class, *, n_eus, records, entities, lines, vdt, pt, config, rotate=True,
        made=None):
    """One spreader run on ``n_eus`` QCC models; ``made`` (a list) receives the EUs."""
    sp = Spreader(n_eus=n_eus, vdt_records=vdt, pt_records=pt, rotate=rotate)
    wl = mixed_sizes(synthetic_workload(seed, n_triangles=40, cols=4, max_pixels=3,
                                        n_patches=2, vdt_records=vdt, pt_records=pt),
                     np.random.default_rng(seed))
    eus = [eu_class(QCCModel(records=records, entities=entities, lines=lines),
                    seed * 10 + e, work=(1, 6)) for e in range(n_eus)]
    if made is not None:
        made.extend(eus)
    result = sp.run(Feeder(wl, gap=0.2, rng=seed), eus, config=config, stall_cycles=3000)
    stats = Scoreboard(sp, wl).check(result)
    assert not result.error and not any(eu.errors for eu in eus)
    assert all(eu.qcc.status()[:3] == (records, entities, lines) for eu in eus)
    return stats, eus


#: The co-simulation's small shape (``tb/test_spreader_qcc.py``, QCC_SMALL) and the
#: minima the spreader tests use everywhere (``tb.test_spreader.min_config``).
SMALL = dict(n_eus=3, records=8, entities=8, lines=16, vdt=8, pt=4,
             config=[Config.minimum(EType.VERTEX, 4, 1), Config.minimum(EType.TRIANGLE, 2, 1),
                     Config.minimum(EType.PIXEL, 1, 1)])


def test_scattered_free_lines_deadlock_is_gone():
    """Regression: this run deadlocks with the free-line count as status (a packet
    whose size the count of free lines meets, refused again and again -- over 100
    times -- by a QCC whose free lines are held apart by finished data); with the
    longest free run as status it completes, and no QCC ever refuses. The run's
    allocations depend on the QCC's issue timing and the spreader's pipeline: the
    seed is one that replays the scattered-lines case with the QCC deciding issues a
    clock ahead (issue 11), the spreader's two-stage allocation with the status scan
    a clock before the request and the tables written a clock after the accept (issue
    12, cut 3, with the first-clock debit) and the QCC's reaper freeing dead entities
    a record a clock (issue 11, golden decision 12), ``free_run`` 4 clocks late
    less what was taken since (golden decision 13) and ALLOC accepted on ``free_run``
    (golden decision 14), with the default candidate rotation, the adapter that
    counts out a request held over a RELEASE and the scans reading the status of the
    clock before (rule 3) and the QCC's completion pushes and ALLOC's pushes offered a
    clock later (golden decisions 16 and 17), the release chosen into a register a
    clock before it leaves (rule 6), a triangle's references dropped a clock after its
    completion's other effects (rule 5, stage E), the adapter's answer registered,
    two clocks after the ALLOC (issue 15), and the rotation moved at a request's first
    clock (decision 9; seeds 1 and 7 did before those changes, 18
    before the registered scan, 34 before the reaper and the commit stage, 5 before
    decision 13, 1 before decision 14, 12 before the registered status, 0 before
    decisions 16 and 17, 25 before the release's choice register, stage E and the
    registered answer, 10 before the rotation moved at the request; with these
    hand-picked minima many seeds deadlock with ``free_run`` too, which the rule of
    ``test_mixed_sizes_with_held_room_minima`` avoids: of seeds 0-39, 12 deadlock with
    the count, 6 of them on scattered lines as below, and 1, 4, 19, 31 and 33 of those
    6 complete with ``free_run``)."""
    eus = []
    with pytest.raises(RuntimeError, match="deadlock"):
        run(1, CountingQCCEU, **SMALL, made=eus)
    refused = [(eu.qcc.status(), c.lines) for eu in eus for _, c, r in eu.responses
               if r.code == Code.NO_LINES]
    assert len(refused) > 100 and any(st.free_lines >= n > st.free_run for st, n in refused)
    stats, eus = run(1, QCCEU, **SMALL)
    assert stats.refusals == 0 and stats.allocations > 90


#: Held data (vertex, patch, triangle) only where it leaves room for the packets that
#: free it: the rule of :func:`golden.spreader.held_room_minima` from the packet-size
#: bound (``tb/test_spreader_qcc.py`` uses the same); no minimum picked by hand.
HELD_ROOM = held_room_minima(MAX_BUF_LINES)


@pytest.mark.parametrize("seed", [pytest.param(s, marks=pytest.mark.slow) for s in range(12)])
def test_mixed_sizes_with_held_room_minima(seed):
    """Packets of 1..8 lines of every type on QCCs of 32 lines with :data:`HELD_ROOM`:
    every packet allocated exactly once (the scoreboard), no refusal after a passing
    check, no deadlock, every resource back."""
    stats, _ = run(seed, QCCEU, n_eus=4, records=16, entities=12, lines=32, vdt=16, pt=8,
                   config=HELD_ROOM)
    assert stats.refusals == 0 and stats.allocations > 90


def test_held_room_minima_grades_the_chain_of_holds():
    """Each held level leaves room for one packet of every level that frees it."""
    minima = {c.etype: (c.records, c.lines) for c in held_room_minima(5)}
    assert minima == {EType.VERTEX: (3, 15), EType.PATCH: (3, 15), EType.TRIANGLE: (2, 10)}
    with pytest.raises(ValueError, match="max_lines must be an integer from 1 to 15, not 16"):
        held_room_minima(16)


@pytest.mark.parametrize("seed, old", [(2, False), pytest.param(2, True, marks=pytest.mark.slow),
                                       pytest.param(3, True, marks=pytest.mark.slow)])
def test_request_held_over_a_release_is_counted(seed, old):
    """Regression (issue 12): with a QCC that accepts on ``free_run`` alone (golden
    decision 14; before it, a test-only variant of the model), a request the adapter holds over a RELEASE was counted
    nowhere in the clock after its first (the spreader debits it in its first clock
    only, the QCC shows it from the clock after its ALLOC), so the spreader's next
    check passed on lines that ALLOC took, and the QCC refused: one refusal after a
    passing check in these seeds (of 0-39 of the small shape; seeds 7, 17 and 38 of
    the mixed-size and small shapes before stage D moved the completions' timing; 35
    before the scans read the status of the clock before; 2 and 8 before the QCC's
    pushes a clock later, golden decisions 16 and 17; 10, 27 and 35 before the release
    chosen into a register, rule 6, stage E, rule 5, and the registered answer).
    With the held request counted out of the status, none. (The fast run checks the
    fixed adapter on seed 2; ``make regress`` also replays the old failure, ``old``. The
    fast case replaced ``test_mixed_sizes_with_held_room_minima``'s seed 0, now slow.)
    The old failure is replayed with the answer in the ALLOC's clock, as it was before
    issue 15 (:class:`UnregisteredQCCEU`: of seeds 0-39, 2, 3, 10, 17, 20, 22, 23, 25,
    29, 35, 36 and 39 replay it and complete with the counted adapter, which at that
    timing refuses none); with the answer registered two clocks after the ALLOC the
    next request's scan reads a status that already shows the ALLOC, so the count is
    defence in depth there (the uncounted adapter with the registered answer refused
    none in the 21 of seeds 0-39 that complete)."""
    if old:
        stats, _ = run(seed, HeldUncountedQCCEU, **SMALL)
        assert stats.refusals > 0
        stats, _ = run(seed, UnregisteredQCCEU, **SMALL)
        assert stats.refusals == 0
    stats, _ = run(seed, QCCEU, **SMALL)
    assert stats.refusals == 0 and stats.allocations > 90


def _answers(eu, req, clocks):
    """Drive ``req`` to ``eu`` every clock until it is answered (at most ``clocks``),
    as the spreader does; returns (clock of the answer, answer, the status of each
    clock: the EU's and the QCC's own)."""
    seen = []
    for _ in range(clocks):
        own = eu.qcc.status()
        seen.append((tuple(eu.status()), (own.free_records, own.free_entities, own.free_run)))
        ans = eu.answer(req)
        t = eu.t
        eu.tick()
        if ans is not None:
            return t, ans, seen
    raise AssertionError(f"no answer in {clocks} clocks")


def test_answer_is_the_qcc_response_registered():
    """Issue 15: the adapter registers the QCC's response, so an ALLOC sent in the
    request's first clock is answered two clocks later (it was the clock after), the
    ALLOC is sent once, and the next command waits for its response. A RELEASE that
    waits goes first: then the ALLOC goes two clocks later (the RELEASE's response
    first), the held request counted out of the status until it goes, and the answer
    two clocks after it."""
    eu = QCCEU(QCCModel(records=4, entities=4, lines=8), 0)
    req = AllocRequest(EType.VERTEX, 3, 1, 0)
    t, ans, _ = _answers(eu, req, 8)
    assert t == 2 and ans.accept            # 0 before issue 15 (N = 0 in the model)
    allocs = [(c, r) for c, cmd, r in eu.responses if r.op == Op.ALLOC]
    assert [c for c, _ in allocs] == [0] and allocs[0][1].entity == ans.entity
    for _ in range(40):             # its stages complete (processors of 1..4 clocks)
        eu.status()
        eu.tick()
    eu._rel.append(ans.entity)      # the adapter releases an entity it held for itself
    start = eu.t
    t, ans2, seen = _answers(eu, AllocRequest(EType.PIXEL, 2, 0, 1), 10)
    cmds = [(c - start, cmd.op) for c, cmd, _ in eu.responses if c >= start]
    assert cmds == [(0, Op.RELEASE), (2, Op.ALLOC)] and t - start == 4 and ans2.accept
    # counted out of the status (1 record, 1 entity, its 2 lines) in the clocks it is
    # held past its first, its ALLOC not yet sent; from the clock after, the QCC's own
    held = [tuple(o - d for o, d in zip(own, (1, 1, 2))) for _, own in seen]
    assert [st for st, _ in seen] == [seen[0][1], held[1], held[2], seen[3][1], seen[4][1]]
