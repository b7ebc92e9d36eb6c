"""Unit tests of the global spreader golden model (``golden/spreader.py``)."""

import dataclasses

import numpy as np
import pytest

from golden.qcc import QCCModel
from golden.spreader import (
    AllocRequest, Answer, Config, Done, EType, Err, EUStatus, Feeder, Item, Kind, Loc,
    MoveCmd, PatchPacket, PixelPacket, QCCEU, RandomEU, Ref, ReleaseCmd, Scoreboard,
    ScriptedEU, Spreader, Src, TrianglePacket, VertexPacket, Workload, build_workload,
    scene_workload, synthetic_workload,
)
from golden.spreader.types import ENTITIES

V, T, P, PA = EType.VERTEX, EType.TRIANGLE, EType.PIXEL, EType.PATCH
ROOM = EUStatus(16, 16, 64)
FULL = EUStatus(0, 0, 0)


PORTS = ("move", "log", "release", "err")


def small(**kw):
    """A small spreader whose output transfers are recorded (see :func:`drain`). Its
    lists are walked from their first entry (``rotate=False``) unless asked, so that the
    expected EUs read straight from the lists; the rotation has its own tests."""
    args = dict(n_eus=4, vdt_records=16, pt_records=16, rotate=False)
    args.update(kw)
    sp = Spreader(**args)
    sp.out = {k: [] for k in PORTS}
    cycle = sp.cycle

    def recorded(*a, **k):
        r = cycle(*a, **k)
        for port in PORTS:
            if getattr(r, port) is not None:
                sp.out[port].append(getattr(r, port))
        return r
    sp.cycle = recorded
    return sp


def heads(v=None, t=None, p=None, pa=None):
    return (v, t, p, pa)


def only(eu, n=4):
    """Statuses where only ``eu`` has room."""
    return [ROOM if e == eu else FULL for e in range(n)]


def accept(entity):
    return lambda e, q: Answer(True, entity)


def take(sp, stream, pkt, **kw):
    """Present ``pkt`` for one clock: it is taken and prepared (stage P); returns that
    clock's result. The EUs showed that clock's ``status`` in the clock before too
    (:func:`shown`)."""
    h = [None] * 4
    h[stream] = pkt
    shown(sp, kw.get("status") or empty(sp))
    r = sp.cycle(h, **kw)
    assert r.taken == stream and r.started, r
    return r


def empty(sp):
    """Every EU empty (the model's default status)."""
    return [EUStatus(sp.eu_records, ENTITIES, sp.eu_lines)] * sp.n_eus


def shown(sp, status):
    """The EUs showed ``status`` in the clock before (the scans read the status of the
    clock before: rule 3): the scan register :attr:`Spreader.scan_status`."""
    sp.scan_status = list(status)


def place(sp, stream, pkt, eu, entity):
    """Allocate one packet to ``eu`` (only that EU has room, from the clock before):
    taken and prepared in one clock, requested and accepted in the next, its tables
    written (the commit stage) at the end of the third."""
    h = [None] * 4
    h[stream] = pkt
    shown(sp, only(eu, sp.n_eus))
    r = sp.cycle(h, status=only(eu, sp.n_eus), respond=accept(entity))
    assert r.taken == stream and r.request is None, r
    r = sp.cycle(status=only(eu, sp.n_eus), respond=accept(entity))
    assert r.consumed == stream and r.request[0] == eu, r
    sp.cycle(status=only(eu, sp.n_eus))
    return r


def drain(sp, n=8, **kw):
    """``n`` clocks with no input; the output transfers since the previous drain."""
    for _ in range(n):
        sp.cycle(**kw)
    out, sp.out = sp.out, {k: [] for k in PORTS}
    return out


def run_streams(sp, streams, respond=None, status=None, limit=50):
    """Present lists of packets (all valid from the start); the consumed streams in
    order."""
    streams = [list(s) for s in streams]
    order = []
    shown(sp, status or empty(sp))
    for _ in range(limit):
        if not any(streams) and sp.idle_allocator():
            break
        h = [s[0] if s else None for s in streams]
        r = sp.cycle(h, status=status, respond=respond or accept(0))
        if r.taken is not None:
            streams[r.taken].pop(0)
        if r.consumed is not None:
            order.append(r.consumed)
    return order


# ---------------------------------------------------------------- parameters

@pytest.mark.parametrize("kw, exc, msg", [
    (dict(n_eus=0), ValueError, "n_eus must be an integer from 1 to 16, not 0"),
    (dict(n_eus=17), ValueError, "n_eus must be an integer from 1 to 16, not 17"),
    (dict(n_eus="4"), TypeError, "n_eus must be an integer from 1 to 16, not '4'"),
    (dict(n_eus=True), TypeError, "n_eus must be an integer from 1 to 16, not True"),
    (dict(vdt_records=100), ValueError,
     "vdt_records must be a power of two from 2 to 256, not 100"),
    (dict(vdt_records=1), ValueError, "vdt_records must be a power of two from 2 to 256, not 1"),
    (dict(pt_records=512), ValueError, "pt_records must be a power of two from 1 to 256, not 512"),
    (dict(index_bits=10), ValueError, "index_bits must be an integer from 11 to 32, not 10"),
    (dict(prid_bits=7), ValueError, "prid_bits must be an integer from 8 to 32, not 7"),
    (dict(coord_bits=3.0), TypeError, "coord_bits must be an integer from 4 to 16, not 3.0"),
    (dict(max_lines=16), ValueError, "max_lines must be an integer from 1 to 15, not 16"),
    (dict(eu_lines=4, max_lines=8), ValueError, "max_lines must be an integer from 1 to 4"),
    (dict(eu_records=0), ValueError, "eu_records must be an integer from 1 to 256, not 0"),
    (dict(starve_limit=256), ValueError, "starve_limit must be an integer from 0 to 255"),
    (dict(fifo_depth=0), ValueError, "fifo_depth must be an integer from 1 to 64, not 0"),
    (dict(patience=256), ValueError, "patience must be an integer from 0 to 255, not 256"),
    (dict(eu_records=16, local_records=17), ValueError,
     "local_records must be an integer from 0 to 16, not 17"),
])
def test_bad_parameters(kw, exc, msg):
    with pytest.raises(exc, match=msg):
        Spreader(**kw)


def test_debit_held_must_be_a_bool():
    with pytest.raises(TypeError, match="debit_held must be a bool, not 1"):
        Spreader(debit_held=1)


def test_rotate_must_be_a_bool():
    with pytest.raises(TypeError, match="rotate must be a bool, not 1"):
        Spreader(rotate=1)


def test_bad_port_values():
    sp = small()
    with pytest.raises(ValueError, match="i_vtx.base must be an integer from 0 to 65535"):
        sp.cycle(heads(v=VertexPacket(1 << 16)))
    with pytest.raises(ValueError, match="i_tri.last must be an integer from 0 to 7"):
        sp.cycle(heads(t=TrianglePacket(0, (0, 1, 2), last=8)))
    with pytest.raises(TypeError, match=r"heads\[0\] must be a VertexPacket"):
        sp.cycle(heads(v=PixelPacket(0)))
    with pytest.raises(ValueError, match="indices must hold 3 vertex indices, not 2"):
        TrianglePacket(0, (0, 1))
    with pytest.raises(ValueError, match="eus entry must be an integer from 0 to 15, not 16"):
        Config.priority(P, [16])
    with pytest.raises(ValueError, match="status must hold 4 entries, not 3"):
        sp.cycle(status=[ROOM] * 3)
    with pytest.raises(ValueError, match="done.entity must be an integer from 0 to 255"):
        sp.cycle(done=(0, 256))
    take(sp, V, VertexPacket(0))                              # taken: prepared
    r = sp.cycle(heads(v=VertexPacket(8)), respond=None)      # request held, unanswered
    assert r.request is not None and r.taken is None
    with pytest.raises(ValueError, match="stream 0 changed its head while not taken"):
        sp.cycle(heads(v=VertexPacket(16)))


