"""Effects and the log: `evicted: logged`, `effect: mask`, the `masked` attribute and record presence, end to end."""

import json

import pytest

from prunecheck.checker.check import check
from prunecheck.checker.commands.policydiff import equivalence
from prunecheck.checker.engines.explicit import domains_for, explore
from prunecheck.checker.findings.explain import explain, step_label
from prunecheck.checker.language.document import policy_document
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.language.printer import policy_python, policy_yaml
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.outputs.itf import itf_states
from prunecheck.checker.result import Verdict
from prunecheck.spec.conditions import violations
from prunecheck.spec.policy import Deployment, DeploymentOverride, with_override
from prunecheck.spec.runtime import (
    REVERSIBLE, UNKNOWN, Append, Audit, Compact, Edit, Undo, span_env, status, step,
)
from prunecheck.spec.stage import taken_effect

from conftest import BOUNDS, HOUR
from support import agree, assert_confirmed, policy_error, run_actions

CLEAR_RECORDS = "name: t\nevict: kind == 'record'\n"
MASK_RECORDS = "name: t\nevict: kind == 'record'\neffect: mask\nplaceholder_tokens: 2\n"
EDIT_THEN_COMPACT = (Append("message", 3), Edit(0, "destroy"), Compact())
# The first seed's deployment, for runs about its mechanism (a destroy's record as large as its target, undoing a
# destroy, a compaction with no ledger entry to write); the second seed's defaults are tested in test_evidence.py.
FIRST_SEED = {"evidence": "off", "destroy_record": "verbatim"}
FIRST_SEED_YAML = "".join(f'  {key}: "{value}"\n' for key, value in FIRST_SEED.items())  # under `deployment:`


def _policy(text, **deployment):
    return parse_policy_text(text, "p.yaml", Deployment(**deployment) if deployment else None)


def test_logged_eviction_keeps_the_record_present_where_destroying_it_violates_c2():
    destroyed = _policy(CLEAR_RECORDS, records="window", **FIRST_SEED)
    logged = _policy(CLEAR_RECORDS, records="window", evicted="logged", **FIRST_SEED)
    _, gone = run_actions(destroyed, EDIT_THEN_COMPACT)
    state, kept = run_actions(logged, EDIT_THEN_COMPACT)
    # R1 judges the policy's text, which names records under either effect; the run itself keeps C2 when logged.
    assert "C2" in violations(destroyed, gone[-1]) and violations(logged, kept[-1]) == {"R1"}
    record = state.span(1)
    assert (record.alive, record.namespace, record.masked) == (True, "log", False)
    assert status(logged, state) == REVERSIBLE
    assert step(logged, state, Undo(1)).outcome == "reverted"


def test_masking_a_record_in_the_window_violates_c2_and_makes_its_undo_irreversible():
    policy = _policy(MASK_RECORDS, records="window")
    state, transitions = run_actions(policy, EDIT_THEN_COMPACT)
    record = state.span(1)
    assert (record.alive, record.namespace, record.masked, record.tokens) == (True, "window", True, 2)
    assert transitions[-1].evicted == {1} and "C2" in violations(policy, transitions[-1])
    assert status(policy, state) == UNKNOWN
    assert step(policy, state, Undo(1)).outcome == "irreversible"


def test_status_and_c4_count_a_masked_record_as_missing():
    policy = _policy(MASK_RECORDS, records="window", pins="self", audit="policy")
    state, transitions = run_actions(policy, EDIT_THEN_COMPACT + (Audit(),))
    assert transitions[-1].outcome == UNKNOWN  # the masked record is visible to the self-certified audit
    rationale = _policy("name: t\nevict: kind == 'rationale'\neffect: mask\n", rationale="window")
    _, transitions = run_actions(rationale, EDIT_THEN_COMPACT)
    assert "P1" in violations(rationale, transitions[-1])


def test_undo_unmasks_its_target_and_masked_is_an_attribute_the_policy_reads():
    policy = _policy("name: t\nevict: kind == 'summary' and not masked\neffect: mask\n")
    state, transitions = run_actions(policy, (Append("message", 3), Edit(0, "transform"), Compact()))
    assert state.span(0).masked and state.span(0).tokens == 1 and span_env(policy, state, state.span(0))["masked"]
    assert not step(policy, state, Compact()).evicted  # `not masked` leaves it alone now
    after = step(policy, state, Undo(1)).after
    assert (after.span(0).masked, after.span(0).kind, after.span(0).tokens) == (False, "message", 1)


def test_taken_effect_is_what_the_window_loses_and_truncation_still_sees_masked_spans():
    policy = _policy("name: t\nevict: true\neffect: mask\nplaceholder_tokens: 2\n", host_truncation="on")
    state, _ = run_actions(policy, (Append("message", 5), Append("message", 1)))
    assert [taken_effect(policy, s, 6, 2) for s in state.spans] == [(3, 2), (7, 2)]
    evicting = _policy("name: t\nevict: true\n")
    assert [taken_effect(evicting, s, 6, 2) for s in state.spans] == [(1, 1), (5, 1)]
    after = step(policy, state, Compact(3))
    assert after.evicted == {0, 1} and after.truncated == {0} and after.after.window_tokens() == 2


