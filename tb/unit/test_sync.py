"""Unit tests of the sync block: the golden model on hand-worked cases, the parameter
checks, the reference configurations, and a quick amaranth.sim comparison of the RTL
with the golden model (the full cocotb benches are in ``tb/test_sync.py``)."""

import random
import re

import pytest
from amaranth.hdl import Module
from amaranth.lib import fifo
from amaranth.sim import Simulator

from golden.sync import (REFERENCE_CONFIGS, EventId, Token, UnitModel, data_word,
                         token_word)
from hw import gen, sync

D = data_word
T = token_word
START, END = Token.EVENT_START, Token.EVENT_END


def fork(**kw):
    return UnitModel(n_inputs=1, n_outputs=2, width=32, route_lo=0, **kw)


def join(n=2, **kw):
    return UnitModel(n_inputs=n, n_outputs=1, width=32, **kw)


# ---------------------------------------------------------------- golden model

def test_fork_routes_data_by_field_and_separators_to_last_group():
    result = fork().run([[D(0), D(1), T(Token.END_TRIANGLE), D(2), D(3), T(Token.END_BATCH)]])
    assert result.outputs == [[D(0), D(2)], [D(1), T(Token.END_TRIANGLE), D(3),
                                            T(Token.END_BATCH)]]
    assert not result.error


def test_separator_before_any_data_goes_to_output_0():
    assert fork().run([[T(Token.END_2D_BLOCK)]]).outputs == [[T(Token.END_2D_BLOCK)], []]


def test_broadcast_separators_and_events_reach_every_output():
    result = fork(broadcast=(Token.END_TRIANGLE,)).run(
        [[D(1), T(Token.END_TRIANGLE), T(END, EventId.DMA)]])
    assert result.outputs == [[T(Token.END_TRIANGLE), T(END, EventId.DMA)],
                              [D(1), T(Token.END_TRIANGLE), T(END, EventId.DMA)]]
    assert result.ev_out == [("end", EventId.DMA)]     # a boundary marker, strobed once


def test_discard_and_context_drop_data_but_pass_tokens():
    for event in (EventId.DISCARD, EventId.CONTEXT):
        words = [D(0), T(START, event), D(2), T(Token.END_BATCH), D(4), T(END, event), D(6)]
        result = fork().run([words])
        assert result.outputs[0] == [D(0), T(START, event), T(Token.END_BATCH),
                                     T(END, event), D(6)]
        assert result.ev_out == [("start", event), ("end", event)]
        assert result.open_events == 0


def test_dma_and_interrupt_modes_do_not_discard():
    result = fork().run([[T(START, EventId.DMA), D(0), T(START, EventId.INTERRUPT), D(2)]])
    assert result.outputs[0][-1] == D(2) and D(0) in result.outputs[0]
    assert result.open_events == 0b0110


def test_join_reads_batches_round_robin_and_switch_jumps():
    a = [D(1), T(Token.END_BATCH), D(3), T(Token.SWITCH, 0), D(5)]
    b = [D(2), T(Token.END_BATCH), D(4), T(Token.END_BATCH)]
    result = join().run([a, b])
    # in0: 1, END → in1: 2, END → in0: 3, SWITCH(0) consumed → in0: 5, then in0 is empty
    assert result.outputs[0] == [D(1), T(Token.END_BATCH), D(2), T(Token.END_BATCH), D(3), D(5)]


def test_join_switch_to_missing_input_is_dropped_with_error():
    result = join().run([[T(Token.SWITCH, 2), D(1)], []])
    assert result.outputs[0] == [D(1)] and result.error


def test_join_event_barrier_waits_for_every_input_and_emits_once():
    ev = T(START, EventId.DMA)
    result = join(3).run([[D(0), ev, D(10)], [ev, D(11)], [D(2), D(3), ev]])
    # in0: D0, barrier → in1: barrier → in2: D2, D3, barrier: all at the event
    assert result.outputs[0] == [D(0), D(2), D(3), ev, D(10)]
    assert result.ev_out == [("start", EventId.DMA)]


def test_join_mismatched_events_emit_input_0_and_flag_error():
    a, b = T(START, EventId.DMA), T(START, EventId.CONTEXT)
    result = join().run([[a, D(1)], [b, D(2)]])
    assert result.outputs[0][:2] == [a, D(1)] and result.error


def test_malformed_words_are_dropped_and_flagged():
    bad = [T(0x07), T(START, 0), T(END, 5), D(3)]     # route 3 of a 2-output fork is fine
    result = UnitModel(n_inputs=1, n_outputs=3, route_lo=0).run([bad + [D(1)]])
    assert result.outputs == [[], [D(1)], []] and result.error


