"""Unit tests of the queue/cache controller golden model (``golden/qcc.py``)."""

import random
from collections import Counter, deque
from dataclasses import dataclass, field

import numpy as np
import pytest

from golden.qcc import (
    DEFAULT_PROGRAMS, DONE_STAGE, DRAIN, N_TYPES, RUN_DELAY, Code, Command, EType, Issue,
    Kind, Op, QCCModel, Response, Stage,
)

N, M = Kind.NUMERIC, Kind.MOVE
V, T, P, PA, S = EType.VERTEX, EType.TRIANGLE, EType.PIXEL, EType.PATCH, EType.STATE


def small(**kw):
    args = dict(records=8, entities=8, lines=32, frames=4)
    args.update(kw)
    return QCCModel(**args)


def kd(issues):
    """(kind, desc) of a list of issues."""
    return [(i.kind, i.desc) for i in issues]


def reap(m):
    """Clock with both issue ports stalled until the reaper has freed every dead entity
    (decision 12); the number of clocks."""
    clocks = 0
    while not m.reaped():
        m.step(n_ready=False, m_ready=False)
        clocks += 1
    return clocks


def settle(m):
    """Clocks with both issue ports stalled until the reaper is done, then
    ``RUN_DELAY`` more, so that ``status.free_run`` shows the state (decision 13); the
    status."""
    reap(m)
    for _ in range(RUN_DELAY):
        m.step(n_ready=False, m_ready=False)
    return m.status()


def run_one(m, record, max_cycles=100):
    """Issue and complete one entity's stages one by one; its issues. A stage's issue
    comes within three clocks of its completion or ALLOC: a completion's push in the
    first (decision 16), decided on in the first clock in which its FIFO is offered
    (ALLOC's push: a clock later, decision 17) and issued in the next."""
    out = []
    for _ in range(max_cycles):
        iss = []
        for _ in range(3):
            iss = iss or [i for i in m.step() if i.record == record]
        if not iss:
            break
        out += iss
        assert m.complete(record) == Code.OK
    return out


# ---------------------------------------------------------------- parameters

@pytest.mark.parametrize("kw, exc, msg", [
    (dict(records=0), ValueError, "records must be an integer from 1 to 256, not 0"),
    (dict(records=257), ValueError, "records must be an integer from 1 to 256, not 257"),
    (dict(records="8"), TypeError, "records must be an integer from 1 to 256, not '8'"),
    (dict(records=True), TypeError, "records must be an integer from 1 to 256, not True"),
    (dict(entities=0), ValueError, "entities must be an integer from 1 to 256, not 0"),
    (dict(lines=0), ValueError, "lines must be an integer from 1 to 65536, not 0"),
    (dict(lines=1.5), TypeError, "lines must be an integer from 1 to 65536, not 1.5"),
    (dict(frames=17), ValueError, "frames must be an integer from 1 to 16, not 17"),
    (dict(programs=DEFAULT_PROGRAMS[:4]), ValueError, "programs must have 5 entries, not 4"),
    (dict(programs=DEFAULT_PROGRAMS[:4] + ((),)), ValueError,
     r"programs\[4\] must have 1..8 stages, not 0"),
])
def test_bad_parameters(kw, exc, msg):
    with pytest.raises(exc, match=msg):
        QCCModel(**kw)


@pytest.mark.parametrize("make, exc, msg", [
    (lambda: Command.alloc(0, 16), ValueError, "lines must be an integer from 0 to 15, not 16"),
    (lambda: Command.alloc(8, 1), ValueError, "etype must be an integer from 0 to 7, not 8"),
    (lambda: Command.search(256), ValueError, "entity must be an integer from 0 to 255, not 256"),
    (lambda: Command.search(0, -1), ValueError, "frame must be an integer from 0 to 15, not -1"),
    (lambda: Command(8), ValueError, "op must be an integer from 0 to 7, not 8"),
    (lambda: Command.config(0, [(2, 0)]), ValueError, r"program\[0\].kind"),
    (lambda: Command.config(0, [(0, 256)]), ValueError, r"program\[0\].desc"),
    (lambda: Command.config(0, [(0, 0)] * 9), ValueError, "at most 8 stages, not 9"),
    (lambda: Command.config(0, [0]), TypeError, r"program\[0\] must be a \(kind, desc\)"),
    (lambda: Command.translate(0, 16), ValueError, "offset must be an integer from 0 to 15"),
])
def test_bad_command_fields(make, exc, msg):
    with pytest.raises(exc, match=msg):
        make()


def test_bad_cycle_arguments():
    m = small()
    with pytest.raises(TypeError, match="cmd must be a Command or None, not 'str'"):
        m.cycle(cmd="alloc")
    with pytest.raises(ValueError, match="ncompl must be an integer from 0 to 255, not 256"):
        m.cycle(ncompl=256)
    with pytest.raises(ValueError, match="latency must be an integer from 1"):
        m.run([Command.alloc(S, 1)], latency=0)
    with pytest.raises(ValueError, match="latency sequence is shorter"):
        m.run([Command.alloc(S, 1)], latency=[])


def test_command_encoding():
    c = Command.config(V, [(M, 0x12), (N, 0x34)])
    assert c.nstages == 2 and len(c.program) == 8
    assert c.kinds == 0b01
    assert c.descs == 0x3412
    assert c.program[2] == Stage(N, 0)


# ---------------------------------------------------------------- EDT

def test_allocate_until_no_record():
    m = small(records=4, entities=8, lines=64)
    for i in range(4):
        r = m.allocate(P, 2)
        assert r == Response(Op.ALLOC, Code.OK, entity=i, record=i, frame=0, etype=P,
                             stage=0, busy=0, hold=0, buf=i, addr=2 * i, lines=2)
    assert m.status() == (0, 4, 56, 56, False)
    m.step(n_ready=False, m_ready=False)            # (decided: decision 17)
    before = m.snapshot()
    r = m.allocate(P, 2)
    assert r == Response(Op.ALLOC, Code.NO_RECORD) and not r.ok and not r.error
    assert m.snapshot() == before and m.status() == (0, 4, 56, 56, False)


def test_allocate_until_no_entity_and_no_lines():
    m = small(records=8, entities=3, lines=64)
    assert [m.allocate(V, 1).entity for _ in range(3)] == [0, 1, 2]
    m.step(n_ready=False, m_ready=False)            # (decided: decision 17)
    before = m.snapshot()
    assert m.allocate(V, 1).code == Code.NO_ENTITY
    assert m.snapshot() == before and not m.error
    m = small(records=8, entities=8, lines=10)
    assert m.allocate(V, 8).addr == 0
    assert m.allocate(V, 2).addr == 8
    m.step(n_ready=False, m_ready=False)            # (decided: decision 17)
    before = m.snapshot()
    assert m.allocate(V, 1).code == Code.NO_LINES
    assert m.snapshot() == before and m.status() == (6, 6, 0, 0, False)


def test_refusal_precedence():
    m = small(records=2, entities=2, lines=2)
    m.allocate(V, 1)
    m.allocate(V, 1)
    assert m.allocate(V, 1).code == Code.NO_RECORD   # all three exhausted
    m = small(records=3, entities=2, lines=2)
    m.allocate(V, 1)
    m.allocate(V, 1)
    assert m.allocate(V, 1).code == Code.NO_ENTITY   # entities and lines exhausted
    assert m.allocate(V, 9).code == Code.BAD_ARG     # bad input before resources


def test_lowest_free_record_and_oldest_free_entity_reused():
    """Decision 1: the lowest free record; decision 19: the entity number free the
    longest (4 .. 7 from reset, then 1 and 2 in the order the reaper freed them)."""
    m = small()
    for _ in range(4):
        m.allocate(PA, 2, hold=True)
    m.run([DRAIN])                       # all held: deleting them leaves no tombstone
    assert m.delete(1).ok and m.delete(2).ok
    reap(m)
    r = m.allocate(V, 1)
    assert (r.entity, r.record, r.addr) == (4, 1, 2)
    r = m.allocate(V, 4)     # free: lines 3..5 and 8.. -> first fit of 4 is at 8
    assert (r.entity, r.record, r.addr) == (5, 2, 8)
    r = m.allocate(V, 3)
    assert (r.entity, r.record, r.addr) == (6, 4, 3)
    assert [m.allocate(V, 1).entity for _ in range(3)] == [7, 1, 2]