def test_layout_widths_and_pack_roundtrip():
    sp = Spreader()
    widths = {k: sum(w for _, w in sp.layout(k)) for k in
              ("i_vtx", "i_tri", "i_pix", "i_pat", "cfg", "done", "alloc", "log", "release")}
    assert widths == dict(i_vtx=25, i_tri=71, i_pix=61, i_pat=21, cfg=99, done=12, alloc=23,
                          log=62, release=22)
    objs = {
        "i_vtx": VertexPacket(0x1238, 5, 3, True),
        "i_tri": TrianglePacket(77, (1, 2, 65535), 2, 5),
        "i_pix": PixelPacket(9, 4092, 8, 0xBEEF, True, 1),
        "i_pat": PatchPacket(64, 4, False),
        "cfg": Config.priority(T, [3, 1, 2]),
        "move": MoveCmd(2, 7, T, 11, 1, Ref.GLOBAL, 77, 0, (Loc(1, 2, 3), Loc(2, 3, 9),
                                                              Loc(0, 0, 0))),
        "release": ReleaseCmd(3, 200, V, 15),
    }
    for port, obj in objs.items():
        assert sp.unpack(port, sp.pack(port, obj)) == obj
    assert sp.pack("i_vtx", VertexPacket(8, 1, 2)) == 8 | 1 << 16 | 2 << 20
    with pytest.raises(ValueError, match="port must be one of"):
        sp.layout("nope")


# ---------------------------------------------------------------- arbitration

def _primed():
    """A spreader with vertex group 0 on EU0 and triangle prid 5 on EU1."""
    sp = small()
    place(sp, V, VertexPacket(0), 0, 1)
    place(sp, T, TrianglePacket(5, (0, 1, 2)), 1, 1)
    return sp


def test_fixed_priority_pixel_triangle_vertex_patch():
    sp = _primed()
    streams = [[VertexPacket(8), VertexPacket(16)],
               [TrianglePacket(6, (0, 1, 2)), TrianglePacket(7, (0, 1, 2))],
               [PixelPacket(5), PixelPacket(5)],
               [PatchPacket(32)]]
    ent = iter(range(2, 100))
    order = run_streams(sp, streams, respond=lambda e, q: Answer(True, next(ent)))
    assert order == [P, P, T, T, V, V, PA]
    assert not sp.error


def test_anti_starvation_limit():
    sp = _primed()
    sp.cycle(cfg=Config.starve(2))
    ent = iter(range(2, 100))
    order = run_streams(sp, [[VertexPacket(8)], [], [PixelPacket(5)] * 8, [PatchPacket(32)]],
                        respond=lambda e, q: Answer(True, next(ent)))
    # V and PA each lose two arbitrations, then starving streams go first (V before PA)
    assert order == [P, P, V, PA] + [P] * 6
    sp = _primed()
    sp.cycle(cfg=Config.starve(0))                      # off: pure fixed priority
    order = run_streams(sp, [[VertexPacket(8)], [], [PixelPacket(5)] * 8, [PatchPacket(32)]],
                        respond=lambda e, q: Answer(True, next(ent)))
    assert order == [P] * 8 + [V, PA]


def test_starvation_counts_failed_passes():
    """A pixel stream that cannot be placed still lets the others in every limit+1 clocks."""
    sp = _primed()
    sp.cycle(cfg=Config.priority(P, [3]))
    status = [ROOM, ROOM, ROOM, FULL]                    # the pixel EU never has room
    order = run_streams(sp, [[VertexPacket(8)], [], [PixelPacket(5)], []], status=status,
                        respond=accept(9), limit=20)
    assert order == [V]
    assert sp.cycle(heads(p=PixelPacket(5)), status=status).request is None


# ---------------------------------------------------------------- candidates and locality

def _groups(sp):
    """Group 0 on EU2, group 1 on EU1, group 2 on EU3 (entities 10, 11, 12)."""
    place(sp, V, VertexPacket(0), 2, 10)
    place(sp, V, VertexPacket(8), 1, 11)
    place(sp, V, VertexPacket(16), 3, 12)


@pytest.mark.parametrize("idx, lst, first, cands", [
    ((0, 1, 2), None, 2, (2, 0, 1, 3)),          # all in EU2: local
    ((0, 8, 9), None, 1, (1, 2, 0, 3)),          # EU1 holds two, EU2 one
    ((0, 8, 1), None, 2, (2, 1, 0, 3)),
    ((0, 8, 16), None, 1, (1, 2, 3, 0)),         # one each: list order breaks the tie
    ((0, 8, 16), (3, 2, 1, 0), 3, (3, 2, 1, 0)),
    ((0, 8, 9), (0, 2, 3), 2, (2, 0, 3)),        # EU1 left out of the triangle list
])
def test_triangle_candidates_locality_first(idx, lst, first, cands):
    sp = small()
    _groups(sp)
    if lst is not None:
        sp.cycle(cfg=Config.priority(T, lst))
    assert sp.candidates(T, ()) == (lst or (0, 1, 2, 3))
    seen = []

    def refuse_all(e, q):
        seen.append(e)
        return Answer(False)
    take(sp, T, TrianglePacket(1, idx))
    for _ in range(len(cands) + 1):             # each candidate refuses, then none is left
        sp.cycle(respond=refuse_all)
    assert tuple(seen) == cands and seen[0] == first


def test_local_and_global_references_carry_addresses():
    sp = small()
    _groups(sp)
    place(sp, T, TrianglePacket(1, (0, 1, 2)), 2, 20)
    place(sp, T, TrianglePacket(2, (0, 8, 9)), 1, 21)
    out = drain(sp, 4)
    tri = [m for m in out["move"] if m.etype == T]
    assert tri[0].ref == Ref.LOCAL and tri[0].src == (Loc(2, 10, 0), Loc(2, 10, 1),
                                                      Loc(2, 10, 2))
    assert tri[1].ref == Ref.GLOBAL and tri[1].src == (Loc(2, 10, 0), Loc(1, 11, 0),
                                                       Loc(1, 11, 1))
    assert [e.ref for e in out["log"] if e.etype == T] == [Ref.LOCAL, Ref.GLOBAL]
    # the locality EU has no room: the triangle goes down the list and becomes global
    take(sp, T, TrianglePacket(3, (0, 1, 2)), status=[ROOM, ROOM, FULL, ROOM])
    r = sp.cycle(respond=accept(22))
    assert r.request[0] == 0 and r.consumed == T
    mv = drain(sp, 2)["move"][0]
    assert (mv.eu, mv.ref, mv.src[0]) == (0, Ref.GLOBAL, Loc(2, 10, 0))


def test_pixel_goes_to_its_triangles_eu():
    sp = small()
    place(sp, V, VertexPacket(0), 0, 1)
    place(sp, T, TrianglePacket(40, (0, 1, 2)), 3, 7)
    take(sp, P, PixelPacket(40, 8, 12, 0x00F0))
    r = sp.cycle(respond=accept(9))
    assert r.request == (3, AllocRequest(P, 1, 0, 0))
    assert r.request[0] == 3 and r.request[1].hold == 0 and r.consumed == P
    mv = drain(sp, 3)["move"][-1]
    assert mv == MoveCmd(3, 9, P, 0, 1, Ref.LOCAL, 40, 0, (Loc(3, 7, 0), Loc(), Loc()),
                         8, 12, 0x00F0)
    take(sp, P, PixelPacket(40), status=[ROOM, ROOM, ROOM, FULL])
    assert sp.cycle(respond=accept(1)).request[0] == 0


