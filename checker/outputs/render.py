"""Human and machine renderings of reports, traces and runtime states."""

from __future__ import annotations

import json
from typing import Sequence

from prunecheck.spec.conditions import DESCRIPTIONS
from prunecheck.spec.policy import NAME_ATTRS, reads_roles
from prunecheck.spec.runtime import State, Transition, claim_status, status
from prunecheck.spec.actions import action_args, action_text

from prunecheck.checker.outputs.decision_doc import decision_json, decision_lines
from prunecheck.checker.outputs.reasons import reason_text
from prunecheck.checker.result import (EngineRun, Method, Outcome, RecoveryPeak, Report, Result, Search, Verdict,
                                       counted)


def span_line(span, roles: bool = False) -> str:
    """One span; its role only when the policy reads roles (`roles`)."""
    role = (f" role={span.role}" if roles else "") + "".join(
        f" {attr}={getattr(span, attr)!r}" for attr in NAME_ATTRS if getattr(span, attr))
    flags = [span.namespace, "alive" if span.alive else "EVICTED"]
    if span.masked:
        flags.append("masked")
    if span.pinned:
        flags.append("pinned")
    if span.edited:
        flags.append("edited")
    if span.place != span.id:  # a summary stands where the oldest span it replaced stood (spec/SPEC.md 4d)
        flags.append(f"at place {span.place}")
    if span.tombstone:
        flags.append("tombstone")
    return (f"#{span.id} {span.kind:<11}{role} tokens={span.tokens} created={span.created} last_read={span.last_read} "
            f"reads={span.reads} v{span.version} [{' '.join(flags)}]")


def file_error_text(path: str, error: str) -> str:
    """A file's path and its one-line error, the path once: an input error already starts with its `path:line:col`."""
    return error if error.startswith(f"{path}:") else f"{path}: {error}"


def state_lines(policy, state: State) -> list:
    roles = reads_roles(policy)
    lines = [span_line(s, roles) for s in state.spans] or ["(empty window)"]
    for number, e in enumerate(state.edits, start=1):
        lines.append(f"edit {number}: {e.mode} of #{e.target} at v{e.version}, record #{e.record}, "
                     f"rationale #{e.rationale}{' (undone)' if e.undone else ''}")
    lines.append(f"status: {status_text(policy, state)}")
    return lines


def status_text(policy, state: State) -> str:
    """The closure status C4 reads, and the first seed's claim status beside it (spec/SPEC.md §4e)."""
    return f"{status(policy, state)} (the seed's claim: {claim_status(policy, state)})"


def step_lines(policy, transitions: Sequence[Transition]) -> list:
    out = []
    for index, t in enumerate(transitions, start=1):
        extra = ""
        if t.evicted or t.truncated:
            extra = f" (evicted {sorted(t.evicted)}, truncated {sorted(t.truncated)})"
        if t.after.step - t.before.step != 1:
            extra += f" (steps {t.before.step + 1}-{t.after.step})"
        out.append(f"step {index}: {action_text(t.action, keywords=True)} -> {t.outcome}{extra}")
        out.extend("    " + line for line in state_lines(policy, t.after))
    return out


def variants_text(result: Result, spans: int, depth: int) -> str:
    """What the search for more counterexamples established when it found fewer than asked, one line; "" otherwise."""
    from prunecheck.checker.engines.variants import EXTRA_DEPTH, MAX_QUERIES_PER_TRACE

    v = result.variants
    found = len(result.others) + (result.trace is not None)
    if v is None or found >= v.asked:
        return ""
    head = f"{found} of {v.asked} counterexamples asked: "
    within = f"within depth {v.depth} and {spans} spans"
    first = "the one shown" if result.engine is Method.RUNS else "the shortest"  # runs claim no shortest
    short = f" (searched {EXTRA_DEPTH} actions past {first}, not to depth {depth})" if v.depth < depth else ""
    if v.search is Search.EXHAUSTED:
        also = f", or of one of {v.reducible} found that reduce to one shown" if v.reducible else ""
        return f"{head}no other {within}{short} (each one there begins with the actions of one shown{also})"
    why = (f"its fixed budget of {MAX_QUERIES_PER_TRACE * v.asked} solver queries was spent"
           if v.search is Search.QUERIES else v.reason)
    if v.contained:
        return (f"{head}no other {within}{short} but the ones shown with steps added (each one there contains the "
                f"actions of one shown, in order); the search for more stopped: {why}")
    return f"{head}the search stopped ({why}); others may exist {within}{short}"


