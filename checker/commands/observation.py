"""A row of `prunecheck reproduce` (a seed observation and what prunecheck found) and the helpers that produce rows."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from prunecheck.spec.actions import action_text
from prunecheck.spec.runtime import State, step

from prunecheck.checker.check import check
from prunecheck.checker.options import options_with
from prunecheck.checker.outputs.reasons import reason_text
from prunecheck.checker.result import Verdict

# The seeds' observations are fixed: bounded by solver resources (per query) rather than seconds, they are re-found
# alike on every machine, however loaded; the time limit only cuts off a hang.
BOUNDS = options_with(timeout=600.0, rlimit=100_000_000)


class Kind(enum.Enum):
    """What a row shows: the seed's failure, its prevention, the seed demo's own behaviour, or the seed's refusal."""

    FAILURE = "failure reproduced"
    PREVENTED = "prevented"
    DEMO = "demo behaviour reproduced"
    REFUSED = "refused, as the seed asks"


@dataclass(frozen=True)
class Row:
    """One observation: the seed's words, what prunecheck found, under which deployment, and whether it came out as
    the seed describes (`ok`)."""

    id: str
    kind: Kind
    seed: str
    found: str
    under: str
    ok: bool

    def label(self) -> str:
        if not self.ok:
            return "NOT AS THE SEED DESCRIBES"
        if self.kind is Kind.PREVENTED:
            return f"prevented by {self.under}"
        return f"{self.kind.value}{',' if self.kind is Kind.REFUSED else ''} under {self.under}"


class Run:
    """A scripted run on the runtime that keeps each transition."""

    def __init__(self, policy):
        self.policy, self.state, self.transitions = policy, State(), []

    def do(self, action):
        transition = step(self.policy, self.state, action)
        self.transitions.append(transition)
        self.state = transition.after
        return transition


def deployment_words(policy, *keys) -> str:
    """`key=value` for each key of the policy's deployment named."""
    return ", ".join(f"{key}={getattr(policy.deployment, key)}" for key in keys)


def checker_words(report, condition: str) -> str:
    """The checker's result for one condition, in one line: the trace of a violation, the reason otherwise."""
    r = report.result(condition)
    if r.verdict == Verdict.VIOLATED:
        steps = "; ".join(action_text(a, keywords=True) for a in r.trace.actions)
        return f"checker: {condition} violated in {r.trace.length()} (replayed on the runtime): {steps}"
    how = "certificate re-checked" if r.verdict == Verdict.HOLDS else reason_text(r.reason)
    return f"checker: {condition} {r.verdict} ({how})"


def with_keys(policy, **keys):
    return replace(policy, deployment=replace(policy.deployment, **keys))


def checker_pair(failing_id, fixed_id, words, condition, policy, keys, fix, kind=Kind.FAILURE) -> list:
    """The checker on `policy` (the condition violated, under its deployment `keys`) and on `policy` with the
    deployment keys `fix` (it holds)."""
    failing = check(policy, BOUNDS)
    fixed_policy = with_keys(policy, **fix)
    fixed = check(fixed_policy, BOUNDS)
    return [Row(failing_id, kind, words, checker_words(failing, condition), deployment_words(policy, *keys),
                failing.result(condition).verdict == Verdict.VIOLATED),
            Row(fixed_id, Kind.PREVENTED, words, checker_words(fixed, condition), deployment_words(fixed_policy, *fix),
                fixed.result(condition).verdict == Verdict.HOLDS)]
