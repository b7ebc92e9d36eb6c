"""Unit tests of the wave block's golden model (``golden/wave.py``): the seed's Fig. 5 and
primitives-per-wave examples, every topology, indexed draws with reuse and restart, the
mode rule, bad draws, parameter checks and the VS|GS executor. The RTL is checked
against this model in ``tb/test_wave.py``."""

import random

import pytest

from golden.wave import (MAX_N, RESTART, Draw, Mode, Topology, assemble, build_waves,
                         check_max_k, check_wave_size, execute, fibers_per_primitive,
                         grid_mesh, index_transfers, pack_draw, pack_indices, pack_wave,
                         record_fields,
                         reference_outputs, resolve_mode, schedule, unpack_wave)

REP, NON = Mode.REPLICATED, Mode.NON_REPLICATED


def waves_of(draw, wave_size=32, indices=()):
    return build_waves(draw, assemble(draw, indices), wave_size)


def fiber_pairs(wave):
    """(vertex, primitive id) per fiber, ``None`` for nothing assigned."""
    return [(fb.vertex, fb.prim) for fb in wave.fibers]


# ---------------------------------------------------------------- the seed's Fig. 5

def test_fig5_replicated_three_waves():
    """L = 8, a strip of 8 vertices (6 triangles), N = 4: fiber 0 = (v0, p0), fiber 5 =
    (v3, p1), fiber 7 = (no vertex, p1), three waves."""
    waves = waves_of(Draw(Topology.TRIANGLE_STRIP, 6, mode=REP, n=4), 8)
    assert len(waves) == 3
    first = fiber_pairs(waves[0])
    assert first[0] == (0, 0) and first[5] == (3, 1) and first[7] == (None, 1)
    # Vulkan order: p1 = (v1, v3, v2), one fiber per input vertex, the 4th has none.
    assert first == [(0, 0), (1, 0), (2, 0), (None, 0), (1, 1), (3, 1), (2, 1), (None, 1)]
    assert [fb.gs_out_vert for fb in waves[0].fibers] == [0, 1, 2, 3] * 2
    assert [w.n_prims for w in waves] == [2, 2, 2] and waves[-1].last


def test_fig5_non_replicated_one_wave():
    """The same strip non-replicated: one wave; fiber 7 = (v7, no primitive)."""
    (wave,) = waves_of(Draw(Topology.TRIANGLE_STRIP, 6, mode=NON, n=4), 8)
    assert fiber_pairs(wave) == [(i, i if i < 6 else None) for i in range(8)]
    assert wave.fibers[7].vertex == 7 and wave.fibers[7].prim is None
    assert all(fb.gs_out_vert is None for fb in wave.fibers)
    # Fiber 1 owns p1 = (v1, v3, v2): it loads them from the fibers that shaded them.
    assert wave.fibers[1].in_addrs == (1 * 4, 3 * 4, 2 * 4)


# ---------------------------------------------------------------- primitives per wave, L = 32

SEED_EXAMPLES = {
    # name: (topology, K, N, seed's (replicated, non-replicated), this model's)
    "point_list_n4": (Topology.POINT_LIST, 1, 4, (8, 32), (8, 32)),
    "triangle_strip_n4": (Topology.TRIANGLE_STRIP, 3, 4, (8, 30), (8, 30)),
    # The seed says 2 replicated primitives per wave at N = 18, but F = max(N, K) = 18
    # fibers per primitive leave room for ⌊32/18⌋ = 1: the spec keeps the rule.
    "triangle_strip_n18": (Topology.TRIANGLE_STRIP, 3, 18, (2, 30), (1, 30)),
    "patch10_n4": (Topology.PATCH_LIST, 10, 4, (3, 3), (3, 3)),
}


@pytest.mark.parametrize("example", list(SEED_EXAMPLES))
def test_seed_primitives_per_wave(example):
    topology, k, n, seed, ours = SEED_EXAMPLES[example]
    got = tuple(waves_of(Draw(topology, 200, k=k, n=n, mode=mode))[0].n_prims
                for mode in (REP, NON))
    assert got == ours
    if example == "triangle_strip_n18":
        assert got[1] == seed[1] and got[0] == seed[0] - 1    # the recorded difference
    else:
        assert got == seed


