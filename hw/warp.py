"""The lockstep warp unit with warp-wide atomics.

``warps`` warps of ``lanes`` lanes run one program from a shared instruction memory.
Threads of a warp execute in lockstep: each clock the unit picks a warp round-robin and,
inside it, the lowest program counter among its lanes that have not exited, and executes
that instruction for every lane at that counter (the *active mask*). Under that rule a
per-lane spin lock deadlocks: the lanes that lost the race spin at a lower counter and
the winner, further along, never runs again. The warp-wide atomics ``WATOM.*`` execute
once for the warp, with the lowest active lane's address and operand, and hand the
result to every active lane (``result="lanes"``) or to the warp's shared register, read
as ``r31`` (``result="shared"``): one bank transaction instead of one per lane, and no
deadlock.

The golden model ``golden/warp.py`` is the executable reference: its docstring has the
ISA, the encoding, the scheduling and the clock costs, which this unit matches clock for
clock (every instruction 1 clock; ``LD``, ``ST`` and ``ATOM.*`` one clock per active
lane, lowest lane first; ``WATOM.*`` 1 clock).

Ports
-----
``imem_w`` (stream of ``addr``, ``word``)
    Instruction-memory writes. Always ready; a write while busy is dropped and raises
    ``IMEM_BUSY``, one to an address of ``imem`` or more ``HOST_RANGE``.
``start``
    A strobe: clears the register files (``warps * 32`` clocks, not counted in
    ``clocks``), sets every lane's program counter to 0 and runs. Ignored while busy or
    after an error.
``host`` (stream of ``op``, ``warp``, ``lane``, ``addr``, ``data``), ``host_rdata``
    The testbench's access to the storage bank (``READ_BANK``/``WRITE_BANK`` word
    ``addr``) and the registers (``READ_REG`` register ``addr`` of ``lane`` of ``warp``),
    taken only while idle, one request at a time: a request is taken when ``host_rdata``
    holds no answer; a read answers on ``host_rdata``. A request out of range is
    dropped and raises ``HOST_RANGE``.
``busy``, ``done``, ``error``
    ``busy`` from ``start`` until every lane exited (then ``done`` rises and stays until
    the next ``start``) or an error stops the unit; ``error`` is the sticky code of
    ``golden.warp.Error``, cleared by reset only.
``clocks``, ``transactions``
    Clocks of execution and bank accesses by the program since ``start``.
``trace`` (``valid``, ``warp``, ``pc``, ``mask``)
    Every clock of execution: the warp, program counter and active mask, as in the golden
    model's trace. A faulting instruction's clock is in the trace; it has no effect.

Structure
---------
Register files (one :class:`~amaranth.lib.memory.Memory` per lane, ``warps * 32``
words, two asynchronous read ports), the bank and the instruction memory are
asynchronous-read memories (LUT RAM on the ECP5): fetch, register read, bank access and
write-back happen in one clock, which is what the golden model's
one-instruction-per-clock contract asks for (a warp may issue on consecutive clocks, its
next program counter depending on the last branch). The schedule of a clock (warp,
lowest program counter, mask) is computed in the clock before from the scheduler's next
state (program counters, ``exited`` flags, last warp) and registered, so a clock starts
at the instruction fetch. Program counters and ``exited`` flags are flip-flops
(``warps * lanes`` of them), written through a one-hot warp select. The price of the
contract is speed (Fmax in the README): a pipelined unit needs a different clock
contract (e.g. a warp issuing at most every other clock), to be decided in the spec and
the golden model first.
"""

import enum

from amaranth.hdl import Array, Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from hw.params import check_int, check_pow2

__all__ = ["Op", "Error", "HostOp", "imem_write_layout", "host_layout", "TraceSignature",
           "WarpUnit", "DESIGNS"]


class Op(enum.IntEnum):
    """Opcodes, bits 31-26 (the table is in ``golden/warp.py``)."""
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
    """Sticky error codes."""
    NONE = 0
    UNKNOWN_OPCODE = 1
    BANK_RANGE = 2
    PC_RANGE = 3
    IMEM_BUSY = 4
    HOST_RANGE = 5


