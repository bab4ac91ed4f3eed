"""Undo's options (spec/SPEC.md §4e): a stale undo merged as a new edit, an undo without its record reconstructed
(the first seed's confabulation, condition U1), and the seed's claim status."""

import pytest

import prunecheck
from prunecheck.checker.engines.bmc import check_bounded
from prunecheck.checker.engines.prove import prove
from prunecheck.checker.language.document import policy_document, policy_hash
from prunecheck.checker.result import Verdict
from prunecheck.checker.findings.explain import cause_of, step_label
from prunecheck.checker.findings.graph import edit_graph
from prunecheck.checker.engines.replay import replay
from prunecheck.spec.conditions import applicable, transition_violations, violations
from prunecheck.spec.errors import IrreversibleEditError, MergeRequired
from prunecheck.spec.policy import Deployment
from prunecheck.spec.runtime import (
    PROVISIONAL, REVERSIBLE, UNKNOWN, ActionRefused, Append, Compact, Edit, Span, Undo, claim_status, enabled,
    status, step, undo,
)

from conftest import BOUNDS
from support import agree, assert_confirmed, model_policy, run_actions, run_cli as run

RECORDS = "evict: kind == 'record'"
# The seed's failure in four steps: the record of a destroy edit is evicted, then the edit is undone.
CONFABULATION = (Append("message", 2), Edit(0, "destroy"), Compact(1), Undo(1))
# A re-edited span: undoing the first edit is stale.
RE_EDITED = (Append("message", 2), Edit(0, "destroy"), Edit(0, "transform"))
# These runs undo a destroy (a revert, a merge, a reconstruction from a 2-token record): the first seed's mechanism,
# so its deployment is stated; the defaults' id-only destroy records are tested in test_runtime.py and below.
FIRST_SEED = {"evidence": "off", "destroy_record": "verbatim"}


def _policy(**deployment):
    return model_policy(RECORDS, Deployment(**{**FIRST_SEED, **deployment}))


def test_a_stale_undo_under_merge_is_a_new_edit_with_its_own_record():
    policy = _policy(undo="merge")
    before, _ = run_actions(policy, RE_EDITED)
    t = step(policy, before, Undo(1))
    target, merge = t.after.span(0), t.after.edits[-1]
    assert t.outcome == "merged" and "C3" not in transition_violations(t)
    assert (target.kind, target.edited, target.version) == ("message", True, 3)
    assert t.after.edit(1).undone and not t.after.edit(3).undone
    assert (merge.record, merge.rationale, merge.target, merge.mode, merge.version) == (5, 6, 0, "merge", 3)
    assert (merge.prior_kind, merge.prior_edited) == ("summary", True)
    assert [(s.kind, s.namespace, s.tokens) for s in t.after.spans[5:]] == [("record", "undo", 1), ("rationale", "log", 1)]
    back = step(policy, t.after, Undo(5))  # the merge is itself undoable, and fresh
    assert back.outcome == "reverted" and back.after.span(0).kind == "summary"
    assert undo(policy, before, 1) == t.after
    assert "undo of edit 1 (record #1): #0 was re-edited, merged as new edit 3 (record #5, rationale #6)" \
        in step_label(policy, t)  # the run's third edit, counted, its record span #5


def test_a_merge_needs_two_free_slots_as_an_edit_does():
    policy = _policy(undo="merge")
    before, _ = run_actions(policy, RE_EDITED)
    assert not enabled(policy, before, Undo(1), max_spans=6)
    with pytest.raises(ActionRefused):
        step(policy, before, Undo(1), max_spans=6)
    assert enabled(policy, before, Undo(1), max_spans=7) and enabled(policy, before, Undo(3), max_spans=5)


