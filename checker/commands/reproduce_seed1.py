"""The first seed's observed failure and its demonstration, each row next to the deployment that prevents it."""

from __future__ import annotations

from dataclasses import replace

from prunecheck.spec.conditions import state_violations, violations
from prunecheck.spec.errors import IrreversibleEditError
from prunecheck.spec.runtime import REVERSIBLE, Append, Audit, Compact, Edit, Pin, Undo, status, triggered, undo

from prunecheck.checker.check import check
from prunecheck.checker.commands.observation import (BOUNDS, MECHANISM, How, Kind, Row, Run, Shown, by_setting,
                                                   checker_pair, checker_words, deployment_words, with_keys)
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.result import Verdict

# The seed's soft budget: the stage runs only over the budget (`when`) and stops once under it (`until`); the
# session's tokens are scaled down (1420 tokens of content, 2321 with the records, against a budget of 1500). The
# first seed's session keeps no evidence ledger, and its records keep the prior state verbatim (the demo's
# `{"prior_state": "full_trace"}`): its deployment says so (ADR 0035).
FIRST_SEED = 'evidence: "off", destroy_record: verbatim'
SEED_POLICY = f"""
name: seed-recency-frequency
evict: not pinned and recency * frequency < 0.25
budget: 1500
when: window_tokens > budget
until: window_tokens <= budget
deployment: {{records: window, pins: self, audit: policy, {FIRST_SEED}}}
"""
# The budget no run of the seed's session reaches: the trigger never fires.
UNREACHED_BUDGET = 1_000_000

# The demo's compact(["e1", "undo:e1"]): a policy whose selection names e1's summary and e1's record.
DEMO_POLICY = f"""
name: seed-demo-names-undo-region
evict: kind == "summary" or namespace == "undo"
deployment: {{{FIRST_SEED}}}
"""

# The demo's verifier reads the `live_edits` its own compaction pops (the record `undo:e1` named by kind here).
BLIND_POLICY = f"""
name: seed-demo-verifier
evict: kind == "summary" or kind == "record"
deployment: {{records: window, pins: self, audit: policy, {FIRST_SEED}}}
"""

BELOW_THE_LINE = f"""
name: seed-demo-below-the-line
evict: kind == "summary"
pairs: together
deployment: {{{FIRST_SEED}}}
"""


def seed_run(policy) -> tuple:
    """The seed's session: three spans, two edits, the compaction, the third edit; (run, e1, e2, compaction, e3)."""
    run = Run(policy)
    trace, file_body, echoes = (run.do(Append(kind, tokens)).after.spans[-1].id
                                for kind, tokens in (("stack_trace", 400), ("file_body", 900), ("tool_output", 120)))
    e1 = run.do(Edit(trace, "transform")).after.edits[-1].record
    e2 = run.do(Edit(file_body, "destroy")).after.edits[-1].record
    for span in (trace, file_body, echoes):
        run.do(Pin(span))
    compaction = run.do(Compact())
    e3 = run.do(Edit(echoes, "destroy")).after.edits[-1].record
    return run, e1, e2, compaction, e3


def confabulation(policy) -> tuple:
    """Rows 1d and 1e: undo of edit 1 after its record was evicted, reconstructing and refusing."""
    words = "asked to undo edit 1, the instance reconstructed a plausible stack trace"
    confabulating = with_keys(policy, missing_record="reconstruct")
    shown = by_setting(confabulating, "U1", "missing_record")
    run, e1, _e2, _c, _e3 = seed_run(confabulating)
    target = run.state.edit(e1).target
    undone = run.do(Undo(e1))
    audit = run.do(Audit()).outcome
    span = run.state.span(target)
    failed = (undone.outcome == "reconstructed" and span.kind == "stack_trace" and span.confabulated
              and audit == REVERSIBLE and "U1" in violations(confabulating, undone))
    d = Row("1d", Kind.FAILURE, words,
            f"undo of edit 1 (record #{e1} absent) has outcome '{undone.outcome}': span #{target} reads as a "
            f"'{span.kind}' again, from no record; the audit then says '{audit}'; U1 violated on the runtime",
            deployment_words(confabulating, "missing_record"), failed, shown)
    run, e1, _e2, _c, _e3 = seed_run(policy)
    try:
        undo(policy, run.state, e1)
        refused, found = False, "undo of edit 1 returned a state"
    except IrreversibleEditError as exc:
        refused, found = True, f"undo of edit 1 raises IrreversibleEditError ({exc}); nothing is reconstructed"
    return d, Row("1e", Kind.PREVENTED, words, found, deployment_words(policy, "missing_record"), refused)


