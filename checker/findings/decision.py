"""The first seed's decision procedure, answered from a report's verdicts and deployment (no further solver query)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Optional

from prunecheck.spec.policy import Deployment

from prunecheck.checker.result import Report, Verdict

# C1-C4 must all hold for the seed's "reversible": "When any of these fails, the correct status of the edit is
# 'unknown reversibility,' not 'reversible.'"
VALIDITY = ("C1", "C2", "C3", "C4")


class Answer(enum.Enum):
    """A question's answer; a condition's `unknown`, or a condition not checked, is never a yes or a no."""

    YES = "yes"
    NO = "no"
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return self.value


class Note(enum.Enum):
    """What qualifies an answer, in fixed words."""

    IN_WINDOW = "the records live in the window the policy selects from"
    STRUCTURAL = ("the records live in the window, but C1 and R1 are proved: the policy's predicate structurally "
                  "excludes the undo region")
    COUNTER = "the seed's counter: the edit ledger holds every edit performed, undone or not, beside the records present"
    COUNTER_IN_WINDOW = "the self-certified audit counts only the edits it sees in the window"
    SILENT_PASS = "an undo without its record passes silently (U1)"
    REFUSED = "a stale undo is refused"
    MERGED = "merged as a new edit"
    NOT_CHECKED = "a condition it rests on was not checked"


class Consequence(enum.Enum):
    """What the seed says follows from the answers; its value is the text every output prints."""

    CACHE = "best-effort cache; reversibility claims provisional"
    UNKNOWN = "reversibility unknown"
    MECHANISM = "reversibility mechanism: reversible permits direct undo"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Question:
    """One of the seed's four questions: its words, the answer the seed calls unsafe, and what that means, quoted."""

    id: str
    words: str
    unsafe: Answer
    meaning: str


QUESTIONS = (
    Question("Q1", "Is the undo region inside the policy's address space?", Answer.YES,
             "the policy is not a reversibility mechanism, it is a best-effort cache"),
    Question("Q2", "Does the closure check run independently?", Answer.NO, "the certification is circular"),
    Question("Q3", "Is absence observable?", Answer.NO, "undo failure will surface as confabulation"),
    Question("Q4", "Is the edit idempotent under replay?", Answer.NO,
             "the undo is a merge, not a revert, and must be treated as a new edit with its own record"),
)
BY_ID = {q.id: q for q in QUESTIONS}
# Q2's other clause, for an answer decided by U1 rather than by the audit.
SILENT_PASS_WORDS = "a missing record is a hard error, never a silent pass"


@dataclass(frozen=True)
class Basis:
    """A condition an answer rests on and its verdict in the report (None: not checked)."""

    condition: str
    verdict: Optional[Verdict]

    def __str__(self) -> str:
        return f"{self.condition} {'not checked' if self.verdict is None else self.verdict}"


@dataclass(frozen=True)
class Answered:
    """A question answered: the answer, a note, the conditions and the deployment settings ((key, value), ...) it
    rests on."""

    question: Question
    answer: Answer
    because: tuple = ()
    settings: tuple = ()
    note: Optional[Note] = None
    meaning: Optional[str] = None  # the seed's words for this answer when not the question's own (Q2 on U1)

    @property
    def safe(self) -> bool:
        return self.answer not in (self.question.unsafe, Answer.UNKNOWN)


@dataclass(frozen=True)
class Decision:
    """The four answers in the seed's order, the consequence and where it was decided: a question's id, a condition's
    id (one of C1-C4 that does not hold), or "" when every answer and condition is safe."""

    answers: tuple
    consequence: Consequence
    at: str = ""
    failing: Optional[Basis] = None  # the condition of C1-C4 it was decided at

    def reason(self) -> str:
        """Why the consequence, one phrase: the seed's words for the deciding answer, or the failing condition."""
        if self.failing is not None:
            return f"{self.failing}, and \"when any of these fails, the correct status of the edit is 'unknown " \
                   f"reversibility'\""
        if not self.at:
            return "every answer safe and C1-C4 hold"
        answered = next(a for a in self.answers if a.question.id == self.at)
        if answered.answer is Answer.UNKNOWN:
            open_ = ", ".join(str(b) for b in answered.because if b.verdict is not Verdict.HOLDS)
            return f"{self.at} unknown" + (f" ({open_})" if open_ else "")
        return f"{self.at} {answered.answer}: \"{answered.meaning or answered.question.meaning}\""


def _bases(verdicts: dict, required: tuple, optional: tuple = ()) -> tuple:
    """The bases of the required conditions (not checked when absent) and of the optional ones present."""
    return tuple(Basis(c, verdicts.get(c)) for c in required) + tuple(
        Basis(c, verdicts[c]) for c in optional if c in verdicts)


