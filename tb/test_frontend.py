"""Testbenches of the integrated front end ``frontend.frontend`` (``hw/frontend.py``).

A command stream goes in with random gaps; the spreader's ``log`` and ``err`` are taken
with random back-pressure; the pixel engines' stage latencies are random per frame
(a LATENCY command; the seed is printed). After each frame the framebuffer is read
through ``fb_addr``/``fb_data`` and must equal :func:`golden.frontend.render` bit for bit.
Every clock the spreader's ports are observed through the design's taps (with the
spreader's stage L, the front end's default, several inputs may be taken in a clock:
each is recorded); at the end of a test the whole run (all its frames) goes through
:class:`golden.spreader.Scoreboard`
against the packets :func:`golden.frontend.workload_from` says the front end presents:
every packet allocated once, to an EU that met the minimum, candidates in order, every
completion and release in its place, and every QCC back to its full counts.
"""

import cocotb
import numpy as np
import pytest
from cocotb.triggers import FallingEdge, ReadOnly

from golden import frontend as G
from golden import scenes
from golden.spreader import RunResult, Scoreboard, Spreader, Workload
from tb.harness import (WIDE_DESIGN, StreamDriver, StreamMonitor, params, run_cocotb,
                        simulators, split_simulators, start)
from tb.test_spreader import RequestLog

#: the fast build: 2 EUs, small tables, a 32x32 frame, every MSAA mode
SMALL = {"n_eus": 2, "width": 32, "height": 32, "modes": (1, 2, 4, 8, 16), "prid_bits": 8,
         "records": 8, "entities": 8, "lines": 16, "vdt_records": 8, "pt_records": 4,
         "fifo_depth": 2, "latency": 2}
TESTS = ["frontend_modes", "frontend_full_eus", "frontend_malformed"]


@pytest.mark.parametrize("simulator", split_simulators("verilator"))
def test_frontend(simulator):
    """Small scenes in every mode of the build, full EUs, malformed commands: on
    Verilator in ``make test``, on Icarus in ``make regress`` (the every-mode design is
    the suite's longest Icarus build)."""
    run_cocotb("frontend.frontend", "tb.test_frontend", simulator, SMALL, testcase=TESTS,
               **WIDE_DESIGN)


@pytest.mark.slow
@pytest.mark.parametrize("simulator", simulators())
def test_frontend_demo_scene(simulator):
    """``make regress``: the demo's default scene and build (``tb/demo.py``), checked like
    the small scenes (frame and scoreboard)."""
    from tb.demo import demo_params
    run_cocotb("frontend.frontend", "tb.test_frontend", simulator,
               demo_params(128, 128, 4, 4), testcase=["frontend_demo_scene"], **WIDE_DESIGN)


@pytest.mark.slow
@pytest.mark.parametrize("simulator", simulators())
def test_frontend_raster_latency9(simulator):
    """``make regress``: the small scenes with the block rasterizer of the FPGA's MSAA
    builds (``raster_latency=9``, ``raster_lanes=8``, issue 16), passed through
    ``raster.pipeline``: frames bit-equal, scoreboard clean (modes 1, 2 and 4: the
    malformed test's second frame is at 2x)."""
    run_cocotb("frontend.frontend", "tb.test_frontend", simulator,
               {**SMALL, "modes": (1, 2, 4), "raster_latency": 9, "raster_lanes": 8},
               testcase=TESTS, **WIDE_DESIGN)


#: the board top's test build: the board's 4x mode on the small frame, a fast UART
BOARD_SMALL = {"n_eus": 2, "width": 32, "height": 32, "modes": (4,)}
BOARD_SEED = 5


def board_commands():
    """The board test's scene: a small mesh at 4x."""
    v = scenes.scene("mesh", 32, 32, 6, BOARD_SEED, subpix=G.SUBPIX,
                     int_bits=G.int_bits_for(32, 32))
    return G.scene_cmds(v, 4)


