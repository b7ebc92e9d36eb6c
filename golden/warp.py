"""Golden model of the lockstep warp unit with warp-wide atomics, and its assembler.

An instruction-level simulator with the unit's scheduling and clock costs
(``hw/warp.py`` matches it clock for clock). :meth:`WarpModel.run` gives, for a program
and an initial storage bank, the per-clock trace ``(warp, pc, mask)``, the final
registers, shared registers and bank, the clock and transaction counts and the sticky
error code. :func:`assemble` turns the textual assembly below into instruction words.

Machine
-------
``warps`` warps of ``lanes`` lanes. Each lane has 32 registers of 32 bits (``r0`` reads 0
and ignores writes), its own program counter and an ``exited`` flag. With
``result="shared"`` register ``r31`` reads the warp's one shared register (writes to
``r31`` are ignored) and warp-wide atomics write their result there instead of into
``rd``. One storage bank of ``words`` 32-bit words is shared by everything and serves
one access per clock. Every warp starts at address 0 with its registers zero.

Scheduling, one instruction per clock for the whole unit
---------------------------------------------------------
The warp is chosen round-robin: the first warp after the one that issued last (warp 0
first) that has a lane not exited. Inside it, the lowest program counter among its lanes
not exited is executed for every lane at that counter (the *active mask*); the others
wait. A multi-clock instruction finishes before the next warp is chosen.

Clock costs: every instruction takes 1 clock, except ``LD``, ``ST`` and the per-lane
atomics ``ATOM.*``, which take one clock per active lane (lanes served lowest first,
one bank transaction each). A warp-wide atomic ``WATOM.*`` takes 1 clock and 1
transaction: its address and operand come from the lowest active lane and its result
goes to every active lane's ``rd`` (or to the shared register). Inactive lanes are never
written. The trace has one entry per clock: an instruction of ``n`` clocks appears ``n``
times.

Encoding (32-bit words)
-----------------------
``op`` bits 31-26, ``rd`` 25-21, ``ra`` 20-16, ``rb`` 15-11, ``imm`` 15-0 (overlapping
``rb``; an instruction uses one or the other). ``ST`` keeps the register it stores in the
``rd`` field. Immediates of ``LI``, ``ADDI``, ``LD`` and ``ST`` are sign-extended;
branch and jump targets are absolute, unsigned. Addresses wrap at 32 bits and must then
be below ``words``. Opcode 0 is not an instruction, so a run into unwritten instruction
memory stops with ``UNKNOWN_OPCODE``.

=============  ==  ====================================  ==================================
instruction    op  assembly                              effect per active lane
=============  ==  ====================================  ==================================
LI             1   ``LI rd, imm``                        rd <- sext(imm)
ADD            2   ``ADD rd, ra, rb``                    rd <- ra + rb
SUB            3   ``SUB rd, ra, rb``                    rd <- ra - rb
ADDI           4   ``ADDI rd, ra, imm``                  rd <- ra + sext(imm)
SEQ            5   ``SEQ rd, ra, rb``                    rd <- ra == rb
SNE            6   ``SNE rd, ra, rb``                    rd <- ra != rb
SLT            7   ``SLT rd, ra, rb``                    rd <- ra < rb (signed)
BZ             8   ``BZ ra, target``                     pc <- target if ra == 0
BNZ            9   ``BNZ ra, target``                    pc <- target if ra != 0
J              10  ``J target``                          pc <- target
LANE           11  ``LANE rd``                           rd <- lane index
WARP           12  ``WARP rd``                           rd <- warp index
LD             13  ``LD rd, [ra + imm]``                 rd <- bank[ra + imm]
ST             14  ``ST rs, [ra + imm]``                 bank[ra + imm] <- rs
EXIT           15  ``EXIT``                              the lane exits
ATOM.XCHG      16  ``ATOM.XCHG rd, [ra], rb``            rd <- old; bank <- rb
ATOM.ADD       17  ``ATOM.ADD rd, [ra], rb``             rd <- old; bank <- old + rb
WATOM.XCHG     18  ``WATOM.XCHG rd, [ra], rb``           once: bank <- rb; all: rd <- old
WATOM.ADD      19  ``WATOM.ADD rd, [ra], rb``            once: bank <- old + rb; rd <- old
WATOM.LOCK     20  ``WATOM.LOCK rd, [ra]``               once: if old == 0: bank <- 1, rd
                                                         <- 1, else rd <- 0
=============  ==  ====================================  ==================================

Bad input (sticky error code; the unit stops, ``done`` never rises)
-------------------------------------------------------------------
All checks are made in an instruction's first clock, before it has any effect: a
faulting instruction takes that one clock (it is in the trace, counted in ``clocks``),
writes nothing and makes no transaction.

* :attr:`Error.UNKNOWN_OPCODE` -- the word at the program counter is no instruction.
* :attr:`Error.BANK_RANGE` -- a bank address of an active lane (of the lowest active lane
  for a warp-wide atomic) is ``words`` or more.
* :attr:`Error.PC_RANGE` -- an active lane's next program counter (a branch or jump
  target, or the word after the last) is outside instruction memory.
* :attr:`Error.IMEM_BUSY` and :attr:`Error.HOST_RANGE` -- port errors of the RTL (an
  instruction-memory write while busy; a host access out of range); the model has no
  ports, so it only names them.
"""

