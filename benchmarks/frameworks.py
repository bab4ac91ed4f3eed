"""The framework corpus (examples/frameworks/): every strategy checked at the default bounds under its own deployment
and under the safe default, with verdicts and wall-clock times, as the README's table.

Run: python benchmarks/frameworks.py [--write] [FILE.yaml ...]   (--write replaces the table in
examples/frameworks/README.md: only the rows of the strategies named, or the whole table when none is named)
Times are wall-clock seconds of one `check` at the default depth and spans (solvers bounded by rlimit, not by
time), without a cache, on whatever machine runs it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from prunecheck.checker.check import check
from prunecheck.checker.language.loader import load_policy
from prunecheck.checker.options import DEFAULTS, CheckOptions
from prunecheck.spec.policy import DeploymentOverride

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "examples" / "frameworks"
SAFE = DeploymentOverride.of({"records": "undo_region", "rationale": "decision_log", "evicted": "destroyed"},
                             "<safe default>")
START, END = "<!-- verdicts:start -->", "<!-- verdicts:end -->"
SHORT = {"HOLDS": "H", "VIOLATED": "V", "UNKNOWN": "?"}
# The default depth and spans; solvers bounded by z3's rlimit as the tests bound them (tests/test_frameworks.py), so
# the verdicts do not depend on the machine's load.
OPTIONS = CheckOptions(depth=DEFAULTS.depth, spans=DEFAULTS.spans, timeout=3600.0, rlimit=100_000_000)


def verdicts(path: Path, override=None) -> tuple:
    """(`C1:H C2:V ...` in condition order, seconds) for one check (H holds, V violated, ? unknown)."""
    policy = load_policy(path, override)
    started = time.monotonic()
    report = check(policy, OPTIONS)
    seconds = time.monotonic() - started
    return " ".join(f"{r.condition}:{SHORT[r.verdict.name]}" for r in report.results), seconds


def table(names=()) -> str:
    """The table's rows for the strategies named (file names in examples/frameworks/), or for all of them."""
    rows = ["| strategy | own deployment | s | safe default | s |", "|---|---|---:|---|---:|"]
    for path in sorted(CORPUS.glob("*.yaml")):
        if names and path.name not in names:
            continue
        own, own_s = verdicts(path)
        safe, safe_s = verdicts(path, SAFE)
        rows.append(f"| `{path.name}` | {own} | {own_s:.1f} | {safe} | {safe_s:.1f} |")
        print(rows[-1], file=sys.stderr, flush=True)
    return "\n".join(rows)


def written(old: str, text: str, whole: bool) -> str:
    """The README with its table replaced by `text` (whole), or with the rows of `text` replacing theirs."""
    head, rest = old.split(START, 1)
    body, tail = rest.split(END, 1)
    if not whole:
        new = {line.split("`")[1]: line for line in text.splitlines() if line.startswith("| `")}
        text = "\n".join(new.get(line.split("`")[1], line) if line.startswith("| `") else line
                         for line in body.strip("\n").splitlines())
    return f"{head}{START}\n{text}\n{END}{tail}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the table (or the named rows) in "
                                                             "examples/frameworks/README.md")
    parser.add_argument("strategies", nargs="*", metavar="FILE.yaml", help="measure only these strategies")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.strategies) - {p.name for p in CORPUS.glob("*.yaml")})
    if unknown:
        parser.error(f"not in {CORPUS.name}/: {', '.join(unknown)}")
    text = table(tuple(args.strategies))
    print(text)
    if args.write:
        readme = CORPUS / "README.md"
        readme.write_text(written(readme.read_text(encoding="utf-8"), text, not args.strategies), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