def deployment_text(report: Report) -> str:
    """The deployment a report was checked under, one line: `records=window (operator), rationale=...`."""
    return deployment_items_text(report.deployment, report.overridden)


def deployment_items_text(items, overridden) -> str:
    """(key, value) pairs of a deployment, one line, the keys the operator set marked."""
    marked = set(overridden)
    return ", ".join(f"{key}={value}" + (" (operator)" if key in marked else "") for key, value in items)


def basis_lines(report: Report) -> list:
    """Whose deployment the verdicts rest on, and each deployment key the policy file claimed but was not believed
    (ADR 0037)."""
    from prunecheck.checker.language.operator import basis_text, claims_lines

    lines = [f"  rests on {basis_text(report.basis)}"] if report.basis.basis != "as_written" else []
    return lines + [f"  {line}" for line in claims_lines(report.basis.claims)]


def contribution_lines(report: Report) -> list:
    """Which conditions hold because of the policy (proved with its expressions part of the proof) and which on the
    deployment alone (proved with the policy abstracted to a free predicate)."""
    held = [r for r in report.results if r.verdict is Verdict.HOLDS]
    policy = [r.condition for r in held if not rests_on_deployment(r)]
    alone = [r.condition for r in held if rests_on_deployment(r)]
    parts = ([f"the policy for {', '.join(policy)} (proved with its expressions)"] if policy else []) + (
        [f"the deployment alone for {', '.join(alone)} (proved whatever the policy selects)"] if alone else [])
    return [f"  holds by {'; '.join(parts)}"] if parts else []


def rests_on_deployment(result) -> bool:
    """A `holds` that any policy of its shape would have: proved (or true by construction) with the policy
    abstracted to a free predicate. A proof of the policy as written, by construction or not, uses its expressions
    (the abstracted attempt comes first, so it failed: the deployment alone does not suffice)."""
    return result.engine.abstracted


def bounds_text(report: Report) -> str:
    """The bounds a report was checked under, one line: `depth 12, 6 spans, timeout 30 s per condition, ...`."""
    parts = [f"depth {report.depth}", f"{report.spans} spans"]
    b = report.bounds
    if b is not None:
        parts.append(f"timeout {b.timeout:g} s per condition")
        parts.append(f"rlimit {b.rlimit} per query" if b.rlimit else "no rlimit")
        if b.memory_mb:
            parts.append(f"memory {b.memory_mb} MB")
        for name, values in (("tokens", b.tokens), ("repetitions", b.repeats)):
            if values is not None:
                parts.append(f"{name} {{{', '.join(map(str, values))}}}")
    return ", ".join(parts)


def run_text(run: EngineRun) -> str:
    """One engine's statistics: `bmc: counterexample at depth 2, 4 queries, 0.01 s`."""
    parts = [f"{run.engine}: {run.outcome.value}"]
    if run.depth is not None:
        parts[0] += f" at depth {run.depth}" if run.outcome is Outcome.COUNTEREXAMPLE else f", depth {run.depth}"
    if run.states is not None:
        parts.append(counted(run.states, "state"))
    if run.engine is not Method.EXPLICIT:
        parts.append(f"{run.queries} quer{'y' if run.queries == 1 else 'ies'}")
    parts.append(f"{run.seconds:.2f} s")
    return ", ".join(parts)


def stats_lines(report: Report) -> list:
    """Per condition, what each engine did: the header's statistics."""
    return [f"{r.condition}  {'; '.join(run_text(run) for run in r.stats.runs)}" for r in report.results
            if r.stats.runs]


def stats_json(report: Report) -> dict:
    b = report.bounds
    bounds = {"depth": report.depth, "spans": report.spans}
    if b is not None:
        bounds.update(timeout=b.timeout, rlimit=b.rlimit, memory_mb=b.memory_mb,
                      tokens=None if b.tokens is None else list(b.tokens),
                      repeats=None if b.repeats is None else list(b.repeats))
    runs = {r.condition: [{"engine": str(run.engine), "outcome": run.outcome.value, "depth": run.depth,
                           "queries": run.queries, "states": run.states, "seconds": round(run.seconds, 4)}
                          for run in r.stats.runs] for r in report.results}
    return {"bounds": bounds, "conditions": runs}


