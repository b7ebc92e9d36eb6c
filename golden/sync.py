"""Golden model of the token FIFOs and token-synchronised pipeline units.

Transaction level and timing-free: for a unit's configuration, the words on each input
and the ``ev_in`` strobes, :meth:`UnitModel.run` gives the words on each output, the
``ev_out`` strobes and the sticky error flag. A token-synchronised pipeline must give
this result whatever the timing of its inputs and outputs. The model has no clock: the
RTL's pipeline depth, latency and the clocks a barrier or a dropped word costs
(``hw/sync.py``, "Structure and timing") are free as long as the words come out as here;
the one timing it reads is where an ``ev_in`` strobe falls among the words taken.

Words are integers packed as in the RTL's stream word: ``is_token`` in bit 0, ``data``
above it; a token's ``data`` is ``code | arg << 8``. Use :func:`data_word`,
:func:`token_word` and :func:`describe` rather than packing by hand.

The rules (the spec's ``sync.md``, with the decisions documented in ``hw/sync.py``):

* A data item goes to output ``(data >> route_lo) & (2**route_bits - 1)``; it is dropped
  while a DISCARD or CONTEXT event is open; a route with no output is malformed.
* Event tokens go to every output, are strobed on ``ev_out`` and open or close their
  event; an EVENT_END of an event that is not open only marks a boundary.
* Separators go to every output when their code is in ``broadcast``, otherwise to the
  output of the last data item (output 0 at first).
* A join (more than one input) starts at input 0, moves to the next input after
  forwarding END_BATCH and to input ``arg`` on a SWITCH, which it consumes. An event at
  the head of the current input makes the join step to the next input, until every
  input has an event at its head; then input 0's event goes out once, every input whose
  head equals it is popped (a differing head stays and flags an error), and the join
  resumes at input 0.
* ``ev_in`` strobes are given as ``(k, kind, id)``: the strobe comes once the unit has
  taken ``k`` words from its inputs. A start injects ``inject[id]`` (default
  ``EVENT_START(id)``), an end ``EVENT_END(id)``; strobes due at the same ``k`` are
  served starts first, then ends, by ascending id, a repeated one once.
* Malformed words (unknown code, event id outside 1..4, SWITCH to a missing input, route
  to a missing output) and ev_in ids outside 1..4 are dropped and set ``error``.
"""

import enum
from dataclasses import dataclass, field

__all__ = ["Token", "EventId", "data_word", "token_word", "describe", "UnitModel",
           "UnitResult", "REFERENCE_CONFIGS", "fifo_model"]


class Token(enum.IntEnum):
    """Token codes."""
    END_STATE_BLOCK = 0x01
    END_PRIMITIVE_BLOCK = 0x02
    END_3D_BLOCK = 0x03
    END_2D_BLOCK = 0x04
    END_TRIANGLE = 0x05
    END_BATCH = 0x06
    SWITCH = 0x10
    EVENT_START = 0x20
    EVENT_END = 0x21


class EventId(enum.IntEnum):
    """Event ids."""
    CONTEXT = 1
    DMA = 2
    INTERRUPT = 3
    DISCARD = 4


DISCARDING_EVENTS = {EventId.CONTEXT, EventId.DISCARD}
EVENT_CODES = {Token.EVENT_START, Token.EVENT_END}


def data_word(value):
    """A data item carrying ``value``."""
    return int(value) << 1


def token_word(code, arg=0):
    """A token with ``code`` and ``arg``."""
    return 1 | ((int(code) | int(arg) << 8) << 1)


def describe(word):
    """A readable form of a word, for failure messages."""
    if word & 1:
        code, arg = (word >> 1) & 0xFF, (word >> 9) & 0xFF
        name = Token(code).name if code in set(Token) else f"code {code:#04x}"
        return f"<{name} {arg}>"
    return f"{word >> 1:#x}"


def fifo_model(words):
    """A token FIFO: the words come out as they went in."""
    return list(words)


@dataclass
class UnitResult:
    """What a unit gives for one run: words per output, ev_out strobes, error flag."""
    outputs: list
    ev_out: list = field(default_factory=list)   # ("start" | "end", id) in order
    error: bool = False
    open_events: int = 0                         # bit k-1: event k open at the end


class UnitModel:
    """A token-synchronised unit; takes the same parameters as ``hw.sync.TokenUnit``."""

    def __init__(self, *, n_inputs, n_outputs, width=32, route_lo=None, broadcast=(),
                 inject=None):
        for name, value, top in (("n_inputs", n_inputs, 16), ("n_outputs", n_outputs, 16)):
            if not isinstance(value, int) or not 1 <= value <= top:
                raise ValueError(f"{name} must be an integer from 1 to {top}, not {value!r}")
        self.n_inputs = n_inputs
        self.n_outputs = n_outputs
        self.route_bits = (n_outputs - 1).bit_length()
        self.route_lo = width - self.route_bits if route_lo is None else route_lo
        self.broadcast = {Token(c) for c in broadcast}
        inject = inject or {}
        starts = [tuple(inject.get(k, ((Token.EVENT_START, k),))) for k in EventId]
        ends = [((Token.EVENT_END, k),) for k in EventId]
        self.sequences = starts + ends     # in the order pending strobes are served

    def run(self, inputs, ev_in=()):
        """Run the unit over ``inputs`` (one list of words per input) and ``ev_in``.

        Stops when the current input has no more words, as the RTL would wait.
        """
        if len(inputs) != self.n_inputs:
            raise ValueError(f"inputs must hold {self.n_inputs} lists, not {len(inputs)}")
        run = _Run(self, [list(words) for words in inputs])
        due = sorted(ev_in, key=lambda ev: ev[0])
        while True:
            while due and due[0][0] <= run.taken:
                run.strobe(*due.pop(0)[1:])
            if run.pending:
                run.serve_pending()
            elif not run.step_input():
                break
        if due:
            raise ValueError(f"ev_in strobe {due[0]} comes after the last word taken "
                             f"({run.taken} words)")
        return run.result