def test_map_frames_and_search():
    m = small(frames=4)
    e = m.allocate(T, 2, hold=True).entity
    m.allocate(V, 1)
    r1 = m.map_frame(e, 1, 3)
    assert r1 == Response(Op.MAP, Code.OK, entity=e, record=2, frame=1, etype=T, stage=0,
                          busy=0, hold=1, buf=2, addr=3, lines=3)
    r3 = m.map_frame(e, 3, 1)
    assert (r3.record, r3.addr, r3.frame) == (3, 6, 3)
    assert m.search(e, 1) == r1.__class__(Op.SEARCH, Code.OK, **{
        k: getattr(r1, k) for k in ("entity", "record", "frame", "etype", "stage", "busy",
                                    "hold", "buf", "addr", "lines")})
    hit = m.search(e, 0)
    assert hit.hit and (hit.record, hit.frame, hit.stage, hit.lines) == (0, 0, 0, 2)
    miss = m.search(e, 2)
    assert miss == Response(Op.SEARCH, Code.MISS) and not miss.hit and not miss.error
    assert m.search(200, 0).code == Code.MISS
    assert not m.error
    assert sorted(m.entity_info(e)) == [0, 1, 3]
    assert m.status() == (4, 6, 25, 25, False)


def test_free_run_tells_whether_alloc_finds_its_lines():
    """With lines scattered by random allocations and deletions, an ALLOC of n lines is
    accepted if and only if the status showed a free run of at least n lines, whatever
    the count of free lines (decision 14), and then first fit finds its lines (decision
    13: the run lags, so it never says more than the state has); settled for RUN_DELAY
    idle clocks, the status is the longest run exactly. Unsettled, an ALLOC that first
    fit could place is refused while the run lags (the cost of decision 14)."""
    rng = np.random.default_rng(11)
    m = small(records=64, entities=64, lines=48)
    m.configure(S, [(M, 0)])
    passes = refusals = settled = lagged = lag_refused = 0
    for _ in range(3000):
        live = m.live_entities()
        if live and rng.random() < 0.4:
            m.delete(int(rng.choice(live)))
            continue
        n = int(rng.integers(1, 9))
        if rng.random() < 0.3:
            settle(m)
            settled += 1
            assert m.status().free_run == m.longest_free_run()
        st, exact = m.status(), m.longest_free_run()
        assert st.free_run <= exact
        lagged += st.free_run < exact
        r = m.allocate(S, n, hold=True)
        if st.free_records and st.free_entities:
            assert r.ok == (st.free_run >= n), (st, n, r)
            assert r.ok <= (exact >= n), (exact, n, r)
            passes += r.ok
            refusals += r.code == Code.NO_LINES and st.free_lines >= n
            lag_refused += not r.ok and exact >= n
        m.run([DRAIN])                   # held and done: a DELETE frees it at once
    assert passes > 100 and refusals > 10       # scattered lines that were not enough
    assert settled > 100 and lagged > 100 and lag_refused > 10


def test_free_run_lags_by_four_clocks_less_what_was_taken():
    """Decision 13: ``free_run`` in cycle t is the longest run of S_{t-4} less the lines
    taken in cycles t-4..t-1; lines freed by the reaper show 4 clocks after they are
    counted in ``free_lines``."""
    m = small(records=8, entities=8, lines=32)
    m.configure(S, [(M, 0)])
    settle(m)
    runs = []
    for n in (3, 5, 2):                  # lines 0-2, 3-7, 8-9: taken at once
        m.allocate(S, n, hold=True)
        runs.append(m.status().free_run)
    for _ in range(RUN_DELAY + 1):
        m.step(n_ready=False, m_ready=False)
        runs.append(m.status().free_run)
    assert runs == [29, 24, 22, 22, 22, 22, 22, 22]
    m.run([DRAIN])
    settle(m)
    assert m.release(2).ok               # lines 8-9, freed by the reaper
    lines, runs = [], []
    for _ in range(9):                   # the start of t+1 .. t+9
        lines.append(m.status().free_lines)
        runs.append(m.status().free_run)
        m.step(n_ready=False, m_ready=False)
    assert lines == [22, 22, 22, 24, 24, 24, 24, 24, 24]
    assert runs == [22, 22, 22, 22, 22, 22, 22, 24, 24]
    # a buffer taken from a shorter run than the longest lowers the run for 4 clocks
    assert m.release(0).ok
    assert settle(m).free_run == 24      # lines 0-2 and 8-31 free
    assert m.allocate(S, 3, hold=True).addr == 0
    runs = [m.status().free_run]
    for _ in range(RUN_DELAY):
        m.step(n_ready=False, m_ready=False)
        runs.append(m.status().free_run)
    assert runs == [21, 21, 21, 21, 24] and m.longest_free_run() == 24


def test_map_refusals_are_not_errors():
    m = small(records=3, lines=8)
    e = m.allocate(V, 4).entity
    m.allocate(V, 2)
    before = m.snapshot()
    assert m.map_frame(e, 1, 3).code == Code.NO_LINES     # 2 lines left
    assert m.map_frame(e, 1, 2).ok
    assert m.map_frame(e, 2, 1).code == Code.NO_RECORD
    assert not m.error and m.snapshot() != before


def test_delete_frees_everything():
    m = small()
    e = m.allocate(V, 2).entity
    m.map_frame(e, 1, 4)
    m.map_frame(e, 2, 1)
    other = m.allocate(P, 1)
    assert m.status() == (4, 6, 24, 24, False)
    assert m.delete(e) == Response(Op.DELETE, Code.OK, entity=e)
    assert m.status() == (4, 6, 24, 24, False) and m.dead_records() == [0, 1, 2]
    # gone for every request at once, but not free until the reaper has been
    for f in range(3):
        assert not m.search(e, f).hit
    assert m.translate(0, 0).code == Code.UNKNOWN and m.complete(0) == Code.UNKNOWN
    assert m.queue(V, 0) == ()
    assert m.queue(P, 0) == (other.record,)
    reap(m)
    # all but the queued frame-0 record; that one waits as a tombstone
    assert m.status() == (6, 7, 31, 24, True) and m.tombstones() == [0]
    assert m.dead_records() == [] and m.live_entities() == [other.entity]
    m.check()


def test_reaper_frees_one_record_a_clock():
    """Decision 12: killed in cycle t, picked in t+1, one record walked a clock from t+2,
    each freed with its lines in the clock after its walk, the entity number with the
    last; the record and the number count as free a clock after their lines (decision
    18). Records are walked in frame order, not record order."""
    m = small()
    e = m.allocate(S, 2, hold=True).entity           # record 0, lines 0-1
    m.allocate(S, 1, hold=True)                      # record 1, line 2 (stays)
    m.map_frame(e, 2, 1)                             # record 2, line 3
    m.map_frame(e, 1, 3)                             # record 3, lines 4-6
    m.run([DRAIN])                                   # done and held: no tombstone
    assert m.status() == (4, 6, 25, 25, False)
    assert m.release(e).ok                           # cycle t
    got = []
    for _ in range(10):                              # status at the start of t+1..t+10
        got.append(tuple(m.status()[:4]))
        m.step(n_ready=False, m_ready=False)
    # (``free_run`` shows the longest run 4 clocks late: 25, 28 and 29 from t+4)
    assert got == [(4, 6, 25, 25),                   # t+1: picked
                   (4, 6, 25, 25),                   # t+2: frame 0 (record 0) walked
                   (4, 6, 25, 25),                   # t+3: record 0 freed, frame 1 walked
                   (4, 6, 27, 25),                   # t+4: record 3 freed, frame 2 walked
                   (5, 6, 30, 25),                   # t+5: record 2 and the entity freed
                   (6, 6, 31, 25),                   # t+6: (record 2, the entity cool)
                   (7, 7, 31, 25), (7, 7, 31, 25),
                   (7, 7, 31, 28), (7, 7, 31, 29)]
    assert m.reaped() and m.idle()
    m.check()


def test_reaper_takes_the_lowest_dead_entity_first():
    m = small()
    for _ in range(3):
        m.allocate(S, 1, hold=True)
    m.run([DRAIN])
    assert m.release(2).ok                           # t: dies first
    assert m.release(0).ok                           # t+1: 2 picked; 0 dies
    assert m.release(1).ok                           # t+2: 2 walked, 0 picked; 1 dies
    m.step(n_ready=False, m_ready=False)             # t+3: 2 freed, 0 walked, 1 picked
    assert m.status()[:3] == (5, 5, 30)              # (record and number 2 cool: 18)
    m.step(n_ready=False, m_ready=False)             # t+4: 0 freed, 1 walked
    assert m.status()[:3] == (6, 6, 31)
    m.step(n_ready=False, m_ready=False)             # t+5: 1 freed
    assert m.status()[:3] == (7, 7, 32) and m.allocate(S, 1).entity == 3   # (1 cools)
    assert reap(m) == 0 and m.status()[:3] == (7, 7, 31)    # 1 free by that clock
    # numbers are taken in the order they were freed (decision 19): the reaper's 2, 0, 1
    assert [m.allocate(S, 1).entity for _ in range(7)] == [4, 5, 6, 7, 2, 0, 1]


