"""Evidence edges (spec/SPEC.md §6d): `cites`, the compactions' ledger entries, `justification`, and J1 on the
runtime, in the unrolled model and the explicit engine, in trace files and in the cache."""

import json
from dataclasses import replace

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from prunecheck.checker.check import check
from prunecheck.checker.engines.bmc import check_bounded
from prunecheck.checker.engines.replay import replay
from prunecheck.checker.language.document import policy_document
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.outputs.cache import ReportFormatError, report_from_json
from prunecheck.checker.outputs.itf import actions_of, first_difference, trace_document
from prunecheck.checker.outputs.reason_doc import reasons_json
from prunecheck.checker.outputs.reasons import reason_text
from prunecheck.checker.outputs.render import report_json
from prunecheck.checker.result import Verdict
from prunecheck.spec.actions import Append, Compact, Edit, Undo, action_text
from prunecheck.spec.conditions import applicable, state_violations
from prunecheck.spec.errors import TraceFormatError
from prunecheck.spec.policy import DEPLOYMENT_CHOICES, Deployment
from prunecheck.checker.engines.prove import prove
from prunecheck.checker.language.document import policy_hash
from prunecheck.spec.conditions import CONDITIONS as STATE_AND_STEP
from prunecheck.spec.runtime import ActionRefused, EditInfo, LedgerEntry, State, enabled_actions, step

from conftest import BOUNDS
from support import N, POLICIES, agree, engines_agree, model_policy, run_cli

# The second seed's observation: tool transcripts selected as low-relevance are summarised away, and the rationale
# ("superseded at turn 112") lived only inside one of them.
TRANSCRIPTS = "evict: kind == 'tool_output'"


def policy(justification="unchecked", evidence="on", text=TRANSCRIPTS, **keys):
    return model_policy(text, Deployment(evidence=evidence, justification=justification, **keys))


def run(p, actions, max_spans=None):
    state, out = State(), []
    for action in actions:
        out.append(step(p, state, action, max_spans))
        state = out[-1].after
    return out


# Two transcripts, the second is turn 112; the compaction cites it as its reason, and its stage takes it.
TURN_112 = (Append("tool_output", 2), Append("tool_output", 2), Append("message", 1), Compact(cites=(1,)))


def test_turn_112_loses_its_justification_unless_downgraded():
    unchecked = run(policy("unchecked"), TURN_112)[-1]
    assert 1 in unchecked.evicted and not unchecked.after.span(1).alive
    assert "J1" in state_violations(policy("unchecked"), unchecked.after)
    downgraded = run(policy("downgrade"), TURN_112)[-1]
    assert 1 in downgraded.evicted and downgraded.after.span(1).namespace == "log" and downgraded.after.span(1).alive
    assert "J1" not in state_violations(policy("downgrade"), downgraded.after)


def test_the_compaction_writes_a_ledger_entry_with_its_citations():
    after = run(policy(), TURN_112)[-1].after
    (entry,) = after.entries
    rationale = after.span(entry.rationale)
    assert entry == LedgerEntry(rationale.id, (1,)) and rationale.kind == "rationale" and rationale.namespace == "log"
    assert after.edits == ()  # an entry is not an edit: C1-C4 and undo never see it


def test_no_ledger_entry_without_evidence_or_when_the_stage_takes_nothing():
    plain = run(policy(evidence="off"), TURN_112[:3] + (Compact(),))[-1].after
    assert plain.entries == () and len(plain.spans) == 3
    idle = run(policy(text="evict: kind == 'diff'"), TURN_112)[-1].after
    assert idle.entries == () and len(idle.spans) == 3


def test_defer_keeps_a_cited_span_out_of_the_stage_but_not_out_of_the_hosts_truncation():
    deferred = run(policy("defer"), TURN_112)[-1]
    assert deferred.evicted == {0} and deferred.after.span(1).alive
    # The design's run: the stage spares the cited span, the host's truncation takes it.
    actions = (Append("message", 2), Append("message", 1), Edit(1, "transform", cites=(0,)), Compact(1))
    host = {"host_truncation": "on"}  # a host that truncates to its budget (SPEC §2)
    last = run(policy("defer", text="evict: false", **host), actions)[-1]
    assert 0 in last.truncated and "J1" in state_violations(policy("defer", **host), last.after)
    saved = run(policy("downgrade", text="evict: false", **host), actions)[-1]
    assert 0 in saved.truncated and saved.after.span(0).namespace == "log"
    assert "J1" not in state_violations(policy("downgrade", **host), saved.after)
    # Without one (the default), nothing takes the cited span.
    assert not run(policy("defer", text="evict: false"), actions)[-1].truncated