def basis_json(basis) -> dict:
    """A DeploymentBasis as JSON: whose deployment, from where, and the claims not believed."""
    return {"basis": basis.basis, "source": basis.source,
            "claims": [{"key": c.key, "claimed": c.claimed, "used": c.used, "where": c.where} for c in basis.claims]}


def report_text(report: Report, findings=None, triage=None) -> str:
    """The text report; given its findings.Findings, each counterexample is explained step by step, with its cause
    located in the policy's own text; given its accept.Triage, each accepted finding says so, with the reason."""
    from prunecheck.checker.outputs.accept import accepted_line
    from prunecheck.checker.findings.explain import explanation_lines

    lines = [f"policy {report.policy_name} ({report.source})  sha256:{report.policy_hash[:12]}  "
             f"depth {report.depth}, {report.spans} spans", f"  deployment {deployment_text(report)}",
             *basis_lines(report), f"  bounds {bounds_text(report)}"]
    lines.extend(("  engines " if i == 0 else "          ") + line for i, line in enumerate(stats_lines(report)))
    width = max((len(str(r.verdict)) for r in report.results), default=7)
    for r in report.results:
        depth = "-" if r.depth is None else str(r.depth)
        lines.append(f"  {r.condition}  {str(r.verdict):<{width}}  {depth:>3}  {reason_text(r.reason)}")
        acceptance = triage.acceptance(r.condition) if triage is not None else None
        if acceptance is not None:
            lines.append(f"        {accepted_line(r.condition, acceptance)}")
        if r.trace is not None and findings is not None:
            lines.extend(explanation_lines(findings.policy, findings.first(r.condition).explanation))
        elif r.trace is not None:
            lines.append(f"        {DESCRIPTIONS[r.condition]}; counterexample:")
            for index, action in enumerate(r.trace.actions, start=1):
                lines.append(f"        {index}. {action_text(action, keywords=True)}")
        for number, other in enumerate(r.others, start=2):
            length = f" ({other.length()})" if other.steps != len(other.actions) else ""
            calls = "; ".join(action_text(a, keywords=True) for a in other.actions)
            lines.append(f"        counterexample {number}{length}: {calls}")
        if variants_text(r, report.spans, report.depth):
            lines.append(f"        {variants_text(r, report.spans, report.depth)}")
    accepted = [c for c, _a in triage.accepted] if triage is not None else []
    lines.extend(contribution_lines(report))
    if not report.results:
        lines.append("  nothing checked: no condition asked for applies to this policy")
    lines.extend(f"  {line}" for line in expectation_lines(findings))
    unexpected = ", ".join(c.expectation.condition for c in findings.unexpected) if findings is not None else ""
    lines.append(f"  verdict: {report.verdict}" + (f" (accepted: {', '.join(accepted)})" if accepted else "")
                 + (f"; differs from the policy's expect table: {unexpected}" if unexpected else ""))
    lines.extend(f"  {line}" for line in decision_lines(_decision(report, findings)))
    if report.recovery_peak is not None:
        lines.append(f"  recovery set: {peak_text(report.recovery_peak)}")
    return "\n".join(lines)


def expectation_lines(findings) -> list:
    """The policy's expectations the report does not meet: each difference, located in the policy's text; then, per
    reason, the ones not compared. Nothing when every one is met."""
    from prunecheck.checker.findings.expect import Outcome

    if findings is None:
        return []
    lines = []
    for c in findings.unexpected:
        e = c.expectation
        lines.append(f"expect {e.condition} {e.verdict} ({e.source}:{e.loc.line}:{e.loc.col}): differs, the check "
                     f"says {c.verdict}")
    uncompared = {}
    for c in findings.expectations:
        if c.outcome is Outcome.NOT_COMPARED:
            uncompared.setdefault(c.why_not, []).append(f"{c.expectation.condition} {c.expectation.verdict}")
    return lines + [f"expect {', '.join(which)}: not compared ({why.value})" for why, which in uncompared.items()]


def expectations_json(findings) -> list:
    """The JSON report's `expect`: each expectation of the policy's table, what the check said and how it came out."""
    return [{"condition": c.expectation.condition, "expected": c.expectation.verdict,
             "verdict": None if c.verdict is None else str(c.verdict), "outcome": c.outcome.value,
             "not_compared": None if c.why_not is None else c.why_not.value,
             "line": c.expectation.loc.line, "column": c.expectation.loc.col} for c in findings.expectations]


