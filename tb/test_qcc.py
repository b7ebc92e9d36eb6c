"""Testbenches of the queue/cache controller (``hw/qcc.py``).

The RTL is checked clock by clock against the golden model ``golden/qcc.py``: every
clock, a sampler reads what each port transferred (``cmd``, ``query``, ``n_done``,
``m_done``) and whether each issue port could load an issue, and plays that clock on
the model (:class:`CycleChecker`). The model's responses and issues must then come out
of ``resp``, ``qresp``, ``n_issue`` and ``m_issue`` in order, from the next clock on,
and ``status`` must equal the model's in every clock. Processors are modelled as
random-latency, out-of-order responders on the issue ports.

Pytest runs the cocotb tests below on both simulators at small sizes (``test_qcc``),
and once on Verilator at the default size, 256 records (``test_qcc_full_verilator``);
``make regress`` adds longer runs at more sizes on both (``test_qcc_soak``).
"""

import os
from collections import Counter, deque
from dataclasses import dataclass

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly

from golden.qcc import (
    DEFAULT_PROGRAMS, DONE_STAGE, N_TYPES, Code, Command, EType, Issue, Kind, Op, QCCModel,
    Response, addr_width,
)
from tb.harness import (WIDE_DESIGN, StreamDriver, StreamMonitor, params, reset, run_cocotb,
                        simulators, start, wait_until)

# ---------------------------------------------------------------- port encoding

_COMMAND_FIELDS = (("op", 3), ("etype", 3), ("hold", 1), ("lines", 4), ("entity", 8),
                   ("frame", 4), ("buf", 8), ("offset", 4), ("nstages", 4))
_RESPONSE_FIELDS = ("op", "code", "entity", "record", "frame", "etype", "stage", "busy",
                    "hold", "buf", "addr", "lines")
_ISSUE_FIELDS = (("record", 8), ("entity", 8), ("etype", 3), ("stage", 4), ("desc", 8),
                 ("buf", 8))


def _pack(fields):
    value, shift = 0, 0
    for field, width in fields:
        value |= (int(field) & ((1 << width) - 1)) << shift
        shift += width
    return value


def _unpack(value, widths):
    out = []
    for width in widths:
        out.append(value & ((1 << width) - 1))
        value >>= width
    return out


def encode_command(cmd):
    """The ``cmd``/``query`` payload of a golden :class:`Command`."""
    fields = [(getattr(cmd, name), width) for name, width in _COMMAND_FIELDS]
    return _pack(fields + [(cmd.kinds, 8), (cmd.descs, 64)])


def decode_command(value):
    """The golden :class:`Command` of a ``cmd``/``query`` payload."""
    *fields, kinds, descs = _unpack(value, [w for _, w in _COMMAND_FIELDS] + [8, 64])
    program = tuple((kinds >> i & 1, descs >> 8 * i & 0xFF) for i in range(8))
    return Command(*fields, program=program)


def response_widths(lines):
    return (3, 4, 8, 8, 4, 3, 4, 1, 1, 8, addr_width(lines), 4)


def decode_response(value, lines):
    """The golden :class:`Response` of a ``resp``/``qresp`` payload."""
    fields = dict(zip(_RESPONSE_FIELDS, _unpack(value, response_widths(lines))))
    code = fields.pop("code")
    try:
        code = Code(code)
    except ValueError:
        pass            # an undefined code: reported by the comparison
    return Response(code=code, **fields)


def decode_issue(value, kind):
    """The golden :class:`Issue` of an ``n_issue``/``m_issue`` payload."""
    return Issue(Kind(kind), *_unpack(value, [w for _, w in _ISSUE_FIELDS]))


# ---------------------------------------------------------------- clock-by-clock check

@dataclass
class Sample:
    """What the ports did in one clock (``None``: no transfer)."""
    cmd: int | None = None
    query: int | None = None
    n_done: int | None = None
    m_done: int | None = None
    n_ready: bool = False       # the issue port could load an issue: ~valid | ready
    m_ready: bool = False
    outputs: dict = None        # port -> (valid, ready, payload) of resp/qresp/n_issue/m_issue
    status: tuple = None        # (free_records, free_entities, free_lines, free_run, error)