def test_ev_in_injects_between_words_in_canonical_order():
    words = [D(0), D(1), D(2)]
    result = fork().run([words], ev_in=[(2, "end", EventId.DMA), (2, "start", EventId.DMA)])
    expected = [D(0), T(START, EventId.DMA), T(END, EventId.DMA), D(2)]
    assert result.outputs[0] == expected
    assert result.ev_out == [("start", 2), ("end", 2)]


def test_ev_in_bad_id_only_flags_error():
    result = fork().run([[D(0)]], ev_in=[(0, "start", 9)])
    assert result.outputs[0] == [D(0)] and result.error and result.ev_out == []


def test_csp_interrupt_puts_three_markers_in_every_output():
    model = UnitModel(**REFERENCE_CONFIGS["csp"])
    words = [D(k << 30) for k in range(4)] + [D(5)]
    result = model.run([words], ev_in=[(4, "start", EventId.INTERRUPT)])
    markers = [T(END, EventId.DMA), T(END, EventId.CONTEXT), T(END, EventId.INTERRUPT)]
    for k, out in enumerate(result.outputs):
        assert out[:1] == [D(k << 30)] and out[1:4] == markers
    assert result.ev_out == [("end", 2), ("end", 1), ("end", 3)]


def test_zpreset_copies_end_triangle_to_both_outputs():
    model = UnitModel(**REFERENCE_CONFIGS["zpreset"])
    result = model.run([[D(0), D(1 << 31), T(Token.END_TRIANGLE)], []])
    assert result.outputs == [[D(0), T(Token.END_TRIANGLE)], [D(1 << 31), T(Token.END_TRIANGLE)]]


# ---------------------------------------------------------------- parameters