def test_versioned_and_blind_keep_their_behaviour():
    for option, outcome in (("versioned", "merge required"), ("blind", "reverted")):
        policy = _policy(undo=option)
        before, _ = run_actions(policy, RE_EDITED)
        assert step(policy, before, Undo(1)).outcome == outcome
    with pytest.raises(MergeRequired):
        undo(_policy(), run_actions(_policy(), RE_EDITED)[0], 1)
    for option in ("versioned", "blind", "merge"):  # by default a destroy's record keeps only its id (ADR 0035)
        policy = model_policy(RECORDS, Deployment(undo=option))
        assert step(policy, run_actions(policy, RE_EDITED)[0], Undo(1)).outcome == "irreversible"


def test_reconstruct_confabulates_and_violates_u1():
    policy = _policy(records="window", missing_record="reconstruct")
    state, transitions = run_actions(policy, CONFABULATION)
    t = transitions[-1]
    assert t.outcome == "reconstructed" and violations(policy, t) == {"U1"}
    target = state.span(0)
    assert (target.kind, target.edited, target.version, target.confabulated) == ("message", False, 2, True)
    assert "confabulated=True" in repr(target)
    # The window has already forgotten that it forgot: the gap closed, both statuses say reversible.
    assert status(policy, transitions[-2].after) == UNKNOWN and status(policy, state) == REVERSIBLE
    assert undo(policy, t.before, 1) == state
    refusing = _policy(records="window")
    assert step(refusing, t.before, Undo(1)).outcome == "irreversible"
    with pytest.raises(IrreversibleEditError):
        undo(refusing, t.before, 1)


def test_u1_applies_only_under_reconstruct_and_an_old_span_prints_as_before():
    assert "U1" in applicable(_policy(missing_record="reconstruct"))
    assert "U1" not in applicable(_policy())
    assert "confabulated" not in repr(Span(0, "message", "window", 1, 0, 0))


def test_claim_status_is_the_seeds_status():
    state, _ = run_actions(_policy(), (Append("message", 2), Edit(0, "transform")))
    assert claim_status(_policy(), state) == REVERSIBLE
    assert claim_status(_policy(records="window"), state) == PROVISIONAL
    assert claim_status(_policy(audit="policy"), state) == UNKNOWN
    assert claim_status(_policy(undo="blind"), state) == UNKNOWN
    stale, _ = run_actions(_policy(), RE_EDITED)
    assert claim_status(_policy(), stale) == UNKNOWN and status(_policy(), stale) == REVERSIBLE


def test_the_unrolled_model_agrees_with_the_runtime_on_merges_and_reconstructions():
    # State by state, and on every condition's violation (U1's too), with and without the proved lemmas.
    for policy, actions in ((_policy(undo="merge"), RE_EDITED + (Undo(1), Undo(5), Undo(3))),
                            (_policy(records="window", missing_record="reconstruct"), CONFABULATION),
                            (_policy(records="window", undo="merge", missing_record="reconstruct"),
                             RE_EDITED + (Undo(1), Compact(), Undo(5)))):
        agree(policy, actions, with_lemmas=False, n=9)
    agree(_policy(undo="merge", missing_record="reconstruct"), RE_EDITED + (Undo(1), Undo(5)), with_lemmas=True, n=7)


def test_the_checker_finds_u1_violated_with_records_in_the_window():
    # Any policy, even one that evicts nothing, under a host that truncates (host_truncation: on, SPEC §2): its
    # truncation removes the record (the brief's 4-step run).
    policy = model_policy("evict: false", Deployment(**FIRST_SEED, records="window", missing_record="reconstruct",
                                                      host_truncation="on"))
    report = prunecheck.check(policy, depth=4, spans=3, only=["U1"], **BOUNDS)
    result = report.result("U1")
    assert result.verdict is prunecheck.Verdict.VIOLATED
    transitions = replay(policy, result.trace.actions)
    assert transitions[-1].outcome == "reconstructed" and "U1" in violations(policy, transitions[-1])
    cause = cause_of(policy, transitions, "U1")
    assert "record #1" in cause.summary and cause.points[0].text.startswith("missing_record: reconstruct")
    assert "confabulated" in step_label(policy, transitions[-1])