def test_patience_keeps_a_pixel_packet_for_its_triangles_eu():
    """``patience`` = 2: the pixel packet's first two passes offer it to its triangle's
    EU alone (full: each pass ends without a request and parks it); its third pass
    walks the whole list. Without patience its first pass goes elsewhere."""
    for patience, want in ((2, [None] * 4 + [0]), (0, [0])):
        sp = small(patience=patience)
        place(sp, V, VertexPacket(0), 0, 1)
        place(sp, T, TrianglePacket(40, (0, 1, 2)), 3, 7)
        take(sp, P, PixelPacket(40, 8, 12, 0x00F0), status=[ROOM, ROOM, ROOM, FULL])
        reqs = []
        for _ in range(len(want)):
            r = sp.cycle(status=[ROOM, ROOM, ROOM, FULL], respond=accept(9))
            reqs.append(None if r.request is None else r.request[0])
        assert reqs == want and r.consumed == P
        e = drain(sp, 3)["log"][-1]
        assert (e.eu, e.passes, e.ref) == (0, patience + 1, Ref.GLOBAL)


def test_patience_waits_only_for_a_listed_triangle_eu():
    """A pixel packet whose triangle's EU is not in the pixel list is not patient (the
    list wins over locality): its first pass goes to the list's first EU with room."""
    sp = small(patience=4)
    place(sp, V, VertexPacket(0), 0, 1)
    place(sp, T, TrianglePacket(40, (0, 1, 2)), 3, 7)
    sp.cycle(cfg=Config.priority(P, [1, 2]))
    take(sp, P, PixelPacket(40, 8, 12, 0x00F0))
    r = sp.cycle(respond=accept(9))
    assert r.request[0] == 1 and r.consumed == P


def test_local_records_makes_triangle_locality_yield_to_load():
    """``local_records`` = 4: the EU holding the triangle's vertices heads its list only
    with 4 free records or more (in the status the first scan reads); with 3 it keeps
    its place in the walk, so EU 0 is asked first."""
    low = EUStatus(3, 16, 64)
    for local_records, status, eu in ((4, low, 0), (4, EUStatus(4, 16, 64), 2), (0, low, 2)):
        sp = small(local_records=local_records)
        place(sp, V, VertexPacket(0), 2, 1)
        st = [ROOM, ROOM, status, ROOM]
        take(sp, T, TrianglePacket(40, (0, 1, 2)), status=st)
        r = sp.cycle(status=st, respond=accept(5))
        assert r.request[0] == eu and r.consumed == T
        mv = drain(sp, 3)["move"][-1]
        assert mv.ref == (Ref.LOCAL if eu == 2 else Ref.GLOBAL)


# ---------------------------------------------------------------- Fig. 10 flow and timing

def test_try_next_candidate_then_retry_from_top():
    sp = small()
    answers = iter([False, False, True])
    log = []
    take(sp, V, VertexPacket(0))
    for _ in range(3):
        r = sp.cycle(respond=lambda e, q: Answer(next(answers), 5))
        log.append((r.request[0], r.answer.accept, r.consumed))
    assert log == [(0, False, None), (1, False, None), (2, True, V)]
    e = drain(sp, 2)["log"][0]
    assert (e.eu, e.entity, e.passes, e.refused) == (2, 5, 1, 0b011)
    # every candidate refuses: the pass ends in a clock without a request (the packet
    # is parked), it is prepared again in the next, then a new pass from the top
    sp = small()
    reqs = []
    take(sp, V, VertexPacket(0))
    for i in range(8):
        r = sp.cycle(respond=lambda e, q: Answer(i >= 7, 3))
        reqs.append(None if r.request is None else r.request[0])
    assert reqs == [0, 1, 2, 3, None, None, 0, 1]
    e = drain(sp, 2)["log"][-1]
    assert (e.eu, e.entity, e.passes, e.refused) == (1, 3, 2, 0b0001)


def test_retry_counts_passes_and_skips_full_eus():
    sp = small()
    st = [FULL, ROOM, FULL, ROOM]
    seq = []
    take(sp, V, VertexPacket(0), status=st)
    for i in range(6):
        r = sp.cycle(status=st, respond=lambda e, q: Answer(i == 5, 8))
        seq.append(None if r.request is None else r.request[0])
    # EU0 and EU2 lack room: 1, 3 (refused), end of list, prepared again; again from
    # the top: 1 refuses, 3 accepts
    assert seq == [1, 3, None, None, 1, 3]
    e = drain(sp, 2)["log"][0]
    assert e.eu == 3 and e.passes == 2 and e.refused == 0b0010


def test_scans_read_the_status_of_the_clock_before():
    """Rule 3 (issue 12/15): stage P's and stage R's scans read the status register,
    the EUs' status of the clock before (less that clock's request), not the status
    port of their own clock. Room that shows first in the clock a packet is prepared is
    seen by the next pass; room that a clock's status still shows is trusted by the
    scan of the next clock (an EU loses room only to the spreader's requests)."""
    sp = small()
    shown(sp, [FULL] * 4)
    r = sp.cycle(heads(v=VertexPacket(0)), status=only(2))
    assert r.taken == V and r.started             # prepared over the clock before: full
    r = sp.cycle(status=only(2), respond=accept(1))
    assert r.request is None and r.consumed is None   # the pass ends, the packet parks
    r = sp.cycle(status=only(2), respond=accept(1))
    assert r.request is None and r.started        # prepared again, over only(2)
    r = sp.cycle(status=only(2), respond=accept(1))
    assert r.request[0] == 2 and r.consumed == V
    # EU 1 had room in the clock before and shows none now: the scan still picks it
    sp = small()
    shown(sp, only(1))
    assert sp.cycle(heads(v=VertexPacket(8)), status=[FULL] * 4).started
    r = sp.cycle(status=[FULL] * 4, respond=accept(2))
    assert r.request[0] == 1 and r.consumed == V
    # a refusal's scan reads the register too: EU 1's room of the clock before is
    # seen, not the status of the refusal's clock (EU 1 full, EU 3 with room)
    sp = small()
    shown(sp, [ROOM] * 4)
    assert sp.cycle(heads(v=VertexPacket(16)), status=[ROOM, ROOM, ROOM, FULL]).started
    r = sp.cycle(status=[ROOM, FULL, FULL, ROOM], respond=(False, 0))
    assert r.request[0] == 0 and r.answer.accept is False
    r = sp.cycle(status=[FULL] * 4, respond=accept(3))
    assert r.request[0] == 1 and r.consumed == V


def test_no_candidate_with_room_waits_without_requests():
    sp = small()
    take(sp, V, VertexPacket(0), status=[FULL] * 4)
    started = []
    for _ in range(6):           # a pass that finds no room, then prepared again
        r = sp.cycle(status=[FULL] * 4)
        assert r.request is None and r.consumed is None and r.taken is None
        started.append(r.started)
    assert started == [False, True] * 3
    # the pass prepared in the last clock scanned a full status and ends now; the one
    # prepared next scans EU2's room and requests it in the clock after (a request
    # follows the scan of the clock before)
    r = sp.cycle(status=only(2))
    assert r.request is None and not r.started
    r = sp.cycle(status=only(2))
    assert r.request is None and r.started
    r = sp.cycle(status=[FULL] * 4, respond=accept(1))
    assert r.consumed == V and r.request[0] == 2
    assert drain(sp, 2)["log"][0].passes == 5


def _vertex_run(latency, answers=None, n=8, rotate=False):
    sp = small(rotate=rotate)
    eus = [ScriptedEU(answers=answers if e == 0 else None, latency=latency, done_after=None)
           for e in range(4)]
    wl = Workload([VertexPacket(8 * i, noref=True) for i in range(n)])
    return sp.run(wl, eus, cycles=40)


