"""What `check` prints besides its text report, and what --out and --emit-pytest write: one JSON, SARIF or HTML
document for any number of policy files, and file names that no two policies of a run share."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

from prunecheck.spec.policy import Policy

from prunecheck.checker.outputs.paths import write_whole, writing
from prunecheck.checker.outputs.report_schema import ERROR, TOOL
from prunecheck.checker.result import Report

if TYPE_CHECKING:
    from prunecheck.checker.findings.finding import Findings


@dataclass(frozen=True)
class Checked:
    """One policy file's outcome as the outputs show it: the policy, its report and their findings (built here once
    when not given, for every output to read), or a one-line error."""

    path: str
    policy: Optional[Policy] = None
    report: Optional[Report] = None
    error: str = ""
    internal: bool = False
    triage: Optional[object] = None  # accept.Triage: the findings accepted in the policy or a baseline
    findings: Optional[Findings] = None

    def __post_init__(self):
        if self.findings is None and self.policy is not None and self.report is not None:
            from prunecheck.checker.findings.finding import findings_of

            object.__setattr__(self, "findings", findings_of(self.policy, self.report))


def json_document(checked: Sequence[Checked]) -> dict:
    """The --format json document (report_schema.report_schema()), the same shape for one file or many: the worst
    verdict ("error" if some file could not be checked) and a report, or an error entry, per file."""
    from prunecheck.checker.outputs.accept import Triage, annotate_json
    from prunecheck.checker.versions import versions
    from prunecheck.checker.outputs.render import report_json

    reports = [c.report for c in checked if c.report is not None]
    worst = str(max(r.verdict for r in reports)) if reports and len(reports) == len(checked) else ERROR
    entries = [annotate_json(report_json(c.report, c.findings), c.triage or Triage()) if c.report is not None
               else {"source": c.path, "verdict": ERROR, "error": c.error, "internal": c.internal} for c in checked]
    return {"tool": TOOL, "versions": dict(versions()), "verdict": worst, "policies": entries}


def document(fmt: str, checked: Sequence[Checked]) -> str:
    """The json, sarif or html document of every checked file; a file that could not be checked is named in it."""
    if fmt == "json":
        return json.dumps(json_document(checked), indent=2)
    reported = [c for c in checked if c.report is not None]
    errors = [(c.path, c.error) for c in checked if c.report is None]
    if fmt == "sarif":
        from prunecheck.checker.outputs.sarif import sarif_log
        return json.dumps(sarif_log([c.findings for c in reported], errors, _triages(reported)), indent=2)
    if fmt == "html":
        from prunecheck.checker.outputs.html_report import report_html
        return report_html([c.findings for c in reported], [step_labels(c.findings) for c in reported], errors,
                           _triages(reported))
    raise ValueError(f"no document format {fmt!r}")


def _triages(checked: Sequence[Checked]) -> list:
    from prunecheck.checker.outputs.accept import Triage

    return [c.triage or Triage() for c in checked]


def step_labels(findings: Findings) -> dict:
    """Per counterexample of the report: per step, what it changed; the last step also says why it violates."""
    labels = {}
    for result in findings.report.results:
        if result.trace is None:
            continue
        explanation = findings.first(result.condition).explanation
        where = "; ".join(f"{p.loc.line}:{p.loc.col} `{p.text}` {p.note}" for p in explanation.cause.points)
        labels[result.condition] = list(explanation.steps[:-1]) + [
            f"{explanation.steps[-1]} -- why: {explanation.cause.summary}; {where}"]
    return labels


def _safe(text: str) -> str:
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_") else "_" for ch in text)[:60] or "policy"


def file_stems(policies: Sequence[Policy]) -> list:
    """A file-name stem per policy, distinct within the run (also ignoring case): the policy file's stem and the
    policy hash's first 8 hex digits (`seed_flawed-36372949`), then `-2`, `-3`... for the same content under the same
    file name again. Every file written for a policy starts with its stem."""
    from prunecheck.checker.language.document import policy_hash

    stems, taken = [], set()
    for policy in policies:
        base = f"{_safe(Path(policy.source).stem)}-{policy_hash(policy)[:8]}"
        stem, number = base, 1
        while stem.lower() in taken:
            number += 1
            stem = f"{base}-{number}"
        taken.add(stem.lower())
        stems.append(stem)
    return stems


def write_files(checked: Checked, stem: str, out: Optional[str], emit_pytest: Optional[str], stderr,
                python: Optional[str] = None) -> None:
    """--out DIR: traces and certificates; --emit-pytest DIR: regression tests; --python DIR: standalone scripts;
    each file named after stem."""
    if out:
        with writing("--out", out):
            write_out(checked.findings, Path(out), stem, stderr)
    if emit_pytest:
        from prunecheck.checker.outputs.emit import write_pytest_files
        with writing("--emit-pytest", emit_pytest):
            for path in write_pytest_files(checked.findings, Path(emit_pytest), stem):
                print(f"wrote {path}", file=stderr)
    if python:
        from prunecheck.checker.outputs.scripts import write_scripts
        with writing("--python", python):
            for path in write_scripts(checked.findings, Path(python), stem):
                print(f"wrote {path}", file=stderr)


def write_out(findings: Findings, out: Path, stem: str, stderr) -> None:
    """Each certificate as STEM.CONDITION.cert.json, each counterexample as an ITF trace STEM.CONDITION.itf.json."""
    from prunecheck.checker.language.document import policy_document
    from prunecheck.checker.outputs.itf import trace_document
    from prunecheck.checker.language.tracepolicy import policy_meta

    policy, report = findings.policy, findings.report
    out.mkdir(parents=True, exist_ok=True)
    policy_doc = policy_document(policy)
    for r in report.results:
        if r.certificate is not None:
            path = out / f"{stem}.{r.condition}.cert.json"
            write_whole(path, r.certificate)
            print(f"wrote {path}", file=stderr)
        if r.trace is None:
            continue
        transitions = findings.first(r.condition).transitions
        # The trace's own span bound: a run trace (spec/SPEC.md §7d) writes more spans than the report's slots.
        meta = {"condition": r.condition, "depth": report.depth, "spans": r.trace.spans, "source": policy.source,
                **policy_meta(policy, out), "policy_hash": report.policy_hash, "versions": dict(report.versions)}
        path = out / f"{stem}.{r.condition}.itf.json"
        write_whole(path, json.dumps(trace_document(policy, policy_doc, transitions, meta), indent=1) + "\n")
        print(f"wrote {path}", file=stderr)


__all__ = ["Checked", "document", "file_stems", "json_document", "step_labels", "write_files",
           "write_out"]