import enum
import re
from dataclasses import dataclass

import numpy as np

from golden.params import check_int, check_pow2

__all__ = ["PROGRAMS", "Op", "Error", "RESULT_MODES", "PER_LANE_BANK_OPS", "WARP_WIDE_OPS",
           "encode", "assemble", "check_parameters", "WarpModel", "WarpResult",
           "random_program"]

MASK32 = 0xFFFF_FFFF
RESULT_MODES = ("lanes", "shared")
SHARED_REG = 31


class Op(enum.IntEnum):
    """Opcodes (bits 31-26 of an instruction word)."""
    LI = 1
    ADD = 2
    SUB = 3
    ADDI = 4
    SEQ = 5
    SNE = 6
    SLT = 7
    BZ = 8
    BNZ = 9
    J = 10
    LANE = 11
    WARP = 12
    LD = 13
    ST = 14
    EXIT = 15
    ATOM_XCHG = 16
    ATOM_ADD = 17
    WATOM_XCHG = 18
    WATOM_ADD = 19
    WATOM_LOCK = 20


class Error(enum.IntEnum):
    """Sticky error codes (0: none)."""
    NONE = 0
    UNKNOWN_OPCODE = 1
    BANK_RANGE = 2
    PC_RANGE = 3
    IMEM_BUSY = 4
    HOST_RANGE = 5


_OPCODES = frozenset(int(op) for op in Op)

#: Instructions that take one clock and one transaction per active lane.
PER_LANE_BANK_OPS = (Op.LD, Op.ST, Op.ATOM_XCHG, Op.ATOM_ADD)
#: Warp-wide atomics: one clock, one transaction.
WARP_WIDE_OPS = (Op.WATOM_XCHG, Op.WATOM_ADD, Op.WATOM_LOCK)
#: Instructions that write ``rd`` (warp-wide ones only in ``"lanes"`` mode).
WRITES_RD = (Op.LI, Op.ADD, Op.SUB, Op.ADDI, Op.SEQ, Op.SNE, Op.SLT, Op.LANE, Op.WARP,
             Op.LD, Op.ATOM_XCHG, Op.ATOM_ADD) + WARP_WIDE_OPS


def check_parameters(warps, lanes, words, imem, result):
    """Raise ``TypeError``/``ValueError`` naming a bad parameter and its allowed range
    (the RTL's constructor checks the same ranges)."""
    check_int("warps", warps, 1, 8)
    check_int("lanes", lanes, 1, 8)
    check_pow2("words", words, 2, 4096)
    check_pow2("imem", imem, 2, 4096)
    if result not in RESULT_MODES:
        raise ValueError(f"result must be one of {', '.join(map(repr, RESULT_MODES))}, "
                         f"not {result!r}")