def test_delete_queued_entity_keeps_fifo_order():
    m = small()
    recs = [m.allocate(V, 1).record for _ in range(4)]
    assert m.delete(1).ok
    assert m.queue(V, 0) == (recs[0], recs[2], recs[3]) and m.tombstones() == [1]
    assert m.allocate(V, 1).record == 4               # record 1 is not free yet
    m.check()
    got = [[i.record for i in m.step()] for _ in range(6)]
    # (V, 0) was decided on in the second ALLOC's clock: issue 0, drop the tombstone
    # (no issue), issue 2, 3, 4
    assert got == [[0], [], [2], [3], [4], []]
    assert m.tombstones() == [] and m.allocate(V, 1).record == 1
    m.check()


# ---------------------------------------------------------------- stage parser

def test_default_programs():
    assert [len(p) for p in DEFAULT_PROGRAMS] == [6, 6, 7, 3, 1]
    for t, p in enumerate(DEFAULT_PROGRAMS):
        assert [s.desc for s in p] == [t << 4 | i for i in range(len(p))]
    m = small()
    for t in range(N_TYPES):
        assert m.program(t) == DEFAULT_PROGRAMS[t]


@pytest.mark.parametrize("etype, kinds", [
    (V, [M, N, M, N, N, M]),
    (T, [M, N, M, N, N, M]),
    (P, [N, N, M, N, M, N, M]),
    (PA, [M, N, M]),
    (S, [M]),
])
def test_default_program_issue_sequence(etype, kinds):
    m = small()
    r = m.allocate(etype, 2)
    issues = run_one(m, r.record)
    assert kd(issues) == [(k, etype << 4 | s) for s, k in enumerate(kinds)]
    assert [i.stage for i in issues] == list(range(len(kinds)))
    assert all(i.entity == r.entity and i.etype == etype and i.buf == r.record
               for i in issues)
    assert not m.search(r.entity).hit                    # dead after the last stage
    assert settle(m) == (8, 8, 32, 32, False)


def test_issue_sets_busy_and_completion_advances():
    m = small()
    r = m.allocate(V, 1).record
    assert m.search(0).busy == 0
    assert m.step() == []                           # (V, 0) decided on (decision 17)
    (iss,) = m.step()
    assert iss == Issue(M, r, 0, V, 0, 0x00, r)
    s = m.search(0)
    assert (s.busy, s.stage) == (1, 0)
    assert m.step() == []                           # busy: nothing to issue
    assert m.complete(r) == Code.OK
    s = m.search(0)
    assert (s.busy, s.stage) == (0, 1)
    assert m.queue(V, 1) == (r,)


def test_later_stage_first():
    m = small()
    assert m.configure(V, [(M, 0xA0), (M, 0xA1), (M, 0xA2)]).ok
    a, b, c, d = (m.allocate(V, 1).record for _ in range(4))
    assert m.decision(M) == (V, 0)                   # decided in b's ALLOC clock
    assert [i.record for i in m.step()] == [a]       # and (V, 0) decided again (b)
    m.complete(a)                                    # a joins stage 1 a clock later (16)
    assert [(i.record, i.stage) for i in m.step()] == [(b, 0)]    # decided before
    assert [(i.record, i.stage) for i in m.step()] == [(c, 0)]    # decided before a's push
    assert [(i.record, i.stage) for i in m.step()] == [(a, 1)]    # drain before fill (d)
    m.complete(a)
    assert [(i.record, i.stage) for i in m.step()] == [(d, 0)]
    assert m.step() == []                            # a pushed, decided
    assert [(i.record, i.stage) for i in m.step()] == [(a, 2)]
    m.complete(a)                                    # a is done and deleted
    reap(m)
    assert m.status().free_records == 8 - 3


def test_round_robin_among_types():
    m = small()
    v1, v2 = m.allocate(V, 1).record, m.allocate(V, 1).record
    t1 = m.allocate(T, 1).record
    s1, s2 = m.allocate(S, 1).record, m.allocate(S, 1).record
    # MOVE pointer starts at type 4: type 0 first, then 1, 2, 3, 4, 0, ...
    got = [(i.etype, i.record) for _ in range(5) for i in m.step()]
    assert got == [(V, v1), (T, t1), (S, s1), (V, v2), (S, s2)]
    assert m.step() == []


def test_round_robin_pointer_per_kind_and_held_when_not_ready():
    m = small(records=16, entities=16)
    px = [m.allocate(P, 1).record for _ in range(2)]     # NUMERIC first stage
    vx = [m.allocate(V, 1).record for _ in range(2)]     # MOVE first stage
    tr = [m.allocate(T, 1).record for _ in range(2)]
    assert (m.decision(N), m.decision(M)) == ((P, 0), (V, 0))
    res = m.cycle(n_ready=False, m_ready=True)
    assert res.n_issue is None and res.m_issue.record == vx[0]
    assert m.decision(N) == (P, 0) and m.decision(M) == (T, 0)   # NUMERIC: kept
    res = m.cycle(n_ready=True, m_ready=False)          # NUMERIC pointer still at 2
    assert res.n_issue.record == px[0] and res.m_issue is None
    res = m.cycle()
    assert (res.n_issue.record, res.m_issue.record) == (px[1], tr[0])
    res = m.cycle()
    assert res.n_issue is None and res.m_issue.record == vx[1]
    assert m.cycle().m_issue.record == tr[1]


def test_round_robin_offers_each_types_latest_stage():
    m = small()
    m.configure(V, [(M, 1), (M, 2), (M, 3)])
    v = m.allocate(V, 1).record
    run = [i for _ in range(3) for i in m.step()]   # offered, decided, issued (17)
    m.complete(v)
    run += [i for _ in range(3) for i in m.step()]   # pushed, decided, issued (16)
    assert [(i.record, i.stage) for i in run] == [(v, 0), (v, 1)]
    # v and t offered from the same clock: a completion's push and ALLOC's record both
    # a clock late (decisions 16 and 17)
    res = m.cycle(cmd=Command.alloc(T, 1), mcompl=v, n_ready=False, m_ready=False)
    t = res.resp.record
    assert m.step() == [] and m.decision(M) is None
    # pointer is at type 0 (v decided last): type 1's stage 0 goes before type 0's stage 2
    assert m.step() == [] and m.decision(M) == (T, 0)
    assert [(i.record, i.stage) for i in m.step()] == [(t, 0)]
    assert [(i.record, i.stage) for i in m.step()] == [(v, 2)]


def test_out_of_order_completions_keep_arrival_order():
    m = small()
    a, b, c = (m.allocate(V, 1).record for _ in range(3))
    assert [i.record for _ in range(4) for i in m.step()] == [a, b, c]
    for r in (c, a, b):
        m.complete(r)
    assert m.queue(V, 1) == (c, a)                   # b's push: at the end of the next clock
    m.step(n_ready=False, m_ready=False)
    assert m.queue(V, 1) == (c, a, b)
    assert [i.record for _ in range(4) for i in m.step()] == [c, a, b]


def test_two_issues_per_cycle():
    m = small()
    p = m.allocate(P, 1).record
    v = m.allocate(V, 1).record
    for _ in range(2):                               # both ports decided (decision 17)
        assert m.cycle(n_ready=False, m_ready=False).issues == []
    res = m.cycle()
    assert (res.n_issue.record, res.m_issue.record) == (p, v)
    res = m.cycle(ncompl=p, mcompl=v)
    assert (res.ncode, res.mcode) == (Code.OK, Code.OK)
    assert res.issues == []                          # visible from the next cycle
    assert m.step() == [] and m.decision(N) is None  # pushed at its end (decision 16)
    # both now wait in a NUMERIC stage 1; the NUMERIC pointer is at pixel (2): 3, 4, 0 ...
    assert m.step() == [] and m.decision(N) == (V, 1)
    assert [(i.kind, i.record, i.stage) for i in m.step()] == [(N, v, 1)]
    assert [(i.kind, i.record, i.stage) for i in m.step()] == [(N, p, 1)]


def test_always_ready_ports_issue_every_clock():
    """With decisions made a clock ahead, each port still issues every clock."""
    m = small(records=16, entities=16, lines=64)
    for _ in range(6):
        m.allocate(P, 1)                             # NUMERIC stage 0
        m.allocate(S, 1)                             # MOVE stage 0
    # both decided during the ALLOCs
    assert [sorted(i.kind for i in m.step()) for _ in range(7)] == [[N, M]] * 6 + [[]]


def test_hold_and_release():
    m = small()
    r = m.allocate(V, 2, hold=True)
    m.map_frame(r.entity, 1, 1)
    assert len(run_one(m, r.record)) == 6
    s = m.search(r.entity)
    assert (s.hit, s.stage, s.busy, s.hold) == (True, DONE_STAGE, 0, 1)
    assert m.status() == (6, 7, 29, 29, False)
    assert m.step() == []
    assert m.release(r.entity) == Response(Op.RELEASE, Code.OK, entity=r.entity)
    assert reap(m) == 5                              # two records, a clock cooling (18)
    assert settle(m) == (8, 8, 32, 32, False)
    assert m.release(r.entity).code == Code.UNKNOWN and m.error