@pytest.mark.slow
@pytest.mark.parametrize("simulator", simulators())
def test_board(simulator):
    """``frontend.board``: the scene from its ROM, the checksum over the UART (``make
    regress``: a second large build per simulator; ``test_frontend`` covers the front
    end itself in the fast regression)."""
    run_cocotb("frontend.board", "tb.test_frontend", simulator,
               {"commands": tuple(board_commands()), "divisor": 4, "frontend": BOARD_SMALL},
               testcase=["board_uart"], **WIDE_DESIGN)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"n_eus": 0}, ValueError, r"n_eus must be an integer from 1 to 16, not 0"),
    ({"width": 48}, ValueError, r"width must be a power of two from 16 to 2048, not 48"),
    ({"height": 8}, ValueError, r"height must be a power of two from 16 to 2048, not 8"),
    ({"modes": (3,)}, ValueError, r"modes must hold sample counts"),
    ({"prid_bits": 1}, ValueError, r"prid_bits must be an integer from 2 to 16, not 1"),
    ({"latency": "2"}, TypeError, r"latency must be an integer from 0 to 255, not '2'"),
    ({"records": 2}, ValueError, r"records must be an integer from 4 to 256, not 2"),
    ({"input_stage": 1}, TypeError, r"input_stage must be a bool, not 1"),
    ({"raster_latency": 10}, ValueError,
     r"raster_latency must be an integer from 7 to 9, not 10"),
    ({"raster_lanes": 6}, ValueError,
     r"raster_lanes must be a power of two from 4 to 16, not 6"),
    ({"modes": (1,), "raster_latency": 9}, ValueError,
     r"raster_latency must be 7 in a build without an MSAA mode, not 9"),
    ({"modes": (1,), "raster_lanes": 8}, ValueError,
     r"raster_lanes must be 16 in a build without an MSAA mode, not 8"),
])
def test_parameter_errors(kwargs, error, message):
    from hw.frontend import Frontend
    with pytest.raises(error, match=message):
        Frontend(**kwargs)


# ---------------------------------------------------------------- the run