# ---------------------------------------------------------------- the assembler

def test_non_indexed_topologies_in_vulkan_order():
    def prims(topology, count, k=1):
        return assemble(Draw(topology, count, first=10, k=k))
    assert prims(Topology.POINT_LIST, 3) == [(10,), (11,), (12,)]
    assert prims(Topology.LINE_LIST, 2) == [(10, 11), (12, 13)]
    assert prims(Topology.LINE_STRIP, 3) == [(10, 11), (11, 12), (12, 13)]
    assert prims(Topology.TRIANGLE_LIST, 2) == [(10, 11, 12), (13, 14, 15)]
    assert prims(Topology.TRIANGLE_STRIP, 4) == [(10, 11, 12), (11, 13, 12), (12, 13, 14),
                                                 (13, 15, 14)]
    assert prims(Topology.PATCH_LIST, 2, k=4) == [(10, 11, 12, 13), (14, 15, 16, 17)]
    assert prims(Topology.TRIANGLE_LIST, 0) == []


def test_vertex_ids_wrap_at_32_bits():
    assert assemble(Draw(Topology.LINE_STRIP, 2, first=0xFFFF_FFFE)) == [
        (0xFFFF_FFFE, 0xFFFF_FFFF), (0xFFFF_FFFF, 0)]


def indexed(topology, indices, k=1, **kw):
    return Draw(topology, len(indices), indexed=True, k=k, **kw), list(indices)


def test_indexed_strip_restart_starts_a_new_strip_with_even_parity():
    draw, idx = indexed(Topology.TRIANGLE_STRIP, [5, 6, 7, 8, RESTART, 1, 2, 3, 4])
    assert assemble(draw, idx) == [(5, 6, 7), (6, 8, 7), (1, 2, 3), (2, 4, 3)]
    draw, idx = indexed(Topology.LINE_STRIP, [5, 6, RESTART, RESTART, 7, RESTART, 8, 9])
    assert assemble(draw, idx) == [(5, 6), (8, 9)]


def test_indexed_lists_drop_the_incomplete_primitive_at_restart():
    draw, idx = indexed(Topology.TRIANGLE_LIST, [1, 2, 3, 4, 5, RESTART, 6, 7, 8, 9])
    assert assemble(draw, idx) == [(1, 2, 3), (6, 7, 8)]        # (4, 5) and (9,) dropped
    draw, idx = indexed(Topology.POINT_LIST, [1, RESTART, 2])
    assert assemble(draw, idx) == [(1,), (2,)]
    draw, idx = indexed(Topology.PATCH_LIST, [1, 2, 3, 4, 5, 6, 7, RESTART], k=4)
    assert assemble(draw, idx) == [(1, 2, 3, 4)]


def test_primitive_ids_count_emitted_primitives_across_restarts():
    draw, idx = indexed(Topology.TRIANGLE_STRIP, [0, 1, 2, RESTART, 3, 4, 5, 6], mode=NON)
    (wave,) = build_waves(draw, assemble(draw, idx), 8)
    assert [fb.prim for fb in wave.fibers[:3]] == [0, 1, 2]


# ---------------------------------------------------------------- the builder

def test_non_replicated_reuses_vertices_in_first_use_order():
    draw, idx = indexed(Topology.TRIANGLE_LIST, [7, 3, 9, 3, 9, 4, 4, 9, 7], mode=NON)
    (wave,) = build_waves(draw, assemble(draw, idx), 8)
    assert [fb.vertex for fb in wave.fibers] == [7, 3, 9, 4, None, None, None, None]
    assert wave.in_slots == [(0, 1, 2), (1, 2, 3), (3, 2, 0)]
    assert wave.n_fibers == 4 and wave.n_prims == 3


def test_non_replicated_wave_closes_when_the_next_vertices_do_not_fit():
    # L = 4: (0,1,2) then (2,3,4) needs 2 new vertices, only 1 slot left.
    draw, idx = indexed(Topology.TRIANGLE_LIST, [0, 1, 2, 2, 3, 4, 4, 4, 4], mode=NON)
    waves = build_waves(draw, assemble(draw, idx), 4)
    assert [w.n_prims for w in waves] == [1, 2]
    assert [fb.vertex for fb in waves[1].fibers] == [2, 3, 4, None]
    assert waves[1].in_slots == [(0, 1, 2), (2, 2, 2)]          # a degenerate triangle
    assert waves[1].first_prim == 1


