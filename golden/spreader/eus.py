"""EU models for closed-loop runs: :class:`ScriptedEU`, :class:`RandomEU`, :class:`QCCEU`
(a :class:`golden.qcc.QCCModel` acting as an EU) and :class:`DoneMerger`."""

import heapq
from collections import deque

import numpy as np

from golden.spreader.types import (
    Answer, Done, ENTITIES, EUStatus,
)
from golden.params import check_int


class _EUBase:
    """Interface of an EU model, called by the environment every clock in this order:
    :meth:`status` (its state ``S_t``), :meth:`answer` (only when the spreader drives a
    request to it; None = not answering this clock), :meth:`move` / :meth:`release`
    (commands transferred to it this clock), :meth:`delivered` (its completion taken
    on ``done`` this clock), :meth:`tick` (end of the clock). Finished entities are
    queued in ``completions`` (entity numbers) from the clock after.

    EU-side contract: an entity finishes only after its data-move command arrived; an
    entity number is reused only after its completion was taken on ``done`` (and, when
    held, released).
    """

    def __init__(self, entities=ENTITIES):
        self.entities = check_int("entities", entities, 1, ENTITIES)
        self.completions = deque()
        self.t = 0
        self.live = {}          # entity -> AllocRequest, allocated and not finished
        self.finished = {}      # entity -> AllocRequest, completion not yet taken
        self.done = set()       # held entities finished, waiting for release
        self.moves, self.releases, self.errors = [], [], []
        self._moved = set()     # live entities whose move command arrived
        self._early = set()     # live entities due to finish, waiting for their move
        self._asked = None      # [first cycle, request, latency]
        self._asked_now = False

    def _free_entity(self):
        for e in range(self.entities):
            if e not in self.live and e not in self.finished and e not in self.done:
                return e
        return None

    def _latency_for(self, req):
        return 0

    def answer(self, req):
        """The answer to ``req`` in this clock, or None (not ready)."""
        if self._asked is None or self._asked[1] != req:
            self._asked = [self.t, req, self._latency_for(req)]
        self._asked_now = True
        if self.t - self._asked[0] < self._asked[2]:
            return None
        self._asked = None
        return self._decide(req)

    def move(self, cmd):
        """A data-move command transferred to this EU."""
        self.moves.append((self.t, cmd))
        if cmd.entity not in self.live or cmd.entity in self._moved:
            self.errors.append((self.t, "move for an entity not allocated", cmd))
            return
        self._moved.add(cmd.entity)
        self._started(cmd.entity)
        if cmd.entity in self._early:
            self._early.discard(cmd.entity)
            self._finish(cmd.entity)

    def _started(self, entity):
        pass

    def release(self, cmd):
        """A release command transferred to this EU."""
        self.releases.append((self.t, cmd))
        if cmd.entity not in self.done:
            self.errors.append((self.t, "release of an entity not finished and held", cmd))
            return
        self.done.discard(cmd.entity)
        self._freed(cmd.entity, True)

    def delivered(self, entity):
        """Its completion of ``entity`` was taken on ``done`` this clock."""
        req = self.finished.pop(entity)
        if req.hold:
            self.done.add(entity)
        else:
            self._freed(entity, False)

    def _freed(self, entity, held):
        pass

    def _finish(self, entity):
        if entity not in self._moved:
            self._early.add(entity)
            return False
        self._moved.discard(entity)
        self.finished[entity] = self.live.pop(entity)
        self.completions.append(entity)
        return True

    def tick(self):
        """End of the clock."""
        if not self._asked_now:
            self._asked = None
        self._asked_now = False
        self.t += 1

    def idle(self):
        """Nothing allocated, held or waiting to be reported."""
        return not self.live and not self.finished and not self.done


