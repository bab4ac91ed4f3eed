"""Batch worker processes never import the caller's main module: check_many works from an unguarded script."""

import json
import subprocess
import sys

import pytest

import prunecheck
from prunecheck.checker.commands.batch import BatchItem, check_many
from prunecheck.checker.options import CheckOptions

from conftest import BOUNDS, EXAMPLES, HANG_GUARD

POLICIES = [str(EXAMPLES / "seed_flawed.yaml"), str(EXAMPLES / "seed_safe_design.yaml")]
SMALL = {"depth": 3, "spans": 2, "only": ["C1"]}

# No `if __name__ == "__main__":` guard, on purpose: a worker that imported this module would print the marker again
# and start a batch of its own.
UNGUARDED = """\
import json, sys
import prunecheck
from prunecheck.checker.commands.batch import BatchItem, check_many
from prunecheck.checker.options import CheckOptions
print("MARKER", flush=True)
paths, options = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for item in prunecheck.check_many(paths, jobs=2, **options):
    print("ITEM", json.dumps(str(item.report.verdict) if item.report is not None else item.error), flush=True)
"""


def _run(how: str, tmp_path):
    argv = [json.dumps(POLICIES), json.dumps({**SMALL, **BOUNDS})]
    if how == "file":
        (tmp_path / "unguarded.py").write_text(UNGUARDED)
        return subprocess.run([sys.executable, str(tmp_path / "unguarded.py"), *argv], capture_output=True,
                              text=True, timeout=HANG_GUARD, cwd=tmp_path)
    if how == "module":
        (tmp_path / "unguarded_module.py").write_text(UNGUARDED)
        return subprocess.run([sys.executable, "-m", "unguarded_module", *argv], capture_output=True, text=True,
                              timeout=HANG_GUARD, cwd=tmp_path)
    return subprocess.run([sys.executable, "-", *argv], input=UNGUARDED, capture_output=True, text=True,
                          timeout=HANG_GUARD, cwd=tmp_path)


@pytest.fixture(scope="module")
def expected():
    return [str(prunecheck.check(path, **SMALL, **BOUNDS).verdict) for path in POLICIES]


@pytest.mark.parametrize("how", ["file", "module", "stdin"])
def test_check_many_from_an_unguarded_script_runs_it_once(how, tmp_path, expected):
    done = _run(how, tmp_path)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr
    assert lines.count("MARKER") == 1, done.stdout + done.stderr
    got = [json.loads(line[len("ITEM "):]) for line in lines if line.startswith("ITEM ")]
    assert got == expected and "died" not in done.stdout
    assert "Traceback" not in done.stderr


def raising_worker(path, options, cache_dir):
    if path.endswith("raise.yaml"):
        raise RuntimeError("a worker function's own failure")
    return BatchItem(path, None, "not checked")


def test_a_worker_that_raises_fails_only_its_own_policy(tmp_path):
    paths = [str(tmp_path / name) for name in ("a.yaml", "raise.yaml", "b.yaml")]
    items = check_many(paths, CheckOptions(), jobs=2, worker=raising_worker)
    assert [item.path for item in items] == paths
    assert [item.internal for item in items] == [False, True, False]
    assert items[1].error == "the checker process failed: RuntimeError: a worker function's own failure"


def test_a_job_that_cannot_be_sent_fails_alone(tmp_path):
    paths = [str(tmp_path / name) for name in ("a.yaml", "b.yaml")]
    items = check_many(paths, CheckOptions(), jobs=2, worker=lambda path, options, cache_dir: None)
    assert [item.path for item in items] == paths
    assert all(item.internal and "cannot send the job" in item.error for item in items)
