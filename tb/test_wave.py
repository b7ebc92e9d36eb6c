"""Testbenches of the wave scheduler (``hw/wave.py``) against ``golden/wave.py``.

Pytest runs each build on both simulators; inside the simulator the cocotb tests below
send draws (and indices) with random input gaps, take wave records with random
back-pressure and compare them record for record with the golden model: every topology,
indexed and not, with restart, in every mode; the seed's Fig. 5 and L = 32 examples;
primitives that do not fit; every bad draw (sticky error, draw dropped, nothing after
it lost). The assembler alone is checked word for word as well.
"""

import os

import cocotb
import pytest
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly

from golden.wave import (MAX_N, RESTART, Draw, Mode, Topology, assembler_words, draw_problem,
                         grid_mesh, index_transfers, pack_draw, pack_indices, pack_wave,
                         schedule, unpack_wave)
from tb.harness import (WIDE_DESIGN, StreamDriver, StreamMonitor, check_equal, params,
                        run_cocotb, simulators, start, wait_until)

BUILDS = {
    # name: (parameters, cocotb tests)
    "l8_k4": ({"wave_size": 8, "max_k": 4},
              ["random_draws", "seed_examples", "bad_draws", "reuse_and_restart",
               "excess_index_lanes"]),
    "l32_k6": ({"wave_size": 32, "max_k": 6}, ["seed_examples"]),
}
SOAK_ENV = "FRESCO_SOAK"


# ---------------------------------------------------------------- pytest entry points

@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("build", list(BUILDS))
def test_scheduler(build, simulator):
    build_params, tests = BUILDS[build]
    run_cocotb("wave.scheduler", "tb.test_wave", simulator, build_params, testcase=tests,
               **WIDE_DESIGN)


@pytest.mark.parametrize("simulator", simulators())
def test_assembler(simulator):
    run_cocotb("wave.assembler", "tb.test_wave", simulator, {"max_k": 5},
               testcase=["assembler_words_match"], **WIDE_DESIGN)


@pytest.mark.slow
@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("build", ["l8_k4", "default", "l64"])
def test_scheduler_soak(build, simulator):
    """``make regress``: longer random traffic, and the default build (L = 32, K to 32)."""
    build_params = {"default": {}, "l64": {"wave_size": 64, "max_k": 3}}.get(
        build, BUILDS.get(build, ({},))[0])
    run_cocotb("wave.scheduler", "tb.test_wave", simulator, build_params,
               testcase=["random_draws", "bad_draws"], extra_env={SOAK_ENV: "8"},
               **WIDE_DESIGN)


@pytest.mark.parametrize("design, kwargs, error, message", [
    ("wave.builder", {"wave_size": 24}, ValueError,
     "wave_size must be a power of two from 4 to 64, not 24"),
    ("wave.builder", {"wave_size": 128}, ValueError,
     "wave_size must be a power of two from 4 to 64, not 128"),
    ("wave.scheduler", {"wave_size": 2}, ValueError,
     "wave_size must be a power of two from 4 to 64, not 2"),
    ("wave.scheduler", {"max_k": 33}, ValueError, "max_k must be an integer from 3 to 32, not 33"),
    ("wave.assembler", {"max_k": 2}, ValueError, "max_k must be an integer from 3 to 32, not 2"),
    ("wave.assembler", {"max_k": "8"}, TypeError, "max_k must be an integer from 3 to 32, not '8'"),
])
def test_parameter_errors(design, kwargs, error, message):
    from hw.gen import build
    with pytest.raises(error, match=message):
        build(design, kwargs)


# ---------------------------------------------------------------- traffic

def random_draw(rng, wave_size, max_k, *, mode=None, topology=None, indexed=None):
    """A good random draw and its indices (small counts, some restarts, shared ids)."""
    topology = int(rng.choice(Topology.ALL)) if topology is None else topology
    k = int(rng.integers(1, max_k + 1)) if topology == Topology.PATCH_LIST else 1
    mode = int(rng.integers(0, 3)) if mode is None else mode
    indexed = bool(rng.integers(0, 2)) if indexed is None else indexed
    kk = k if topology == Topology.PATCH_LIST else {0: 1, 1: 2, 2: 2, 3: 3, 4: 3}[topology]
    n = int(rng.integers(1, wave_size + 1))
    gs_size = int(rng.integers(1, 9))
    threshold = wave_size * n * gs_size + int(rng.integers(-2, 3))
    if mode == Mode.NON_REPLICATED and rng.random() < 0.3:
        n = int(rng.integers(1, MAX_N + 1))          # any N: one fiber per primitive
    count = int(rng.integers(0, 40))
    indices = []
    if indexed:
        pool = int(rng.integers(1, 30))
        base = int(rng.integers(0, 1 << 32))
        indices = [RESTART if rng.random() < 0.06 else (base + int(rng.integers(0, pool))) % RESTART
                   for _ in range(count)]
    draw = Draw(topology, count, first=int(rng.integers(0, 1 << 32)), indexed=indexed,
                k=k, mode=mode, n=n, vs_size=int(rng.integers(1, 17)), gs_size=gs_size,
                threshold=max(0, threshold))
    return draw, indices