class HostOp(enum.IntEnum):
    """What a ``host`` request does."""
    READ_BANK = 0
    WRITE_BANK = 1
    READ_REG = 2


ALU_OPS = (Op.LI, Op.ADD, Op.SUB, Op.ADDI, Op.SEQ, Op.SNE, Op.SLT, Op.LANE, Op.WARP)
PER_LANE_BANK_OPS = (Op.LD, Op.ST, Op.ATOM_XCHG, Op.ATOM_ADD)
WARP_WIDE_OPS = (Op.WATOM_XCHG, Op.WATOM_ADD, Op.WATOM_LOCK)
SHARED_REG = 31

imem_write_layout = data.StructLayout({"addr": 16, "word": 32})
"""Payload of an instruction-memory write."""

host_layout = data.StructLayout({"op": 2, "warp": 3, "lane": 3, "addr": 16, "data": 32})
"""Payload of a host request (``op`` is a :class:`HostOp`)."""


def TraceSignature(lanes, pc_bits):
    """The per-clock trace: ``valid``, ``warp``, ``pc``, active ``mask``."""
    return wiring.Signature({"valid": Out(1), "warp": Out(3), "pc": Out(pc_bits),
                             "mask": Out(lanes)})


def _minimum(values):
    """The smallest of ``values`` as a balanced tree of comparators."""
    while len(values) > 1:
        pairs = [Mux(b < a, b, a) for a, b in zip(values[::2], values[1::2])]
        values = pairs + values[len(values) & ~1:]
    return values[0]


def _one_hot_mux(select, values):
    """OR of ``values[k]`` whose ``select[k]`` is set (at most one is)."""
    result = 0
    for bit, value in zip(select, values):
        result = result | Mux(bit, value, 0)
    return result


def _lowest(bits):
    """One-hot lowest set bit of ``bits``."""
    return bits & (~bits + 1)[:len(bits)]


