"""A check's findings, built once: each counterexample replayed and explained, and the policy's `expect:` table
compared with the verdicts, for every output to read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from prunecheck.spec.policy import Policy

from prunecheck.checker.engines.replay import replay
from prunecheck.checker.findings.decision import Decision, decision_of
from prunecheck.checker.findings.expect import compare, differences
from prunecheck.checker.findings.explain import Explanation, explanation_of
from prunecheck.checker.result import Report, Trace


@dataclass(frozen=True)
class Finding:
    """One counterexample: its condition and trace (`number` 1 for the result's own, 2, 3... for further ones), the
    transitions it replays to on the reference runtime, and its explanation."""

    condition: str
    trace: Trace
    number: int
    transitions: tuple
    explanation: Explanation

    @property
    def locations(self) -> tuple:
        """The positions, in the text the policy was parsed from, of the points the violation rests on (NOWHERE for
        a point written nowhere in it, such as an overridden deployment key)."""
        return tuple(point.loc for point in self.explanation.cause.points)


@dataclass(frozen=True)
class Findings:
    """A checked policy, its report, a Finding per counterexample of the report, in the report's order, the seed's
    decision procedure answered from the report, and the policy's expectations compared with it (expect.Compared,
    in the table's order); the last two computed here when not given."""

    policy: Policy
    report: Report
    items: tuple = ()
    decision: Optional[Decision] = None
    expectations: Optional[tuple] = None

    def __post_init__(self):
        if self.decision is None:
            object.__setattr__(self, "decision", decision_of(self.report))
        if self.expectations is None:
            object.__setattr__(self, "expectations", compare(self.policy, self.report) if self.policy else ())

    @property
    def unexpected(self) -> tuple:
        """The expectations the report contradicts: findings of their own."""
        return differences(self.expectations)

    def first(self, condition: str) -> Optional[Finding]:
        """The finding of the condition's own counterexample (its result's trace), if it has one."""
        return next((f for f in self.items if f.condition == condition and f.number == 1), None)

    def of(self, condition: str) -> tuple:
        """Every finding of the condition: its own counterexample, then the further ones."""
        return tuple(f for f in self.items if f.condition == condition)


def finding_of(policy: Policy, trace: Trace, number: int = 1) -> Finding:
    """Replay one counterexample and explain it; raises ReplayMismatch if it does not replay."""
    transitions = tuple(replay(policy, trace.actions, trace.spans))
    return Finding(trace.condition, trace, number, transitions, explanation_of(policy, transitions, trace.condition))


def findings_of(policy: Policy, report: Report) -> Findings:
    """The findings of a report on policy: every counterexample, the further ones included."""
    items = []
    for result in report.results:
        traces = ([result.trace] if result.trace is not None else []) + list(result.others)
        items += [finding_of(policy, trace, number) for number, trace in enumerate(traces, start=1)]
    return Findings(policy, report, tuple(items))


__all__ = ["Finding", "Findings", "finding_of", "findings_of"]
