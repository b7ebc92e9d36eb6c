"""Token FIFOs and token-synchronised pipeline units.

Units of the pipeline are joined by streams of :func:`stream_word` words. A word is a
data item or a *token*; tokens travel in order with the data and tell the unit downstream
where a batch, a triangle or an event begins and ends, so a pipeline switches batch or
context without being flushed. Side-band *event wires* (:data:`EventWireSignature`)
carry start/end strobes that need not travel in order.

Blocks
------
:class:`TokenFIFO`
    A synchronous FIFO of stream words.
:class:`InputFIFO`
    A FIFO whose ``i.ready`` is a register: the buffer in front of each input of a unit.
:class:`StreamBuffer`
    A two-entry skid buffer for any stream, with every output a register: it joins
    pipelines (the units' own buffers, the rasterizer's stages) without a combinational
    path through ``ready``.
:class:`TokenUnit`
    The one engine behind the four unit kinds :class:`RegularUnit` (1 in, 1 out),
    :class:`ForkUnit` (1 in, N out), :class:`JoinUnit` (N in, 1 out) and
    :class:`JoinForkUnit` (N in, M out).
:func:`csp`, :func:`tsu_asu`, :func:`zpreset`
    The three reference instances of the spec as configurations of the units.

Behaviour of a unit (the golden model ``golden/sync.py`` is the executable reference)
-------------------------------------------------------------------------------------
Every cycle the unit takes at most one word, from its current input or from its
event-injection sequencer, and writes it to zero, one or all of its outputs:

* A **data item** goes to the output selected by its routing field, bits
  ``route_lo .. route_lo + ceil(log2(n_outputs)) - 1`` of ``data``. While a DISCARD or
  CONTEXT event is open, data items are dropped.
* **Event tokens** (EVENT_START / EVENT_END with id 1..4) go to every output, strobe
  ``ev_out`` and open / close the event's mode. An EVENT_END of an event that is not open
  is a boundary marker: forwarded and strobed, no mode change.
* **Separator tokens** go to every output when their code is in ``broadcast``, otherwise
  to the output the last data item went to (output 0 before any data item): the output
  of "the group they end".
* **Joins** (more than one input) read input 0 first. END_BATCH is forwarded and moves
  the unit to the next input; SWITCH(arg) is consumed (it is addressed to this join, so
  it is not forwarded) and moves the unit to input ``arg``. An event token at the head
  of the current input is a barrier: the unit moves on to the next input until every
  input has an event token at its head; then it emits the token of input 0 once, pops
  every input whose head is the same word and resumes at input 0. A head that differs
  from input 0's stays (to become part of a later barrier) and raises ``error``.
  A unit with one input forwards END_BATCH and SWITCH like separators.
* **ev_in**: a start strobe with id ``k`` injects the tokens ``inject[k]`` (default:
  ``EVENT_START(k)``), an end strobe injects ``EVENT_END(k)``. Injected tokens are
  handled like tokens read from an input. They go in where the unit has got to in its
  input buffers when the strobe arrives: words taken up to the clock after the strobe's
  come before them, words still queued in the buffers after them. Strobes pending
  together are injected starts first, then ends, each by ascending id.
* **Malformed input** (an unknown token code, an event id outside 1..4, a SWITCH to a
  missing input, a routing field naming a missing output, an ev_in id outside 1..4) is
  dropped and sets the sticky ``error`` output until reset.

Structure and timing
--------------------
The unit is a short pipeline, built so that no clock chains the routing decision, the
target outputs, the outputs' room and the taking of the next word (the loop that held
the first design to 146 MHz):

1. **Input FIFOs.** Each input word is decoded on its way into an :class:`InputFIFO`
   (``fifo_depth``, at least the three entries that stream a word per clock), whose
   ``ready`` (the input port's) is a register, followed by a two-entry head buffer that
   refills whenever its spare entry is free.
2. **Take.** Every clock the unit takes at most one word: an injected token, a join's
   event barrier, or the head of the current input. Whether it takes a head depends on
   three flip-flops: per input, ``cur_go`` (it is the current input, no ``ev_in``
   strobe is being served and the emit stage has room: loaded from those conditions'
   next values), the head's event bit, and the barrier's ``pops`` bit (a register too).
   So a head buffer's ``ready`` is one LUT, its clock enable and set/reset one LUT4
   each, with no multiplexer and no output's ready on the way, and it moves only the
   head buffer: the FIFO's read port and pointers are not on that path. Routing,
   discard and "output of the last data item" are resolved here, into the word's
   target outputs; the flags that decide whether the word taken goes on (``keep``) are
   decoded on the way in, so they are a LUT per input and a one-hot choice.
3. **Emit stage.** A register for the word taken (the take multiplexer ends there),
   then a two-entry skid buffer of (word, targets) whose ``room`` is a register. Its
   oldest word is written into every target output buffer with space and leaves once
   all its targets have it, so a broadcast waits for no output that already took it.
4. **Output buffers.** Two entries per output, with ``ready``, ``valid`` and ``payload``
   in registers.

No port's ``ready`` reaches another port combinationally, and the unit moves one word per
clock per port: a join switching inputs on END_BATCH or a fork broadcasting a token to
outputs that are all ready loses no cycle. A consumed SWITCH or a dropped word is taken
in a clock of its own with no output. Every word taken, a dropped one too, and a join's
step past a waiting event wait for room in the emit stage. Each input word carries, from
its decoding, the input a join reads next (``next_input``), so moving between inputs is a
one-hot multiplexer. A join's barrier is detected a clock before it fires (the inputs'
heads cannot change in between), so a barrier takes two clocks. A word taken in at one
clock edge can leave six edges later (``make bench`` measures it). ``ev_in`` strobes are
decoded and registered as they come in; inputs stop from the second clock after the
strobe, and the injector chooses the strobe it serves (the lowest pending) a clock
before it loads the strobe's tokens, so no clock chains the choice and the load.
``ev_out`` strobes in the clock after the unit takes the event token, and ``error``
rises two clocks after a malformed word is dropped. The golden model is transaction
level: none of this timing changes what it computes.
"""