# ---------------------------------------------------------------- encoding, assembler

def encode(op, rd=0, ra=0, rb=0, imm=0):
    """One instruction word. ``imm`` (-32768..65535) and ``rb`` share bits 15-0."""
    for name, value in (("rd", rd), ("ra", ra), ("rb", rb)):
        if not 0 <= value < 32:
            raise ValueError(f"{name} must be a register from 0 to 31, not {value}")
    if not -0x8000 <= imm <= 0xFFFF:
        raise ValueError(f"imm must be from -32768 to 65535, not {imm}")
    return (int(op) << 26 | rd << 21 | ra << 16 | rb << 11 | (imm & 0xFFFF)) & MASK32


_OPERANDS = {
    # mnemonic: operand pattern (r: register, i: immediate, t: target, m: [ra +/- imm],
    # a: [ra]) and the fields the operands fill
    "LI": ("ri", ("rd", "imm")), "ADD": ("rrr", ("rd", "ra", "rb")),
    "SUB": ("rrr", ("rd", "ra", "rb")), "ADDI": ("rri", ("rd", "ra", "imm")),
    "SEQ": ("rrr", ("rd", "ra", "rb")), "SNE": ("rrr", ("rd", "ra", "rb")),
    "SLT": ("rrr", ("rd", "ra", "rb")), "BZ": ("rt", ("ra", "imm")),
    "BNZ": ("rt", ("ra", "imm")), "J": ("t", ("imm",)), "LANE": ("r", ("rd",)),
    "WARP": ("r", ("rd",)), "LD": ("rm", ("rd", "ra")), "ST": ("rm", ("rd", "ra")),
    "EXIT": ("", ()), "ATOM.XCHG": ("rar", ("rd", "ra", "rb")),
    "ATOM.ADD": ("rar", ("rd", "ra", "rb")), "WATOM.XCHG": ("rar", ("rd", "ra", "rb")),
    "WATOM.ADD": ("rar", ("rd", "ra", "rb")), "WATOM.LOCK": ("ra", ("rd", "ra")),
}
_MEMORY = re.compile(r"^\[\s*r(\d+)\s*(?:([+-])\s*(\w+)\s*)?\]$", re.IGNORECASE)
_ADDRESS = re.compile(r"^\[\s*r(\d+)\s*\]$", re.IGNORECASE)


def assemble(text):
    """Instruction words of an assembly program.

    One instruction per line, operands separated by commas; ``label:`` names the next
    instruction's address; ``;`` or ``#`` starts a comment. Registers are ``r0``..``r31``,
    numbers decimal or ``0x`` hex, targets labels or numbers. ``ValueError`` names the
    line of any mistake.
    """
    lines, labels = [], {}
    for number, line in enumerate(text.splitlines(), 1):
        line = re.split(r"[;#]", line, maxsplit=1)[0].strip()
        while (found := re.match(r"^([A-Za-z_]\w*)\s*:\s*", line)):
            if found[1] in labels:
                raise ValueError(f"line {number}: label {found[1]!r} defined twice")
            labels[found[1]] = len(lines)
            line = line[found.end():]
        if line:
            lines.append((number, line))
    return [_assemble_line(number, line, labels) for number, line in lines]


