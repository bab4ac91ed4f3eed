"""Mutation testing: plant one fault at a time in a copy of the package and report how many the tests kill.

Run: python benchmarks/mutation.py [--write benchmarks/MUTATION.md] [--only NAME]
Each mutant is a textual edit of one source file, applied to a temporary copy of the package that shadows the
installed one (PYTHONPATH); the test subset runs with -x, so a killed mutant stops at its first failing test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"prunecheck": "api", "prunecheck/spec": "spec", "prunecheck/checker": "checker",
            "prunecheck/proofs": "proofs"}
TESTS = ["tests/test_runtime.py", "tests/test_model.py", "tests/test_parametric.py", "tests/test_examples.py",
         "tests/test_prove.py", "tests/test_differential.py", "tests/test_cli.py"]

# (name, what it models, file, original text, mutated text)
MUTANTS = [
    ("edit-guard-dropped", "drop a guard: edits may target spans outside the window namespace", "spec/model.py",
     'z3.And(a_used, a_alive, a_ns == NS["window"], content, room_for_two)', "z3.And(a_used, a_alive, room_for_two)"),
    ("truncation-comparison", "flip a comparison: truncate while the window is at or over budget", "spec/model.py",
     "truncated.append(z3.And(remaining[i], rest - older > budget))",
     "truncated.append(z3.And(remaining[i], rest - older >= budget))"),
    ("pinned-frame-forgotten", "forget a frame condition: a span's pin is lost on every step", "spec/model.py",
     'becomes("pinned", (appended, False),', 'becomes("pinned", (z3.BoolVal(True), False), (appended, False),'),
    ("audit-sees-window", "let the independent audit see only the window", "spec/model.py",
     'if self.dep.audit == "independent":\n            return z3.Not(self.gap(t))',
     'if False:\n            return z3.Not(self.gap(t))'),
    ("c1-ignores-liveness", "C1 also counts records of undone edits", "spec/model.py",
     "return z3.Or([z3.And(t.live_edit(i), self.candidate(t, i)) for i in range(self.n)])",
     "return z3.Or([z3.And(t.is_record(i), self.candidate(t, i)) for i in range(self.n)])"),
    ("compare-cross-multiplication", "compare fractions without clearing denominators", "spec/symbolic.py",
     "left, right = x.scaled_num(y.den), y.scaled_num(x.den)", "left, right = x.num, y.num"),
    ("pair-blind-undo-checks", "unsound abstraction: a blind undo still checks freshness", "spec/parametric.py",
     'a.fresh if dep.undo == "versioned" else z3.BoolVal(True)', "a.fresh"),
    ("pair-no-truncation", "unsound abstraction: a budget never truncates the pair", "spec/parametric.py",
     "if self.policy.budget is not None else z3.BoolVal(False))", "if False else z3.BoolVal(False))"),
    ("runtime-undo-unversioned", "the runtime's undo skips the version check", "spec/runtime.py",
     'if policy.deployment.undo == "versioned" and target.version != info.version:', "if False:"),
    ("runtime-status-blind", "the runtime's status ignores dead records", "spec/runtime.py",
     "return REVERSIBLE if all(state.span(e.record).alive for e in known) else UNKNOWN", "return REVERSIBLE"),
    ("replay-skipped", "counterexamples are reported without a replay", "checker/bmc.py",
     "transitions = confirm(policy, trace_actions, condition, spans, symbolic)", "transitions = []"),
    ("houdini-trusts-init", "Houdini keeps candidates without checking consecution", "checker/invariants.py",
     "    phases = ([] if init is None else [(list(init), at_init)]) + [(list(step), after)]",
     "    phases = ([] if init is None else [(list(init), at_init)])"),
    ("certificate-safety-skipped", "the certificate re-check forgets the safety obligation", "checker/certificate.py",
     '"safety": safety + ["(assert Bad)"],', '"safety": safety,'),
]


def build(tmp: Path, mutant) -> None:
    for target, source in PACKAGES.items():
        shutil.copytree(ROOT / source, tmp / target, ignore=shutil.ignore_patterns("__pycache__"))
    _, _, path, old, new = mutant
    package_path = tmp / {"spec": "prunecheck/spec", "checker": "prunecheck/checker"}[path.split("/")[0]] / \
        path.split("/", 1)[1]
    text = package_path.read_text()
    if text.count(old) != 1:
        raise SystemExit(f"mutant {mutant[0]}: the original text occurs {text.count(old)} times in {path}")
    package_path.write_text(text.replace(old, new))


def run(mutant, timeout: float) -> tuple:
    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp), mutant)
        env = {**os.environ, "PYTHONPATH": tmp, "CI": "1"}
        started = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *TESTS],
                                  cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "timeout", time.perf_counter() - started, ""
        failing = [line.split(" ")[1] for line in done.stdout.splitlines() if line.startswith("FAILED")]
        status = "killed" if done.returncode != 0 else "survived"
        return status, time.perf_counter() - started, failing[0] if failing else ""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", metavar="FILE")
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--timeout", type=float, default=1200)
    parser.add_argument("--append", action="store_true", help="append the table to --write (a re-run of some mutants)")
    args = parser.parse_args(argv)
    rows = []
    for mutant in MUTANTS:
        if args.only and mutant[0] not in args.only:
            continue
        status, seconds, test = run(mutant, args.timeout)
        rows.append((mutant[0], mutant[1], status, seconds, test))
        print(f"{mutant[0]:30s} {status:9s} {seconds:6.0f} s  {test}", flush=True)
    killed = sum(1 for r in rows if r[2] == "killed")
    summary = f"{killed} of {len(rows)} mutants killed ({100 * killed / max(1, len(rows)):.0f}%)"
    print(summary)
    if args.write:
        command = " ".join(["python benchmarks/mutation.py"] + (argv if argv is not None else sys.argv[1:]))
        head = ["## Re-run", ""] if args.append else ["# Mutation testing", ""]
        lines = head + [f"Generated by `{command}` on {time.strftime('%Y-%m-%d')}.", "",
                        "| mutant | fault | result | time (s) | first failing test |", "|---|---|---|---:|---|"]
        lines += [f"| {n} | {d} | {s} | {t:.0f} | {f} |" for n, d, s, t, f in rows]
        lines += ["", summary, ""]
        text = "\n".join(lines)
        if args.append:
            text = Path(args.write).read_text() + "\n" + text
        Path(args.write).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
