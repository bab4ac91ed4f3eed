"""The seed's decision procedure (checker/findings/decision.py) as text lines and JSON, and the phrases HTML shows."""

from __future__ import annotations

from prunecheck.checker.findings.decision import Answered, Decision

HEADING = "decision (the first seed's decision boundary, in its order; from the verdicts above, no further query):"


def answer_text(answered: Answered) -> str:
    """`yes`, or `yes, merged as a new edit`."""
    return str(answered.answer) + (f", {answered.note.value}" if answered.note is not None else "")


def basis_text(answered: Answered) -> str:
    """What an answer rests on: `records=undo_region; C1 holds, R1 holds`."""
    settings = ", ".join(f"{key}={value}" for key, value in answered.settings)
    conditions = ", ".join(str(b) for b in answered.because)
    return "; ".join(part for part in (settings, conditions) if part)


def consequence_text(decision: Decision) -> str:
    return f"{decision.consequence} ({decision.reason()})"


def decision_lines(decision: Decision) -> list:
    """The text report's decision section, after its verdict."""
    lines = [HEADING]
    for a in decision.answers:
        lines.append(f"  {a.question.id}  {a.question.words}  {answer_text(a)}  ({basis_text(a)})")
    lines.append(f"consequence: {consequence_text(decision)}")
    return lines


def decision_json(decision: Decision) -> dict:
    """The JSON report's `decision` (report_schema's `$defs/decision`)."""
    questions = [{"id": a.question.id, "question": a.question.words, "answer": str(a.answer),
                  "note": "" if a.note is None else a.note.value,
                  "because": [{"condition": b.condition, "verdict": "not checked" if b.verdict is None
                               else str(b.verdict)} for b in a.because],
                  "settings": dict(a.settings)} for a in decision.answers]
    return {"questions": questions, "consequence": str(decision.consequence), "at": decision.at,
            "reason": decision.reason()}


__all__ = ["answer_text", "basis_text", "consequence_text", "decision_json", "decision_lines"]