def test_delete_of_held_entity():
    m = small()
    r = m.allocate(S, 1, hold=True)
    run_one(m, r.record)
    assert m.delete(r.entity).ok
    assert settle(m) == (8, 8, 32, 32, False) and not m.error


def test_configure():
    m = small()
    assert m.configure(V, [(N, 0x77), (M, 0x78), (N, 0x79)], nstages=2) == \
        Response(Op.CONFIG, Code.OK, etype=V)
    assert m.program(V) == (Stage(N, 0x77), Stage(M, 0x78))
    r = m.allocate(V, 1).record
    assert kd(run_one(m, r)) == [(N, 0x77), (M, 0x78)]


def test_configure_refused_while_type_in_flight_not_while_held():
    m = small()
    r = m.allocate(S, 1, hold=True).record
    prog = [(N, 5)]
    assert m.configure(S, prog).code == Code.BUSY          # queued
    m.step()                                               # decided (decision 17)
    m.step()                                               # issued
    assert m.configure(S, prog).code == Code.BUSY          # busy
    m.complete(r)
    assert m.configure(S, prog).ok                         # held only
    assert m.configure(V, prog).ok                         # other types are free anyway


# ---------------------------------------------------------------- ART

def test_first_fit_with_fragmentation():
    m = small(records=8, lines=16)
    assert [m.allocate(S, 4).addr for _ in range(4)] == [0, 4, 8, 12]
    m.delete(1)
    m.delete(3)                                       # free: 4..7, 12..15
    reap(m)
    assert m.status().free_run == 0                   # freed, not yet in free_run
    assert m.allocate(S, 1).code == Code.NO_LINES     # decision 14: accepted on free_run
    assert settle(m).free_run == 4
    before = m.snapshot()
    assert m.allocate(S, 5).code == Code.NO_LINES     # 8 lines free, no run of 5
    assert m.snapshot() == before
    assert m.allocate(S, 3).addr == 4
    assert m.status().free_run == 1                   # 4 less the 3 taken
    assert m.allocate(S, 2).code == Code.NO_LINES     # 12..15 free, free_run lags
    assert settle(m).free_run == 4
    assert m.allocate(S, 2).addr == 12                # 7 is a run of 1 only
    assert settle(m).free_run == 2
    assert m.allocate(S, 1).addr == 7
    assert settle(m).free_run == 2
    assert m.allocate(S, 2).addr == 14
    assert m.status().free_lines == 0


def test_translate():
    m = small()
    m.allocate(S, 3)
    r = m.allocate(S, 5)
    assert m.translate(r.buf, 0) == Response(Op.TRANSLATE, Code.OK, buf=1, addr=3, lines=5)
    assert m.translate(r.buf, 4).addr == 7
    assert not m.error
    assert m.translate(r.buf, 5) == Response(Op.TRANSLATE, Code.RANGE) and m.error


# ---------------------------------------------------------------- bad input

def standard():
    """e0: busy in MOVE stage 0 (rec 0) with frame 1 (rec 3); e1 queued (rec 1);
    e2: state entity done and held (rec 2); e3: deleted while queued, its record 4 a
    tombstone at the head of (S, 0), e4 (rec 5) behind it."""
    m = small(records=8, entities=8, lines=32, frames=4)
    assert m.allocate(V, 2).ok and m.allocate(V, 2).ok
    assert m.allocate(S, 1, hold=True).ok
    assert m.map_frame(0, 1, 1).record == 3
    assert m.cycle(n_ready=False).m_issue.record == 0
    assert m.cycle(n_ready=False).m_issue.record == 2
    assert m.complete(2) == Code.OK
    assert m.allocate(S, 1).record == 4 and m.allocate(S, 1).record == 5
    assert m.delete(3).ok and m.tombstones() == [4]
    reap(m)
    assert not m.error
    return m


C = Command
BAD = [
    ("op 7", dict(cmd=C(7)), "resp", Code.BAD_OP),
    ("query ALLOC", dict(query=C.alloc(V, 1)), "qresp", Code.BAD_OP),
    ("query CONFIG", dict(query=C.config(P, [(N, 1)])), "qresp", Code.BAD_OP),
    ("query op 7", dict(query=C(7)), "qresp", Code.BAD_OP),
    ("config etype 5", dict(cmd=C.config(5, [(N, 1)])), "resp", Code.BAD_ARG),
    ("config no stages", dict(cmd=C.config(P, [])), "resp", Code.BAD_ARG),
    ("config 9 stages", dict(cmd=C.config(P, [(N, 1)] * 8, nstages=9)), "resp", Code.BAD_ARG),
    ("config type in flight", dict(cmd=C.config(V, [(N, 1)])), "resp", Code.BUSY),
    ("alloc etype 5", dict(cmd=C.alloc(5, 1)), "resp", Code.BAD_ARG),
    ("alloc etype 7", dict(cmd=C.alloc(7, 1)), "resp", Code.BAD_ARG),
    ("alloc 0 lines", dict(cmd=C.alloc(V, 0)), "resp", Code.BAD_ARG),
    ("alloc 9 lines", dict(cmd=C.alloc(V, 9)), "resp", Code.BAD_ARG),
    ("alloc 15 lines", dict(cmd=C.alloc(V, 15)), "resp", Code.BAD_ARG),
    ("map 0 lines", dict(cmd=C.map(1, 1, 0)), "resp", Code.BAD_ARG),
    ("map 9 lines", dict(cmd=C.map(1, 1, 9)), "resp", Code.BAD_ARG),
    ("map frame >= frames", dict(cmd=C.map(1, 4, 1)), "resp", Code.BAD_ARG),
    ("map frame 15", dict(cmd=C.map(1, 15, 1)), "resp", Code.BAD_ARG),
    ("map unknown entity", dict(cmd=C.map(5, 1, 1)), "resp", Code.UNKNOWN),
    ("map entity 255", dict(cmd=C.map(255, 1, 1)), "resp", Code.UNKNOWN),
    ("map frame 0", dict(cmd=C.map(1, 0, 1)), "resp", Code.MAPPED),
    ("map mapped frame", dict(cmd=C.map(0, 1, 1)), "resp", Code.MAPPED),
    ("delete unknown", dict(cmd=C.delete(5)), "resp", Code.UNKNOWN),
    ("delete busy", dict(cmd=C.delete(0)), "resp", Code.BUSY),
    ("release unknown", dict(cmd=C.release(7)), "resp", Code.UNKNOWN),
    ("release queued", dict(cmd=C.release(1)), "resp", Code.NOT_HELD),
    ("release busy", dict(cmd=C.release(0)), "resp", Code.NOT_HELD),
    ("translate unused buf", dict(cmd=C.translate(7, 0)), "resp", Code.UNKNOWN),
    ("translate buf >= records", dict(query=C.translate(200, 0)), "qresp", Code.UNKNOWN),
    ("translate past length", dict(cmd=C.translate(0, 2)), "resp", Code.RANGE),
    ("translate offset 15", dict(query=C.translate(3, 15)), "qresp", Code.RANGE),
    ("done on wrong port", dict(ncompl=0), "ncode", Code.NOT_BUSY),
    ("done of queued record", dict(mcompl=1), "mcode", Code.NOT_BUSY),
    ("done of held record", dict(mcompl=2), "mcode", Code.NOT_BUSY),
    ("done of frame-1 record", dict(mcompl=3), "mcode", Code.NOT_BUSY),
    ("done of free record", dict(mcompl=7), "mcode", Code.UNKNOWN),
    ("done of record >= records", dict(ncompl=255), "ncode", Code.UNKNOWN),
    ("done of a tombstone", dict(mcompl=4), "mcode", Code.UNKNOWN),
    ("done of a record already issued and completed", dict(mcompl=2), "mcode",
     Code.NOT_BUSY),
    ("delete of a deleted entity", dict(cmd=C.delete(3)), "resp", Code.UNKNOWN),
    ("release of a deleted entity", dict(cmd=C.release(3)), "resp", Code.UNKNOWN),
    ("translate of a tombstone", dict(query=C.translate(4, 0)), "qresp", Code.UNKNOWN),
]


@pytest.mark.parametrize("name, kw, port, code", BAD, ids=[b[0] for b in BAD])
def test_bad_input_ignored_with_sticky_error(name, kw, port, code):
    m = standard()
    before, status = m.snapshot(), m.status()
    res = m.cycle(n_ready=False, m_ready=False, **kw)
    got = getattr(res, port)
    if port in ("resp", "qresp"):
        assert got == Response(kw["cmd" if port == "resp" else "query"].op, code)
        assert got.error and not got.ok
    else:
        assert got == code
    assert m.snapshot() == before
    assert m.status() == status._replace(error=True)
    m.check()
    m.step()                                          # the flag is sticky
    assert m.error