def test_one_allocation_per_clock_and_one_extra_per_refusal():
    r = _vertex_run(0)
    # taken in clocks 0..7 (each the clock its predecessor is accepted), accepted in 1..8
    assert [t for t, _ in r.consumed] == list(range(8))
    assert [q.end for q in r.requests] == list(range(1, 9))
    st = Scoreboard(r.spreader, r.workload).check(r, complete=False)
    assert st.allocations_per_clock == 1.0 and st.refusals == 0
    assert [(e.eu, e.entity) for e in r.entries()] == [(0, i) for i in range(8)]
    r = _vertex_run(0, answers=[True, False, True, False, True, True, True, True])
    # a refusal by EU0 sends that packet to EU1 one clock later
    assert [t for t, _ in r.consumed] == [0, 1, 3, 4, 6, 7, 8, 9]
    assert [q.end for q in r.requests if q.accept] == [1, 3, 4, 6, 7, 8, 9, 10]
    st = Scoreboard(r.spreader, r.workload).check(r, complete=False)
    assert (st.allocations, st.alloc_cycles, st.refusals) == (8, 10, 2)
    assert [e.eu for e in r.entries()][:4] == [0, 1, 0, 1]
    r = _vertex_run(2)                        # EUs answering 2 clocks late: 3 per packet
    assert [t for t, _ in r.consumed] == [0, 3, 6, 9, 12, 15, 18, 21]
    assert all(q.end - q.start == 2 for q in r.requests)


def test_request_held_until_the_eu_answers():
    sp = small()
    take(sp, V, VertexPacket(0))
    reqs = [sp.cycle(respond=None).request for _ in range(3)]
    assert reqs[0] == reqs[1] == reqs[2] == (0, (V, 1, 1, 0))
    assert sp.cycle(respond=(True, 4)).consumed == V


def test_minimum_resources_and_size():
    sp = small()
    sp.cycle(cfg=Config.minimum(V, 4, 10))
    assert sp.need(V, 3) == (4, 10) and sp.need(V, 12) == (4, 12) and sp.need(T, 3) == (1, 3)
    st = [EUStatus(3, 9, 64), EUStatus(9, 9, 9), EUStatus(4, 0, 64), EUStatus(4, 1, 10)]
    take(sp, V, VertexPacket(0, size=3), status=st)
    r = sp.cycle(status=st, respond=accept(0))
    assert r.request[0] == 3


def test_dedicated_eus():
    sp = small()
    for c in (Config.priority(P, [3]), Config.priority(T, [0, 1, 2]),
              Config.priority(V, [0, 1, 2])):
        sp.cycle(cfg=c)
    place(sp, V, VertexPacket(0), 1, 1)
    place(sp, T, TrianglePacket(2, (0, 1, 2)), 1, 2)
    take(sp, P, PixelPacket(2))
    r = sp.cycle(respond=accept(3))
    assert r.request[0] == 3                  # its triangle's EU1 is not a pixel EU
    assert drain(sp, 3)["log"][-1].ref == Ref.GLOBAL
    take(sp, V, VertexPacket(8), status=only(3))
    for _ in range(4):                        # only EU3 has room: vertices wait
        assert sp.cycle(status=only(3)).request is None
    assert not sp.error


@pytest.mark.parametrize("seed", [30, 31])
def test_scoreboard_checks_each_pass_under_the_configuration_of_its_clock(seed):
    """A pixel list reconfigured mid-run while a pixel packet waits: its first pass (the
    old list) is logged after other streams' passes that began after the word. The
    scoreboard once applied words in log order and judged that first pass under the new
    list ("EU 3 asked while the earlier candidate met the minimum": seeds 30 and 31
    here, and `test_spreader[verilator]` with SEED=2061810850)."""
    rng = np.random.default_rng(seed)
    eus = [RandomEU(rng, records=4, lines=16, latency=(0, 3), refuse=0.3, work=(1, 12))
           for _ in range(4)]
    change = int(rng.integers(20, 200))
    cfg = [(3, Config.priority(EType.PIXEL, [3])),
           (4, Config.priority(EType.TRIANGLE, [3, 2, 1, 0])),
           (5, Config.priority(EType.VERTEX, [0, 1, 2])),
           (6, Config.priority(EType.PATCH, [0])),
           (change, Config.priority(EType.PIXEL, [0, 1, 2, 3]))]
    args = dict(n_eus=4, vdt_records=16, pt_records=8)
    wl = synthetic_workload(seed, n_triangles=24, vdt_records=16, pt_records=8)
    r = Spreader(**args).run(wl, eus, config=cfg, max_cycles=20000)
    pixel_eus = {e.eu for t, e in r.log if e.etype == EType.PIXEL and e.kind == Kind.ALLOC}
    assert pixel_eus - {3}, "no pixel packet went to a new-list EU: the case is not exercised"
    st = Scoreboard(Spreader(**args), r.workload).check(r)
    assert st.allocations == sum(e.kind == Kind.ALLOC for _, e in r.log)


# ---------------------------------------------------------------- tables and release

def test_vertex_group_released_after_done_closed_and_unreferenced():
    sp = small()
    place(sp, V, VertexPacket(0, count=4), 0, 5)
    place(sp, T, TrianglePacket(3, (0, 1, 2), last=0b001), 1, 6)   # closes group 0
    assert sp.vdt(0)["refs"] == 1 and sp.vdt(0)["closed"]
    sp.cycle(done=Done(0, 5))                                        # vertex done
    assert drain(sp, 4)["release"] == []                             # still referenced
    sp.cycle(done=Done(1, 6))                                        # triangle done
    out = drain(sp, 5)
    assert out["release"] == [ReleaseCmd(0, 5, V, 0)]
    assert not sp.vdt(0)["valid"] and sp.pt(3)["valid"]             # primitive still open
    sp.cycle(heads(p=PixelPacket(3, mask=0, last=True, size=0)))     # end marker
    out = drain(sp, 4)
    assert out["release"] == [ReleaseCmd(1, 6, T, 3)]
    assert out["log"][-1] == (Kind.CLOSE, P, 0, 1, 6, Ref.NONE, 1, 0, Err.NONE)
    sp.check()
    assert sp.idle()


def test_unclosed_group_is_kept_and_noref_is_released_at_done():
    sp = small()
    place(sp, V, VertexPacket(0), 0, 5)
    place(sp, V, VertexPacket(8, noref=True), 0, 6)
    sp.cycle(done=Done(0, 5))
    sp.cycle(done=Done(0, 6))
    assert drain(sp, 4)["release"] == [ReleaseCmd(0, 6, V, 1)]
    assert sp.vdt(0)["valid"]


def test_primitive_kept_until_its_pixels_are_done():
    sp = small()
    place(sp, V, VertexPacket(0), 0, 1)
    place(sp, T, TrianglePacket(4, (0, 1, 2)), 0, 2)
    place(sp, P, PixelPacket(4), 1, 3)
    place(sp, P, PixelPacket(4, last=True), 2, 3)
    assert sp.pt(4)["pixels"] == 2 and sp.pt(4)["closed"]
    sp.cycle(done=Done(0, 2))
    sp.cycle(done=Done(1, 3))
    assert drain(sp, 4)["release"] == []
    sp.cycle(done=Done(2, 3))
    assert drain(sp, 4)["release"] == [ReleaseCmd(0, 2, T, 4)]
    sp.check()


def test_patch_takes_two_groups_and_is_released_whole():
    sp = small()
    place(sp, PA, PatchPacket(24, size=3), 2, 7)                     # groups 3 and 4
    assert sp.vdt(3)["patch"] and sp.vdt(4)["half"] == 1
    mv = drain(sp, 2)["move"][0]
    assert (mv.index, mv.count, mv.size) == (24, 16, 3)
    sp.cycle(done=Done(2, 7))
    assert drain(sp, 4)["release"] == [ReleaseCmd(2, 7, PA, 3)]
    assert not sp.vdt(3)["valid"] and not sp.vdt(4)["valid"]


def test_patch_control_points_referenced_by_a_triangle():
    sp = small()
    place(sp, PA, PatchPacket(0, noref=False), 1, 7)
    place(sp, T, TrianglePacket(1, (0, 9, 15), last=0b111), 1, 8)
    mv = drain(sp, 3)["move"][-1]
    assert mv.src == (Loc(1, 7, 0), Loc(1, 7, 9), Loc(1, 7, 15)) and mv.ref == Ref.LOCAL