class Run:
    """One cocotb test's run: drives frames, observes the spreader, checks at the end."""

    def __init__(self, dut, rng, *, gap=0.3, stall=0.3):
        from hw.frontend import Frontend
        p = params()
        self.dut, self.rng, self.p = dut, rng, p
        self.rtl = Frontend(**{k: tuple(v) if isinstance(v, list) else v
                               for k, v in p.items()})
        self.model = Spreader(**self.rtl.sq.spreader_params)
        self.n = p["n_eus"]
        self.driver = StreamDriver(dut, "i", rng, gap=gap)
        self.monitors = {o: StreamMonitor(dut, o, rng, stall=stall) for o in ("log", "err")}
        self.res = RunResult(self.model, None)
        self.requests = RequestLog(self.res)
        self.streams = ([], [], [], [])
        self.seq = 0                    # draws placed so far (the front end's seq)
        self.t = 0
        self.multi = 0                  # clocks with several inputs taken (stage L)
        self.alloc_w = sum(w for _, w in self.model.layout("alloc"))
        self.busy_clocks = [0] * self.n
        dut.fb_addr.value = 0

    # -- one clock of observation (ReadOnly phase)
    def observe(self):
        dut, model, res, t = self.dut, self.model, self.res, self.t
        status = tuple(model.unpack("status", int(getattr(dut, f"status_tap__{e}").value))
                       for e in range(self.n))
        for e, st in enumerate(status):
            if st.free_records < self.p["records"]:
                self.busy_clocks[e] += 1
        asked = []
        for e in range(self.n):
            w = int(getattr(dut, f"alloc_tap__{e}").value)
            if w & 1:
                asked.append((e, model.unpack("alloc", w >> 11 & ((1 << self.alloc_w) - 1)),
                              w >> 1 & 1, w >> 2 & 1, w >> 3 & 0xFF))
        assert len(asked) <= 1, f"clock {t}: requests to several EUs {asked}"
        taken = [s for s in range(3) if int(dut.in_tap.value) >> s & 1]
        if not model.input_stage:       # with stage L several may be (decision 11)
            assert len(taken) <= 1, f"clock {t}: several inputs taken {taken}"
        if asked:
            e, q, ready, accept, entity = asked[0]
            self.requests.request(t, e, q, entity if ready else None, bool(accept))
        self.requests.scan(status, asked[0][:2] if asked else None)
        self.multi += len(taken) > 1
        for s in taken:
            res.consumed.append((t, s))
        for o, mon in self.monitors.items():
            if int(getattr(dut, f"{o}__valid").value) and int(getattr(dut, f"{o}__ready").value):
                getattr(res, o).append((t, model.unpack(o, int(getattr(dut, f"{o}__payload")
                                                                .value))))
        for name, port in (("release_tap", "release"), ("done_tap", "done"),
                           ("cfg_tap", "cfg"), ("move_tap", "move")):
            w = int(getattr(dut, name).value)
            if w & 1:
                rec = model.unpack(port, w >> 1)
                if port == "release":
                    res.release.append((t, rec))
                elif port == "move":
                    res.move.append((t, rec))
                elif port == "done":
                    res.completions.append((t, rec.eu, rec.entity))
                else:
                    res.config.append((t, rec))
        assert not int(dut.errors.value) >> 3, (
            f"clock {t}: a block flagged an error: errors={int(dut.errors.value):07b}")
        return status

    async def clock(self):
        """Observe this clock and move to the next one's falling edge."""
        await ReadOnly()
        status = self.observe()
        await FallingEdge(self.dut.clk)
        self.t += 1
        return status

    async def frame(self, words, *, latency=None, max_clocks=200000):
        """Send one frame's command words and wait until it is done."""
        if latency is not None:
            words = G.latency_cmd(*latency) + words
        self.driver.send(words)
        seen_busy = False
        start = self.t
        while True:
            await self.clock()
            seen_busy |= bool(int(self.dut.busy.value))
            if (seen_busy and self.driver.idle and int(self.dut.done.value)
                    and not int(self.dut.busy.value)):
                break
            assert self.t - start < max_clocks, f"frame not done within {max_clocks} clocks"
        return await self.read_frame()

    async def read_frame(self):
        """Read the framebuffer through ``fb_addr``/``fb_data`` (one word a clock)."""
        words = []
        rtl = self.rtl
        for a in range(rtl.fb.words + 1):
            if a < rtl.fb.words:
                self.dut.fb_addr.value = a
            await ReadOnly()
            if a:
                words.append(int(self.dut.fb_data.value))
            self.observe()
            await FallingEdge(self.dut.clk)
            self.t += 1
        return G.ids_from_words(words, rtl.width, rtl.height, rtl.max_samples, rtl.prid_bits)

    def expect(self, frame):
        """Add a golden frame's packets to the run's workload."""
        wl = G.workload_from(frame, self.rtl.width, self.rtl.height, seq0=self.seq)
        for s in range(4):
            self.streams[s].extend(wl.streams[s])
        self.seq += len(frame.draws)

    def check_frame(self, name, frame, got):
        want = G.render(frame, self.rtl.width, self.rtl.height, self.rtl.max_samples)
        diff = np.argwhere(want != got)
        assert not len(diff), (
            f"{name}: {len(diff)} samples differ from the golden frame, first (y, x, s) "
            f"{diff[:4].tolist()}: got {[int(got[tuple(d)]) for d in diff[:4]]}, "
            f"expected {[int(want[tuple(d)]) for d in diff[:4]]}")
        return int((want > 0).sum())

    async def finish(self, name):
        for _ in range(20):
            await self.clock()
        self.driver.stop()
        for mon in self.monitors.values():
            mon.stop()
        wl = Workload(*[[it.packet for it in s] for s in self.streams])
        self.res.workload = wl
        self.res.cycles = self.t
        stats = Scoreboard(Spreader(**self.rtl.sq.spreader_params), wl).check(self.res)
        self.dut._log.info(
            "%s: %d clocks, %d allocations, per EU %s, refusals %d, failed passes %d, "
            "EU busy share %s, clocks with several inputs taken %d", name, self.t,
            stats.allocations, stats.per_eu, stats.refusals, stats.failed_passes,
            [f"{b / self.t:.2f}" for b in self.busy_clocks], self.multi)
        return stats


