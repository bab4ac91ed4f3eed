"""The framework corpus (examples/frameworks/): every strategy parses, cites its source, and has the verdicts the
README's table states, under its own deployment and under the safe default (benchmarks/frameworks.py writes it)."""

import re

import pytest

from prunecheck.checker.check import check
from prunecheck.checker.language.loader import load_policy
from prunecheck.checker.options import DEFAULTS, CheckOptions
from prunecheck.spec.policy import DeploymentOverride

from conftest import BOUNDS, ROOT

CORPUS = ROOT / "examples" / "frameworks"
README = CORPUS / "README.md"
SAFE = DeploymentOverride.of({"records": "undo_region", "rationale": "decision_log", "evicted": "destroyed"})
SHORT = {"HOLDS": "H", "VIOLATED": "V", "UNKNOWN": "?"}
ROW = re.compile(r"^\| `(?P<file>[a-z_]+\.yaml)` \| (?P<own>[^|]+) \| [0-9.]+ \| (?P<safe>[^|]+) \| [0-9.]+ \|$")


def stated() -> dict:
    """file name -> (verdicts under its own deployment, under the safe default), as the README's table states them."""
    text = README.read_text(encoding="utf-8").split("<!-- verdicts:start -->", 1)[1].split("<!-- verdicts:end -->")[0]
    rows = [ROW.match(line) for line in text.splitlines() if line.startswith("| `")]
    assert all(rows), "a row of the README's verdict table does not parse"
    return {m["file"]: (_parse(m["own"]), _parse(m["safe"])) for m in rows}


def _parse(cell: str) -> dict:
    return dict(item.split(":") for item in cell.split())


def _verdicts(path, override=None) -> dict:
    # The default depth and spans, as the README states them; the solver bounded by rlimit (as benchmarks/frameworks.py
    # measures them), so load cannot change them.
    options = CheckOptions(depth=DEFAULTS.depth, spans=DEFAULTS.spans, **BOUNDS)
    return {r.condition: SHORT[r.verdict.name] for r in check(load_policy(path, override), options).results}


def test_every_strategy_is_in_the_table_and_cites_its_source():
    files = sorted(p.name for p in CORPUS.glob("*.yaml"))
    assert len(files) >= 12 and sorted(stated()) == files
    frameworks = {name.split("_")[0] for name in files}
    assert len(frameworks) >= 8
    for name in files:
        header = (CORPUS / name).read_text(encoding="utf-8").split("\nname:")[0]
        assert "# source" in header and "# defaults" in header and "approximated" in header, name
        load_policy(CORPUS / name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.glob("*.yaml")))
def test_every_stated_verdict_holds(name):
    own, safe = stated()[name]
    assert _verdicts(CORPUS / name) == own
    assert _verdicts(CORPUS / name, SAFE) == safe