def test_release_is_chosen_into_a_register_and_offered_a_clock_later():
    """Rule 6: a completion in clock t is seen by the scans from t+2; the record is
    chosen into its table's choice register at the edge ending t+2 and pushed from it at
    the edge ending t+3, so it is on ``release`` in t+4 (t+3 before the choice
    register)."""
    sp = small()
    place(sp, V, VertexPacket(8, noref=True), 0, 6)
    sp.cycle(done=Done(0, 6))                                          # clock t
    outs = []
    for k in range(1, 6):
        outs.append(sp.cycle().release)
        assert sp.releasing()["v"] == (1 if k == 2 else None), k        # after t+k
    assert outs == [None, None, None, ReleaseCmd(0, 6, V, 1), None]
    assert not sp.vdt(1)["valid"]


def test_release_registers_offer_vdt_first_and_hold_while_the_fifo_is_full():
    """Rule 6: a choice register keeps its record while the ``release`` FIFO is full,
    and when both registers hold a record the VDT's goes first; rule 5: a completed
    triangle's references drop at the edge ending t+2 (stage E), a clock after its
    ``tdone``."""
    sp = small(fifo_depth=1)
    place(sp, V, VertexPacket(0, count=4), 0, 5)                       # VDT record 0
    place(sp, V, VertexPacket(8, noref=True), 0, 6)                    # VDT record 1
    place(sp, T, TrianglePacket(2, (0, 1, 2), last=0b001), 1, 7)       # closes record 0
    sp.cycle(heads(p=PixelPacket(2, mask=0, last=True, size=0)))       # closes PT 2
    drain(sp, 4)
    hold = dict(ready=(True, True, False, True))
    sp.cycle(done=Done(0, 6), **hold)                  # record 1 releasable from t
    sp.cycle(done=Done(0, 5), **hold)
    sp.cycle(done=Done(1, 7), **hold)                  # clock t
    regs, outs, refs = [], [], []
    for k in range(1, 10):
        outs.append(sp.cycle(**(hold if k <= 4 else {})).release)
        regs.append(sp.releasing())
        refs.append(sp.vdt(0)["refs"])
        sp.check()
    assert refs == [1, 0, 0, 0, 0, 0, 0, 0, 0]   # stage E: dropped at the edge ending t+2
    assert regs == [{"v": None, "p": None},   # t+1: 1 pushed (the FIFO now full)
                    {"v": None, "p": 2},      # t+2: PT 2 chosen (tdone at the edge of t+1)
                    {"v": 0, "p": 2},         # t+3: record 0 chosen (refs 0 from t+3)
                    {"v": 0, "p": 2},         # t+4: FIFO full, both kept
                    {"v": 0, "p": 2},         # t+5: 1 popped; full in S_t
                    {"v": None, "p": 2},      # t+6: record 0 pushed, the VDT's first
                    {"v": None, "p": 2},      # t+7: 0 popped; full in S_t
                    {"v": None, "p": None},   # t+8: PT 2 pushed
                    {"v": None, "p": None}]
    assert outs == [None, None, None, None, ReleaseCmd(0, 6, V, 1), None,
                    ReleaseCmd(0, 5, V, 0), None, ReleaseCmd(1, 7, T, 2)]


def test_occupied_record_waits_then_allocates():
    sp = small()                                       # VDT 16 records: group 16 -> rec 0
    place(sp, V, VertexPacket(0, noref=True), 0, 1)
    take(sp, V, VertexPacket(128))
    for _ in range(4):               # waits (parked, prepared again), nothing requested
        r = sp.cycle(respond=accept(2))
        assert r.consumed is None and r.request is None
    sp.cycle(done=Done(0, 1), respond=accept(2))
    out = [sp.cycle(respond=accept(2)) for _ in range(7)]
    released = [i for i, r in enumerate(out) if r.release is not None]
    consumed = [i for i, r in enumerate(out) if r.consumed is not None]
    assert [out[i].release for i in released] == [ReleaseCmd(0, 1, V, 0)]
    assert len(consumed) == 1 and released[0] < consumed[0]
    assert sp.vdt(0)["tag"] == 1 and not sp.error


# ---------------------------------------------------------------- bad input

def _triangle_setup(sp):
    place(sp, V, VertexPacket(0, count=4), 0, 1)
    place(sp, V, VertexPacket(8, noref=True), 0, 2)
    place(sp, T, TrianglePacket(9, (0, 1, 2), last=0), 1, 3)
    place(sp, P, PixelPacket(9, last=True), 1, 4)


BAD = [
    ("count 0", V, VertexPacket(16, count=0), Err.MALFORMED, 0),
    ("count 9", V, VertexPacket(16, count=9), Err.MALFORMED, 0),
    ("unaligned", V, VertexPacket(17), Err.MALFORMED, 0),
    ("size 0", V, VertexPacket(16, size=0), Err.MALFORMED, 0),
    ("patch unaligned", PA, PatchPacket(20), Err.MALFORMED, 0),
    ("empty pixels", P, PixelPacket(9, mask=0), Err.MALFORMED, 0),
    ("too large", T, TrianglePacket(10, (0, 1, 2), size=9), Err.TOO_LARGE, 9),
    ("unknown vertex", T, TrianglePacket(10, (0, 1, 40)), Err.UNKNOWN_VERTEX, 40),
    ("element >= count", T, TrianglePacket(10, (0, 5, 1)), Err.UNKNOWN_VERTEX, 5),
    ("closed group", T, TrianglePacket(10, (0, 8, 1)), Err.UNKNOWN_VERTEX, 8),
    ("unknown prid", P, PixelPacket(33), Err.UNKNOWN_PRID, 33),
    ("pixel after last", P, PixelPacket(9), Err.UNKNOWN_PRID, 9),
    ("end marker unknown", P, PixelPacket(12, mask=0, last=True), Err.UNKNOWN_PRID, 12),
]


@pytest.mark.parametrize("name, stream, pkt, code, detail", BAD, ids=[b[0] for b in BAD])
def test_bad_packet_refused_reported_and_flow_goes_on(name, stream, pkt, code, detail):
    sp = small()
    _triangle_setup(sp)
    drain(sp, 6)
    assert not sp.error
    take(sp, stream, pkt)
    r = sp.cycle(respond=accept(30))
    assert r.consumed == stream and r.request is None and not r.error
    out = drain(sp, 2)
    assert sp.error
    assert out["err"] == [(code, stream, sp._seq[stream] - 1, 0, detail)]
    assert out["log"] == [(Kind.ERROR, stream, sp._seq[stream] - 1, 0, 0, Ref.NONE, 1, 0, code)]
    take(sp, V, VertexPacket(24))                                    # later packets flow
    r = sp.cycle(respond=accept(31))
    assert r.consumed == V and sp.error
    sp.check()


def test_no_eu_for_a_type():
    sp = small()
    r = sp.cycle(cfg=Config.priority(P, []))
    out = drain(sp, 2)
    assert sp.error and out["err"] == [(Err.NO_EU, Src.CONFIG, 0, 0, P)]
    place(sp, V, VertexPacket(0), 0, 1)
    place(sp, T, TrianglePacket(9, (0, 1, 2)), 1, 3)
    take(sp, P, PixelPacket(9))
    r = sp.cycle(respond=accept(5))
    assert r.consumed == P and r.request is None
    assert drain(sp, 3)["err"] == [(Err.NO_EU, P, 0, 0, P)]


@pytest.mark.parametrize("cfg", [
    Config.priority(V, [0, 4]), Config.priority(V, [1, 1]), Config.priority(V, [0] * 5),
    Config(3), Config.minimum(T, 257, 1), Config.minimum(T, 1, 257),
])
def test_bad_config_ignored_and_flagged(cfg):
    sp = small()
    before = sp.config()
    sp.cycle(cfg=cfg)
    assert sp.config() == before and sp.error
    assert drain(sp, 2)["err"] == [(Err.BAD_CONFIG, Src.CONFIG, 0, 0, cfg.op)]