class CycleChecker:
    """Plays each clock's transfers on the golden model and checks the RTL's outputs.

    Expected responses and issues are queued per port when the model produces them;
    from the next clock on, the port must offer the head of its queue (checked every
    clock it is valid, not only when taken), and must be valid while the queue is
    not empty. ``status`` must equal the model's state in every clock.
    """

    PORTS = ("resp", "qresp", "n_issue", "m_issue")

    def __init__(self, model, lines, log=None):
        self.model = model
        self.lines = lines
        self.log = log
        self.expected = {port: deque() for port in self.PORTS}
        self.seen = {port: [] for port in self.PORTS}
        self.responses = []          # (command, response) in order, cmd port
        self.issues = []             # (kind, issue) in selection order
        self.completions = []        # (clock, kind, record, code)
        self.taken = []              # (clock, port, item): outputs as they were taken
        self.commands = []           # (clock, command, response) of every cmd transfer
        self.clocks = 0
        self.coverage = Counter()
        self.done_killed = {}        # entity -> the clock its last completion killed it

    def decode(self, port, payload):
        if port in ("resp", "qresp"):
            return decode_response(payload, self.lines)
        return decode_issue(payload, Kind.NUMERIC if port == "n_issue" else Kind.MOVE)

    def clock(self, sample):
        """Check one clock; raises AssertionError on the first difference."""
        t = self.clocks
        want_status = tuple(self.model.status())
        got_status = tuple(int(x) for x in sample.status)
        assert got_status == tuple(int(x) for x in want_status), (
            f"clock {t}: status {got_status}, model {want_status}")
        for port in self.PORTS:
            valid, ready, payload = sample.outputs[port]
            queue = self.expected[port]
            if queue:
                assert valid, f"clock {t}: {port} not valid, {len(queue)} pending " \
                              f"(next {queue[0]})"
            if valid:
                assert queue, f"clock {t}: {port} offers {self.decode(port, payload)} " \
                              f"but the model has nothing"
                got = self.decode(port, payload)
                assert got == queue[0], f"clock {t}: {port} offers {got}, model {queue[0]}"
                if ready:
                    self.seen[port].append(queue.popleft())
                    self.taken.append((t, port, got))
        cmd = decode_command(sample.cmd) if sample.cmd is not None else None
        query = decode_command(sample.query) if sample.query is not None else None
        before = self.model.entity_info(cmd.entity) if cmd is not None else None
        tombs = set(self.model.tombstones())
        res = self.model.cycle(cmd=cmd, query=query, ncompl=sample.n_done,
                               mcompl=sample.m_done, n_ready=sample.n_ready,
                               m_ready=sample.m_ready)
        self._cover(cmd, before, res)
        # Requests on an entity its last completion killed one or two clocks before
        # (the RTL clears its ``ent_live`` bit a clock late and corrects its reads
        # meanwhile, golden decision 15; a look-up reads it a clock before the take).
        for port, c in (("cmd", cmd), ("query", query)):
            if c is not None and c.op in (Op.SEARCH, Op.MAP, Op.DELETE, Op.RELEASE) \
                    and t - self.done_killed.get(c.entity, -9) in (1, 2):
                self.coverage[f"{port} {Op(c.op).name} {t - self.done_killed[c.entity]} "
                              f"clock(s) after its entity's last completion"] += 1
        live = set(self.model.live_entities())
        for r, code in ((sample.n_done, res.ncode), (sample.m_done, res.mcode)):
            if code == Code.OK and self.model.record_entity(r) not in live:
                self.done_killed[self.model.record_entity(r)] = t
        self.coverage["tombstone dropped"] += len(tombs - set(self.model.tombstones()))
        if query is not None and query.op == Op.TRANSLATE and res.qresp.code == Code.OK \
                and self.model.record_entity(query.buf) not in self.model.live_entities():
            # (the RTL picks the entity's ``ent_live`` bit a clock later, corrected by
            # that clock's kills)
            self.coverage["translate in the clock its entity dies"] += 1
        if cmd is not None:
            self.expected["resp"].append(res.resp)
            self.responses.append((cmd, res.resp))
            self.commands.append((t, cmd, res.resp))
        if query is not None:
            self.expected["qresp"].append(res.qresp)
        for port, issue in (("n_issue", res.n_issue), ("m_issue", res.m_issue)):
            if issue is not None:
                self.expected[port].append(issue)
                self.issues.append((t, issue))
        for kind, record, code in ((Kind.NUMERIC, sample.n_done, res.ncode),
                                   (Kind.MOVE, sample.m_done, res.mcode)):
            if record is not None:
                self.completions.append((t, kind, record, code))
        self.clocks += 1
        return res

    def _cover(self, cmd, before, res):
        """Count the corner cases this clock hit (see :attr:`coverage`)."""
        cover = self.coverage
        issues = res.issues
        cover["two issues"] += len(issues) == 2
        cover["two completions"] += res.ncode is not None and res.mcode is not None
        for code in (res.ncode, res.mcode):
            if code is not None and code != Code.OK:
                cover[f"completion {code.name}"] += 1
        if cmd is None:
            return
        cover[f"{Op(cmd.op).name if cmd.op < 7 else 'op 7'} {res.resp.code.name}"] += 1
        rec0 = (before or {}).get(0)
        if cmd.op == Op.DELETE and rec0 is not None and not rec0["busy"] \
                and rec0["stage"] != DONE_STAGE:
            fifo = (rec0["etype"], rec0["stage"])
            popped = any((i.etype, i.stage) == fifo for i in issues)
            if res.resp.code == Code.OK:
                cover["delete queued"] += 1
                cover["delete queued, same FIFO popped"] += popped
            elif res.resp.code == Code.BUSY:
                cover["delete of an entity issued in that clock"] += 1
        if cmd.op == Op.MAP and res.resp.ok and self.model.entity_info(cmd.entity) is None:
            cover["map in the clock the entity finishes"] += 1

    def pending(self):
        """Responses and issues the model produced that the RTL has not delivered."""
        return sum(len(q) for q in self.expected.values())


# ---------------------------------------------------------------- stimulus

def random_program(rng):
    """A random stage program of 1..8 stages."""
    n = int(rng.integers(1, 9))
    return [(int(rng.integers(0, 2)), int(rng.integers(0, 256))) for _ in range(n)]