def budget_shown(policy, compaction, lost: list) -> Shown:
    """The mechanism when the policy's own trigger made the compaction evict the records (the same session with
    the budget out of reach loses none); otherwise the script's `compact()` did it."""
    if policy.when is None or policy.budget is None or not triggered(policy, compaction.before):
        return Shown(How.SCRIPTED, "compact()")
    _run, e1, e2, untriggered, _e3 = seed_run(replace(policy, budget=UNREACHED_BUDGET))
    return MECHANISM if lost and not untriggered.evicted & {e1, e2} else Shown(How.SCRIPTED, "compact()")


def observed_failure() -> tuple:
    policy = parse_policy_text(SEED_POLICY, "seed-observed.yaml")
    run, e1, e2, compaction, e3 = seed_run(policy)
    report_status = run.do(Audit()).outcome
    lost = sorted(compaction.evicted & {e1, e2})
    under = deployment_words(policy, "records", "pins", "audit")
    independent = status(with_keys(policy, audit="independent"), run.state)
    rows = [
        Row("1a", Kind.FAILURE, "over its soft budget, the compaction between edit 2 and 3 evicted the records of "
            "edits 1 and 2",
            f"the window holds {compaction.before.window_tokens()} tokens, over the budget of {policy.budget}: the "
            f"trigger fires and the compaction evicts records #{e1} and #{e2} (unpinned, unread) until "
            f"{compaction.after.window_tokens()} tokens; edit 3's record #{e3} is live",
            under, lost == [e1, e2], budget_shown(policy, compaction, lost)),
        Row("1b", Kind.FAILURE, "the instance still reported the window as 'fully reversible'",
            f"the self-certified audit reports '{report_status}'; C4 violated on the runtime", under,
            report_status == REVERSIBLE and "C4" in state_violations(policy, run.state)),
        Row("1c", Kind.PREVENTED, "the absence of the record is not observable from inside the window",
            f"an independent audit of the same state reports '{independent}'", "audit=independent",
            independent != REVERSIBLE),
        *confabulation(policy),
    ]
    report = check(policy, BOUNDS)
    c1 = report.result("C1")
    rows.append(Row("1f", Kind.FAILURE, "no individual step violated the policy; it consumed its own safety net",
                    checker_words(report, "C1"), under,
                    c1.verdict == Verdict.VIOLATED and len(c1.trace.actions) <= 8))
    rows += checker_pair("1g", "1h", "undo without its record succeeds (confabulation)", "U1",
                         with_keys(policy, missing_record="reconstruct"), ("records", "missing_record"),
                         {"records": "undo_region"}, defines=("missing_record",))
    return "1. First seed, what was observed: a self-authored recency x frequency policy", rows


def demo_run(policy) -> tuple:
    """The demo: apply_edit e1 (stack trace -> summary), e2 (file body -> diff), compact naming e1 and undo:e1."""
    run = Run(policy)
    trace = run.do(Append("stack_trace", 400)).after.spans[-1].id
    body = run.do(Append("file_body", 900)).after.spans[-1].id
    e1 = run.do(Edit(trace, "transform")).after.edits[-1].record
    run.do(Edit(body, "destroy"))
    return run, trace, e1, run.do(Compact())