def test_downgrade_turns_a_mask_of_a_cited_span_into_a_move_to_the_log():
    p = policy("downgrade", text=TRANSCRIPTS + "\neffect: mask\nplaceholder_tokens: 1")
    after = run(p, TURN_112)[-1].after
    assert after.span(0).masked and after.span(1).namespace == "log" and not after.span(1).masked
    assert "J1" not in state_violations(p, after)


def test_an_undone_edit_cites_nothing():
    p = policy(text="evict: false", host_truncation="on")  # the host's truncation takes the cited span
    actions = (Append("message", 2), Append("message", 1), Edit(1, "transform", cites=(0,)), Compact(1))
    assert "J1" in state_violations(p, run(p, actions)[-1].after)
    undone = run(p, actions[:3] + (Undo(2), Compact(1)))[-1].after
    assert undone.cited_ids() == frozenset() and "J1" not in state_violations(p, undone)


@pytest.mark.parametrize("cites, why", [((0,), "evidence: on"), ((5,), "does not exist"), ((1, 0), "ascending"),
                                         ((0, 0), "ascending"), ([0], "tuple"), ((True,), "does not exist")])
def test_bad_citations_are_refused(cites, why):
    p = policy() if why != "evidence: on" else policy(evidence="off")
    state = run(p, (Append("message", 1), Append("message", 1)))[-1].after
    for action in (Edit(0, "transform", cites=cites), Compact(cites=cites)):
        with pytest.raises(ActionRefused, match=why):
            step(p, state, action)


def test_a_citation_of_a_span_that_is_not_present_is_refused():
    p = policy()
    state = run(p, (Append("tool_output", 1), Append("message", 1), Compact()))[-1].after
    with pytest.raises(ActionRefused, match="not present"):
        step(p, state, Edit(1, "transform", cites=(0,)))


def test_reprs_and_traces_are_quiet_without_citations():
    assert repr(Edit(1, "transform")) == "Edit(target=1, mode='transform')"
    assert repr(Compact()) == "Compact(budget=None)" and action_text(Compact()) == "compact()"
    assert repr(State()) == "State(step=0, spans=(), edits=())"
    assert "cites" not in repr(EditInfo(1, 2, 0, "transform", 1, "message", False))
    assert action_text(Edit(0, "transform", cites=(0,)), keywords=True) == \
        "edit(target=0, mode='transform', cites=(0,))"
    p = policy(evidence="off", text="evict: true")
    doc = trace_document(p, policy_document(p), run(p, (Append("message", 1), Edit(0, "transform"))), {})
    assert "entries" not in doc["vars"] and all("cites" not in e for s in doc["states"] for e in s["edits"])


def test_the_explicit_engine_cites_nothing_or_one_present_span_and_only_under_evidence():
    state = run(policy(), (Append("message", 1), Append("message", 1)))[-1].after
    on = {a.cites for a in enabled_actions(policy(), state) if isinstance(a, (Edit, Compact))}
    assert on == {(), (0,), (1,)}
    off = {a.cites for a in enabled_actions(policy(evidence="off"), state) if isinstance(a, (Edit, Compact))}
    assert off == {()}


def _document(p, actions):
    return json.loads(json.dumps(trace_document(p, policy_document(p), run(p, actions), {"condition": "J1"})))


def test_itf_round_trips_citations_and_ledger_entries():
    p = policy()
    doc = _document(p, TURN_112)
    assert actions_of(doc) == TURN_112
    assert doc["states"][-1]["entries"] == [{"rationale": {"#bigint": "3"}, "cites": {"#set": [{"#bigint": "1"}]}}]
    assert first_difference(doc, p, replay(p, TURN_112)) is None


@pytest.mark.parametrize("cites", [[1], {"#set": [{"#bigint": "1"}, {"#bigint": "1"}]}, {"#set": "1"},
                                   {"#set": [{"#bigint": "-1"}]}, {"#set": [{"#bigint": "9" * 40}]}, {"#tup": []}])