class _Run:
    """The state of one run of a :class:`UnitModel`."""

    def __init__(self, unit, inputs):
        self.unit = unit
        self.inputs = inputs
        self.pos = [0] * len(inputs)
        self.cur = 0
        self.last_route = 0
        self.open = set()
        self.pending = set()
        self.taken = 0
        self.result = UnitResult(outputs=[[] for _ in range(unit.n_outputs)])

    @property
    def is_join(self):
        return self.unit.n_inputs > 1

    def head(self, k):
        words = self.inputs[k]
        return words[self.pos[k]] if self.pos[k] < len(words) else None

    def pop(self, k):
        self.pos[k] += 1
        self.taken += 1

    def strobe(self, kind, event):
        if event not in set(EventId):
            self.result.error = True
        else:
            self.pending.add((0 if kind == "start" else 4) + event - 1)

    def serve_pending(self):
        slot = min(self.pending)
        self.pending.discard(slot)
        for code, arg in self.unit.sequences[slot]:
            self.handle(token_word(code, arg), from_input=False)

    def step_input(self):
        """Take the next word from the current input; False when there is none."""
        current = self.cur
        word = self.head(current)
        if word is None:
            return False
        if self.handle(word, from_input=True):   # may move to another input
            self.pop(current)
        return True

    def handle(self, word, from_input):
        """Act on one word; returns whether the word is taken from its input."""
        unit = self.unit
        is_token, data = word & 1, word >> 1
        code, arg = data & 0xFF, (data >> 8) & 0xFF
        if not is_token:
            return self.handle_data(word, data)
        if (code not in set(Token) or (code in EVENT_CODES and arg not in set(EventId))
                or (self.is_join and code == Token.SWITCH and arg >= unit.n_inputs)):
            self.result.error = True
            return True
        if code in EVENT_CODES:
            if self.is_join and from_input:
                return self.barrier()
            self.emit_event(word)
            return True
        if self.is_join and from_input and code == Token.SWITCH:
            self.cur = arg
            return True
        targets = range(unit.n_outputs) if code in unit.broadcast else [self.last_route]
        self.emit(word, targets)
        if self.is_join and from_input and code == Token.END_BATCH:
            self.cur = (self.cur + 1) % unit.n_inputs
        return True

    def handle_data(self, word, data):
        if self.open & DISCARDING_EVENTS:
            return True
        route = (data >> self.unit.route_lo) & ((1 << self.unit.route_bits) - 1)
        if route >= self.unit.n_outputs:
            self.result.error = True
            return True
        self.emit(word, [route])
        self.last_route = route
        return True

    def barrier(self):
        """An event at the head of the current input: complete the barrier or step on."""
        heads = [self.head(k) for k in range(self.unit.n_inputs)]
        if not all(h is not None and _is_event(h) for h in heads):
            self.cur = (self.cur + 1) % self.unit.n_inputs
            return False
        for k, h in enumerate(heads):
            if h == heads[0]:
                self.pop(k)
            else:
                self.result.error = True
        self.emit_event(heads[0])
        self.cur = 0
        return False     # the inputs are popped here, not by the caller

    def emit_event(self, word):
        data = word >> 1
        code, event = data & 0xFF, (data >> 8) & 0xFF
        self.emit(word, range(self.unit.n_outputs))
        if code == Token.EVENT_START:
            self.open.add(event)
            self.result.ev_out.append(("start", event))
        else:
            self.open.discard(event)
            self.result.ev_out.append(("end", event))
        self.result.open_events = sum(1 << (k - 1) for k in self.open)

    def emit(self, word, targets):
        for k in targets:
            self.result.outputs[k].append(word)


def _is_event(word):
    data = word >> 1
    return bool(word & 1) and (data & 0xFF) in EVENT_CODES and ((data >> 8) & 0xFF) in set(EventId)


#: The spec's reference instances, as ``UnitModel`` / ``hw.sync.TokenUnit`` parameters.
REFERENCE_CONFIGS = {
    "csp": dict(n_inputs=1, n_outputs=4, inject={EventId.INTERRUPT: (
        (Token.EVENT_END, EventId.DMA), (Token.EVENT_END, EventId.CONTEXT),
        (Token.EVENT_END, EventId.INTERRUPT))}),
    "tsu_asu": dict(n_inputs=1, n_outputs=3, broadcast=(Token.END_TRIANGLE, Token.END_BATCH)),
    "zpreset": dict(n_inputs=2, n_outputs=2, broadcast=(Token.END_TRIANGLE, Token.END_BATCH)),
}
