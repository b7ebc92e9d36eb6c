"""The clock-exact spreader model (:class:`Spreader`); its contract is the docstring of
:mod:`golden.spreader`."""

from collections import deque

import numpy as np

from golden.spreader.types import (
    AllocRequest, Answer, CfgOp, Config, CycleResult, Done, ENTITIES, ENTITY_W, EType,
    EUStatus, EU_W, Err, ErrorReport, GROUP, Kind, Loc, LogEntry, MAX_EUS, MoveCmd,
    NO_SRC, PACKET_TYPES, PATCH_POINTS, PRIORITY, Ref, ReleaseCmd, ReqRecord, RunResult,
    SAT, Src,
)
from golden.spreader.codec import Codec
from golden.spreader.eus import (
    DoneMerger,
)
from golden.spreader.workloads import (
    Feeder,
)
from golden.params import check_field, check_int, check_pow2


class _Fifo:
    def __init__(self, depth):
        self.depth = depth
        self.q = deque()

    def room(self):
        return len(self.q) < self.depth


class _Pass:
    __slots__ = ("stream", "packet", "seq", "outcome", "code", "detail", "cands", "need",
                 "req", "fresh", "refused", "locs", "rec", "vrecs", "tri")

    def __init__(self, stream, packet, seq):
        self.stream, self.packet, self.seq = stream, packet, seq
        self.outcome = None      # None (allocate), "error", "close", "wait"
        self.code, self.detail = Err.NONE, 0
        self.cands, self.need = (), (1, 1)
        self.req = None          # the next request: (index in cands, eu), None if none
        self.fresh = True        # the request is in its first clock
        self.refused = 0
        self.locs = ()           # triangle: Loc per vertex
        self.rec = None          # VDT record (vertex/patch) or PT record (triangle/pixel)
        self.vrecs = ()          # triangle: distinct VDT records named
        self.tri = None          # pixel: the triangle's Loc


def rotated(lst, last):
    """``lst`` walked from the entry after ``last`` (from its start when ``last`` is None
    or not in it)."""
    k = lst.index(last) + 1 if last in lst else 0
    return tuple(lst[k:]) + tuple(lst[:k])


