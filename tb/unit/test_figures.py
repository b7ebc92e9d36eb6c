"""The figures plumbing: nextpnr's Fmax read from a log, the routed front-end figure
``make demo`` prints its frame time at, the per-design yosys prefix of ``tb.synth``, and
the board clock's PLL settings."""

import pytest

from tb import board, demo, results, synth
from tb.synth import FMAX_METRIC, fmax_from_log


def test_fmax_is_each_clocks_last_figure_and_the_slowest_clock(tmp_path):
    log = tmp_path / "top.tim"
    log.write_text(
        "Info: Max frequency for clock '$glbnet$clk': 31.00 MHz (FAIL at 100.00 MHz)\n"
        "Info: Max frequency for clock 'clk100$TRELLIS_IO_IN': 312.00 MHz (PASS)\n"
        "Info: Max frequency for clock '$glbnet$clk': 67.55 MHz (PASS at 25.00 MHz)\n")
    assert fmax_from_log(log) == 67.55


def test_demo_takes_the_lowest_routed_front_end_figure(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "RESULTS", tmp_path / "results.json")
    assert demo._fmax() is None
    results.save([
        results.record("frontend", FMAX_METRIC, 67.55, "MHz", {"board": "ecpix5-85"}),
        results.record("frontend", FMAX_METRIC, 41.4, "MHz", {"board": "ulx3s-85f"}),
        results.record("frontend", FMAX_METRIC, "not routed in 90 min", "MHz",
                       {"design": "frontend.frontend"}),
        results.record("qcc", FMAX_METRIC, 20.0, "MHz", {"design": "qcc.qcc"}),
    ], results.RESULTS)
    assert demo._fmax() == (41.4, "ulx3s-85f")


@pytest.mark.parametrize("f_in, f_out", [(100, 25), (100, 75), (25, 75), (100, 70),
                                         (25, 50), (100, 80)])
def test_board_pll_makes_the_clock_exactly_within_the_ecp5_ranges(f_in, f_out):
    divide_in, multiply, divide_out = board.pll_dividers(f_in, f_out)
    assert f_in / divide_in * multiply == pytest.approx(f_out)
    assert 3.125 <= f_in / divide_in <= 400
    assert 400 <= f_out * divide_out <= 800


def test_board_pll_refuses_a_clock_it_cannot_make():
    with pytest.raises(ValueError, match="clock_mhz .* not 73.3"):
        board.pll_dividers(25, 73.3)


def test_abc9_delay_target_only_for_the_block_rasterizers_msaa_builds():
    """The yosys prefix of tb.synth: the delay target for the block rasterizer's builds
    with an MSAA mode (the default build has every mode), none for its 1x-only build
    (whose routed figure was taken without one) or for other designs."""
    delay = f"scratchpad -set abc9.D {synth.RASTER_ABC9_DELAY_PS}"
    assert synth.yosys_prefix("raster.block", {}) == delay
    assert synth.yosys_prefix("raster.block", {"modes": (1, 4)}) == delay
    assert synth.yosys_prefix("raster.block", {"modes": (4,)}) == delay
    assert synth.yosys_prefix("raster.block", {"modes": (1,)}) == ""
    assert synth.yosys_prefix("qcc.qcc", {}) == ""