def test_normal_outcomes_leave_error_clear():
    m = standard()
    m.search(6, 0)                                    # miss
    for _ in range(6):
        m.allocate(P, 8)                              # ends in NO_LINES / NO_RECORD
    m.translate(0, 1)
    m.release(2)
    assert not m.error


# ---------------------------------------------------------------- same-cycle rules

def test_delete_of_entity_issued_in_the_same_cycle():
    m = small()
    e = m.allocate(S, 1).entity
    for _ in range(2):                               # decided (decision 17)
        assert m.cycle(n_ready=False, m_ready=False).issues == []
    res = m.cycle(cmd=Command.delete(e))
    assert res.resp.code == Code.BUSY and res.m_issue.entity == e and m.error
    assert m.complete(res.m_issue.record) == Code.OK
    reap(m)
    assert m.status()[:3] == (8, 8, 32)


def test_delete_of_entity_decided_on_but_not_issued():
    """The port is not ready: the entity is deleted, and the decision drops its
    tombstone when the port is ready again."""
    m = small()
    e = m.allocate(S, 1).entity
    for _ in range(2):                               # (decision 17)
        m.cycle(n_ready=False, m_ready=False)
    assert m.decision(M) == (S, 0)
    res = m.cycle(cmd=Command.delete(e), m_ready=False)
    assert res.resp.ok and res.issues == [] and m.tombstones() == [0]
    assert m.status()[:3] == (7, 7, 31)               # dead, not yet reaped
    assert m.step() == [] and m.tombstones() == [] and m.decision(M) is None
    assert reap(m) == 3                               # picked in that step; cooling (18)
    assert settle(m) == (8, 8, 32, 32, False) and m.idle()


def test_search_sees_the_state_at_the_start_of_the_cycle():
    m = small()
    res = m.cycle(cmd=Command.alloc(S, 1), query=Command.search(0))
    assert res.resp.ok and res.qresp.code == Code.MISS
    for _ in range(2):                               # decided (decision 17)
        assert m.cycle(n_ready=False, m_ready=False).issues == []
    res = m.cycle(cmd=Command.search(0), query=Command.search(0))
    assert res.resp == res.qresp
    assert res.resp.busy == 0 and res.m_issue.entity == 0   # issued, not yet busy
    assert m.search(0).busy == 1


def test_alloc_does_not_see_resources_freed_in_the_same_cycle():
    m = small(records=1)
    r = m.allocate(S, 1).record
    assert [i.record for _ in range(3) for i in m.step()] == [r]
    res = m.cycle(cmd=Command.alloc(S, 1), mcompl=r)     # cycle t: the entity dies
    assert res.mcode == Code.OK and res.resp.code == Code.NO_RECORD
    # (by a completion: decision 15) t+2 picked, t+3 walked, t+4 freed, t+5 cooling
    # (decision 18): an ALLOC sees the record from t+6
    assert [m.allocate(S, 1).code for _ in range(6)] == [Code.NO_RECORD] * 5 + [Code.OK]


def test_freed_record_and_number_cool_for_a_cycle():
    """Decision 18: an entity number the reaper frees in cycle t, and a record whose
    tombstone is dropped in t (reaped before), are neither in use nor free in t+1 (not
    counted, not taken) and free from t+2. (Before decision 18: free from t+1.)"""
    m = small(records=2)
    e = m.allocate(S, 1).entity                      # entity 0, record 0
    m.allocate(S, 1)                                 # entity 1, record 1
    assert m.command(Command.delete(e)).ok           # t0: queued, a tombstone
    got = []
    for _ in range(5):                               # status at the start of t0+1..t0+5
        got.append(m.status()[:2])
        m.step(n_ready=False, m_ready=False)
    # picked in t0+1, walked in t0+2, freed in t0+3 with its number, which cools in t0+4;
    # record 0 stays a tombstone
    assert got == [(0, 6)] * 4 + [(0, 7)]
    assert m.tombstones() == [0] and m.decision(M) == (S, 0)
    res = m.cycle(n_ready=False, m_ready=True)       # t: the tombstone is dropped
    assert res.issues == [] and m.tombstones() == []
    assert m.status()[0] == 0                        # t+1: record 0 cools
    assert m.command(Command.alloc(S, 1)).code == Code.NO_RECORD
    assert m.status()[0] == 1                        # t+2: free
    r = m.allocate(S, 1)
    assert (r.code, r.record, r.entity) == (Code.OK, 0, 2)   # 0 is last in the list (19)
    m.check()


def test_config_counts_a_tombstone_dropped_in_its_clock():
    """Decision 20: CONFIG's check reads the FIFOs of S_t, so a tombstone the port drops
    in CONFIG's own clock still makes the type busy (before: OK)."""
    m = small()
    e = m.allocate(S, 1).entity
    for _ in range(3):                               # decided on, the port stalled
        m.step(n_ready=False, m_ready=False)
    assert m.decision(M) == (S, 0)
    assert m.cycle(cmd=Command.delete(e), n_ready=False, m_ready=False).resp.ok
    assert m.tombstones() == [0]
    res = m.cycle(cmd=Command.config(S, [(M, 1)]), n_ready=False, m_ready=True)
    assert res.issues == [] and m.tombstones() == []  # dropped in this clock
    assert res.resp.code == Code.BUSY
    assert m.configure(S, [(M, 1)]).ok               # the clock after: not in flight
    m.check()


def test_entity_numbers_taken_in_the_order_freed():
    """Decision 19: ALLOC takes the entity number free the longest (from reset 0, 1,
    ...; the reaper appends what it frees), not the lowest; a number the reaper frees in
    cycle t is not taken in t+1 (decision 18) even when it is the only one. (Before
    decision 19 the ALLOCs below took 0, then 1.)"""
    m = small(entities=3)
    a, b, c = (m.allocate(S, 1, hold=True).entity for _ in range(3))
    assert (a, b, c) == (0, 1, 2)
    m.run([DRAIN])
    assert m.release(b).ok
    while m.status().free_entities == 0:             # 1 freed in t-1, cools in t
        assert m.command(Command.alloc(S, 1)).code == Code.NO_ENTITY
    assert m.release(a).ok
    reap(m)
    assert [m.allocate(S, 1).entity for _ in range(2)] == [1, 0]
    m.check()


def test_completion_kill_reaches_the_reaper_a_cycle_later():
    """Decision 15: an entity killed by its last completion in cycle t is gone from
    t+1, as one killed by a command, but the reaper sees it only from t+2: one killed
    by RELEASE in t+1 with a lower number is picked before it (before decision 15, it
    was picked in t+1, alone)."""
    m = small()
    b = m.allocate(S, 1, hold=True)                  # entity 0, record 0
    m.run([DRAIN])                                   # done, held
    c = m.allocate(S, 1)                             # entity 1, record 1
    assert (b.entity, c.entity) == (0, 1)
    assert [i.record for _ in range(3) for i in m.step()] == [c.record]
    res = m.cycle(mcompl=c.record, n_ready=False, m_ready=False)   # t: entity 1 dies
    assert res.mcode == Code.OK
    res = m.cycle(cmd=Command.release(b.entity), query=Command.search(c.entity),
                  n_ready=False, m_ready=False)      # t+1: entity 0 dies; 1 is gone
    assert res.resp.ok and res.qresp.code == Code.MISS
    got = []
    for _ in range(6):                               # status at the start of t+2..t+7
        got.append(tuple(m.status()[:3]))
        m.step(n_ready=False, m_ready=False)
    # entity 0 picked in t+2, walked in t+3, freed in t+4 (free from t+6: decision 18);
    # entity 1 picked in t+3, walked in t+4, freed in t+5
    assert got == [(6, 6, 30)] * 3 + [(6, 6, 31), (7, 7, 32), (8, 8, 32)]
    assert m.reaped()


def test_map_with_last_completion_in_the_same_cycle():
    m = small()
    r = m.allocate(S, 1)
    assert [i.record for _ in range(3) for i in m.step()] == [r.record]
    res = m.cycle(cmd=Command.map(r.entity, 1, 2), mcompl=r.record)
    assert res.resp.ok and res.resp.record == 1
    assert not m.search(r.entity, 1).hit             # dead with the entity
    assert m.dead_records() == [0, 1]
    m.check()
    reap(m)
    assert m.status()[:3] == (8, 8, 32)


def test_completion_of_record_issued_in_the_same_cycle():
    m = small()
    r = m.allocate(S, 1).record
    for _ in range(2):                               # decided (decision 17)
        assert m.cycle(n_ready=False, m_ready=False).issues == []
    res = m.cycle(mcompl=r)
    assert res.m_issue.record == r and res.mcode == Code.NOT_BUSY and m.error
    assert m.search(0).busy == 1