def _by_conditions(question: Question, bases: tuple, bad: Answer, good: Answer, **given) -> Answered:
    """`bad` if some basis is violated, else unknown if some is unknown or not checked, else `good`."""
    verdicts = [b.verdict for b in bases]
    if Verdict.VIOLATED in verdicts:
        return Answered(question, bad, bases, **given)
    if None in verdicts:
        return Answered(question, Answer.UNKNOWN, bases, given.get("settings", ()), Note.NOT_CHECKED)
    if Verdict.UNKNOWN in verdicts:
        return Answered(question, Answer.UNKNOWN, bases, **given)
    return Answered(question, good, bases, **given)


def _q1(deployment: Deployment, verdicts: dict) -> Answered:
    """Inside when a live record is a candidate (C1) or the policy names the undo region (R1). With the records in
    the window, outside only where C1 and R1 are both proved (the seed's condition 1: "or a policy predicate that
    structurally excludes the undo region"); without both proofs they are inside."""
    settings = (("records", deployment.records),)
    bases = _bases(verdicts, ("C1",), ("R1",))
    if deployment.records == "window":
        proved = _bases(verdicts, ("C1", "R1"))
        if all(b.verdict is Verdict.HOLDS for b in proved):
            return Answered(BY_ID["Q1"], Answer.NO, proved, settings, Note.STRUCTURAL)
        return Answered(BY_ID["Q1"], Answer.YES, proved, settings, Note.IN_WINDOW)
    return _by_conditions(BY_ID["Q1"], bases, Answer.YES, Answer.NO, settings=settings)


def _q2(deployment: Deployment, verdicts: dict) -> Answered:
    """Independent when the audit is (deployment) and status never says reversible over a gap (C4); and, where the
    deployment reconstructs, no undo succeeds without its record (U1): "a missing record is a hard error, never a
    silent pass"."""
    settings = (("audit", deployment.audit), ("missing_record", deployment.missing_record))
    bases = _bases(verdicts, ("C4", "U1") if _reconstructs(deployment) else ("C4",))
    if deployment.audit == "policy":
        return Answered(BY_ID["Q2"], Answer.NO, bases, settings)
    answered = _by_conditions(BY_ID["Q2"], bases, Answer.NO, Answer.YES, settings=settings)
    if answered.answer is Answer.NO and verdicts.get("C4") is not Verdict.VIOLATED:
        return replace(answered, note=Note.SILENT_PASS, meaning=SILENT_PASS_WORDS)
    return answered


def _reconstructs(deployment: Deployment) -> bool:
    return deployment.missing_record == "reconstruct"


def _q3(deployment: Deployment, verdicts: dict) -> Answered:
    """From the seed's counter: "a monotone counter of edits-performed vs. records-present; a gap is the signal".
    The edit ledger (spec `counter`) holds every edit performed, undone or not, outside the window, and no step
    removes an entry, so a confabulated undo does not close the counter's gap: with an independent audit the pass
    that can read it is one the policy cannot suppress (C4 holds there by construction). A self-certified audit
    counts only the edits it sees in the window, so a gap vanishes with them: C4 decides. Whether an undo without
    its record then passes silently is Q2's ("a missing record is a hard error"), not this question's."""
    settings = (("audit", deployment.audit),)
    bases = _bases(verdicts, ("C4",))
    note = Note.COUNTER if deployment.audit == "independent" else Note.COUNTER_IN_WINDOW
    return _by_conditions(BY_ID["Q3"], bases, Answer.NO, Answer.YES, settings=settings, note=note)


def _q4(deployment: Deployment, verdicts: dict) -> Answered:
    """Idempotent when no undo reverts a re-edited span (C3): a stale undo is refused, or merged as a new edit."""
    note = {"versioned": Note.REFUSED, "merge": Note.MERGED}.get(deployment.undo)
    settings = (("undo", deployment.undo),)
    return _by_conditions(BY_ID["Q4"], _bases(verdicts, ("C3",)), Answer.NO, Answer.YES, settings=settings,
                          note=note)


def decide(deployment: Deployment, verdicts: dict) -> Decision:
    """The decision from a deployment and {condition: verdict} of the conditions checked."""
    answers = tuple(ask(deployment, verdicts) for ask in (_q1, _q2, _q3, _q4))
    if answers[0].answer is not Answer.NO:
        first = answers[0]
        consequence = Consequence.CACHE if first.answer is Answer.YES else Consequence.UNKNOWN
        return Decision(answers, consequence, first.question.id)
    unsafe = next((a for a in answers if not a.safe), None)
    if unsafe is not None:
        return Decision(answers, Consequence.UNKNOWN, unsafe.question.id)
    failing = next((c for c in VALIDITY if verdicts.get(c) is not Verdict.HOLDS), None)
    if failing is not None:
        return Decision(answers, Consequence.UNKNOWN, failing, Basis(failing, verdicts.get(failing)))
    return Decision(answers, Consequence.MECHANISM)


def decision_of(report: Report) -> Decision:
    """The decision for a report: its deployment (keys it leaves out are at their defaults) and its verdicts."""
    deployment = Deployment(**dict(report.deployment))
    return decide(deployment, {r.condition: r.verdict for r in report.results})


__all__ = ["QUESTIONS", "Answer", "Answered", "Basis", "Consequence", "Decision", "Note",
           "Question", "decide", "decision_of"]