@pytest.mark.parametrize("make, message", [
    (lambda: sync.TokenFIFO(depth=1), "depth must be an integer of at least 2, not 1"),
    (lambda: sync.TokenFIFO(width=8), "width must be an integer from 16 to 64"),
    (lambda: sync.ForkUnit(n_outputs=1), "n_outputs must be an integer from 2 to 16"),
    (lambda: sync.JoinUnit(n_inputs=17), "n_inputs must be an integer from 2 to 16"),
    (lambda: sync.ForkUnit(n_outputs=4, route_lo=31), "route_lo must be an integer from 0 to 30"),
    (lambda: sync.ForkUnit(broadcast=(0x99,)), "broadcast must hold token codes"),
    (lambda: sync.RegularUnit(inject={7: ((0x20, 1),)}), "inject keys must be event ids"),
    (lambda: sync.RegularUnit(inject={1: ()}), "inject[1] must hold 1 to 8 tokens"),
    (lambda: sync.RegularUnit(inject={1: ((Token.SWITCH, 1),)}), "must not hold SWITCH"),
    (lambda: sync.RegularUnit(fifo_depth=2), "fifo_depth must be an integer from 3"),
    (lambda: sync.InputFIFO(8, depth=2), "depth must be an integer of at least 3, not 2"),
])
def test_bad_parameters_raise_value_error_naming_them(make, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make()


def test_non_integer_parameter_raises_type_error():
    with pytest.raises(TypeError, match="depth must be an integer of at least 2, not '16'"):
        sync.TokenFIFO(depth="16")


def test_gen_rejects_unknown_designs_and_parameters(capsys):
    assert gen.main(["sync.nothing"]) == 2
    assert "design must be one of" in capsys.readouterr().err
    assert gen.main(["sync.fork", "-p", "colour=3"]) == 2
    assert "has no parameter 'colour'" in capsys.readouterr().err
    assert gen.main(["sync.token_fifo", "-p", "depth=0"]) == 2
    assert "depth must be" in capsys.readouterr().err


def test_gen_writes_verilog_with_parameters(tmp_path):
    out = tmp_path / "fifo.v"
    assert gen.main(["sync.token_fifo", "-p", "depth=64", "-p", "width=34", "-o", str(out)]) == 0
    text = out.read_text()
    assert "module sync_token_fifo" in text and "[6:0] level" in text


@pytest.mark.parametrize("name", ["csp", "tsu_asu", "zpreset"])
def test_reference_instances_match_the_spec_configurations(name):
    config = getattr(sync, name)().config()
    wanted = REFERENCE_CONFIGS[name]
    assert {k: config[k] for k in ("n_inputs", "n_outputs")} == \
        {k: wanted[k] for k in ("n_inputs", "n_outputs")}
    assert set(config["broadcast"]) == {int(c) for c in wanted.get("broadcast", ())}
    assert config["inject"] == {int(k): tuple((int(c), int(a)) for c, a in seq)
                                for k, seq in wanted.get("inject", {}).items()}


# ---------------------------------------------------------------- RTL in amaranth.sim

def simulate(unit, inputs, seed, cycles=400):
    """Run ``unit`` in amaranth.sim with random gaps and stalls; returns its outputs."""
    rnd = random.Random(seed)
    outputs = [[] for _ in unit.o]

    def driver(k):
        async def drive(ctx):
            for word in inputs[k]:
                while rnd.random() < 0.3:
                    ctx.set(unit.i[k].valid, 0)
                    await ctx.tick()
                ctx.set(unit.i[k].payload.as_value(), word)
                ctx.set(unit.i[k].valid, 1)
                taken = False
                while not taken:
                    _, _, taken = await ctx.tick().sample(unit.i[k].ready)
            ctx.set(unit.i[k].valid, 0)
        return drive

    def sink(k):
        async def take(ctx):
            while True:
                ready = rnd.random() < 0.7
                ctx.set(unit.o[k].ready, ready)
                _, _, valid, payload = await ctx.tick().sample(
                    unit.o[k].valid, unit.o[k].payload.as_value())
                if valid and ready:
                    outputs[k].append(payload)
        return take

    async def run_for(ctx):
        await ctx.tick().repeat(cycles)

    sim = Simulator(unit)
    sim.add_clock(1e-8)
    for k in range(len(unit.i)):
        sim.add_testbench(driver(k), background=True)
    for k in range(len(unit.o)):
        sim.add_testbench(sink(k), background=True)
    sim.add_testbench(run_for)
    sim.run()
    return outputs


@pytest.mark.parametrize("depth", [3, 5])
def test_input_fifo_moves_words_as_sync_fifo_buffered_does(depth):
    """InputFIFO only registers ``ready``: every clock, its ports must show what
    Amaranth's SyncFIFOBuffered of the same depth shows under the same random traffic."""
    ours = sync.InputFIFO(8, depth=depth)
    theirs = fifo.SyncFIFOBuffered(width=8, depth=depth)
    top = Module()
    top.submodules.ours, top.submodules.theirs = ours, theirs
    rnd = random.Random(depth)
    seen = set()

    async def bench(ctx):
        for cycle in range(320):
            # bursts of writes and of reads, so that the FIFO fills and empties
            write = rnd.random() < (0.9 if cycle % 80 < 40 else 0.3)
            read = rnd.random() < (0.3 if cycle % 80 < 40 else 0.9)
            word = rnd.randrange(256)
            ctx.set(ours.i.valid, write), ctx.set(theirs.w_en, write)
            ctx.set(ours.i.payload, word), ctx.set(theirs.w_data, word)
            ctx.set(ours.o.ready, read), ctx.set(theirs.r_en, read)
            ready, valid = ctx.get(ours.i.ready), ctx.get(ours.o.valid)
            assert (ready, valid) == (ctx.get(theirs.w_rdy), ctx.get(theirs.r_rdy)), cycle
            if valid:
                assert ctx.get(ours.o.payload) == ctx.get(theirs.r_data), cycle
            seen.add((ready, valid))
            await ctx.tick()

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert (0, 1) in seen and (1, 0) in seen      # it was full and empty


@pytest.mark.parametrize("make", [sync.RegularUnit, lambda: sync.ForkUnit(n_outputs=3),
                                  lambda: sync.JoinUnit(n_inputs=3), sync.zpreset])
def test_rtl_matches_golden_in_amaranth_sim(make):
    unit = make()
    config = unit.config()
    rnd = random.Random(1)
    codes = [Token.END_TRIANGLE, Token.END_BATCH, Token.END_STATE_BLOCK]
    events = [T(START, EventId.DISCARD), T(END, EventId.DISCARD), T(END, EventId.DMA)]
    inputs = []
    for _ in range(unit.n_inputs):
        words = []
        for index in range(60):
            if index % 20 == 10:
                words.append(events[index // 20])
            elif rnd.random() < 0.7:
                route = rnd.randrange(unit.n_outputs) << config["route_lo"]
                words.append(D(route | rnd.randrange(1 << 16)))
            else:
                words.append(T(rnd.choice(codes), rnd.randrange(256)))
        inputs.append(words)
    want = UnitModel(**config).run(inputs)
    assert sum(map(len, want.outputs)) > 40
    assert simulate(unit, inputs, seed=2) == want.outputs


def test_token_codes_and_event_ids_agree_between_rtl_and_golden():
    # The golden model keeps its own copy of the spec's constants, to stay independent.
    assert {t.name: int(t) for t in sync.Token} == {t.name: int(t) for t in Token}
    assert {e.name: int(e) for e in sync.EventId} == {e.name: int(e) for e in EventId}