def test_hostile_citations_in_a_trace_file_are_refused(cites):
    doc = _document(policy(), TURN_112)
    doc["states"][-1]["mbt::nondetPicks"]["cites"] = cites
    with pytest.raises(TraceFormatError, match="cites"):
        actions_of(doc)


def test_hostile_citations_in_a_trace_file_give_one_line_and_exit_2(tmp_path):
    doc = _document(policy(), TURN_112)
    doc["#meta"] = {"prunecheck": {"policy": policy_document(policy()), "spans": 8}}
    doc["states"][-1]["mbt::nondetPicks"]["cites"] = {"#set": [True]}
    path = tmp_path / "hostile.itf.json"
    path.write_text(json.dumps(doc))
    code, out, err = run_cli("replay", str(path))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "cites" in err


@pytest.fixture(scope="module")
def violated_report():
    """A report whose J1 trace cites a span, its JSON document and reasons, as the cache stores them."""
    report = check(policy(), CheckOptions(depth=4, spans=5, only=("J1",), prove=False, **BOUNDS))
    return report, json.loads(json.dumps(report_json(report))), reasons_json(report)


def _cited_step(doc):
    return next(a for a in doc["conditions"]["J1"]["trace"] if "cites" in a["args"])


def test_citations_round_trip_through_the_cache(violated_report):
    report, doc, reasons = violated_report
    assert _cited_step(doc)["args"]["cites"] and report_from_json(doc, reasons) == report


@pytest.mark.parametrize("cites", [[1, 1], [-1], "1", [True], [1.5], {"a": 1}])
def test_hostile_citations_in_the_cache_are_refused(violated_report, cites):
    _report, doc, reasons = violated_report
    doc = json.loads(json.dumps(doc))
    _cited_step(doc)["args"]["cites"] = cites
    with pytest.raises(ReportFormatError, match="cites"):
        report_from_json(doc, reasons)


def test_j1_applies_only_under_evidence():
    assert "J1" in applicable(policy()) and "J1" not in applicable(policy(evidence="off"))


def test_the_checker_finds_the_turn_112_failure_and_replays_it():
    found = {r.condition: r for r in check_bounded(policy(), 4, 5, ("J1",), **BOUNDS)}
    assert found["J1"].verdict == Verdict.VIOLATED
    assert "J1" in state_violations(policy(), replay(policy(), found["J1"].trace.actions)[-1].after)
    safe = check_bounded(policy("downgrade"), 4, 5, ("J1",), **BOUNDS)
    assert safe[0].verdict == Verdict.UNKNOWN  # the bounded search never says holds


def test_downgrade_gives_j1_holds_with_a_certificate_and_the_others_a_replayed_violation():
    options = CheckOptions(depth=4, spans=4, only=("J1",), **BOUNDS)
    safe = check(policy("downgrade"), options).result("J1")
    assert safe.verdict == Verdict.HOLDS and safe.certificate and "cvc5" in reason_text(safe.reason)
    # defer spares cited spans from the stage: only a host that truncates (host_truncation: on) then takes one.
    assert check(policy("defer"), options).result("J1").verdict == Verdict.HOLDS
    for p in (policy("unchecked"), policy("defer", host_truncation="on")):
        found = check(p, options).result("J1")
        assert found.verdict == Verdict.VIOLATED
        assert "J1" in state_violations(p, replay(p, found.trace.actions)[-1].after)


@pytest.mark.parametrize("justification", ["unchecked", "downgrade", "defer"])
@pytest.mark.parametrize("text", [TRANSCRIPTS, "evict: true\nbudget: 2", "evict: kind == 'message'\neffect: mask\n"
                                  "placeholder_tokens: 1"])
def test_the_explicit_and_symbolic_engines_agree_under_evidence(justification, text):
    engines_agree(policy(justification, text=text), depth=3, tokens=(1, 2), spans=4)


def test_a_ledger_rationale_in_the_window_counts_against_the_budget_and_is_a_pruning_target():
    p = policy(rationale="window", text="evict: kind != 'message'", host_truncation="on")
    last = run(p, TURN_112[:3] + (Compact(1, cites=(1,)),))[-1]
    (entry,) = last.after.entries
    # Written before the host's truncation: the message is truncated so that the window, entry included, fits.
    assert last.truncated == {2} and last.after.window_tokens() == 1 and last.after.span(entry.rationale).alive
    assert "P1" in state_violations(p, step(p, last.after, Compact()).after)  # the next stage takes the rationale