class WarpUnit(wiring.Component):
    """The lockstep warp unit (see the module docstring for ports and behaviour).

    Parameters
    ----------
    warps : int
        Warps, 1 to 8.
    lanes : int
        Lanes per warp, 1 to 8.
    words : int
        Storage-bank words, a power of two from 2 to 4096.
    imem : int
        Instruction-memory words, a power of two from 2 to 4096.
    result : str
        Where a warp-wide atomic's result goes: ``"lanes"`` (every active lane's ``rd``)
        or ``"shared"`` (the warp's shared register, read as ``r31``).
    """

    def __init__(self, *, warps=2, lanes=4, words=256, imem=256, result="lanes"):
        check_int("warps", warps, 1, 8)
        check_int("lanes", lanes, 1, 8)
        check_pow2("words", words, 2, 4096)
        check_pow2("imem", imem, 2, 4096)
        if result not in ("lanes", "shared"):
            raise ValueError(f"result must be one of 'lanes', 'shared', not {result!r}")
        self.warps, self.lanes, self.words, self.imem = warps, lanes, words, imem
        self.result = result
        self.pc_bits = exact_log2(imem)
        super().__init__({
            "imem_w": In(stream.Signature(imem_write_layout)),
            "start": In(1),
            "host": In(stream.Signature(host_layout)),
            "host_rdata": Out(stream.Signature(32)),
            "busy": Out(1),
            "done": Out(1),
            "error": Out(3),
            "clocks": Out(32),
            "transactions": Out(32),
            "trace": Out(TraceSignature(lanes, self.pc_bits)),
        })

    def elaborate(self, platform):
        m = Module()
        W, L, shared_mode = self.warps, self.lanes, self.result == "shared"

        m.submodules.imem = imem = Memory(shape=32, depth=self.imem, init=[])
        m.submodules.bank = bank = Memory(shape=32, depth=self.words, init=[])
        regfiles = [Memory(shape=32, depth=W * 32, init=[]) for _ in range(L)]
        for lane, regfile in enumerate(regfiles):
            m.submodules[f"regs{lane}"] = regfile
        fetch = imem.read_port(domain="comb")
        bank_r, bank_w = bank.read_port(domain="comb"), bank.write_port()
        reg_a = [rf.read_port(domain="comb") for rf in regfiles]
        reg_b = [rf.read_port(domain="comb") for rf in regfiles]
        reg_w = [rf.write_port() for rf in regfiles]

        # ---- state
        running, clearing = Signal(), Signal()
        clear_addr = Signal(range(W * 32))
        pc = [[Signal(self.pc_bits, name=f"pc_{w}_{l}") for l in range(L)] for w in range(W)]
        exited = [[Signal(name=f"exited_{w}_{l}") for l in range(L)] for w in range(W)]
        shared = [Signal(32, name=f"shared_{w}") for w in range(W)]
        last = Signal(range(W), init=W - 1)         # the warp that issued last
        in_op = Signal()                            # inside a multi-clock instruction
        cur_warp = Signal(range(W))
        served = Signal(L)                          # lanes of it served so far
        error = Signal(3)
        m.d.comb += [self.error.eq(error), self.busy.eq(running | clearing)]

        # ---- next state of the scheduler (assigned below), and the schedule: the next
        # clock's warp, program counter and mask, registered from it
        pc_d = [[Signal(self.pc_bits, name=f"pc_d_{w}_{l}") for l in range(L)]
                for w in range(W)]
        exited_d = [[Signal(name=f"exited_d_{w}_{l}") for l in range(L)] for w in range(W)]
        last_d, in_op_d, cur_warp_d = Signal(range(W)), Signal(), Signal(range(W))
        for w in range(W):
            m.d.comb += [pc_d[w][l].eq(pc[w][l]) for l in range(L)]
            m.d.comb += [exited_d[w][l].eq(exited[w][l]) for l in range(L)]
            m.d.sync += [pc[w][l].eq(pc_d[w][l]) for l in range(L)]
            m.d.sync += [exited[w][l].eq(exited_d[w][l]) for l in range(L)]
        m.d.comb += [last_d.eq(last), in_op_d.eq(in_op), cur_warp_d.eq(cur_warp)]
        m.d.sync += [last.eq(last_d), in_op.eq(in_op_d), cur_warp.eq(cur_warp_d)]

        warp = Signal(range(W))                     # the schedule of this clock; the
        cur_pc = Signal(self.pc_bits + 1)           # initial values are the schedule
        mask = Signal(L, init=(1 << L) - 1)         # of the reset state
        any_live = Signal(init=1)
        schedule = self._schedule(m, pc_d, exited_d, last_d, in_op_d, cur_warp_d)
        m.d.sync += [warp.eq(schedule[0]), cur_pc.eq(schedule[1]), mask.eq(schedule[2]),
                     any_live.eq(schedule[3])]
        warp_oh = Signal(W)
        m.d.comb += warp_oh.eq(1 << warp)
        executing = Signal()
        m.d.comb += executing.eq(running & any_live & (error == 0))

        # ---- fetch and decode
        word = Signal(32)
        m.d.comb += [fetch.addr.eq(cur_pc), word.eq(fetch.data)]
        op, rd, ra, rb, imm = word[26:32], word[21:26], word[16:21], word[11:16], word[0:16]
        imm32 = Cat(imm, imm[15].replicate(16))
        is_ = {o: Signal(name=f"is_{o.name.lower()}") for o in Op}
        for o, s in is_.items():
            m.d.comb += s.eq(op == o)
        known = Cat(is_.values()).any()
        per_lane_op = Cat(is_[o] for o in PER_LANE_BANK_OPS).any()
        warp_wide_op = Cat(is_[o] for o in WARP_WIDE_OPS).any()
        bank_op = per_lane_op | warp_wide_op

        # ---- register read: port A reads ra (or the host's register), B rb (ST: rd)
        host = self.host.payload
        for port_a, port_b in zip(reg_a, reg_b):
            m.d.comb += [
                port_a.addr.eq(Mux(self.busy, Cat(ra, warp), Cat(host.addr[:5], host.warp))),
                port_b.addr.eq(Cat(Mux(is_[Op.ST], rd, rb), warp)),
            ]
        shared_of = Array(shared)

        def operand(reg, port, warp_index):
            value = Mux(reg == 0, 0, port.data)
            if shared_mode:
                value = Mux(reg == SHARED_REG, shared_of[warp_index], value)
            return value

        a = [Signal(32, name=f"a_{l}") for l in range(L)]
        b = [Signal(32, name=f"b_{l}") for l in range(L)]
        for l in range(L):
            m.d.comb += [a[l].eq(operand(ra, reg_a[l], warp)),
                         b[l].eq(operand(Mux(is_[Op.ST], rd, rb), reg_b[l], warp))]

        # ---- per lane: bank address, next program counter, ALU result
        address = [Signal(32, name=f"address_{l}") for l in range(L)]
        next_pc = [Signal(17, name=f"next_pc_{l}") for l in range(L)]
        alu = [Signal(32, name=f"alu_{l}") for l in range(L)]
        offset = Mux(is_[Op.LD] | is_[Op.ST], imm32, 0)
        for l in range(L):
            taken = is_[Op.J] | (is_[Op.BZ] & (a[l] == 0)) | (is_[Op.BNZ] & (a[l] != 0))
            m.d.comb += [
                address[l].eq(a[l] + offset),
                next_pc[l].eq(Mux(taken, imm, cur_pc + 1)),
            ]
            with m.Switch(op):
                with m.Case(Op.LI):
                    m.d.comb += alu[l].eq(imm32)
                with m.Case(Op.ADD):
                    m.d.comb += alu[l].eq(a[l] + b[l])
                with m.Case(Op.SUB):
                    m.d.comb += alu[l].eq(a[l] - b[l])
                with m.Case(Op.ADDI):
                    m.d.comb += alu[l].eq(a[l] + imm32)
                with m.Case(Op.SEQ):
                    m.d.comb += alu[l].eq(a[l] == b[l])
                with m.Case(Op.SNE):
                    m.d.comb += alu[l].eq(a[l] != b[l])
                with m.Case(Op.SLT):
                    m.d.comb += alu[l].eq(a[l].as_signed() < b[l].as_signed())
                with m.Case(Op.LANE):
                    m.d.comb += alu[l].eq(l)
                with m.Case(Op.WARP):
                    m.d.comb += alu[l].eq(warp)

        # ---- faults, checked in an instruction's first clock
        first_lane = Signal(L)           # the lowest active lane: warp-wide operands
        m.d.comb += first_lane.eq(_lowest(mask))
        bad_address = Cat(address[l] >= self.words for l in range(L))
        bad_pc = Cat(next_pc[l] >= self.imem for l in range(L))
        fault = Signal(3)
        with m.If(~in_op):
            with m.If(~known):
                m.d.comb += fault.eq(Error.UNKNOWN_OPCODE)
            with m.Elif((per_lane_op & (bad_address & mask).any())
                        | (warp_wide_op & (bad_address & first_lane).any())):
                m.d.comb += fault.eq(Error.BANK_RANGE)
            with m.Elif(~is_[Op.EXIT] & (bad_pc & mask).any()):
                m.d.comb += fault.eq(Error.PC_RANGE)
        go = Signal()
        m.d.comb += go.eq(executing & (fault == 0))

        # ---- the bank: one access per clock, per-lane ops lowest remaining lane first
        serving = Signal(L)
        m.d.comb += serving.eq(_lowest(mask & ~served))
        finishing = Signal()             # the instruction's last clock
        m.d.comb += finishing.eq(~per_lane_op | ((mask & ~served & ~serving) == 0))
        pick = Mux(per_lane_op, serving, first_lane)
        bank_address = _one_hot_mux(pick, address)
        bank_operand = _one_hot_mux(pick, b)
        old = bank_r.data
        lock_free = old == 0
        m.d.comb += bank_r.addr.eq(Mux(self.busy, bank_address, host.addr))
        with m.If(go & bank_op):
            m.d.sync += self.transactions.eq(self.transactions + 1)
            m.d.comb += bank_w.addr.eq(bank_address)
            with m.Switch(op):
                with m.Case(Op.ST, Op.ATOM_XCHG, Op.WATOM_XCHG):
                    m.d.comb += [bank_w.data.eq(bank_operand), bank_w.en.eq(1)]
                with m.Case(Op.ATOM_ADD, Op.WATOM_ADD):
                    m.d.comb += [bank_w.data.eq(old + bank_operand), bank_w.en.eq(1)]
                with m.Case(Op.WATOM_LOCK):
                    m.d.comb += [bank_w.data.eq(1), bank_w.en.eq(lock_free)]
        atomic_result = Mux(is_[Op.WATOM_LOCK], lock_free, old)

        # ---- register write-back (or clearing on start)
        writes_rd = (Cat(is_[o] for o in ALU_OPS).any() | is_[Op.LD]
                     | is_[Op.ATOM_XCHG] | is_[Op.ATOM_ADD])
        if not shared_mode:
            writes_rd = writes_rd | warp_wide_op
        writable = (rd != 0) & ((rd != SHARED_REG) if shared_mode else 1)
        written_lanes = Mux(per_lane_op, serving, mask)
        for l in range(L):
            m.d.comb += [
                reg_w[l].addr.eq(Mux(clearing, clear_addr, Cat(rd, warp))),
                reg_w[l].data.eq(Mux(clearing, 0, Mux(bank_op, atomic_result, alu[l]))),
                reg_w[l].en.eq(clearing | (go & writes_rd & writable & written_lanes[l])),
            ]
        if shared_mode:
            for w in range(W):
                with m.If(go & warp_wide_op & warp_oh[w]):
                    m.d.sync += shared[w].eq(atomic_result)

        # ---- program counters, exits, scheduler state
        with m.If(go):
            with m.If(finishing):
                for w in range(W):
                    for l in range(L):
                        with m.If(warp_oh[w] & mask[l]):
                            with m.If(is_[Op.EXIT]):
                                m.d.comb += exited_d[w][l].eq(1)
                            with m.Else():
                                m.d.comb += pc_d[w][l].eq(next_pc[l])
                m.d.comb += [last_d.eq(warp), in_op_d.eq(0)]
                m.d.sync += served.eq(0)
            with m.Else():
                m.d.comb += [in_op_d.eq(1), cur_warp_d.eq(warp)]
                m.d.sync += served.eq(served | serving)

        # ---- trace and counters
        m.d.comb += [self.trace.valid.eq(executing), self.trace.warp.eq(warp),
                     self.trace.pc.eq(cur_pc), self.trace.mask.eq(mask)]
        with m.If(executing):
            m.d.sync += self.clocks.eq(self.clocks + 1)
        with m.If(running & ~any_live):
            m.d.sync += [running.eq(0), self.done.eq(1)]
        with m.If(executing & (fault != 0)):
            m.d.sync += [running.eq(0), error.eq(fault)]

        # ---- start: clear the register files, then run
        with m.If(clearing):
            m.d.sync += clear_addr.eq(clear_addr + 1)
            with m.If(clear_addr == W * 32 - 1):
                m.d.sync += [clearing.eq(0), running.eq(1)]
        with m.If(self.start & ~self.busy & (error == 0)):
            m.d.sync += [clearing.eq(1), clear_addr.eq(0), self.done.eq(0), served.eq(0),
                         self.clocks.eq(0), self.transactions.eq(0)]
            m.d.comb += [last_d.eq(W - 1), in_op_d.eq(0)]
            m.d.comb += [s.eq(0) for row in pc_d + exited_d for s in row]
            m.d.sync += [s.eq(0) for s in shared]

        # ---- instruction-memory writes: always taken, refused while busy
        imem_w = imem.write_port()
        m.d.comb += self.imem_w.ready.eq(1)
        with m.If(self.imem_w.valid):
            with m.If(self.busy):
                m.d.sync += [running.eq(0), clearing.eq(0)]
                with m.If((error == 0) & ~(executing & (fault != 0))):
                    m.d.sync += error.eq(Error.IMEM_BUSY)
            with m.Elif(self.imem_w.payload.addr >= self.imem):
                with m.If(error == 0):
                    m.d.sync += error.eq(Error.HOST_RANGE)
            with m.Else():
                m.d.comb += [imem_w.addr.eq(self.imem_w.payload.addr),
                             imem_w.data.eq(self.imem_w.payload.word), imem_w.en.eq(1)]

        self._host_port(m, bank_r, bank_w, reg_a, shared_of, operand, error)
        return m

    def _schedule(self, m, pc, exited, last, in_op, cur_warp):
        """The warp (round-robin after ``last`` among warps with a lane not exited, or
        ``cur_warp`` inside a multi-clock instruction), its lowest program counter, the
        mask of its lanes there, and whether any warp is live, for the state given."""
        W, L = self.warps, self.lanes
        live = Cat(~Cat(*exited[w]).all() for w in range(W))
        rr_warp = Signal(range(W))
        with m.Switch(last):
            for previous in range(W):
                with m.Case(previous):
                    order = [(previous + step) % W for step in range(1, W + 1)]
                    for warp in reversed(order):        # the first in order wins
                        with m.If(live[warp]):
                            m.d.comb += rr_warp.eq(warp)
        warp = Signal(range(W))
        m.d.comb += warp.eq(Mux(in_op, cur_warp, rr_warp))
        lane_pc = [Array(pc[w][l] for w in range(W))[warp] for l in range(L)]
        lane_exited = [Array(exited[w][l] for w in range(W))[warp] for l in range(L)]
        lowest_pc = Signal(self.pc_bits + 1)
        m.d.comb += lowest_pc.eq(_minimum([Mux(x, self.imem, p)
                                           for p, x in zip(lane_pc, lane_exited)]))
        mask = Signal(L)
        m.d.comb += mask.eq(Cat(~x & (p == lowest_pc) for p, x in zip(lane_pc, lane_exited)))
        return warp, lowest_pc, mask, live.any()

    def _host_port(self, m, bank_r, bank_w, reg_a, shared_of, operand, error):
        """Bank and register access for the testbench while idle; reads answer on
        ``host_rdata``, one request at a time."""
        host = self.host.payload
        m.d.comb += self.host.ready.eq(~self.busy & ~self.host_rdata.valid)
        with m.If(self.host_rdata.valid & self.host_rdata.ready):
            m.d.sync += self.host_rdata.valid.eq(0)
        out_of_range = Mux(host.op == HostOp.READ_REG,
                           (host.warp >= self.warps) | (host.lane >= self.lanes)
                           | (host.addr >= 32),
                           (host.op > HostOp.READ_REG) | (host.addr >= self.words))
        lane_value = Array(operand(host.addr[:5], port, host.warp) for port in reg_a)
        with m.If(self.host.valid & self.host.ready):
            with m.If(out_of_range):
                with m.If(error == 0):
                    m.d.sync += error.eq(Error.HOST_RANGE)
            with m.Elif(host.op == HostOp.WRITE_BANK):
                m.d.comb += [bank_w.addr.eq(host.addr), bank_w.data.eq(host.data),
                             bank_w.en.eq(1)]
            with m.Else():
                m.d.sync += [self.host_rdata.valid.eq(1),
                             self.host_rdata.payload.eq(
                                 Mux(host.op == HostOp.READ_REG,
                                     lane_value[host.lane], bank_r.data))]


DESIGNS = {
    "unit": WarpUnit,
}