@pytest.mark.parametrize("done", [Done(0, 7), Done(5, 0), Done(15, 255)])
def test_unknown_completion(done):
    sp = small()
    place(sp, V, VertexPacket(0), 0, 1)
    sp.cycle(done=done)
    assert sp.error and drain(sp, 2)["err"] == [(Err.UNKNOWN_DONE, Src.DONE, 0, done.eu,
                                                  done.entity)]
    sp.check()


def test_bad_answer_is_a_refusal():
    sp = small()
    place(sp, V, VertexPacket(0), 0, 1)
    take(sp, V, VertexPacket(8))
    r = sp.cycle(respond=lambda e, q: Answer(True, 1))
    assert r.consumed is None and r.request[0] == 0 and sp.error
    r = sp.cycle(respond=accept(1))
    assert r.request[0] == 1 and r.consumed == V
    out = drain(sp, 3)
    assert out["err"] == [(Err.BAD_ANSWER, Src.ANSWER, 1, 0, 1)]
    assert out["log"][-1].refused == 0b0001
    sp.check()


def test_commit_stage_writes_tables_a_clock_after_the_accept():
    """Stage C (issue 12 cut 3): the accept's tables land a clock later; a completion in
    that clock is known, an answer naming that entity is bad, and a triangle on that
    vertex group waits (does not offer itself) until the VDT holds it. Stage D: the
    completion's table effects land a clock after its in-flight entry is cleared."""
    sp = small()
    tri = TrianglePacket(3, (0, 1, 2))
    take(sp, V, VertexPacket(0, count=4), status=only(0))
    r = sp.cycle(heads(v=VertexPacket(8), t=tri), respond=accept(5))
    assert r.consumed == V and r.taken == V                     # the tri does not offer
    assert not sp.vdt(0)["valid"] and sp.in_flight() == {}      # written at the next edge
    r = sp.cycle(heads(t=tri), done=Done(0, 5), respond=accept(5))
    assert r.request[0] == 0 and not r.answer.accept and r.consumed is None
    assert r.taken is None                                      # group 0 still in C
    # the completion's entry is cleared at its edge, its table effects (stage D) land
    # at the next one
    assert sp.vdt(0)["valid"] and not sp.vdt(0)["done"] and sp.in_flight() == {}
    r = sp.cycle(heads(t=tri), respond=accept(6))
    assert r.request[0] == 1 and r.consumed == V and r.taken == T
    assert sp.vdt(0)["done"]
    r = sp.cycle(respond=accept(7))
    assert r.request[0] == 0 and r.consumed == T                # group 0's EU first
    out = drain(sp, 4)
    assert out["err"] == [(Err.BAD_ANSWER, Src.ANSWER, 1, 0, 5)]   # 5 was still in C
    assert [(e.etype, e.eu, e.entity) for e in out["log"]] == [(V, 0, 5), (V, 1, 6),
                                                               (T, 0, 7)]
    assert sp.pt(3)["valid"] and sp.vdt(0)["refs"] == 1
    sp.check()


@pytest.mark.parametrize("debit_held", [False, True])
def test_request_debited_in_its_first_clock(debit_held):
    """Stage P's scan counts R's request out of its EU's status in the request's first
    clock only (an EU that answers later, as the QCC, already shows it); with
    ``debit_held`` in every clock R holds it. The scan reads the status of the clock
    before (rule 3), debited by that clock's request: EU0 shows two entities in the
    request's first clock, one from the next (the QCC: the ALLOC taken)."""
    sp = small(debit_held=debit_held)
    take(sp, V, VertexPacket(0))
    two = [EUStatus(16, 2, 64)] + [FULL] * 3
    assert sp.cycle(status=two, respond=None).request[0] == 0    # held, unanswered
    last = [EUStatus(16, 1, 64)] + [FULL] * 3                    # EU0: one entity left
    r = sp.cycle(heads(pa=PatchPacket(24)), status=last, respond=accept(1))
    assert r.consumed == V and r.taken == PA
    r = sp.cycle(status=last, respond=accept(2))
    assert (r.request is None) == debit_held


def test_simultaneous_errors_and_full_error_fifo_never_block():
    sp = small(fifo_depth=2)
    pkts = [VertexPacket(1 + 8 * i) for i in range(6)]
    consumed = 0
    for i in range(10):                    # err output stalled: reports dropped, flow goes on
        r = sp.cycle(heads(v=pkts[0] if pkts else None), done=Done(0, i),
                     ready=dict(err=False))
        if r.taken is not None:
            pkts.pop(0)
        consumed += r.consumed == V
        assert r.lost == (i > 1)           # clock 1: a bad packet and a bad completion
    assert consumed == 6 and sp.error and sp.lost
    assert len(sp.pending("err")) == 2
    out = drain(sp, 4)
    assert [e.code for e in out["err"]] == [Err.UNKNOWN_DONE, Err.MALFORMED]


def test_bad_workload_never_hangs():
    wl = Workload(
        [Item(VertexPacket(0)), Item(VertexPacket(3), expect=Err.MALFORMED),
         Item(VertexPacket(8, size=15), expect=Err.TOO_LARGE)],
        [Item(TrianglePacket(1, (0, 1, 2), last=7), after=((V, 0),)),
         Item(TrianglePacket(2, (0, 1, 99)), after=((V, 0),), expect=Err.UNKNOWN_VERTEX)],
        [Item(PixelPacket(1, last=True), after=((T, 0),)),
         Item(PixelPacket(77), expect=Err.UNKNOWN_PRID),
         Item(PixelPacket(1), after=((P, 0),), expect=Err.UNKNOWN_PRID)],
        [Item(PatchPacket(64)), Item(PatchPacket(68), expect=Err.MALFORMED)])
    sp = small()
    eus = [RandomEU(e, latency=(0, 2), refuse=0.2) for e in range(4)]
    r = sp.run(wl, eus, stall_cycles=200, max_cycles=2000, check=True)
    assert r.error and not r.lost
    st = Scoreboard(sp, wl).check(r)
    assert st.errors == 6 and st.allocations == 4


# ---------------------------------------------------------------- output back-pressure

def test_full_log_or_move_fifo_stops_arbitration_and_loses_nothing():
    sp = small(fifo_depth=2)
    drain(sp, 0)
    vs = [VertexPacket(8 * i, noref=True) for i in range(3)]
    consumed = 0
    for _ in range(6):
        r = sp.cycle(heads(v=vs[0]), respond=accept(consumed), ready=dict(log=False))
        if r.taken is not None:
            vs.pop(0)
        consumed += r.consumed is not None
    # a pass starts only when the log keeps a free entry after the clock's push
    assert consumed == 2 and len(sp.pending("log")) == 2 and len(vs) == 1
    r = sp.cycle(heads(v=vs[0]), respond=accept(2))
    assert r.log.seq == 0 and r.taken is None and not r.started    # popped at this edge
    r = sp.cycle(heads(v=vs[0]), respond=accept(2))
    assert r.taken == V
    r = sp.cycle(respond=accept(2))
    assert r.consumed == V
    out = drain(sp, 4)
    assert [e.seq for e in out["log"]] == [0, 1, 2] and len(out["move"]) == 3


# ---------------------------------------------------------------- EU models

def test_scripted_eu_status_points_and_latency_sequence():
    eu = ScriptedEU(answers=[False], latency=[1, 0], status=[(0, ROOM), (2, FULL)],
                    done_after=2)
    q = (V, 1, 1, 0)
    assert eu.answer(q) is None
    eu.tick()
    assert eu.answer(q) == Answer(False, 0) and eu.status() == ROOM
    eu.tick()
    assert eu.answer(q) == Answer(True, 0) and eu.status() == FULL
    eu.tick()
    eu.tick()
    assert list(eu.completions) == []                       # its data has not arrived
    eu.move(MoveCmd(0, 0, V, 0, 1))
    eu.tick()
    assert list(eu.completions) == [0]
    with pytest.raises(ValueError, match="latency sequence is shorter"):
        eu.answer((V, 1, 1, 1))


