"""Unit tests of the warp block's golden model and assembler: every instruction, the
scheduling and clock costs, the spec's named programs (the per-lane spin lock that
deadlocks, the warp-wide lock that does not, the unlocked counter that loses updates,
WATOM.ADD against ATOM.ADD), both ``result`` modes, bad input and parameter checks.
The RTL is compared with this model clock for clock in ``tb/test_warp.py``."""

import numpy as np
import pytest

from golden.warp import (PROGRAMS, Error, Op, WarpModel, assemble, encode,
                         random_program)


def model(**kw):
    return WarpModel(**{"warps": 2, "lanes": 4, "words": 32, "imem": 64, **kw})


def run1(source, **kw):
    """Run on one warp of four lanes; the result."""
    result = model(warps=1, **kw).run(assemble(source))
    assert result.error == Error.NONE and result.done, result.error
    return result


def lanes_of(result, reg, warp=0):
    return [int(v) for v in result.regs[warp, :, reg]]


# ---------------------------------------------------------------- parameters, assembler

@pytest.mark.parametrize("name, value, message", [
    ("warps", 0, "warps must be an integer from 1 to 8, not 0"),
    ("warps", 9, "warps must be an integer from 1 to 8, not 9"),
    ("lanes", 0, "lanes must be an integer from 1 to 8, not 0"),
    ("words", 24, "words must be a power of two from 2 to 4096, not 24"),
    ("imem", 8192, "imem must be a power of two from 2 to 4096, not 8192"),
    ("result", "both", "result must be one of 'lanes', 'shared', not 'both'"),
])
def test_parameter_errors_name_parameter_and_range(name, value, message):
    with pytest.raises(ValueError, match=message):
        WarpModel(**{name: value})


def test_parameter_types():
    with pytest.raises(TypeError, match="lanes must be an integer from 1 to 8, not 2.0"):
        WarpModel(lanes=2.0)


def test_assembler_encodes_fields_labels_and_comments():
    words = assemble("""
        start: LI r3, -2        ; comment
        ADD r1, r2, r3          # comment
        LD r4, [r5 - 4]
        ST r6, [r7 + 0x10]
        BNZ r1, start
        WATOM.LOCK r8, [r9]
        ATOM.ADD r1, [r2], r3
        EXIT
    """)
    assert words == [
        encode(Op.LI, rd=3, imm=-2), encode(Op.ADD, rd=1, ra=2, rb=3),
        encode(Op.LD, rd=4, ra=5, imm=-4), encode(Op.ST, rd=6, ra=7, imm=16),
        encode(Op.BNZ, ra=1, imm=0), encode(Op.WATOM_LOCK, rd=8, ra=9),
        encode(Op.ATOM_ADD, rd=1, ra=2, rb=3), encode(Op.EXIT)]
    assert words[0] == 1 << 26 | 3 << 21 | 0xFFFE
    assert words[3] >> 21 & 31 == 6       # ST keeps its source in the rd field


@pytest.mark.parametrize("source, message", [
    ("FOO r1", "line 1: unknown instruction 'FOO'"),
    ("ADD r1, r2", "line 1: ADD takes 3 operands, not 2"),
    ("LI r32, 1", "line 1: expected a register r0..r31, not 'r32'"),
    ("J nowhere", "line 1: expected a label or address, not 'nowhere'"),
    ("LD r1, r2", r"line 1: expected \[rN \+ imm\], not 'r2'"),
    ("a: EXIT\na: EXIT", "line 2: label 'a' defined twice"),
    ("LI r1, 70000", "line 1: imm must be from -32768 to 65535, not 70000"),
])
def test_assembler_errors_name_the_line(source, message):
    with pytest.raises(ValueError, match=message):
        assemble(source)


def test_program_longer_than_imem_is_refused():
    with pytest.raises(ValueError, match="program must have at most imem=2 words, not 3"):
        model(imem=2).run([encode(Op.EXIT)] * 3)


# ---------------------------------------------------------------- every instruction