def _assemble_line(number, line, labels):
    mnemonic, _, rest = line.partition(" ")
    mnemonic = mnemonic.upper()
    if mnemonic not in _OPERANDS:
        raise ValueError(f"line {number}: unknown instruction {mnemonic!r}")
    pattern, fields = _OPERANDS[mnemonic]
    operands = [o.strip() for o in rest.split(",")] if rest.strip() else []
    if len(operands) != len(pattern):
        raise ValueError(f"line {number}: {mnemonic} takes {len(pattern)} operands, "
                         f"not {len(operands)}")
    values = []
    try:
        for kind, operand in zip(pattern, operands):
            if kind == "r":
                values.append(_register(operand))
            elif kind == "i":
                values.append(_number(operand, labels))
            elif kind == "t":
                values.append(_number(operand, labels, target=True))
            elif kind == "a":
                found = _ADDRESS.match(operand)
                if not found:
                    raise ValueError(f"expected [rN], not {operand!r}")
                values.append(_register(f"r{found[1]}"))
            else:   # "m": register and offset
                found = _MEMORY.match(operand)
                if not found:
                    raise ValueError(f"expected [rN + imm], not {operand!r}")
                offset = _number(found[3], labels) if found[3] else 0
                values.append(_register(f"r{found[1]}"))
                values.append(-offset if found[2] == "-" else offset)
        if pattern == "rm":
            fields = (*fields, "imm")
        return encode(Op[mnemonic.replace(".", "_")], **dict(zip(fields, values)))
    except ValueError as error:
        raise ValueError(f"line {number}: {error}") from None


def _register(text):
    found = re.fullmatch(r"r(\d+)", text.strip(), re.IGNORECASE)
    if not found or int(found[1]) > 31:
        raise ValueError(f"expected a register r0..r31, not {text!r}")
    return int(found[1])


def _number(text, labels, target=False):
    if text in labels:
        return labels[text]
    try:
        value = int(text, 0)
    except ValueError:
        what = "a label or address" if target else "a number"
        raise ValueError(f"expected {what}, not {text!r}") from None
    if target and not 0 <= value <= 0xFFFF:
        raise ValueError(f"target must be from 0 to 65535, not {value}")
    return value


def _fields(word):
    return (word >> 26, word >> 21 & 31, word >> 16 & 31, word >> 11 & 31, word & 0xFFFF)


def _sext16(value):
    return value - 0x10000 if value & 0x8000 else value


# ---------------------------------------------------------------- the simulator

@dataclass
class WarpResult:
    """What a run gives.

    Attributes
    ----------
    trace : list of (warp, pc, mask)
        One entry per clock; ``mask`` has bit ``l`` set for active lane ``l``.
    regs : numpy.ndarray
        ``uint32[warps, lanes, 32]``, the final registers (``r0`` is 0; in ``"shared"``
        mode ``r31`` holds what the lanes read there, the shared register).
    shared : numpy.ndarray
        ``uint32[warps]``, the shared registers (zero in ``"lanes"`` mode).
    bank : numpy.ndarray
        ``uint32[words]``, the final storage bank.
    clocks, transactions : int
        Clocks run and bank accesses made.
    instructions : int
        Instructions executed (a faulting one is not).
    error : Error
        The sticky error code (``Error.NONE`` if none).
    done : bool
        Whether every lane of every warp exited.
    """
    trace: list
    regs: np.ndarray
    shared: np.ndarray
    bank: np.ndarray
    clocks: int
    transactions: int
    error: Error
    done: bool
    instructions: int = 0


class WarpModel:
    """The warp unit as an instruction-level simulator (see the module docstring).

    Parameters
    ----------
    warps, lanes : int
        Warps (1-8) and lanes per warp (1-8).
    words : int
        Storage-bank words (a power of two, 2-4096).
    imem : int
        Instruction-memory words (a power of two, 2-4096).
    result : str
        ``"lanes"``: a warp-wide atomic writes every active lane's ``rd``; ``"shared"``:
        it writes the warp's shared register, read as ``r31``.
    """

    def __init__(self, *, warps=2, lanes=4, words=256, imem=256, result="lanes"):
        check_parameters(warps, lanes, words, imem, result)
        self.warps, self.lanes, self.words, self.imem = warps, lanes, words, imem
        self.result = result

    def run(self, program, bank=None, *, max_clocks=100_000):
        """Run ``program`` (instruction words, or assembly text) from address 0 on every
        warp with ``bank`` (default zeros) until every lane exited, an error, or
        ``max_clocks`` clocks have run (then ``done`` is false and ``error`` is
        ``NONE``; a multi-clock instruction under way finishes first)."""
        if isinstance(program, str):
            program = assemble(program)
        if len(program) > self.imem:
            raise ValueError(f"program must have at most imem={self.imem} words, "
                             f"not {len(program)}")
        state = _State(self, program, bank)
        while state.clocks < max_clocks and state.error == Error.NONE:
            warp = state.next_warp()
            if warp is None:
                break
            state.issue(warp)
        return WarpResult(state.trace, state.visible_regs(), state.shared.copy(),
                          state.bank, state.clocks, state.transactions, state.error,
                          bool(state.exited.all()), state.instructions)