import enum

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from hw.params import check_int

__all__ = [
    "Token", "EventId", "stream_word", "EventWireSignature",
    "TokenFIFO", "InputFIFO", "StreamBuffer", "TokenUnit", "RegularUnit", "ForkUnit", "JoinUnit",
    "JoinForkUnit",
    "csp", "tsu_asu", "zpreset", "DESIGNS",
]


class Token(enum.IntEnum):
    """Token codes (bits 0-7 of a token's ``data``)."""
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
    """Event ids (a token's ``arg``, an event wire's ``id``)."""
    CONTEXT = 1
    DMA = 2
    INTERRUPT = 3
    DISCARD = 4


#: Events during which a unit drops the data items it reads.
DISCARDING_EVENTS = (EventId.CONTEXT, EventId.DISCARD)

#: Separators that a join/fork always duplicates to every output (the Z-preset rule).
JOIN_FORK_BROADCAST = (Token.END_TRIANGLE, Token.END_BATCH)

EventWireSignature = wiring.Signature({
    "start": Out(1),
    "end": Out(1),
    "id": Out(4),
})
"""Event wire: ``start`` and ``end`` strobes (one cycle each) with the event ``id``."""


def stream_word(width=32):
    """Layout of a pipeline stream word: ``is_token`` (bit 0), then ``data`` (``width`` bits).

    A token's ``data`` holds its ``code`` in bits 0-7 and its ``arg`` in bits 8-15.
    """
    check_int("width", width, 16, 64)
    return data.StructLayout({"is_token": 1, "data": width})


def _check_code(name, code):
    if code not in set(Token):
        raise ValueError(f"{name} must hold token codes from {sorted(int(t) for t in Token)}, "
                         f"not {code!r}")
    return Token(code)


def _check_inject(inject):
    if not isinstance(inject, dict):
        raise TypeError(f"inject must be a dict of event id to token sequence, not {inject!r}")
    checked = {}
    for event, sequence in inject.items():
        if event not in set(EventId):
            raise ValueError(f"inject keys must be event ids 1 to 4, not {event!r}")
        sequence = tuple((_check_code("inject", code), int(arg)) for code, arg in sequence)
        if any(code == Token.SWITCH for code, _ in sequence):
            raise ValueError("inject sequences must not hold SWITCH, which only an input "
                             "may send to a join")
        if not 1 <= len(sequence) <= 8:
            raise ValueError(f"inject[{event}] must hold 1 to 8 tokens, not {len(sequence)}")
        for _, arg in sequence:
            check_int("inject token arg", arg, 0, 255)
        checked[EventId(event)] = sequence
    return checked


def injection_sequences(inject):
    """Token sequences injected for ``ev_in`` strobes, in the order pending strobes are served.

    Returns 8 tuples of ``(code, arg)``: a start of ids 1..4 (``inject[id]``, by default
    ``EVENT_START(id)``), then an end of ids 1..4 (``EVENT_END(id)``).
    """
    starts = [inject.get(k, ((Token.EVENT_START, k),)) for k in EventId]
    ends = [((Token.EVENT_END, k),) for k in EventId]
    return starts + ends


def _is_valid_event(word):
    """Whether a word is an EVENT_START / EVENT_END token with an id of 1 to 4."""
    code = word.data[0:8]
    arg = word.data[8:16]
    return (word.is_token & ((code == Token.EVENT_START) | (code == Token.EVENT_END))
            & (arg >= 1) & (arg <= 4))


def _next(index, count):
    """``index + 1`` modulo ``count``, without a divider."""
    return Mux(index == count - 1, 0, index + 1)