def test_u1_holds_with_a_certificate_with_records_in_the_undo_region():
    policy = _policy(missing_record="reconstruct")
    report = prunecheck.check(policy, depth=4, spans=4, only=["U1"], **BOUNDS)
    assert report.result("U1").verdict is prunecheck.Verdict.HOLDS
    assert_confirmed(policy, [report.result("U1")])


def test_c3_holds_with_a_certificate_under_merge():
    policy = _policy(undo="merge")
    report = prunecheck.check(policy, depth=5, spans=6, only=["C3"], **BOUNDS)
    assert report.result("C3").verdict is prunecheck.Verdict.HOLDS
    assert_confirmed(policy, [report.result("C3")])


def test_replay_and_explain_show_the_seeds_claim_status_beside_the_status(tmp_path):
    policy = tmp_path / "confabulates.yaml"
    policy.write_text("name: confabulates\nevict: false\ndeployment: {records: window, missing_record: reconstruct, "
                      "host_truncation: \"on\", evidence: \"off\", destroy_record: verbatim}\n")
    code, _, _ = run("check", str(policy), "--depth", "4", "--spans", "3", "--only", "U1", "--out", str(tmp_path),
                     "--trust-policy-deployment")  # a human-authored test file: its section believed
    (trace,) = tmp_path.glob("*.U1.itf.json")
    assert code == 1 and '"confabulated": true' in trace.read_text()
    code, out, _ = run("replay", str(trace))
    assert code == 0 and "step 4: undo(edit=1) -> reconstructed" in out
    assert "status: reversibility unknown (the seed's claim: provisional)" in out
    code, out, _ = run("explain", str(trace))
    assert code == 0 and "4. undo(edit=1)" in out and "[status: reversible (the seed's claim: provisional)]" in out


def test_the_edit_graph_marks_merged_and_reconstructed_edits_undone():
    policy = _policy(records="window", undo="merge", missing_record="reconstruct")
    _, transitions = run_actions(policy, RE_EDITED + (Undo(1), Compact(), Undo(5)))
    edits = {attrs["edit"]: attrs for _, attrs in edit_graph(policy, transitions).nodes(data=True)
             if attrs["node"] == "edit"}
    assert (edits[1]["undone"], edits[5]["undone"], edits[3]["undone"]) == (4, 6, None)
    assert edits[1]["stale_revert"] is None and edits[5]["undo_attempts"] == ((6, "reconstructed"),)


@pytest.mark.parametrize("deployment", [Deployment(undo="merge", missing_record="reconstruct", pins="self"),
                                        Deployment(records="window", undo="merge", missing_record="reconstruct")])
def test_nothing_proved_under_undos_options_is_found_violated(deployment):
    # The pair model's merge allocation and reconstruction must over-approximate the runtime's (§4e).
    # Whether the policy can remove a record: never in the undo region; in the window, unless the policy excludes
    # records (the second text under host pins) and no host truncates (host_truncation: off, SPEC §2).
    removes = {"evict: kind == 'record' or edited": deployment.records == "window",
               "evict: not pinned and recency * frequency < 0.25": deployment.records == "window"
               and deployment.pins == "self"}
    for text, removable in removes.items():
        policy, proved = model_policy(text, deployment), []
        for condition in applicable(policy):
            proof = prove(policy, condition, policy_document(policy), policy_hash(policy), **BOUNDS)
            (bounded,) = check_bounded(policy, depth=6, spans=5, conditions=[condition], **BOUNDS)
            assert not (proof.verdict is Verdict.HOLDS and bounded.verdict is Verdict.VIOLATED), condition
            proved += [condition] if proof.verdict is Verdict.HOLDS else []
        assert "C3" in proved and ("U1" in proved) == (not removable), (text, proved)