def test_alu_instructions():
    r = run1("""
        LANE r1
        WARP r2
        LI r3, -5
        ADD r4, r1, r3
        SUB r5, r1, r3
        ADDI r6, r1, 100
        SEQ r7, r1, r0
        SNE r8, r1, r0
        SLT r9, r3, r1          ; signed: -5 < lane
        SLT r10, r1, r3
        LI r0, 7                ; r0 ignores writes
        ADD r11, r0, r0
        EXIT
    """)
    lane = np.arange(4)
    assert lanes_of(r, 1) == list(lane) and lanes_of(r, 2) == [0] * 4
    assert lanes_of(r, 3) == [0xFFFF_FFFB] * 4
    assert lanes_of(r, 4) == [(x - 5) & 0xFFFF_FFFF for x in lane]
    assert lanes_of(r, 5) == [x + 5 for x in lane]
    assert lanes_of(r, 6) == [x + 100 for x in lane]
    assert lanes_of(r, 7) == [1, 0, 0, 0] and lanes_of(r, 8) == [0, 1, 1, 1]
    assert lanes_of(r, 9) == [1] * 4 and lanes_of(r, 10) == [0] * 4
    assert lanes_of(r, 0) == [0] * 4 and lanes_of(r, 11) == [0] * 4
    assert r.clocks == r.instructions == 13 and r.transactions == 0


def test_warp_index_and_arithmetic_wraps():
    r = model(warps=3).run(assemble("WARP r1\nLI r2, -1\nADD r3, r2, r2\nEXIT"))
    assert [int(v) for v in r.regs[:, 0, 1]] == [0, 1, 2]
    assert int(r.regs[2, 3, 3]) == 0xFFFF_FFFE


def test_loads_and_stores_take_one_clock_per_lane_in_lane_order():
    bank = np.arange(32) * 10
    r = model(warps=1).run(assemble("""
        LANE r1
        LD r2, [r1 + 4]         ; lane l reads word 4 + l
        ADDI r3, r1, 1
        ST r3, [r0 + 20]        ; every lane stores to word 20: lane 3's value stays
        ST r2, [r1 - 0]
        EXIT
    """), bank)
    assert lanes_of(r, 2) == [40, 50, 60, 70]
    assert int(r.bank[20]) == 4
    assert list(r.bank[:4]) == [40, 50, 60, 70]
    assert r.transactions == 12
    assert [pc for _, pc, _ in r.trace] == [0, 1, 1, 1, 1, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5]
    assert r.clocks == len(r.trace) == 15 and r.instructions == 6


def test_per_lane_atomics_serialise_lowest_lane_first():
    r = run1("""
        LANE r1
        ADDI r2, r1, 1
        ATOM.ADD r3, [r0], r2   ; word 0: 0 +1 +2 +3 +4
        ATOM.XCHG r4, [r0 + 0], r1 ; old value chain: 10, 0, 1, 2; word 0 ends at 3
        EXIT
    """.replace("[r0 + 0]", "[r0]"))
    assert lanes_of(r, 3) == [0, 1, 3, 6]
    assert lanes_of(r, 4) == [10, 0, 1, 2]
    assert int(r.bank[0]) == 3 and r.transactions == 8


def test_warp_wide_atomics_once_with_lowest_lane_operands():
    r = model(warps=1).run(assemble("""
        LANE r1
        ADDI r2, r1, 5          ; lowest lane's operand: 5
        ADDI r6, r1, 8          ; lowest lane's address: 8
        WATOM.ADD r3, [r6], r2  ; word 8: 100 -> 105, every lane gets 100
        WATOM.XCHG r4, [r6], r1 ; word 8 <- 0, every lane gets 105
        WATOM.LOCK r5, [r6]     ; free: taken, 1 everywhere
        WATOM.LOCK r7, [r6]     ; held: 0 everywhere
        EXIT
    """), [0] * 8 + [100])
    assert lanes_of(r, 3) == [100] * 4 and lanes_of(r, 4) == [105] * 4
    assert lanes_of(r, 5) == [1] * 4 and lanes_of(r, 7) == [0] * 4
    assert int(r.bank[8]) == 1 and r.transactions == 4
    assert r.clocks == 8