@pytest.mark.parametrize("text, deployment, actions", [
    (CLEAR_RECORDS, {"records": "window", "evicted": "logged"}, EDIT_THEN_COMPACT + (Undo(1), Compact(1))),
    (MASK_RECORDS, {"records": "window"}, EDIT_THEN_COMPACT + (Undo(1), Audit())),
    ("name: t\nevict: not masked\nrank: tokens\nbudget: 3\neffect: mask\nplaceholder_tokens: 3\n", {},
     (Append("message", 1), Append("message", 5), Append("diff", 2), Compact(), Compact(1))),
    # under budget from the start: the walk takes nothing, though masking would grow the window past the budget
    ("name: t\nevict: kind in ['record', 'summary']\nrank: 0 - tokens\nbudget: 4\neffect: mask\n"
     "placeholder_tokens: 3\n", {"records": "window", "evicted": "logged"},
     (Append("message", 1), Append("message", 1), Edit(0, "transform"), Compact())),
    # cut: a span keeps at most placeholder_tokens of itself (a small one keeps all it has)
    ("name: t\nevict: kind != 'message'\neffect: cut\nplaceholder_tokens: 2\n", {"records": "window", **FIRST_SEED},
     (Append("message", 5), Append("diff", 1), Edit(0, "destroy"), Compact(), Undo(2), Compact(3))),
    ("name: t\nevict: not masked\nrank: 0 - tokens\nbudget: 6\neffect: cut\nplaceholder_tokens: 2\n", {},
     (Append("message", 4), Append("message", 1), Append("diff", 3), Compact(), Compact(2))),
])
def test_the_model_agrees_with_the_runtime_on_effects(text, deployment, actions):
    agree(_policy(text, **deployment), actions, with_lemmas=True)


@pytest.mark.parametrize("text, deployment", [
    (MASK_RECORDS, {"records": "window"}),
    ("name: t\nevict: kind in ['record', 'rationale']\n", {"records": "window", "rationale": "window",
                                                          "evicted": "logged", "pins": "self", "audit": "policy"}),
    ("name: t\nevict: masked or kind == 'summary'\nrank: tokens\nbudget: 2\neffect: mask\nplaceholder_tokens: 3\n",
     {"records": "window", "audit": "policy", "pins": "self"}),
    ("name: t\nevict: kind == 'record' and not masked\neffect: cut\nplaceholder_tokens: 2\n", {"records": "window"}),
])
def test_the_engines_agree_on_effect_policies(text, deployment):
    policy = _policy(text, **deployment)
    domains = domains_for(policy)
    explicit = {r.condition: (r.verdict, r.depth) for r in explore(policy, 4, 3, domains=domains, time_limit=HOUR)
                if r.verdict is Verdict.VIOLATED}
    options = CheckOptions(depth=4, spans=3, prove=False, tokens=domains.tokens, **BOUNDS)
    symbolic = {r.condition: (r.verdict, r.depth) for r in check(policy, options).results
                if r.verdict is Verdict.VIOLATED}
    assert explicit == symbolic and explicit


def test_masking_is_proved_safe_under_the_safe_default_deployment():
    policy = _policy("name: t\nevict: kind != 'message'\neffect: mask\nplaceholder_tokens: 2\n")
    results = check(policy, CheckOptions(depth=4, spans=3, only=("C2", "P1"), **BOUNDS)).results
    assert [r.verdict for r in results] == [Verdict.HOLDS, Verdict.HOLDS]
    assert_confirmed(policy, results)


def test_an_override_of_evicted_decides_c2():
    policy = _policy(CLEAR_RECORDS + "deployment:\n  records: window\n" + FIRST_SEED_YAML)  # 3 spans: no ledger entry
    options = CheckOptions(depth=4, spans=3, only=("C2",), **BOUNDS)
    (destroyed,) = check(policy, options).results
    logged = with_override(policy, DeploymentOverride.of({"evicted": "logged"}))
    (kept,) = check(logged, options).results
    assert destroyed.verdict is Verdict.VIOLATED and kept.verdict is Verdict.HOLDS
    assert logged.overridden == ("evicted",) and logged.deployment.records == "window"
    assert not equivalence(policy, logged).proved


def test_explanations_say_masked_and_moved_to_the_log():
    policy = _policy(MASK_RECORDS, records="window")
    text = explain(policy, EDIT_THEN_COMPACT, "C2")
    assert "masked by the policy" in text.steps[-1] and text.cause.summary.startswith("the compaction masks record #1")
    assert ("effect: mask", 3) in [(p.text, p.loc.line) for p in text.cause.points]
    _, transitions = run_actions(policy, EDIT_THEN_COMPACT + (Undo(1),))
    assert step_label(policy, transitions[-1]) == "undo of edit 1 (record #1): irreversible, the record is masked"
    logged = _policy("name: t\nevict: kind == 'diff'\n", evicted="logged", records="window", host_truncation="on",
                     **FIRST_SEED)
    _, transitions = run_actions(logged, (Append("message", 3), Edit(0, "destroy"), Compact(1)))
    assert step_label(logged, transitions[-1]) == ("compaction: evicted by the policy and moved to the log: #0 (diff); "
                                                   "truncated to the host budget of 1 (moved to the log): #1 (record "
                                                   "of edit 1)")