def demonstration() -> tuple:
    policy = parse_policy_text(DEMO_POLICY, "seed-demo.yaml")
    sequential = with_keys(policy, refusal="sequential")
    run, trace, e1, compaction = demo_run(sequential)
    gated = with_keys(sequential, safe_undo="on")  # the demo's safe_undo: the closure check, then the undo
    restored = undo(gated, run.state, e1)
    rows = [
        Row("2a", Kind.DEMO, "compact(['e1', 'undo:e1']) prints 'blocked: ... undo:e1'",
            f"the compaction's outcome is '{compaction.outcome}', but span #{trace} (e1's target) was already "
            f"evicted: the demo's compact is not atomic; X1 violated on the runtime",
            deployment_words(sequential, "refusal"),
            compaction.outcome == "blocked" and trace in compaction.evicted and "X1" in violations(sequential,
                                                                                                  compaction)),
        Row("2b", Kind.DEMO, "safe_undo(w, 'e1') returns 'full_trace'",
            f"undo of edit 1 (record #{e1}) passes the closure check and restores span #{trace} as a "
            f"'{restored.span(trace).kind}'",
            deployment_words(gated, "refusal", "safe_undo"), restored.span(trace).kind == "stack_trace"),
    ]
    atomic = with_keys(policy, refusal="atomic")
    run, trace, _e1, compaction = demo_run(atomic)
    unchanged = compaction.after.spans == compaction.before.spans and compaction.after.edits == compaction.before.edits
    rows.append(Row("2c", Kind.PREVENTED, "compact(['e1', 'undo:e1']) is blocked",
                    f"the compaction's outcome is '{compaction.outcome}' and the window is unchanged",
                    "refusal=atomic", compaction.outcome == "blocked" and unchanged))
    rows += checker_pair("2d", "2e", "the demo's compaction changes the window before it refuses", "X1", sequential,
                         ("refusal",), {"refusal": "atomic"}, Kind.DEMO)
    report = check(policy, BOUNDS)
    rows.append(Row("2f", Kind.REFUSED, "it refuses to let a pruning policy name the undo region as a candidate",
                    checker_words(report, "R1"), "the safe design", report.result("R1").verdict == Verdict.VIOLATED))
    below = check(parse_policy_text(BELOW_THE_LINE, "seed-below.yaml"), BOUNDS)
    held = [r.condition for r in below.results if r.verdict == Verdict.HOLDS]
    rows.append(Row("2g", Kind.PREVENTED, "below that line, self-editing is genuinely reversible",
                    f"checker: {', '.join(held)} hold at every depth and window size (certificates re-checked)",
                    "the safe design", below.verdict == Verdict.HOLDS))
    rows += blind_spot()
    return "2. First seed, the demonstration: a policy that names the undo region", rows


def blind_spot() -> list:
    """The demo verifier's blind spot: its compaction pops the `live_edits` its verifier reads, so the verifier
    never sees the record that compaction took. Modelled as `audit: policy` (the status counts the edits whose
    record or rationale the policy can still address) over the demo's unpinned dict of records, which its compaction
    can name (`records: window, pins: self`, the selection naming records by kind): run on the runtime, then checked
    (C4)."""
    blind = parse_policy_text(BLIND_POLICY, "seed-demo-verifier.yaml")
    run, trace, e1, compaction = demo_run(blind)
    said = status(blind, compaction.after)
    hidden = e1 in compaction.evicted and said == REVERSIBLE
    rows = [Row("2h", Kind.DEMO, "the demo's compaction pops the live_edits its verifier reads",
                f"the compaction takes e1's record (#{e1}) and the status still says '{said}'; C4 violated on the "
                f"runtime", deployment_words(blind, "records", "pins", "audit"),
                hidden and "C4" in state_violations(blind, compaction.after))]
    rows += checker_pair("2i", "2j", "a compaction can hide a missing record from the demo's verifier", "C4",
                         blind, ("audit",), {"audit": "independent"}, Kind.DEMO)
    gated = with_keys(blind, audit="independent", safe_undo="on")
    run, _trace, e1, _compaction = demo_run(gated)
    try:
        undo(gated, run.state, e1)
        raised, found = False, "safe_undo of edit 1 returned a state"
    except IrreversibleEditError as exc:
        raised, found = True, f"safe_undo of edit 1 raises IrreversibleEditError ({exc})"
    return rows + [Row("2k", Kind.DEMO, "if the region were addressable, e1's record would vanish here and "
                       "safe_undo(w, 'e1') would raise", found, deployment_words(gated, "audit", "safe_undo"), raised)]