def test_issue_decided_a_clock_ahead():
    """An entity ALLOC pushes in cycle t into an empty FIFO is decided on in t+2 and
    issued in t+3 (decision 17; before it, in t+1 and t+2), and the decision is kept
    (not redone) while the port is not ready."""
    m = small()
    r = m.allocate(V, 1).record                      # cycle t: pushed into (V, 0)
    assert m.decision(M) is None
    assert m.step() == [] and m.decision(M) is None              # t+1: not offered
    assert m.step() == [] and m.decision(M) == (V, 0)            # t+2
    assert [i.record for i in m.step()] == [r] and m.decision(M) is None   # t+3


def test_completion_push_reaches_its_fifo_a_cycle_later():
    """Decision 16: a completion in cycle t moves its entity to the next stage at once
    (a search shows it), but its record joins that stage's FIFO at the end of t+1, so
    it is decided on in t+2 and issued in t+3; meanwhile it counts as queued (CONFIG
    of its type is refused). Before decision 16 it was in the FIFO from t+1, decided on
    in t+1 and issued in t+2."""
    m = small()
    r = m.allocate(V, 1).record                      # MOVE, then NUMERIC stage 1
    assert [i.record for _ in range(3) for i in m.step()] == [r]
    assert m.cycle(mcompl=r, n_ready=False, m_ready=False).mcode == Code.OK   # t
    assert m.queue(V, 1) == ()
    res = m.cycle(cmd=Command.config(V, [(N, 1)]), query=Command.search(0))  # t+1
    assert (res.qresp.stage, res.qresp.busy) == (1, 0) and res.resp.code == Code.BUSY
    assert m.decision(N) is None and m.queue(V, 1) == (r,)
    assert m.step() == [] and m.decision(N) == (V, 1)                         # t+2
    assert [(i.record, i.stage) for i in m.step()] == [(r, 1)]


def test_delete_while_a_completion_pushes():
    """Decision 16: an entity deleted in the clock between its completion and its
    push is queued: its record is pushed as a tombstone, which the decision drops."""
    m = small()
    r = m.allocate(V, 1)
    assert [i.record for _ in range(3) for i in m.step()] == [r.record]
    m.complete(r.record)                             # t
    assert m.delete(r.entity).ok                     # t+1: the push still to come
    assert m.tombstones() == [r.record] and m.queue(V, 1) == ()
    m.check()
    assert m.step() == [] and m.decision(N) == (V, 1)   # the tombstone decided on
    assert m.step() == [] and m.tombstones() == []      # and dropped, no issue
    assert settle(m) == (8, 8, 32, 32, False) and m.idle()


def test_alloc_push_offered_a_clock_later_unless_behind_a_record():
    """Decision 17: a stage-0 FIFO is offered only if it held a record after the last
    clock's pop, before that clock's ALLOC pushed: a record pushed into a FIFO that the
    pop of the same clock empties waits a clock more, one pushed behind a waiting
    record is issued right after it (before decision 17, b was decided on in u+1)."""
    m = small()
    a = m.allocate(S, 1).record                          # t
    assert m.step() == [] and m.decision(M) is None       # t+1
    assert m.step() == [] and m.decision(M) == (S, 0)     # t+2
    res = m.cycle(cmd=Command.alloc(S, 1))               # u: a popped, b pushed
    b = res.resp.record
    assert res.m_issue.record == a and m.decision(M) is None
    res = m.cycle(cmd=Command.alloc(S, 1))               # u+1: b not offered, c pushed
    c = res.resp.record
    assert res.issues == [] and m.decision(M) is None
    assert [[i.record for i in m.step()] for _ in range(3)] == [[], [b], [c]]


def test_not_ready_holds_the_issue():
    m = small()
    m.allocate(V, 1)
    for _ in range(3):
        assert m.step(m_ready=False) == []
    assert [i.record for i in m.step()] == [0]


# ---------------------------------------------------------------- runner

def test_run_default_programs_fixed_latency():
    m = small(records=16, entities=16, lines=64)
    script = [Command.alloc(t, 1) for t in range(N_TYPES)]
    res = m.run(script, latency=3)
    assert [r.ok for _, _, r in res.responses] == [True] * 5
    per_entity = {}
    for _, i in res.issues:
        per_entity.setdefault(i.entity, []).append((i.kind, i.desc))
    for t in range(N_TYPES):
        assert per_entity[t] == [(s.kind, s.desc) for s in DEFAULT_PROGRAMS[t]]
    assert len(res.completions) == len(res.issues) == sum(map(len, DEFAULT_PROGRAMS))
    assert settle(m) == (16, 16, 64, 64, False) and m.idle()
    again = small(records=16, entities=16, lines=64).run(script, latency=3)
    assert again == res


def test_run_latency_sequence_gives_out_of_order_completions():
    m = small()
    script = [Command.alloc(S, 1) for _ in range(3)]
    res = m.run(script, latency=[9, 5, 1])
    assert [i.record for _, i in res.issues] == [0, 1, 2]
    assert [r for _, _, r in res.completions] == [2, 1, 0]


def test_run_drain_and_release():
    m = small()
    script = [Command.alloc(V, 1, hold=True), Command.alloc(V, 1, hold=True), DRAIN,
              Command.release(0), Command.release(1)]
    res = m.run(script, latency=lambda issue: 2 + issue.record)
    assert [r.code for _, _, r in res.responses] == [Code.OK] * 4
    assert settle(m) == (8, 8, 32, 32, False)
    with pytest.raises(RuntimeError, match="within 10 cycles"):
        small().run([Command.alloc(V, 1)], ready=lambda t: (False, False), max_cycles=10)


def test_default_size_fill_to_the_brim():
    m = QCCModel()
    for i in range(256):
        r = m.allocate(i % N_TYPES, 1, hold=True)
        assert (r.entity, r.record, r.addr) == (i, i, i)
    assert m.status() == (0, 0, 0, 0, False)
    assert m.allocate(V, 1).code == Code.NO_RECORD
    assert m.search(255).hit and m.translate(255, 0).addr == 255
    res = m.run([DRAIN], latency=1)
    assert len(res.issues) == sum(len(DEFAULT_PROGRAMS[i % N_TYPES]) for i in range(256))
    assert m.status() == (0, 0, 0, 0, False)
    for e in range(256):
        assert m.release(e).ok
    assert reap(m) == 4                              # one record a clock, 3 behind, 1 cool
    assert settle(m) == (256, 256, 256, 256, False)
    m.check()


# ---------------------------------------------------------------- random mix

@dataclass
class Inc:
    """One incarnation of an entity, as the scoreboard sees it."""
    id: int
    entity: int
    etype: int
    hold: bool
    record: int
    nstages: int
    stage: int = 0
    busy: bool = False
    frames: dict = field(default_factory=dict)      # frame -> record
    issued: list = field(default_factory=list)


@dataclass
class Tomb:
    """The FIFO entry of an entity deleted while queued."""
    record: int


