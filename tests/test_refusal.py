"""The first seed's refusal (SPEC §6e): R1 (a policy names a recovery span), refusal: atomic|sequential and X1."""

import json
from dataclasses import replace

import pytest
import z3

from prunecheck.checker.check import check
from prunecheck.checker.engines.bmc import check_bounded
from prunecheck.checker.engines.prove import prove
from prunecheck.checker.language.document import policy_document, policy_hash
from prunecheck.checker.engines.certificate import Status, confirm_certificate
from prunecheck.checker.engines.replay import confirm
from prunecheck.checker.language.loader import load_policy
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.result import Verdict
from prunecheck.spec.conditions import BY_ID, applicable, violations
from prunecheck.spec.policy import Deployment
from prunecheck.spec.refusal import control_kinds, named, named_spans
from prunecheck.spec.runtime import Append, Compact, Edit, State, Undo, step
from prunecheck.symbolic.conditions import pair_violation
from prunecheck.symbolic.parametric import PairModel

from support import agree, engines_agree, fresh_check, model_policy
from conftest import BOUNDS, EXAMPLES, HOUR, RLIMIT

# The seed demo's policy: it names e1's span and e1's record, as `compact(["e1", "undo:e1"])`.
DEMO = "evict: kind == 'summary' or namespace == 'undo'"
# apply_edit e1 (stack trace -> summary), apply_edit e2 (file body -> diff), compact, undo(e1).
DEMO_RUN = (Append("stack_trace", 3), Append("file_body", 3), Edit(0, "transform"), Edit(1, "destroy"), Compact(),
            Undo(2))
OPTIONS = CheckOptions(depth=4, spans=3, **BOUNDS)
# The first seed's deployment (no evidence, a destroy's record as large as its target), for the tests of its refusal
# that name every condition a step violates or search within small bounds: a compaction's ledger entry would take a
# slot, and a 1-token record fits any host budget once its target is gone; the second seed's defaults are tested
# elsewhere.
FIRST_SEED = Deployment(evidence="off", destroy_record="verbatim")


def _run(policy, actions):
    state, out = State(), []
    for action in actions:
        out.append(step(policy, state, action))
        state = out[-1].after
    return out


def _after_edits(text, deployment=Deployment()):
    policy = model_policy(text, deployment)
    return policy, _run(policy, DEMO_RUN[:4])[-1].after


@pytest.mark.parametrize("text, names", [
    ("evict: namespace == 'undo' or kind == 'record' or (not pinned and recency * frequency < 0.25)", True),
    ("evict: kind in ['tool_output', 'record']", True),
    ("evict: namespace == 'log'", True),
    ("evict: true", False),
    ("evict: not pinned", False),
    ("evict: role == 'tool_result'", False),
    ("evict: kind != 'message'", False),
    ("evict: kind == 'record'\nkeep: namespace == 'undo'", False),
])
def test_a_policy_names_a_recovery_span_by_its_namespace_or_kind_not_by_a_predicate_true_of_anything(text, names):
    policy, state = _after_edits(text)
    assert bool(named_spans(policy, state)) is names
    assert all(state.span(i).kind in ("record", "rationale") for i in named_spans(policy, state))


def test_the_control_view_takes_the_first_content_kind_the_selection_does_not_mention():
    assert control_kinds(model_policy("evict: kind == 'message' or kind == 'record'", Deployment())) == ("tool_output",)
    every = "evict: kind in ['message', 'tool_output', 'file_body', 'stack_trace', 'summary', 'diff', 'record']"
    assert len(control_kinds(model_policy(every, Deployment()))) == 6


def test_an_absent_recovery_span_and_a_content_span_are_never_named():
    policy, state = _after_edits("evict: kind == 'summary' or namespace == 'undo'")
    assert named(policy, state, state.span(2)) and not named(policy, state, state.span(0))
    dead = replace(state, spans=tuple(replace(s, alive=False) if s.id == 2 else s for s in state.spans))
    assert not named(policy, dead, dead.span(2))


def test_r1_applies_to_every_policy_and_x1_only_where_the_refusal_is_not_silent():
    silent = model_policy(DEMO, Deployment())
    assert "R1" in applicable(silent) and "X1" not in applicable(silent)
    for refusal in ("atomic", "sequential"):
        assert "X1" in applicable(model_policy(DEMO, Deployment(refusal=refusal)))
    assert BY_ID["R1"].rule == "RefuseNamingUndoRegion" and BY_ID["X1"].rule == "AtomicCompaction"


def test_silent_compacts_as_before_atomic_changes_nothing_but_the_clock_sequential_keeps_what_it_took():
    outcomes = {}
    for refusal in ("silent", "atomic", "sequential"):
        policy = model_policy(DEMO, replace(FIRST_SEED, refusal=refusal))
        t = _run(policy, DEMO_RUN[:5])[-1]
        outcomes[refusal] = (t.outcome, sorted(t.evicted), sorted(violations(policy, t)))
        if refusal == "atomic":
            assert replace(t.after, step=t.before.step) == t.before
    # e1's span (#0, a summary) is taken before the walk meets e1's record (#2): the demo's F3.
    assert outcomes == {"silent": ("ok", [0], ["R1"]), "atomic": ("blocked", [], ["R1"]),
                        "sequential": ("blocked", [0], ["R1", "X1"])}