def test_masked_is_in_itf_spans_only_for_a_policy_with_masks():
    masking = _policy(MASK_RECORDS, records="window")
    plain = _policy(CLEAR_RECORDS, records="window")
    assert itf_states(masking, run_actions(masking, EDIT_THEN_COMPACT)[1])[-1]["spans"][1]["masked"] is True
    assert "masked" not in itf_states(plain, run_actions(plain, EDIT_THEN_COMPACT)[1])[-1]["spans"][1]


@pytest.mark.parametrize("printer, name", [(policy_yaml, "p.yaml"), (policy_python, "p.py"),
                                           (lambda p: json.dumps(policy_document(p)), "p.json")])
def test_effect_keys_round_trip_through_every_printer(printer, name):
    policy = _policy(MASK_RECORDS + "deployment:\n  evicted: logged\n")
    again = parse_policy_text(printer(policy), name)
    assert again == policy and (again.effect, again.placeholder_tokens, again.deployment.evicted) == \
        ("mask", 2, "logged")


def test_defaults_leave_reprs_and_documents_as_they_were():
    policy = _policy(CLEAR_RECORDS)
    assert "effect" not in repr(policy) and "placeholder" not in repr(policy) and "evicted" not in repr(policy)
    assert "evicted" not in policy.deployment.as_dict() and "effect" not in policy_document(policy)
    assert "effect='mask'" in repr(_policy(MASK_RECORDS)) and "evicted='logged'" in repr(Deployment(evicted="logged"))


@pytest.mark.parametrize("text, words", [
    ("evict: true\neffect: hide", "effect must be one of evict, mask"),
    ("evict: true\nplaceholder_tokens: 2", "only for `effect: mask`"),
    ("evict: true\neffect: mask\nplaceholder_tokens: 0", "placeholder_tokens must be at least 1"),
    ("evict: true\ndeployment:\n  evicted: kept", "evicted must be one of destroyed, logged"),
    ("evict: masked > 1", "cannot apply > to bool"),
])
def test_bad_effect_keys_are_one_line_policy_errors(text, words):
    error = policy_error(text)
    assert words in str(error) and error.line >= 2


def test_cutting_keeps_at_most_the_placeholder_and_a_cut_record_is_no_longer_present():
    policy = _policy("name: t\nevict: kind == 'record'\neffect: cut\nplaceholder_tokens: 2\n", records="window",
                     **FIRST_SEED)
    state, _ = run_actions(policy, (Append("message", 5), Edit(0, "destroy")))
    after = step(policy, state, Compact())
    record = after.after.span(1)
    assert (record.alive, record.masked, record.tokens, record.namespace) == (True, True, 2, "window")
    assert "C2" in violations(policy, after)
    assert step(policy, after.after, Undo(1)).outcome == "irreversible"
    small = _policy("name: t\nevict: true\neffect: cut\nplaceholder_tokens: 3\n", **FIRST_SEED)
    state, _ = run_actions(small, (Append("message", 1), Append("message", 7)))
    assert [s.tokens for s in step(small, state, Compact()).after.spans] == [1, 3]


def test_a_cut_that_shortens_nothing_removes_nothing():
    """Issue 27: a 1-token record cut to at most 100 tokens keeps its content (no C2), in the runtime and the models."""
    from prunecheck.spec.runtime import Append, Compact, Edit, State, step
    from prunecheck.spec.conditions import violations
    from prunecheck.checker.language.loader import parse_policy_text
    policy = parse_policy_text("name: p\nevict: true\neffect: cut\nplaceholder_tokens: 100\n"
                               "deployment:\n  records: window\n" + FIRST_SEED_YAML, "p.yaml")
    state = State()
    for action in (Append("message", 300), Edit(0, "transform")):
        state = step(policy, state, action).after
    t = step(policy, state, Compact())
    assert t.after.span(1) == state.span(1) and "C2" not in violations(policy, t)  # the 1-token record: whole
    assert t.after.span(0).masked and t.after.span(0).tokens == 100  # the 300-token message: cut
    from prunecheck.checker.engines.bmc import check_bounded
    from prunecheck.checker.result import Verdict
    from conftest import BOUNDS
    # Only a record longer than the cut can lose content: a destroy record copies a target of over 100 tokens.
    (c2,) = check_bounded(policy, depth=4, spans=5, conditions=["C2"], **BOUNDS)
    assert c2.verdict is Verdict.VIOLATED, c2
    state, lost = State(), []
    for action in c2.trace.actions:
        t = step(policy, state, action)
        lost += [i for i in range(len(state.spans)) if state.span(i).kind == "record" and state.span(i).alive
                 and not state.span(i).masked and t.after.span(i).masked]
        state = t.after
    assert lost and all(state.span(i).tokens == 100 for i in lost), c2.trace.actions  # cut from over 100 tokens
