"""The global spreader (spec ``spreader.md``; issue 5): RTL of the contract in the module
docstring of ``golden/spreader.py``, which it follows clock by clock.

Ports (defaults: ``N = n_eus`` 4, widths of the golden model's :meth:`layout`)
------------------------------------------------------------------------------
``i_vtx``, ``i_tri``, ``i_pix``, ``i_pat`` (stream in), ``cfg`` and ``done`` (stream in,
``ready`` = 1), ``status[e]`` (plain in, ``status__<e>``), ``alloc[e]`` (stream out,
``alloc__<e>__valid`` ...) with the answer ``accept[e]``/``entity[e]`` (plain in, sampled
on the ``alloc[e]`` transfer), ``move``, ``release``, ``log``, ``err`` (stream out, each
behind a ``fifo_depth`` FIFO), ``error`` and ``lost`` (sticky flags). Field order and widths
are those of ``golden.spreader.Spreader.layout``.

Figures (measured 2026-11-22)
-----------------------------
``make bench`` (Verilator, 4 EUs, 32/128 records, EUs answering in the request's clock):
triangle-only stream 1.0 allocation per clock when every first candidate accepts,
0.72-0.77 with 30 % refusals (one extra clock per refusal; the refusals are random);
mixed stream 1.0 packet per clock. Load balance and locality on the ``mesh`` scene
(64x64, 32 triangles, 475 packets; means over three fixed EU seeds) are in README.md:
the priority lists fill the first EUs of the list first, so the balance is poor (up to
one EU with no allocation) unless the driver configures lists that differ per type.
ECP5-85F, 4 EUs, 32/32 records: 19,224 LUT4 (CCU2C counted as 2), 4,530 FF,
198 DPR16X4, Fmax 20 MHz after routing -- the combinational front end of decision 1
(critical path: anti-starvation compare, arbitration, the candidate list's sort, the
status scan, the answer multiplexer, the table and FIFO writes; 11 ns logic, 39 ns
routing). 8 EUs, 32/32 records: 29,424 LUT4, 5,634 FF, 326 DPR16X4, Fmax 14.9 MHz
(43 minutes of synthesis and routing on the shared 2-core machine).

Decisions
---------
1. The golden model's timing contract is kept as it is: a pass starts in the clock its
   packet is arbitrated, the checks, VDT/PT lookups, candidate list, minimum and the
   status scan are combinational from the input payload and the state, and the answer of
   the EU (which rides on the ``alloc[e]`` transfer) gives the input's ``ready`` in the
   same clock. So there is a combinational path from ``alloc[e].ready``/``accept[e]`` to
   the input ``ready``\\s. It is allowed here because it is the contract (one allocation
   per clock when the first candidate accepts) and it cannot loop: an EU's ``ready`` and
   answer must not depend on the spreader's input ``ready``\\s. Everything after the
   answer (tables, log, move command) is registered. The long path limits Fmax; a
   registered front end would cost one clock per allocation and a contract change.
2. Tables are registers (the release engine scans every record each clock, the lookups
   are random access): the VDT and the primitive table cost flip-flops in proportion to
   ``vdt_records`` and ``pt_records``; use small tables where 256 are not needed. At
   the defaults (256 and 256) the Verilog is large (87 MB, about 1.5 minutes to
   generate); the tests use 4-16 records, the benchmarks 32/128, synthesis 32/32.
3. The in-flight table ``(eu, entity) -> (type, record)`` is a memory of ``N*256`` words
   with one write port (written on accept) and two asynchronous read ports (the answer
   check and the completion), plus ``N*256`` valid flip-flops (set on accept, cleared on
   completion, both possible in one clock at different addresses).
4. Two points where the golden model disagreed with its own contract were changed in
   ``golden/spreader.py`` (its unit tests still pass): the error FIFO's room is now
   taken from ``S_t`` like every other push (rule 8; the model had looked after that
   clock's pop, which a plain synchronous FIFO cannot do), and the :class:`Scoreboard`
   starts a new pass also when a request does not start in the clock after the previous
   answer (a pass that ended with no candidate meeting the minimum was otherwise merged
   with the next one, wrongly mixing their refusals). Later the :class:`Scoreboard`
   was made to keep a pass's candidate list and minimum for the whole pass, as the model
   and the RTL do: a configuration word taken mid-pass had made it start a new pass and
   fail a correct run (``dedicated_eus``, seed 870733251).
5. Known difference, not tested: a patch in the very last group of the index space
   (``base >> 3 == 2**(index_bits-3) - 1``) stores its second half with a tag that the
   model keeps one bit wider; the RTL truncates it. The producer contract never sends
   such a patch (its second group would wrap to index 0).
6. Candidate lists are a stable sort of the type's priority list by how many of the
   packet's referenced data each EU holds (triangle: vertices, pixel: its triangle), which
   is the model's "local EUs by count, ties in list order, then the rest of the list".
7. :class:`SpreaderQCC` is the co-simulation design with real QCCs (``hw/qcc.py``): its
   docstring says how requests, answers, releases, completions and status map onto the
   QCC's commands, responses, issues and status. Each allocation request there costs
   two clocks per tried EU (the QCC answers one clock after its command), and no ALLOC
   goes to an EU while one of its entity completions waits to reach the spreader, because
   the QCC reuses the number of an entity without ``hold`` in the clock after its last
   stage completes (the spreader would see an answer naming an entity still in flight).
8. Fmax was not improved: the spreader's contract (one allocation per clock, answer in
   the request's clock) makes arbitration, lookups, candidate list, scan and commit one
   combinational clock. Computing each stream's sorted candidate list in parallel with
   the arbitration (and choosing by the winner afterwards) and registering the
   anti-starvation flags would keep the behaviour clock for clock but shortens only the
   head of the path; a real gain needs a pipeline register between the candidate list
   and the scan (one more clock per pass, or a look-ahead evaluation of the next head)
   and the golden model's timing changed to match.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["Spreader", "SpreaderQCC", "DESIGNS"]

MAX_EUS, GROUP = 16, 8
EU_W, ENTITY_W, SEQ_W, SIZE_W, ELEM_W, CODE_W = 4, 8, 16, 4, 4, 4
VTX, TRI, PIX, PAT = 0, 1, 2, 3
PRIORITY = (PIX, TRI, VTX, PAT)
SAT = 255
# error codes (golden.spreader.Err) and sources
MALFORMED, TOO_LARGE, NO_EU, UNKNOWN_VERTEX, UNKNOWN_PRID = 1, 2, 3, 4, 5
UNKNOWN_DONE, BAD_CONFIG, BAD_ANSWER = 6, 7, 8
SRC_CONFIG, SRC_DONE, SRC_ANSWER = 4, 5, 6
K_ALLOC, K_CLOSE, K_ERROR = 0, 1, 2
REF_NONE, REF_LOCAL, REF_GLOBAL = 0, 1, 2


def _check_int(name, value, lo, hi):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer from {lo} to {hi}, not {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be an integer from {lo} to {hi}, not {value!r}")
    return value


def _check_pow2(name, value, lo, hi):
    _check_int(name, value, lo, hi)
    if value & (value - 1):
        raise ValueError(f"{name} must be a power of two from {lo} to {hi}, not {value!r}")
    return value


class Spreader(wiring.Component):
    """The global spreader.

    Parameters
    ----------
    n_eus : int
        Execution units, 1..16. Default 4.
    vdt_records : int
        Vertex descriptor table records, a power of two 2..256. Default 256.
    pt_records : int
        Primitive table records, a power of two 1..256. Default 256.
    index_bits : int
        Vertex index width, ``3 + log2(vdt_records)`` .. 32. Default 16.
    prid_bits : int
        Primitive id width, ``max(1, log2(pt_records))`` .. 32. Default 16.
    coord_bits : int
        Pixel coordinate width, 4..16. Default 12.
    max_lines : int
        Largest buffer of one entity, 1 .. ``min(15, eu_lines)``. Default 8.
    eu_records : int
        Records of an EU (status width, MIN check), 1..256. Default 256.
    eu_lines : int
        Cache lines of an EU (status width, MIN check), 1..65536. Default 256.
    starve_limit : int
        Reset value of the anti-starvation limit, 0..255 (0 = off). Default 8.
    fifo_depth : int
        Depth of the ``move``, ``log``, ``release`` and ``err`` FIFOs, 1..64. Default 4.

    Raises
    ------
    TypeError, ValueError
        On a parameter out of range, naming it.
    """

    def __init__(self, *, n_eus=4, vdt_records=256, pt_records=256, index_bits=16,
                 prid_bits=16, coord_bits=12, max_lines=8, eu_records=256, eu_lines=256,
                 starve_limit=8, fifo_depth=4):
        self.n_eus = _check_int("n_eus", n_eus, 1, MAX_EUS)
        self.vdt_records = _check_pow2("vdt_records", vdt_records, 2, 256)
        self.pt_records = _check_pow2("pt_records", pt_records, 1, 256)
        self.vbits = vdt_records.bit_length() - 1
        self.pbits = pt_records.bit_length() - 1
        self.index_bits = _check_int("index_bits", index_bits, 3 + self.vbits, 32)
        self.prid_bits = _check_int("prid_bits", prid_bits, max(1, self.pbits), 32)
        self.coord_bits = _check_int("coord_bits", coord_bits, 4, 16)
        self.eu_records = _check_int("eu_records", eu_records, 1, 256)
        self.eu_lines = _check_int("eu_lines", eu_lines, 1, 65536)
        self.max_lines = _check_int("max_lines", max_lines, 1, min(15, eu_lines))
        self.starve_limit = _check_int("starve_limit", starve_limit, 0, SAT)
        self.fifo_depth = _check_int("fifo_depth", fifo_depth, 1, 64)
        I, R, C = index_bits, prid_bits, coord_bits
        SR, SL = eu_records.bit_length(), eu_lines.bit_length()
        D = max(I, R, 12)
        self.sr, self.sl, self.d = SR, SL, D
        self.lay = {
            "i_vtx": data.StructLayout({"base": I, "count": 4, "size": SIZE_W, "noref": 1}),
            "i_tri": data.StructLayout({"prid": R, "i0": I, "i1": I, "i2": I,
                                        "size": SIZE_W, "last": 3}),
            "i_pix": data.StructLayout({"prid": R, "x": C, "y": C, "mask": 16, "last": 1,
                                        "size": SIZE_W}),
            "i_pat": data.StructLayout({"base": I, "size": SIZE_W, "noref": 1}),
            "cfg": data.StructLayout({"op": 2, "etype": 2, "count": 5, "eus": 4 * MAX_EUS,
                                      "records": SR, "lines": SL, "limit": 8}),
            "done": data.StructLayout({"eu": EU_W, "entity": ENTITY_W}),
            "status": data.StructLayout({"free_records": SR, "free_entities": 9,
                                         "free_lines": SL}),
            "alloc": data.StructLayout({"etype": 2, "lines": SIZE_W, "hold": 1,
                                        "seq": SEQ_W}),
            "move": data.StructLayout(
                {"eu": EU_W, "entity": ENTITY_W, "etype": 2, "seq": SEQ_W, "size": SIZE_W,
                 "ref": 2, "index": D, "count": 5}
                | {f"src{i}_{n}": w for i in range(3)
                   for n, w in (("eu", EU_W), ("entity", ENTITY_W), ("elem", ELEM_W))}
                | {"x": C, "y": C, "mask": 16}),
            "release": data.StructLayout({"eu": EU_W, "entity": ENTITY_W, "etype": 2,
                                          "rec": 8}),
            "log": data.StructLayout({"kind": 2, "etype": 2, "seq": SEQ_W, "eu": EU_W,
                                      "entity": ENTITY_W, "ref": 2, "passes": 8,
                                      "refused": MAX_EUS, "code": CODE_W}),
            "err": data.StructLayout({"code": CODE_W, "src": 3, "seq": SEQ_W, "eu": EU_W,
                                      "detail": D}),
        }
        L = self.lay
        super().__init__({
            "i_vtx": In(stream.Signature(L["i_vtx"])),
            "i_tri": In(stream.Signature(L["i_tri"])),
            "i_pix": In(stream.Signature(L["i_pix"])),
            "i_pat": In(stream.Signature(L["i_pat"])),
            "cfg": In(stream.Signature(L["cfg"])),
            "done": In(stream.Signature(L["done"])),
            "status": In(L["status"]).array(n_eus),
            "alloc": Out(stream.Signature(L["alloc"])).array(n_eus),
            "accept": In(1).array(n_eus),
            "entity": In(ENTITY_W).array(n_eus),
            "move": Out(stream.Signature(L["move"])),
            "release": Out(stream.Signature(L["release"])),
            "log": Out(stream.Signature(L["log"])),
            "err": Out(stream.Signature(L["err"])),
            "error": Out(1),
            "lost": Out(1),
        })

    # ------------------------------------------------------------------------------
    def elaborate(self, platform):
        m = Module()
        N, V, P = self.n_eus, self.vdt_records, self.pt_records
        vb, pb = self.vbits, self.pbits
        I, R, SR, SL, D = self.index_bits, self.prid_bits, self.sr, self.sl, self.d
        VT = max(1, I - 3 - vb)
        PTG = max(1, R - pb)
        VR = max(1, vb)
        PR = max(1, pb)
        L = self.lay

        # ---------------------------------------------------------------- output FIFOs
        fifos = {}
        for name in ("move", "log", "release", "err"):
            f = SyncFIFO(width=L[name].size, depth=self.fifo_depth)
            m.submodules[f"{name}_fifo"] = fifos[name] = f
            port = getattr(self, name)
            m.d.comb += [port.valid.eq(f.r_rdy), port.payload.eq(f.r_data),
                         f.r_en.eq(port.ready)]
        push = {n: Signal(L[n], name=f"push_{n}") for n in fifos}
        push_en = {n: Signal(name=f"push_{n}_en") for n in fifos}
        for n, f in fifos.items():
            m.d.comb += [f.w_data.eq(push[n].as_value()), f.w_en.eq(push_en[n])]

        # ---------------------------------------------------------------- configuration
        lst = [[Signal(EU_W, name=f"lst{t}_{k}", init=k if k < N else 0)
                for k in range(N)] for t in range(4)]
        lcnt = [Signal(5, name=f"lcnt{t}", init=N) for t in range(4)]
        minr = [Signal(SR, name=f"minr{t}", init=1) for t in range(4)]
        minl = [Signal(SL, name=f"minl{t}", init=1) for t in range(4)]
        limit = Signal(8, init=self.starve_limit)

        # ---------------------------------------------------------------- tables
        def regs(name, n, width):
            return Array(Signal(width, name=f"{name}{i}") for i in range(n))

        v_valid, v_tag, v_eu, v_ent = regs("v_valid", V, 1), regs("v_tag", V, VT), \
            regs("v_eu", V, EU_W), regs("v_ent", V, ENTITY_W)
        v_count, v_half, v_patch = regs("v_count", V, 4), regs("v_half", V, 1), \
            regs("v_patch", V, 1)
        v_done, v_closed, v_refs = regs("v_done", V, 1), regs("v_closed", V, 1), \
            regs("v_refs", V, 9)
        p_valid, p_tag, p_eu, p_ent = regs("p_valid", P, 1), regs("p_tag", P, PTG), \
            regs("p_eu", P, EU_W), regs("p_ent", P, ENTITY_W)
        p_done, p_closed, p_pix = regs("p_done", P, 1), regs("p_closed", P, 1), \
            regs("p_pix", P, 13)
        p_vr = [regs(f"p_vr{i}_", P, VR) for i in range(3)]
        p_vrn = regs("p_vrn", P, 3)

        m.submodules.ift = ift = Memory(shape=2 + 8, depth=N * 256, init=[])
        ift_w = ift.write_port()
        ift_ra = ift.read_port(domain="comb")
        ift_rd = ift.read_port(domain="comb")
        ift_v = Signal(N * 256)

        seq = [Signal(SEQ_W, name=f"seq{s}") for s in range(4)]
        passes = [Signal(8, name=f"passes{s}") for s in range(4)]
        starve = [Signal(8, name=f"starve{s}") for s in range(4)]
        error, lost = Signal(), Signal()
        m.d.comb += [self.error.eq(error), self.lost.eq(lost)]

        ins = [self.i_vtx, self.i_tri, self.i_pix, self.i_pat]
        valid = Cat(i.valid for i in ins)

        def vrec(index):
            return index[3:3 + vb] if vb else Const(0, 1)

        def vtag(index):
            return index[3 + vb:] if I > 3 + vb else Const(0, 1)

        def prec(prid):
            return prid[:pb] if pb else Const(0, 1)

        def ptag(prid):
            return prid[pb:] if R > pb else Const(0, 1)

        def sat_inc(x):
            return Mux(x == SAT, SAT, x + 1)

        # ---------------------------------------------------------------- pass registers
        active = Signal()
        r_stream = Signal(2)
        r_cands = [Signal(EU_W, name=f"r_cand{i}") for i in range(N)]
        r_ncand = Signal(5)
        r_need_r, r_need_l = Signal(SR), Signal(SL)
        r_pos = Signal(5)
        r_refused = Signal(MAX_EUS)
        r_held, r_idx, r_eu = Signal(), Signal(5), Signal(EU_W)
        r_loc = [[Signal(EU_W, name=f"r_loc{i}_eu"), Signal(ENTITY_W, name=f"r_loc{i}_ent"),
                  Signal(ELEM_W, name=f"r_loc{i}_elem")] for i in range(3)]
        r_vr = [Signal(VR, name=f"r_vr{i}") for i in range(3)]
        r_vrn = Signal(3)
        r_rec = Signal(8)

        # ---------------------------------------------------------------- arbitration
        log_room, move_room = fifos["log"].w_rdy, fifos["move"].w_rdy
        can_start = ~active & log_room & move_room
        starving = Signal(4)
        for s in range(4):
            m.d.comb += starving[s].eq(valid[s] & (limit != 0) & (starve[s] >= limit))
        win = Signal(2)
        any_valid = valid.any()
        with m.If(starving.any()):
            for s in reversed(PRIORITY):
                with m.If(starving[s]):
                    m.d.comb += win.eq(s)
        with m.Else():
            for s in reversed(PRIORITY):
                with m.If(valid[s]):
                    m.d.comb += win.eq(s)
        start = Signal()
        m.d.comb += start.eq(can_start & any_valid)
        with m.If(start):
            for s in range(4):
                m.d.sync += starve[s].eq(Mux(~valid[s] | (win == s), 0, sat_inc(starve[s])))

        # ---------------------------------------------------------------- pass start
        # outcome: 0 allocate, 1 error, 2 close, 3 wait
        O_ALLOC, O_ERR, O_CLOSE, O_WAIT = 0, 1, 2, 3
        ev = []   # per stream: dict of comb signals
        for s in range(4):
            e = dict(out=Signal(2, name=f"ev{s}_out"), code=Signal(4, name=f"ev{s}_code"),
                     detail=Signal(D, name=f"ev{s}_detail"), rec=Signal(8, name=f"ev{s}_rec"),
                     size=Signal(SIZE_W, name=f"ev{s}_size"))
            ev.append(e)
        pv, pt, pp, pa = (i.payload for i in ins)
        m.d.comb += [ev[VTX]["size"].eq(pv.size), ev[TRI]["size"].eq(pt.size),
                     ev[PIX]["size"].eq(pp.size), ev[PAT]["size"].eq(pa.size)]

        def common(s, size, m_):
            """size checks and the empty list, after a MALFORMED check in ``m_``."""
            with m_.Elif(size == 0):
                m.d.comb += [ev[s]["out"].eq(O_ERR), ev[s]["code"].eq(MALFORMED)]
            with m_.Elif(size > self.max_lines):
                m.d.comb += [ev[s]["out"].eq(O_ERR), ev[s]["code"].eq(TOO_LARGE),
                             ev[s]["detail"].eq(size)]
            with m_.Elif(lcnt[s] == 0):
                m.d.comb += [ev[s]["out"].eq(O_ERR), ev[s]["code"].eq(NO_EU),
                             ev[s]["detail"].eq(s)]

        # vertex
        vrec_v = vrec(pv.base)
        m.d.comb += ev[VTX]["rec"].eq(vrec_v)
        with m.If((pv.count == 0) | (pv.count > GROUP) | (pv.base[:3] != 0)):
            m.d.comb += [ev[VTX]["out"].eq(O_ERR), ev[VTX]["code"].eq(MALFORMED)]
        common(VTX, pv.size, m)
        with m.Elif(v_valid[vrec_v]):
            m.d.comb += ev[VTX]["out"].eq(O_WAIT)
        # patch
        vrec_a = vrec(pa.base)
        vrec_a1 = Signal(VR)
        m.d.comb += [vrec_a1.eq(vrec_a + 1), ev[PAT]["rec"].eq(vrec_a)]
        with m.If(pa.base[:3] != 0):
            m.d.comb += [ev[PAT]["out"].eq(O_ERR), ev[PAT]["code"].eq(MALFORMED)]
        common(PAT, pa.size, m)
        with m.Elif(v_valid[vrec_a] | v_valid[vrec_a1]):
            m.d.comb += ev[PAT]["out"].eq(O_WAIT)
        # triangle: lookups
        t_idx = [pt.i0, pt.i1, pt.i2]
        t_r = [vrec(x) for x in t_idx]
        t_hit = [Signal(name=f"t_hit{i}") for i in range(3)]
        t_loc = [[Signal(EU_W, name=f"t_loc{i}_eu"), Signal(ENTITY_W, name=f"t_loc{i}_ent"),
                  Signal(ELEM_W, name=f"t_loc{i}_elem")] for i in range(3)]
        for i in range(3):
            r, x = t_r[i], t_idx[i]
            m.d.comb += [
                t_hit[i].eq(v_valid[r] & (v_tag[r] == vtag(x)) & ~v_closed[r]
                            & (x[:3] < v_count[r])),
                t_loc[i][0].eq(v_eu[r]), t_loc[i][1].eq(v_ent[r]),
                t_loc[i][2].eq(Cat(x[:3], v_half[r])),
            ]
        t_vrn = Cat(Const(1, 1), t_r[1] != t_r[0], (t_r[2] != t_r[0]) & (t_r[2] != t_r[1]))
        prec_t = prec(pt.prid)
        m.d.comb += ev[TRI]["rec"].eq(prec_t)
        with m.If(pt.size == 0):
            m.d.comb += [ev[TRI]["out"].eq(O_ERR), ev[TRI]["code"].eq(MALFORMED)]
        with m.Elif(pt.size > self.max_lines):
            m.d.comb += [ev[TRI]["out"].eq(O_ERR), ev[TRI]["code"].eq(TOO_LARGE),
                         ev[TRI]["detail"].eq(pt.size)]
        with m.Elif(lcnt[TRI] == 0):
            m.d.comb += [ev[TRI]["out"].eq(O_ERR), ev[TRI]["code"].eq(NO_EU),
                         ev[TRI]["detail"].eq(TRI)]
        for i in range(3):
            with m.Elif(~t_hit[i]):
                m.d.comb += [ev[TRI]["out"].eq(O_ERR), ev[TRI]["code"].eq(UNKNOWN_VERTEX),
                             ev[TRI]["detail"].eq(t_idx[i])]
        with m.Elif(p_valid[prec_t]):
            m.d.comb += ev[TRI]["out"].eq(O_WAIT)
        # pixel
        prec_p = prec(pp.prid)
        p_hit = Signal()
        m.d.comb += [p_hit.eq(p_valid[prec_p] & (p_tag[prec_p] == ptag(pp.prid))
                              & ~p_closed[prec_p]),
                     ev[PIX]["rec"].eq(prec_p)]
        with m.If(pp.mask == 0):
            with m.If(~pp.last):
                m.d.comb += [ev[PIX]["out"].eq(O_ERR), ev[PIX]["code"].eq(MALFORMED)]
            with m.Elif(~p_hit):
                m.d.comb += [ev[PIX]["out"].eq(O_ERR), ev[PIX]["code"].eq(UNKNOWN_PRID),
                             ev[PIX]["detail"].eq(pp.prid)]
            with m.Else():
                m.d.comb += ev[PIX]["out"].eq(O_CLOSE)
        with m.Elif(pp.size == 0):
            m.d.comb += [ev[PIX]["out"].eq(O_ERR), ev[PIX]["code"].eq(MALFORMED)]
        with m.Elif(pp.size > self.max_lines):
            m.d.comb += [ev[PIX]["out"].eq(O_ERR), ev[PIX]["code"].eq(TOO_LARGE),
                         ev[PIX]["detail"].eq(pp.size)]
        with m.Elif(lcnt[PIX] == 0):
            m.d.comb += [ev[PIX]["out"].eq(O_ERR), ev[PIX]["code"].eq(NO_EU),
                         ev[PIX]["detail"].eq(PIX)]
        with m.Elif(~p_hit):
            m.d.comb += [ev[PIX]["out"].eq(O_ERR), ev[PIX]["code"].eq(UNKNOWN_PRID),
                         ev[PIX]["detail"].eq(pp.prid)]

        # the winner's evaluation
        w_out, w_code, w_detail = Signal(2), Signal(4), Signal(D)
        w_rec, w_size = Signal(8), Signal(SIZE_W)
        lst_a = [Array(lst[t]) for t in range(4)]
        for s in range(4):
            with m.If(win == s):
                m.d.comb += [w_out.eq(ev[s]["out"]), w_code.eq(ev[s]["code"]),
                             w_detail.eq(ev[s]["detail"]), w_rec.eq(ev[s]["rec"])]
        # size of the current stream's head (the pass's stream while active)
        cur_s = Signal(2)
        m.d.comb += cur_s.eq(Mux(active, r_stream, win))
        for s in range(4):
            with m.If(cur_s == s):
                m.d.comb += w_size.eq(ev[s]["size"])
        # candidates of the winner: stable sort of its list by held-data count
        w_lst = [Signal(EU_W, name=f"w_lst{k}") for k in range(N)]
        w_lcnt = Signal(5)
        for s in range(4):
            with m.If(win == s):
                m.d.comb += [w_lcnt.eq(lcnt[s])] + [w_lst[k].eq(lst[s][k]) for k in range(N)]
        cnt = [Signal(2, name=f"cnt{k}") for k in range(N)]
        for k in range(N):
            with m.If(win == TRI):
                m.d.comb += cnt[k].eq(sum((t_loc[i][0] == w_lst[k]).as_unsigned()
                                          for i in range(3)))
            with m.Elif(win == PIX):
                m.d.comb += cnt[k].eq(p_eu[prec_p] == w_lst[k])
        in_l = [Signal(name=f"in_l{k}") for k in range(N)]
        rank = [Signal(5, name=f"rank{k}") for k in range(N)]
        for k in range(N):
            m.d.comb += in_l[k].eq(k < w_lcnt)
        for j in range(N):
            terms = [(in_l[k] & ((cnt[k] > cnt[j]) | ((cnt[k] == cnt[j]) & (k < j))))
                     .as_unsigned() for k in range(N) if k != j]
            m.d.comb += rank[j].eq(sum(terms) if terms else 0)
        w_cands = [Signal(EU_W, name=f"w_cand{i}") for i in range(N)]
        for i in range(N):
            m.d.comb += w_cands[i].eq(0)
            for j in range(N):
                with m.If(in_l[j] & (rank[j] == i)):
                    m.d.comb += w_cands[i].eq(w_lst[j])
        w_need_r, w_need_l = Signal(SR), Signal(SL)
        for s in range(4):
            with m.If(win == s):
                m.d.comb += [w_need_r.eq(Mux(minr[s] == 0, 1, minr[s])),
                             w_need_l.eq(Mux(minl[s] > ev[s]["size"], minl[s],
                                             ev[s]["size"]))]

        # ---------------------------------------------------------------- scan
        c_cands = [Signal(EU_W, name=f"c_cand{i}") for i in range(N)]
        c_ncand, c_pos = Signal(5), Signal(5)
        c_need_r, c_need_l = Signal(SR), Signal(SL)
        m.d.comb += [
            c_ncand.eq(Mux(active, r_ncand, w_lcnt)),
            c_pos.eq(Mux(active, r_pos, 0)),
            c_need_r.eq(Mux(active, r_need_r, w_need_r)),
            c_need_l.eq(Mux(active, r_need_l, w_need_l)),
        ] + [c_cands[i].eq(Mux(active, r_cands[i], w_cands[i])) for i in range(N)]
        meets = Signal(N)
        for e in range(N):
            st = self.status[e]
            m.d.comb += meets[e].eq((st.free_records >= c_need_r) & (st.free_entities >= 1)
                                    & (st.free_lines >= c_need_l))
        meets_a = Array(meets[e] for e in range(N))
        hit = [Signal(name=f"scan_hit{i}") for i in range(N)]
        for i in range(N):
            m.d.comb += hit[i].eq((i >= c_pos) & (i < c_ncand) & meets_a[c_cands[i]])
        s_found, s_idx, s_eu = Signal(), Signal(5), Signal(EU_W)
        for i in reversed(range(N)):
            with m.If(hit[i]):
                m.d.comb += [s_found.eq(1), s_idx.eq(i), s_eu.eq(c_cands[i])]

        # in allocate state this clock (pass started now with outcome allocate, or active)
        in_alloc = Signal()
        m.d.comb += in_alloc.eq(active | (start & (w_out == O_ALLOC)))
        req, q_idx, q_eu = Signal(), Signal(5), Signal(EU_W)
        m.d.comb += [
            q_idx.eq(Mux(active & r_held, r_idx, s_idx)),
            q_eu.eq(Mux(active & r_held, r_eu, s_eu)),
        ]
        # r_held only meaningful while active
        m.d.comb += req.eq(in_alloc & ((active & r_held) | s_found))
        scan_none = Signal()
        m.d.comb += scan_none.eq(in_alloc & ~(active & r_held) & ~s_found)
        for e in range(N):
            a = self.alloc[e]
            m.d.comb += [a.valid.eq(req & (q_eu == e)), a.payload.etype.eq(cur_s),
                         a.payload.lines.eq(w_size), a.payload.hold.eq(cur_s != PIX)]
            for s in range(4):
                with m.If(cur_s == s):
                    m.d.comb += a.payload.seq.eq(seq[s])
        taken, acc_in, ent_in = Signal(), Signal(), Signal(ENTITY_W)
        for e in range(N):
            with m.If(q_eu == e):
                m.d.comb += [acc_in.eq(self.accept[e]), ent_in.eq(self.entity[e])]
        m.d.comb += taken.eq(req & Array(self.alloc[e].ready for e in range(N))[q_eu])
        ift_addr_a = Cat(ent_in, q_eu)
        m.d.comb += ift_ra.addr.eq(ift_addr_a[:ift_ra.addr.shape().width])
        bad_answer = Signal()
        m.d.comb += bad_answer.eq(taken & acc_in & ift_v.bit_select(ift_addr_a, 1))
        accepted, refused = Signal(), Signal()
        m.d.comb += [accepted.eq(taken & acc_in & ~bad_answer),
                     refused.eq(taken & ~(acc_in & ~bad_answer))]

        # pass locals this clock (registered or from the winner's evaluation)
        c_loc = [[Signal(EU_W, name=f"c_loc{i}_eu"), Signal(ENTITY_W, name=f"c_loc{i}_ent"),
                  Signal(ELEM_W, name=f"c_loc{i}_elem")] for i in range(3)]
        c_vr = [Signal(VR, name=f"c_vr{i}") for i in range(3)]
        c_vrn, c_rec, c_refused = Signal(3), Signal(8), Signal(MAX_EUS)
        for i in range(3):
            for k in range(3):
                m.d.comb += c_loc[i][k].eq(Mux(active, r_loc[i][k], t_loc[i][k]))
            m.d.comb += c_vr[i].eq(Mux(active, r_vr[i], t_r[i]))
        m.d.comb += [c_vrn.eq(Mux(active, r_vrn, t_vrn)),
                     c_rec.eq(Mux(active, r_rec, w_rec)),
                     c_refused.eq(Mux(active, r_refused, 0))]
        # pixel's triangle location (registered in loc 0 for pixel passes)
        with m.If(~active & (win == PIX)):
            m.d.comb += [c_loc[0][0].eq(p_eu[prec_p]), c_loc[0][1].eq(p_ent[prec_p]),
                         c_loc[0][2].eq(0)]

        # consumption
        consume_err = Signal()
        consume_close = Signal()
        m.d.comb += [consume_err.eq(start & (w_out == O_ERR)),
                     consume_close.eq(start & (w_out == O_CLOSE))]
        consumed = Signal()
        m.d.comb += consumed.eq(consume_err | consume_close | accepted)
        for s in range(4):
            m.d.comb += ins[s].ready.eq(consumed & (cur_s == s))
        passes_now = Signal(8)
        for s in range(4):
            with m.If(cur_s == s):
                m.d.comb += passes_now.eq(Mux(start, sat_inc(passes[s]), passes[s]))
        cur_seq = Signal(SEQ_W)
        for s in range(4):
            with m.If(cur_s == s):
                m.d.comb += cur_seq.eq(seq[s])
        for s in range(4):
            with m.If(consumed & (cur_s == s)):
                m.d.sync += [seq[s].eq(seq[s] + 1), passes[s].eq(0)]
            with m.Elif(start & (win == s)):
                m.d.sync += passes[s].eq(sat_inc(passes[s]))

        # pass registers
        end = Signal()
        m.d.comb += end.eq((start & (w_out != O_ALLOC)) | scan_none | accepted)
        with m.If(start):
            m.d.sync += [r_stream.eq(win), r_ncand.eq(w_lcnt), r_need_r.eq(w_need_r),
                         r_need_l.eq(w_need_l), r_vrn.eq(t_vrn), r_rec.eq(w_rec)]
            m.d.sync += [r_cands[i].eq(w_cands[i]) for i in range(N)]
            m.d.sync += [r_vr[i].eq(t_r[i]) for i in range(3)]
            m.d.sync += [r_loc[i][k].eq(c_loc[i][k]) for i in range(3) for k in range(3)]
        m.d.sync += active.eq((start | active) & ~end)
        m.d.sync += r_held.eq(req & ~taken)
        with m.If(req):
            m.d.sync += [r_idx.eq(q_idx), r_eu.eq(q_eu)]
        with m.If(refused):
            m.d.sync += [r_pos.eq(q_idx + 1),
                         r_refused.eq(c_refused | (Const(1, MAX_EUS) << q_eu))]
        with m.Elif(start):
            m.d.sync += [r_pos.eq(0), r_refused.eq(0)]

        # ---------------------------------------------------------------- commit
        ent = ent_in
        e_ = q_eu
        pkt_v, pkt_t, pkt_p, pkt_a = pv, pt, pp, pa
        mv = push["move"]
        lg = push["log"]
        m.d.comb += [push_en["log"].eq(consumed), push_en["move"].eq(accepted)]
        m.d.comb += [lg.etype.eq(cur_s), lg.seq.eq(cur_seq), lg.passes.eq(passes_now)]
        with m.If(consume_err):
            m.d.comb += [lg.kind.eq(K_ERROR), lg.code.eq(w_code)]
        with m.Elif(consume_close):
            m.d.comb += [lg.kind.eq(K_CLOSE), lg.eu.eq(p_eu[prec_p]),
                         lg.entity.eq(p_ent[prec_p])]
            m.d.sync += p_closed[prec_p].eq(1)
        local = Signal()
        with m.If(cur_s == TRI):
            m.d.comb += local.eq((c_loc[0][0] == e_) & (c_loc[1][0] == e_)
                                 & (c_loc[2][0] == e_))
        with m.Else():
            m.d.comb += local.eq(c_loc[0][0] == e_)
        ref = Signal(2)
        m.d.comb += ref.eq(Mux((cur_s == TRI) | (cur_s == PIX),
                               Mux(local, REF_LOCAL, REF_GLOBAL), REF_NONE))
        with m.If(accepted):
            m.d.comb += [lg.kind.eq(K_ALLOC), lg.eu.eq(e_), lg.entity.eq(ent),
                         lg.ref.eq(ref), lg.refused.eq(c_refused)]
            m.d.comb += [mv.eu.eq(e_), mv.entity.eq(ent), mv.etype.eq(cur_s),
                         mv.seq.eq(cur_seq), mv.size.eq(w_size), mv.ref.eq(ref)]
            with m.Switch(cur_s):
                with m.Case(VTX):
                    m.d.comb += [mv.index.eq(pkt_v.base), mv.count.eq(pkt_v.count)]
                with m.Case(PAT):
                    m.d.comb += [mv.index.eq(pkt_a.base), mv.count.eq(16)]
                with m.Case(TRI):
                    m.d.comb += mv.index.eq(pkt_t.prid)
                    for i in range(3):
                        m.d.comb += [mv[f"src{i}_eu"].eq(c_loc[i][0]),
                                     mv[f"src{i}_entity"].eq(c_loc[i][1]),
                                     mv[f"src{i}_elem"].eq(c_loc[i][2])]
                with m.Case(PIX):
                    m.d.comb += [mv.index.eq(pkt_p.prid), mv.src0_eu.eq(c_loc[0][0]),
                                 mv.src0_entity.eq(c_loc[0][1]), mv.x.eq(pkt_p.x),
                                 mv.y.eq(pkt_p.y), mv.mask.eq(pkt_p.mask)]
            # in-flight table
            m.d.comb += [ift_w.addr.eq(Cat(ent, e_)[:ift_w.addr.shape().width]),
                         ift_w.data.eq(Cat(cur_s, c_rec)), ift_w.en.eq(1)]

        # VDT / PT writes on accept
        acc_v = accepted & (cur_s == VTX)
        acc_a = accepted & (cur_s == PAT)
        acc_t = accepted & (cur_s == TRI)
        acc_p = accepted & (cur_s == PIX)
        with m.If(acc_v):
            r = c_rec[:VR]
            m.d.sync += [v_valid[r].eq(1), v_tag[r].eq(vtag(pkt_v.base)), v_eu[r].eq(e_),
                         v_ent[r].eq(ent), v_count[r].eq(pkt_v.count), v_half[r].eq(0),
                         v_patch[r].eq(0), v_done[r].eq(0), v_closed[r].eq(pkt_v.noref)]
        with m.If(acc_a):
            for h in range(2):
                r = Signal(VR, name=f"pat_r{h}")
                g = Signal(I - 3 + 1, name=f"pat_g{h}")
                m.d.comb += [r.eq(c_rec[:VR] + h), g.eq(pkt_a.base[3:] + h)]
                m.d.sync += [v_valid[r].eq(1), v_tag[r].eq(g[vb:] if I - 3 + 1 > vb else 0),
                             v_eu[r].eq(e_), v_ent[r].eq(ent), v_count[r].eq(GROUP),
                             v_half[r].eq(h), v_patch[r].eq(1), v_done[r].eq(0),
                             v_closed[r].eq(pkt_a.noref)]
        with m.If(acc_t):
            q = c_rec[:PR]
            m.d.sync += [p_valid[q].eq(1), p_tag[q].eq(ptag(pkt_t.prid)), p_eu[q].eq(e_),
                         p_ent[q].eq(ent), p_done[q].eq(0), p_closed[q].eq(0),
                         p_vrn[q].eq(c_vrn)]
            m.d.sync += [p_vr[i][q].eq(c_vr[i]) for i in range(3)]
            for i in range(3):
                with m.If(pkt_t.last[i]):
                    m.d.sync += v_closed[c_vr[i]].eq(1)
        with m.If(acc_p & pkt_p.last):
            m.d.sync += p_closed[c_rec[:PR]].eq(1)

        # ---------------------------------------------------------------- completion
        dn = self.done.payload
        m.d.comb += self.done.ready.eq(1)
        d_addr = Cat(dn.entity, dn.eu)
        d_in = Signal()
        m.d.comb += [d_in.eq((dn.eu < N) & ift_v.bit_select(d_addr, 1)),
                     ift_rd.addr.eq(d_addr[:ift_rd.addr.shape().width])]
        d_ok = Signal()
        d_bad = Signal()
        m.d.comb += [d_ok.eq(self.done.valid & d_in), d_bad.eq(self.done.valid & ~d_in)]
        d_type = ift_rd.data[:2]
        d_rec = ift_rd.data[2:]
        # in-flight valid bits
        set_mask = Signal(N * 256)
        clr_mask = Signal(N * 256)
        with m.If(accepted):
            m.d.comb += set_mask.eq(Const(1, N * 256) << Cat(ent, e_))
        with m.If(d_ok):
            m.d.comb += clr_mask.eq(Const(1, N * 256) << d_addr)
        m.d.sync += ift_v.eq((ift_v | set_mask) & ~clr_mask)
        d_tri = Signal()
        m.d.comb += d_tri.eq(d_ok & (d_type == TRI))
        with m.If(d_ok):
            with m.Switch(d_type):
                with m.Case(VTX):
                    m.d.sync += v_done[d_rec[:VR]].eq(1)
                with m.Case(PAT):
                    r1 = Signal(VR)
                    m.d.comb += r1.eq(d_rec[:VR] + 1)
                    m.d.sync += [v_done[d_rec[:VR]].eq(1), v_done[r1].eq(1)]
                with m.Case(TRI):
                    m.d.sync += p_done[d_rec[:PR]].eq(1)
        dq = d_rec[:PR]
        # pixel counts
        for q in range(P):
            inc = acc_p & (c_rec[:PR] == q)
            dec = d_ok & (d_type == PIX) & (dq == q)
            with m.If(inc & ~dec):
                m.d.sync += p_pix[q].eq(p_pix[q] + 1)
            with m.Elif(dec & ~inc):
                m.d.sync += p_pix[q].eq(p_pix[q] - 1)
        # reference counts
        d_vr = [Signal(VR, name=f"d_vr{i}") for i in range(3)]
        d_vrn = Signal(3)
        m.d.comb += [d_vr[i].eq(p_vr[i][dq]) for i in range(3)] + [d_vrn.eq(p_vrn[dq])]
        for r in range(V):
            inc = Signal(name=f"ref_inc{r}")
            dec = Signal(name=f"ref_dec{r}")
            m.d.comb += [
                inc.eq(acc_t & ((c_vrn[0] & (c_vr[0] == r)) | (c_vrn[1] & (c_vr[1] == r))
                                | (c_vrn[2] & (c_vr[2] == r)))),
                dec.eq(d_tri & ((d_vrn[0] & (d_vr[0] == r)) | (d_vrn[1] & (d_vr[1] == r))
                                | (d_vrn[2] & (d_vr[2] == r)))),
            ]
            with m.If(inc & ~dec):
                m.d.sync += v_refs[r].eq(v_refs[r] + 1)
            with m.Elif(dec & ~inc):
                m.d.sync += v_refs[r].eq(v_refs[r] - 1)

        # ---------------------------------------------------------------- release engine
        ok_v = Signal(V)
        cand_v = Signal(V)
        for r in range(V):
            m.d.comb += ok_v[r].eq(v_valid[r] & v_done[r] & v_closed[r] & (v_refs[r] == 0))
        for r in range(V):
            m.d.comb += cand_v[r].eq(ok_v[r] & (~v_patch[r]
                                                 | ((v_half[r] == 0) & ok_v[(r + 1) % V])))
        ok_p = Signal(P)
        for q in range(P):
            m.d.comb += ok_p[q].eq(p_valid[q] & p_done[q] & p_closed[q] & (p_pix[q] == 0))
        rl = push["release"]
        rel_room = fifos["release"].w_rdy
        with m.If(rel_room & cand_v.any()):
            m.d.comb += push_en["release"].eq(1)
            for r in reversed(range(V)):
                with m.If(cand_v[r]):
                    m.d.comb += [rl.eu.eq(v_eu[r]), rl.entity.eq(v_ent[r]),
                                 rl.etype.eq(Mux(v_patch[r], PAT, VTX)), rl.rec.eq(r)]
            rsel = Signal(VR)
            for r in reversed(range(V)):
                with m.If(cand_v[r]):
                    m.d.comb += rsel.eq(r)
            rsel1 = Signal(VR)
            m.d.comb += rsel1.eq(rsel + 1)
            m.d.sync += [v_valid[rsel].eq(0), v_done[rsel].eq(0), v_closed[rsel].eq(0),
                         v_patch[rsel].eq(0), v_refs[rsel].eq(0)]
            with m.If(v_patch[rsel]):
                m.d.sync += [v_valid[rsel1].eq(0), v_done[rsel1].eq(0),
                             v_closed[rsel1].eq(0), v_patch[rsel1].eq(0),
                             v_refs[rsel1].eq(0)]
        with m.Elif(rel_room & ok_p.any()):
            m.d.comb += push_en["release"].eq(1)
            qsel = Signal(PR)
            for q in reversed(range(P)):
                with m.If(ok_p[q]):
                    m.d.comb += qsel.eq(q)
            m.d.comb += [rl.eu.eq(p_eu[qsel]), rl.entity.eq(p_ent[qsel]), rl.etype.eq(TRI),
                         rl.rec.eq(qsel)]
            m.d.sync += [p_valid[qsel].eq(0), p_done[qsel].eq(0), p_closed[qsel].eq(0),
                         p_pix[qsel].eq(0), p_vrn[qsel].eq(0)]

        # ---------------------------------------------------------------- configuration
        cf = self.cfg.payload
        m.d.comb += self.cfg.ready.eq(1)
        ent_c = [cf.eus[4 * i:4 * i + 4] for i in range(MAX_EUS)]
        c_bad, c_noeu = Signal(), Signal()
        with m.Switch(cf.op):
            with m.Case(0):
                bad_terms = [cf.count > N]
                for i in range(N):
                    bad_terms.append((i < cf.count) & (ent_c[i] >= N))
                    for j in range(i + 1, N):
                        bad_terms.append((j < cf.count) & (ent_c[i] == ent_c[j]))
                m.d.comb += [c_bad.eq(Cat(*bad_terms).any()), c_noeu.eq(cf.count == 0)]
            with m.Case(1):
                m.d.comb += c_bad.eq((cf.records > self.eu_records) | (cf.lines > self.eu_lines))
            with m.Case(3):
                m.d.comb += c_bad.eq(1)
        with m.If(self.cfg.valid & ~c_bad):
            with m.Switch(cf.op):
                with m.Case(0):
                    for t in range(4):
                        with m.If(cf.etype == t):
                            m.d.sync += lcnt[t].eq(cf.count)
                            m.d.sync += [lst[t][k].eq(ent_c[k]) for k in range(N)]
                with m.Case(1):
                    for t in range(4):
                        with m.If(cf.etype == t):
                            m.d.sync += [minr[t].eq(cf.records), minl[t].eq(cf.lines)]
                with m.Case(2):
                    m.d.sync += limit.eq(cf.limit)

        # ---------------------------------------------------------------- errors
        e_pkt = consume_err
        e_ans = bad_answer
        e_done = d_bad
        e_cfg = self.cfg.valid & (c_bad | c_noeu)
        er = push["err"]
        with m.If(e_pkt):
            m.d.comb += [er.code.eq(w_code), er.src.eq(win), er.seq.eq(cur_seq),
                         er.detail.eq(w_detail)]
        with m.Elif(e_ans):
            m.d.comb += [er.code.eq(BAD_ANSWER), er.src.eq(SRC_ANSWER), er.seq.eq(cur_seq),
                         er.eu.eq(e_), er.detail.eq(ent_in)]
        with m.Elif(e_done):
            m.d.comb += [er.code.eq(UNKNOWN_DONE), er.src.eq(SRC_DONE), er.eu.eq(dn.eu),
                         er.detail.eq(dn.entity)]
        with m.Elif(e_cfg):
            m.d.comb += [er.code.eq(Mux(c_bad, BAD_CONFIG, NO_EU)), er.src.eq(SRC_CONFIG),
                         er.detail.eq(Mux(c_bad, cf.op, cf.etype))]
        n_err = Signal(3)
        m.d.comb += n_err.eq(e_pkt.as_unsigned() + e_ans + e_done + e_cfg)
        any_err = n_err != 0
        m.d.comb += push_en["err"].eq(any_err & fifos["err"].w_rdy)
        with m.If(any_err):
            m.d.sync += error.eq(1)
            with m.If(~fifos["err"].w_rdy | (n_err > 1)):
                m.d.sync += lost.eq(1)
        return m


class SpreaderQCC(wiring.Component):
    """The spreader driving ``n_eus`` real QCCs (:class:`hw.qcc.QCC`): the co-simulation
    design of issue 5 ("one test must run it against real QCC instances").

    The spreader's EU interface is a request/answer handshake (the answer rides on the
    ``alloc[e]`` transfer), a ``status`` per EU, one ``done`` stream and one ``release``
    stream; the QCC has a command/response port, status outputs and stage issue and
    completion ports. A small adapter per EU maps one onto the other:

    * ``status[e]`` is the QCC's ``status``: ``free_records``, ``free_entities`` and, as
      ``free_lines``, the QCC's ``free_run`` (its longest run of contiguous free lines),
      so the spreader's minimum check reads the QCC's own counts, and a check that
      passes means the ALLOC finds its lines (a count of scattered free lines can pass
      while first fit fails, which deadlocked a packet waiting on lines held by the
      data of its own triangle).
    * An allocation request becomes the QCC command ``ALLOC`` (``etype`` = the request's
      type, the numbers agree: vertex 0, triangle 1, pixel 2, patch 3; ``lines`` = the
      packet's size; ``hold`` = the request's ``hold``, 0 only for pixel packets). The
      QCC answers one clock later; that response is the answer: ``alloc[e].ready`` = 1,
      ``accept[e]`` = (code is OK), ``entity[e]`` = the response's entity. NO_RECORD,
      NO_ENTITY and NO_LINES (e.g. enough lines but no contiguous run) are refusals, so
      the spreader tries its next candidate. An allocation therefore costs two clocks
      per tried EU (request, then answer), which the spreader's contract allows (it
      holds the request until it is answered).
    * A command is offered only while none is outstanding (one response per command,
      in order); the release of the spreader (``release``, one stream, routed by its
      ``eu`` into a one-entry register per EU) has priority over an allocation and
      becomes the QCC command ``RELEASE`` of its entity (taken two or three clocks after
      it is offered, as the QCC contract says).
    * ``done``: the adapter remembers, for every issue the processors take, the record's
      entity and whether the issued stage is the last of its type's stage program. A
      completion (``n_done``/``m_done``) of a last stage is the entity's completion: it
      is queued (one FIFO per EU and issue kind, ``records`` deep, so it cannot overflow)
      and the queues are merged onto the spreader's ``done``, lowest EU and NUMERIC
      first, one per clock.
    * An entity without ``hold`` (a pixel packet) is deleted by the QCC in the clock of
      its last completion, and its number can be handed out again from the next clock.
      The spreader must have taken the completion before it sees that number in an
      answer (else it reports BAD_ANSWER), so no ALLOC is offered to an EU while a
      completion of that EU waits in its queues.

    The processors (thread controller, data move machine) are the testbench's: each QCC's
    ``n_issue``/``m_issue`` and ``n_done``/``m_done`` are ports of this design, as are
    taps of what crosses the adapters (plain outputs, for the scoreboard).

    Parameters
    ----------
    n_eus : int
        EUs (QCCs), 1..16. Default 2.
    records, entities, lines : int
        Parameters of every QCC (its ``frames`` is 1: the spreader maps no frames).
        Defaults 8, 8, 16.
    vdt_records, pt_records, fifo_depth, starve_limit : int
        Parameters of the spreader (:class:`Spreader`); defaults 8, 4, 2, 8. The
        spreader's ``eu_records`` and ``eu_lines`` are the QCC's ``records`` and
        ``lines``, its ``max_lines`` is ``min(8, lines)``.

    Attributes
    ----------
    spreader_params : dict
        The parameters of the spreader inside (a golden model built with them agrees).
    alloc_tap[e] : out
        ``valid``, ``ready``, ``accept``, ``entity`` and ``payload`` of the spreader's
        ``alloc[e]`` and its answer, every clock.
    status_tap[e], release_tap, done_tap : out
        The status the spreader reads; the ``release`` and ``done`` transfers
        (``valid`` = transferred this clock).
    qcc_error : out
        Per EU, the QCC's sticky ``error``.
    adapter_error : out
        Sticky: a RELEASE not answered OK, an answer without a request, or an ALLOC not
        taken in the clock it was offered (none can happen when the rules above hold).
    """

    def __init__(self, *, n_eus=2, records=8, entities=8, lines=16, vdt_records=8,
                 pt_records=4, fifo_depth=2, starve_limit=8):
        from hw.qcc import DONE, ISSUE, QCC     # only here: the plain spreader needs none
        self.n_eus = _check_int("n_eus", n_eus, 1, MAX_EUS)
        self.spreader_params, self.qcc_params = self.split_params(
            n_eus=n_eus, records=records, entities=entities, lines=lines,
            vdt_records=vdt_records, pt_records=pt_records, fifo_depth=fifo_depth,
            starve_limit=starve_limit)
        self._qccs = [QCC(**self.qcc_params) for _ in range(n_eus)]   # validates them
        self._spreader = Spreader(**self.spreader_params)
        L = self._spreader.lay
        self.lay = L
        tap = data.StructLayout({"valid": 1, "ready": 1, "accept": 1, "entity": ENTITY_W,
                                 "payload": L["alloc"]})
        members = {n: In(stream.Signature(L[n]))
                   for n in ("i_vtx", "i_tri", "i_pix", "i_pat", "cfg")}
        members |= {n: Out(stream.Signature(L[n])) for n in ("move", "log", "err")}
        members |= {
            "n_issue": Out(stream.Signature(ISSUE)).array(n_eus),
            "m_issue": Out(stream.Signature(ISSUE)).array(n_eus),
            "n_done": In(stream.Signature(DONE)).array(n_eus),
            "m_done": In(stream.Signature(DONE)).array(n_eus),
            "alloc_tap": Out(tap).array(n_eus),
            "status_tap": Out(L["status"]).array(n_eus),
            "release_tap": Out(data.StructLayout({"valid": 1, "payload": L["release"]})),
            "done_tap": Out(data.StructLayout({"valid": 1, "payload": L["done"]})),
            "error": Out(1), "lost": Out(1),
            "qcc_error": Out(n_eus), "adapter_error": Out(1),
        }
        super().__init__(members)

    @staticmethod
    def split_params(*, n_eus=2, records=8, entities=8, lines=16, vdt_records=8,
                     pt_records=4, fifo_depth=2, starve_limit=8):
        """``(spreader parameters, QCC parameters)`` of a parameter set, unchecked."""
        qcc = {"records": records, "entities": entities, "lines": lines, "frames": 1}
        spreader = {"n_eus": n_eus, "vdt_records": vdt_records, "pt_records": pt_records,
                    "eu_records": records, "eu_lines": lines,
                    "max_lines": max(1, min(8, lines)), "fifo_depth": fifo_depth,
                    "starve_limit": starve_limit}
        return spreader, qcc

    def elaborate(self, platform):
        from hw.qcc import Code, Op
        m = Module()
        N = self.n_eus
        m.submodules.spreader = sp = self._spreader
        for n in ("i_vtx", "i_tri", "i_pix", "i_pat", "cfg"):
            wiring.connect(m, wiring.flipped(getattr(self, n)), getattr(sp, n))
        for n in ("move", "log", "err"):
            wiring.connect(m, getattr(sp, n), wiring.flipped(getattr(self, n)))
        m.d.comb += [self.error.eq(sp.error), self.lost.eq(sp.lost)]
        adapter_error = Signal()
        m.d.comb += self.adapter_error.eq(adapter_error)
        bad = []

        # release: one register per EU, loaded from the spreader's single stream
        rel = sp.release
        rel_v = [Signal(name=f"rel_v{e}") for e in range(N)]
        rel_ent = [Signal(ENTITY_W, name=f"rel_ent{e}") for e in range(N)]
        m.d.comb += rel.ready.eq(~Array(rel_v)[rel.payload.eu])
        m.d.comb += [self.release_tap.valid.eq(rel.valid & rel.ready),
                     self.release_tap.payload.eq(rel.payload)]

        queues = []
        for e in range(N):
            m.submodules[f"qcc{e}"] = q = self._qccs[e]
            for k in ("n_issue", "m_issue"):
                wiring.connect(m, getattr(q, k), wiring.flipped(getattr(self, k)[e]))
            for k in ("n_done", "m_done"):
                wiring.connect(m, wiring.flipped(getattr(self, k)[e]), getattr(q, k))
            m.d.comb += [q.query.valid.eq(0), q.qresp.ready.eq(1), q.resp.ready.eq(1)]
            st = sp.status[e]
            m.d.comb += [st.free_records.eq(q.status.free_records),
                         st.free_entities.eq(q.status.free_entities),
                         st.free_lines.eq(q.status.free_run),
                         self.status_tap[e].eq(st), self.qcc_error[e].eq(q.status.error)]
            with m.If(rel.valid & rel.ready & (rel.payload.eu == e)):
                m.d.sync += [rel_v[e].eq(1), rel_ent[e].eq(rel.payload.entity)]
            eq = [self._completions(m, q, e, kind) for kind in ("n", "m")]
            queues += eq
            blocked = eq[0].r_rdy | eq[1].r_rdy
            bad += self._commands(m, q, sp.alloc[e], sp, e, rel_v[e], rel_ent[e], blocked,
                                  Op, Code)

        # completions: the queues merged onto the spreader's ``done``, lowest first
        for i in reversed(range(2 * N)):
            with m.If(queues[i].r_rdy):
                m.d.comb += [sp.done.valid.eq(1), sp.done.payload.eu.eq(i // 2),
                             sp.done.payload.entity.eq(queues[i].r_data)]
        for i in range(2 * N):
            first = queues[i].r_rdy & ~Cat(f.r_rdy for f in queues[:i]).any() if i \
                else queues[i].r_rdy
            m.d.comb += queues[i].r_en.eq(first & sp.done.ready)
        m.d.comb += [self.done_tap.valid.eq(sp.done.valid & sp.done.ready),
                     self.done_tap.payload.eq(sp.done.payload)]
        with m.If(Cat(bad).any()):
            m.d.sync += adapter_error.eq(1)
        return m

    def _completions(self, m, q, e, kind):
        """The queue of entity completions of one issue kind of EU ``e``."""
        records = self.qcc_params["records"]
        iss, done = getattr(q, f"{kind}_issue"), getattr(q, f"{kind}_done")
        last = Array(Signal(name=f"{kind}last{e}_{r}") for r in range(records))
        ent = Array(Signal(ENTITY_W, name=f"{kind}ent{e}_{r}") for r in range(records))
        # the last stage of each type's program (etype 5..7 is never issued)
        final = Array([Const(len(p) - 1, 4) for p in q.programs] + [Const(15, 4)] * 3)
        with m.If(iss.valid & iss.ready):
            m.d.sync += [last[iss.payload.record].eq(iss.payload.stage
                                                     == final[iss.payload.etype]),
                         ent[iss.payload.record].eq(iss.payload.entity)]
        f = SyncFIFO(width=ENTITY_W, depth=records)
        m.submodules[f"done_{kind}{e}"] = f
        m.d.comb += [f.w_en.eq(done.valid & last[done.payload.record]),
                     f.w_data.eq(ent[done.payload.record])]
        return f

    def _commands(self, m, q, a, sp, e, rel_v, rel_ent, blocked, Op, Code):
        """EU ``e``'s command port: RELEASE first, else the spreader's ALLOC; returns
        the conditions that set ``adapter_error``."""
        c, r = q.cmd, q.resp
        wait = Signal(name=f"wait{e}")
        with m.If(~wait):
            with m.If(rel_v):
                m.d.comb += [c.valid.eq(1), c.payload.op.eq(Op.RELEASE),
                             c.payload.entity.eq(rel_ent)]
                with m.If(c.ready):
                    m.d.sync += rel_v.eq(0)
            with m.Elif(a.valid & ~blocked):
                m.d.comb += [c.valid.eq(1), c.payload.op.eq(Op.ALLOC),
                             c.payload.etype.eq(a.payload.etype),
                             c.payload.hold.eq(a.payload.hold),
                             c.payload.lines.eq(a.payload.lines)]
        with m.If(c.valid & c.ready):
            m.d.sync += wait.eq(1)
        with m.Elif(r.valid):
            m.d.sync += wait.eq(0)
        answer = r.valid & (r.payload.op == Op.ALLOC)
        m.d.comb += [a.ready.eq(answer), sp.accept[e].eq(r.payload.code == Code.OK),
                     sp.entity[e].eq(r.payload.entity)]
        t = self.alloc_tap[e]
        m.d.comb += [t.valid.eq(a.valid), t.ready.eq(a.ready), t.accept.eq(sp.accept[e]),
                     t.entity.eq(sp.entity[e]), t.payload.eq(a.payload)]
        return [answer & ~a.valid,
                r.valid & (r.payload.op == Op.RELEASE) & (r.payload.code != Code.OK),
                r.valid & r.payload.code[3],
                c.valid & ~c.ready & (c.payload.op == Op.ALLOC)]


DESIGNS = {
    "spreader": Spreader,
    "spreader_qcc": SpreaderQCC,
}