class _State:
    """The machine state of one run and the execution of one instruction."""

    def __init__(self, model, program, bank):
        self.m = model
        W, L = model.warps, model.lanes
        self.imem = np.zeros(model.imem, np.uint32)
        self.imem[:len(program)] = [w & MASK32 for w in program]
        self.bank = np.zeros(model.words, np.uint32)
        if bank is not None:
            bank = np.asarray(bank, np.uint64) & MASK32
            self.bank[:len(bank)] = bank
        self.regs = np.zeros((W, L, 32), np.uint32)
        self.shared = np.zeros(W, np.uint32)
        self.pc = np.zeros((W, L), np.int64)
        self.exited = np.zeros((W, L), bool)
        self.last = W - 1             # so warp 0 goes first
        self.trace, self.clocks, self.transactions, self.instructions = [], 0, 0, 0
        self.error = Error.NONE

    def next_warp(self):
        """The first warp after the last one issued that has a lane not exited."""
        for step in range(1, self.m.warps + 1):
            warp = (self.last + step) % self.m.warps
            if not self.exited[warp].all():
                return warp
        return None

    def read(self, warp, reg):
        """Register ``reg`` of every lane of ``warp`` (uint64 for arithmetic)."""
        if reg == 0:
            return np.zeros(self.m.lanes, np.uint64)
        if reg == SHARED_REG and self.m.result == "shared":
            return np.full(self.m.lanes, self.shared[warp], np.uint64)
        return self.regs[warp, :, reg].astype(np.uint64)

    def write(self, warp, reg, active, values):
        """Write ``values`` into ``reg`` of the ``active`` lanes (r0, shared r31 ignore)."""
        if reg == 0 or (reg == SHARED_REG and self.m.result == "shared"):
            return
        values = np.broadcast_to(np.asarray(values, np.uint64) & MASK32, (self.m.lanes,))
        self.regs[warp, active, reg] = values[active]

    def visible_regs(self):
        regs = self.regs.copy()
        if self.m.result == "shared":
            regs[:, :, SHARED_REG] = self.shared[:, None]
        return regs

    def issue(self, warp):
        live = ~self.exited[warp]
        pc = int(self.pc[warp][live].min())
        active = live & (self.pc[warp] == pc)
        lanes = np.flatnonzero(active)
        mask = int(sum(1 << int(lane) for lane in lanes))
        op, rd, ra, rb, imm = _fields(int(self.imem[pc]))
        a = self.read(warp, ra)
        b = self.read(warp, rd if op == Op.ST else rb)

        error = self.check(op, pc, active, lanes, a, imm, warp)
        clocks = len(lanes) if op in PER_LANE_BANK_OPS and not error else 1
        self.trace += [(warp, pc, mask)] * clocks
        self.clocks += clocks
        if error:
            self.error = error
            return
        self.execute(Op(op), warp, active, lanes, rd, a, b, imm)
        self.advance(Op(op), warp, active, pc, a, imm)
        self.last = warp
        self.instructions += 1

    def addresses(self, op, a, imm):
        offset = _sext16(imm) if op in (Op.LD, Op.ST) else 0
        return (a + np.uint64(offset & MASK32)) & MASK32

    def next_pcs(self, op, pc, a, imm):
        """Every lane's next program counter for instruction ``op`` at ``pc``."""
        taken = {Op.BZ: a == 0, Op.BNZ: a != 0, Op.J: np.ones(len(a), bool)}.get(op)
        if taken is None:
            return np.full(len(a), pc + 1, np.int64)
        return np.where(taken, imm, pc + 1).astype(np.int64)

    def check(self, op, pc, active, lanes, a, imm, warp):
        if op not in _OPCODES:
            return Error.UNKNOWN_OPCODE
        op = Op(op)
        if op in PER_LANE_BANK_OPS or op in WARP_WIDE_OPS:
            addresses = self.addresses(op, a, imm)[lanes[:1] if op in WARP_WIDE_OPS
                                                   else lanes]
            if (addresses >= self.m.words).any():
                return Error.BANK_RANGE
        if op != Op.EXIT and (self.next_pcs(op, pc, a, imm)[active] >= self.m.imem).any():
            return Error.PC_RANGE
        return Error.NONE

    def execute(self, op, warp, active, lanes, rd, a, b, imm):
        if op in PER_LANE_BANK_OPS:
            self.per_lane(op, warp, lanes, rd, self.addresses(op, a, imm), b)
        elif op in WARP_WIDE_OPS:
            self.warp_wide(op, warp, active, lanes[0], rd, a, b)
        elif op == Op.EXIT:
            self.exited[warp] |= active
        elif op in WRITES_RD:
            self.write(warp, rd, active, self.alu(op, warp, a, b, imm))

    def alu(self, op, warp, a, b, imm):
        signed = lambda v: v.astype(np.uint32).view(np.int32)  # noqa: E731
        return {
            Op.LI: lambda: np.uint64(_sext16(imm) & MASK32),
            Op.ADD: lambda: a + b,
            Op.SUB: lambda: a - b + (1 << 32),
            Op.ADDI: lambda: a + np.uint64(_sext16(imm) & MASK32),
            Op.SEQ: lambda: (a == b).astype(np.uint64),
            Op.SNE: lambda: (a != b).astype(np.uint64),
            Op.SLT: lambda: (signed(a) < signed(b)).astype(np.uint64),
            Op.LANE: lambda: np.arange(self.m.lanes, dtype=np.uint64),
            Op.WARP: lambda: np.uint64(warp),
        }[op]()

    def per_lane(self, op, warp, lanes, rd, addresses, b):
        """Lanes served lowest first, one transaction each."""
        for lane in lanes:
            address = int(addresses[lane])
            old = int(self.bank[address])
            if op == Op.ST:
                self.bank[address] = b[lane]
            elif op == Op.ATOM_XCHG:
                self.bank[address] = b[lane]
            elif op == Op.ATOM_ADD:
                self.bank[address] = (old + int(b[lane])) & MASK32
            if op != Op.ST:
                only = np.zeros(self.m.lanes, bool)
                only[lane] = True
                self.write(warp, rd, only, old)
            self.transactions += 1

    def warp_wide(self, op, warp, active, first, rd, a, b):
        """Executed once, with the lowest active lane's address and operand."""
        address, operand = int(a[first]), int(b[first])
        old = int(self.bank[address])
        if op == Op.WATOM_XCHG:
            self.bank[address], result = operand, old
        elif op == Op.WATOM_ADD:
            self.bank[address], result = (old + operand) & MASK32, old
        else:   # WATOM_LOCK: a try-lock
            result = int(old == 0)
            if old == 0:
                self.bank[address] = 1
        self.transactions += 1
        if self.m.result == "shared":
            self.shared[warp] = result
        else:
            self.write(warp, rd, active, result)

    def advance(self, op, warp, active, pc, a, imm):
        if op != Op.EXIT:
            self.pc[warp][active] = self.next_pcs(op, pc, a, imm)[active]


