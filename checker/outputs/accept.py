"""Accepted findings: a policy's own `accept:` entries and baseline files, matched to reports; verdicts unchanged."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from typing import Dict, Optional, Sequence

from yaml.nodes import MappingNode, SequenceNode

from prunecheck.spec.conditions import CONDITIONS
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import Acceptance, Loc

from prunecheck.checker.language.nodes import compose, items, kind_of, reason, string
from prunecheck.checker.language.source_text import SourceText
from prunecheck.checker.outputs.paths import write_whole
from prunecheck.checker.result import Report, Verdict

BASELINE_VERSION = 1
MAX_BASELINE_BYTES = 8 * 1024 * 1024
ENTRY_KEYS = ("fingerprint", "condition", "verdict", "reason", "policy", "source", "policy_hash")
REQUIRED_KEYS = ENTRY_KEYS[:4]
FINDINGS = (Verdict.VIOLATED, Verdict.UNKNOWN)
WRITTEN_REASON = "present when the baseline was written (prunecheck check --write-baseline)"


def fingerprint(report: Report, condition: str) -> str:
    """A finding's stable identity across runs (SARIF's partialFingerprints, baselines): policy hash and condition."""
    return hashlib.sha256(f"{report.policy_hash}:{condition}".encode()).hexdigest()[:32]


@dataclass(frozen=True)
class BaselineEntry:
    """One accepted finding of a baseline file, keyed by its fingerprint (policy hash and condition)."""

    fingerprint: str
    acceptance: Acceptance
    policy: str = ""
    source: str = ""
    policy_hash: str = ""


@dataclass(frozen=True)
class Baseline:
    """A baseline file's entries, by fingerprint."""

    source: str
    entries: tuple = ()

    def entry(self, fingerprint: str) -> Optional[BaselineEntry]:
        return next((e for e in self.entries if e.fingerprint == fingerprint), None)


@dataclass(frozen=True)
class Triage:
    """One report's findings split: `accepted` ((condition, Acceptance), ...) and the in-source entries that match
    nothing (`stale`, (Acceptance, why), ...). The report's verdicts are untouched."""

    accepted: tuple = ()
    stale: tuple = ()

    def acceptance(self, condition: str) -> Optional[Acceptance]:
        return dict(self.accepted).get(condition)


def covers(acceptance: Acceptance, verdict: Verdict) -> bool:
    """An acceptance covers a finding no worse than the verdict it accepts (a baseline entry written for `unknown`
    does not hide a later `violated`)."""
    return verdict in FINDINGS and verdict <= Verdict[acceptance.verdict.upper()]


def triage(report: Report, accepts: Sequence[Acceptance] = (), baseline: Optional[Baseline] = None) -> Triage:
    """Match the report's violated and unknown results with the policy's own accepts, then with the baseline."""
    own = {a.condition: a for a in accepts}
    accepted, stale = [], []
    for r in report.results:
        mine = own.get(r.condition)
        entry = baseline.entry(fingerprint(report, r.condition)) if baseline is not None else None
        if mine is not None and covers(mine, r.verdict):
            accepted.append((r.condition, mine))
        elif entry is not None and covers(entry.acceptance, r.verdict):
            accepted.append((r.condition, entry.acceptance))
        elif mine is not None:
            stale.append((mine, f"{r.condition} {r.verdict}"))
    return Triage(tuple(accepted), tuple(stale))


def stale_baseline_entries(baseline: Optional[Baseline], checked: Sequence[tuple]) -> tuple:
    """(entry, why) for each baseline entry about a policy of this run ((report, Triage) pairs: same file or same
    hash, its condition checked) that accepted none of its findings. Entries about other policies are left alone."""
    if baseline is None:
        return ()
    used = {id(a) for _report, t in checked for _c, a in t.accepted}
    out = []
    for entry in baseline.entries:
        if id(entry.acceptance) in used:
            continue
        for report, t in checked:
            ours = entry.policy_hash == report.policy_hash or (entry.source and _same_file(entry.source, report.source))
            found = [r for r in report.results if r.condition == entry.acceptance.condition]
            if ours and found and t.acceptance(entry.acceptance.condition) is None:
                out.append((entry, _why_unmatched(entry, report, found[0])))
                break
    return tuple(out)