def _decision(report: Report, findings):
    """The decision the findings hold, or the report's when there are none (the cache writes a bare report)."""
    from prunecheck.checker.findings.decision import decision_of

    return findings.decision if findings is not None else decision_of(report)


def peak_text(peak: RecoveryPeak) -> str:
    """`at most 3 records, the seed's cost: 5 tokens reserved for records and rationales (depth 12, ...; bounded,
    not a proof)`."""
    figures = f"{peak.records} record{'s' if peak.records != 1 else ''}" + (
        ", the seed's cost (its token reservation for records and rationales) not counted" if peak.tokens is None
        else f", the seed's cost: {peak.tokens} token{'s' if peak.tokens != 1 else ''} reserved for records and "
        f"rationales")
    domain = "any" if peak.token_domain is None else "{" + ", ".join(map(str, peak.token_domain)) + "}"
    bounds = f"depth {peak.depth}, {peak.spans} spans, tokens {domain}"
    if peak.tokens is None:
        bounds += "; records counted by bounded queries"
    if not peak.complete:
        return f"reached {figures}, the search stopped at a limit ({bounds}; bounded, not a proof)"
    return f"at most {figures} ({bounds}; bounded, not a proof)"


def peak_json(peak: RecoveryPeak) -> dict:
    """The JSON report's `recovery_peak` (report_schema's `$defs/report`)."""
    return {"records": peak.records, "tokens": peak.tokens, "complete": peak.complete, "engine": str(peak.engine),
            "bounds": {"depth": peak.depth, "spans": peak.spans,
                       "tokens": None if peak.token_domain is None else list(peak.token_domain)},
            "witness": [{"action": a.name, "args": action_args(a)} for a in peak.witness],
            "summary": peak_text(peak)}


def variants_json(result: Result, spans: int, depth: int) -> dict:
    v = result.variants
    return {"asked": v.asked, "found": len(result.others) + 1, "search": v.search.value, "depth": v.depth,
            "spans": spans, "contained": v.contained, "reducible": v.reducible, "reason": v.reason,
            "summary": variants_text(result, spans, depth)}


def report_json(report: Report, findings=None) -> dict:
    """One policy's JSON report (an item of the document's `policies`: `$defs/report` of report_schema()); given
    its findings.Findings, each counterexample carries its explanation."""
    from prunecheck.checker.findings.explain import explanation_json

    conditions = {}
    for r in report.results:
        entry = {"verdict": str(r.verdict), "depth": r.depth, "reason": reason_text(r.reason),
                 "engine": str(r.engine), "seconds": round(r.seconds, 4)}
        if r.verdict is Verdict.HOLDS:  # what the proof rests on (ADR 0037)
            entry["rests_on"] = "deployment" if rests_on_deployment(r) else "policy"
        if r.trace is not None:
            entry["trace"] = [{"action": a.name, "args": action_args(a)} for a in r.trace.actions]
            entry["length"] = {"actions": len(r.trace.actions), "steps": r.trace.steps}
            if r.others:
                entry["other_traces"] = [[{"action": a.name, "args": action_args(a)} for a in t.actions]
                                         for t in r.others]
            if r.variants is not None:
                entry["counterexamples"] = variants_json(r, report.spans, report.depth)
            if findings is not None:
                entry["explanation"] = explanation_json(findings.first(r.condition).explanation)
        if r.certificate is not None:
            entry["certificate"] = json.loads(r.certificate)  # an object in the report, not JSON text inside JSON
        conditions[r.condition] = entry
    return {
        "policy": report.policy_name,
        "verdict": str(report.verdict),
        "conditions": conditions,
        "source": report.source,
        "policy_hash": report.policy_hash,
        "depth": report.depth,
        "spans": report.spans,
        "deployment": dict(report.deployment),
        "deployment_overridden": list(report.overridden),
        "deployment_basis": basis_json(report.basis),
        "versions": dict(report.versions),
        "stats": stats_json(report),
        "decision": decision_json(_decision(report, findings)),
        **({"recovery_peak": peak_json(report.recovery_peak)} if report.recovery_peak is not None else {}),
        **({"expect": expectations_json(findings)} if findings is not None and findings.expectations else {}),
    }