def test_branches_and_jump():
    r = run1("""
        LANE r1
        ADDI r2, r1, -2
        BZ r2, two              ; lane 2 only
        BNZ r1, notzero         ; lanes 1, 3
        LI r3, 100              ; lane 0
        J end
    notzero:
        LI r3, 200
        J end
    two:
        LI r3, 300
    end:
        EXIT
    """)
    assert lanes_of(r, 3) == [100, 200, 300, 200]
    masks = [(pc, mask) for _, pc, mask in r.trace]
    assert masks[:4] == [(0, 15), (1, 15), (2, 15), (3, 0b1011)]
    assert (4, 0b0001) in masks and (6, 0b1010) in masks and (8, 0b0100) in masks
    assert masks[-1] == (9, 15)             # reconverged at the lowest program counter


def test_exit_removes_lanes_from_the_mask():
    r = run1("""
        LANE r1
        BNZ r1, work            ; lanes 1-3
        EXIT                    ; lane 0 exits first
    work:
        LI r2, 9
        EXIT
    """)
    assert r.trace == [(0, 0, 15), (0, 1, 15), (0, 2, 0b0001), (0, 3, 0b1110),
                       (0, 4, 0b1110)]
    assert lanes_of(r, 2) == [0, 9, 9, 9]


# ---------------------------------------------------------------- scheduling

def test_round_robin_over_warps_and_skips_finished_warps():
    r = model(warps=3).run(assemble("WARP r1\nBNZ r1, busy\nEXIT\nbusy: LI r2, 1\nEXIT"))
    assert r.trace == [(0, 0, 15), (1, 0, 15), (2, 0, 15), (0, 1, 15), (1, 1, 15),
                       (2, 1, 15), (0, 2, 15), (1, 3, 15), (2, 3, 15), (1, 4, 15),
                       (2, 4, 15)]


def test_multi_clock_instruction_finishes_before_the_next_warp():
    r = model(warps=2, lanes=3).run(assemble("LD r2, [r0]\nEXIT"))
    assert r.trace == [(0, 0, 7)] * 3 + [(1, 0, 7)] * 3 + [(0, 1, 7), (1, 1, 7)]


# ---------------------------------------------------------------- the spec's programs

@pytest.mark.parametrize("warps, lanes", [(1, 4), (2, 4), (2, 2), (4, 8)])
def test_per_lane_spin_lock_deadlocks(warps, lanes):
    """One lane of warp 0 takes the lock and stays past it; the others spin at a lower PC
    forever; the counter never moves."""
    bound = 20_000
    r = WarpModel(warps=warps, lanes=lanes, words=32, imem=64).run(
        assemble(PROGRAMS["spin_lock"]), max_clocks=bound)
    assert not r.done and r.error == Error.NONE and r.clocks >= bound
    assert int(r.bank[0]) == 1 and int(r.bank[1]) == 0      # held, counter untouched
    spin, past = 2, 4
    tail = r.trace[-1000:]
    # Only the spin loop (PCs 2-3) runs, with every lane but lane 0 of warp 0.
    assert {pc for _, pc, _ in tail} == {spin, spin + 1}
    assert {mask for w, _, mask in tail if w == 0} == {(1 << lanes) - 2}
    assert all(mask == (1 << lanes) - 1 for w, _, mask in tail if w > 0)
    # Lane 0 of warp 0 went past the lock once and never ran again.
    assert (0, past, 1) not in r.trace
    assert (0, spin + 1, (1 << lanes) - 1) in r.trace[:4 * warps + lanes * warps]


