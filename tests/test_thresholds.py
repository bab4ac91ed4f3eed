"""Threshold policies (benchmarks/threshold_family.py) get the verdicts and shortest lengths derived by hand."""

import importlib.util
import sys

import pytest

from prunecheck.checker.engines.bmc import check_bounded
from prunecheck.checker.language.document import policy_document, policy_hash
from prunecheck.checker.language.loader import load_policy
from prunecheck.checker.engines.prove import prove
from prunecheck.checker.engines.replay import confirm
from prunecheck.checker.result import Verdict
from prunecheck.spec.conditions import applicable
from prunecheck.checker.outputs.reasons import reason_text

from conftest import ROOT

_spec = importlib.util.spec_from_file_location("threshold_family", ROOT / "benchmarks" / "threshold_family.py")
family_module = importlib.util.module_from_spec(_spec)
sys.modules["threshold_family"] = family_module
_spec.loader.exec_module(family_module)

FAMILY = {s.name: s for s in family_module.family()}
RLIMIT = 200_000_000
SAMPLE = [
    "age-100-wa",  # 3 actions, 103 steps; a self-certified audit
    "py-recency-100-wr",  # a Python float literal is its double: idle >= 99, not 100
    "frequency-13-wr",  # read once, then wait
    "reads-20-and-idle-100",  # read 21 times, wait 101 steps; every unsafe setting
    "step-1e6-and-age-lt-13",  # wait 999,999 steps before the edit
    "age-times-reads-1e6",  # nonlinear
    "not-record-reads-lt-3-ra",  # records excluded; the policy evicts a fresh rationale
    "edited-age-1000",  # records are never edited
    "ranked-idle-13-wras",  # a rank and a budget
    "safe-age-100",  # the seed's safe design: everything holds
]


def _load(tmp_path, spec):
    path = tmp_path / f"{spec.name}.{'py' if spec.python else 'yaml'}"
    path.write_text(family_module.render(spec))
    return load_policy(path)


def test_the_family_is_large_and_parses(tmp_path):
    assert len(FAMILY) >= 60 and sum(s.python for s in FAMILY.values()) >= 10
    for spec in FAMILY.values():
        policy = _load(tmp_path, spec)
        assert policy.name == spec.name and set(family_module.expectations(spec)) == set(applicable(policy))


@pytest.mark.parametrize("name", SAMPLE)
def test_violations_are_found_with_the_derived_shortest_length(tmp_path, name):
    spec = FAMILY[name]
    policy = _load(tmp_path, spec)
    expected = family_module.expectations(spec)
    violated = [c for c in applicable(policy) if expected[c][0] == "violated"]
    # Bounded by z3's resource count; the hour is a safety net a loaded machine never reaches. Without the
    # structural lemmas: every violation here is at most 5 actions deep, where they cost more than they save.
    found = check_bounded(policy, conditions=violated, timeout=3600.0, rlimit=RLIMIT, lemmas=False)
    results = {r.condition: r for r in found}
    for c in violated:
        r = results[c]
        assert r.verdict == Verdict.VIOLATED, f"{name} {c}: {reason_text(r.reason)}"
        confirm(policy, r.trace.actions, c, r.trace.spans)
        length = expected[c][1]
        if length is not None:
            assert (len(r.trace.actions), r.trace.steps) == length, f"{name} {c}: {r.trace.actions}"


@pytest.mark.parametrize("name", SAMPLE)
def test_safe_conditions_are_proved(tmp_path, name):
    spec = FAMILY[name]
    policy = _load(tmp_path, spec)
    safe = [c for c, (verdict, _) in family_module.expectations(spec).items() if verdict == "holds"]
    for c in safe:
        result = prove(policy, c, policy_document(policy), policy_hash(policy), timeout=3600.0, rlimit=RLIMIT)
        assert result.verdict == Verdict.HOLDS and result.certificate, f"{name} {c}: {reason_text(result.reason)}"
