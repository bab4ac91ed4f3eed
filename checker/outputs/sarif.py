"""SARIF 2.1.0 logs of reports: each finding located at the policy text it rests on, for code-review annotations."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Sequence, Tuple

from prunecheck.version import __version__
from prunecheck.spec.conditions import CONDITION_TABLE, DESCRIPTIONS
from prunecheck.spec.policy import NOWHERE, Policy
from prunecheck.spec.actions import action_text

from prunecheck.checker.findings.finding import Finding, Findings
from prunecheck.checker.language.locate import key_locations
from prunecheck.checker.outputs.accept import fingerprint
from prunecheck.checker.outputs.decision_doc import decision_json
from prunecheck.checker.outputs.reasons import reason_text
from prunecheck.checker.outputs.render import basis_json, file_error_text
from prunecheck.checker.result import Report, Verdict

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _uri(source: str) -> dict:
    path = Path(source)
    try:
        relative = path.resolve().relative_to(Path.cwd().resolve())
    except (ValueError, OSError):
        return {"uri": path.resolve().as_uri()} if path.is_absolute() else {"uri": source.replace(os.sep, "/")}
    return {"uri": relative.as_posix(), "uriBaseId": "%SRCROOT%"}


def _location(policy: Policy, line: int, col: int, message: str = "") -> dict:
    region = {"startLine": max(1, line), "startColumn": max(1, col)}
    out = {"physicalLocation": {"artifactLocation": _uri(policy.source), "region": region}}
    if message:
        out["message"] = {"text": message}
    return out


EXPECT_RULE = {"id": "expect", "name": "ExpectedVerdict",
               "shortDescription": {"text": "a verdict differs from the one the policy's expect table gives"},
               "fullDescription": {"text": "expect: the policy's `expect:` table (EXPECT in Python) is a contract; "
                                           "the check gave another verdict for a condition it names"},
               "defaultConfiguration": {"level": "error"}}


def _rules(policies: Sequence[Policy], expect: bool = False) -> list:
    """The rule of every condition reported for some checked policy (T1 only where it applies; with none, all), and
    the expect rule when some verdict differs from its policy's expect table."""
    shown = [c for c in CONDITION_TABLE if not policies or any(c.applies(p) for p in policies)]
    return [{"id": c.id, "name": c.rule, "shortDescription": {"text": c.description},
             "fullDescription": {"text": f"{c.id}: {c.description} (spec/SPEC.md)"},
             "defaultConfiguration": {"level": "error"}} for c in shown] + ([EXPECT_RULE] if expect else [])


def _unexpected(policy: Policy, report: Report, compared, rule_ids: list) -> dict:
    """A verdict that differs from the policy's expect table, at the table's entry: an error when the check decided
    the condition, a warning when it is unknown (as --fail-on ranks it)."""
    e = compared.expectation
    return {
        "ruleId": EXPECT_RULE["id"],
        "ruleIndex": rule_ids.index(EXPECT_RULE["id"]),
        "level": "warning" if compared.verdict == Verdict.UNKNOWN else "error",
        "kind": "fail",
        "message": {"text": f"{e.condition}: the policy's expect table says {e.verdict}, the check says "
                            f"{compared.verdict}"},
        "locations": [_location(policy, e.loc.line, e.loc.col)],
        "partialFingerprints": {"prunecheck/v1": fingerprint(report, f"expect:{e.condition}:{e.verdict}")},
        "properties": {"condition": e.condition, "expected": e.verdict, "verdict": str(compared.verdict)},
    }


def _violation(policy: Policy, report: Report, r, finding: Finding, rule_ids: list) -> dict:
    explanation = finding.explanation
    cause = explanation.cause
    main = cause.points[0] if cause.points else None
    line, col = (main.loc.line, main.loc.col) if main is not None and main.loc != NOWHERE else (1, 1)
    headline = "".join(f"`{p.text}` {p.note}. " for p in cause.points)
    steps = [{"location": {"message": {"text": f"{i}. {action_text(a, keywords=True)} -- {label}"}}}
             for i, (a, label) in enumerate(zip(explanation.actions, explanation.steps), start=1)]
    return {
        "ruleId": r.condition,
        "ruleIndex": rule_ids.index(r.condition),
        "level": "error",
        "kind": "fail",
        "message": {"text": f"{r.condition} violated after {r.trace.length()}: {cause.summary}. {headline}"
                            f"({DESCRIPTIONS[r.condition]})"},
        "locations": [_location(policy, line, col)],
        "relatedLocations": [dict(_location(policy, p.loc.line, p.loc.col, f"`{p.text}` {p.note}"), id=i)
                             for i, p in enumerate(cause.points[1:], start=1) if p.loc != NOWHERE],
        "codeFlows": [{"message": {"text": "counterexample, replayed on the reference runtime"},
                       "threadFlows": [{"locations": steps}]}],
        "partialFingerprints": {"prunecheck/v1": fingerprint(report, r.condition)},
        "properties": {"depth": r.depth, "engine": str(r.engine), "steps": r.trace.steps,
                       "trace": [{"action": a.name, **{k: v for k, v in vars(a).items()
                                                       if (k, v) not in (("times", 1), ("role", "user"),
                                                                        ("result_tokens", 0))}}
                                 for a in r.trace.actions]},
    }