def test_random_eu_accounts_resources():
    eu = RandomEU(0, records=2, entities=2, lines=4, work=(1, 1))
    assert eu.answer(AllocRequest(V, 3, 1, 0)) == Answer(True, 0)
    assert eu.status() == EUStatus(1, 1, 1)
    assert eu.answer(AllocRequest(P, 2, 0, 1)) == Answer(False, 0)      # not enough lines
    eu.move(MoveCmd(0, 0, V, 0, 3))
    eu.tick()
    eu.tick()
    assert list(eu.completions) == [0] and eu.status() == EUStatus(1, 1, 1)   # held
    eu.delivered(0)
    eu.release(ReleaseCmd(0, 0, V, 0))
    assert eu.status() == EUStatus(2, 2, 4) and not eu.errors


# ---------------------------------------------------------------- workloads

def test_build_workload_dependencies_and_closing_bits():
    tris = [(0, 1, 8), (1, 8, 9), (16, 17, 18)]
    wl = build_workload(tris, [[(0, 0, 1)], [], [(4, 4, 3), (8, 4, 5)]], vdt_records=2,
                        pt_records=2)
    v, t, p, _ = wl.streams
    assert [i.packet.base for i in v] == [0, 8, 16]
    assert v[2].after == ((T, 1),)                     # group 2 reuses group 0's record
    assert [i.packet.last for i in t] == [0b000, 0b111, 0b111]
    assert t[0].after == ((V, 0), (V, 1)) and t[2].after == ((V, 2), (P, 0))
    assert [(i.packet.prid, i.packet.mask, i.packet.last) for i in p] == \
        [(0, 1, True), (1, 0, True), (2, 3, False), (2, 5, True)]
    assert p[1].after == ((T, 1),) and p[3].after == ()


def test_scene_workload_uses_the_raster_models():
    wl = scene_workload("mesh", 32, 32, 8, seed=1)
    v, t, p, _ = wl.streams
    assert len(t) == 8 and len(v) >= 1
    idx = np.array([i.packet.indices for i in t])
    assert idx.max() + 1 <= 8 * len(v)
    assert all(i.packet.last or not i.packet.is_end for i in p)
    assert sum(bin(i.packet.mask).count("1") for i in p) == 32 * 32   # a mesh covers all


# ---------------------------------------------------------------- random mixes

CFG = [Config.minimum(V, 6, 16), Config.minimum(T, 3, 8), Config.minimum(PA, 6, 16)]


def _random_ready(seed):
    rng = np.random.default_rng(seed)
    return lambda t: tuple(rng.random(4) > 0.3)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_mix_with_random_eus(seed):
    sp = Spreader(n_eus=4, vdt_records=16, pt_records=16, fifo_depth=2)
    wl = synthetic_workload(seed, n_triangles=60, vdt_records=16, pt_records=16)
    eus = [RandomEU(seed * 10 + e, latency=(0, 3), refuse=0.15, work=(1, 30), stall=0.05)
           for e in range(4)]
    r = sp.run(Feeder(wl, gap=0.3, rng=seed), eus, config=CFG, ready=_random_ready(seed),
               stall_cycles=3000, check=True)
    st = Scoreboard(sp, wl).check(r)
    assert not r.error and st.allocations + st.closes == len(wl)
    assert st.refusals > 0 and st.local > 0 and st.global_ > 0
    assert not any(eu.errors for eu in eus) and sp.idle()


def test_random_mix_default_size_with_long_refusals_and_dedicated_eus():
    sp = Spreader()
    wl = synthetic_workload(7, n_triangles=80, n_patches=3)
    cfg = CFG + [Config.priority(P, [3, 2]), Config.priority(V, [0, 1, 2]),
                 Config.priority(T, [0, 1, 2]), Config.priority(PA, [1])]
    eus = [RandomEU(70 + e, latency=(0, 2), refuse=0.9 if e == 0 else 0.05, work=(1, 40),
                    stall=0.3 if e == 2 else 0.0) for e in range(4)]
    r = sp.run(wl, eus, config=cfg, stall_cycles=5000)
    st = Scoreboard(sp, wl).check(r)
    assert not r.error and st.per_eu[0] < st.per_eu[1]   # EU0 refuses 90 %
    per_type = {(e.etype, e.eu) for e in r.entries() if e.kind == Kind.ALLOC}
    assert all(eu == 3 or eu == 2 for t, eu in per_type if t == P)
    assert all(eu != 3 for t, eu in per_type if t in (V, T))
    assert all(eu == 1 for t, eu in per_type if t == PA)


@pytest.mark.parametrize("seed", [4, 5])
def test_random_mix_with_qcc_eus(seed):
    sp = Spreader(n_eus=3, vdt_records=32, pt_records=32)
    wl = synthetic_workload(seed, n_triangles=50, vdt_records=32, pt_records=32)
    eus = [QCCEU(QCCModel(records=24, entities=24, lines=48), seed * 10 + e, work=(1, 6))
           for e in range(3)]
    r = sp.run(Feeder(wl, gap=0.2, rng=seed), eus, config=CFG, stall_cycles=3000)
    st = Scoreboard(sp, wl).check(r)
    assert not r.error and not any(eu.errors for eu in eus)
    assert all(eu.qcc.status().free_records == 24 for eu in eus)   # everything released
    assert st.allocations > 0


def test_scene_mix_with_qcc_eus():
    sp = Spreader(n_eus=4)
    wl = scene_workload("mesh", 48, 48, 24, seed=3)
    eus = [QCCEU(QCCModel(records=32, entities=32, lines=64), e) for e in range(4)]
    r = sp.run(wl, eus, config=CFG, stall_cycles=3000)
    st = Scoreboard(sp, wl).check(r)
    assert not r.error and st.local > st.global_


def test_runs_are_deterministic():
    def one():
        sp = small()
        wl = synthetic_workload(9, n_triangles=30, vdt_records=16, pt_records=16)
        eus = [RandomEU(e, latency=(0, 2), refuse=0.2) for e in range(4)]
        r = sp.run(Feeder(wl, gap=0.3, rng=1), eus, config=CFG)
        return r.log, r.move, r.release, r.requests
    assert one() == one()


# ---------------------------------------------------------------- the scoreboard itself

def _checked_run():
    sp = small()
    wl = synthetic_workload(11, n_triangles=24, vdt_records=16, pt_records=16)
    eus = [RandomEU(e, latency=(0, 1), refuse=0.2) for e in range(4)]
    r = sp.run(wl, eus, config=CFG)
    Scoreboard(sp, wl).check(r)
    return sp, wl, r


def _bump_eu(r):
    i = next(i for i, (_, e) in enumerate(r.log) if e.kind == Kind.ALLOC and i > 3)
    t, e = r.log[i]
    r.log[i] = (t, e._replace(eu=(e.eu + 1) % 4))


@pytest.mark.parametrize("mutate, msg", [
    (lambda r: r.log.pop(3), "consumed packets without a log entry|seq|does not match"),
    (lambda r: _bump_eu(r), "no matching accepted request"),
    (lambda r: r.release.pop(0), "never released|without a release"),
    (lambda r: r.requests.__setitem__(0, r.requests[0]._replace(
        status=tuple(EUStatus(0, 0, 0) for _ in r.requests[0].status))), "without the minimum"),
    (lambda r: r.move.__setitem__(4, (r.move[4][0], dataclasses.replace(r.move[4][1], ref=3))),
     "move"),
    (lambda r: r.completions.pop(), "never completed|without a release|release of"),
])
def test_scoreboard_catches_broken_runs(mutate, msg):
    sp, wl, r = _checked_run()
    mutate(r)
    with pytest.raises(AssertionError, match=msg):
        Scoreboard(sp, wl).check(r)