class ScriptedEU(_EUBase):
    """An EU whose answers, latencies and status are scripted.

    Parameters
    ----------
    answers : iterable of bool or callable, optional
        Accept (True) / refuse (False) per request answered, in order; when exhausted
        every request is accepted. A callable ``answers(req, t) -> bool`` decides each.
    latency : int, iterable of int or callable
        Clocks N between a request's first clock and its answer (0 = same clock): one
        value, one per request, or ``latency(req) -> int``.
    status : EUStatus, tuple or list of (cycle, EUStatus)
        The status it reports: fixed, or changing at scripted cycles only. Default 256
        records and entities, 256 lines.
    done_after : int, iterable, callable or None
        Clocks from acceptance to completion (>= 1; later if its data-move command has
        not arrived by then), or None: only :meth:`complete` finishes an entity.
    entities : int
        Entity numbers, 1..256 (the lowest free one is given; a refusal is forced when
        none is free).
    """

    def __init__(self, answers=None, latency=0, status=None, done_after=1, entities=ENTITIES):
        super().__init__(entities)
        self._answers = answers if callable(answers) else iter(answers or ())
        self._lat = self._source("latency", latency)
        self._done = None if done_after is None else self._source("done_after", done_after, 1)
        if status is None:
            status = EUStatus(ENTITIES, ENTITIES, 256)
        if isinstance(status, list):
            self._status = sorted((int(c), EUStatus(*s)) for c, s in status)
        else:
            self._status = [(0, EUStatus(*status))]
        self._due = []
        self.accepted = []      # (cycle, entity, request)

    @staticmethod
    def _source(name, value, lo=0):
        if callable(value):
            return value
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            v = check_int(name, value, lo, 1 << 30)
            return lambda req: v
        it = iter(value)

        def nxt(req):
            try:
                return check_int(name, next(it), lo, 1 << 30)
            except StopIteration:
                raise ValueError(f"{name} sequence is shorter than the requests") from None
        return nxt

    def status(self):
        """The scripted status in force now."""
        cur = self._status[0][1]
        for c, s in self._status:
            if c <= self.t:
                cur = s
        return cur

    def _latency_for(self, req):
        return self._lat(req)

    def _decide(self, req):
        if callable(self._answers):
            ok = bool(self._answers(req, self.t))
        else:
            ok = bool(next(self._answers, True))
        ent = self._free_entity() if ok else None
        if ent is None:
            return Answer(False, 0)
        self.live[ent] = req
        self.accepted.append((self.t, ent, req))
        if self._done is not None:
            heapq.heappush(self._due, (self.t + self._done(req), ent))
        return Answer(True, ent)

    def complete(self, entity):
        """Finish ``entity`` at the end of this clock."""
        heapq.heappush(self._due, (self.t, entity))

    def tick(self):
        while self._due and self._due[0][0] <= self.t:
            _, ent = heapq.heappop(self._due)
            if ent in self.live:
                self._finish(ent)
        super().tick()


class RandomEU(_EUBase):
    """A free-running EU with random latencies and real resource accounting.

    Parameters
    ----------
    rng : numpy.random.Generator or int
        Random source (or seed).
    records, entities, lines : int
        Capacity; an entity takes one record and ``req.lines`` lines until it finishes
        (not held) or is released (held).
    latency : (int, int)
        Inclusive range of the answer delay N.
    refuse : float
        Probability of refusing a request it has room for (a stale-status race).
    work : (int, int)
        Inclusive range of clocks from the data-move command to completion.
    stall : float
        Probability per clock that finished entities are held back (long busy spells).
    """

    def __init__(self, rng, records=16, entities=16, lines=64, latency=(0, 0), refuse=0.0,
                 work=(1, 20), stall=0.0):
        super().__init__(entities)
        self.rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        self.records = check_int("records", records, 1, 256)
        self.lines = check_int("lines", lines, 1, 65536)
        self.latency, self.refuse, self.work, self.stall = latency, refuse, work, stall
        self.free_records, self.free_lines = self.records, self.lines
        self._due = []
        self._size = {}

    def status(self):
        used = len(self.live) + len(self.finished) + len(self.done)
        return EUStatus(self.free_records, self.entities - used, self.free_lines)

    def _latency_for(self, req):
        return int(self.rng.integers(self.latency[0], self.latency[1] + 1))

    def _decide(self, req):
        ent = self._free_entity()
        if (ent is None or self.free_records < 1 or self.free_lines < req.lines
                or self.rng.random() < self.refuse):
            return Answer(False, 0)
        self.free_records -= 1
        self.free_lines -= req.lines
        self._size[ent] = req.lines
        self.live[ent] = req
        return Answer(True, ent)

    def _started(self, entity):
        heapq.heappush(self._due, (self.t + int(self.rng.integers(self.work[0],
                                                                   self.work[1] + 1)), entity))

    def _finish(self, entity):
        req = self.live[entity]
        if super()._finish(entity) and not req.hold:   # data no longer needed: free it now
            self.free_records += 1
            self.free_lines += self._size.pop(entity)
        return True

    def _freed(self, entity, held):
        if held:
            self.free_records += 1
            self.free_lines += self._size.pop(entity)

    def tick(self):
        if not (self.stall and self.rng.random() < self.stall):
            while self._due and self._due[0][0] <= self.t:
                _, ent = heapq.heappop(self._due)
                self._finish(ent)
        super().tick()