def _why_unmatched(entry: BaselineEntry, report: Report, result) -> str:
    if fingerprint(report, result.condition) != entry.fingerprint:
        return "the policy changed since the baseline was written (its fingerprint differs)"
    if result.verdict in FINDINGS:
        return f"{result.condition} is now {result.verdict}, the entry accepts at most {entry.acceptance.verdict}"
    return f"{result.condition} {result.verdict}"


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return False


def stale_lines(triages: Sequence[Triage], stale_entries: Sequence[tuple]) -> list:
    """One warning line per suppression that matches nothing (the caller prefixes `prunecheck: warning: `)."""
    lines = [f"{_where(a)}: accept {a.condition} matches no finding ({why}); remove it"
             for t in triages for a, why in t.stale]
    lines += [f"{_where(e.acceptance)}: baseline entry for {e.acceptance.condition} of {e.policy or e.source or '?'} "
              f"matches no finding ({why})" for e, why in stale_entries]
    return lines


def _where(a: Acceptance) -> str:
    return f"{a.source}:{max(1, a.loc.line)}:{max(1, a.loc.col)}"


def accepted_line(condition: str, acceptance: Acceptance) -> str:
    """`accepted: reason (in the policy, 12:5)` or `accepted: reason (baseline FILE:3:5)`."""
    where = (f"in the policy, {acceptance.loc.line}:{acceptance.loc.col}" if acceptance.kind == "inSource"
             else f"baseline {_where(acceptance)}")
    return f"accepted: {acceptance.reason} ({where})"


def acceptance_json(acceptance: Acceptance) -> dict:
    """The `accepted` member of a condition in the JSON report."""
    return {"kind": acceptance.kind, "reason": acceptance.reason, "source": acceptance.source,
            "line": acceptance.loc.line, "column": acceptance.loc.col}


def annotate_json(doc: dict, t: Triage) -> dict:
    """The JSON report with each accepted condition marked (its verdict unchanged)."""
    for condition, acceptance in t.accepted:
        doc["conditions"][condition]["accepted"] = acceptance_json(acceptance)
    return doc


# --------------------------------------------------------------------------- baseline files


def baseline_document(checked: Sequence[tuple], previous: Optional[Baseline] = None) -> dict:
    """A baseline of every violated or unknown finding of (report, Triage) pairs that the policy does not accept
    itself; an entry already in `previous` keeps its reason."""
    entries = []
    for report, t in checked:
        for r in report.results:
            own = t.acceptance(r.condition)
            if r.verdict not in FINDINGS or (own is not None and own.kind == "inSource"):
                continue
            key = fingerprint(report, r.condition)
            old = previous.entry(key) if previous is not None else None
            entries.append({"fingerprint": key, "condition": r.condition, "verdict": str(r.verdict),
                            "reason": old.acceptance.reason if old is not None else WRITTEN_REASON,
                            "policy": report.policy_name, "source": report.source,
                            "policy_hash": report.policy_hash})
    entries.sort(key=lambda e: (e["source"], e["policy"], CONDITIONS.index(e["condition"])))
    return {"version": BASELINE_VERSION, "tool": "prunecheck", "accepted": entries}


def write_baseline(path, document: dict) -> None:
    write_whole(path, json.dumps(document, indent=2) + "\n")