def random_command(rng, config, *, bad=0.05, weights=None):
    """One random ``cmd`` request for a QCC with ``config`` (a mix of every op).

    Entity numbers, frames and buffers are drawn from their whole range, so with small
    tables most name live entities and some do not. ``bad`` is the share of malformed
    requests (reserved op, bad type, bad length, frame out of range, empty program).
    """
    E, F, R = config["entities"], config["frames"], config["records"]
    ops = ["alloc", "map", "search", "delete", "release", "translate", "config"]
    weights = weights or {"alloc": 6, "map": 2, "search": 2, "delete": 1, "release": 1,
                          "translate": 2, "config": 0.2}
    p = np.array([weights.get(op, 0) for op in ops], float)
    if rng.random() < bad:
        return random_bad_command(rng, config)
    op = ops[rng.choice(len(ops), p=p / p.sum())]
    entity = int(rng.integers(0, E))
    if op == "alloc":
        return Command.alloc(int(rng.integers(0, N_TYPES)), int(rng.integers(1, 9)),
                             hold=bool(rng.random() < 0.3))
    if op == "map":
        return Command.map(entity, int(rng.integers(1, F)) if F > 1 else 0,
                           int(rng.integers(1, 9)))
    if op == "search":
        return Command.search(entity, int(rng.integers(0, F)))
    if op == "delete":
        return Command.delete(entity)
    if op == "release":
        return Command.release(entity)
    if op == "translate":
        return Command.translate(int(rng.integers(0, min(R + 1, 256))), int(rng.integers(0, 9)))
    return Command.config(int(rng.integers(0, N_TYPES)), random_program(rng))


def random_bad_command(rng, config):
    """A malformed request: every way the model answers with an error code."""
    choice = int(rng.integers(0, 6))
    if choice == 0:
        return Command(7, entity=int(rng.integers(0, 256)))
    if choice == 1:
        return Command.alloc(int(rng.integers(N_TYPES, 8)), 1)
    if choice == 2:
        return Command.alloc(0, int(rng.choice([0, 9, 15])))
    if choice == 3:
        return Command.map(int(rng.integers(0, config["entities"])),
                           int(rng.integers(config["frames"], 16)) if config["frames"] < 16
                           else 0, int(rng.choice([0, 9])) if config["frames"] == 16 else 1)
    if choice == 4:
        return Command.config(int(rng.integers(0, 8)), [(0, 1)], nstages=0)
    return Command.config(int(rng.integers(N_TYPES, 8)), [(1, 2)])


def random_query(rng, config, *, bad=0.03):
    """One random ``query`` request: SEARCH or TRANSLATE, sometimes another op."""
    if rng.random() < bad:
        return Command(int(rng.choice([0, 1, 2, 4, 5, 7])), entity=int(rng.integers(0, 256)))
    if rng.random() < 0.6:
        return Command.search(int(rng.integers(0, config["entities"])),
                              int(rng.integers(0, config["frames"])))
    return Command.translate(int(rng.integers(0, min(config["records"] + 1, 256))),
                             int(rng.integers(0, 9)))


def model_of(config):
    """The golden model for a QCC ``config`` (``hw.qcc.QCC.config()``)."""
    return QCCModel(**config)


# ---------------------------------------------------------------- flow scoreboard

class FlowScoreboard:
    """Model-independent checks of the entities' flow, from what the RTL did.

    From the commands taken (with the responses the RTL delivered), the issues taken and
    the completions sent, it follows every entity from its ALLOC: each stage of its
    program is issued exactly once, in order, on the port of the stage's kind, with the
    program's descriptor, and only after the previous stage completed; within a logical
    FIFO (type, stage) entities are issued in the order they entered it (ALLOC or the
    completion of the previous stage); an entity that was not deleted went through every
    stage (none is lost).
    """

    def __init__(self, programs):
        self.programs = [tuple((int(k), int(d)) for k, d in p) for p in programs]

    def check(self, checker, *, drained=True):
        """Check the logs of ``checker``; returns the number of entities followed."""
        responses = checker.seen["resp"]
        commands = checker.commands[:len(responses)]
        events = []       # (clock, order within the clock, kind of event, data)
        for (clock, cmd, _), resp in zip(commands, responses):
            if resp.code != Code.OK:
                continue
            if cmd.op == Op.ALLOC:
                events.append((clock, 1, "alloc", resp))
            elif cmd.op == Op.CONFIG:
                events.append((clock, 1, "config", (cmd.etype, cmd.program[:cmd.nstages])))
            elif cmd.op in (Op.DELETE, Op.RELEASE):
                events.append((clock, 1, "gone", resp.entity))
        for clock, kind, record, _ in checker.completions:
            events.append((clock, 2, "done", (kind, record)))
        for clock, port, issue in checker.taken:
            if port in ("n_issue", "m_issue"):
                events.append((clock, 0, "issue", issue))
        events.sort(key=lambda e: (e[0], e[1]))
        return self._follow(events, drained)

    def _follow(self, events, drained):
        programs = list(self.programs)
        live = {}          # record -> entity state
        fifos = {}         # (etype, stage) -> list of records in entry order
        followed = 0
        for clock, _, what, data in events:
            if what == "config":
                programs[data[0]] = tuple((int(k), int(d)) for k, d in data[1])
            elif what == "alloc":
                assert data.record not in live, f"clock {clock}: record {data.record} reused"
                live[data.record] = {"entity": data.entity, "etype": data.etype,
                                     "hold": data.hold, "program": programs[data.etype],
                                     "stage": 0, "busy": False}
                fifos.setdefault((data.etype, 0), []).append(data.record)
                followed += 1
            elif what == "issue":
                self._issue(clock, data, live, fifos)
            elif what == "done":
                self._done(clock, *data, live, fifos)
            elif what == "gone":
                for record, ent in list(live.items()):
                    if ent["entity"] == data:
                        assert not ent["busy"], f"clock {clock}: busy entity {data} deleted"
                        queue = fifos.get((ent["etype"], ent["stage"]), [])
                        if record in queue:
                            queue.remove(record)
                        del live[record]
        if drained:
            for record, ent in live.items():
                assert ent["stage"] == len(ent["program"]) and ent["hold"], (
                    f"entity {ent['entity']} (record {record}) lost in stage {ent['stage']}")
        return followed

    @staticmethod
    def _issue(clock, issue, live, fifos):
        ent = live.get(issue.record)
        assert ent is not None and ent["entity"] == issue.entity, (
            f"clock {clock}: issue of a record that holds no such entity: {issue}")
        assert not ent["busy"], f"clock {clock}: {issue} issued while busy"
        stage = ent["stage"]
        assert issue.stage == stage < len(ent["program"]), (
            f"clock {clock}: {issue} in stage {issue.stage}, entity is at stage {stage}")
        kind, desc = ent["program"][stage]
        assert (issue.kind, issue.desc, issue.etype, issue.buf) == (
            kind, desc, ent["etype"], issue.record), f"clock {clock}: {issue} wrong fields"
        queue = fifos[(ent["etype"], stage)]
        assert queue and queue[0] == issue.record, (
            f"clock {clock}: {issue} out of order; FIFO ({ent['etype']}, {stage}) is {queue}")
        queue.pop(0)
        ent["busy"] = True

    @staticmethod
    def _done(clock, kind, record, live, fifos):
        ent = live.get(record)
        assert ent is not None and ent["busy"], f"clock {clock}: completion of idle {record}"
        assert ent["program"][ent["stage"]][0] == kind
        ent["busy"] = False
        ent["stage"] += 1
        if ent["stage"] < len(ent["program"]):
            fifos.setdefault((ent["etype"], ent["stage"]), []).append(record)
        elif not ent["hold"]:
            del live[record]


