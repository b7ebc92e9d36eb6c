"""The integrated front end (issue 15): a command stream in, a framebuffer out.

``frontend.frontend`` (:class:`Frontend`) connects the blocks as ``../shared/spec/README.md``
("How the parts fit") draws them::

    i (command words) -> CSP (sync.csp) -> command parser -> feeder --------------+
                                                         |  vertex, triangle      |
                                                         v  packets               v
                         raster.pipeline <- primitive (+ flush)        spreader.spreader_qcc
                                |  pixel packets                     (spreader + N qcc.qcc)
                                v                                       |   move, issues
                         pixel router -> pixel packets --------------->-+
                                                                        v
                            N pixel engines (stage latencies, framebuffer requests)
                                                                        v
                                               framebuffer (Memory, read-modify-write)

Every arrow is a valid/ready stream or a FIFO; nothing accepted is lost or duplicated.

Command stream
--------------
Words of :func:`hw.sync.stream_word` (32-bit ``data``); the CSP routes a data word by its
group, ``data[30:32]``, and its opcode is ``data[26:30]``:

========  ======  ==================================================================
group     opcode  meaning
========  ======  ==================================================================
1 prim    1       FRAME: ``data[0:3]`` = log2(samples); clears the framebuffer and
                  starts a frame (refused unless the build has that MSAA mode)
1 prim    2       DRAW: ``data[0:16]`` = primitive id (1 .. ``2**prid_bits - 1``);
                  the next six words are its vertices
1 prim    3       VERTEX: ``data[0:24]`` = a coordinate, unsigned 16.8 fixed point,
                  ``x0, y0, x1, y1, x2, y2`` (y down)
0 state   1       LATENCY: ``data[0:8]`` NUMERIC, ``data[8:16]`` MOVE stage latency
                  (clocks) of every pixel engine; applies when it is taken
any       token   END_BATCH ends the frame; every other token is ignored
========  ======  ==================================================================

A frame is ``FRAME, (DRAW, 6 x VERTEX)*, END_BATCH``. When the frame has drained (every
draw written), ``done`` rises and ``clocks`` holds the clocks from FRAME to done; the
framebuffer can then be read through ``fb_addr``/``fb_data``.

Colour rule (decision)
----------------------
The framebuffer keeps, per sample, the **highest primitive id** that covers it (0 = none):
``max`` is commutative, so the frame does not depend on which EU writes first, and for
ids given in submission order it is the painter's order of the draws. Colours are a
palette lookup of the id outside the design (``make demo`` paints the samples' mean).
A framebuffer word is one row of a 4x4 span: pixel ``q`` (0..3, left to right), sample
``s`` at bits ``(q * max_samples + s) * prid_bits``; address ``(y * width + x) / 4``.
Samples beyond the frame's mode stay 0.

How a draw goes through
-----------------------
1. The **parser** (:class:`CommandParser`) turns the CSP's primitive stream into frame,
   draw and end records; the **feeder** numbers each draw ``seq`` (the spreader's prid,
   so that equal user ids never meet in the spreader's primitive table) and presents, in
   this order and each after the previous one was taken: a vertex packet (3 vertices
   ``8*seq .. 8*seq+2``, size 1), a triangle packet naming them (size 1, closing the
   group), the primitive to the rasterizer, and then a **flush primitive** (a triangle
   over pixel (0, 0) with the scissor ``(0, 0, 1, 1)`` and tag 1) that always gives
   exactly one packet.
2. The **pixel router** turns the rasterizer's packets into the spreader's pixel packets
   (size 1) for the oldest draw in flight; the flush packet becomes that draw's end
   marker (mask 0, last 1), which closes its primitive-table record. So no look-ahead is
   needed to mark a draw's last packet, and a draw culled by the rasterizer (nothing
   but the flush comes out) still closes. The sample mask and the user's id travel in a
   side FIFO in spreader-acceptance order and meet the packet's ``move`` command.
3. The spreader allocates the entities on the QCCs (``spreader.spreader_qcc``: its
   adapters map requests, answers, releases and completions onto the QCCs' ports).
4. Each EU's **pixel engine** (:class:`PixelEngine`) takes the QCC's stage issues,
   completes each after the latency of its kind, and for a pixel packet's last stage
   sends the packet to the **framebuffer** (:class:`Framebuffer`), which completes that
   stage once the four rows are written (a read-modify-write per row, one row a clock).

Decisions
---------
* The CSP's state output carries LATENCY only (its order relative to draws does not
  matter: it changes timing, never the frame); everything ordered travels on the
  primitive output. Data words on the 3D and 2D outputs are unsupported. The CSP is
  ``hw.sync.csp`` with END_BATCH broadcast to every output, so that it reaches the
  primitive output even right after a state word.
* **Malformed commands** are dropped and set the sticky ``error`` (bit in ``errors``):
  an unknown opcode or group, a VERTEX outside a draw, a draw cut short by any other
  word, primitive id 0, a coordinate beyond the rasterizer's range
  (``2**(int_bits + 8)``, int_bits = log2(largest side) + 1), a FRAME with a mode the
  build lacks or inside a frame, a DRAW outside a frame. The draws before and after
  are drawn as if it had not been there.
* Stage latencies are per stage *kind* (NUMERIC, MOVE), set at elaboration
  (``latency``) and by LATENCY commands; a completion queue per kind keeps the
  completions in due order (constant latency: due times never decrease).
* After reset the spreader is configured with the minimum free records per type that
  keeps held vertex and triangle data from crowding out the pixels that free them
  (vertex 4, triangle 2, pixel 1).
* The frame is done when the parser's END was taken and everything is empty: feeder,
  draws in flight, router, its registers and the side FIFO, the spreader's move output,
  every QCC back to its full free counts, every engine and the framebuffer idle.
* **Registers between the blocks** (issue 15: the board build's routed critical paths
  ran through these handshakes): a ``hw.sync.StreamBuffer`` between the CSP and the
  parser and one after the rasterizer; the parser's ``i.ready`` is its output register
  being empty; the spreader's vertex, triangle and pixel packets come from registers
  whose valid alone the spreader's ``ready`` clears (the vertex and triangle payloads
  are wires of ``seq``; the pixel packet is loaded only while empty, at most one every
  other clock, which the spreader's three clocks per allocation never exceed). They
  change the timing only, never a block's contract or the frame.

Parameters
----------
n_eus : int
    Execution units (QCCs), 1..16. Default 4.
width, height : int
    Frame size, powers of two from 16 to 2048. Default 128 x 128.
modes : tuple of int
    MSAA sample counts the build supports (of 1, 2, 4, 8, 16). Default (1, 2, 4, 8, 16).
prid_bits : int
    Bits of a primitive id in the framebuffer, 2..16. Default 8.
records, entities, lines : int
    Every QCC's parameters. Defaults 8, 8, 16.
vdt_records, pt_records, fifo_depth : int
    The spreader's. Defaults 8, 4, 2.
latency : int
    Reset stage latency (both kinds), 0..255 clocks. Default 2.
raster_latency, raster_lanes : int
    The block rasterizer's ``latency`` (7, or 8 or 9 with an MSAA mode in ``modes``: its
    extra stages for the FPGA) and ``lanes`` per edge (16, or 4 or 8 with an MSAA mode;
    ``hw.raster.BlockRasterizer``), passed through ``hw.raster.RasterPipeline``. They
    change the rasterizer's timing and area, never its packets. Defaults 7 and 16.
input_stage : bool
    The spreader's stage L (``hw.spreader.Spreader``'s ``input_stage``, decision 28),
    passed through ``hw.spreader.SpreaderQCC``. Default True: the front end uses it,
    since the board build's routed worst path at seed 2 (``92aac52``, 71.16 MHz) ran
    from the triangle input's ``prid`` through the VDT lookups, the path stage L
    registers (issue 15). It changes the spreader's timing (a packet is inside one
    clock longer; several inputs may be taken in one clock), never the frame.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from hw import raster as raster_block
from hw import sync as sync_block
from hw.qcc import DEFAULT_PROGRAMS, DONE, ISSUE, EType as QType, Kind
from hw.spreader import CfgOp, SpreaderQCC
from hw.params import check_int, check_pow2

__all__ = ["Frontend", "FrontendBoard", "BOARD_PARAMS", "DEFAULT_COMMANDS", "CommandParser", "PixelEngine", "Framebuffer", "Group", "PrimOp",
           "StateOp", "SUBPIX", "DESIGNS"]

SUBPIX = 8                   #: fractional bits of the command coordinates (16.8)
COORD_BITS = 24
TIME_W = 16                  #: the pixel engines' clock counter


class Group:
    """Command groups (``data[30:32]``, the CSP's routing field)."""
    STATE, PRIM, D3, D2 = 0, 1, 2, 3


class PrimOp:
    """Opcodes of the primitive group (``data[26:30]``)."""
    FRAME, DRAW, VERTEX = 1, 2, 3


class StateOp:
    """Opcodes of the state group."""
    LATENCY = 1


class Rec:
    """Kinds of the parser's output records."""
    FRAME, DRAW, END = 0, 1, 2


def _log2(n):
    return n.bit_length() - 1


def _final_stage(etype):
    """``(kind, stage)`` of the last stage of a type's reset stage program."""
    program = DEFAULT_PROGRAMS[etype]
    return program[-1][0], len(program) - 1


def draw_layout(prid_bits):
    """A parser output record: FRAME (``msaa``), DRAW (``prid``, ``v``) or END."""
    return data.StructLayout({
        "kind": 2, "msaa": 3, "prid": prid_bits,
        "v": data.ArrayLayout(COORD_BITS, 6),
    })


def pixel_data_layout(prid_bits, max_samples):
    """What a pixel engine keeps per entity (and sends to the framebuffer)."""
    return data.StructLayout({
        "x": 12, "y": 12, "pixel_mask": 16, "sample_mask": 16 * max_samples,
        "prid": prid_bits,
    })


def fb_request_layout(prid_bits, max_samples, record_bits=8):
    return data.StructLayout({"pix": pixel_data_layout(prid_bits, max_samples),
                              "record": record_bits})


# ====================================================================== parser

class CommandParser(wiring.Component):
    """Primitive-group words (the CSP's output 1) -> FRAME, DRAW and END records.

    One word a clock while the output register is empty (``i.ready`` is ``~o.valid``: no
    path from ``o.ready`` to ``i.ready``); a DRAW record goes out when its sixth VERTEX is
    taken. Malformed words (module docstring) are dropped and set ``error``.
    The FRAME-inside-a-frame and DRAW-outside-a-frame rules are the top's (it knows the
    frame state); a FRAME with a mode the build lacks is dropped here.

    Attributes
    ----------
    i : stream of ``stream_word(32)``, in
    o : stream of :func:`draw_layout`, out
    error : out, sticky
    """

    def __init__(self, *, modes, prid_bits, coord_limit):
        self.modes, self.prid_bits, self.coord_limit = modes, prid_bits, coord_limit
        super().__init__({
            "i": In(stream.Signature(sync_block.stream_word(32))),
            "o": Out(stream.Signature(draw_layout(prid_bits))),
            "error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        w = self.i.payload
        d = w.data
        op = d[26:30]
        group = d[30:32]
        collecting = Signal()                   # inside a DRAW
        count = Signal(range(7))                # vertices taken
        rec = Signal.like(self.o.payload)
        bad = Signal()
        error = Signal()
        m.d.comb += self.error.eq(error)

        # A word is taken only while the output register is empty, so that ``i.ready`` is
        # a register's inverse: the consumer's ``o.ready`` (the front end's frame and
        # feeder state) never reaches the CSP's output or the parser's clock enables
        # (issue 15: that path was the front end's routed critical path). It costs a
        # clock after each record, one in seven words for a draw.
        free = ~self.o.valid
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        m.d.comb += [self.i.ready.eq(free), self.o.payload.eq(rec)]

        take = self.i.valid & free
        mode_ok = Cat(d[:3] == _log2(s) for s in self.modes).any()
        coord_ok = d[:COORD_BITS] < self.coord_limit
        prid_ok = (d[:self.prid_bits] != 0) & (d[self.prid_bits:16] == 0 if self.prid_bits < 16
                                                  else Const(1))
        end_batch = w.is_token & (d[:8] == sync_block.Token.END_BATCH)
        with m.If(take):
            with m.If(w.is_token):
                with m.If(end_batch):
                    m.d.sync += [rec.kind.eq(Rec.END), self.o.valid.eq(1), collecting.eq(0)]
                    m.d.comb += bad.eq(collecting)
            with m.Elif(group != Group.PRIM):
                m.d.comb += bad.eq(1)           # the CSP routed it here: cannot happen
            with m.Elif(op == PrimOp.VERTEX):
                with m.If(~collecting | ~coord_ok):
                    m.d.comb += bad.eq(1)
                    m.d.sync += collecting.eq(0)
                with m.Else():
                    for k in range(6):
                        with m.If(count == k):
                            m.d.sync += rec.v[k].eq(d[:COORD_BITS])
                    m.d.sync += count.eq(count + 1)
                    with m.If(count == 5):
                        m.d.sync += [rec.kind.eq(Rec.DRAW), self.o.valid.eq(1),
                                     collecting.eq(0)]
            with m.Else():
                # any other word ends a draw that is still collecting: that draw is dropped
                m.d.comb += bad.eq(collecting)
                m.d.sync += collecting.eq(0)
                with m.If(op == PrimOp.FRAME):
                    with m.If(mode_ok):
                        m.d.sync += [rec.kind.eq(Rec.FRAME), rec.msaa.eq(d[:3]),
                                     self.o.valid.eq(1)]
                    with m.Else():
                        m.d.comb += bad.eq(1)
                with m.Elif(op == PrimOp.DRAW):
                    with m.If(prid_ok):
                        m.d.sync += [collecting.eq(1), count.eq(0),
                                     rec.prid.eq(d[:self.prid_bits])]
                    with m.Else():
                        m.d.comb += bad.eq(1)
                with m.Else():
                    m.d.comb += bad.eq(1)
        with m.If(bad):
            m.d.sync += error.eq(1)
        return m


# ====================================================================== pixel engine

class PixelEngine(wiring.Component):
    """The fixed-function processors behind one QCC: they carry its stage issues out.

    Each issue (``n_issue``: NUMERIC stages, ``m_issue``: MOVE stages) is completed
    ``lat_n`` / ``lat_m`` clocks after it is taken, through a completion queue per kind
    (``records`` deep, so an issue is refused only when every record is in flight). The
    last stage of a pixel packet's program is different: it is taken only once the
    packet's data (``load``, written when the spreader's move command reaches this EU)
    is here, sends the packet to the framebuffer (``fb_req``, a one-entry register) and
    completes when the framebuffer acknowledges it (``fb_ack``), which has priority
    over the queue on that kind's completion port.

    Both sides are registered, so that no path runs through an engine from its QCC's
    issue logic back into the QCC's completion logic: each issue input goes through a
    :class:`hw.sync.StreamBuffer` (``ready`` is a register), and a completion leaves from
    a register a clock after it is due (the queue is a ``SyncFIFOBuffered``, whose
    output is a register too). Each costs a clock of latency, which changes timing only.

    Attributes
    ----------
    n_issue, m_issue : stream of ``hw.qcc.ISSUE``, in
    n_done, m_done : stream of ``hw.qcc.DONE``, out (the QCC's ``ready`` is always 1)
    load : in -- ``valid``, ``entity``, ``payload`` (:func:`pixel_data_layout`)
    fb_req : stream of :func:`fb_request_layout`, out
    fb_ack : in -- ``valid``, ``record``
    lat_n, lat_m : in, 8 bits
    idle : out -- no issue in progress
    """

    def __init__(self, *, records, entities, prid_bits, max_samples):
        self.records, self.entities = records, entities
        self.pix = pixel_data_layout(prid_bits, max_samples)
        super().__init__({
            "n_issue": In(stream.Signature(ISSUE)),
            "m_issue": In(stream.Signature(ISSUE)),
            "n_done": Out(stream.Signature(DONE)),
            "m_done": Out(stream.Signature(DONE)),
            "load": In(data.StructLayout({"valid": 1, "entity": 8, "payload": self.pix})),
            "fb_req": Out(stream.Signature(fb_request_layout(prid_bits, max_samples))),
            "fb_ack": In(data.StructLayout({"valid": 1, "record": 8})),
            "lat_n": In(8), "lat_m": In(8),
            "idle": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        E = self.entities
        now = Signal(TIME_W)
        m.d.sync += now.eq(now + 1)

        store = Memory(shape=self.pix, depth=E, init=[])
        m.submodules.store = store
        wp = store.write_port()
        rp = store.read_port(domain="comb")
        loaded = Signal(E)
        m.d.comb += [wp.addr.eq(self.load.entity), wp.data.eq(self.load.payload),
                     wp.en.eq(self.load.valid)]

        final_kind, final_stage = _final_stage(QType.PIXEL)
        set_mask = Mux(self.load.valid, 1 << self.load.entity[:max(1, _log2(E - 1) + 1)], 0)
        clear_mask = Signal(E)
        m.d.sync += loaded.eq((loaded | set_mask) & ~clear_mask)

        outstanding = Signal()                  # a framebuffer request not yet acknowledged
        req = self.fb_req
        with m.If(req.valid & req.ready):
            m.d.sync += req.valid.eq(0)

        busy = []
        for kind, name in ((Kind.NUMERIC, "n"), (Kind.MOVE, "m")):
            buffer = sync_block.StreamBuffer(ISSUE)
            m.submodules[f"issue_{name}"] = buffer
            wiring.connect(m, wiring.flipped(getattr(self, f"{name}_issue")), buffer.i)
            iss, done = buffer.o, getattr(self, f"{name}_done")
            lat = getattr(self, f"lat_{name}")
            q = SyncFIFOBuffered(width=TIME_W + 8, depth=self.records)
            m.submodules[f"queue_{name}"] = q
            due, rec = q.r_data[:TIME_W], q.r_data[TIME_W:]
            reached = ~(now - due)[TIME_W - 1]          # now - due >= 0, modulo 2**16
            ack = self.fb_ack.valid if kind == final_kind else Const(0)
            special = Const(0)
            if kind == final_kind:
                p = iss.payload
                special = (p.etype == QType.PIXEL) & (p.stage == final_stage)
                ent = p.entity[:max(1, _log2(E - 1) + 1)]
                here = (loaded >> ent)[0]
                m.d.comb += rp.addr.eq(ent)
                with m.If(special):
                    m.d.comb += iss.ready.eq(~req.valid & ~outstanding & here)
                with m.Else():
                    m.d.comb += iss.ready.eq(q.w_rdy)
                with m.If(iss.valid & iss.ready & special):
                    m.d.sync += [req.valid.eq(1), req.payload.pix.eq(rp.data),
                                 req.payload.record.eq(p.record), outstanding.eq(1)]
                    m.d.comb += clear_mask.eq(1 << ent)
                with m.If(self.fb_ack.valid):
                    m.d.sync += outstanding.eq(0)
            else:
                m.d.comb += iss.ready.eq(q.w_rdy)
            m.d.comb += [q.w_en.eq(iss.valid & iss.ready & ~special),
                         q.w_data.eq(Cat((now + lat)[:TIME_W], iss.payload.record))]
            m.d.sync += done.valid.eq(ack | (q.r_rdy & reached))
            with m.If(ack):
                m.d.sync += done.payload.record.eq(self.fb_ack.record)
            with m.Elif(q.r_rdy & reached):
                m.d.sync += done.payload.record.eq(rec)
                m.d.comb += q.r_en.eq(1)
            busy += [iss.valid, q.r_rdy, done.valid]
        m.d.comb += self.idle.eq(~Cat(busy).any() & ~req.valid & ~outstanding)
        return m


# ====================================================================== framebuffer

class Framebuffer(wiring.Component):
    """The framebuffer: per sample the highest primitive id written (module docstring).

    Requests (``req[e]``, one per pixel engine) are taken one at a time, round robin.
    A request's four span rows are read-modified-written one a clock in three stages:
    R reads the row (a synchronous read port, transparent to the write port, so a row
    written in the same clock is read new), Q registers the word read in the fabric
    (issue 15: the block RAM's read, 5.8 ns clock-to-out without its output register,
    which Yosys does not infer, no longer starts the compare; ``87e7500``'s routed
    critical path at both seeds), and W makes each covered sample ``max(old, prid)``
    and writes the word back, two clocks after its read. No read misses a write in
    flight, so no forwarding is needed: a request's four rows are four words (a span is
    four rows from a multiple of 4), and the next request's reads come five clocks
    after the same rows' reads of the one before (its choice takes a clock), so two
    reads of one word are at least five clocks apart, and the write of the first lands
    in the clock two after its read. The acknowledgement ``ack[e]`` goes out with the
    last row's write. ``clear`` (a strobe) zeroes every word, one a clock, before
    the next request is taken (a per-word frame tag would save those clocks, but a
    word that no frame wrote for a tag period would then come back). ``fb_addr`` reads
    a word (``fb_data`` one clock later) while ``idle``.
    """

    def __init__(self, *, n, width, height, modes, prid_bits):
        self.n, self.width, self.height = n, width, height
        self.modes, self.prid_bits = modes, prid_bits
        self.max_samples = max(modes)
        self.words = width * height // 4
        self.word_bits = 4 * self.max_samples * prid_bits
        req = fb_request_layout(prid_bits, self.max_samples)
        super().__init__({
            "req": In(stream.Signature(req)).array(n),
            "ack": Out(data.StructLayout({"valid": 1, "record": 8})).array(n),
            "msaa": In(3),
            "clear": In(1),
            "fb_addr": In(range(self.words)),
            "fb_data": Out(self.word_bits),
            "idle": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        S, P, B = self.max_samples, self.prid_bits, self.word_bits
        xw, aw = _log2(self.width), _log2(self.words)
        mem = Memory(shape=B, depth=self.words, init=[])
        m.submodules.mem = mem
        wp = mem.write_port()
        rp = mem.read_port(transparent_for=(wp,))
        current = rp.data
        clearing = Signal()
        clr_addr = Signal(aw)

        # --- request choice: round robin over the engines
        active = Signal()
        cur = Signal(fb_request_layout(P, S))
        eu = Signal(range(max(2, self.n)))
        row = Signal(2)
        rest = Signal(16 * S)                   # sample mask of the rows not yet read
        ptr = Signal(range(max(2, self.n)))
        grant = Signal(range(max(2, self.n)))
        any_valid = Cat(r.valid for r in self.req).any()
        # the first valid request at or after ptr, else the first from 0
        chosen_hi = Signal()
        for e in reversed(range(self.n)):
            with m.If(self.req[e].valid & (e >= ptr)):
                m.d.comb += [grant.eq(e), chosen_hi.eq(1)]
        with m.If(~chosen_hi):
            for e in reversed(range(self.n)):
                with m.If(self.req[e].valid):
                    m.d.comb += grant.eq(e)
        start = ~active & ~clearing & any_valid
        for e in range(self.n):
            m.d.comb += self.req[e].ready.eq(start & (grant == e))
        with m.If(start):
            payload = Signal.like(self.req[0].payload)
            for e in range(self.n):
                with m.If(grant == e):
                    m.d.comb += payload.eq(self.req[e].payload)
            m.d.sync += [active.eq(1), eu.eq(grant), row.eq(0), cur.eq(payload),
                         rest.eq(payload.pix.sample_mask),
                         ptr.eq(Mux(grant == self.n - 1, 0, grant + 1))]

        # --- stage R: read the row, split its sample bits per pixel and lane
        mode = Cat(self.msaa == _log2(s) for s in self.modes)
        lanes = []
        for px in range(4):
            for s in range(S):
                bit = Const(0)
                for i, n in enumerate(self.modes):
                    if s < n:
                        bit = bit | (mode[i] & rest[px * n + s])
                lanes.append(bit)
        shifted = Const(0, 16 * S)
        for i, n in enumerate(self.modes):
            shifted = shifted | Mux(mode[i], rest >> (4 * n), 0)
        q = Signal(data.StructLayout({"valid": 1, "addr": aw, "bits": 4 * S, "prid": P,
                                      "last": 1, "eu": len(eu), "record": 8}))
        r_addr = Cat(cur.pix.x[2:xw], (cur.pix.y + row)[:_log2(self.height)])
        m.d.sync += q.valid.eq(active)
        with m.If(active):
            m.d.comb += rp.addr.eq(r_addr)
            m.d.sync += [q.addr.eq(r_addr), q.bits.eq(Cat(lanes)), q.prid.eq(cur.pix.prid),
                         q.last.eq(row == 3), q.eu.eq(eu), q.record.eq(cur.record),
                         rest.eq(shifted), row.eq(row + 1)]
            with m.If(row == 3):
                m.d.sync += active.eq(0)
        with m.Else():
            m.d.comb += rp.addr.eq(self.fb_addr)

        # --- stage Q: the word read, registered; the row's fields move along
        w = Signal.like(q)
        old_word = Signal(B)
        m.d.sync += [w.eq(q), old_word.eq(current)]
        w_valid = w.valid

        # --- stage W: per sample max(old, prid) where covered, written back
        new = []
        for k in range(4 * S):
            old = old_word[k * P:(k + 1) * P]
            new.append(Mux(w.bits[k] & (w.prid > old), w.prid, old))
        with m.If(w_valid):
            m.d.comb += [wp.addr.eq(w.addr), wp.data.eq(Cat(new)), wp.en.eq(1)]
            for e in range(self.n):
                m.d.comb += [self.ack[e].valid.eq(w.last & (w.eu == e)),
                             self.ack[e].record.eq(w.record)]
        with m.Elif(clearing):
            m.d.comb += [wp.addr.eq(clr_addr), wp.data.eq(0), wp.en.eq(1)]
            m.d.sync += clr_addr.eq(clr_addr + 1)
            with m.If(clr_addr == self.words - 1):
                m.d.sync += clearing.eq(0)
        with m.If(self.clear):
            m.d.sync += [clearing.eq(1), clr_addr.eq(0)]
        m.d.comb += [self.fb_data.eq(current),
                     self.idle.eq(~active & ~q.valid & ~w_valid & ~clearing & ~any_valid)]
        return m


# ====================================================================== the front end

class Frontend(wiring.Component):
    """The integrated front end (module docstring).

    Attributes
    ----------
    i : stream of ``hw.sync.stream_word(32)``, in -- the command stream
    fb_addr : in; fb_data : out -- a framebuffer word, one clock after its address, valid
        while ``busy`` is low
    busy : out -- a frame is being cleared, drawn or drained
    done : out -- the last frame has drained (cleared by the next FRAME)
    clocks : out, 32 bits -- clocks from the last FRAME taken to its ``done``
    error : out -- sticky OR of ``errors``
    errors : out -- sticky: bit 0 CSP, 1 malformed command, 2 command out of place or of an
        unsupported group, 3 rasterizer, 4 spreader, 5 a QCC, 6 a QCC adapter
    log, err : stream, out -- the spreader's decision log and error reports; the
        spreader waits for room in them, so a user without a reader holds ``ready`` at 1
    cfg_tap, move_tap, alloc_tap, status_tap, release_tap, done_tap, in_tap : out -- what crosses
        the spreader's ports (``hw.spreader.SpreaderQCC``), for the scoreboard;
        ``in_tap`` bit s: input stream s (vertex, triangle, pixel) took a packet
        (with ``input_stage`` several may in one clock)
    """

    ERRORS = ("csp", "command", "placement", "raster", "spreader", "qcc", "adapter")

    def __init__(self, *, n_eus=4, width=128, height=128, modes=(1, 2, 4, 8, 16),
                 prid_bits=8, records=8, entities=8, lines=16, vdt_records=8, pt_records=4,
                 fifo_depth=2, latency=2, raster_latency=7, raster_lanes=16,
                 input_stage=True):
        self.n_eus = check_int("n_eus", n_eus, 1, 16)
        self.width = check_pow2("width", width, 16, 2048)
        self.height = check_pow2("height", height, 16, 2048)
        self.modes = raster_block._check_modes(modes)
        self.prid_bits = check_int("prid_bits", prid_bits, 2, 16)
        check_int("records", records, 4, 256)
        self.latency = check_int("latency", latency, 0, 255)
        self.raster_latency, self.raster_lanes = self._check_raster(raster_latency,
                                                                    raster_lanes)
        self.max_samples = max(self.modes)
        # int_bits: the frame's right and bottom edges (width.0) must be representable
        self.int_bits = max(5, _log2(max(width, height)) + 1)
        self.coord_limit = 1 << (self.int_bits + SUBPIX)
        # hw.sync.csp() with END_BATCH broadcast: it must reach the primitive output even
        # when a state word was the last data word before it (the CSP's interrupt
        # injection is csp()'s)
        T, Ev = sync_block.Token, sync_block.EventId
        self.csp = sync_block.ForkUnit(
            n_outputs=4, width=32, fifo_depth=3, broadcast=(T.END_BATCH,),
            inject={Ev.INTERRUPT: ((T.EVENT_END, Ev.DMA), (T.EVENT_END, Ev.CONTEXT),
                                   (T.EVENT_END, Ev.INTERRUPT))})
        self.parser = CommandParser(modes=self.modes, prid_bits=prid_bits,
                                    coord_limit=self.coord_limit)
        self.raster = raster_block.RasterPipeline(edges=3, modes=self.modes, subpix=SUBPIX,
                                                  int_bits=self.int_bits, tag_bits=1, packets=1,
                                                  latency=self.raster_latency,
                                                  lanes=self.raster_lanes)
        self.sq = SpreaderQCC(n_eus=n_eus, records=records, entities=entities, lines=lines,
                              vdt_records=vdt_records, pt_records=pt_records,
                              fifo_depth=fifo_depth, input_stage=input_stage)
        self.records, self.entities, self.lines = records, entities, lines
        self.engines = [PixelEngine(records=records, entities=entities, prid_bits=prid_bits,
                                    max_samples=self.max_samples) for _ in range(n_eus)]
        self.fb = Framebuffer(n=n_eus, width=width, height=height, modes=self.modes,
                              prid_bits=prid_bits)
        L = self.sq.lay
        tap = self.sq.signature.members
        super().__init__({
            "i": In(stream.Signature(sync_block.stream_word(32))),
            "fb_addr": In(range(self.fb.words)),
            "fb_data": Out(self.fb.word_bits),
            "busy": Out(1), "done": Out(1), "clocks": Out(32),
            "error": Out(1), "errors": Out(len(self.ERRORS)),
            "log": Out(stream.Signature(L["log"])),
            "err": Out(stream.Signature(L["err"])),
            "cfg_tap": Out(data.StructLayout({"valid": 1, "payload": L["cfg"]})),
            "move_tap": Out(data.StructLayout({"valid": 1, "payload": L["move"]})),
            "alloc_tap": tap["alloc_tap"],
            "status_tap": tap["status_tap"],
            "release_tap": tap["release_tap"],
            "done_tap": tap["done_tap"],
            "in_tap": Out(3),
        })

    def _check_raster(self, latency, lanes):
        """``raster_latency`` 7..9 and ``raster_lanes`` 4, 8 or 16, the values other than
        7 and 16 only with an MSAA mode (the block rasterizer's rules, named here by the
        front end's parameters)."""
        check_int("raster_latency", latency, 7, 9)
        check_pow2("raster_lanes", lanes, 4, raster_block.LANES)
        if max(self.modes) == 1:
            if latency != 7:
                raise ValueError(f"raster_latency must be 7 in a build without an MSAA "
                                 f"mode, not {latency}")
            if lanes != raster_block.LANES:
                raise ValueError(f"raster_lanes must be 16 in a build without an MSAA "
                                 f"mode, not {lanes}")
        return latency, lanes

    def elaborate(self, platform):
        m = Module()
        N, P, S = self.n_eus, self.prid_bits, self.max_samples
        m.submodules.csp = csp = self.csp
        m.submodules.parser = parser = self.parser
        m.submodules.raster = raster = self.raster
        m.submodules.sq = sq = self.sq
        m.submodules.fb = fb = self.fb
        for e, eng in enumerate(self.engines):
            m.submodules[f"engine{e}"] = eng

        placement_error = Signal()
        lat_n = Signal(8, init=self.latency)
        lat_m = Signal(8, init=self.latency)

        # ---- command stream: CSP; state output -> LATENCY; 3D and 2D unsupported
        wiring.connect(m, wiring.flipped(self.i), csp.i[0])
        # a register stage between the CSP's output buffer and the parser (issue 15: the
        # two are far apart on the die; both sides of the handshake are registers here)
        m.submodules.cmd_buf = cmd_buf = sync_block.StreamBuffer(sync_block.stream_word(32))
        wiring.connect(m, csp.o[Group.PRIM], cmd_buf.i)
        wiring.connect(m, cmd_buf.o, parser.i)
        for g in (Group.STATE, Group.D3, Group.D2):
            o = csp.o[g]
            m.d.comb += o.ready.eq(1)
            with m.If(o.valid & ~o.payload.is_token):
                d = o.payload.data
                with m.If((g == Group.STATE) & (d[26:30] == StateOp.LATENCY)):
                    m.d.sync += [lat_n.eq(d[:8]), lat_m.eq(d[8:16])]
                with m.Else():
                    m.d.sync += placement_error.eq(1)

        # ---- frame control
        msaa = Signal(3)
        seq = Signal(16)
        clocks = Signal(32)
        frame_done = Signal()
        rec = parser.o.payload
        with m.FSM(name="frame") as frame:
            feeder_idle = Signal()
            with m.State("NONE"):
                m.d.comb += parser.o.ready.eq(1)
                with m.If(parser.o.valid):
                    with m.If(rec.kind == Rec.FRAME):
                        m.d.comb += fb.clear.eq(1)
                        m.d.sync += [msaa.eq(rec.msaa), clocks.eq(0), frame_done.eq(0)]
                        m.next = "CLEAR"
                    with m.Elif(rec.kind == Rec.DRAW):
                        m.d.sync += placement_error.eq(1)
            with m.State("CLEAR"):
                m.d.sync += clocks.eq(clocks + 1)
                with m.If(fb.idle):
                    m.next = "RUN"
            with m.State("RUN"):
                m.d.sync += clocks.eq(clocks + 1)
                with m.If(parser.o.valid & (rec.kind == Rec.FRAME)):
                    m.d.comb += parser.o.ready.eq(1)
                    m.d.sync += placement_error.eq(1)
                with m.Elif(parser.o.valid & (rec.kind == Rec.END) & feeder_idle):
                    m.d.comb += parser.o.ready.eq(1)
                    m.next = "DRAIN"
            with m.State("DRAIN"):
                m.d.sync += clocks.eq(clocks + 1)
                drained = Signal()
                with m.If(drained):
                    m.d.sync += frame_done.eq(1)
                    m.next = "NONE"
        m.d.comb += [self.busy.eq(~frame.ongoing("NONE")), self.done.eq(frame_done),
                     self.clocks.eq(clocks)]

        # ---- feeder: vertex packet, triangle packet, primitive, flush primitive
        pending = SyncFIFO(width=16 + P, depth=8)          # draws in the rasterizer
        m.submodules.pending = pending
        draw = Signal.like(rec)
        base = Cat(Const(0, 3), seq[:13])
        # The vertex and triangle packets are offered from registers (issue 15): a valid
        # flip-flop each, which the spreader's input ``ready`` (its answer and arbiter,
        # deep) clears and nothing else reads in that clock, and payloads that are wires
        # of ``seq`` (it changes only after the triangle was taken). The spreader must
        # have taken the vertex packet before the triangle packet is offered (its
        # arbiter could take the triangle first), and the triangle before the rasterizer
        # gets the primitive (its pixel packets name the triangle): each step waits for
        # the valid before it to clear.
        vtx, tri, prim = sq.i_vtx, sq.i_tri, raster.i
        m.d.comb += [vtx.payload.base.eq(base), vtx.payload.count.eq(3),
                     vtx.payload.size.eq(1),
                     tri.payload.prid.eq(seq), tri.payload.i0.eq(base),
                     tri.payload.i1.eq(base | 1), tri.payload.i2.eq(base | 2),
                     tri.payload.size.eq(1), tri.payload.last.eq(0b111)]
        for packet in (vtx, tri):
            with m.If(packet.ready):
                m.d.sync += packet.valid.eq(0)
        with m.FSM(name="feeder") as feeder:
            with m.State("IDLE"):
                m.d.comb += feeder_idle.eq(1)
                with m.If(frame.ongoing("RUN") & parser.o.valid & (rec.kind == Rec.DRAW)
                          & pending.w_rdy):
                    m.d.comb += parser.o.ready.eq(1)
                    m.d.sync += [draw.eq(rec), vtx.valid.eq(1)]
                    m.next = "TRIANGLE"
            with m.State("TRIANGLE"):
                with m.If(~vtx.valid):
                    m.d.sync += tri.valid.eq(1)
                    m.next = "PRIMITIVE"
            with m.State("PRIMITIVE"):
                m.d.comb += prim.valid.eq(~tri.valid)
                for j in range(3):
                    m.d.comb += [prim.payload.v[j].x.eq(draw.v[2 * j]),
                                 prim.payload.v[j].y.eq(draw.v[2 * j + 1])]
                self._primitive(m, prim.payload, msaa, 0, (self.width, self.height))
                m.d.comb += [pending.w_en.eq(prim.valid & prim.ready),
                             pending.w_data.eq(Cat(seq, draw.prid))]
                with m.If(prim.valid & prim.ready):
                    m.next = "FLUSH"
            with m.State("FLUSH"):
                m.d.comb += prim.valid.eq(1)
                corner = 4 << SUBPIX
                for j, (x, y) in enumerate(((0, 0), (corner, 0), (0, corner))):
                    m.d.comb += [prim.payload.v[j].x.eq(x), prim.payload.v[j].y.eq(y)]
                self._primitive(m, prim.payload, msaa, 1, (1, 1))
                with m.If(prim.ready):
                    m.d.sync += seq.eq(seq + 1)
                    m.next = "IDLE"

        # ---- pixel router: packets -> the spreader's pixel packets (+ side data)
        L = sq.lay
        # The rasterizer's words go through a register stage (its ``o.ready`` a register:
        # the router's room -- the pending FIFO's level, the side FIFO's -- stays out of
        # the packer's ``free`` and the block rasterizer's flow copies, issue 15). The
        # spreader's pixel packet is a register loaded only while empty: its payload
        # comes from flip-flops and the spreader's input ``ready`` clears its valid
        # alone (issue 15). One packet every other clock at most; the spreader takes
        # one every three clocks at most (an allocation's request, response, answer).
        raster_out = sync_block.StreamBuffer(raster.o.payload.shape())
        pix = sq.i_pix
        with m.If(pix.ready):
            m.d.sync += pix.valid.eq(0)
        side = SyncFIFO(width=P + 16 * S, depth=sq.spreader_params["fifo_depth"] + 4)
        m.submodules.raster_out, m.submodules.side = raster_out, side
        wiring.connect(m, raster.o, raster_out.i)
        word = raster_out.o.payload
        pk = word.packet[0]
        flush = pk.prim[0]
        head_seq, head_prid = pending.r_data[:16], pending.r_data[16:]
        room = pending.r_rdy & ~pix.valid & (flush | side.w_rdy)
        move_on = raster_out.o.valid & room
        out = pix.payload
        with m.If(move_on):
            m.d.sync += [pix.valid.eq(1), out.prid.eq(head_seq),
                         out.x.eq(Cat(Const(0, 2), pk.span[:2], pk.bx)),
                         out.y.eq(Cat(Const(0, 2), pk.span[2:], pk.by)),
                         out.mask.eq(Mux(flush, 0, pk.pixel_mask)), out.last.eq(flush),
                         out.size.eq(~flush)]
        m.d.comb += [raster_out.o.ready.eq(room), pending.r_en.eq(move_on & flush),
                     side.w_en.eq(move_on & ~flush),
                     side.w_data.eq(Cat(head_prid, pk.sample_mask))]
        m.d.comb += sq.i_pat.valid.eq(0)

        # ---- move router: a pixel packet's move meets its side data at its EU
        mv = sq.move
        is_pix = mv.payload.etype == QType.PIXEL
        m.d.comb += [mv.ready.eq(~is_pix | side.r_rdy), side.r_en.eq(mv.valid & is_pix),
                     self.move_tap.valid.eq(mv.valid & mv.ready),
                     self.move_tap.payload.eq(mv.payload)]
        for e, eng in enumerate(self.engines):
            ld = eng.load
            m.d.comb += [ld.valid.eq(mv.valid & is_pix & side.r_rdy & (mv.payload.eu == e)),
                         ld.entity.eq(mv.payload.entity),
                         ld.payload.x.eq(mv.payload.x), ld.payload.y.eq(mv.payload.y),
                         ld.payload.pixel_mask.eq(mv.payload.mask),
                         ld.payload.prid.eq(side.r_data[:P]),
                         ld.payload.sample_mask.eq(side.r_data[P:])]
            for k in ("n_issue", "m_issue"):
                wiring.connect(m, getattr(sq, k)[e], getattr(eng, k))
            for k in ("n_done", "m_done"):
                wiring.connect(m, getattr(eng, k), getattr(sq, k)[e])
            wiring.connect(m, eng.fb_req, fb.req[e])
            m.d.comb += [eng.fb_ack.eq(fb.ack[e]), eng.lat_n.eq(lat_n), eng.lat_m.eq(lat_m)]
        m.d.comb += [fb.msaa.eq(msaa), fb.fb_addr.eq(self.fb_addr),
                     self.fb_data.eq(fb.fb_data)]

        # ---- spreader configuration after reset, log and taps
        minima = ((QType.VERTEX, 4), (QType.TRIANGLE, 2), (QType.PIXEL, 1))
        cfg_step = Signal(range(len(minima) + 1))
        cfg = sq.cfg
        for k, (etype, records) in enumerate(minima):
            with m.If(cfg_step == k):
                m.d.comb += [cfg.valid.eq(1), cfg.payload.op.eq(CfgOp.MIN),
                             cfg.payload.etype.eq(etype), cfg.payload.records.eq(records),
                             cfg.payload.lines.eq(1)]
        with m.If(cfg.valid & cfg.ready):
            m.d.sync += cfg_step.eq(cfg_step + 1)
        m.d.comb += [self.cfg_tap.valid.eq(cfg.valid & cfg.ready),
                     self.cfg_tap.payload.eq(cfg.payload)]
        wiring.connect(m, sq.log, wiring.flipped(self.log))
        wiring.connect(m, sq.err, wiring.flipped(self.err))
        for e in range(N):
            m.d.comb += [self.alloc_tap[e].eq(sq.alloc_tap[e]),
                         self.status_tap[e].eq(sq.status_tap[e])]
        m.d.comb += [self.release_tap.eq(sq.release_tap), self.done_tap.eq(sq.done_tap),
                     self.in_tap.eq(Cat(p.valid & p.ready for p in (sq.i_vtx, sq.i_tri,
                                                                    sq.i_pix)))]

        # ---- drained and errors
        full = Cat((st.free_records == self.records) & (st.free_entities == self.entities)
                   & (st.free_lines == self.lines) for st in sq.status_tap)
        # a register (issue 15): its inputs come from all over the die (the QCCs' status
        # through the adapters, the engines, the framebuffer), the frame's state and
        # enables stay near the parser; ``done`` rises a clock later. Nothing starts
        # while the frame drains, so the value of the clock before still holds.
        m.d.sync += drained.eq(feeder_idle & ~pending.r_rdy & ~pix.valid & ~side.r_rdy
                               & ~vtx.valid & ~tri.valid
                               & ~mv.valid & ~raster.o.valid & ~raster_out.o.valid
                               & full.all()
                               & Cat(eng.idle for eng in self.engines).all() & fb.idle)
        errs = Cat(csp.error, parser.error, placement_error, raster.error, sq.error,
                   sq.qcc_error.any(), sq.adapter_error)
        m.d.comb += [self.errors.eq(errs), self.error.eq(errs.any())]
        return m

    def _primitive(self, m, p, msaa, tag, size):
        """The rasterizer's fields of a primitive besides its vertices."""
        m.d.comb += [p.n_verts.eq(3), p.prim.eq(tag), p.msaa.eq(msaa),
                     p.scissor.left.eq(0), p.scissor.top.eq(0),
                     p.scissor.right.eq(size[0]), p.scissor.bottom.eq(size[1])]


#: The board build's parameters (``make synth``, ``make bitstream``): two EUs, a 64x64
#: frame at 4x MSAA, the small tables of the tests, the block rasterizer's FPGA
#: build (latency 9, 8 lanes per edge: issue 16's faster and smaller setting) and the
#: spreader's stage L (issue 15).
BOARD_PARAMS = {"n_eus": 2, "width": 64, "height": 64, "modes": (4,), "prid_bits": 8,
                "records": 8, "entities": 8, "lines": 16, "vdt_records": 8, "pt_records": 4,
                "fifo_depth": 2, "latency": 2, "raster_latency": 9, "raster_lanes": 8,
                "input_stage": True}

# ====================================================================== the board top

def _cmd(group, op, value):
    """A command word (``is_token`` in bit 0), as the module docstring's table."""
    return ((group << 30) | (op << 26) | value) << 1


#: The board top's default command stream when none is given: one 4x frame with two
#: triangles over a 64x64 frame (``make bitstream`` passes the default scene instead).
DEFAULT_COMMANDS = tuple(
    [_cmd(Group.PRIM, PrimOp.FRAME, 2)]
    + [_cmd(Group.PRIM, PrimOp.DRAW, 1)]
    + [_cmd(Group.PRIM, PrimOp.VERTEX, c << SUBPIX) for c in (2, 2, 60, 10, 12, 58)]
    + [_cmd(Group.PRIM, PrimOp.DRAW, 2)]
    + [_cmd(Group.PRIM, PrimOp.VERTEX, c << SUBPIX) for c in (0, 30, 63, 20, 40, 63)]
    + [(sync_block.Token.END_BATCH << 1) | 1])


def _crc32_byte(crc, byte):
    """CRC-32 (IEEE 802.3, reflected) of ``crc`` after one more byte, as logic: each
    output bit is the XOR of the input bits that the eight shift steps fold into it
    (worked out here on bit masks, so the logic is one XOR tree per bit)."""
    # state bits as masks over the 40 inputs: crc bits 0-31, byte bits 32-39
    state = [(1 << i) | ((1 << (32 + i)) if i < 8 else 0) for i in range(32)]
    for _ in range(8):
        low = state[0]
        state = state[1:] + [0]
        state = [v ^ (low if 0xEDB88320 >> i & 1 else 0) for i, v in enumerate(state)]
    inputs = Cat(crc, byte)
    return Cat(_xor_of(inputs, mask) for mask in state)


def _xor_of(bits, mask):
    terms = [bits[i] for i in range(len(bits)) if mask >> i & 1]
    value = terms[0]
    for t in terms[1:]:
        value = value ^ t
    return value


class FrontendBoard(wiring.Component):
    """The front end on a board: the scene in a ROM, the result over a UART.

    At reset (``autostart``) and at each rising edge of ``button`` while idle, the
    command words of ``commands`` go into a :class:`Frontend`. When its frame is done,
    the framebuffer is read word by word and its CRC-32 computed over the words' bytes
    (little endian, ``ceil(word_bits / 8)`` bytes a word, in address order:
    ``golden.frontend.checksum``), and one line goes out on ``uart_tx`` (8N1, ``divisor``
    clocks a bit)::

        fresco crc=1a2b3c4d clocks=00001234 errors=00

    (lower-case hex: the CRC, the frame's clocks from FRAME to done, ``errors``).
    ``leds``: 0 busy (drawing or reading back), 1 done, 2 error, 3 a heartbeat.

    Parameters
    ----------
    commands : tuple of int
        The command words (``is_token`` in bit 0); default :data:`DEFAULT_COMMANDS`.
    divisor : int
        Clocks per UART bit, 2..65535. Default 217 (115200 baud at 25 MHz).
    autostart : bool
        Draw once after reset. Default True.
    frontend : dict or None
        :class:`Frontend`'s parameters over :data:`BOARD_PARAMS`.
    """

    def __init__(self, *, commands=DEFAULT_COMMANDS, divisor=217, autostart=True,
                 frontend=None):
        if not isinstance(commands, (tuple, list)) or not commands:
            raise TypeError(f"commands must be a non-empty tuple of command words, "
                            f"not {commands!r}")
        for w in commands:
            check_int("commands[i]", w, 0, (1 << 33) - 1)
        self.commands = tuple(commands)
        self.divisor = check_int("divisor", divisor, 2, 65535)
        if not isinstance(autostart, bool):
            raise TypeError(f"autostart must be a bool, not {autostart!r}")
        self.autostart = autostart
        if frontend is not None and not isinstance(frontend, dict):
            raise TypeError(f"frontend must be a dict of Frontend parameters, not {frontend!r}")
        params = {**BOARD_PARAMS, **(frontend or {})}
        params["modes"] = tuple(params["modes"])
        self.frontend = Frontend(**params)
        super().__init__({"button": In(1), "uart_tx": Out(1, init=1), "leds": Out(4)})

    MESSAGE = ("fresco crc=", ("crc", 8), " clocks=", ("clocks", 8), " errors=",
               ("errors", 2), "\r\n")

    def elaborate(self, platform):
        m = Module()
        m.submodules.frontend = fe = self.frontend
        rom = Memory(shape=33, depth=len(self.commands), init=self.commands)
        m.submodules.rom = rom
        rd = rom.read_port(domain="comb")
        n_words, nbytes = fe.fb.words, (fe.fb.word_bits + 7) // 8

        idx = Signal(range(len(self.commands) + 1))
        addr = Signal(range(n_words + 1))
        word = Signal(nbytes * 8)
        byte_no = Signal(range(nbytes + 1))
        crc = Signal(32)
        result = Signal(data.StructLayout({"errors": 8, "clocks": 32, "crc": 32}))
        pressed = Signal()
        button_d = Signal()
        m.d.sync += button_d.eq(self.button)
        m.d.comb += pressed.eq(self.button & ~button_d)
        char_ix, char = Signal(range(64)), Signal(8)
        tx_go, tx_busy = Signal(), Signal()

        m.d.comb += [rd.addr.eq(idx), fe.i.payload.eq(rd.data), fe.fb_addr.eq(addr),
                     fe.log.ready.eq(1), fe.err.ready.eq(1)]   # unused: never stall them
        with m.FSM(name="board", init="START" if self.autostart else "IDLE") as fsm:
            with m.State("IDLE"):
                with m.If(pressed):
                    m.next = "START"
            with m.State("START"):
                m.d.sync += idx.eq(0)
                m.next = "SEND"
            with m.State("SEND"):
                m.d.comb += fe.i.valid.eq(1)
                with m.If(fe.i.ready):
                    m.d.sync += idx.eq(idx + 1)
                    with m.If(idx == len(self.commands) - 1):
                        m.next = "WAIT_BUSY"
            with m.State("WAIT_BUSY"):
                with m.If(fe.busy):
                    m.next = "WAIT_DONE"
            with m.State("WAIT_DONE"):
                with m.If(~fe.busy):
                    m.d.sync += [addr.eq(0), crc.eq(0xFFFFFFFF)]
                    m.next = "ADDRESS"
            with m.State("ADDRESS"):                # fb_addr = addr this clock
                m.next = "LATCH"
            with m.State("LATCH"):
                m.d.sync += [word.eq(fe.fb_data), byte_no.eq(0), addr.eq(addr + 1)]
                m.next = "CRC"
            with m.State("CRC"):
                m.d.sync += [crc.eq(_crc32_byte(crc, word[:8])), word.eq(word >> 8),
                             byte_no.eq(byte_no + 1)]
                with m.If(byte_no == nbytes - 1):
                    with m.If(addr == n_words):
                        m.next = "RESULT"
                    with m.Else():
                        m.next = "ADDRESS"
            with m.State("RESULT"):
                m.d.sync += [result.crc.eq(~crc), result.clocks.eq(fe.clocks),
                             result.errors.eq(fe.errors), char_ix.eq(0)]
                m.next = "TX"
            with m.State("TX"):
                m.d.comb += tx_go.eq(~tx_busy)
                with m.If(~tx_busy):
                    m.d.sync += char_ix.eq(char_ix + 1)
                    with m.If(char_ix == self._message_length() - 1):
                        m.next = "IDLE"
        self._characters(m, char_ix, char, result)
        self._uart(m, tx_go, char, tx_busy)
        beat = Signal(24)
        m.d.sync += beat.eq(beat + 1)
        reading = ~fsm.ongoing("IDLE") & ~fsm.ongoing("TX")
        m.d.comb += self.leds.eq(Cat(fe.busy | reading, fe.done, fe.error, beat[-1]))
        return m

    def _message_length(self):
        return sum(len(p) if isinstance(p, str) else p[1] for p in self.MESSAGE)

    def _characters(self, m, index, char, result):
        """``char`` = character ``index`` of :attr:`MESSAGE` (hex digits of ``result``)."""
        k = 0
        with m.Switch(index):
            for part in self.MESSAGE:
                if isinstance(part, str):
                    for c in part:
                        with m.Case(k):
                            m.d.comb += char.eq(ord(c))
                        k += 1
                    continue
                field, digits = part
                value = result[field]
                for d in range(digits):
                    nib = value[4 * (digits - 1 - d):4 * (digits - d)]
                    with m.Case(k):
                        m.d.comb += char.eq(Mux(nib < 10, nib + ord("0"), nib + ord("a") - 10))
                    k += 1

    def _uart(self, m, go, char, busy):
        """8N1 transmitter: ``go`` with ``~busy`` sends ``char``."""
        shift = Signal(10)
        bits = Signal(range(11))
        count = Signal(range(self.divisor))
        m.d.comb += busy.eq(bits != 0)
        with m.If(go & ~busy):
            m.d.sync += [shift.eq(Cat(Const(0, 1), char, Const(1, 1))), bits.eq(10),
                         count.eq(self.divisor - 1)]
        with m.Elif(busy):
            with m.If(count == 0):
                m.d.sync += [shift.eq(shift >> 1), bits.eq(bits - 1),
                             count.eq(self.divisor - 1)]
            with m.Else():
                m.d.sync += count.eq(count - 1)
        m.d.comb += self.uart_tx.eq(Mux(busy, shift[0], 1))


#: Designs of this block that ``python -m hw.gen`` builds, by name.
DESIGNS = {"frontend": Frontend, "board": FrontendBoard}