@pytest.mark.parametrize("result", ["lanes", "shared"])
@pytest.mark.parametrize("warps, lanes, K", [(1, 4, 3), (2, 4, 5), (3, 2, 4), (8, 8, 2)])
def test_warp_lock_finishes_with_every_update(warps, lanes, K, result):
    source = PROGRAMS["warp_lock"].format(K=K, res="r3" if result == "lanes" else "r31")
    r = WarpModel(warps=warps, lanes=lanes, words=32, imem=64, result=result).run(
        assemble(source))
    assert r.done and r.error == Error.NONE
    assert int(r.bank[1]) == warps * K and int(r.bank[0]) == 0
    taken = sum(1 for _, pc, _ in r.trace if pc == 2)      # WATOM.LOCK clocks
    # Bank traffic: every LOCK, K unlocks, and K (LD + ST) of `lanes` lanes per warp.
    assert r.transactions == taken + warps * K * (1 + 2 * lanes)


@pytest.mark.parametrize("warps, lanes, K", [(2, 4, 5), (3, 2, 4), (8, 1, 3)])
def test_unlocked_section_loses_updates(warps, lanes, K):
    """Round-robin warps in lockstep read the counter in the same turn: every warp of an
    iteration loads the same value, so the counter ends at K, not warps x K."""
    r = WarpModel(warps=warps, lanes=lanes, words=32, imem=64).run(
        assemble(PROGRAMS["no_lock"].format(K=K)))
    assert r.done
    assert int(r.bank[1]) == K
    assert warps * K - int(r.bank[1]) == (warps - 1) * K       # updates lost


@pytest.mark.parametrize("result", ["lanes", "shared"])
def test_watom_add_against_atom_add(result):
    lanes = 4
    per_lane = model(warps=1, result=result).run(assemble(
        "LANE r1\nLI r2, 5\nATOM.ADD r3, [r0], r2\nEXIT"), [100])
    warp_wide = model(warps=1, result=result).run(assemble(
        "LANE r1\nLI r2, 5\nWATOM.ADD r3, [r0], r2\nEXIT"), [100])
    assert per_lane.transactions == lanes and warp_wide.transactions == 1
    assert int(per_lane.bank[0]) == 100 + 5 * lanes and int(warp_wide.bank[0]) == 105
    assert lanes_of(per_lane, 3) == [100, 105, 110, 115]
    assert per_lane.clocks - warp_wide.clocks == lanes - 1
    if result == "lanes":
        assert lanes_of(warp_wide, 3) == [100] * lanes
    else:
        assert lanes_of(warp_wide, 3) == [0] * lanes and int(warp_wide.shared[0]) == 100
        assert lanes_of(warp_wide, 31) == [100] * lanes


@pytest.mark.parametrize("result", ["lanes", "shared"])
def test_divergent_warp_wide_atomic_only_active_lanes_take_part(result):
    r = model(warps=2, result=result).run(assemble("""
        LANE r1
        WARP r6
        LI r9, 77
        SLT r2, r1, r0          ; 0
        ADDI r3, r1, -2
        SLT r3, r3, r0          ; lanes 0, 1: 1
        BZ r3, skip
        ADDI r4, r1, 10         ; operand: lowest active lane's (10)
        WATOM.ADD r9, [r6], r4  ; warp w adds 10 to word w
        ADDI r5, r9, 0          ; r5 <- what r9 (or r31) holds now
        ADDI r5, r31, 0
    skip:
        WATOM.ADD r7, [r6 + 0], r1
        EXIT
    """.replace("[r6 + 0]", "[r6]")), [3, 4])
    assert r.done
    # Word w: + 10 by lanes 0-1 of warp w, then + 0 (lane 0's r1) by all four lanes.
    assert list(r.bank[:2]) == [13, 14]
    assert r.transactions == 4
    for warp in range(2):
        if result == "lanes":
            assert lanes_of(r, 9, warp) == [3 + warp, 3 + warp, 77, 77]
            assert lanes_of(r, 7, warp) == [13 + warp] * 4
        else:
            assert lanes_of(r, 9, warp) == [77] * 4         # rd is not written
            assert lanes_of(r, 7, warp) == [0] * 4
            assert int(r.shared[warp]) == 13 + warp         # the last result
            assert lanes_of(r, 5, warp) == [3 + warp, 3 + warp, 0, 0]