# ---------------------------------------------------------------- cocotb bench

def bench_config():
    """The running design's configuration (``QCC.config()``)."""
    from hw.gen import build
    return build(os.environ["FRESCO_DESIGN"], params()).config()


class Processor:
    """A processor on an issue port: takes issues with random back-pressure and sends
    each completion after a random latency, so completions come back out of order."""

    def __init__(self, dut, kind, rng, *, stall, latency):
        prefix = "n" if kind == Kind.NUMERIC else "m"
        self.clk = dut.clk
        self.rng = rng
        self.latency = latency
        self.monitor = StreamMonitor(dut, f"{prefix}_issue", rng, stall=stall)
        self.driver = StreamDriver(dut, f"{prefix}_done", rng, gap=0)
        self.pending = []            # (due clock, record)
        self.paused = False          # hold every completion back
        self._seen = 0
        self._clock = 0
        self._task = cocotb.start_soon(self._run())

    @property
    def idle(self):
        return not self.pending and self.driver.idle

    async def _run(self):
        while True:
            await FallingEdge(self.clk)
            self._clock += 1
            for payload in self.monitor.items[self._seen:]:
                lo, hi = self.latency
                self.pending.append((self._clock + int(self.rng.integers(lo, hi + 1)),
                                     payload & 0xFF))
            self._seen = len(self.monitor.items)
            if self.paused:
                continue
            due = [p for p in self.pending if p[0] <= self._clock]
            for index in self.rng.permutation(len(due)):
                self.driver.send([due[index][1]])
                self.pending.remove(due[index])

    def stop(self):
        self._task.cancel()
        self.monitor.stop()
        self.driver.stop()


class QCCBench:
    """Drivers, monitors, processors and the clock-by-clock checker around the QCC."""

    def __init__(self, dut, rng, *, gap=0.3, stall=0.3, latency=(1, 8)):
        self.dut = dut
        self.rng = rng
        self.config = bench_config()
        self.model = model_of(self.config)
        self.checker = CycleChecker(self.model, self.config["lines"])
        self.failure = None
        self._sampler = cocotb.start_soon(self._sample())
        self.cmd = StreamDriver(dut, "cmd", rng, gap=gap)
        self.query = StreamDriver(dut, "query", rng, gap=gap)
        self.resp = StreamMonitor(dut, "resp", rng, stall=stall)
        self.qresp = StreamMonitor(dut, "qresp", rng, stall=stall)
        self.procs = [Processor(dut, k, rng, stall=stall, latency=latency) for k in Kind]

    def send(self, commands):
        self.cmd.send(encode_command(c) for c in commands)

    def ask(self, queries):
        self.query.send(encode_command(q) for q in queries)

    async def _sample(self):
        dut = self.dut
        outputs = {port: tuple(getattr(dut, f"{port}__{s}") for s in ("valid", "ready",
                                                                       "payload"))
                   for port in CycleChecker.PORTS}
        status = [getattr(dut, f"status__{f}") for f in
                  ("free_records", "free_entities", "free_lines", "free_run", "error")]
        try:
            while True:
                await FallingEdge(dut.clk)
                await ReadOnly()
                sample = Sample(outputs={p: tuple(int(s.value) for s in sigs)
                                         for p, sigs in outputs.items()},
                                status=tuple(int(s.value) for s in status))
                for port in ("cmd", "query"):
                    if int(getattr(dut, f"{port}__valid").value) \
                            and int(getattr(dut, f"{port}__ready").value):
                        setattr(sample, port, int(getattr(dut, f"{port}__payload").value))
                for port in ("n_done", "m_done"):
                    if int(getattr(dut, f"{port}__valid").value):
                        setattr(sample, port, int(getattr(dut, f"{port}__payload").value))
                for port, attr in (("n_issue", "n_ready"), ("m_issue", "m_ready")):
                    valid, ready, _ = sample.outputs[port]
                    setattr(sample, attr, bool(not valid or ready))
                self.checker.clock(sample)
        except AssertionError as error:
            self.failure = error
            raise

    def check(self):
        """Raise the checker's first failure, if any."""
        if self.failure is not None:
            raise self.failure

    @property
    def idle(self):
        return (self.cmd.idle and self.query.idle and all(p.idle for p in self.procs)
                and not self.checker.pending() and self.model.idle())

    async def drain(self, timeout=20000, what="the bench to drain"):
        """Wait until every request is answered and no entity is queued or busy."""
        await wait_until(self.dut, lambda: self.idle or self.failure is not None,
                         timeout=timeout, what=what)
        await ClockCycles(self.dut.clk, 3)
        self.check()

    async def run(self, commands, timeout=20000):
        """Send commands one after another and wait for everything to drain."""
        self.send(commands)
        await self.drain(timeout)

    async def settle(self, commands=(), timeout=5000):
        """Send commands and wait until every command and query is answered (issues
        may still wait for a stopped processor)."""
        self.send(commands)
        answered = lambda: (self.cmd.idle and self.query.idle  # noqa: E731
                            and not self.checker.expected["resp"]
                            and not self.checker.expected["qresp"])
        await wait_until(self.dut, lambda: answered() or self.failure is not None,
                         timeout=timeout, what="every request to be answered")
        await ClockCycles(self.dut.clk, 3)
        self.check()

    def stop(self):
        for part in (self.cmd, self.query, self.resp, self.qresp, *self.procs):
            part.stop()
        self._sampler.cancel()

    def flow(self, drained=True):
        """The model-independent flow checks (:class:`FlowScoreboard`)."""
        return FlowScoreboard(self.config["programs"]).check(self.checker, drained=drained)

    async def clear(self):
        """Delete every live entity (held ones included) and check that every record,
        entity number and cache line is free again."""
        for entity in self.model.live_entities():
            self.send([Command.delete(entity)])
        await self.drain()
        st = self.model.status()
        assert (st.free_records, st.free_entities, st.free_lines) == (
            self.config["records"], self.config["entities"], self.config["lines"]), st