def random_transfers(rng, draws):
    """The index transfers of ``draws``: per draw, full transfers or a random split
    (transfers of 0 to 3 indices)."""
    transfers = []
    for draw, indices in draws:
        if draw.indexed:
            sizes = None if rng.random() < 0.5 else [int(x) for x in rng.integers(0, 4, 8)]
            transfers += index_transfers(indices, sizes if sizes and any(sizes) else None)
    return transfers


def describe_record(wave_size, max_k):
    """A short form of a record for failure messages."""
    def describe(word):
        v = unpack_wave(word, wave_size, max_k)
        vertices = [v[f"vertex{i}"] if v[f"vertex_valid{i}"] else None for i in range(wave_size)]
        return (f"<mode {v['mode']} last {v['last']} prims {v['first_prim']}+{v['n_prims']} "
                f"fibers {v['n_fibers']} f {v['f']} k {v['k']} vertices {vertices}>")
    return describe


class SchedulerBench:
    """Drivers on ``draw`` and ``index``, a monitor on ``o``, and the golden model."""

    def __init__(self, dut, rng, *, gap=0.3, stall=0.3):
        self.dut = dut
        self.rng = rng
        self.wave_size = params().get("wave_size", 32)
        self.max_k = params().get("max_k", 32)
        self.draw = StreamDriver(dut, "draw", rng, gap=gap)
        self.index = StreamDriver(dut, "index", rng, gap=gap)
        self.out = StreamMonitor(dut, "o", rng, stall=stall)
        self.draws = []

    def send(self, draws, *, transfers=None):
        """Queue ``draws``; their index transfers are a random split unless given."""
        self.draws += draws
        self.draw.send(pack_draw(d) for d, _ in draws)
        self.index.send(random_transfers(self.rng, draws) if transfers is None else transfers)

    def expected(self):
        return schedule(self.draws, self.wave_size, self.max_k)

    async def check(self, *, error=None, extra_error=False):
        """Wait for every expected record, then a while for extra ones; compare."""
        want = self.expected()
        words = [pack_wave(w, self.max_k) for w in want.waves]
        work = sum(d.count for d, _ in self.draws) + len(self.draws)
        await wait_until(self.dut, lambda: len(self.out.items) >= len(words)
                         and self.draw.idle and self.index.idle,
                         timeout=40 * work + 500, what=f"{len(words)} wave records")
        await ClockCycles(self.dut.clk, 30)
        check_equal("o", words, self.out.items, describe_record(self.wave_size, self.max_k))
        await ReadOnly()
        expected_error = want.error or extra_error
        assert int(self.dut.error.value) == expected_error, (
            f"error is {int(self.dut.error.value)}, expected {expected_error} "
            f"({want.problems or 'no bad draw'}, excess index lanes {extra_error})")
        if error is not None:
            assert want.error == error
        await FallingEdge(self.dut.clk)
        return want


def soak():
    return int(os.environ.get(SOAK_ENV, "1"))


# ---------------------------------------------------------------- scheduler tests

@cocotb.test()
async def random_draws(dut):
    """Random good draws of every topology, indexed or not, in every mode."""
    rng = await start(dut)
    bench = SchedulerBench(dut, rng)
    L, K = bench.wave_size, bench.max_k
    draws = [random_draw(rng, L, K, mode=mode, topology=topology)
             for _ in range(soak()) for topology in Topology.ALL for mode in (0, 1, 2)]
    draws = [d for d in draws if not draw_problem(d[0], L, K)]
    order = rng.permutation(len(draws))
    bench.send([draws[i] for i in order])
    want = await bench.check(error=False)
    dut._log.info("%d draws, %d waves", len(draws), len(want.waves))


