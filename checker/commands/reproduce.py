"""`prunecheck reproduce`: the seeds' observations, re-run on the runtime and re-found by the checker."""

from __future__ import annotations

from dataclasses import replace
from typing import TextIO

from prunecheck.spec.conditions import violations
from prunecheck.spec.errors import IrreversibleEditError
from prunecheck.spec.evaluate import evaluate
from prunecheck.spec.runtime import (
    REVERSIBLE, Append, Audit, Compact, Edit, Pin, State, addressable, span_env, status, step, undo,
)

from prunecheck.checker.check import check
from prunecheck.checker.options import options_with
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.spec.actions import action_text
from prunecheck.checker.outputs.reasons import reason_text
from prunecheck.checker.result import Verdict

# The seeds' observations are fixed: bounded by solver resources (per query) rather than seconds, they are re-found
# alike on every machine, however loaded; the time limit only cuts off a hang.
BOUNDS = options_with(timeout=600.0, rlimit=100_000_000)

SEED_POLICY = """
name: seed-recency-frequency
evict: not pinned and recency * frequency < 0.25
deployment: {records: window, pins: self, audit: policy}
"""

DEMO_POLICY = """
name: seed-demo-names-undo-region
evict: namespace == "undo" or kind == "record"
"""

SEED2_POLICY = """
name: stale-transcripts
evict: kind != "record" and not edited and age >= 3
deployment: {rationale: window}
"""


class _Run:
    """A scripted run on the runtime that keeps each transition."""

    def __init__(self, policy):
        self.policy, self.state, self.transitions = policy, State(), []

    def do(self, action):
        transition = step(self.policy, self.state, action)
        self.transitions.append(transition)
        self.state = transition.after
        return transition


def _row(out: TextIO, seed: str, found: str, ok: bool) -> bool:
    print(f"  seed:  {seed}", file=out)
    print(f"  found: {found}  [{'reproduced' if ok else 'NOT REPRODUCED'}]", file=out)
    return ok


def _checker_line(report, condition: str) -> str:
    r = report.result(condition)
    if r.verdict == Verdict.VIOLATED:
        steps = "; ".join(action_text(a, keywords=True) for a in r.trace.actions)
        return f"checker: {condition} violated in {r.trace.length()}: {steps}"
    return f"checker: {condition} {r.verdict} ({reason_text(r.reason)})"


def observed_failure(out: TextIO) -> bool:
    print("1. First seed, what was observed: a self-authored recency x frequency policy with a pinned carve-out",
          file=out)
    policy = parse_policy_text(SEED_POLICY, "seed-observed.yaml")
    run = _Run(policy)
    trace, file_body, echoes = (run.do(Append(kind, tokens)).after.spans[-1].id
                                for kind, tokens in (("stack_trace", 400), ("file_body", 900), ("tool_output", 120)))
    e1 = run.do(Edit(trace, "transform")).after.edits[-1].record
    e2 = run.do(Edit(file_body, "destroy")).after.edits[-1].record
    for span in (trace, file_body, echoes):
        run.do(Pin(span))
    compaction = run.do(Compact())
    e3 = run.do(Edit(echoes, "destroy")).after.edits[-1].record
    report_status = run.do(Audit()).outcome
    lost = sorted(compaction.evicted & {e1, e2})
    ok = True
    ok &= _row(out, "records of edits 1 and 2 were evicted by the compaction between edit 2 and edit 3",
               f"the compaction after edit 2 evicted records #{e1} and #{e2} (edits 1 and 2: span ids {lost}); "
               f"edit 3's record #{e3} is live", lost == [e1, e2])
    independent = status(replace(policy, deployment=replace(policy.deployment, audit="independent")), run.state)
    ok &= _row(out, "the instance still reported the window as 'fully reversible'",
               f"self-certified audit reports '{report_status}'; an independent audit of the same state reports "
               f"'{independent}'", report_status == REVERSIBLE and independent != REVERSIBLE)
    try:
        undo(policy, run.state, e1)
        ok &= _row(out, "undo of edit 1 had no record to use", "undo of edit 1 returned a state", False)
    except IrreversibleEditError as exc:
        ok &= _row(out, "asked to undo edit 1, the instance confabulated a plausible stack trace",
                   f"undo of edit 1 raises IrreversibleEditError ({exc}); nothing is reconstructed", True)
    report = check(policy, BOUNDS)
    c1 = report.result("C1")
    ok &= _row(out, "no individual step violated the policy; the policy consumed its own safety net",
               _checker_line(report, "C1") + f"; also C2 {report.result('C2').verdict}, "
               f"C4 {report.result('C4').verdict}",
               c1.verdict == Verdict.VIOLATED and len(c1.trace.actions) <= 8)
    return ok