# ---------------------------------------------------------------- pytest entry points

#: Small tables for most runs (entities < records, so MAP can run out of records).
SMALL = {"records": 8, "entities": 6, "lines": 24, "frames": 4}

TESTS = ["random_mix", "fill_to_the_brim", "bad_input", "delete_cases", "programs_and_hold",
         "query_every_clock", "reset_midway"]


#: The QCC is wide (a comparator and update logic per record): WIDE_DESIGN builds the
#: 256-record design several times faster.


def run_qcc(simulator, params, tests, scale="small"):
    run_cocotb("qcc.qcc", "tb.test_qcc", simulator, params, testcase=tests,
               extra_env={"QCC_SCALE": scale}, **WIDE_DESIGN)


@pytest.mark.parametrize("simulator", simulators())
def test_qcc(simulator):
    """Every test at small sizes."""
    run_qcc(simulator, SMALL, TESTS)


def test_qcc_full_verilator():
    """The default size, 256 records, entities and lines and 16 frames, on Verilator
    (whatever ``SIM`` says): every table filled to the brim and drained. The build is
    most of its time; ``test_qcc_soak`` (slow) runs every test at this size on both
    simulators."""
    run_qcc("verilator", {}, ["fill_to_the_brim"], "full")


@pytest.mark.slow
@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("size", [{"records": 32, "entities": 40, "lines": 64, "frames": 16},
                                  {"records": 64, "entities": 16, "lines": 128, "frames": 2},
                                  {}])
def test_qcc_soak(simulator, size):
    """Longer random runs and every directed test at more shapes, 256 records included."""
    run_qcc(simulator, size, TESTS, "soak")


def _scale(small, full, soak):
    return {"full": full, "soak": soak}.get(os.environ.get("QCC_SCALE"), small)


# ---------------------------------------------------------------- cocotb tests

@cocotb.test()
async def random_mix(dut):
    """Random mixes of every command and query with random gaps, back-pressure and
    out-of-order completions equal the golden model clock by clock; no entity is lost,
    issued twice or out of order; every record, entity number and line comes back."""
    rng = await start(dut)
    length = _scale(400, 1000, 3000)
    for gap, stall, latency in ((0.0, 0.0, (1, 3)), (0.3, 0.3, (1, 12)), (0.6, 0.5, (2, 30))):
        bench = QCCBench(dut, rng, gap=gap, stall=stall, latency=latency)
        config = bench.config
        bench.ask(random_query(rng, config) for _ in range(length))
        await bench.run([random_command(rng, config, bad=0.02) for _ in range(length)],
                        timeout=100 * length)
        followed = bench.flow()
        # Drained, so no type is in flight: CONFIG of each type's own program is taken
        # (the RTL's per-type counts of busy entities came back to zero).
        await bench.run([Command.config(t, bench.model.program(t)) for t in range(N_TYPES)])
        assert all(r.code == Code.OK for _, _, r in bench.checker.commands[-N_TYPES:])
        await bench.clear()
        dut._log.info("gap %s stall %s: %d clocks, %d entities, %d issues, coverage %s",
                      gap, stall, bench.checker.clocks, followed, len(bench.checker.issues),
                      dict(bench.checker.coverage))
        assert followed > length // 20, "too few entities got through"
        bench.stop()
        await reset(dut)