def small_scene(rng, samples):
    """A few random triangles on the build's frame, 16.8 coordinates."""
    p = params()
    n = int(rng.integers(3, 6))
    name = ["random", "mesh", "slivers"][int(rng.integers(3))]
    v = scenes.scene(name, p["width"], p["height"], n, int(rng.integers(1 << 30)),
                     subpix=G.SUBPIX, int_bits=G.int_bits_for(p["width"], p["height"]))
    return v[:n]


def random_latency(rng, lo=0, hi=6):
    return int(rng.integers(lo, hi + 1)), int(rng.integers(lo, hi + 1))


async def _start(dut):
    rng = await start(dut, idle=("fb_addr",))
    return rng


# ---------------------------------------------------------------- cocotb tests

@cocotb.test()
async def frontend_modes(dut):
    """A small scene in every MSAA mode: frame bit-equal to the golden model, random
    latencies, gaps and back-pressure; the allocation log passes the scoreboard."""
    rng = await _start(dut)
    run = Run(dut, rng)
    for samples in params()["modes"]:
        verts = small_scene(rng, samples)
        prids = rng.permutation(np.arange(1, len(verts) + 1) * 7 % 251 + 1)
        words = G.scene_cmds(verts, samples, prids)
        parsed = G.parse(words, width=run.rtl.width, height=run.rtl.height)
        (frame,) = parsed.frames
        run.expect(frame)
        got = await run.frame(words, latency=random_latency(rng))
        covered = run.check_frame(f"{samples}x", frame, got)
        dut._log.info("%dx: %d triangles, %d samples covered, %d clocks", samples,
                      len(verts), covered, int(dut.clocks.value))
        assert not int(dut.error.value), "error flag on good commands"
    await run.finish("modes")


@cocotb.test()
async def frontend_full_eus(dut):
    """Long stage latencies: the QCCs fill up, the spreader finds no EU with room and
    retries the packet from the top of its list; the frame is still right."""
    rng = await _start(dut)
    run = Run(dut, rng, gap=0.1, stall=0.1)
    p = params()
    verts = scenes.scene("mesh", p["width"], p["height"], 8, int(rng.integers(1 << 30)),
                         subpix=G.SUBPIX, int_bits=G.int_bits_for(p["width"], p["height"]))
    words = G.scene_cmds(verts, 4)
    (frame,) = G.parse(words, width=run.rtl.width, height=run.rtl.height).frames
    run.expect(frame)
    got = await run.frame(words, latency=random_latency(rng, 20, 40))
    run.check_frame("full", frame, got)
    stats = await run.finish("full_eus")
    retried = sum(1 for _, e in run.res.log if e.passes > 1)
    dut._log.info("full_eus: %d packets needed more than one pass", retried)
    assert retried > 0, "no packet was ever retried: no EU was ever full"


@cocotb.test()
async def frontend_malformed(dut):
    """Malformed commands between good draws: dropped, sticky error, the frame of the
    valid draws still right, nothing lost."""
    rng = await _start(dut)
    run = Run(dut, rng)
    w, h = run.rtl.width, run.rtl.height
    verts = small_scene(rng, 4)
    limit = 1 << (G.int_bits_for(w, h) + G.SUBPIX)
    good = [G.draw_cmd(k + 1, v) for k, v in enumerate(verts)]
    tri = verts[0]
    bad = [
        G.draw_cmd(9, tri)[:4],                                   # cut short by the next DRAW
        [G.data_word(G.GROUP_PRIM, G.OP_VERTEX, 5)],              # a VERTEX outside a draw
        G.draw_cmd(0, tri),                                       # primitive id 0
        G.draw_cmd(1 << 8, tri),                                  # id beyond prid_bits
        G.draw_cmd(10, [[limit, 0], [0, 0], [0, 256]]),           # coordinate out of range
        [G.data_word(G.GROUP_PRIM, 7, 0)],                        # unknown opcode
        [G.data_word(G.GROUP_STATE, 5, 0)],                       # unknown state opcode
        [G.data_word(G.GROUP_3D, 1, 0)],                          # unsupported 3D group
        G.frame_cmd(4),                                           # FRAME inside a frame
        [G.data_word(G.GROUP_PRIM, G.OP_FRAME, 6)],               # mode 64x
    ]
    words = G.draw_cmd(3, tri) + G.frame_cmd(4)                   # a DRAW outside a frame
    for k, g in enumerate(good):
        words += bad[k % len(bad)] + g
    words += sum(bad[len(good):], []) + G.draw_cmd(11, tri)[:3] + G.end_cmd()
    parsed = G.parse(words, width=w, height=h)
    assert parsed.error and len(parsed.frames) == 1
    (frame,) = parsed.frames
    assert [p for p, _ in frame.draws] == list(range(1, len(verts) + 1))
    run.expect(frame)
    got = await run.frame(words, latency=random_latency(rng))
    run.check_frame("malformed", frame, got)
    errors = int(dut.errors.value)
    assert errors & 0b110 and not errors >> 3, f"errors={errors:07b}"
    assert int(dut.error.value)
    # the error is sticky, and a later good frame is still right
    words = G.scene_cmds(verts, 2)
    (frame,) = G.parse(words, width=w, height=h).frames
    run.expect(frame)
    got = await run.frame(words)
    run.check_frame("after", frame, got)
    assert int(dut.error.value), "the error flag is not sticky"
    await run.finish("malformed")