def test_scoreboard_catches_a_skipped_candidate():
    sp = small()
    wl = Workload([VertexPacket(8 * i, noref=True) for i in range(4)])
    eus = [ScriptedEU(status=FULL if e == 0 else ROOM) for e in range(4)]
    r = sp.run(wl, eus)
    Scoreboard(sp, wl).check(r)
    assert {q.eu for q in r.requests} == {1}
    i = 2
    q = r.requests[i]
    st = list(q.status)
    st[0] = EUStatus(16, 16, 64)
    r.requests[i] = q._replace(status=tuple(st))
    with pytest.raises(AssertionError, match="earlier candidate EU 0 met the minimum"):
        Scoreboard(sp, wl).check(r)


def test_scoreboard_catches_an_early_release():
    sp, wl, r = _checked_run()
    _, rel = r.release[0]
    key = (rel.eu, rel.entity)
    c = next(c for c, e, n in r.completions if (e, n) == key)
    r.release[0] = (c - 1, rel)
    with pytest.raises(AssertionError, match="before its completion|before it was closed"):
        Scoreboard(sp, wl).check(r)


# ---------------------------------------------------------------- load balance (rotation)

def test_rotation_spreads_a_type_over_its_list():
    """With room everywhere, vertex packets go round the list (fixed order: all to EU0).
    Back to back, a packet is prepared in the clock its predecessor is accepted, so it
    walks from the EU after the allocation before: the EUs take two each in turn."""
    assert [e.eu for e in _vertex_run(0, rotate=True).entries()] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert [e.eu for e in _vertex_run(0).entries()] == [0] * 8


def test_rotation_moves_at_the_request_not_the_accept():
    """With EUs that answer 2 clocks after the request (as the QCC behind its adapter),
    the next packet is prepared after its predecessor's request: it walks from the EU
    after that one, so the EUs take one packet each in turn (remembered at the accept,
    the walk moved after the next packet was prepared, and they took two each)."""
    assert [e.eu for e in _vertex_run(2, rotate=True).entries()] == [0, 1, 2, 3, 0, 1, 2, 3]


def test_rotation_walks_the_configured_list_after_the_last_eu():
    sp = small(rotate=True)
    assert sp.walk(V) == (0, 1, 2, 3)
    place(sp, V, VertexPacket(0), 2, 10)
    assert sp.walk(V) == (3, 0, 1, 2)
    assert sp.walk(T) == (0, 1, 2, 3)                  # per type
    sp.cycle(cfg=Config.priority(V, (2, 1, 3)))
    assert sp.walk(V) == (1, 3, 2)
    sp.cycle(cfg=Config.priority(V, (1, 3)))           # last EU left out: from the start
    assert sp.walk(V) == (1, 3)


def test_rotation_keeps_locality_first():
    """A triangle still goes to the EU holding its vertices, whatever the rotation."""
    sp = small(rotate=True)
    _groups(sp)                                        # last vertex allocation: EU3
    assert sp.candidates(T, (2,)) == (2, 0, 1, 3)
    place(sp, T, TrianglePacket(1, (0, 1, 2)), 2, 20)
    assert drain(sp, 2)["log"][-1].eu == 2
    # locality ties are broken in walk order: after EU2 comes EU3, then EU1
    take(sp, T, TrianglePacket(2, (0, 8, 16)))
    sp.cycle(respond=accept(21))
    assert drain(sp, 2)["log"][-1].eu == 3


# ---------------------------------------------------------------- stage L (decision 11)

@pytest.mark.parametrize("stage", [True, False])
def test_input_stage_takes_inputs_a_clock_before_stage_p(stage):
    """Stage L takes every stream's head whose register is free, several in one clock,
    and stage P prepares a packet a clock after it was taken; its request follows a
    clock later. (The case ``stage=False`` is the contract without stage L, for
    contrast: one input a clock, prepared in the clock it is taken.)"""
    sp = small(input_stage=stage)
    h = heads(v=VertexPacket(0, 8, 1), pa=PatchPacket(16, 1))
    shown(sp, empty(sp))
    r = sp.cycle(h)
    if not stage:
        assert r.inputs == (V,) and r.taken == V and r.started
        return
    assert r.inputs == (V, PA) and r.taken is None and not r.started
    r = sp.cycle(respond=accept(3))
    assert r.inputs == () and r.taken == V and r.started and r.request is None
    r = sp.cycle(respond=accept(4))
    assert r.request[0] == 0 and r.consumed == V and r.taken == PA
    r = sp.cycle(respond=accept(5))
    assert r.consumed == PA
    assert [e.entity for e in drain(sp, 4)["log"]] == [4, 5]


def test_input_stage_keeps_one_allocation_per_clock():
    """Back to back through stage L: a vertex stream that every first candidate
    accepts is consumed one packet per clock from the third clock on (the first packet
    taken in clock 0, prepared in 1, requested and accepted in 2)."""
    sp = small(input_stage=True, vdt_records=32)
    packets = [VertexPacket(8 * g, 8, 1) for g in range(12)]
    shown(sp, empty(sp))
    consumed, entity = [], iter(range(100))
    for t in range(20):
        r = sp.cycle(heads(v=packets[0] if packets else None),
                     respond=lambda e, q: Answer(True, next(entity)))
        if r.inputs:
            packets.pop(0)
        if r.consumed is not None:
            consumed.append(t)
    assert consumed == list(range(2, 14))


def test_input_stage_takes_a_triangle_once_its_vertices_are_written():
    """Stage L takes a triangle only when no vertex or patch packet inside, in stage C
    or in stage L provides its groups (so a producer that reuses a record once the
    triangle closing it was taken still finds the triangle's vertices written): the
    triangle presented while its vertex packet waits in stage L is taken in the clock
    after the vertex packet's tables are written, and is allocated with no
    UNKNOWN_VERTEX."""
    sp = small(input_stage=True)
    shown(sp, empty(sp))
    bad_pixel = PixelPacket(5, mask=0, last=False)          # MALFORMED, prepared first
    r = sp.cycle(heads(v=VertexPacket(0, 8, 1), p=bad_pixel))
    assert r.inputs == (V, P)
    tri = TrianglePacket(1, (0, 1, 2), size=1)
    taken_at = {}
    for t in range(1, 12):
        r = sp.cycle(heads(t=tri) if T not in taken_at else heads(),
                     respond=lambda e, q: Answer(True, 8 + q.etype))
        if r.consumed is not None:
            taken_at.setdefault(("consumed", r.consumed), t)
        if r.inputs:
            assert r.inputs == (T,)
            taken_at[T] = t
    # clock 1: the pixel packet prepared (the vertex packet waits in stage L); 2: the
    # vertex packet prepared; 3: accepted (then in C, written at the edge ending 4)
    assert taken_at[("consumed", V)] == 3 and taken_at[T] == 5
    assert taken_at[("consumed", T)] == 7
    log = drain(sp, 4)["log"]
    assert [(e.kind, e.etype) for e in log] == [(Kind.ERROR, P), (Kind.ALLOC, V),
                                                (Kind.ALLOC, T)]


# ---------------------------------------------------------------- RTL constants

def test_hw_codes_and_layouts_match_the_golden_model():
    """The RTL's enumerations and port layouts are the model's (names, values, widths)."""
    import golden.spreader as g
    import hw.spreader as h
    for hw_enum, model_enum in ((h.EType, g.EType), (h.Err, g.Err), (h.Src, g.Src),
                                (h.Kind, g.Kind), (h.Ref, g.Ref), (h.CfgOp, g.CfgOp)):
        assert {e.name: e.value for e in hw_enum} == {e.name: e.value for e in model_enum}
    for kw in ({}, dict(n_eus=8, vdt_records=16, pt_records=4, index_bits=20, prid_bits=9,
                        coord_bits=10, eu_records=100, eu_lines=1000)):
        rtl, model = h.Spreader(**kw), g.Spreader(**kw)
        for port, layout in rtl.lay.items():
            assert [(name, field.width) for name, field in layout] == model.layout(port), port
