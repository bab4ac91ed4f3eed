"""Golden outputs: every example policy's JSON report, ITF traces, certificates and scripts, compared byte for byte.

`python tests/golden.py --write` stores them under tests/data/golden/; `python tests/golden.py --compare` checks them
again and prints a unified diff of every difference (exit 1). Each policy is checked by `prunecheck check` in a fresh
interpreter, at the fixed bounds below (solvers bounded by rlimit, never by seconds), from a scratch directory laid out
as the repository is (examples/policies/FILE, out/FILE/ beside it), so relative paths come out the same.

Only what legitimately varies between runs is normalised, by text substitution on the files as written:
  - `"seconds": N` (a condition's time and each engine run's time in the statistics) -> "<seconds>";
  - `"queries": N` (the statistics' solver query counts) -> "<queries>";
  - `"timestamp": N` (the ITF trace's #meta, wall-clock milliseconds) -> "<timestamp>";
  - the python, z3 and cvc5 entries of every `"versions"` object (the environment, not the checker) -> "<version>";
  - the scratch directory's absolute path (the `--python` scripts' CHECKED_FROM) -> "<ROOT>".
Everything else (key order, whitespace, traces, invariants, SMT-LIB text, the prunecheck version) must match exactly.

Each policy gets a fresh interpreter so that no output can depend on what the process checked before (Spacer's did,
through z3's process-wide context, until checker/engines/spacer.py gave each Spacer query a context of its own).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from conftest import CLI_BOUNDS as BOUNDS, EXAMPLES, HANG_GUARD, ROOT  # rlimit decides; the time is a hang guard

GOLDEN = ROOT / "tests" / "data" / "golden"
DEPTH, SPANS = 6, 4  # 4: a compaction's ledger entry takes a slot of its own (evidence: on, the default)
POLICY_SUFFIXES = (".yaml", ".yml", ".json", ".py")
# Each policy's outputs go to out/NAME/ in the scratch directory (NAME/ in the golden one): report.json (stdout) and
# these folders for --out, --python and --emit-pytest.
FOLDERS = ("files", "python", "pytest")

_NUMBER = r"-?[0-9][0-9.eE+-]*"
_SUBSTITUTIONS = (
    (re.compile(rf'"seconds": {_NUMBER}'), '"seconds": "<seconds>"'),
    (re.compile(r'"queries": [0-9]+'), '"queries": "<queries>"'),
    (re.compile(r'"timestamp": [0-9]+'), '"timestamp": "<timestamp>"'),
)
_VERSIONS = re.compile(r'"versions": \{[^{}]*\}')
_ENVIRONMENT = re.compile(r'"(python|z3|cvc5)": "[^"]*"')


def example_policies() -> list:
    """The example policy files, sorted by name."""
    return sorted(p.name for p in EXAMPLES.iterdir() if p.suffix in POLICY_SUFFIXES)


def normalise(text: str, scratch: str) -> str:
    """The text with only the run-dependent parts (see the module docstring) replaced by placeholders."""
    text = text.replace(scratch, "<ROOT>")
    for pattern, placeholder in _SUBSTITUTIONS:
        text = pattern.sub(placeholder, text)
    return _VERSIONS.sub(lambda m: _ENVIRONMENT.sub(r'"\1": "<version>"', m.group(0)), text)


def _check_one(scratch: Path, name: str) -> None:
    out = scratch / "out" / name
    for folder in FOLDERS:
        (out / folder).mkdir(parents=True)
    command = [sys.executable, "-m", "prunecheck", "check", f"examples/policies/{name}", "--depth", str(DEPTH),
               "--spans", str(SPANS), "--format", "json", "--no-cache", *BOUNDS]
    for option, folder in (("--out", "files"), ("--python", "python"), ("--emit-pytest", "pytest")):
        command += [option, f"out/{name}/{folder}"]
    env = {k: v for k, v in os.environ.items() if k != "PRUNECHECK_DEBUG"}
    done = subprocess.run(command, cwd=scratch, capture_output=True, text=True, timeout=HANG_GUARD, env=env)
    if done.returncode not in (0, 1, 3):
        raise RuntimeError(f"prunecheck check {name} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    (out / "report.json").write_text(done.stdout)


def generate(names, scratch: Path) -> dict:
    """{NAME/relative path: normalised text} of every output of the named example policies, produced in scratch."""
    shutil.copytree(EXAMPLES, scratch / "examples" / "policies")
    for name in names:
        _check_one(scratch, name)
    out = scratch / "out"
    return {path.relative_to(out).as_posix(): normalise(path.read_text(), str(scratch))
            for path in sorted(out.rglob("*")) if path.is_file() and "__pycache__" not in path.parts}


def stored(names=None) -> dict:
    """{NAME/relative path: text} under tests/data/golden, only the named policies' outputs if names are given."""
    return {p.relative_to(GOLDEN).as_posix(): p.read_text() for p in sorted(GOLDEN.rglob("*"))
            if p.is_file() and (names is None or p.relative_to(GOLDEN).parts[0] in names)}


def differences(expected: dict, actual: dict) -> str:
    """A unified diff of every file that differs, is missing or is new; empty when they are the same."""
    lines = []
    for relative in sorted(set(expected) | set(actual)):
        before, after = expected.get(relative), actual.get(relative)
        if before != after:
            lines += difflib.unified_diff((before or "").splitlines(keepends=True),
                                          (after or "").splitlines(keepends=True),
                                          f"golden/{relative}" if before is not None else "/dev/null",
                                          f"now/{relative}" if after is not None else "/dev/null")
            lines += [] if not lines or lines[-1].endswith("\n") else ["\n"]
    return "".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="store the outputs under tests/data/golden")
    mode.add_argument("--compare", action="store_true", help="diff the outputs against tests/data/golden (exit 1)")
    args = parser.parse_args(argv)
    names = example_policies()
    with tempfile.TemporaryDirectory(prefix="golden-") as scratch:
        actual = generate(names, Path(scratch))
    if args.write:
        shutil.rmtree(GOLDEN, ignore_errors=True)
        for relative, text in actual.items():
            (GOLDEN / relative).parent.mkdir(parents=True, exist_ok=True)
            (GOLDEN / relative).write_text(text)
        print(f"wrote {len(actual)} files for {len(names)} policies under {GOLDEN.relative_to(ROOT)}")
        return 0
    diff = differences(stored(), actual)
    sys.stdout.write(diff or f"{len(actual)} files for {len(names)} policies: identical\n")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
