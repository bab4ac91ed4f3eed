"""Counterexamples as pytest modules on the public API: named actions, the violation asserted, a regression test."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import List, Optional

from prunecheck.version import __version__
from prunecheck.spec.conditions import DESCRIPTIONS
from prunecheck.spec.policy import Policy
from prunecheck.spec.actions import action_args

from prunecheck.checker.language.document import policy_document
from prunecheck.checker.findings.finding import Finding, Findings
from prunecheck.checker.outputs.paths import write_whole


# The generated module; `{{` and `}}` are braces in it.
MODULE_TEMPLATE = '''"""prunecheck {version}: {condition} counterexample ({length}) for policy {name!r}.

{condition}: {description}.
Why: {cause}.

test_recorded_policy_violates_{low} replays the steps on the policy as it was checked (embedded below) and asserts
the violation at the last step, so the finding stays reproducible. test_policy_file_keeps_{low} runs the same steps
against the policy file as it is now, under the deployment DEPLOYMENT_OVERRIDE it was judged under when it was
checked: it fails while the policy is unsafe and passes once it is fixed, and then guards against a regression (it
is skipped if the current policy refuses one of the steps).
"""

import pathlib

import pytest

from prunecheck import ActionRefused, DeploymentOverride, load_policy, parse_policy, replay
from prunecheck import {names}

CONDITION = {condition!r}
MAX_SPANS = {spans}
POLICY_FILE = {policy_file}
RECORDED_POLICY = {recorded!r}
DEPLOYMENT_OVERRIDE = {override!r}


def steps():
    return [
{steps}
    ]


def violated_at_each_step(policy):
    """The set of conditions each step violates on the reference runtime."""
    return replay(policy, steps(), spans=MAX_SPANS)


def test_recorded_policy_violates_{low}():
    found = violated_at_each_step(parse_policy(RECORDED_POLICY, "recorded-policy.json", no_config=True,
                                               trust_policy_deployment=True))
    assert all(CONDITION not in f for f in found[:-1]), "the violation should come at the last step"
    assert CONDITION in found[-1]


@pytest.mark.skipif(POLICY_FILE is None or not POLICY_FILE.is_file(), reason="the policy file is not available")
def test_policy_file_keeps_{low}():
    policy = load_policy(POLICY_FILE, DeploymentOverride.of(DEPLOYMENT_OVERRIDE), no_config=True)
    try:
        found = violated_at_each_step(policy)
    except ActionRefused as refused:
        pytest.skip(f"the current policy makes this run impossible: {{refused}}")
    assert not any(CONDITION in f for f in found), f"{{CONDITION}} is still violated by {{POLICY_FILE}}"
'''


def _identifier(text: str) -> str:
    out = "".join(ch.lower() if ch.isascii() and ch.isalnum() else "_" for ch in text).strip("_")
    return ("p_" + out if out[:1].isdigit() else out)[:60] or "policy"


def pytest_module(policy: Policy, finding: Finding, test_dir: Path) -> str:
    """A self-contained pytest module for one counterexample (the policy file is found relative to the module)."""
    trace, explanation = finding.trace, finding.explanation
    condition = trace.condition
    names = sorted({type(a).__name__ for a in trace.actions})
    steps = []
    for action, label in zip(trace.actions, explanation.steps):
        args = ", ".join(f"{k}={v!r}" for k, v in action_args(action).items())
        steps.append(f"        {type(action).__name__}({args}),  # {label}")
    source = Path(policy.source)
    if source.is_file():
        relative = os.path.relpath(source.resolve(), test_dir.resolve())
        policy_file = f"pathlib.Path(__file__).resolve().parent / {Path(relative).as_posix()!r}"
    else:
        policy_file = "None"
    recorded = json.dumps(policy_document(policy), indent=1, ensure_ascii=True)
    override = policy.deployment.all_keys()  # the whole deployment it was judged under: the operator's facts
    low = condition.lower()
    cause = explanation.cause.summary.replace('"""', "'''")
    return MODULE_TEMPLATE.format(
        version=__version__, condition=condition, length=trace.length(), name=policy.name,
        description=DESCRIPTIONS[condition], cause=cause, low=low, names=", ".join(names), spans=trace.spans,
        policy_file=policy_file, recorded=recorded, override=override, steps="\n".join(steps))


def write_pytest_files(findings: Findings, out: Path, stem: Optional[str] = None) -> List[Path]:
    """One test module per counterexample of the report (alternatives included), named after stem (default: the
    policy's name); returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    stem = _identifier(stem or findings.policy.name)
    written = []
    for r in findings.report.results:
        for finding in findings.of(r.condition):
            suffix = "" if finding.number == 1 else f"_{finding.number}"
            path = out / f"test_{stem}_{r.condition.lower()}{suffix}.py"
            write_whole(path, pytest_module(findings.policy, finding, out))
            written.append(path)
    return written
