"""Benchmark: wall time and full checks of `prunecheck repair` per policy, optionally against another install.

Run: python benchmarks/bench_repair.py [--runs N] [--before PYTHON] [--write benchmarks/REPAIR.md]
Each run is a fresh interpreter (`python -m prunecheck.checker repair FILE --format json`), so every figure includes
start-up and cold caches, as a user sees them. Three scenarios: the defaults (--timeout 30); solvers that give up
(--rlimit 30000: the hard candidates end `unknown`, as when the 30 s run out on a loaded machine); and solvers at
the margin (--rlimit 66000: whether a candidate is decided depends on what the process solved before it).
The policies: every example that `check` finds violated, and three written the way a model writes them. `--before`
names the interpreter of another install (e.g. a venv of the previous commit) to measure in the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "policies"
SCENARIOS = {"defaults": [], "solvers give up": ["--timeout", "3600", "--rlimit", "30000"],
             "solvers at the margin": ["--timeout", "3600", "--rlimit", "66000"]}
MODEL_WRITTEN = {
    "recency_thresholds.yaml": (
        "name: recency-thresholds\n"
        "description: Drop spans that have gone stale; keep anything read recently or pinned.\n"
        'evict: not pinned and kind != "record" and (idle > 50 or (recency < 0.02 and frequency < 0.05) '
        "or tokens > 1500)\n"
        "budget: 64000\n"
        "deployment:\n  records: window\n  pins: self\n  audit: policy\n"),
    "role_based.yaml": (
        "name: role-based\n"
        "description: Tool output and stack traces are disposable; messages only once old; rationale kept.\n"
        'evict: kind in ["tool_output", "stack_trace"] or (kind == "message" and age > 120 and reads < 3)\n'
        "rank: age * -1\n"
        "budget: 100000\n"
        "deployment:\n  records: window\n  rationale: window\n  audit: policy\n"),
    "last_n.yaml": (
        "name: last-n\n"
        "description: Keep the last 40 steps of context; older unpinned spans go once the window is over 32k tokens.\n"
        "evict: age > 40 and not pinned and window_tokens > 32000\n"
        "deployment:\n  records: window\n  pins: self\n  undo: blind\n"),
}


def policies(directory: Path) -> list:
    """The violated examples (by their expect table) and the model-written policies, written into directory."""
    from prunecheck.checker.language.loader import expected_verdicts

    paths = [p for p in sorted(EXAMPLES.iterdir()) if "violated" in expected_verdicts(p).values()]
    for name, text in MODEL_WRITTEN.items():
        (directory / name).write_text(text)
        paths.append(directory / name)
    return paths


def one_run(python: str, path: Path, flags: list) -> tuple:
    started = time.perf_counter()
    done = subprocess.run([python, "-m", "prunecheck.checker", "repair", str(path), "--format", "json", *flags],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    seconds = time.perf_counter() - started
    doc = json.loads(done.stdout)
    return seconds, done.returncode, doc


def change_name(change: dict) -> str:
    """records (a deployment key), exclude record+rationale, drop budget."""
    if change["kind"] == "exclude":
        return "exclude " + "+".join(change["kinds"])
    return change.get("key") or change["kind"].replace("_", " ")


def outcome(code: int, doc: dict) -> str:
    changes = ", ".join(change_name(c) for c in doc["changes"])
    undecided = "; ".join(", ".join(change_name(c) for c in u["changes"]) for u in doc.get("undecided", []))
    text = f"{doc['status']}" + (f": {changes}" if changes else "")
    return text + (f" (undecided: {undecided})" if undecided else "") + f", exit {code}"


def measure(python: str, path: Path, flags: list, runs: int) -> dict:
    times, last = [], None
    for _ in range(runs):
        seconds, code, doc = one_run(python, path, flags)
        times.append(seconds)
        last = (code, doc)
    code, doc = last
    return {"seconds": statistics.median(times), "checked": doc["search"]["checked"],
            "candidates": doc["search"]["candidates"], "outcome": outcome(code, doc)}


def machine() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, load {load:.1f} at start; "
            f"Python {platform.python_version()}")


def table(rows: list, before: bool) -> str:
    head = "| scenario | policy | "
    if before:
        head += "before: s | before: full checks | before: outcome | "
    head += "s | full checks | outcome |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for scenario, name, old, new in rows:
        cells = [scenario, name]
        if before:
            cells += [f"{old['seconds']:.1f}", str(old["checked"]), old["outcome"]]
        cells += [f"{new['seconds']:.1f}", str(new["checked"]), new["outcome"]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per policy at the defaults (median wall time)")
    parser.add_argument("--limited-runs", type=int, default=1, help="runs per policy with limited solvers")
    parser.add_argument("--before", metavar="PYTHON", help="interpreter of another install to measure too")
    parser.add_argument("--write", metavar="FILE", help="also write the table as Markdown")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for scenario, flags in SCENARIOS.items():
            runs = args.runs if not flags else args.limited_runs
            for path in policies(Path(tmp)):
                old = measure(args.before, path, flags, runs) if args.before else None
                new = measure(sys.executable, path, flags, runs)
                rows.append((scenario, path.name, old, new))
                print(json.dumps({"scenario": scenario, "policy": path.name, "before": old, "after": new}),
                      flush=True)
    text = table(rows, bool(args.before))
    print(text)
    if args.write:
        Path(args.write).write_text(
            "# `prunecheck repair`: time and full checks per policy\n\n"
            f"Made by `python benchmarks/bench_repair.py --runs {args.runs} --limited-runs {args.limited_runs}"
            + (" --before PYTHON" if args.before else "") + f"` on {machine()}. Wall time is the median over the "
            "runs of a fresh interpreter (start-up included); a full check is one candidate given to the checker "
            "(the others are refuted by replaying a known counterexample, or not tried). \"solvers give up\": "
            "`--rlimit 30000`, the solvers run out on the hard candidates, as the 30 s do on a loaded machine; "
            "\"solvers at the margin\": `--rlimit 66000`, where a candidate is decided or not depending on what the "
            "process solved before it.\n\n"
            + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