class Scoreboard:
    """An independent bookkeeping of what the QCC must answer, built from its outputs."""

    def __init__(self, m):
        self.records, self.entities, self.lines, self.frames = (
            m.records, m.entities, m.lines, m.frames)
        self.prog = [m.program(t) for t in range(N_TYPES)]
        self.owner = [None] * self.records              # record -> (Inc, frame)
        self.buffer = {}                                 # record -> (base, n)
        self.used = [False] * self.lines
        self.live = {}                                   # entity -> Inc
        self.fifo = {(t, s): deque() for t in range(N_TYPES) for s in range(8)}
        self.rr = {N: N_TYPES - 1, M: N_TYPES - 1}
        self.decision = {N: None, M: None}               # (type, stage) popped next
        self.settled = [0] * N_TYPES                     # stage 0 before ALLOC's push (17)
        self.tomb = set()                                # records held by tombstones
        self.pushing = []                                # completed: ((type, stage), Inc)
        self.dead = {}                                   # entity -> Inc, not yet reaped
        self.killed = []                                 # dead, to reap at the clock's end
        self.killed_next = []                            # by a completion: a clock later
        self.to_reap = set()                             # dead, not picked by the reaper
        self.reaping = None                              # (entity, records left)
        self.walked = None                               # (record, entity, last)
        self.cooling = set()                             # freed last clock (decision 18)
        self.ent_cooling = set()
        self.number_queue = deque(range(self.entities))  # free numbers, in order (19)
        self.seen = set()
        # ``free_run`` (decision 13): the runs of the last RUN_DELAY cycles, the lines
        # taken in each
        self.runs = deque([self.lines] * RUN_DELAY, maxlen=RUN_DELAY)
        self.taken = deque([0] * RUN_DELAY, maxlen=RUN_DELAY)
        self.taken_now = 0
        self.n_inc = self.n_finished = self.n_deleted = 0
        self.ended = set()                               # incarnations freed
        self.stats = Counter()                           # (port, op, code) seen
        self.min_free = self.status()

    # -- expectations, all from the state at the start of the cycle --------------
    def unused(self):
        """Records neither owned nor tombstones: free, or cooling (decision 18)."""
        return {r for r, o in enumerate(self.owner) if o is None and r not in self.tomb}

    def unused_numbers(self):
        return set(range(self.entities)) - set(self.live) - set(self.dead)

    def status(self):
        return (len(self.unused() - self.cooling),
                len(self.unused_numbers() - self.ent_cooling),
                self.used.count(False), max(0, self.runs[0] - sum(self.taken)))

    def longest(self):
        """The longest run of free lines now (``free_run`` shows it 4 clocks later, less
        what was taken meanwhile)."""
        run = longest = 0
        for used in self.used:
            run = 0 if used else run + 1
            longest = max(longest, run)
        return longest

    def first_fit(self, n):
        for a in range(self.lines - n + 1):
            if not any(self.used[a:a + n]):
                return a
        return None

    def fields(self, rec):
        inc, f = self.owner[rec]
        base, n = self.buffer[rec]
        return dict(entity=inc.entity, record=rec, frame=f, etype=inc.etype,
                    stage=inc.stage if f == 0 else 0, busy=int(inc.busy and f == 0),
                    hold=int(inc.hold), buf=rec, addr=base, lines=n)

    def alive(self, rec):
        """The record belongs to a live entity (not free, not dead)."""
        return self.owner[rec] is not None and self.live.get(
            self.owner[rec][0].entity) is self.owner[rec][0]

    def expect_query(self, c):
        if c.op == Op.SEARCH:
            inc = self.live.get(c.entity)
            if inc is None or c.frame not in inc.frames:
                return Response(c.op, Code.MISS)
            return Response(c.op, Code.OK, **self.fields(inc.frames[c.frame]))
        if c.op == Op.TRANSLATE:
            if c.buf >= self.records or not self.alive(c.buf):
                return Response(c.op, Code.UNKNOWN)
            base, n = self.buffer[c.buf]
            if c.offset >= n:
                return Response(c.op, Code.RANGE)
            return Response(c.op, Code.OK, buf=c.buf, addr=base + c.offset, lines=n)
        return Response(c.op, Code.BAD_OP)

    def expect_done(self, rec, kind):
        if rec >= self.records or not self.alive(rec):
            return Code.UNKNOWN
        inc, f = self.owner[rec]
        if f != 0 or not inc.busy or self.prog[inc.etype][inc.stage].kind != kind:
            return Code.NOT_BUSY
        return Code.OK

    def decide(self, kind):
        """The FIFO port ``kind`` pops next: round-robin over the types from the one it
        decided on last, each offering its latest non-empty stage of that kind."""
        for i in range(1, N_TYPES + 1):
            t = (self.rr[kind] + i) % N_TYPES
            for s in reversed(range(len(self.prog[t]))):
                if self.prog[t][s].kind == kind and self.fifo[t, s] and (
                        s or self.settled[t]):
                    self.rr[kind] = t
                    return t, s
        return None

    # -- updates --------------------------------------------------------------------
    def cycle(self, cmd, query, nrec, mrec, n_ready, m_ready, res):
        for port, c, r in (("cmd", cmd, res.resp), ("query", query, res.qresp)):
            if c is not None:
                self.stats[port, Op(c.op).name if c.op < 7 else "op7", r.code.name] += 1
        for port, rec, code in (("n_done", nrec, res.ncode), ("m_done", mrec, res.mcode)):
            if rec is not None:
                self.stats[port, code.name] += 1
        self.min_free = tuple(map(min, self.min_free, self.status()))
        run_now = self.longest()
        unused, unused_numbers = self.unused(), self.unused_numbers()
        # decision 20: CONFIG's check reads the FIFOs at the start of the clock
        self.queued_start = {t for (t, _), q in self.fifo.items() if q}
        if query is not None:
            assert res.qresp == self.expect_query(query)
        early = cmd is not None and cmd.op in (Op.SEARCH, Op.TRANSLATE)
        if early:
            assert res.resp == self.expect_query(cmd)
        codes = {}
        for rec, kind, got in ((nrec, N, res.ncode), (mrec, M, res.mcode)):
            if rec is not None:
                assert got == self.expect_done(rec, kind)
                codes[kind] = got
        dropped = []
        for kind, ready, iss in ((N, n_ready, res.n_issue), (M, m_ready, res.m_issue)):
            if not ready or self.decision[kind] is None:
                assert iss is None
                continue
            t, s = self.decision[kind]
            head = self.fifo[t, s][0]
            if isinstance(head, Tomb):
                assert iss is None, "issued a deleted entity"
                self.fifo[t, s].popleft()
                dropped.append(head.record)
            else:
                assert iss is not None and (iss.etype, iss.stage, iss.entity) == (
                    t, s, head.entity), f"expected type {t} stage {s} entity {head.entity}"
            self.decision[kind] = None
        for iss in res.issues:
            self.issue(iss)
        settled = [len(self.fifo[t, 0]) for t in range(N_TYPES)]
        for kind, ready in ((N, n_ready), (M, m_ready)):
            if ready or self.decision[kind] is None:
                self.decision[kind] = self.decide(kind)
        self.settled = settled
        if cmd is not None and not early:
            self.command(cmd, res.resp)
        for key, entry in self.pushing:                  # decision 16: a clock late
            self.fifo[key].append(entry)
        self.pushing = []
        for rec, kind in ((nrec, N), (mrec, M)):
            if codes.get(kind) == Code.OK:
                self.complete(rec)
        self.tomb.difference_update(dropped)
        self.reap()
        # decision 18: freed in this clock, taken from the one after the next
        self.cooling = self.unused() - unused
        self.ent_cooling = self.unused_numbers() - unused_numbers
        self.runs.append(run_now)
        self.taken.append(self.taken_now)
        self.taken_now = 0

    def reap(self):
        """The reaper: free the record walked last clock, walk the next of the entity
        it picked, pick the lowest entity killed before this clock when it is done."""
        if self.walked is not None:
            rec, entity, last = self.walked
            base, n = self.buffer.pop(rec)
            self.used[base:base + n] = [False] * n
            self.owner[rec] = None
            if last:
                del self.dead[entity]
                self.number_queue.append(entity)
            self.walked = None
        if self.reaping is not None:
            entity, left = self.reaping
            self.walked = (left.popleft(), entity, not left)
            if not left:
                self.reaping = None
        if self.reaping is None and self.to_reap:
            entity = min(self.to_reap)
            self.to_reap.remove(entity)
            frames = self.dead[entity].frames
            self.reaping = (entity, deque(frames[f] for f in sorted(frames)))
        self.to_reap.update(self.killed)
        self.killed, self.killed_next = self.killed_next, []      # decision 15

    def issue(self, iss):
        inc = self.live[iss.entity]
        assert not inc.busy and inc.stage == iss.stage < inc.nstages
        assert (iss.record, iss.buf, iss.etype) == (inc.record, inc.record, inc.etype)
        assert (iss.kind, iss.desc) == tuple(self.prog[inc.etype][iss.stage])
        assert (inc.id, iss.stage) not in self.seen, "issued twice in one stage"
        self.seen.add((inc.id, iss.stage))
        q = self.fifo[inc.etype, iss.stage]
        assert q[0] is inc, "issued out of arrival order within a stage"
        q.popleft()
        inc.busy = True
        inc.issued.append(iss.stage)

    def complete(self, rec):
        inc, _ = self.owner[rec]
        inc.busy = False
        if inc.stage + 1 < inc.nstages:
            inc.stage += 1
            self.pushing.append(((inc.etype, inc.stage), inc))
        else:
            assert inc.issued == list(range(inc.nstages))
            self.n_finished += 1
            if inc.hold:
                inc.stage = DONE_STAGE
            else:
                self.free(inc, completed=True)

    def new_record(self, rec, inc, frame, base, n):
        self.owner[rec] = (inc, frame)
        self.buffer[rec] = (base, n)
        self.used[base:base + n] = [True] * n
        self.taken_now += n
        inc.frames[frame] = rec

    def free(self, inc, completed=False):
        """The entity dies: gone at once, its records, lines and number freed by the
        reaper (which sees it a clock later if it died by a completion)."""
        del self.live[inc.entity]
        self.dead[inc.entity] = inc
        (self.killed_next if completed else self.killed).append(inc.entity)
        assert inc.id not in self.ended
        self.ended.add(inc.id)

    def command(self, c, resp):
        assert resp.op == c.op
        free_rec = min(self.unused() - self.cooling, default=None)
        if c.op == Op.ALLOC:
            free_ent = next((e for e in self.number_queue if e not in self.ent_cooling),
                            None)
            base = self.first_fit(c.lines) if 1 <= c.lines <= 8 else None
            if c.etype >= N_TYPES or not 1 <= c.lines <= 8:
                exp = Code.BAD_ARG
            elif free_rec is None:
                exp = Code.NO_RECORD
            elif free_ent is None:
                exp = Code.NO_ENTITY
            elif self.status()[3] < c.lines:      # decision 14: on free_run, not the fit
                exp = Code.NO_LINES
            else:
                exp = Code.OK
            assert resp.code == exp
            if exp == Code.OK:
                assert base is not None, "free_run above the longest free run"
                inc = Inc(self.n_inc, free_ent, c.etype, bool(c.hold), free_rec,
                          len(self.prog[c.etype]))
                self.n_inc += 1
                self.number_queue.remove(free_ent)
                self.live[free_ent] = inc
                self.new_record(free_rec, inc, 0, base, c.lines)
                self.fifo[c.etype, 0].append(inc)
                assert resp == Response(c.op, Code.OK, **self.fields(free_rec))
        elif c.op == Op.MAP:
            inc = self.live.get(c.entity)
            base = self.first_fit(c.lines) if 1 <= c.lines <= 8 else None
            if not 1 <= c.lines <= 8 or c.frame >= self.frames:
                exp = Code.BAD_ARG
            elif inc is None:
                exp = Code.UNKNOWN
            elif c.frame in inc.frames:
                exp = Code.MAPPED
            elif free_rec is None:
                exp = Code.NO_RECORD
            elif self.status()[3] < c.lines:      # decision 14
                exp = Code.NO_LINES
            else:
                exp = Code.OK
            assert resp.code == exp
            if exp == Code.OK:
                assert base is not None, "free_run above the longest free run"
                self.new_record(free_rec, inc, c.frame, base, c.lines)
                assert resp == Response(c.op, Code.OK, **self.fields(free_rec))
        elif c.op in (Op.DELETE, Op.RELEASE):
            inc = self.live.get(c.entity)
            if inc is None:
                exp = Code.UNKNOWN
            elif c.op == Op.RELEASE and inc.stage != DONE_STAGE:
                exp = Code.NOT_HELD
            elif c.op == Op.DELETE and inc.busy:
                exp = Code.BUSY
            else:
                exp = Code.OK
            assert resp.code == exp
            if exp == Code.OK:
                assert resp == Response(c.op, Code.OK, entity=c.entity)
                if inc.stage != DONE_STAGE:          # queued: a tombstone takes its place
                    pushing = [i for i, (_, e) in enumerate(self.pushing) if e is inc]
                    if pushing:                      # (in its FIFO from the clock's end)
                        self.pushing[pushing[0]] = (self.pushing[pushing[0]][0],
                                                    Tomb(inc.record))
                    else:
                        q = self.fifo[inc.etype, inc.stage]
                        q[q.index(inc)] = Tomb(inc.record)
                    self.tomb.add(inc.record)
                self.n_deleted += 1
                self.free(inc)
        elif c.op == Op.CONFIG:
            if c.etype >= N_TYPES or not 1 <= c.nstages <= 8:
                exp = Code.BAD_ARG
            elif any(i.etype == c.etype and i.stage != DONE_STAGE for i in self.live.values()) \
                    or c.etype in self.queued_start:
                exp = Code.BUSY
            else:
                exp = Code.OK
            assert resp.code == exp
            if exp == Code.OK:
                self.prog[c.etype] = c.program[:c.nstages]
        else:
            assert resp == Response(c.op, Code.BAD_OP)