# ---------------------------------------------------------------- random programs

_ALU = ("LI", "ADD", "SUB", "ADDI", "SEQ", "SNE", "SLT", "LANE", "WARP")
_BANK = ("LD", "ST", "ATOM.XCHG", "ATOM.ADD", "WATOM.XCHG", "WATOM.ADD", "WATOM.LOCK")


def random_program(rng, length, *, branches=True):
    """Assembly text of a random program that ends: ``LANE r1`` (every lane's own bank
    address: the bank needs ``lanes + 16`` words), ``length`` random steps and ``EXIT``.
    With ``branches``, a step may be a forward branch, half the time on a lane-dependent
    condition (so the warp diverges), or an ``EXIT`` (some lanes end early). Every bank
    address stays in range and ``rd`` is never ``r1``."""
    steps = []
    for index in range(length):
        kind = rng.choice(["alu"] * 10 + ["bank"] * 6 + (["branch"] * 4 if branches else [])
                          + ["exit"] * int(branches))
        rd, ra, rb = (int(rng.integers(2, 32)), int(rng.integers(0, 32)),
                      int(rng.integers(0, 32)))
        if kind == "alu":
            op = _ALU[rng.integers(len(_ALU))]
            imm = int(rng.integers(-0x8000, 0x8000))
            steps.append([{"LI": f"LI r{rd}, {imm}", "ADDI": f"ADDI r{rd}, r{ra}, {imm}",
                           "LANE": f"LANE r{rd}", "WARP": f"WARP r{rd}"}
                          .get(op, f"{op} r{rd}, r{ra}, r{rb}")])
        elif kind == "bank":
            op = _BANK[rng.integers(len(_BANK))]
            base = int(rng.choice([0, 1]))
            offset = int(rng.integers(0, 16))
            steps.append([{"LD": f"LD r{rd}, [r{base} + {offset}]",
                           "ST": f"ST r{ra}, [r{base} + {offset}]",
                           "WATOM.LOCK": f"WATOM.LOCK r{rd}, [r{base}]"}
                          .get(op, f"{op} r{rd}, [r{base}], r{rb}")])
        elif kind == "branch":
            target = f"s{rng.integers(index + 1, length + 1)}"
            op = rng.choice(["BZ", "BNZ"])
            if rng.random() < 0.1:
                steps.append([f"J {target}"])
            elif rng.random() < 0.5:
                steps.append([f"ADDI r{rd}, r1, {-int(rng.integers(0, 4))}",
                              f"{op} r{rd}, {target}"])
            else:
                steps.append([f"{op} r{ra}, {target}"])
        else:
            steps.append(["EXIT"])
    steps.append(["EXIT"])
    lines = ["LANE r1"]
    for index, step in enumerate(steps):
        lines += [f"s{index}: {step[0]}", *step[1:]]
    return "\n".join(lines) + "\n"


