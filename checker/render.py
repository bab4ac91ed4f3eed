"""Human and machine renderings of reports, traces and runtime states."""

from __future__ import annotations

from typing import Sequence

from prunecheck.spec.conditions import DESCRIPTIONS
from prunecheck.spec.runtime import State, Transition, action_args, status

from .result import Report, Result, Search


def action_call(action) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in action_args(action).items())
    return f"{action.name}({args})"


def span_line(span) -> str:
    flags = [span.namespace, "alive" if span.alive else "EVICTED"]
    if span.pinned:
        flags.append("pinned")
    if span.edited:
        flags.append("edited")
    return (f"#{span.id} {span.kind:<11} tokens={span.tokens} created={span.created} last_read={span.last_read} "
            f"reads={span.reads} v{span.version} [{' '.join(flags)}]")


def state_lines(policy, state: State) -> list:
    lines = [span_line(s) for s in state.spans] or ["(empty window)"]
    for e in state.edits:
        lines.append(f"edit {e.record}: {e.mode} of #{e.target} at v{e.version}, record #{e.record}, "
                     f"rationale #{e.rationale}{' (undone)' if e.undone else ''}")
    lines.append(f"status: {status(policy, state)}")
    return lines


def step_lines(policy, transitions: Sequence[Transition]) -> list:
    out = []
    for index, t in enumerate(transitions, start=1):
        extra = ""
        if t.evicted or t.truncated:
            extra = f" (evicted {sorted(t.evicted)}, truncated {sorted(t.truncated)})"
        if t.after.step - t.before.step != 1:
            extra += f" (steps {t.before.step + 1}-{t.after.step})"
        out.append(f"step {index}: {action_call(t.action)} -> {t.outcome}{extra}")
        out.extend("    " + line for line in state_lines(policy, t.after))
    return out


def variants_text(result: Result, spans: int, depth: int) -> str:
    """What the search for more counterexamples established when it found fewer than asked, one line; "" otherwise."""
    from .variants import EXTRA_DEPTH, MAX_QUERIES_PER_TRACE

    v = result.variants
    found = len(result.others) + (result.trace is not None)
    if v is None or found >= v.asked:
        return ""
    head = f"{found} of {v.asked} counterexamples asked: "
    within = f"within depth {v.depth} and {spans} spans"
    short = f" (searched {EXTRA_DEPTH} actions past the shortest, not to depth {depth})" if v.depth < depth else ""
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
    """The deployment a report was checked under, one line: `records=window (overridden), rationale=...`."""
    marked = set(report.overridden)
    return ", ".join(f"{key}={value}" + (" (overridden)" if key in marked else "") for key, value in report.deployment)


def report_text(report: Report, policy=None) -> str:
    """The text report; given the policy, each counterexample is explained step by step, with its cause located
    in the policy's own text."""
    from .explain import explain, explanation_lines

    lines = [f"policy {report.policy_name} ({report.source})  sha256:{report.policy_hash[:12]}  "
             f"depth {report.depth}, {report.spans} spans", f"  deployment {deployment_text(report)}"]
    width = max((len(str(r.verdict)) for r in report.results), default=7)
    for r in report.results:
        depth = "-" if r.depth is None else str(r.depth)
        lines.append(f"  {r.condition}  {str(r.verdict):<{width}}  {depth:>3}  {r.reason}")
        if r.trace is not None and policy is not None:
            lines.extend(explanation_lines(policy, explain(policy, r.trace.actions, r.condition, r.trace.spans)))
        elif r.trace is not None:
            lines.append(f"        {DESCRIPTIONS[r.condition]}; counterexample:")
            for index, action in enumerate(r.trace.actions, start=1):
                lines.append(f"        {index}. {action_call(action)}")
        for number, other in enumerate(r.others, start=2):
            length = f" ({other.length()})" if other.steps != len(other.actions) else ""
            calls = "; ".join(action_call(a) for a in other.actions)
            lines.append(f"        counterexample {number}{length}: {calls}")
        if variants_text(r, report.spans, report.depth):
            lines.append(f"        {variants_text(r, report.spans, report.depth)}")
    lines.append(f"  verdict: {report.verdict}")
    return "\n".join(lines)


def variants_json(result: Result, spans: int, depth: int) -> dict:
    v = result.variants
    return {"asked": v.asked, "found": len(result.others) + 1, "search": v.search.value, "depth": v.depth,
            "spans": spans, "contained": v.contained, "reducible": v.reducible, "reason": v.reason,
            "summary": variants_text(result, spans, depth)}


def report_json(report: Report, policy=None) -> dict:
    """The JSON report; given the policy, each counterexample carries its explanation."""
    from .explain import explain, explanation_json

    conditions = {}
    for r in report.results:
        entry = {"verdict": str(r.verdict), "depth": r.depth, "reason": r.reason, "engine": r.engine,
                 "seconds": round(r.seconds, 4)}
        if r.trace is not None:
            entry["trace"] = [{"action": a.name, "args": action_args(a)} for a in r.trace.actions]
            entry["length"] = {"actions": len(r.trace.actions), "steps": r.trace.steps}
            if r.others:
                entry["other_traces"] = [[{"action": a.name, "args": action_args(a)} for a in t.actions]
                                         for t in r.others]
            if r.variants is not None:
                entry["counterexamples"] = variants_json(r, report.spans, report.depth)
            if policy is not None:
                entry["explanation"] = explanation_json(explain(policy, r.trace.actions, r.condition, r.trace.spans))
        if r.certificate is not None:
            entry["certificate"] = r.certificate
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
        "versions": dict(report.versions),
    }