class TokenFIFO(wiring.Component):
    """Synchronous FIFO of stream words.

    Parameters
    ----------
    width : int
        Width of the ``data`` field of a word (16 to 64); a word is ``width + 1`` bits.
    depth : int
        Number of words held (at least 2).

    Attributes
    ----------
    i : stream, in
        Words in. ``i.ready`` comes from registers only: there is no combinational path
        from ``o.ready`` to ``i.ready``. So a FIFO holding ``depth`` words accepts the next
        write in the cycle after a read, not in the same cycle; below that level a read
        and a write happen in the same cycle, and the FIFO moves one word per clock.
    o : stream, out
        Words out, in order.
    level : unsigned, out
        Number of words held.
    """

    def __init__(self, *, width=32, depth=16):
        check_int("width", width, 16, 64)
        check_int("depth", depth, 2)
        self.width = width
        self.depth = depth
        word = stream_word(width)
        super().__init__({
            "i": In(stream.Signature(word)),
            "o": Out(stream.Signature(word)),
            "level": Out(range(depth + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        # The buffered FIFO reads its memory synchronously, so it maps to block RAM.
        m.submodules.storage = storage = fifo.SyncFIFOBuffered(
            width=stream_word(self.width).size, depth=self.depth)
        wiring.connect(m, wiring.flipped(self.i), storage.w_stream)
        wiring.connect(m, storage.r_stream, wiring.flipped(self.o))
        m.d.comb += self.level.eq(storage.level)
        return m


class TokenUnit(wiring.Component):
    """A token-synchronised pipeline unit with ``n_inputs`` inputs and ``n_outputs`` outputs.

    The module docstring gives the rules. :class:`RegularUnit`, :class:`ForkUnit`,
    :class:`JoinUnit` and :class:`JoinForkUnit` fix the port counts of the four kinds.

    Parameters
    ----------
    n_inputs, n_outputs : int
        Number of input and output streams (1 to 16 each).
    width : int
        Width of the ``data`` field of a stream word (16 to 64).
    route_lo : int or None
        Lowest bit of the routing field in a data item's ``data``; the field is
        ``ceil(log2(n_outputs))`` bits wide and must fit in ``width``. ``None``: the top
        bits of ``data``.
    broadcast : iterable of int
        Separator token codes copied to every output.
    inject : dict of int to sequence of (code, arg)
        Tokens injected for an ``ev_in.start`` of an event id, in place of the default
        ``EVENT_START(id)`` (1 to 8 tokens per id).
    fifo_depth : int
        Depth of the FIFO in front of each input (3 to 4096); its head buffer holds two
        words more. An ``ev_in`` event acts on every word still queued in them.

    Attributes
    ----------
    i : array of stream, in
        Input streams of :func:`stream_word` words.
    o : array of stream, out
        Output streams.
    ev_in, ev_out : :data:`EventWireSignature`
        Event wires in and out; ``ev_out`` strobes once per event token emitted, in the
        cycle after the unit takes the token.
    error : unsigned(1), out
        Sticky: set two clocks after malformed input was dropped; cleared by reset only.
    open_events : unsigned(4), out
        Bit ``k - 1`` is set while event ``k`` is open.
    """

    def __init__(self, *, n_inputs, n_outputs, width=32, route_lo=None,
                 broadcast=(), inject=None, fifo_depth=3):
        check_int("n_inputs", n_inputs, 1, 16)
        check_int("fifo_depth", fifo_depth, 3, 4096)
        self.fifo_depth = fifo_depth
        check_int("n_outputs", n_outputs, 1, 16)
        check_int("width", width, 16, 64)
        self.route_bits = (n_outputs - 1).bit_length()
        if route_lo is None:
            route_lo = width - self.route_bits
        check_int("route_lo", route_lo, 0, width - self.route_bits)
        self.broadcast = tuple(sorted({_check_code("broadcast", code) for code in broadcast}))
        self.inject = _check_inject(inject if inject is not None else {})
        self.n_inputs = n_inputs
        self.n_outputs = n_outputs
        self.width = width
        self.route_lo = route_lo
        self.word = stream_word(width)
        super().__init__({
            "i": In(stream.Signature(self.word)).array(n_inputs),
            "o": Out(stream.Signature(self.word)).array(n_outputs),
            "ev_in": In(EventWireSignature),
            "ev_out": Out(EventWireSignature),
            "error": Out(1),
            "open_events": Out(4),
        })

    def config(self):
        """The configuration as keyword arguments (``golden.sync`` takes the same ones)."""
        return {
            "n_inputs": self.n_inputs, "n_outputs": self.n_outputs, "width": self.width,
            "route_lo": self.route_lo, "broadcast": tuple(int(c) for c in self.broadcast),
            "inject": {int(k): tuple((int(c), a) for c, a in seq)
                       for k, seq in self.inject.items()},
        }

    def decoded_layout(self):
        """A word with the flags the unit needs, decoded as it enters an input buffer."""
        return data.StructLayout({
            "word": self.word,
            "drop": 1,          # malformed: dropped, sets `error`
            "data": 1,          # a data item
            "event": 1,         # EVENT_START / EVENT_END with a valid id
            "event_key": 4,     # of an event: END or START (bit 0 of the code), then the id
            "switch": 1,        # SWITCH at a join: consumed
            # Taken into the emit stage when read, unless it is data while discarding:
            # not malformed, not a consumed SWITCH, not an event at a join (a barrier).
            "keep": 1,
            # One-hot: the input a join reads after taking this word, or steps to while
            # this word (an event) waits for its barrier: `arg` after a SWITCH, the next
            # input after END_BATCH or an event, else the same input.
            "next_input": self.n_inputs,
            "to_last": 1,       # a separator for the output of the last data item
            "targets": self.n_outputs,   # outputs, unless discarded or `to_last`
        })

    def decode(self, m, word, index=0):
        """The decoded form of ``word`` (a View or a constant-valued View) read from input
        ``index``."""
        n_in, n_out = self.n_inputs, self.n_outputs
        dec = Signal(self.decoded_layout())
        code, arg = word.data[0:8], word.data[8:16]
        route = word.data[self.route_lo:self.route_lo + self.route_bits]
        is_event_code = (code == Token.EVENT_START) | (code == Token.EVENT_END)
        known = Cat(code == c for c in Token).any()
        all_outputs = Const((1 << n_out) - 1, n_out)
        is_join = n_in > 1
        here, after = Const(1 << index, n_in), Const(1 << (index + 1) % n_in, n_in)
        m.d.comb += [dec.word.eq(word), dec.next_input.eq(here),
                     dec.keep.eq(~dec.drop & ~dec.switch & ~(dec.event if is_join else 0))]
        with m.If(~word.is_token):
            m.d.comb += [dec.data.eq(route < n_out), dec.drop.eq(route >= n_out),
                         dec.targets.eq(1 << route)]
        with m.Elif(~known | (is_event_code & ~_is_valid_event(word))):
            m.d.comb += dec.drop.eq(1)
        with m.Elif(is_event_code):
            m.d.comb += [dec.event.eq(1), dec.targets.eq(all_outputs), dec.next_input.eq(after),
                         dec.event_key.eq(Cat(code[0], arg[0:3]))]
        with m.Elif((code == Token.SWITCH) if is_join else Const(0)):
            with m.If(arg < n_in):
                m.d.comb += [dec.switch.eq(1), dec.next_input.eq(Cat(arg == k for k in range(n_in)))]
            with m.Else():
                m.d.comb += dec.drop.eq(1)
        with m.Else():    # separators; END_BATCH and SWITCH of a unit with one input
            broadcast = Cat(code == c for c in self.broadcast).any()
            m.d.comb += [dec.targets.eq(Mux(broadcast, all_outputs, 0)),
                         dec.to_last.eq(~broadcast)]
            with m.If(code == Token.END_BATCH):
                m.d.comb += dec.next_input.eq(after)
        return dec

    def elaborate(self, platform):
        m = Module()
        n_in = self.n_inputs

        error = Signal()
        open_events = Signal(4)
        discarding = Signal()                           # a DISCARD or CONTEXT event is open
        cur = Signal(n_in, init=1)                      # one-hot: the input being read
        last_route = Signal(self.n_outputs, init=1)     # one-hot: output of the last data item
        m.d.comb += [self.error.eq(error), self.open_events.eq(open_events)]

        inputs = self._input_buffers(m)
        heads = [buf.payload for buf in inputs]
        inj_head, inj_valid, hold_next, inj_taken, ev_in_error = self._injector(m)
        room, room_next, load, load_word, load_targets = self._emit_stage(m)
        # In the next clock, inputs may move: no ev_in strobe is being served and the emit
        # stage has room.
        go_next = Signal()
        m.d.comb += go_next.eq(~hold_next & room_next)
        # `cur_go`, per input: it is the current one and inputs may move, one register
        # loaded from both next values. With the barrier's `pops` (registers too), a head
        # buffer's `ready` is a LUT of three flip-flops, so its clock enable and set/reset
        # are one LUT4 each. (ANDs, not multiplexers to 0: yosys would make `go_next` a
        # set/reset input, one LUT more on its path.)
        cur_go = Signal(n_in, init=1)
        if n_in > 1:
            fire, pops, barrier_bad = self._barrier(m, inputs, go_next)
            cur_next = self._next_input(m, cur, cur_go, inputs, fire)
            m.d.sync += [cur.eq(cur_next), cur_go.eq(Cat(go_next & bit for bit in cur_next))]
        else:
            fire, pops, barrier_bad = Const(0), Const(0, 1), Const(0)
            m.d.sync += cur_go.eq(go_next)

        # --- Whether each input's head word is taken, from three registers (`cur_go`,
        # `pops` and the head's event bit): no multiplexer, no output's ready and no
        # decision on the word on the way to a head buffer's ready. So every word taken,
        # even one that is dropped or consumed, waits for room in the emit stage. ---
        for k, (buf, head) in enumerate(zip(inputs, heads)):
            # Events cross a join as barriers: only a barrier takes them. A head buffer's
            # `ready` leaves out its own `valid`: a buffer ignores `ready` while empty.
            waits = head.event if n_in > 1 else Const(0)
            m.d.comb += buf.ready.eq(cur_go[k] & ~waits | pops[k])
        # Per input, a LUT of its head's registers, then a one-hot choice by `cur_go`: so
        # a flag over the inputs is three LUT levels.
        def taken_with(flag):
            """Whether the head taken now has ``flag(buffer, head)`` (false for an event
            at a join, which only a barrier takes: the flags used exclude events)."""
            return Cat(cur_go[k] & buf.valid & flag(buf, head)
                       for k, (buf, head) in enumerate(zip(inputs, heads))).any()
        # A data item dropped by DISCARD or CONTEXT goes on too, with no target outputs:
        # it leaves the emit stage without an output, and whether the taken word goes on
        # does not wait for `discarding`.
        kept = taken_with(lambda buf, head: head.keep)
        inj_go = Signal()                       # an injected token goes to the emit stage
        m.d.comb += [inj_go.eq(inj_valid & room), inj_taken.eq(inj_go)]

        # --- The word that goes to the emit stage: an injected token, a barrier's event or
        # the current input's head. This multiplexer only feeds registers' data inputs. ---
        # The target outputs are resolved per input before the choice: a separator's
        # output of the last data item, none for data dropped by DISCARD or CONTEXT.
        def targets(head):
            if self.n_outputs == 1:
                return ~(head.data & discarding)
            return Mux(head.data & discarding, 0,
                       head.targets | Mux(head.to_last, last_route, 0))
        head = Signal(self.decoded_layout())
        with m.If(inj_valid):
            m.d.comb += [head.eq(inj_head), load_targets.eq(targets(inj_head))]
        with m.Elif(fire):                      # a barrier emits input 0's event
            m.d.comb += [head.eq(heads[0]), load_targets.eq(targets(heads[0]))]
        with m.Else():
            m.d.comb += [head.eq(_one_hot_mux(cur, heads)),
                         load_targets.eq(_one_hot_mux(cur, [targets(h) for h in heads]))]
        m.d.comb += [load.eq(inj_go | fire | kept), load_word.eq(head.word)]

        # Each clock's error sources are registered before they set the sticky flag, each
        # input's drop apart, so the OR over the inputs comes after the registers.
        errors_now = Signal(n_in + 2)
        m.d.sync += errors_now.eq(Cat(barrier_bad, ev_in_error,
                                      *(cur_go[k] & buf.valid & head.drop
                                        for k, (buf, head) in enumerate(zip(inputs, heads)))))
        with m.If(errors_now.any()):
            m.d.sync += error.eq(1)
        with m.If(taken_with(lambda buf, head: head.data & ~discarding)):
            m.d.sync += last_route.eq(head.targets)
        loads_event = (inj_go & inj_head.event) | fire
        if n_in == 1:
            loads_event |= kept & heads[0].event
        # An event token taken is injected or input 0's head (a barrier's event, or the
        # one input's): a two-way choice, not the one-hot multiplexer over the inputs.
        event_word = self.word(Mux(inj_valid, inj_head.word, heads[0].word))
        self._events_out(m, loads_event, event_word, open_events, discarding)
        return m

    def _input_buffers(self, m):
        """A FIFO in front of each input, holding words with their decoded flags, and a
        two-entry :class:`StreamBuffer` after it whose head is what the unit reads.

        The FIFOs cut every combinational path from the input ports: their ``ready`` is a
        flip-flop, not a LUT of the level as ``SyncFIFOBuffered``'s ``w_rdy`` (that loop,
        level → ``w_rdy`` → write → level, held the joins below 200 MHz at two placement
        seeds of three). Decoding on the way in keeps the decode logic out of the unit's
        one-cycle loop. Three entries are the fewest that stream a word per clock. The head
        buffer refills from its FIFO whenever its spare entry is free (a register), so the
        unit's decision to take a word drives the head's multiplexers only, never the
        FIFO's read port and pointers (that path held a join to 180 MHz).
        """
        buffers = []
        for k, port in enumerate(self.i):
            buf = m.submodules[f"in_fifo_{k}"] = InputFIFO(self.decoded_layout(),
                                                            depth=self.fifo_depth)
            head = m.submodules[f"in_head_{k}"] = StreamBuffer(self.decoded_layout())
            m.d.comb += [
                buf.i.payload.eq(self.decode(m, port.payload, k)),
                buf.i.valid.eq(port.valid),
                port.ready.eq(buf.i.ready),
            ]
            wiring.connect(m, buf.o, head.i)
            buffers.append(head.o)
        return buffers

    def _emit_stage(self, m):
        """The emit stage: a register for the word taken, then a two-entry skid buffer of
        words with their target outputs, in front of a two-entry :class:`StreamBuffer` per
        output.

        Returns ``(room, room_next, load, word, targets)``: drive ``load`` to put ``word``
        into the stage for the outputs in ``targets``; ``room`` (a register: the skid
        entry is free) says it may, and ``room_next`` is its value in the next clock. The
        word taken goes into a plain register first, so the take multiplexer ends at a
        flip-flop's data input with no further choice after it (the skid buffer behind it
        chooses between its own registers). With the skid entry free the taken word always
        moves on, so ``room`` needs no term for the taken-word register. The main entry
        writes its word into each target output that has space and leaves once every
        target has it, so a broadcast is not held up by all its outputs being ready at
        once.
        """
        n_out = self.n_outputs
        buffers = []
        for k, port in enumerate(self.o):
            buffer = m.submodules[f"out_buf_{k}"] = StreamBuffer(self.word)
            wiring.connect(m, buffer.o, wiring.flipped(port))
            buffers.append(buffer)
        space = Cat(buffer.i.ready for buffer in buffers)     # registers

        load, word, targets = Signal(), Signal(self.word), Signal(n_out)
        taken_valid, taken_word, taken_targets = Signal(), Signal(self.word), Signal(n_out)
        main_valid, main_word, main_left = Signal(), Signal(self.word), Signal(n_out)
        skid_valid, skid_word, skid_targets = Signal(), Signal(self.word), Signal(n_out)
        with m.If(~skid_valid):     # the taken word, if any, moves on now
            m.d.sync += [taken_valid.eq(load), taken_word.eq(word), taken_targets.eq(targets)]
        moves = taken_valid & ~skid_valid       # the taken word enters the skid buffer
        main_done = Signal()        # the main entry is empty or reaches its last outputs now
        m.d.comb += main_done.eq(~main_valid | ((main_left & ~space) == 0))
        for k, buffer in enumerate(buffers):
            m.d.comb += [buffer.i.payload.eq(main_word),
                         buffer.i.valid.eq(main_valid & main_left[k])]
        with m.If(main_done):
            m.d.sync += main_valid.eq(skid_valid | moves)
            with m.If(skid_valid):
                m.d.sync += [main_word.eq(skid_word), main_left.eq(skid_targets)]
            with m.Else():
                m.d.sync += [main_word.eq(taken_word), main_left.eq(taken_targets)]
        with m.Else():
            m.d.sync += main_left.eq(main_left & ~space)
        with m.If(~skid_valid):     # loaded every clock it is free; valid only if needed
            m.d.sync += [skid_word.eq(taken_word), skid_targets.eq(taken_targets)]
        skid_next = Signal()
        m.d.comb += skid_next.eq(~main_done & (skid_valid | moves))
        m.d.sync += skid_valid.eq(skid_next)
        return ~skid_valid, ~skid_next, load, word, targets

    def _barrier(self, m, inputs, go_next):
        """A join's event barrier: go on only once every input has an event at its head.

        It fires in the first clock after every input has one in which inputs may move
        (``go_next`` is that condition's next value), so that whether it fires and which
        inputs it pops (those whose head equals input 0's) are registers. No head changes
        in between: every head is an event, which only a barrier takes. Returns ``(fire,
        pops, bad)``: the barrier fires now; per input, it pops it now; it fires with an
        event that differs from input 0's.
        """
        heads = [buf.payload for buf in inputs]
        fire = Signal()
        pops = Signal(len(inputs))
        complete = Cat(buf.valid & head.event for buf, head in zip(inputs, heads)).all()
        arm = Signal()
        m.d.comb += arm.eq(complete & ~fire & go_next)
        same = [head.event_key == heads[0].event_key for head in heads]
        m.d.sync += [fire.eq(arm), pops.eq(Cat(arm & bit for bit in same))]
        return fire, pops, fire & ~pops.all()

    def _next_input(self, m, cur, cur_go, inputs, fire):
        """The next value of a join's one-hot ``cur``: input 0 when the barrier fires (it
        emits input 0's event, and reading resumes there), else, when the current input's
        head is taken or is an event that waits, its ``next_input``.

        An event steps on only when inputs may move (``cur_go``), as a taken word does:
        that keeps the condition short, and they may unless the outputs stall. Bit by bit,
        as ``cur_go`` is set only at the current input outside a barrier: input ``j`` is
        current next if it is now and is not left, or if the input left names it.
        """
        cur_next = Signal.like(cur)
        leaves = [cur_go[k] & buf.valid for k, buf in enumerate(inputs)]
        for j in range(len(inputs)):
            stays = cur[j] & ~leaves[j]
            enters = Cat(leave & buf.payload.next_input[j]
                         for leave, buf in zip(leaves, inputs)).any()
            m.d.comb += cur_next[j].eq(fire | stays | enters if j == 0
                                       else ~fire & (stays | enters))
        return cur_next

    def _events_out(self, m, emitted, word, open_events, discarding):
        """Strobe ``ev_out`` for an emitted event token and open or close its mode."""
        # `word` is a valid event token: its code is EVENT_START (0x20) or EVENT_END
        # (0x21), told apart by bit 0, and its id is 1 to 4.
        assert Token.EVENT_START & 1 == 0 and Token.EVENT_END == Token.EVENT_START | 1
        is_start = ~word.data[0]
        event = word.data[8:11]
        m.d.sync += [
            self.ev_out.start.eq(emitted & is_start),
            self.ev_out.end.eq(emitted & ~is_start),
            self.ev_out.id.eq(Mux(emitted, event, 0)),
        ]
        with m.If(emitted):
            bit = (Const(1, 5) << event)[1:]
            now_open = Mux(is_start, open_events | bit, open_events & ~bit)
            m.d.sync += [open_events.eq(now_open),
                         discarding.eq(Cat(now_open[k - 1] for k in DISCARDING_EVENTS).any())]

    def _injector(self, m):
        """Latch ``ev_in`` strobes and serve them as injected token sequences.

        Returns ``(head, valid, hold_next, taken, error)``: the injected word, decoded;
        whether one is being injected; whether inputs are held in the next clock (a strobe
        is pending or being served); a signal to drive high when the unit takes the word;
        and a strobe with a bad event id.
        """
        sequences = injection_sequences(self.inject)
        # The strobes are decoded on the way in and registered: no path from the port
        # into the unit, and the decode is off the injector's paths.
        ev_in = self.ev_in
        id_ok = (ev_in.id >= 1) & (ev_in.id <= 4)
        one_hot = Mux(id_ok, (Const(1, 5) << ev_in.id)[1:5], 0)     # ids 1..4
        strobed = Signal()            # a strobe came in the last clock
        strobes = Signal(8)           # it, as a start of ids 1..4, then an end of ids 1..4
        bad_id = Signal()             # it had a bad id
        m.d.sync += [strobed.eq(ev_in.start | ev_in.end),
                     strobes.eq(Cat(Mux(ev_in.start, one_hot, 0), Mux(ev_in.end, one_hot, 0))),
                     bad_id.eq((ev_in.start | ev_in.end) & ~id_ok)]

        # The sequence being injected sits decoded in a shift register, so taking a word
        # only shifts it: no decoding or ROM look-up in the cycle the word is taken. A
        # pending strobe is first chosen (the lowest pending bit, into the one-hot register
        # `chosen`), then its sequence is loaded in the next clock: the priority choice and
        # the load are a clock apart.
        pending = Signal(8)           # starts of ids 1..4, then ends of ids 1..4
        chosen = Signal(8)            # the strobe whose sequence is loaded next, or none
        has_chosen = Signal()         # chosen != 0, as a register of its own
        slots = [Signal(self.decoded_layout()) for _ in range(max(map(len, sequences)))]
        left = Signal(range(len(slots) + 1))
        busy = Signal()               # left != 0, as a register of its own
        taken = Signal()
        decoded = {}                  # one decoder per distinct token, on a constant
        for code, arg in {token for seq in sequences for token in seq}:
            decoded[code, arg] = self.decode(m, self.word(Const(self._token(code, arg),
                                                                self.word.size)))
        lowest = Cat(pending[k] & ~pending[:k].any() for k in range(8))
        choose = ~busy & ~has_chosen
        m.d.sync += [pending.eq(Mux(choose, pending & ~lowest, pending) | strobes),
                     chosen.eq(Mux(choose, lowest, 0)), has_chosen.eq(choose & (pending != 0))]
        with m.If(busy):
            with m.If(taken):
                m.d.sync += [left.eq(left - 1), busy.eq(left != 1),
                             *(a.eq(b) for a, b in zip(slots, slots[1:]))]
        with m.Elif(has_chosen):
            # `chosen` is one-hot: each slot is an OR of the constants it selects.
            def select(values):
                return _one_hot_mux(chosen, [Value.cast(v) for v in values])
            m.d.sync += [busy.eq(1), left.eq(select([Const(len(seq), len(left))
                                                    for seq in sequences]))]
            for j, slot in enumerate(slots):
                tokens = [seq[j] if j < len(seq) else seq[-1] for seq in sequences]
                m.d.sync += slot.eq(select([decoded[token] for token in tokens]))
        # Inputs wait while a strobe is pending or its tokens are being injected, and for
        # one clock after (the caller registers this). `active` is set while `busy`,
        # `chosen` or `pending` is (and for one clock more after a strobe with a bad id),
        # as a register of its own, so that `hold_next` is an OR of four bits: a pending
        # strobe is chosen, a chosen one makes the injector busy, and one is pending next
        # only if one is now or a strobe came.
        active = Signal()
        m.d.sync += active.eq((busy & ~(taken & (left == 1))) | has_chosen
                              | (pending != 0) | strobed)
        hold_next = Signal()
        m.d.comb += hold_next.eq(active | strobed)
        return slots[0], busy, hold_next, taken, bad_id

    def _token(self, code, arg):
        """A token's value as an integer."""
        fields = {"is_token": 1, "data": int(code) | (arg << 8)}
        return self.word.const(fields).as_value().value


class InputFIFO(wiring.Component):
    """A synchronous FIFO whose ``i.ready`` is a register: a unit's input buffer.

    It moves words as Amaranth's ``SyncFIFOBuffered`` of the same depth does, clock for
    clock (``depth - 1`` words in memory read synchronously, so it maps to LUT RAM or
    block RAM, and one in the output register), but ``SyncFIFOBuffered`` computes
    ``w_rdy`` from its level, so its level, the port's ``ready``, the port's write and the
    level's update form one loop of three LUTs through the port. Here ``i.ready`` is a
    flip-flop loaded with "full in the next clock", computed from the level, the read and
    the port's ``valid`` (not from the write and the next level, which would put them
    between ``ready`` and its next value), and nothing sits between ``ready`` and the port.

    Parameters
    ----------
    shape : shape-like
        The payload's shape.
    depth : int
        Number of words held (at least 3, the fewest that stream one word per clock).

    Attributes
    ----------
    i : stream of ``shape``, in
        ``i.ready`` is a register.
    o : stream of ``shape``, out
        ``o.valid`` and ``o.payload`` are registers.
    """

    def __init__(self, shape, *, depth):
        check_int("depth", depth, 3)
        self.shape = shape
        self.depth = depth
        super().__init__({"i": In(stream.Signature(shape)), "o": Out(stream.Signature(shape))})

    def elaborate(self, platform):
        m = Module()
        inner = self.depth - 1                  # words in memory; one more in `o.payload`
        m.submodules.storage = storage = Memory(shape=self.shape, depth=inner, init=[])
        w_port, r_port = storage.write_port(), storage.read_port()
        level = Signal(range(inner + 1))        # words in memory
        produce, consume = Signal(range(inner)), Signal(range(inner))
        ready = Signal(init=1)                  # level != inner, as a register
        write, read = Signal(), Signal()        # into and out of memory
        m.d.comb += [
            self.i.ready.eq(ready),
            write.eq(self.i.valid & ready),
            read.eq((level != 0) & (~self.o.valid | self.o.ready)),
            w_port.addr.eq(produce), w_port.data.eq(self.i.payload), w_port.en.eq(write),
            r_port.addr.eq(consume), r_port.en.eq(read), self.o.payload.eq(r_port.data),
        ]
        # Full next clock: no read, and full now or one short with a word coming (then
        # `ready` is set, so `i.valid` is the write). Not `level + write - read`: that would
        # put `write` (the port's valid AND `ready`) and the level's adder between `ready`
        # and its next value.
        full_next = ~read & ((level == inner) | ((level == inner - 1) & self.i.valid))
        m.d.sync += [level.eq(level + write - read), ready.eq(~full_next)]
        with m.If(write):
            m.d.sync += produce.eq(_next(produce, inner))
        with m.If(read):
            m.d.sync += [consume.eq(_next(consume, inner)), self.o.valid.eq(1)]
        with m.Elif(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        return m


class StreamBuffer(wiring.Component):
    """A two-entry stream buffer (a skid buffer) whose ``i.ready``, ``o.valid`` and
    ``o.payload`` are registers, moving one word per clock.

    It cuts every combinational path through a stream: nothing on the ``o`` side reaches
    ``i.ready`` in the same clock, so two pipelines joined by one are timed apart.
    Amaranth's ``SyncFIFO`` computes ``w_rdy`` from its level, and ``SyncFIFOBuffered`` of
    depth 2 moves a word every other clock.

    Parameters
    ----------
    shape : shape-like
        The payload's shape.

    Attributes
    ----------
    i : stream of ``shape``, in
    o : stream of ``shape``, out
    """

    def __init__(self, shape):
        super().__init__({"i": In(stream.Signature(shape)), "o": Out(stream.Signature(shape))})

    def elaborate(self, platform):
        m = Module()
        spare_valid = Signal()
        spare = Signal.like(self.i.payload)
        m.d.comb += self.i.ready.eq(~spare_valid)
        out_free = ~self.o.valid | self.o.ready
        with m.If(out_free):
            m.d.sync += [self.o.valid.eq(spare_valid | self.i.valid),
                         self.o.payload.eq(Mux(spare_valid, spare, self.i.payload))]
        # The spare entry empties on `o.ready` alone, not on `out_free`: it is only ever
        # full while `o.valid` is, so this is the same, and the spare's valid bit then
        # needs one LUT fewer (the reset and `o.ready`) in front of its set/reset pin.
        with m.If(self.o.ready):
            m.d.sync += spare_valid.eq(0)
        with m.Elif(self.i.valid & self.i.ready & self.o.valid):
            m.d.sync += spare_valid.eq(1)
        with m.If(~spare_valid):
            m.d.sync += spare.eq(self.i.payload)
        return m


def _one_hot_mux(select, values):
    """The one of ``values`` (values or views) whose bit of the one-hot ``select`` is set;
    zero if none is."""
    result = Mux(select[0], Value.cast(values[0]), 0)
    for k, value in enumerate(values[1:], start=1):
        result = result | Mux(select[k], Value.cast(value), 0)
    return result


class RegularUnit(TokenUnit):
    """A unit with one input and one output (the seed's Fig. 4); see :class:`TokenUnit`."""

    def __init__(self, *, width=32, inject=None, fifo_depth=3):
        super().__init__(n_inputs=1, n_outputs=1, width=width, inject=inject,
                         fifo_depth=fifo_depth)


class ForkUnit(TokenUnit):
    """A unit with one input and ``n_outputs`` ≥ 2 outputs (Fig. 5); see :class:`TokenUnit`."""

    def __init__(self, *, n_outputs=2, width=32, route_lo=None, broadcast=(), inject=None,
                 fifo_depth=3):
        check_int("n_outputs", n_outputs, 2, 16)
        super().__init__(n_inputs=1, n_outputs=n_outputs, width=width, route_lo=route_lo,
                         broadcast=broadcast, inject=inject, fifo_depth=fifo_depth)


class JoinUnit(TokenUnit):
    """A unit with ``n_inputs`` ≥ 2 inputs and one output (Fig. 7); see :class:`TokenUnit`."""

    def __init__(self, *, n_inputs=2, width=32, broadcast=(), inject=None, fifo_depth=3):
        check_int("n_inputs", n_inputs, 2, 16)
        super().__init__(n_inputs=n_inputs, n_outputs=1, width=width, broadcast=broadcast,
                         inject=inject, fifo_depth=fifo_depth)


class JoinForkUnit(TokenUnit):
    """A unit with ≥ 2 inputs and ≥ 2 outputs (Fig. 8); see :class:`TokenUnit`.

    END_TRIANGLE and END_BATCH are always copied to every output, as are event tokens.
    """

    def __init__(self, *, n_inputs=2, n_outputs=2, width=32, route_lo=None, broadcast=(),
                 inject=None, fifo_depth=3):
        check_int("n_inputs", n_inputs, 2, 16)
        check_int("n_outputs", n_outputs, 2, 16)
        super().__init__(n_inputs=n_inputs, n_outputs=n_outputs, width=width,
                         route_lo=route_lo, broadcast=(*broadcast, *JOIN_FORK_BROADCAST),
                         inject=inject, fifo_depth=fifo_depth)


def csp(*, width=32, fifo_depth=3):
    """Command stream parser: a fork to state, primitive, 3D and 2D outputs (Fig. 10).

    A command's group is the top two bits of ``data``. An interrupt (``ev_in.start``
    with id INTERRUPT) inserts END_DMA, END_CONTEXT and END_INTERRUPT (EVENT_END with
    ids DMA, CONTEXT, INTERRUPT) into all four outputs at the same point of the stream.
    """
    return ForkUnit(n_outputs=4, width=width, fifo_depth=fifo_depth, inject={EventId.INTERRUPT: (
        (Token.EVENT_END, EventId.DMA), (Token.EVENT_END, EventId.CONTEXT),
        (Token.EVENT_END, EventId.INTERRUPT))})


def tsu_asu(*, width=32, fifo_depth=3):
    """Triangle / attribute setup: a fork to Z + command/state, attributes and edges (Fig. 11).

    An item's output is the top two bits of ``data`` (3 is malformed). END_TRIANGLE and
    END_BATCH go to all three outputs: each downstream unit needs the triangle boundaries.
    """
    return ForkUnit(n_outputs=3, width=width, fifo_depth=fifo_depth,
                    broadcast=(Token.END_TRIANGLE, Token.END_BATCH))


def zpreset(*, width=32, fifo_depth=3):
    """Z-preset (ZL1): a join/fork of the ASU-ZL1 and supertile inputs to Z and T (Fig. 12).

    An item's output is the top bit of ``data``; END_TRIANGLE, END_BATCH and events go to
    both outputs.
    """
    return JoinForkUnit(n_inputs=2, n_outputs=2, width=width, fifo_depth=fifo_depth)


#: Designs of this block that ``python -m hw.gen`` builds, by name.
DESIGNS = {
    "token_fifo": TokenFIFO,
    "regular": RegularUnit,
    "fork": ForkUnit,
    "join": JoinUnit,
    "join_fork": JoinForkUnit,
    "csp": csp,
    "tsu_asu": tsu_asu,
    "zpreset": zpreset,
}