@pytest.mark.parametrize("justification", ["unchecked", "downgrade"])
def test_the_engines_agree_with_ledger_rationales_in_the_window(justification):
    engines_agree(policy(justification, rationale="window", text="evict: age > 1\nbudget: 2"), depth=3,
                  tokens=(1, 2), spans=4)


def test_the_j1_explanation_names_the_cited_span_its_citer_and_the_setting():
    from prunecheck.checker.findings.explain import explain
    cause = explain(policy(), TURN_112, "J1").cause
    assert "#1, cited by the compaction whose rationale is #3, is gone" in cause.summary
    assert any("justification: unchecked" in p.text for p in cause.points)


EVIDENCE_DEPLOYMENTS = st.builds(Deployment, **{key: st.sampled_from(values) for key, values in
                                                DEPLOYMENT_CHOICES.items() if key != "evidence"}, evidence=st.just("on"))


@pytest.mark.slow
@settings(max_examples=12, deadline=None, derandomize=True)
@given(st.sampled_from(POLICIES), EVIDENCE_DEPLOYMENTS, st.sampled_from(STATE_AND_STEP))
def test_nothing_proved_under_evidence_is_found_violated(text, deployment, condition):
    p = model_policy(text, deployment)
    assume(condition in applicable(p))
    proof = prove(p, condition, policy_document(p), policy_hash(p), **BOUNDS)
    (bounded,) = check_bounded(p, depth=5, spans=5, conditions=[condition], **BOUNDS)
    assert not (proof.verdict == Verdict.HOLDS and bounded.verdict == Verdict.VIOLATED), \
        f"{condition} proved yet violated by {bounded.trace}"


@pytest.mark.slow
def test_downgrade_suffices_for_every_policy_with_cvc5_certificates():
    from prunecheck.proofs import downgrade
    result = downgrade.prove()
    assert result.proved, result.detail
    assert result.rechecked == "cvc5 64/64"


def test_j1_is_not_provable_for_every_policy_without_downgrade():
    from prunecheck.proofs.theorem import any_policy, prove_invariant
    for justification in ("unchecked", "defer"):
        proved, _status, _why = prove_invariant(any_policy(Deployment(evidence="on", justification=justification)),
                                                "J1", free_policy=True)
        assert not proved


def test_the_explicit_engines_reason_names_its_citation_domain_and_survives_the_cache():
    from prunecheck.checker.engines.explicit import domains_for, explore
    from prunecheck.checker.outputs.reason_doc import reason_from_json, reason_json
    (result,) = [r for r in explore(policy("downgrade"), 2, 4, domains=domains_for(policy("downgrade"), (1,)),
                                    max_states=10_000) if r.condition == "J1"]
    assert "citations: none or one present span" in reason_text(result.reason)
    assert reason_from_json(json.loads(json.dumps(reason_json(result.reason)))) == result.reason
    plain = domains_for(policy(evidence="off"), (1,))
    assert not plain.cites and "cites" not in json.dumps(reason_json(explore(policy(evidence="off"), 1, 3,
                                                                                domains=plain)[0].reason))


@pytest.mark.parametrize("evicted", ["destroyed", "logged"])
@pytest.mark.parametrize("justification", ["unchecked", "downgrade", "defer"])
@pytest.mark.parametrize("text", [TRANSCRIPTS, TRANSCRIPTS + "\neffect: mask", TRANSCRIPTS + "\neffect: summarise"])
def test_the_unrolled_model_reaches_the_runtimes_states_under_evidence(evicted, justification, text):
    p = model_policy(text, Deployment(evidence="on", justification=justification, evicted=evicted, rationale="window"))
    actions = (Append("tool_output", 1), Append("message", 1), Edit(1, "transform", cites=(0,)), Compact(2),
               Compact(cites=(1,)))
    agree(p, _enabled_within(p, actions, N), with_lemmas=False)