def safe_demonstration(out: TextIO) -> bool:
    print("2. First seed, the demonstration: the safe design blocks a policy that names the undo region", file=out)
    policy = parse_policy_text(DEMO_POLICY, "seed-demo.yaml")
    run = _Run(policy)
    trace = run.do(Append("stack_trace", 400)).after.spans[-1].id
    run.do(Append("file_body", 900))
    e1 = run.do(Edit(trace, "transform")).after.edits[-1].record
    run.do(Edit(1, "destroy"))
    named = [s.id for s in run.state.spans
             if s.kind == "record" and evaluate(policy.evict, span_env(policy, run.state, s))]
    reachable = [i for i in named if addressable(run.state.span(i))]
    compaction = run.do(Compact())
    ok = _row(out, "compact(['e1', 'undo:e1']) is refused: the undo region is not in the policy's address space",
              f"the policy's predicate selects records {named}; addressable: {reachable}; compaction evicted "
              f"{sorted(compaction.evicted)}", bool(named) and not reachable and not compaction.evicted)
    restored = undo(policy, run.state, e1)
    ok &= _row(out, "safe_undo(w, 'e1') returns 'full_trace'",
               f"undo of edit 1 (record #{e1}) restores span #{trace} to kind '{restored.span(trace).kind}' at v"
               f"{restored.span(trace).version}", restored.span(trace).kind == "stack_trace")
    report = check(policy, BOUNDS)
    proved = [r.condition for r in report.results if r.verdict == Verdict.HOLDS]
    ok &= _row(out, "below the boundary, self-editing is genuinely reversible",
               f"checker: {', '.join(proved)} hold for every depth and window size (certificates re-checked by "
               f"cvc5)", set(proved) >= {"C1", "C2", "C3", "C4", "P1"})
    # The seed refuses the naming itself (SPEC §6e): R1 reports it instead of filtering it silently.
    ok &= _row(out, "a policy that names the undo region as a candidate is refused, not silently filtered",
               _checker_line(report, "R1"), report.result("R1").verdict == Verdict.VIOLATED)
    return ok


def provenance_loss(out: TextIO) -> bool:
    print("3. Second seed: the rationale for a compaction lived in a span the compaction removed", file=out)
    policy = parse_policy_text(SEED2_POLICY, "seed2.yaml")
    run = _Run(policy)
    run.do(Append("tool_output", 300))
    transcripts = run.do(Append("tool_output", 300)).after.spans[-1].id
    edit = run.do(Edit(transcripts, "transform")).after.edits[-1]
    for _ in range(3):
        run.do(Audit())
    compaction = run.do(Compact())
    gone = edit.rationale in compaction.evicted
    ok = _row(out, "'ingest/v3 was superseded at turn 112' existed only in a pruned transcript",
              f"compaction evicted {sorted(compaction.evicted)}, including rationale #{edit.rationale} of the live "
              f"edit (record #{edit.record}); P1 violated on the runtime: {'P1' in violations(policy, compaction)}",
              gone and "P1" in violations(policy, compaction))
    report = check(policy, BOUNDS)
    ok &= _row(out, "the justification did not survive the edit", _checker_line(report, "P1"),
               report.result("P1").verdict == Verdict.VIOLATED)
    return ok


def run_all(out: TextIO) -> int:
    results = []
    for scenario in (observed_failure, safe_demonstration, provenance_loss):
        results.append(scenario(out))
        print(file=out)
    print(f"{sum(results)} of {len(results)} seed observations reproduced", file=out)
    return 0 if all(results) else 1
