"""What `prunecheck repair` prints: a RepairResult (commands/repair.py) as text or as one JSON document."""

from __future__ import annotations

from prunecheck.checker.outputs.reasons import RECHECKED, reason_text
from prunecheck.checker.result import Report, Result, Verdict


def _evidence_note(r: Result) -> str:
    """What stands behind a result: for a `holds` (the only verdict a repair's reports show), its re-checked
    certificate; otherwise the whole reason."""
    return RECHECKED if r.verdict == Verdict.HOLDS and r.certificate is not None else reason_text(r.reason)


def _condition_lines(report: Report) -> list:
    return [f"  {r.condition}  {r.verdict}  {r.engine}; {_evidence_note(r)}" for r in report.results]


def verdict_line(report: Report) -> str:
    """"violated (C1 violated, C2 violated, C3 holds, C4 violated, P1 unknown)": each condition as `check` said."""
    each = ", ".join(f"{r.condition} {r.verdict}" for r in report.results)
    return f"{report.verdict} ({each})"


def describe_changes(changes: tuple, form: str) -> str:
    """A change set as `repair` prints it: each change described, separated by semicolons."""
    return "; ".join(c.describe(form) for c in changes)


def _undecided_lines(result) -> list:
    if not result.undecided:
        return []
    which = "preferred to this repair, " if result.repaired else ""
    lines = [f"{which}undecided within the bounds (raise --timeout or --rlimit to decide):"]
    return lines + [f"  - {describe_changes(u.changes, result.form)} ({', '.join(u.unknown)} unknown)"
                    for u in result.undecided]


def result_text(result, stale_expect: tuple = ()) -> str:
    original = result.original
    lines = [f"policy {original.policy_name} ({original.source}): {verdict_line(original)}"]
    if result.already_holds:
        lines.append("every condition already holds; nothing to repair")
        lines += _condition_lines(original)
        return "\n".join(lines)
    searched = (f"searched {result.candidates} candidate{'s' * (result.candidates != 1)}: "
                f"{result.replayed_out} refuted by replaying a known counterexample, {result.checked} checked in full; "
                f"{result.seconds:.1f} s")
    if not result.repaired:
        lines += [result.reason, *_undecided_lines(result), searched]
        return "\n".join(lines)
    n = len(result.changes)
    lines.append(f"repair ({n} change{'s' * (n != 1)}), proved:")
    lines += [f"  - {c.describe(result.form)}" for c in result.changes]
    lines += _condition_lines(result.report)
    lines += [f"also proved: {describe_changes(alt, result.form)}" for alt in result.alternatives]
    if result.alternatives_missing:
        lines.append(f"alternatives: {result.alternatives_missing}")
    lines += _undecided_lines(result)
    if result.reprinted:
        lines.append("note: the minimal edit did not re-parse to the repaired policy; the whole policy is re-printed "
                     "(comments and the expect table are not kept)")
    if stale_expect:
        lines.append(f"note: the file's expect table still says violated for {', '.join(stale_expect)}")
    lines.append(searched)
    lines.append(result.diff.rstrip("\n"))
    return "\n".join(lines)


def result_json(result) -> dict:
    original = result.original
    doc = {
        "policy": original.policy_name,
        "source": original.source,
        "original": {"verdict": str(original.verdict), "conditions": {r.condition: str(r.verdict)
                                                                      for r in original.results}},
        "status": result.status,
        "changes": [c.as_dict(result.form) for c in result.changes or ()],
        "alternatives": [[c.as_dict(result.form) for c in alt] for alt in result.alternatives],
        "alternatives_missing": result.alternatives_missing or None,
        "undecided": [{"changes": [c.as_dict(result.form) for c in u.changes], "unknown": list(u.unknown)}
                      for u in result.undecided],
        "reason": result.reason or None,
        "search": {"candidates": result.candidates, "replayed_out": result.replayed_out, "checked": result.checked,
                   "seconds": round(result.seconds, 3)},
    }
    if result.repaired:
        doc["conditions"] = {r.condition: {"verdict": str(r.verdict), "engine": str(r.engine),
                                           "reason": reason_text(r.reason)}
                             for r in result.report.results}
        doc.update(reprinted=result.reprinted, diff=result.diff, text=result.text)
    return doc


__all__ = ["result_json", "result_text", "verdict_line", "describe_changes"]