def load_baseline(path) -> Baseline:
    """Read and validate a baseline file (JSON); every defect is a one-line PolicySyntaxError located in it."""
    name = os.fspath(path)
    src = SourceText(_baseline_text(name), name, "json")
    root = compose(src)
    if not isinstance(root, MappingNode):
        src.fail_at(f"a baseline must be a JSON object, got {kind_of(root)}", root)
    fields = dict((key, value) for key, _k, value in items(src, root, "the baseline"))
    unknown = [key for key in fields if key not in ("version", "tool", "accepted")]
    if unknown:
        src.fail_at(f"unknown key `{unknown[0][:64]}` in the baseline (keys: version, tool, accepted)", root)
    version = fields.get("version")
    if version is None or version.value != str(BASELINE_VERSION) or getattr(version, "style", "") is not None:
        src.fail_at(f"a baseline needs \"version\": {BASELINE_VERSION}", version or root)
    accepted = fields.get("accepted")
    if not isinstance(accepted, SequenceNode):
        src.fail_at("a baseline needs \"accepted\": a list of entries", accepted or root)
    return Baseline(name, tuple(_entry(src, node) for node in accepted.value))


def _baseline_text(name: str) -> str:
    try:
        if os.path.exists(name) and not stat.S_ISREG(os.stat(name).st_mode):
            raise PolicySyntaxError("cannot read baseline: not a regular file", name, 1, 1)
        with open(name, "rb") as handle:
            data = handle.read(MAX_BASELINE_BYTES + 1)
    except OSError as exc:
        raise PolicySyntaxError(f"cannot read baseline: {exc.strerror or exc}", name, 1, 1) from None
    if len(data) > MAX_BASELINE_BYTES:
        raise PolicySyntaxError(f"baseline is too large (more than {MAX_BASELINE_BYTES} bytes)", name, 1, 1)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PolicySyntaxError(f"baseline is not valid UTF-8 (byte {exc.start})", name, 1, 1) from None
    if not text.strip() or "\x00" in text:
        raise PolicySyntaxError("baseline is empty or holds a NUL character", name, 1, 1)
    return text


def _entry(src: SourceText, node) -> BaselineEntry:
    values: Dict[str, str] = {}
    nodes = {}
    for key, knode, vnode in items(src, node, "a baseline entry"):
        if key not in ENTRY_KEYS:
            src.fail_at(f"unknown key `{key[:64]}` in a baseline entry (keys: {', '.join(ENTRY_KEYS)})", knode)
        nodes[key] = vnode
        values[key] = reason(src, vnode, f"baseline {key}") if key == "reason" else string(src, vnode, key)
    for key in REQUIRED_KEYS:
        if key not in values:
            src.fail_at(f"a baseline entry needs `{key}`", node)
    _check_choice(src, nodes["condition"], values["condition"], CONDITIONS)
    _check_choice(src, nodes["verdict"], values["verdict"], tuple(str(v) for v in FINDINGS))
    if len(values["fingerprint"]) != 32 or any(ch not in "0123456789abcdef" for ch in values["fingerprint"]):
        src.fail_at("a fingerprint is 32 lowercase hexadecimal digits", nodes["fingerprint"])
    loc = Loc(*src.pos(node.start_mark.index))
    acceptance = Acceptance(values["condition"], values["reason"], "external", src.file, loc, values["verdict"])
    return BaselineEntry(values["fingerprint"], acceptance, values.get("policy", ""), values.get("source", ""),
                         values.get("policy_hash", ""))


def _check_choice(src: SourceText, node, value: str, choices: tuple) -> None:
    if value not in choices:
        src.fail_at(f"`{value[:64]}` is not one of {', '.join(choices)}", node)


def settle(checked: Sequence[tuple], baseline: Optional[Baseline] = None, write_path=None) -> tuple:
    """(triages, warning lines) for (report, the policy's accepts) pairs. With write_path, first writes the run's
    findings there as a baseline (keeping `baseline`'s reasons) and then accepts against what it wrote."""
    from prunecheck.checker.outputs.paths import writing

    reports = [report for report, _accepts in checked]
    triages = [triage(report, accepts, baseline) for report, accepts in checked]
    if write_path is not None:
        with writing("--write-baseline", write_path):
            write_baseline(write_path, baseline_document(list(zip(reports, triages)), baseline))
        baseline = load_baseline(write_path)
        triages = [triage(report, accepts, baseline) for report, accepts in checked]
    stale = stale_baseline_entries(baseline, list(zip(reports, triages)))
    return triages, stale_lines(triages, stale)