@cocotb.test()
async def seed_examples(dut):
    """Fig. 5 (at L = 8) and the seed's primitives-per-wave examples (at L = 32), both
    modes, back to back with no gaps and no back-pressure, then with both."""
    rng = await start(dut)
    L = params().get("wave_size", 32)
    if L == 8:
        draws = [(Draw(Topology.TRIANGLE_STRIP, 6, mode=mode, n=4), []) for mode in (0, 1)]
    else:
        draws = [(Draw(topology, 35, first=1000, k=k, n=n, mode=mode), [])
                 for topology, k, n in ((Topology.POINT_LIST, 1, 4),
                                        (Topology.TRIANGLE_STRIP, 3, 4),
                                        (Topology.TRIANGLE_STRIP, 3, 18),
                                        (Topology.PATCH_LIST, 6, 4))
                 for mode in (0, 1)]
    for gap, stall in ((0, 0), (0.3, 0.3)):
        bench = SchedulerBench(dut, rng, gap=gap, stall=stall)
        bench.send(draws)
        want = await bench.check(error=False)
        if L == 8:      # the figure's facts, read from the hardware's own records
            first = unpack_wave(bench.out.items[0], 8, bench.max_k)
            assert (first["vertex0"], first["rel_prim0"]) == (0, 0)
            assert (first["vertex5"], first["rel_prim5"]) == (3, 1)
            assert not first["vertex_valid7"] and first["prim_valid7"]
            non = unpack_wave(bench.out.items[3], 8, bench.max_k)
            assert non["vertex7"] == 7 and not non["prim_valid7"] and len(want.waves) == 4
        for port in (bench.draw, bench.index, bench.out):
            port.stop()


@cocotb.test()
async def reuse_and_restart(dut):
    """Indexed draws that reuse vertices across primitives, restart strips, repeat one
    vertex in a primitive, and patches that close a wave only after their last chunk."""
    rng = await start(dut)
    bench = SchedulerBench(dut, rng)
    NON = Mode.NON_REPLICATED
    mesh = grid_mesh(4, 3)

    def idx(topology, indices, k=1, mode=NON, n=3):
        return Draw(topology, len(indices), indexed=True, k=k, mode=mode, n=n), indices
    bench.send([
        idx(Topology.TRIANGLE_LIST, mesh),
        idx(Topology.TRIANGLE_LIST, mesh, mode=Mode.REPLICATED),
        idx(Topology.TRIANGLE_STRIP, [5, 6, 7, 8, RESTART, 1, 2, 3, 4, 4, 4, RESTART]),
        idx(Topology.TRIANGLE_LIST, [1, 1, 1, 2, 2, 3, 3, 4, 3, 9, RESTART, 8, 7, 6]),
        idx(Topology.LINE_STRIP, [9, 9, 8, RESTART, RESTART, 7, 6]),
        idx(Topology.POINT_LIST, [5] * 12),                         # L primitives, 1 vertex
        idx(Topology.PATCH_LIST, [0, 1, 2, 3, 4, 5, 6, 3, 1, 2, 7, 8], k=4),
        idx(Topology.PATCH_LIST, list(range(20)) + [3, 3, 3, 3], k=4),
        (Draw(Topology.PATCH_LIST, 5, k=4, mode=NON), []),
        (Draw(Topology.TRIANGLE_LIST, 0, mode=NON), []),            # no wave
        idx(Topology.TRIANGLE_STRIP, [RESTART, 1, RESTART]),        # no primitive
        (Draw(Topology.POINT_LIST, 9, mode=Mode.REPLICATED, n=8), []),   # F = L just fits
        (Draw(Topology.PATCH_LIST, 3, k=4, mode=Mode.REPLICATED, n=8), []),
    ])
    await bench.check(error=False)