@cocotb.test()
async def fill_to_the_brim(dut):
    """Fill the records, entity numbers and lines until every refusal code appears,
    with the processors stopped; then let everything drain and give everything back."""
    rng = await start(dut)
    bench = QCCBench(dut, rng, gap=0.2, stall=0.2, latency=(1, 10))
    config = bench.config
    for proc in bench.procs:
        proc.monitor.stall = 1.0           # the processors take nothing for now
    E, R = config["entities"], config["records"]
    # Entities of one line each until entity numbers or records run out.
    await bench.settle([Command.alloc(int(rng.integers(0, N_TYPES)), 1,
                                      hold=bool(rng.random() < 0.5))
                        for _ in range(min(E, R) + 2)], timeout=50 * R)
    # Further frames until the records run out.
    frames = [Command.map(e, f, 1) for f in range(1, config["frames"])
              for e in bench.model.live_entities()][:R + 2]
    await bench.settle(frames + [Command.alloc(0, 1)], timeout=50 * R)
    codes = bench.checker.coverage
    st = bench.model.status()
    assert st.free_records == 0 or st.free_entities == 0, st
    assert codes["ALLOC NO_RECORD"] + codes["ALLOC NO_ENTITY"] >= 1
    # Let everything drain, release what is held, then fill the lines with long buffers.
    for proc in bench.procs:
        proc.monitor.stall = 0.3
    await bench.drain(timeout=200 * R)
    await bench.clear()
    for proc in bench.procs:
        proc.monitor.stall = 1.0
    longest = [Command.alloc(EType.STATE, 8, hold=True)
               for _ in range(config["lines"] // 8 + 2)]
    await bench.settle(longest, timeout=50 * R)
    assert codes["ALLOC NO_LINES"] + codes["ALLOC NO_RECORD"] + codes["ALLOC NO_ENTITY"] >= 2
    for proc in bench.procs:
        proc.monitor.stall = 0.0
    await bench.drain(timeout=200 * R)
    assert int(dut.status__error.value) == 0, "refusals are not errors"
    bench.flow()
    await bench.clear()
    bench.stop()


@cocotb.test()
async def query_every_clock(dut):
    """The query port takes a SEARCH or TRANSLATE every clock and answers each in the
    next clock, while ``cmd`` allocates every clock."""
    rng = await start(dut)
    bench = QCCBench(dut, rng, gap=0.0, stall=0.0, latency=(1, 2))
    config = bench.config
    n = 200
    bench.ask(random_query(rng, config, bad=0) for _ in range(n))
    taken_at = []
    allocs = [Command.alloc(int(rng.integers(0, N_TYPES)), 1) for _ in range(config["records"])]
    bench.send(allocs)
    while not bench.query.idle:
        await FallingEdge(dut.clk)
        await ReadOnly()
        if int(dut.query__valid.value) and int(dut.query__ready.value):
            taken_at.append(bench.checker.clocks)
    await bench.drain()
    assert len(taken_at) == n and taken_at[-1] - taken_at[0] == n - 1, \
        "the query port missed a clock"
    allocs_at = [t for t, cmd, _ in bench.checker.commands if cmd.op == Op.ALLOC]
    assert allocs_at[-1] - allocs_at[0] == len(allocs) - 1, "ALLOC missed a clock"
    bench.flow()
    bench.stop()


@cocotb.test()
async def programs_and_hold(dut):
    """Reset programs are the seed's sequences; CONFIG replaces a whole program; a held
    entity stays until RELEASE; CONFIG is refused while its type is in flight."""
    rng = await start(dut)
    bench = QCCBench(dut, rng, gap=0.2, stall=0.2, latency=(1, 4))
    # One entity of each type with the reset programs: the seed's stage sequences.
    await bench.run([Command.alloc(t, 1, hold=True) for t in range(N_TYPES)])
    for t in range(N_TYPES):
        got = [(i.kind, i.desc) for _, port, i in bench.checker.taken
               if port.endswith("issue") and i.etype == t]
        assert got == [tuple(s) for s in DEFAULT_PROGRAMS[t]], f"type {t}: {got}"
    held = bench.model.live_entities()
    assert len(held) == N_TYPES and not bench.model.error
    # Held entities do not block CONFIG; new programs of random lengths for every type.
    programs = {t: random_program(rng) for t in range(N_TYPES)}
    await bench.run([Command.config(t, p) for t, p in programs.items()])
    assert all(r.code == Code.OK for _, c, r in bench.checker.commands[-N_TYPES:])
    await bench.run([Command.release(e) for e in held]
                    + [Command.alloc(t, 2) for t in range(N_TYPES) for _ in range(2)])
    # While in flight, CONFIG is refused (BUSY) and the program is kept.
    for proc in bench.procs:
        proc.monitor.stall = 1.0
    await bench.settle([Command.alloc(0, 1), Command.config(0, [(0, 1)])], timeout=200)
    assert bench.checker.commands[-1][2].code == Code.BUSY
    for proc in bench.procs:
        proc.monitor.stall = 0.2
    await bench.drain()
    bench.flow()
    await bench.clear()
    bench.stop()


@cocotb.test()
async def delete_cases(dut):
    """DELETE of a queued entity keeps the FIFO order of the others, also in a clock
    where the same FIFO issues; DELETE of an entity issued in that very clock, or busy,
    is refused; MAP in the clock the entity finishes is deleted with it."""
    rng = await start(dut)
    bench = QCCBench(dut, rng, gap=0.0, stall=0.0, latency=(1, 1))
    config = bench.config
    cover = bench.checker.coverage
    for attempt in range(40):
        for proc in bench.procs:
            proc.monitor.stall = 1.0
        # A FIFO of several entities, then deletions while it drains one per clock.
        n = min(config["entities"], config["records"])
        await bench.settle([Command.alloc(EType.STATE, 1) for _ in range(n)], timeout=50 * n)
        # Victims near the head of the FIFO, so that at every table size the deletions
        # meet the issues popping the same FIFO (and sometimes the very entity issued).
        order = {r: i for i, r in enumerate(bench.model.queue(EType.STATE, 0))}
        near = sorted(bench.model.live_entities(), key=lambda e: order.get(
            bench.model.entity_info(e)[0]["record"], -1))[:8]
        victims = [int(e) for e in rng.permutation(near)[:3]]
        for proc in bench.procs:
            proc.monitor.stall = 0.0
        for _ in range(int(rng.integers(0, 3))):
            await FallingEdge(dut.clk)
        bench.send([Command.delete(e) for e in victims])
        await bench.drain()
        # MAP of an entity whose last stage may complete in the same clock.
        entity = bench.model.live_entities()
        bench.send([Command.alloc(EType.STATE, 1)])
        await ClockCycles(dut.clk, int(rng.integers(1, 6)))
        if bench.model.live_entities():
            bench.send([Command.map(bench.model.live_entities()[-1], 1, 1)])
        await bench.drain()
        await bench.clear()
        if cover["delete queued, same FIFO popped"] and \
                cover["delete of an entity issued in that clock"] and \
                cover["map in the clock the entity finishes"]:
            break
    dut._log.info("coverage after %d rounds: %s", attempt + 1, dict(cover))
    for case in ("delete queued", "delete queued, same FIFO popped",
                 "delete of an entity issued in that clock",
                 "map in the clock the entity finishes", "tombstone dropped",
                 "DELETE BUSY"):
        assert cover[case] > 0, f"never hit: {case}"
    bench.flow()
    bench.stop()


def bad_cases(config):
    """Bad input, one case each, with values derived from ``config``: (name, set-up,
    processors stopped, the bad request as (port, payload), the code the model answers).

    The set-up is a list of ``cmd`` commands and ``(port, record)`` completions sent by
    hand. A case whose value cannot be encoded at this shape (``frames = 16`` leaves no
    4-bit frame >= ``frames``; 256 records leave no 8-bit index >= ``records``) is left
    out (the test logs the names it ran).
    """
    E, R, F = config["entities"], config["records"], config["frames"]
    unknown = E - 1 if E > 1 else 1           # entity 0 is the only live one
    # PATCH with two MOVE stages: record 0 issued (the MOVE processor takes nothing),
    # completed by hand, so it waits queued in stage 1 behind the unread stage-0 issue.
    two_moves = [Command.config(EType.PATCH, [(Kind.MOVE, 0x30), (Kind.MOVE, 0x31)]),
                 Command.alloc(EType.PATCH, 1, hold=True), ("m_done", 0),
                 lambda model: model.queue(EType.PATCH, 1) == (0,)]
    cases = [
        ("cmd op 7", [], False, ("cmd", Command(7)), Code.BAD_OP),
        ("query ALLOC", [], False, ("query", Command.alloc(0, 1)), Code.BAD_OP),
        ("ALLOC etype 5", [], False, ("cmd", Command.alloc(5, 1)), Code.BAD_ARG),
        ("ALLOC 0 lines", [], False, ("cmd", Command.alloc(0, 0)), Code.BAD_ARG),
        ("ALLOC 9 lines", [], False, ("cmd", Command.alloc(0, 9)), Code.BAD_ARG),
        ("MAP 0 lines", "one", False, ("cmd", Command.map(0, min(1, F - 1), 0)),
         Code.BAD_ARG),
        ("MAP frame >= frames", "one", False, ("cmd", Command.map(0, F, 1)), Code.BAD_ARG)
        if F < 16 else None,
        ("MAP unknown entity", "one", False, ("cmd", Command.map(unknown, 0, 1)),
         Code.UNKNOWN),
        ("MAP frame 0", "one", False, ("cmd", Command.map(0, 0, 1)), Code.MAPPED),
        ("MAP mapped frame", "mapped", False, ("cmd", Command.map(0, 1, 2)), Code.MAPPED)
        if F > 1 else None,
        ("CONFIG no stages", [], False, ("cmd", Command.config(1, [(0, 1)], nstages=0)),
         Code.BAD_ARG),
        ("CONFIG 9 stages", [], False, ("cmd", Command.config(1, [(0, 1)], nstages=9)),
         Code.BAD_ARG),
        ("CONFIG etype 6", [], False, ("cmd", Command.config(6, [(0, 1)])), Code.BAD_ARG),
        ("CONFIG in flight", "one", True, ("cmd", Command.config(0, [(0, 1)])), Code.BUSY),
        ("DELETE unknown", [], False, ("cmd", Command.delete(unknown)), Code.UNKNOWN),
        ("DELETE busy", "one", True, ("cmd", Command.delete(0)), Code.BUSY),
        ("RELEASE unknown", [], False, ("cmd", Command.release(unknown)), Code.UNKNOWN),
        ("RELEASE not held", "one", True, ("cmd", Command.release(0)), Code.NOT_HELD),
        ("RELEASE of a queued entity", "queued", True, ("cmd", Command.release(1)),
         Code.NOT_HELD) if min(E, R) > 1 else None,
        ("TRANSLATE free buffer", "one", False, ("cmd", Command.translate(R - 1, 0)),
         Code.UNKNOWN) if R > 1 else None,
        ("TRANSLATE buffer >= records", "one", False, ("query", Command.translate(R, 0)),
         Code.UNKNOWN) if R < 256 else None,
        ("TRANSLATE past the buffer", "one", False, ("query", Command.translate(0, 2)),
         Code.RANGE),
        ("TRANSLATE past the buffer (cmd)", "one", False, ("cmd", Command.translate(0, 9)),
         Code.RANGE),
        ("completion of a free record", [], False, ("n_done", R - 1), Code.UNKNOWN),
        ("completion of a record >= records", [], False, ("m_done", R), Code.UNKNOWN)
        if R < 256 else None,
        ("completion of a queued record", "queued", True, ("m_done", 1), Code.NOT_BUSY)
        if min(E, R) > 1 else None,
        ("completion of a record whose issue was completed (queued in its next stage)",
         two_moves, True, ("m_done", 0), Code.NOT_BUSY),
        ("completion on the wrong port", "one", True, ("n_done", 0), Code.NOT_BUSY),
    ]
    return [c for c in cases if c is not None]


@cocotb.test()
async def bad_input(dut):
    """Each kind of bad input is ignored with the sticky error flag, leaves the state
    unchanged (every record and buffer is probed afterwards) and does not hang."""
    rng = await start(dut)
    cases = bad_cases(bench_config())
    dut._log.info("%d bad-input cases: %s", len(cases), [c[0] for c in cases])
    for name, setup, stopped, (port, request), code in cases:
        bench = QCCBench(dut, rng, gap=0.3, stall=0.3, latency=(1, 3))
        if stopped:
            for proc in bench.procs:
                proc.monitor.stall = 1.0
        setups = {"one": [Command.alloc(EType.VERTEX, 2, hold=True)],   # MOVE stage 0
                  "mapped": [Command.alloc(EType.VERTEX, 2, hold=True), Command.map(0, 1, 1)],
                  "queued": [Command.alloc(EType.STATE, 1), Command.alloc(EType.STATE, 1)]}
        for step in setups[setup] if isinstance(setup, str) else setup:
            if isinstance(step, Command):
                await bench.settle([step], timeout=500)
            elif callable(step):
                assert step(bench.model), f"{name}: the set-up did not reach its state"
            else:
                _send_done(bench, *step)
                await ClockCycles(dut.clk, 4)
        if not stopped:
            await bench.drain()
        await ClockCycles(dut.clk, 2)
        assert int(dut.status__error.value) == 0, f"{name}: error flag set by the set-up"
        before = bench.model.snapshot()
        count = len(bench.checker.commands), len(bench.checker.completions)
        if port == "cmd":
            bench.send([request])
        elif port == "query":
            bench.ask([request])
        else:
            _send_done(bench, port, request)
        await wait_until(dut, lambda: len(bench.checker.commands) + len(
            bench.checker.completions) + len(bench.checker.seen["qresp"]) > sum(count)
            and bench.cmd.idle and bench.query.idle, timeout=200, what=name)
        await ClockCycles(dut.clk, 4)
        bench.check()
        got = _bad_code(bench, port, count)
        assert got == code, f"{name}: the model answers {got!r}, the case names {code!r}"
        assert int(dut.status__error.value) == 1, f"{name}: error flag not set"
        assert bench.model.snapshot() == before, f"{name}: the model's state changed"
        await _probe(bench)
        for proc in bench.procs:
            proc.monitor.stall = 0.3
        await bench.drain()
        assert int(dut.status__error.value) == 1, f"{name}: the error flag is not sticky"
        bench.stop()
        await reset(dut)
        assert int(dut.status__error.value) == 0, "reset clears the error flag"


def _send_done(bench, port, record):
    """A completion of ``record`` on ``port`` sent by hand (not by a processor)."""
    bench.procs[0 if port == "n_done" else 1].driver.send([record])


def _bad_code(bench, port, count):
    if port == "cmd":
        return bench.checker.commands[count[0]][2].code
    if port == "query":
        return bench.checker.seen["qresp"][-1].code
    return bench.checker.completions[count[1]][3]


async def _probe(bench):
    """SEARCH every (entity, frame) and TRANSLATE every buffer: the RTL's answers must
    equal the model's, so the RTL's state equals the model's."""
    config = bench.config
    bench.ask([Command.search(e, f) for e in range(min(config["entities"], 8))
               for f in range(config["frames"])]
              + [Command.translate(b, 0) for b in range(config["records"])])
    await wait_until(bench.dut, lambda: bench.query.idle and not bench.checker.expected[
        "qresp"] or bench.failure is not None, timeout=2000, what="the probe")
    bench.check()


@cocotb.test()
async def reset_midway(dut):
    """A reset in the middle of busy traffic empties the QCC: every record, entity number
    and line free, programs back to the reset ones, error clear; traffic then runs as
    from the start."""
    rng = await start(dut)
    bench = QCCBench(dut, rng, gap=0.2, stall=0.3, latency=(1, 6))
    config = bench.config
    bench.send(Command.config(1, [(0, 9)]) for _ in range(1))
    bench.send(random_command(rng, config, bad=0.05) for _ in range(300))
    await ClockCycles(dut.clk, 150)
    bench.check()
    bench.stop()
    await reset(dut)
    await ReadOnly()
    assert (int(dut.status__free_records.value), int(dut.status__free_entities.value),
            int(dut.status__free_lines.value), int(dut.status__free_run.value),
            int(dut.status__error.value)) == (
        config["records"], config["entities"], config["lines"], config["lines"], 0)
    await FallingEdge(dut.clk)
    bench = QCCBench(dut, rng, gap=0.2, stall=0.3, latency=(1, 6))
    await bench.run([Command.alloc(t, 1) for t in range(N_TYPES)]
                    + [random_command(rng, config, bad=0.0) for _ in range(100)])
    bench.flow()
    await bench.clear()
    bench.stop()