class Spreader(Codec):
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
    rotate : bool
        Load balance (decision 9 of the module docstring): walk each type's priority
        list from the EU after the one that type's last request went to (True,
        default), or always from its first entry (False).
    debit_held : bool
        Stage P's scan counts stage R's request out of its EU's status (rule 3) in the
        request's first clock only (False, default: EUs whose status shows an
        allocation from the clock after they took it, as the QCC, whose ALLOC takes
        effect at the edge it is taken and which answers a clock later), or in every
        clock R holds it (True: EUs whose status changes only at their answer).
    patience : int
        Pixel locality (decision 10 of the module docstring): in its first ``patience``
        passes a pixel packet's candidate list is its triangle's EU alone (when that EU
        is in the pixel list), so a pass that finds that EU without room parks the
        packet rather than place it elsewhere; from pass ``patience + 1`` on, the whole
        list. 0..255, default 0 (off).
    local_records : int
        Triangle locality yields to load (decision 10): a vertex-holding EU heads a
        triangle's candidate list only while it has at least ``local_records`` free
        records in the status the pass's first scan reads (:meth:`debited`); one with
        fewer keeps its place in the walk. 0 .. ``eu_records``, default 0 (off).
    input_stage : bool
        Stage L (decision 11 of the module docstring): each input's packet is taken
        into a register of its stream a clock before stage P can prepare it (True), or
        stage P prepares the input's head itself (False, default).

    Notes
    -----
    Drive it with :meth:`cycle` (one clock) or :meth:`run` (a closed loop with EU
    models and a :class:`Feeder`). State is read through :meth:`vdt`, :meth:`pt`,
    :meth:`in_flight`, :meth:`config`, :meth:`releasing` (the release engine's choice
    registers, rule 6) and :meth:`check`. :attr:`scan_status` is the
    scans' status register (rule 3: each EU's status of the clock before, debited;
    every EU empty at reset); a testbench whose RTL loads it at an edge before the
    model's first clock sets it to what the RTL loaded (:meth:`run` from reset loads
    the EU models' status), and :attr:`scanned` is what the last clock's scans read.
    """

    def __init__(self, n_eus=4, vdt_records=256, pt_records=256, index_bits=16,
                 prid_bits=16, coord_bits=12, max_lines=8, eu_records=256, eu_lines=256,
                 starve_limit=8, fifo_depth=4, rotate=True, debit_held=False, patience=0,
                 local_records=0, input_stage=False):
        self.n_eus = check_int("n_eus", n_eus, 1, MAX_EUS)
        self.vdt_records = check_pow2("vdt_records", vdt_records, 2, 256)
        self.pt_records = check_pow2("pt_records", pt_records, 1, 256)
        self._vbits = self.vdt_records.bit_length() - 1
        self._pbits = self.pt_records.bit_length() - 1
        self.index_bits = check_int("index_bits", index_bits, 3 + self._vbits, 32)
        self.prid_bits = check_int("prid_bits", prid_bits, max(1, self._pbits), 32)
        self.coord_bits = check_int("coord_bits", coord_bits, 4, 16)
        self.eu_records = check_int("eu_records", eu_records, 1, 256)
        self.eu_lines = check_int("eu_lines", eu_lines, 1, 65536)
        self.max_lines = check_int("max_lines", max_lines, 1, min(15, self.eu_lines))
        self.starve_limit = check_int("starve_limit", starve_limit, 0, SAT)
        self.fifo_depth = check_int("fifo_depth", fifo_depth, 1, 64)
        if not isinstance(rotate, (bool, np.bool_)):
            raise TypeError(f"rotate must be a bool, not {rotate!r}")
        self.rotate = bool(rotate)
        if not isinstance(debit_held, (bool, np.bool_)):
            raise TypeError(f"debit_held must be a bool, not {debit_held!r}")
        self.debit_held = bool(debit_held)
        self.patience = check_int("patience", patience, 0, SAT)
        self.local_records = check_int("local_records", local_records, 0, self.eu_records)
        if not isinstance(input_stage, (bool, np.bool_)):
            raise TypeError(f"input_stage must be a bool, not {input_stage!r}")
        self.input_stage = bool(input_stage)
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
        self._last_eu = [None] * 4          # per type: the EU of its last request
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
        self._pass = None                   # the request stage (R): the pass in progress
        self._cstage = None                 # the commit stage (C): (pass, eu, entity) of
                                            # the accept of the clock before
        self._dstage = None                 # the completion stage (D): (type, record) of
                                            # the completion of the clock before
        self._estage = ()                   # stage E: the VDT records whose reference the
                                            # triangle completed two clocks before drops
        # the release engine's choice registers (rule 6): per table, the record its
        # scan chose in an earlier clock, offered to the ``release`` FIFO (None: empty)
        self._rel = {"v": None, "p": None}
        self._held = [None] * 4             # per stream: the packet taken, not yet consumed
        self._shown = [None] * 4            # per stream: the head shown and not taken
        self._lstage = [None] * 4           # stage L (input_stage): per stream, the
                                            # packet taken from its input, not yet by P
        self.error = False
        self.lost = False
        self.debit_request = None           # R's request that this clock's P debited
        # the scans' status register (rule 3, issue 12/15): the status of the clock
        # before less R's request of that clock; at reset every EU empty
        self.scan_status = [EUStatus(self.eu_records, ENTITIES, self.eu_lines)] * self.n_eus
        self.scanned = None                 # the status this clock's scans read
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
        """No record held, nothing in flight, no packet inside, all FIFOs empty."""
        return (not self.v_valid.any() and not self.p_valid.any() and not self._ift
                and self._pass is None and not any(self._held) and not any(self._lstage)
                and self._cstage is None
                and self._dstage is None and not self._estage
                and not any(f.q for f in self._fifo.values()))

    def idle_allocator(self):
        """No packet inside the spreader (taken and not yet consumed; stage L's too)."""
        return self._pass is None and not any(self._held) and not any(self._lstage)

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
        for r in self._estage:
            refs[r] += 1                        # its decrement comes at the next edge
        assert (refs == self.v_refs).all(), "VDT reference counts out of step"
        pix = np.zeros(self.pt_records, np.int64)
        if self._dstage is not None and self._dstage[0] == EType.PIXEL:
            pix[self._dstage[1]] += 1           # its decrement comes at the next edge
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
        # a chosen record stays releasable until it is released (rule 6)
        for k, r in self._rel.items():
            assert r is None or self._releasable(k)[r], f"chosen {k} record {r} not releasable"


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

    def walk(self, etype):
        """The type's priority list in the order it is walked: from its first entry, or
        (``rotate``) from the entry after the EU of the type's last request."""
        return rotated(self._list[etype], self._last_eu[etype] if self.rotate else None)

    def candidates(self, etype, local=()):
        """The candidate list: the EUs of ``local`` that are in the type's list (in the
        given order), then the rest of the list in walk order."""
        lst = self.walk(etype)
        first = [e for e in local if e in lst]
        return tuple(first + [e for e in lst if e not in first])

    # ================================================================ prepare (stage P)
    def _inside(self, etype):
        """The packets of ``etype`` whose table writes are still to come: the one inside
        the spreader (taken, not consumed) and the one in the commit stage."""
        c = self._cstage
        return [pkt for pkt in (self._held[etype],
                                c[0].packet if c is not None and c[0].stream == etype
                                else None) if pkt is not None]

    def _stages(self):
        """The passes whose table writes P cannot see yet: R's (written a clock after
        its accept) and C's (written at this clock's edge)."""
        return [p for p in (self._pass, self._cstage and self._cstage[0]) if p is not None]

    def _covers(self, etype, index):
        """True when a packet of ``etype`` (vertex or patch) inside the spreader or in
        the commit stage will provide the group of vertex ``index`` (a triangle naming
        it waits for it)."""
        g = index >> 3
        return any(g == pkt.base >> 3 or (etype == EType.PATCH and g == (pkt.base >> 3) + 1)
                   for pkt in self._inside(etype))

    def _scan(self, p, status, pos):
        """The first candidate of ``p`` at or after ``pos`` whose ``status`` meets its
        minimum, as ``(index, eu)``, or None (rule 3: the scan of the clock before a
        request)."""
        for i in range(pos, len(p.cands)):
            if self.meets(status[p.cands[i]], p.need):
                return i, p.cands[i]
        return None

    def _prepare(self, s, pkt, status):
        """Stage P: checks, lookups, candidate list, minimum and the first request's
        scan of a packet from ``S_t``, this clock's status and the request stage's
        packet (rules 2 and 3 of the timing contract)."""
        p = self._fill(s, pkt, status)
        if p.outcome is None:
            p.req = self._scan(p, status, 0)
        return p

    @staticmethod
    def debited(status, request):
        """``status`` less ``request`` (stage R's request of its clock if in its first
        clock or ``debit_held``, else None: :attr:`debit_request`): its EU counts one
        record, one entity and the request's lines less (its accept shows in its status
        only from the next clock). The scans' register (:attr:`scan_status`, rule 3) is
        a clock's status debited by that clock's request; stage P's scan debits it again
        by R's request of its own clock."""
        status = list(status)
        if request is not None:
            e, req = request
            st = status[e]
            status[e] = EUStatus(max(0, st.free_records - 1), max(0, st.free_entities - 1),
                                 max(0, st.free_lines - req.lines))
        return status

    def _fill(self, s, pkt, status):
        p = _Pass(s, pkt, self._seq[s])
        V, stages = self.vdt_records, self._stages()   # R's and C's passes
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
                return self._pixel_lookup(p, "close")
        if pkt.size == 0:
            return self._bad(p, Err.MALFORMED, 0)
        if pkt.size > self.max_lines:
            return self._bad(p, Err.TOO_LARGE, pkt.size)
        if not self._list[s]:
            return self._bad(p, Err.NO_EU, s)
        p.need = self.need(s, pkt.size)
        if s in (EType.VERTEX, EType.PATCH):
            p.rec = self._vrec(pkt.base)
            recs = {p.rec} if s == EType.VERTEX else {p.rec, (p.rec + 1) % V}
            r_recs = set()
            for r in stages:
                if r.stream in (EType.VERTEX, EType.PATCH):
                    x = self._vrec(r.packet.base)
                    r_recs |= {x} if r.stream == EType.VERTEX else {x, (x + 1) % V}
            if any(self.v_valid[x] for x in recs) or recs & r_recs:
                p.outcome = "wait"
            p.cands = self.candidates(s)
        elif s == EType.TRIANGLE:
            locs, recs, waits = [], [], False
            closing = set()
            for r in stages:
                if r.stream == EType.TRIANGLE:
                    closing |= {self._vrec(i) for k, i in enumerate(r.packet.indices)
                                if r.packet.last >> k & 1}
            for i in pkt.indices:
                x = self._vlookup(i)
                if x is None:
                    if not (self._covers(EType.VERTEX, i) or self._covers(EType.PATCH, i)):
                        return self._bad(p, Err.UNKNOWN_VERTEX, i)
                    waits, x = True, self._vrec(i)
                elif x in closing:
                    waits = True
                locs.append(Loc(int(self.v_eu[x]), int(self.v_ent[x]),
                                int(self.v_half[x]) * 8 + (i & 7)))
                if x not in recs:
                    recs.append(x)
            p.locs, p.vrecs = tuple(locs), tuple(recs)
            p.rec = self._prec(pkt.prid)
            if waits or self.p_valid[p.rec] or any(
                    r.stream == EType.TRIANGLE and self._prec(r.packet.prid) == p.rec
                    for r in stages):
                p.outcome = "wait"
            lst = self.walk(s)
            count = {}
            for loc in locs:
                count[loc.eu] = count.get(loc.eu, 0) + 1
            local = sorted((e for e in count if e in lst
                            and status[e].free_records >= self.local_records),
                           key=lambda e: (-count[e], lst.index(e)))
            p.cands = self.candidates(s, local)
        else:
            self._pixel_lookup(p, None)
            if p.outcome != "error":
                if self.pass_number(s) <= self.patience and p.tri.eu in self._list[s]:
                    p.cands = (p.tri.eu,)       # patience: its triangle's EU only
                else:
                    p.cands = self.candidates(s, (p.tri.eu,))
        return p

    def pass_number(self, s):
        """The number of the pass stage P prepares for stream ``s`` in this clock: 1 for
        the input's head, for a parked packet 1 + the passes it took."""
        parked = self._held[s] is not None and (self._pass is None or self._pass.stream != s)
        return min(SAT, self._passes[s] + 1) if parked else 1

    def _pixel_lookup(self, p, outcome):
        """The PT lookup of a pixel packet or end marker: its triangle, a wait (the
        triangle is inside the spreader or in the commit stage, or the request or
        commit stage closes the primitive) or UNKNOWN_PRID."""
        pkt = p.packet
        q = self._plookup(pkt.prid)
        if q is None:
            if not self._provides_prid(pkt.prid):
                return self._bad(p, Err.UNKNOWN_PRID, pkt.prid)
            q, outcome = self._prec(pkt.prid), "wait"
        elif any(r.stream == EType.PIXEL and r.packet.last and self._prec(r.packet.prid) == q
                 for r in self._stages()):
            outcome = "wait"
        p.rec, p.outcome = q, outcome
        p.tri = Loc(int(self.p_eu[q]), int(self.p_ent[q]), 0)
        return p

    def _provides_prid(self, prid):
        """True when the triangle inside the spreader or in the commit stage has
        ``prid``."""
        return any(tri.prid == prid for tri in self._inside(EType.TRIANGLE))

    def _offers(self, src):
        """Which streams offer a packet to the arbiter: not a triangle that names a group
        a vertex or patch packet inside or in the commit stage provides, nor a pixel
        packet whose triangle is inside or in the commit stage (they would only wait:
        the arbiter takes another stream instead)."""
        offer = [x is not None for x in src]
        tri, pix = src[EType.TRIANGLE], src[EType.PIXEL]
        if tri is not None and self._provided(tri):
            offer[EType.TRIANGLE] = False
        if pix is not None and self._provides_prid(pix.prid):
            offer[EType.PIXEL] = False
        return offer

    def _provided(self, tri, stage_l=False):
        """A vertex or patch packet inside or in the commit stage (and with
        ``stage_l``, in stage L) provides a group ``tri`` names."""
        lv, lp = self._lstage[EType.VERTEX], self._lstage[EType.PATCH]

        def in_l(g):
            return stage_l and ((lv is not None and g == lv.base >> 3) or (
                lp is not None and g in (lp.base >> 3, (lp.base >> 3) + 1)))
        return any(self._covers(EType.VERTEX, i) or self._covers(EType.PATCH, i)
                   or in_l(i >> 3) for i in tri.indices)

    def _enters_l(self, s, pkt, taken):
        """Stage L takes ``pkt`` from input ``s`` (decision 11): its register is empty
        or stage P takes its packet, and for a triangle (pixel packet) no vertex or
        patch packet (triangle) inside, in the commit stage or in stage L provides its
        data."""
        if pkt is None or not (self._lstage[s] is None or taken == s):
            return False
        if s == EType.TRIANGLE:
            return not self._provided(pkt, stage_l=True)
        if s == EType.PIXEL:
            lt = self._lstage[EType.TRIANGLE]
            return not (self._provides_prid(pkt.prid) or (lt is not None and lt.prid == pkt.prid))
        return True

    @staticmethod
    def _bad(p, code, detail):
        p.outcome, p.code, p.detail = "error", code, detail
        return p

    def _arbitrate(self, valid):
        """The winner among the streams whose ``valid`` is set (starving first, then
        fixed priority), or None; also returns the new starvation counters."""
        valid = [s for s in PRIORITY if valid[s]]
        if not valid:
            return None, self._starve
        starving = [s for s in valid if self._limit and self._starve[s] >= self._limit]
        win = (starving or valid)[0]
        return win, [0 if s not in valid or s == win else min(SAT, self._starve[s] + 1)
                     for s in range(4)]

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
            ``status[e]`` this clock (the scans read it from the next clock, through
            :attr:`scan_status`); default every EU empty (full capacity).
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
        ports = heads
        for s, h in enumerate(heads):
            if h is not None:
                self._check_packet(s, h)
        if cfg is not None and not isinstance(cfg, Config):
            raise TypeError(f"cfg must be a Config or None, not {type(cfg).__name__!r}")
        if cfg is not None:
            self.pack("cfg", cfg)
        if done is not None:
            done = Done(check_field("done.eu", done[0], EU_W), check_field("done.entity", done[1], ENTITY_W))
        if status is None:
            status = [EUStatus(self.eu_records, ENTITIES, self.eu_lines)] * self.n_eus
        status = [EUStatus(*st) for st in status]
        if len(status) != self.n_eus:
            raise ValueError(f"status must hold {self.n_eus} entries, not {len(status)}")
        if ready is None:
            ready = dict(move=True, log=True, release=True, err=True)
        elif not isinstance(ready, dict):
            ready = dict(zip(("move", "log", "release", "err"), ready))
        for s, h in enumerate(self._shown):
            if h is not None and heads[s] != h:
                raise ValueError(f"stream {s} changed its head while not taken")
        if self.input_stage:
            heads = tuple(self._lstage)     # stage P's heads: stage L's packets

        # -- outputs: FIFO heads transferred this clock (popped at the edge)
        out = {k: (f.q[0] if f.q and ready.get(k, True) else None)
               for k, f in self._fifo.items()}
        errors = []            # (ErrorReport) in precedence order
        writes = []            # callables applied at the edge, in order
        consumed, request, answer, leaves, debit = None, None, None, False, None
        seen = self.scan_status     # the register: the status of the clock before, debited

        # -- stage C: the tables of the accept of the clock before, written at this edge
        #    (first: a completion of that entity in this clock comes after it)
        if self._cstage is not None:
            writes.append(self._write_tables)
        # -- stage E: the references of the triangle completed two clocks before (ahead
        #    of D, which loads E's next records at this edge)
        if self._estage:
            writes.append(self._drop_refs)
        # -- stage D: the table effects of the completion of the clock before
        if self._dstage is not None:
            writes.append(self._complete_tables)

        # -- stage R: the pass prepared in an earlier clock
        p = self._pass
        if p is not None:
            p.seq = self._seq[p.stream]
            if p.outcome == "error":
                consumed = p.stream
                errors.append(ErrorReport(p.code, p.stream, p.seq, 0, p.detail))
                writes.append(lambda p=p: self._commit_log(p, Kind.ERROR))
            elif p.outcome == "close":
                consumed = p.stream
                writes.append(lambda p=p: self._commit_close(p))
            elif p.outcome == "wait":
                leaves = True
                writes.append(self._end_pass)
            elif p.req is None:
                leaves = True                   # no candidate met the minimum
                writes.append(self._end_pass)
            else:
                i, e = p.req
                req = AllocRequest(p.stream, p.packet.size, int(p.stream != EType.PIXEL), p.seq)
                request = (e, req)
                if p.fresh or self.debit_held:
                    debit = request
                if p.fresh:             # the request's first clock: the rotation's EU
                    writes.append(lambda s=p.stream, e=e: self._remember(s, e))
                ans = respond(e, req) if callable(respond) else respond
                if ans is None:
                    writes.append(lambda p=p: setattr(p, "fresh", False))
                else:
                    ans = Answer(bool(ans[0]), check_field("entity", ans[1], ENTITY_W))
                    if ans.accept and self._in_flight((e, ans.entity)):
                        errors.append(ErrorReport(Err.BAD_ANSWER, Src.ANSWER, p.seq, e,
                                                  ans.entity))
                        ans = Answer(False, ans.entity)
                    answer = ans
                    if ans.accept:
                        consumed = p.stream
                        writes.append(lambda p=p, e=e, n=ans.entity: self._accept(p, e, n))
                    else:
                        p.refused |= 1 << e
                        p.req = self._scan(p, seen, i + 1)
                        p.fresh = True
            leaves = leaves or consumed is not None

        # -- stage P: the next pass, prepared from S_t; its scan reads the register less
        #    R's request of this clock (rule 3)
        scanned = self.debited(seen, debit)
        taken, started = None, False
        src = [self._held[s] if self._held[s] is not None and (p is None or s != p.stream)
               else heads[s] for s in range(4)]
        push_log = consumed is not None
        push_move = consumed is not None and p.outcome is None
        room = (self.fifo_depth - len(self._fifo["log"].q) > push_log
                and self.fifo_depth - len(self._fifo["move"].q) > push_move)
        if room and (p is None or leaves):
            win, starve = self._arbitrate(self._offers(src))
            if win is not None and not (p is not None and win == p.stream
                                        and consumed is None):
                nxt = self._prepare(win, src[win], scanned)
                started = True
                if self._held[win] is None or p is not None and win == p.stream:
                    taken = win             # from the input (else a parked packet)
                writes.append(lambda s=win, q=nxt, st=starve: self._load(s, q, st))

        # -- completion (reads S_t)
        if done is not None:
            key = (done.eu, done.entity)
            if done.eu >= self.n_eus or not self._in_flight(key):
                errors.append(ErrorReport(Err.UNKNOWN_DONE, Src.DONE, 0, done.eu, done.entity))
            else:
                writes.append(lambda key=key: self._complete(key))

        # -- release engine (rule 6): the choice registers offer (the VDT's first), each
        #    table's scan chooses its next record from S_t, the offered one left out
        rel = None
        if self._fifo["release"].room():
            rel = next(((k, r) for k, r in self._rel.items() if r is not None), None)
            if rel is not None:
                writes.append(lambda rel=rel: self._release(rel))
        # a register loads when it is empty or its record leaves at this edge
        chosen = {k: self._pick_release(k, r) for k, r in self._rel.items()
                  if r is None or rel is not None and rel[0] == k}
        writes.append(lambda chosen=chosen: self._rel.update(chosen))

        # -- configuration
        if cfg is not None:
            code = self._check_config(cfg)
            if code == Err.BAD_CONFIG:
                errors.append(ErrorReport(Err.BAD_CONFIG, Src.CONFIG, 0, 0, cfg.op))
            else:
                if code == Err.NO_EU:
                    errors.append(ErrorReport(Err.NO_EU, Src.CONFIG, 0, 0, cfg.etype))
                writes.append(lambda cfg=cfg: self._apply_config(cfg))

        # -- stage L (decision 11): a stream's input is taken when its register is empty
        #    or stage P takes the register's packet in this clock
        if self.input_stage:
            inputs = tuple(s for s in range(4) if self._enters_l(s, ports[s], taken))
            writes.append(lambda: self._load_l(ports, taken, inputs))
        else:
            inputs = () if taken is None else (taken,)

        # -- the edge
        self._shown = [None if s in inputs else ports[s] for s in range(4)]
        self.debit_request = debit
        self.scanned = tuple(scanned)
        self.scan_status = self.debited(status, debit)
        res = CycleResult(taken, consumed, request, answer, started, out["move"], out["log"],
                          out["release"], out["err"], self.error, self.lost, inputs)
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

    def _load_l(self, ports, taken, inputs):
        """Edge: stage L (decision 11) gives its packet to stage P's pass and takes the
        inputs' heads."""
        if taken is not None:
            self._lstage[taken] = None
        for s in inputs:
            self._lstage[s] = ports[s]

    def _load(self, s, p, starve):
        """Edge: the prepared pass enters the request stage."""
        self._pass = p
        self._held[s] = p.packet
        self._starve = starve
        self._passes[s] = min(SAT, self._passes[s] + 1)

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
        self._held[p.stream] = None

    def _commit_log(self, p, kind):
        self._consume(p, LogEntry(kind, p.stream, p.seq, passes=self._passes[p.stream],
                                  code=p.code))

    def _commit_close(self, p):
        q = p.rec
        self.p_closed[q] = True
        self._consume(p, LogEntry(Kind.CLOSE, p.stream, p.seq, int(self.p_eu[q]),
                                  int(self.p_ent[q]), passes=self._passes[p.stream]))

    def _in_flight(self, key):
        """``(eu, entity)`` is in flight: in the in-flight table or accepted in the clock
        before (the commit stage writes it at this clock's edge)."""
        return key in self._ift or (self._cstage is not None
                                    and self._cstage[1:] == key)

    def _remember(self, s, e):
        """Edge of a request's first clock: the type walks from the EU after ``e``
        (decision 9)."""
        self._last_eu[s] = e

    def _accept(self, p, e, ent):
        """Edge of the accept: the move command, the log entry; the tables follow at
        the next edge (the commit stage)."""
        pkt, s = p.packet, p.stream
        ref, index, count, src, xy = Ref.NONE, 0, 0, NO_SRC, (0, 0, 0)
        if s in (EType.VERTEX, EType.PATCH):
            index = pkt.base
            count = pkt.count if s == EType.VERTEX else PATCH_POINTS
        elif s == EType.TRIANGLE:
            ref = Ref.LOCAL if all(loc.eu == e for loc in p.locs) else Ref.GLOBAL
            index, src = pkt.prid, p.locs
        else:
            ref = Ref.LOCAL if p.tri.eu == e else Ref.GLOBAL
            index, src, xy = pkt.prid, (p.tri, Loc(), Loc()), (pkt.x, pkt.y, pkt.mask)
        self._fifo["move"].q.append(MoveCmd(e, ent, s, p.seq, pkt.size, ref, index, count,
                                            src, *xy))
        self._consume(p, LogEntry(Kind.ALLOC, s, p.seq, e, ent, ref, self._passes[s],
                                  p.refused))
        self._cstage = (p, e, ent)

    def _write_tables(self):
        """Edge after the accept (the commit stage): the VDT/PT records, reference and
        pixel counters, closing bits and the in-flight table."""
        (p, e, ent), self._cstage = self._cstage, None
        pkt, s, V = p.packet, p.stream, self.vdt_records
        if s in (EType.VERTEX, EType.PATCH):
            recs = [p.rec] if s == EType.VERTEX else [p.rec, (p.rec + 1) % V]
            for h, r in enumerate(recs):
                g = (pkt.base >> 3) + h
                self.v_valid[r], self.v_tag[r] = True, g >> self._vbits
                self.v_eu[r], self.v_ent[r] = e, ent
                self.v_count[r] = pkt.count if s == EType.VERTEX else GROUP
                self.v_half[r], self.v_patch[r] = h, s == EType.PATCH
                self.v_done[r], self.v_closed[r], self.v_refs[r] = False, pkt.noref, 0
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
        else:
            q = p.rec
            self.p_pix[q] += 1
            if pkt.last:
                self.p_closed[q] = True
        self._ift[(e, ent)] = (s, p.rec)

    def _complete(self, key):
        """Edge of the completion's clock: its in-flight entry is cleared; its table
        effects follow at the next edge (stage D)."""
        self._dstage = self._ift.pop(key)

    def _complete_tables(self):
        """Edge after the completion (stage D): ``vdone``/``tdone``, the pixel packets
        in flight; a triangle's VDT records go to stage E."""
        (t, rec), self._dstage = self._dstage, None
        if t == EType.VERTEX:
            self.v_done[rec] = True
        elif t == EType.PATCH:
            self.v_done[rec] = self.v_done[(rec + 1) % self.vdt_records] = True
        elif t == EType.TRIANGLE:
            self.p_done[rec] = True
            self._estage = tuple(self.p_vrecs[rec])
        else:
            self.p_pix[rec] -= 1

    def _drop_refs(self):
        """Edge two clocks after a triangle's completion (stage E): one reference less
        on each distinct VDT record it named."""
        for r in self._estage:
            self.v_refs[r] -= 1
        self._estage = ()

    def _releasable(self, kind):
        """Per record of the VDT (``kind`` "v") or the PT ("p") in ``S_t``: releasable
        (rule 6; a patch at its first record, when both of its records are)."""
        if kind == "v":
            ok = self.v_valid & self.v_done & self.v_closed & (self.v_refs == 0)
            return ok & (~self.v_patch | ((self.v_half == 0) & np.roll(ok, -1)))
        return self.p_valid & self.p_done & self.p_closed & (self.p_pix == 0)

    def _pick_release(self, kind, offered):
        """The lowest releasable record of ``kind`` other than ``offered`` (the record in
        the table's choice register); None if none."""
        ok = self._releasable(kind)
        if offered is not None:
            ok[offered] = False
        return int(np.argmax(ok)) if ok.any() else None

    def releasing(self):
        """``{"v": record or None, "p": record or None}``: the release engine's choice
        registers (rule 6), the records offered to the ``release`` FIFO this clock."""
        return dict(self._rel)

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
        req_open, scanned = None, None     # scanned: the status a request's scan read
        if self.t == 0:
            # from reset: the EUs show their status at the edge before the first
            # clock, which the scans' register loads (as the testbenches drive it)
            self.scan_status = [eu.status() for eu in eus]
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
                    req_open = [t, e, q, scanned]
                if res.answer is not None:
                    r.requests.append(ReqRecord(req_open[0], t, e, q, req_open[3],
                                                res.answer.accept, res.answer.entity))
                    req_open = None
            for s in res.inputs:
                feeder.ack(s, t)
                r.consumed.append((t, s))
            if res.consumed is not None:
                last_progress = t
            if not feeder.waiting() and self.idle_allocator():
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
            scanned = self.scanned
            for eu in eus:
                eu.tick()
            merger.collect()
            if check:
                self.check()
        r.cycles = self.t - start
        r.error, r.lost = self.error, self.lost
        return r