def random_command(rng, sb, filling):
    x = rng.random()
    live = list(sb.live)
    held = [e for e, i in sb.live.items() if i.stage == DONE_STAGE]
    if x < 0.25 and held:
        return Command.release(rng.choice(held))
    if not filling:
        return None
    if x < 0.60:
        return Command.alloc(rng.randrange(N_TYPES), rng.choice([1, 1, 2, 3, 8]),
                             hold=rng.random() < 0.3)
    if x < 0.68 and live:
        return Command.map(rng.choice(live), rng.randrange(1, min(sb.frames + 1, 16)),
                           rng.randint(1, 3))
    if x < 0.72 and live:
        return Command.delete(rng.choice(live))
    if x < 0.74:
        t = rng.randrange(N_TYPES)
        n = rng.randint(1, 8)
        return Command.config(t, [(rng.randrange(2), rng.randrange(256)) for _ in range(n)])
    if x < 0.80:
        return random_query(rng, sb)
    if x < 0.82:
        return rng.choice([Command(7), Command.alloc(rng.randint(5, 7), 1),
                           Command.alloc(0, rng.choice([0, 9, 15])),
                           Command.release(rng.randrange(256)),
                           Command.delete(rng.randrange(256)),
                           Command.config(rng.randint(0, 7), [(0, 1)],
                                          nstages=rng.choice([0, 9]))])
    return None


def random_query(rng, sb):
    if rng.random() < 0.5:
        ent = rng.choice(list(sb.live)) if sb.live and rng.random() < 0.8 \
            else rng.randrange(256)
        return Command.search(ent, rng.choice([0, 0, 1, 2, rng.randrange(16)]))
    return Command.translate(rng.randrange(min(sb.records + 2, 256)), rng.randrange(10))


def random_mix(seed, records, entities, lines, frames, cycles, check_every=1):
    rng = random.Random(seed)
    m = QCCModel(records=records, entities=entities, lines=lines, frames=frames)
    sb = Scoreboard(m)
    pending = {N: [], M: []}                             # (due, record)
    t = 0
    while True:
        filling = t < cycles
        if not filling and m.idle() and not any(pending.values()) and not any(
                i.stage == DONE_STAGE for i in sb.live.values()):
            break
        assert t < cycles + 20 * records + 1000, "the pipeline does not drain"
        cmd = random_command(rng, sb, filling)
        query = random_query(rng, sb) if rng.random() < 0.3 else None
        done = {}
        for kind, plist in pending.items():
            due = [p for p in plist if p[0] <= t]
            if due and rng.random() < 0.85:
                p = rng.choice(due)                      # any order
                plist.remove(p)
                done[kind] = p[1]
            elif filling and rng.random() < 0.02:        # a bogus completion
                rec = rng.randrange(min(records + 3, 256))
                if rec >= records or sb.expect_done(rec, kind) != Code.OK:
                    done[kind] = rec
        n_ready, m_ready = rng.random() < 0.8, rng.random() < 0.8
        res = m.cycle(cmd=cmd, query=query, ncompl=done.get(N), mcompl=done.get(M),
                      n_ready=n_ready, m_ready=m_ready)
        sb.cycle(cmd, query, done.get(N), done.get(M), n_ready, m_ready, res)
        for iss in res.issues:
            pending[iss.kind].append((t + rng.randint(1, 12), iss.record))
        assert m.status()[:4] == sb.status()
        if t % check_every == 0:
            m.check()
        t += 1
    m.check()
    assert not sb.live
    assert m.status()[:3] == (records, entities, lines)   # every line came back
    assert m.longest_free_run() == sb.longest() == lines
    assert sb.ended == set(range(sb.n_inc))                # no entity lost
    return sb, t


def assert_covered(sb):
    st = sb.stats
    assert st["cmd", "ALLOC", "OK"] > 20 and st["cmd", "RELEASE", "OK"] > 5
    assert st["n_done", "OK"] > 20 and st["m_done", "OK"] > 20
    assert st["n_done", "UNKNOWN"] + st["m_done", "UNKNOWN"] > 0
    assert st["query", "SEARCH", "OK"] > 0 and st["query", "TRANSLATE", "OK"] > 0
    assert st["cmd", "DELETE", "BUSY"] > 0 and st["cmd", "CONFIG", "BUSY"] > 0
    assert sum(st["cmd", "ALLOC", c] for c in ("NO_RECORD", "NO_ENTITY", "NO_LINES")) > 0
    assert 0 in sb.min_free                              # some table was full


@pytest.mark.parametrize("seed", [0, 1] + [pytest.param(s, marks=pytest.mark.slow)
                                           for s in range(2, 8)])
def test_random_mix_small(seed):
    rng = random.Random(1000 + seed)
    sb, _ = random_mix(seed, records=rng.choice([4, 8, 16, 32]),
                       entities=rng.choice([3, 8, 32]), lines=rng.choice([8, 16, 64]),
                       frames=rng.choice([1, 4, 16]), cycles=3000)
    assert_covered(sb)


@pytest.mark.slow
@pytest.mark.parametrize("seed, lines", [(97, 256), (98, 2048)])
def test_random_mix_default_size(seed, lines):
    """At the default size; with 2048 lines the records and entity numbers run out.
    (Seed 99, used before issue 11, no longer fills a table with 256 lines: its run
    changed with the issue timing, and ``assert_covered`` requires a full table.)"""
    sb, _ = random_mix(seed, records=256, entities=256, lines=lines, frames=16,
                       cycles=4000, check_every=10)
    assert_covered(sb)