#: The spec's named programs (text for :func:`assemble`; ``{K}`` is the iteration count,
#: ``{res}`` the register the lock result lands in: ``r3``, or ``r31`` with
#: ``result="shared"``), used by the tests and the bench.
PROGRAMS = {
    # The seed's deadlock: every lane tries the lock; the winner leaves the loop, the
    # losers branch back to a lower program counter, which the scheduler always prefers.
    "spin_lock": """
        LI r1, 0               ; the lock word; the counter is the word after it
        LI r2, 1
    spin:
        ATOM.XCHG r3, [r1], r2 ; try: old value into r3
        BNZ r3, spin           ; taken by someone: try again
        LD r4, [r1 + 1]
        ADDI r4, r4, 1
        ST r4, [r1 + 1]
        ST r0, [r1]            ; release
        EXIT
    """,
    # The same critical section with the warp-wide lock, run K times by every warp.
    "warp_lock": """
        LI r1, 0
        LI r5, {K}
    loop:
        WATOM.LOCK r3, [r1]    ; once for the warp; 1 in every active lane if taken
        BZ {res}, loop
        LD r4, [r1 + 1]
        ADDI r4, r4, 1
        ST r4, [r1 + 1]
        WATOM.XCHG r0, [r1], r0 ; release
        ADDI r5, r5, -1
        BNZ r5, loop
        EXIT
    """,
    # ... and without any lock.
    "no_lock": """
        LI r1, 0
        LI r5, {K}
    loop:
        LD r4, [r1 + 1]
        ADDI r4, r4, 1
        ST r4, [r1 + 1]
        ADDI r5, r5, -1
        BNZ r5, loop
        EXIT
    """,
}
