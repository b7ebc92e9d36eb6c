"""The invariant checker :class:`Scoreboard` and its figures :class:`Stats`."""

from bisect import bisect_left, bisect_right
from collections import deque
from dataclasses import dataclass, field

from golden.spreader.model import rotated
from golden.spreader.types import (
    CfgOp, EType, EUStatus, Err, GROUP, Kind, Loc, PATCH_POINTS, Ref,
)


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
    (:class:`ReqRecord`: EU, payload, every EU's status as the request's scan read
    it in the clock before its first clock -- the status register, less the request
    driven then --, answer). :meth:`check`
    raises ``AssertionError`` naming the first broken rule:

    * every packet consumed exactly once, in stream order, as ALLOC (good packets),
      CLOSE (end markers) or ERROR with the expected code; an error report for each
      ERROR unless ``lost``;
    * each allocation accepted by exactly one request, to an EU whose status met the
      minimum when scanned (the clock before the request); requests in candidate-list
      order (each goes to the first candidate after the previous request's that met
      the minimum in the clock before its first clock; going back up the list, or a
      request that does not start in the clock after the previous answer, starts a new
      pass), so locality is honoured
      whenever the preferred EU had room; the list is rebuilt from the configuration
      words and the log's own vertex and triangle allocations, walked (``rotate``)
      from the EU after the one the type's last request (begun before the clock the
      pass was prepared) went to; with ``patience``, a
      pixel packet allocated in one of its first ``patience`` passes went to its
      triangle's EU (when that EU is in the pixel list);
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
        # rotation (decision 9): per type, the first clocks of its requests and their EUs
        asked = [([], []) for _ in range(4)]
        for rq in sorted(result.requests, key=lambda rq: rq.start):
            asked[rq.req.etype][0].append(rq.start)
            asked[rq.req.etype][1].append(rq.eu)
        reqs = {}
        for rq in result.requests:
            reqs.setdefault((rq.req.etype, rq.req.seq), []).append(rq)
        moves = deque(result.move)
        errs = deque(e for _, e in result.err if e.src < 4)
        seqs = [0] * 4
        groups, prims = {}, {}
        allocs, closes = [], []

        # The configuration in force after each word: (clock taken, lists, minima).
        # Looked up by clock, not consumed in log order: passes of different streams
        # are logged in the order they end, not the order they began in.
        history = [(float("-inf"), (tuple(range(n)),) * 4, ((1, 1),) * 4)]
        for clock, c in result.config:
            if sp._check_config(c) == Err.BAD_CONFIG:
                continue
            lists, mins = list(history[-1][1]), list(history[-1][2])
            if c.op == CfgOp.LIST:
                lists[c.etype] = tuple(c.eus)
            elif c.op == CfgOp.MIN:
                mins[c.etype] = (c.records, c.lines)
            history.append((clock, tuple(lists), tuple(mins)))
        clocks = [h[0] for h in history]

        def config_before(clock):
            """The lists and minima of the words taken before ``clock``."""
            _, lists, mins = history[bisect_left(clocks, clock) - 1]
            return lists, mins

        taken = [[t for t, x in result.consumed if x == s] for s in range(4)]
        assert len(result.log) <= len(result.consumed), "log entries without a taken packet"
        for t_log, e in result.log:
            s = e.etype
            items = wl.streams[s]
            assert seqs[s] < len(items), f"log at {t_log}: stream {s} consumed more than was sent"
            assert seqs[s] < len(taken[s]), f"log at {t_log}: {e} for a packet not taken"
            assert e.seq == seqs[s] & 0xFFFF, \
                f"log at {t_log}: stream {s} seq {e.seq}, expected {seqs[s] & 0xFFFF}"
            # consumed at least one clock after it was taken (exact for allocations: the
            # accepted request's clock)
            t = taken[s][seqs[s]] + 1
            it = items[seqs[s]]
            seqs[s] += 1
            pkt = it.packet
            if it.expect is not None:
                assert e.kind == Kind.ERROR and e.code == it.expect, \
                    f"log at {t}: {pkt} must be refused with {Err(it.expect).name}, got {e}"
            if e.kind == Kind.ERROR:
                st.errors += 1
                assert it.expect is not None, f"log at {t}: good packet {pkt} refused: {e}"
                if errs and (errs[0].code, errs[0].src, errs[0].seq) == (e.code, s, e.seq):
                    errs.popleft()
                else:       # a report may be missing only when one was dropped
                    assert result.lost, f"log at {t}: no error report for {e}"
                continue
            if e.kind == Kind.CLOSE:
                st.closes += 1
                assert s == EType.PIXEL and pkt.is_end, f"log at {t}: CLOSE of {pkt}"
                pr = prims.get(pkt.prid)
                assert pr is not None and not pr["closed"], \
                    f"log at {t}: end marker of a primitive not open: {pkt}"
                assert (e.eu, e.entity) == (pr["eu"], pr["entity"]), f"log at {t}: {e}"
                pr["closed"] = True
                closes.append((max(t, pr["t"] + 1), pkt))     # after its triangle's
                continue
            assert e.kind == Kind.ALLOC, f"log at {t}: unknown kind {e.kind}"
            assert 0 <= e.eu < n, f"log at {t}: EU {e.eu}"
            rq = reqs.get((s, e.seq), [])
            assert rq and rq[-1].accept and (rq[-1].eu, rq[-1].entity) == (e.eu, e.entity) \
                and t <= rq[-1].end < t_log, f"log at {t}: {e} has no matching accepted request"
            t = rq[-1].end
            allocs.append((t, e, pkt))
            st.allocations += 1
            st.per_eu[e.eu] += 1
            assert not any(r.accept for r in rq[:-1]), f"log at {t}: {e} accepted twice"
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
                # the pass was prepared in the clock before its first request, walking
                # from the EU of the type's last request whose first clock came before
                starts, eus = asked[s]
                k = bisect_right(starts, r.start - 2)
                last = eus[k - 1] if k else None
                lst = rotated(lists[s], last if sp.rotate else None)
                if s == EType.TRIANGLE:
                    # a vertex-holding EU with fewer than ``local_records`` free
                    # records in the status the pass's first scan read is not local
                    local = sorted((x for x in cnt if x in lst and EUStatus(
                        *r.status[x]).free_records >= sp.local_records),
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
                    lists, mins = config_before(r.start - 1)   # words before the pass was prepared
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
            if (s == EType.PIXEL and e.passes <= sp.patience and locs[0].eu in lists[s]):
                # patience: in its first passes a pixel packet goes to its triangle's EU
                assert e.eu == locs[0].eu, \
                    (f"log at {t}: pixel packet placed on EU {e.eu} in pass {e.passes}, "
                     f"not its triangle's EU {locs[0].eu} (patience {sp.patience})")
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
                prims[pkt.prid] = dict(eu=e.eu, entity=e.entity, closed=False, t=t)
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
        assert not errs, f"error reports without a refused packet: {list(errs)[:3]}"
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