def test_shared_mode_r31_reads_shared_and_ignores_writes():
    r = model(warps=1, result="shared").run(assemble(
        "LI r31, 5\nADDI r2, r31, 0\nLI r3, 9\nWATOM.XCHG r0, [r0], r3\n"
        "WATOM.XCHG r0, [r0], r0\nADDI r4, r31, 1\nEXIT"))
    assert lanes_of(r, 2) == [0] * 4 and lanes_of(r, 4) == [10] * 4


# ---------------------------------------------------------------- bad input

UNKNOWN = 0x3F << 26


@pytest.mark.parametrize("source, error", [
    ("LI r1, 1\nUNKNOWN", Error.UNKNOWN_OPCODE),
    ("LI r1, 40\nLD r2, [r1 + 0]\nEXIT", Error.BANK_RANGE),
    ("LANE r1\nLD r2, [r1 + 29]\nEXIT", Error.BANK_RANGE),   # lanes 3 only
    ("LI r1, -1\nST r1, [r1 + 0]\nEXIT", Error.BANK_RANGE),
    ("LI r1, 32\nATOM.ADD r2, [r1], r1\nEXIT", Error.BANK_RANGE),
    ("LI r1, 32\nWATOM.LOCK r2, [r1]\nEXIT", Error.BANK_RANGE),
    ("LI r1, 1\nJ 64", Error.PC_RANGE),
    ("LANE r1\nBNZ r1, 100\nEXIT", Error.PC_RANGE),
])
def test_bad_input_sets_error_and_stops(source, error):
    """The second instruction faults in warp 0: one clock, no effect, nothing after."""
    first, second = source.split("\n")[:2]
    words = assemble(first) + ([UNKNOWN] if second == "UNKNOWN" else assemble(source)[1:])
    r = model(warps=2).run(words, [5] * 32)
    assert r.error == error and not r.done
    assert r.clocks == len(r.trace) == 3
    assert [(w, pc) for w, pc, _ in r.trace] == [(0, 0), (1, 0), (0, 1)]
    assert r.transactions == 0 and list(r.bank) == [5] * 32       # no effect
    assert r.instructions == 2
    assert int(r.regs[0, 0, 2]) == 0


def test_running_off_the_end_of_instruction_memory():
    r = model(imem=4).run(assemble("LI r1, 1\nLI r2, 2\nLI r3, 3\nLI r4, 4"))
    assert r.error == Error.PC_RANGE and r.trace[-1] == (0, 3, 15)
    assert lanes_of(r, 4) == [0] * 4            # the faulting instruction wrote nothing


def test_running_into_unwritten_instruction_memory():
    r = model().run(assemble("LI r1, 1"))
    assert r.error == Error.UNKNOWN_OPCODE and r.trace[-1] == (0, 1, 15)


# ---------------------------------------------------------------- random programs

@pytest.mark.parametrize("seed", range(20))
def test_random_programs_end_and_keep_invariants(seed):
    """Random programs (divergent forward branches, early exits) run to the end; the
    trace's masks are the lanes at the warp's lowest PC, and the costs add up."""
    rng = np.random.default_rng(seed)
    m = WarpModel(warps=int(rng.integers(1, 5)), lanes=int(rng.integers(1, 9)), words=32,
                  imem=128, result=str(rng.choice(["lanes", "shared"])))
    words = assemble(random_program(rng, 40))
    r = m.run(words)
    assert r.done and r.error == Error.NONE and r.clocks == len(r.trace)
    assert all(0 < mask < 1 << m.lanes for _, _, mask in r.trace)
    per_lane = sum(1 for _, pc, _ in r.trace if words[pc] >> 26 in (13, 14, 16, 17))
    warp_wide = sum(1 for _, pc, _ in r.trace if words[pc] >> 26 in (18, 19, 20))
    assert r.transactions == per_lane + warp_wide