def test_non_replicated_wave_closes_at_l_primitives():
    """One vertex drawn 10 times as points: a wave still owns at most L primitives."""
    draw, idx = indexed(Topology.POINT_LIST, [5] * 10, mode=NON)
    waves = build_waves(draw, assemble(draw, idx), 4)
    assert [w.n_prims for w in waves] == [4, 4, 2]
    assert [w.n_vertices for w in waves] == [1, 1, 1] and waves[0].n_fibers == 4


def test_replicated_addresses_follow_the_seed_formulas():
    draw = Draw(Topology.TRIANGLE_LIST, 5, mode=REP, n=5, vs_size=6)
    (wave, _) = waves_of(draw, 16)
    f = fibers_per_primitive(draw, 16)
    assert f == 5 and wave.n_prims == 3 and wave.n_fibers == 15
    for index, fiber in enumerate(wave.fibers[:15]):
        rel, j = divmod(index, f)
        assert fiber.vs_addr == index * 6
        assert fiber.in_addrs == tuple((rel * f + i) * 6 for i in range(3))
        assert fiber.gs_out_vert == j and fiber.vertex == (3 * rel + j if j < 3 else None)


def test_replicated_n_smaller_than_k_gives_fibers_without_output():
    (wave,) = waves_of(Draw(Topology.PATCH_LIST, 1, k=6, mode=REP, n=2), 8)
    assert [fb.gs_out_vert for fb in wave.fibers[:6]] == [0, 1, None, None, None, None]
    assert [fb.vertex for fb in wave.fibers[:6]] == list(range(6))


@pytest.mark.parametrize("n, gs_size, threshold, want", [
    (4, 4, 32 * 4 * 4, NON), (4, 4, 32 * 4 * 4 - 1, REP), (18, 8, 100_000, NON),
    (1024, 255, 0xFFFF_FFFF, NON), (1, 1, 0, REP)])
def test_automatic_mode_by_the_storage_threshold(n, gs_size, threshold, want):
    draw = Draw(Topology.POINT_LIST, 1, mode=Mode.AUTOMATIC, n=n, gs_size=gs_size,
                threshold=threshold)
    assert resolve_mode(draw, 32) == want


def test_zero_primitives_give_no_wave():
    assert schedule([(Draw(Topology.TRIANGLE_STRIP, 0), [])], 8).waves == []
    draw, idx = indexed(Topology.TRIANGLE_LIST, [1, 2, RESTART, RESTART])
    result = schedule([(draw, idx)], 8)
    assert result.waves == [] and not result.error