class QCCEU(_EUBase):
    """A :class:`golden.qcc.QCCModel` acting as an EU, behind the adapter of
    ``hw.spreader.SpreaderQCC``.

    The allocation request becomes the QCC's ALLOC (etype, lines) in the clock it is
    presented, unless the command port is busy: a RELEASE is waiting (it goes first),
    or a command went to the QCC in the clock before (the adapter offers a command only
    when the one before has been answered, and the QCC answers a clock after it took
    it). The answer is given :data:`ANSWER_DELAY` (2) clocks after the ALLOC: the QCC's
    response comes a clock after it, and the adapter registers it, so the spreader's
    accept starts from flip-flops (issue 15; before, the response was the answer, one
    clock after the ALLOC). The request is answered once: no second ALLOC is sent for it
    while its answer is on its way. In a clock the request is held past its first clock
    and its ALLOC not yet sent, the status it reports counts the held request out (one
    record, one entity and its lines, as the RTL adapter does): the spreader debits a
    request only in its first clock, and the QCC shows it only from the clock after its
    ALLOC. Every entity is allocated with ``hold`` so that its number stays in use until
    the spreader has taken its completion; the adapter itself releases the ones the
    spreader did not ask to hold. Stage issues are completed by processors with random
    latencies; an entity is complete when it reaches ``DONE_STAGE``. ``status`` is the
    QCC's, with its longest run of contiguous free lines (``free_run``) as
    ``free_lines``: a minimum check that passes means the ALLOC finds its lines.

    Parameters
    ----------
    qcc : golden.qcc.QCCModel
        The controller (fresh).
    rng : numpy.random.Generator or int
        Random source for the processor latencies.
    work : (int, int)
        Inclusive range of clocks from an issue to its completion.
    """

    #: Clocks from an ALLOC sent to the QCC to its answer on the spreader's ``alloc[e]``
    #: (a subclass may set 0: the answer in the ALLOC's clock, the model before issue 15)
    ANSWER_DELAY = 2

    def __init__(self, qcc, rng, work=(1, 4)):
        from golden import qcc as _q
        super().__init__(qcc.entities)
        self._q = _q
        self.qcc = qcc
        self.rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        self.work = work
        self._rel = deque()
        self._pending = {0: [], 1: []}
        self._seq = 0
        self._ran = False
        self.responses = []
        self._held = None           # a request held past its first clock, its ALLOC not sent
        self._reply = None          # (due clock, Answer) of the ALLOC sent, not yet answered
        self._port_free = 0         # first clock the adapter may send a command again

    def status(self):
        st = self.qcc.status()       # free lines as the longest contiguous run (first fit)
        d, n = (1, self._held.lines) if self._held is not None else (0, 0)
        return EUStatus(max(0, st.free_records - d), max(0, st.free_entities - d),
                        max(0, st.free_run - n))

    def _clock(self, cmd):
        q = self._q
        done = {}
        for k, heap in self._pending.items():
            if heap and heap[0][0] <= self.qcc.t:
                done[k] = heapq.heappop(heap)[2]
        res = self.qcc.cycle(cmd=cmd, ncompl=done[0][0] if 0 in done else None,
                             mcompl=done[1][0] if 1 in done else None)
        for iss in res.issues:
            lat = int(self.rng.integers(self.work[0], self.work[1] + 1))
            heapq.heappush(self._pending[int(iss.kind)],
                           (self.qcc.t - 1 + lat, self._seq, (iss.record, iss.entity)))
            self._seq += 1
        for _, ent in done.values():
            info = self.qcc.entity_info(ent)
            if ent in self.live and info is not None and info[0]["stage"] == q.DONE_STAGE:
                self._finish(ent)
        if cmd is not None:
            self._port_free = self.t + 2    # its response comes in the next clock
            self.responses.append((self.t, cmd, res.resp))
            if res.resp.error:
                self.errors.append((self.t, "QCC refused a command as bad input", cmd, res.resp))
        self._ran = True
        return res

    def _release_now(self):
        """Send a waiting RELEASE if the command port is free this clock."""
        if self._rel and not self._ran and self.t >= self._port_free:
            self._clock(self._q.Command.release(self._rel.popleft()))

    def answer(self, req):
        self._asked_now = True
        if self._reply is None:                 # its ALLOC not sent yet
            self._release_now()                 # a RELEASE goes before the ALLOC
            if self._ran or self.t < self._port_free:
                self._held = req                # counted out of the status from next clock
                return None
            self._held = None
            self._reply = (self.t + self.ANSWER_DELAY, self._decide(req))
        due, ans = self._reply                  # answered when due
        if self.t < due:
            return None
        self._reply = None
        return ans

    def _decide(self, req):
        res = self._clock(self._q.Command.alloc(req.etype, req.lines, True))
        if not res.resp.ok:
            return Answer(False, 0)
        self.live[res.resp.entity] = req
        return Answer(True, res.resp.entity)

    def _freed(self, entity, held):
        self._rel.append(entity)

    def tick(self):
        self._release_now()
        if not self._ran:
            self._clock(None)
        self._ran = False
        super().tick()

    def idle(self):
        return (super().idle() and not self._rel and self._reply is None
                and self.qcc.idle())


class DoneMerger:
    """Merges the EUs' completions onto the single ``done`` stream, one per clock:
    the lowest-numbered EU with a queued completion first.

    Parameters
    ----------
    eus : sequence of EU models
    """

    def __init__(self, eus):
        self.eus = eus
        self._ready = [deque() for _ in eus]
        self._taken = None

    def take(self):
        """The completion driven on ``done`` this clock (it is taken), or None."""
        for e, q in enumerate(self._ready):
            if q:
                self._taken = Done(e, q.popleft())
                return self._taken
        return None

    def collect(self):
        """End of a clock, after the EUs' ``tick``: tell the EU whose completion was
        taken, and queue the completions the EUs produced."""
        if self._taken is not None:
            self.eus[self._taken.eu].delivered(self._taken.entity)
            self._taken = None
        for e, eu in enumerate(self.eus):
            while eu.completions:
                self._ready[e].append(eu.completions.popleft())

    def pending(self):
        """True when a completion waits."""
        return any(self._ready)
