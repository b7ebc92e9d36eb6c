"""The figures file ``build/bench/results.json`` that ``make bench`` and ``make synth`` fill.

It is a list of records ``{block, metric, value, unit, params}``. Writing a record
replaces the one with the same block, metric and params, so runs can be repeated and
the file compared from run to run.
"""

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent.parent / "build" / "bench" / "results.json"

__all__ = ["RESULTS", "record", "save", "print_table", "build_name"]


def record(block, metric, value, unit, params=None):
    """One figure."""
    return {"block": block, "metric": metric, "value": value, "unit": unit,
            "params": dict(params or {})}


def build_name(name, params):
    """A build folder's name: ``name`` and the parameters, the same on every run."""
    return name + "".join(f"_{k}{v}" for k, v in params.items())


def _key(rec):
    return rec["block"], rec["metric"], json.dumps(rec["params"], sort_keys=True)


def save(records, path=RESULTS):
    """Merge ``records`` into the results file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    merged = {}
    if path.exists():
        merged = {_key(r): r for r in json.loads(path.read_text())}
    for rec in records:
        merged[_key(rec)] = rec
    path.write_text(json.dumps(sorted(merged.values(), key=_key), indent=1) + "\n")


def print_table(records):
    """Print the figures as an aligned table."""
    rows = [(r["block"], r["metric"], _fmt(r["value"]), r["unit"],
             ", ".join(f"{k}={v}" for k, v in r["params"].items())) for r in records]
    widths = [max(len(row[i]) for row in rows + [("block", "metric", "value", "unit", "")])
              for i in range(4)]
    header = ("block", "metric", "value", "unit", "params")
    for row in [header] + rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[4])


def _fmt(value):
    return f"{value:.4g}" if isinstance(value, float) else str(value)