def bad_draws_for(wave_size, max_k):
    """One draw per kind of bad input, for a build of ``wave_size`` and ``max_k``."""
    draws = {
        "unknown topology": Draw(5, 3),
        "unknown topology, indexed": Draw(15, 4, indexed=True),
        "patch size 0": Draw(Topology.PATCH_LIST, 2, k=0, indexed=True),
        "patch size over max_k": Draw(Topology.PATCH_LIST, 2, k=max_k + 1),
        "mode 3": Draw(Topology.POINT_LIST, 2, mode=3, indexed=True),
        "N = 0": Draw(Topology.POINT_LIST, 2, n=0),
        "N = 1025": Draw(Topology.TRIANGLE_LIST, 2, n=MAX_N + 1, mode=Mode.NON_REPLICATED),
        "replicated F > L": Draw(Topology.POINT_LIST, 2, n=wave_size + 1,
                                 mode=Mode.REPLICATED),
        "automatic picks replicated, F > L": Draw(Topology.TRIANGLE_STRIP, 2,
                                                  n=wave_size + 1, mode=Mode.AUTOMATIC,
                                                  threshold=10),
    }
    if max_k > wave_size:
        draws["non-replicated K > L"] = Draw(Topology.PATCH_LIST, 2, k=wave_size + 1,
                                             mode=Mode.NON_REPLICATED)
    return draws


@cocotb.test()
async def bad_draws(dut):
    """Each bad draw between good ones: the error rises at the first and stays, the bad
    draws give no wave (their indices are read and dropped), the good ones all theirs."""
    rng = await start(dut)
    bench = SchedulerBench(dut, rng)
    L, K = bench.wave_size, bench.max_k
    good = [random_draw(rng, L, K) for _ in range(3 * soak())]
    good = [d for d in good if not draw_problem(d[0], L, K)]
    bench.send(good)
    await bench.check(error=False)
    for name, draw in bad_draws_for(L, K).items():
        indices = [int(i) for i in rng.integers(0, 50, draw.count)] if draw.indexed else []
        assert draw_problem(draw, L, K), f"{name} is not bad at L = {L}, max_k = {K}"
        bench.send([(draw, indices)] + [random_draw(rng, L, K, mode=Mode.NON_REPLICATED,
                                                    topology=Topology.TRIANGLE_STRIP)])
    await bench.check(error=True)


@cocotb.test()
async def excess_index_lanes(dut):
    """A good indexed draw whose last transfer carries two indices more than its count:
    they are dropped and set the error, the draw's waves and the next draw's are whole."""
    rng = await start(dut)
    bench = SchedulerBench(dut, rng)
    draw = Draw(Topology.TRIANGLE_LIST, 7, indexed=True, mode=Mode.NON_REPLICATED, n=3)
    indices = [1, 2, 3, 4, 5, 6, 7]
    after = Draw(Topology.TRIANGLE_STRIP, 5, indexed=True, mode=Mode.REPLICATED, n=3)
    after_indices = [9, 8, 7, 6, 5]
    transfers = (index_transfers(indices[:6]) + [pack_indices([7, 100, 101])]
                 + index_transfers(after_indices))
    bench.send([(draw, indices), (after, after_indices)], transfers=transfers)
    want = await bench.check(extra_error=True)
    assert not want.error and len(want.waves) >= 2


# ---------------------------------------------------------------- the assembler alone

def _masked(words, max_k):
    """Assembler words with the vertices from K on cleared (they are unspecified)."""
    out, k = [], 0
    for word in words:
        kind = word & 3
        if kind == 0:
            k = (word >> 4) & 0x3F
        elif kind == 1:
            word &= (1 << (2 + 32 * k)) - 1
        out.append(word)
    return out


@cocotb.test()
async def assembler_words_match(dut):
    """The assembler alone: DRAW, PRIM and END words of random draws, bad ones dropped."""
    rng = await start(dut)
    max_k = params()["max_k"]
    draws = [random_draw(rng, 64, max_k, topology=t) for t in Topology.ALL for _ in range(3)]
    draws += [(Draw(5, 2, indexed=True), [1, 2]), (Draw(Topology.PATCH_LIST, 2, k=6), []),
              (Draw(Topology.TRIANGLE_STRIP, 3, first=0xFFFF_FFFE), [])]
    order = rng.permutation(len(draws))
    draws = [draws[i] for i in order]
    drv = StreamDriver(dut, "draw", rng)
    index = StreamDriver(dut, "index", rng)
    out = StreamMonitor(dut, "o", rng)
    drv.send(pack_draw(d) for d, _ in draws)
    index.send(random_transfers(rng, draws))
    want = assembler_words(draws, max_k)
    await wait_until(dut, lambda: len(out.items) >= len(want) and index.idle and drv.idle,
                     timeout=40 * len(want) + 500, what="assembler words")
    await ClockCycles(dut.clk, 20)
    check_equal("o", want, _masked(out.items, max_k))
    await ReadOnly()
    assert int(dut.error.value) == 1, "two bad draws were sent"
