"""Counterexamples as standalone Python scripts that replay them through prunecheck's public API alone."""

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

# Everything taken from the policy (its name, its file's path, the explanation) enters the script only as a Python
# literal written by repr(), never as code or docstring text.
_BODY = '''
import sys

import prunecheck
from prunecheck import {names}

CONDITION = {condition!r}
SPANS = {spans!r}
POLICY_NAME = {name!r}
CHECKED_FROM = {source!r}
POLICY = {policy!r}
WHY = {why!r}
STEPS = [
{steps}
]


def main() -> int:
    policy = prunecheck.parse_policy(POLICY, "recorded-policy.json", no_config=True, trust_policy_deployment=True)
    violated = prunecheck.replay(policy, STEPS, spans=SPANS)
    for number, (action, conditions) in enumerate(zip(STEPS, violated), start=1):
        print(f"{{number}}. {{action}}: {{', '.join(sorted(conditions)) or 'no violation'}}")
    if CONDITION in violated[-1] and not any(CONDITION in found for found in violated[:-1]):
        print(f"{{CONDITION}} violated at the last step: reproduced ({{WHY}})")
        return 0
    print(f"{{CONDITION}} is not violated exactly at the last step: NOT reproduced")
    return 1


if __name__ == "__main__":
    sys.exit(main())
'''


def counterexample_script(policy: Policy, finding: Finding) -> str:
    """A standalone script: the policy as checked (embedded), the steps, and a replay on the reference runtime that
    exits 0 when the condition is violated exactly at the last step, 1 otherwise."""
    trace, explanation = finding.trace, finding.explanation
    steps = "\n".join(f"    {type(a).__name__}({', '.join(f'{k}={v!r}' for k, v in action_args(a).items())}),"
                      for a in trace.actions)
    head = (f'#!/usr/bin/env python3\n"""prunecheck {__version__}: a {trace.condition} counterexample '
            f'({trace.length()}), replayed on the reference runtime.\n\n{trace.condition}: '
            f'{DESCRIPTIONS[trace.condition]}.\nThe policy is embedded as it was checked (POLICY, deployment '
            f'included), so this script needs\nonly an installed prunecheck and runs from any directory. Exit code: '
            f'0 reproduced, 1 not.\n"""\n')
    return head + _BODY.format(
        names=", ".join(sorted({type(a).__name__ for a in trace.actions})), condition=trace.condition,
        spans=trace.spans, name=policy.name,
        source=os.path.abspath(policy.source) if os.path.isfile(policy.source) else policy.source,
        policy=json.dumps(policy_document(policy), ensure_ascii=True), why=explanation.cause.summary,
        steps=steps)


def _identifier(text: str) -> str:
    out = "".join(ch.lower() if ch.isascii() and ch.isalnum() else "_" for ch in text).strip("_")
    return out[:40] or "policy"


def write_scripts(findings: Findings, out: Path, stem: Optional[str] = None) -> List[Path]:
    """One script per counterexample of the report (further ones included), named after stem (default: the policy's
    name and hash; outputs.file_stems gives one no other policy of the run shares) and the condition; returns the
    paths written."""
    policy, report = findings.policy, findings.report
    out.mkdir(parents=True, exist_ok=True)
    stem = _identifier(stem) if stem else f"{_identifier(policy.name)}_{report.policy_hash[:8]}"
    written = []
    for r in report.results:
        for finding in findings.of(r.condition):
            path = out / f"{stem}_{r.condition.lower()}{'' if finding.number == 1 else f'_{finding.number}'}.py"
            write_whole(path, counterexample_script(policy, finding))
            written.append(path)
    return written