@cocotb.test()
async def frontend_demo_scene(dut):
    """The demo's default scene (128x128 mesh + random triangles, 4x) on the demo's build:
    frame bit-equal to the golden model, log through the scoreboard."""
    from tb.demo import scene_vertices
    rng = await _start(dut)
    run = Run(dut, rng, gap=0.1, stall=0.1)
    verts = scene_vertices("mesh+random", 128, 128, 192, 1)
    words = G.scene_cmds(verts, 4)
    (frame,) = G.parse(words, width=128, height=128, modes=(4,)).frames
    run.expect(frame)
    got = await run.frame(words, latency=random_latency(rng), max_clocks=400000)
    run.check_frame("demo scene", frame, got)
    assert not int(dut.error.value)
    await run.finish("demo_scene")


@cocotb.test()
async def board_uart(dut):
    """The board top draws its ROM's frame at reset and sends one line over the UART:
    the CRC must be the golden frame's, the error field 0."""
    from hw.frontend import FrontendBoard
    p = params()
    board = FrontendBoard(commands=tuple(p["commands"]), divisor=p["divisor"],
                          frontend=p["frontend"])
    fe = board.frontend
    await start(dut, idle=("button",))
    line = await uart_line(dut, p["divisor"], max_clocks=200000)
    dut._log.info("UART: %r", line)
    (frame,) = G.parse(p["commands"], width=fe.width, height=fe.height,
                       modes=fe.modes).frames
    ids = G.render(frame, fe.width, fe.height, fe.max_samples)
    crc = G.checksum(G.fb_words(ids, fe.prid_bits), fe.fb.word_bits)
    fields = dict(kv.split("=") for kv in line.split()[1:])
    assert line.startswith("fresco "), line
    assert int(fields["crc"], 16) == crc, f"crc {fields['crc']}, golden {crc:08x}"
    assert int(fields["errors"], 16) == 0 and int(fields["clocks"], 16) > 0, line
    leds = int(dut.leds.value)
    assert leds & 0b010 and not leds & 0b101, f"leds {leds:04b}: expected done only"


async def uart_line(dut, divisor, *, max_clocks):
    """Decode 8N1 characters on ``uart_tx`` (``divisor`` clocks a bit) up to a newline."""
    text = ""
    t = 0
    while not text.endswith("\n"):
        # wait for a start bit
        while int(dut.uart_tx.value):
            await FallingEdge(dut.clk)
            t += 1
            assert t < max_clocks, f"no UART line within {max_clocks} clocks: {text!r}"
        for _ in range(divisor // 2):            # to the middle of the start bit
            await FallingEdge(dut.clk)
        assert not int(dut.uart_tx.value), "start bit too short"
        value = 0
        for bit in range(9):
            for _ in range(divisor):
                await FallingEdge(dut.clk)
            if bit < 8:
                value |= int(dut.uart_tx.value) << bit
            else:
                assert int(dut.uart_tx.value), "no stop bit"
        t += 10 * divisor
        text += chr(value)
    return text