def test_the_demo_under_sequential_still_undoes_e1_from_its_record():
    policy = model_policy(DEMO, Deployment(refusal="sequential"))
    undo = _run(policy, DEMO_RUN)[-1]
    assert undo.outcome == "reverted" and undo.after.span(0).kind == "stack_trace"


def test_r1_is_violated_with_a_replayed_trace_on_the_policy_that_names_the_undo_region():
    policy = load_policy(EXAMPLES / "seed_names_undo_region.yaml")
    report = check(policy, replace(OPTIONS, only=("C1", "R1")))
    assert report.result("C1").verdict is Verdict.HOLDS
    result = report.result("R1")
    assert result.verdict is Verdict.VIOLATED
    confirm(policy, result.trace.actions, "R1", result.trace.spans)


def test_r1_holds_with_a_certificate_cvc5_confirms_on_the_safe_design():
    policy = load_policy(EXAMPLES / "seed_safe_design.yaml")
    result = check(policy, replace(OPTIONS, only=("R1",))).result("R1")
    assert result.verdict is Verdict.HOLDS
    certificate = json.loads(result.certificate)
    assert certificate["condition"] == "R1" and certificate["free_policy"] is False
    recheck = confirm_certificate(result.certificate, policy, "R1", timeout_ms=int(HOUR * 1000), rlimit=RLIMIT)
    assert recheck.status is Status.CONFIRMED


def test_with_the_policy_abstracted_r1_is_unprovable_with_its_own_terms_it_is_not():
    """A free predicate names any span, so the abstracted pair model violates R1 wherever a recovery span is
    present; the safe design's own selection never names one."""
    policy = load_policy(EXAMPLES / "seed_safe_design.yaml")
    found = {}
    for free in (True, False):
        pair = PairModel(policy, free_policy=free)
        found[free] = fresh_check([pair_violation(pair, "R1", pair.state("s"), None)])
    assert found == {True: z3.sat, False: z3.unsat}


def test_x1_is_violated_under_sequential_with_a_replayed_trace():
    policy = model_policy(DEMO, replace(FIRST_SEED, refusal="sequential"))
    result = check(policy, replace(OPTIONS, only=("X1",))).result("X1")
    assert result.verdict is Verdict.VIOLATED
    assert result.trace.actions[-1].name == "compact"
    confirm(policy, result.trace.actions, "X1", result.trace.spans)


def test_x1_holds_under_atomic_with_the_policy_abstracted_and_a_certificate_cvc5_confirms():
    policy = model_policy(DEMO, Deployment(refusal="atomic"))
    result = check(policy, replace(OPTIONS, only=("X1",))).result("X1")
    assert result.verdict is Verdict.HOLDS and json.loads(result.certificate)["free_policy"] is True
    recheck = confirm_certificate(result.certificate, policy, "X1", timeout_ms=int(HOUR * 1000), rlimit=RLIMIT)
    assert recheck.status is Status.CONFIRMED


@pytest.mark.parametrize("text", [DEMO, "evict: kind == 'record' or tokens >= 2",
                                  "evict: namespace == 'log' or age > 1"])
@pytest.mark.parametrize("refusal", ["atomic", "sequential"])
def test_the_engines_agree_under_a_refusing_deployment(text, refusal):
    engines_agree(model_policy(text, Deployment(refusal=refusal, records="window")), depth=4, spans=4)


@pytest.mark.parametrize("refusal", ["atomic", "sequential"])
def test_the_unrolled_model_agrees_with_the_runtime_on_the_demo_run(refusal):
    # Every state and every condition term (R1, X1 among them), pinned to the same actions; lemmas included.
    actions = DEMO_RUN[:3] + (Compact(), Undo(2), Compact())  # within the helper's 5 slots
    agree(model_policy(DEMO, Deployment(refusal=refusal)), actions, with_lemmas=True)


@pytest.mark.parametrize("refusal", ["atomic", "sequential"])
def test_a_refusing_deployment_proves_nothing_the_runtime_violates(refusal):
    # The records are pinned, so nothing is named and a truncating host's budget (host_truncation: on) truncates a
    # record as under silent; the abstracted pair model once read "a present record" as "named" (blocked) and so
    # proved C2 here.
    policy = model_policy("evict: not pinned and recency * frequency < 0.25",
                          replace(FIRST_SEED, records="window", refusal=refusal, host_truncation="on"))
    proof = prove(policy, "C2", policy_document(policy), policy_hash(policy), **BOUNDS)
    assert proof.verdict is not Verdict.HOLDS
    (bounded,) = check_bounded(policy, depth=3, spans=4, conditions=["C2"], **BOUNDS)
    assert bounded.verdict is Verdict.VIOLATED
    confirm(policy, bounded.trace.actions, "C2", bounded.trace.spans)
