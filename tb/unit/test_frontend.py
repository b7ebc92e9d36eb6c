"""Pure-Python tests of the front end's golden model (``golden/frontend.py``)."""

import numpy as np
import pytest

from golden import frontend as G
from golden import raster as R

W = H = 32
TRI = np.array([[2 << 8, 2 << 8], [20 << 8, 4 << 8], [6 << 8, 24 << 8]])
BIG = np.array([[0, 0], [63 << 8, 0], [0, 63 << 8]])


def test_parse_frame_and_draws():
    words = G.scene_cmds([TRI, BIG], 4, prids=[5, 9])
    res = G.parse(words, width=W, height=H)
    assert not res.error
    (frame,) = res.frames
    assert frame.samples == 4
    assert [p for p, _ in frame.draws] == [5, 9]
    assert (frame.draws[0][1] == TRI).all()


@pytest.mark.parametrize("bad", [
    [G.data_word(G.GROUP_PRIM, G.OP_VERTEX, 1)],                  # vertex outside a draw
    G.draw_cmd(7, TRI)[:5],                                       # cut short
    G.draw_cmd(0, TRI),                                           # id 0
    G.draw_cmd(256, TRI),                                         # id beyond 8 bits
    G.draw_cmd(7, [[1 << 14, 0], [0, 0], [0, 1]]),                # coordinate out of range
    [G.data_word(G.GROUP_PRIM, 9, 0)],                            # unknown opcode
    [G.data_word(G.GROUP_2D, 1, 0)],                              # unsupported group
    G.frame_cmd(2),                                               # FRAME inside a frame
])
def test_malformed_dropped(bad):
    words = G.frame_cmd(4) + G.draw_cmd(1, TRI) + bad + G.draw_cmd(2, BIG) + G.end_cmd()
    res = G.parse(words, width=W, height=H)
    assert res.error
    assert [p for p, _ in res.frames[0].draws] == [1, 2]


def test_mode_not_built_is_refused():
    res = G.parse(G.frame_cmd(16) + G.draw_cmd(1, TRI) + G.end_cmd(), width=W, height=H,
                  modes=(4,))
    assert res.error and not res.frames


def test_highest_id_wins_whatever_the_order():
    a = G.render(G.Frame(4, [(3, TRI), (8, BIG)]), W, H, 4)
    b = G.render(G.Frame(4, [(8, BIG), (3, TRI)]), W, H, 4)
    assert (a == b).all()
    cov = R.coverage(BIG[None], W, H, 4, subpix=8, int_bits=6)
    assert (a[cov] == 8).all() and (a[~cov] == 0).all()


def test_lower_id_shows_where_alone():
    f = G.render(G.Frame(1, [(9, TRI), (4, BIG)]), W, H, 1)
    tri = R.coverage(TRI[None], W, H, 1, subpix=8, int_bits=6)
    assert (f[tri] == 9).all() and (f[~tri & (f > 0)] == 4).all()


def test_fb_words_round_trip():
    ids = np.random.default_rng(1).integers(0, 256, (H, W, 4))
    words = G.fb_words(ids, 8)
    assert len(words) == W * H // 4
    assert (G.ids_from_words(words, W, H, 4, 8) == ids).all()


def test_workload_order():
    frame = G.parse(G.scene_cmds([TRI, BIG], 2), width=W, height=H).frames[0]
    wl = G.workload_from(frame, W, H, seq0=5)
    vtx, tri, pix, _ = wl.streams
    assert [it.packet.base for it in vtx] == [40, 48]
    assert [it.packet.prid for it in tri] == [5, 6]
    markers = [it.packet for it in pix if not it.packet.mask]
    assert [(m.prid, m.last) for m in markers] == [(5, True), (6, True)]
    assert pix[-1].packet.prid == 6 and pix[-1].packet.last