def _enabled_within(p, actions, slots) -> tuple:
    """The actions the runtime allows within `slots` span slots, those it refuses left out."""
    from prunecheck.spec.runtime import enabled
    state, out = State(), []
    for action in actions:
        if enabled(p, state, action, slots):
            out.append(action)
            state = step(p, state, action, slots).after
    return tuple(out)


def test_several_citations_are_found_by_the_unrestricted_search_and_replayed():
    # defer spares every cited span, so a compaction citing all of them takes nothing and needs no ledger slot; the
    # host's truncation then takes a record (C2). The explicit engine (one citation) and models restricted to its
    # domains do not reach it.
    p = model_policy("evict: true", Deployment(records="window", rationale="window", evidence="on",
                                               justification="defer", host_truncation="on"))
    (found,) = check_bounded(p, 3, 3, ("C2",), **BOUNDS)
    assert found.verdict == Verdict.VIOLATED and len(found.trace.actions[-1].cites) > 1
    (restricted,) = check_bounded(p, 3, 3, ("C2",), token_domain=(1, 2), **BOUNDS)
    assert restricted.verdict == Verdict.UNKNOWN


# With the other slices of issue 16 (spec/SPEC.md §6d, last paragraph): the demo's policy names e1's record.
DEMO = "evict: kind == 'summary' or namespace == 'undo'"
BLOCKED_RUN = (Append("stack_trace", 3), Edit(0, "transform"), Compact(cites=(0,)), Undo(1), Compact())


@pytest.mark.parametrize("justification", ["unchecked", "downgrade", "defer"])
def test_a_blocked_sequential_compaction_writes_no_entry_and_honours_its_own_citations(justification):
    p = policy(justification, text=DEMO, refusal="sequential")
    blocked = run(p, BLOCKED_RUN[:3])[-1]
    assert blocked.outcome == "blocked" and blocked.after.entries == () and len(blocked.after.spans) == 3
    span = blocked.after.span(0)
    assert {"unchecked": not span.alive, "downgrade": span.alive and span.namespace == "log",
            "defer": span.alive and span.namespace == "window"}[justification]
    assert blocked.evicted == (frozenset() if justification == "defer" else {0})
    # The models mirror it, state by state and condition by condition (J1, X1 and R1 among them).
    agree(p, BLOCKED_RUN, with_lemmas=False)


def test_an_atomic_refusal_under_evidence_still_changes_nothing():
    p = policy("downgrade", text=DEMO, refusal="atomic")
    blocked = run(p, BLOCKED_RUN[:3])[-1]
    assert blocked.outcome == "blocked" and blocked.after == replace(blocked.before, step=blocked.before.step + 1)
    agree(p, BLOCKED_RUN, with_lemmas=False)


def test_a_downgraded_span_gets_no_tombstone_and_a_merge_cites_nothing():
    p = policy("downgrade", evicted="tombstone", undo="merge")
    t = run(p, TURN_112)[-1]
    assert t.after.span(1).namespace == "log" and not t.after.span(1).tombstone and t.after.span(0).tombstone
    merged = run(p, (Append("message", 1), Append("message", 1), Edit(0, "transform", cites=(1,)),
                     Edit(0, "destroy"), Undo(2)))[-1]
    assert merged.outcome == "merged" and merged.after.edits[-1].mode == "merge" and merged.after.edits[-1].cites == ()


def test_a_downgraded_cut_of_a_tool_call_splits_its_pair_in_both_engines():
    # Found by test_engines_agree_on_generated_policies: a cut stays in the window, but a cited span's cut under
    # downgrade is a move to the log, which takes the call out of the window and leaves its result (T1).
    # The call is longer than the placeholder: a cut that shortens nothing leaves its span untouched (ADR 0034).
    p = policy("downgrade", text="evict: role == 'tool_call'\neffect: cut\nplaceholder_tokens: 2")
    actions = (Append("message", 3, "tool_call"), Append("message", 1, "tool_result"), Compact(cites=(0,)))
    assert "T1" in {c for c in applicable(p)} and run(p, actions)[-1].after.span(0).namespace == "log"
    short = (Append("message", 2, "tool_call"), Append("message", 1, "tool_result"), Compact(cites=(0,)))
    assert run(p, short)[-1].after.span(0).namespace == "window"
    agree(p, actions, with_lemmas=False)
    engines_agree(p, depth=3, tokens=(1, 3), spans=3)