def check_wave_invariants(draw, prims, waves, wave_size):
    """Every primitive once, in order; its inputs shaded in its wave; greedy packing."""
    assert sum(w.n_prims for w in waves) == len(prims)
    start = 0
    for wave in waves:
        group = prims[start:start + wave.n_prims]
        assert wave.first_prim == start
        owners = [fb for fb in wave.fibers if fb.prim is not None]
        assert {fb.prim for fb in owners} == set(range(start, start + len(group)))
        for fb in owners:
            shaded = [wave.fibers[a // draw.vs_size].vertex for a in fb.in_addrs]
            assert tuple(shaded) == group[fb.prim - start]
        if wave.mode == NON:
            assert len({fb.vertex for fb in wave.fibers} - {None}) == wave.n_vertices
            following = prims[start + wave.n_prims:start + wave.n_prims + 1]
            if following:       # greedy: the next primitive would not have fitted
                needed = set(following[0]) - {fb.vertex for fb in wave.fibers}
                assert (wave.n_vertices + len(needed) > wave_size
                        or wave.n_prims == wave_size)
        start += wave.n_prims


@pytest.mark.parametrize("seed", range(6))
def test_random_indexed_draws_keep_the_packing_invariants(seed):
    rng = random.Random(seed)
    for _ in range(20):
        topology = rng.choice(Topology.ALL)
        k = rng.randint(1, 8)
        wave_size = rng.choice([4, 8, 16, 32, 64])
        mode = rng.choice([REP, NON])
        n = rng.randint(1, wave_size) if mode == REP else rng.randint(1, 64)
        pool = rng.randint(1, 40)
        idx = [RESTART if rng.random() < 0.05 else rng.randrange(pool)
               for _ in range(rng.randint(0, 120))]
        draw, idx = indexed(topology, idx, k=min(k, wave_size), mode=mode, n=n)
        prims = assemble(draw, idx)
        check_wave_invariants(draw, prims, build_waves(draw, prims, wave_size), wave_size)


# ---------------------------------------------------------------- bad draws

GOOD = (Draw(Topology.TRIANGLE_STRIP, 5, first=100, mode=NON), [])
BAD_DRAWS = {
    "unknown_topology": Draw(5, 3),
    "unknown_topology_15": Draw(15, 3, indexed=True),
    "patch_k0": Draw(Topology.PATCH_LIST, 2, k=0),
    "patch_k_over_max": Draw(Topology.PATCH_LIST, 2, k=9),
    "mode_3": Draw(Topology.POINT_LIST, 2, mode=3),
    "n_0": Draw(Topology.POINT_LIST, 2, n=0),
    "n_1025": Draw(Topology.POINT_LIST, 2, n=MAX_N + 1, mode=NON),
    "replicated_f_over_l": Draw(Topology.POINT_LIST, 2, n=9, mode=REP),
    "automatic_replicated_f_over_l": Draw(Topology.POINT_LIST, 2, n=9, mode=Mode.AUTOMATIC),
    "non_replicated_k_over_l": Draw(Topology.PATCH_LIST, 2, k=9, mode=NON),
}


@pytest.mark.parametrize("bad", list(BAD_DRAWS))
def test_bad_draw_is_dropped_with_a_sticky_error(bad):
    """Wave size 8, max_k 16 (8 for ``patch_k_over_max``): the bad draw gives no wave,
    sets the error, and the draws around it give the waves they give alone."""
    draw = BAD_DRAWS[bad]
    max_k = 8 if bad == "patch_k_over_max" else 16
    indices = list(range(draw.count)) if draw.indexed else []
    alone = schedule([GOOD], 8, max_k).waves
    result = schedule([GOOD, (draw, indices), GOOD], 8, max_k)
    assert result.error and [p[0] for p in result.problems] == [1]
    assert [pack_wave(w, max_k) for w in result.waves] == [
        pack_wave(w, max_k) for w in alone + alone]


def test_a_primitive_that_just_fits_is_not_an_error():
    assert not schedule([(Draw(Topology.POINT_LIST, 3, n=8, mode=REP), [])], 8).error
    assert not schedule([(Draw(Topology.PATCH_LIST, 3, k=8, mode=NON), [])], 8).error


# ---------------------------------------------------------------- parameters

@pytest.mark.parametrize("value, error, message", [
    (0, ValueError, "wave_size must be a power of two from 4 to 64, not 0"),
    (128, ValueError, "wave_size must be a power of two from 4 to 64, not 128"),
    (24, ValueError, "wave_size must be a power of two from 4 to 64, not 24"),
    ("32", TypeError, "wave_size must be a power of two from 4 to 64, not '32'"),
])
def test_wave_size_checks(value, error, message):
    with pytest.raises(error, match=message):
        check_wave_size(value)


def test_max_k_and_draw_field_checks():
    with pytest.raises(ValueError, match="max_k must be an integer from 3 to 32, not 33"):
        check_max_k(33)
    with pytest.raises(ValueError, match="n must be an integer from 0 to 2047, not 2048"):
        Draw(Topology.POINT_LIST, 1, n=2048)
    with pytest.raises(TypeError, match="count must be an integer"):
        Draw(Topology.POINT_LIST, 1.5)


# ---------------------------------------------------------------- records

def test_record_round_trip_and_layout():
    draw = Draw(Topology.TRIANGLE_STRIP, 9, first=0xFFFF_FFF0, mode=NON, vs_size=3)
    waves = waves_of(draw, 8)
    fields = dict(record_fields(8, 4))
    assert fields["vertex0"] == 32 and fields["in_slot7_3"] == 3
    assert sum(fields.values()) == 2 + 4 + 4 + 6 + 4 + 8 + 32 + 8 * 41 + 8 * 4 * 3
    values = unpack_wave(pack_wave(waves[1], 4), 8, 4)
    assert values["first_prim"] == 6 and values["n_prims"] == 3 and values["last"] == 1
    assert values["vertex0"] == 0xFFFF_FFF6 and values["in_slot1_1"] == 3
    assert values["in_slot1_3"] == 0 and values["vertex_valid5"] == 0
    assert pack_draw(Draw(Topology.PATCH_LIST, 7, k=5, n=3)) == (
        10 | 5 << 7 | 3 << 13 | 4 << 24 | 4 << 32 | 7 << 72)


# ---------------------------------------------------------------- the executor

@pytest.mark.parametrize("program, topology, n", [
    ("point_sprite", Topology.POINT_LIST, 4), ("pass_through", Topology.TRIANGLE_LIST, 3),
    ("pass_through", Topology.TRIANGLE_STRIP, 3)])
def test_both_modes_emit_the_same_output_vertices(program, topology, n):
    indices = grid_mesh(5, 4) if topology == Topology.TRIANGLE_LIST else list(range(37))
    if topology == Topology.TRIANGLE_STRIP:
        indices[17] = RESTART
    runs = {}
    for mode in (REP, NON):
        draw, idx = indexed(topology, indices, mode=mode, n=n, vs_size=4)
        prims = assemble(draw, idx)
        runs[mode] = execute(build_waves(draw, prims, 32), program, n)
        assert runs[mode].outputs == reference_outputs(draw, prims, program, n, 4)
    rep, non = runs[REP], runs[NON]
    prims = len(rep.outputs) // n
    assert rep.outputs == non.outputs and prims > 0
    # Replicated: F = max(N, K) fibers and N loop iterations per fiber, per primitive.
    f = max(n, 1 if program == "point_sprite" else 3)
    assert rep.fibers == f * prims and rep.gs_iterations == f * n * prims
    assert non.gs_iterations == n * prims and non.fibers < rep.fibers
    assert non.vs_invocations <= rep.vs_invocations


def test_grid_mesh_reuse_shades_fewer_vertices_per_triangle():
    indices = grid_mesh(8, 8)                        # 128 triangles, 81 vertices
    vs = {}
    for mode in (REP, NON):
        draw, idx = indexed(Topology.TRIANGLE_LIST, indices, mode=mode, n=3)
        vs[mode] = execute(build_waves(draw, assemble(draw, idx), 32), "pass_through", 3)
    assert vs[REP].vs_invocations == 3 * 128
    assert vs[NON].vs_invocations < 128          # under one shaded vertex per triangle


# ---------------------------------------------------------------- the index port

def _unpack_transfer(word):
    count = word & 3
    return [(word >> (2 + 32 * j)) & 0xFFFF_FFFF for j in range(count)]


def test_pack_indices_puts_count_low_and_lanes_in_order():
    word = pack_indices([7, RESTART])
    assert word & 3 == 2 and _unpack_transfer(word) == [7, RESTART]
    assert word >> (2 + 64) == 0                      # the unused lane is 0
    assert pack_indices([]) == 0
    with pytest.raises(ValueError, match="a transfer carries 0 to 3 indices, not 4"):
        pack_indices([1, 2, 3, 4])


@pytest.mark.parametrize("sizes", [None, [1], [2, 0, 3], [0, 1, 3, 2]])
def test_index_transfers_carry_every_index_once_in_order(sizes):
    indices = list(range(100, 117))
    transfers = index_transfers(indices, sizes)
    assert [i for t in transfers for i in _unpack_transfer(t)] == indices
    if sizes is None:                                # full transfers but the last
        assert [t & 3 for t in transfers] == [3] * 5 + [2]
    assert index_transfers([], sizes) == []
    with pytest.raises(ValueError, match="sizes must not all be 0"):
        index_transfers(indices, [0, 0])