def _unknown(policy: Policy, report: Report, r, where: dict, rule_ids: list) -> dict:
    loc = where.get("evict", NOWHERE)
    line, col = (loc.line, loc.col) if loc != NOWHERE else (1, 1)
    return {
        "ruleId": r.condition,
        "ruleIndex": rule_ids.index(r.condition),
        "level": "warning",
        "kind": "open",
        "message": {"text": f"{r.condition} unknown: {reason_text(r.reason)}"},
        "locations": [_location(policy, line, col)],
        "partialFingerprints": {"prunecheck/v1": fingerprint(report, r.condition)},
    }


def _suppressed(result: dict, acceptance) -> dict:
    """An accepted finding stays a result, with the acceptance as its SARIF suppression (and where it is written)."""
    if acceptance is None:
        return result
    where = {"physicalLocation": {"artifactLocation": _uri(acceptance.source),
                                  "region": {"startLine": max(1, acceptance.loc.line),
                                             "startColumn": max(1, acceptance.loc.col)}}}
    result["suppressions"] = [{"kind": acceptance.kind, "status": "accepted", "justification": acceptance.reason,
                               "location": where}]
    return result


def _not_checked(errors: Sequence[Tuple[str, str]]) -> list:
    """The invocation of a run in which some files could not be checked: each named with its one-line error."""
    notes = [{"level": "error", "message": {"text": file_error_text(path, error)},
              "locations": [{"physicalLocation": {"artifactLocation": _uri(path)}}]} for path, error in errors]
    return [{"executionSuccessful": False, "toolExecutionNotifications": notes}]


def sarif_log(checked: Sequence[Findings], errors: Sequence[Tuple[str, str]] = (),
              triages: Optional[Sequence] = None) -> dict:
    """One SARIF run over the findings of every checked policy: violated conditions are errors located at the
    deciding sub-expression or setting (related locations for the rest), unknown ones warnings; `holds` is not a
    finding; a verdict that differs from the policy's expect table is one (rule `expect`, at the table's entry).
    errors: (path, one-line error) of the files that could not be checked, as the run's notifications.
    triages (accept.Triage per policy) turn accepted findings into suppressed results, levels unchanged."""
    results = []
    rules = _rules([f.policy for f in checked], any(f.unexpected for f in checked))
    rule_ids = [rule["id"] for rule in rules]
    for index, findings in enumerate(checked):
        policy, report = findings.policy, findings.report
        where = key_locations(policy)
        accepted = triages[index].acceptance if triages is not None else (lambda condition: None)
        for r in report.results:
            if r.verdict == Verdict.VIOLATED and r.trace is not None:
                finding = findings.first(r.condition)
                results.append(_suppressed(_violation(policy, report, r, finding, rule_ids), accepted(r.condition)))
            elif r.verdict == Verdict.UNKNOWN:
                results.append(_suppressed(_unknown(policy, report, r, where, rule_ids), accepted(r.condition)))
        results += [_unexpected(policy, report, c, rule_ids) for c in findings.unexpected]
    versions = dict(checked[0].report.versions) if checked else {}
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "prunecheck", "version": __version__, "semanticVersion": __version__,
                                "informationUri": "https://github.com/prunecheck/prunecheck", "rules": rules}},
            "columnKind": "unicodeCodePoints",
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().resolve().as_uri() + "/"}},
            "results": results,
            **({"invocations": _not_checked(errors)} if errors else {}),
            "properties": {"versions": versions,
                           "policies": [{"name": p.name, "source": p.source, "verdict": str(rep.verdict),
                                         "policy_hash": rep.policy_hash, "deployment": dict(rep.deployment),
                                         "deployment_overridden": list(rep.overridden),
                                         "deployment_basis": basis_json(rep.basis),
                                         "holds": [r.condition for r in rep.results if r.verdict == Verdict.HOLDS]}
                                        for p, rep in ((f.policy, f.report) for f in checked)],
                           "decision": [{"policy": f.policy.name, "source": f.policy.source,
                                         **decision_json(f.decision)} for f in checked]},
        }],
    }
