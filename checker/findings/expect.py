"""The policy's `expect:` table held against a report: each expectation met, different, or not compared, and why."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional

from prunecheck.spec.conditions import applicable
from prunecheck.spec.policy import Policy

from prunecheck.checker.result import Expectation, Report, Verdict


class Outcome(enum.Enum):
    """How one expectation came out; its value is the word every output prints."""

    MET = "met"
    DIFFERS = "differs"
    NOT_COMPARED = "not compared"


class NotCompared(enum.Enum):
    """Why an expectation is not compared with the report; its value is the words every output prints."""

    NOT_SELECTED = "not checked: not selected by --only"
    NOT_APPLICABLE = "not checked: it does not apply to this policy under its deployment"


@dataclass(frozen=True)
class Compared:
    """One expectation and what the check said of its condition (`verdict` None: not compared, for `why_not`)."""

    expectation: Expectation
    verdict: Optional[Verdict] = None
    why_not: Optional[NotCompared] = None

    @property
    def outcome(self) -> Outcome:
        if self.verdict is None:
            return Outcome.NOT_COMPARED
        return Outcome.MET if str(self.verdict) == self.expectation.verdict else Outcome.DIFFERS

    @property
    def severity(self) -> Verdict:
        """Where a difference stands on --fail-on's scale: a decided verdict contradicts the table as surely as a
        violation (VIOLATED); an `unknown` one only as an unknown does (UNKNOWN); HOLDS for anything else."""
        if self.outcome is not Outcome.DIFFERS:
            return Verdict.HOLDS
        return Verdict.UNKNOWN if self.verdict is Verdict.UNKNOWN else Verdict.VIOLATED


def compare(policy: Policy, report: Report) -> tuple:
    """A Compared per expectation of the policy, in the table's order. A condition the report has no verdict for
    is not compared (not selected, or it does not apply under the deployment): never a difference. The table is
    the file's claim of the verdicts it gets under the deployment it is judged under, the operator's (ADR 0037), so
    it is compared whatever that deployment is."""
    verdicts = {r.condition: r.verdict for r in report.results}
    applies = applicable(policy)
    out = []
    for e in policy.expects:
        if e.condition in verdicts:
            out.append(Compared(e, verdicts[e.condition]))
        else:
            why = NotCompared.NOT_SELECTED if e.condition in applies else NotCompared.NOT_APPLICABLE
            out.append(Compared(e, None, why))
    return tuple(out)


def differences(compared) -> tuple:
    """The expectations the report contradicts."""
    return tuple(c for c in compared if c.outcome is Outcome.DIFFERS)


__all__ = ["Compared", "NotCompared", "Outcome", "compare", "differences"]
