"""The reference runtime against SPEC.md sections 2-6: one unit test per rule, properties over random runs,
and a state machine that keeps the seeds' rules (absence is a hard error, a stale record is a merge,
a gap is observable) true at every step."""

from dataclasses import replace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.spec.conditions import state_violations, transition_violations, violations
from prunecheck.spec.errors import IrreversibleEditError, MergeRequired
from prunecheck.spec.evaluate import evaluate
from prunecheck.spec.policy import CONTENT_KINDS, DEPLOYMENT_CHOICES, Deployment
from prunecheck.spec.runtime import (
    REVERSIBLE, UNKNOWN, ActionRefused, Append, Audit, Compact, Edit, EditInfo, Pin, Read, Span, State, Undo,
    Unpin, addressable, candidates, effective_budget, enabled, enabled_actions, host_budgets, present, span_env,
    status, step, undo, slots_needed, stage_taken, citing,
)

# The safe design of both seeds (examples/policies/seed_safe_design.yaml): every condition holds under it, whatever a
# destroy's record keeps (its id, or its content verbatim: undoing a destroy reverts it, as some fixed runs need).
SAFE = Deployment(evicted="tombstone", justification="downgrade")
SAFE_VERBATIM = replace(SAFE, destroy_record="verbatim")
SAFE_DESIGNS = (SAFE, SAFE_VERBATIM)
# The unit tests are about the first seed's mechanism (exact span ids, a destroy's record as large as its target, undo
# reverting a destroy): they state its deployment; the defaults are tested by the properties and the machine below.
FIRST_SEED = Deployment(evidence="off", destroy_record="verbatim")
# every unsafe option at once: records and rationale in the window, self pins, self-certified audit, blind undo
WINDOW = Deployment(records="window", rationale="window", pins="self", audit="policy", undo="blind")

POLICIES = [
    # the first seed's observed policy
    "evict: not pinned and recency * frequency < 0.25",
    # budget without rank
    "evict: kind != 'record' and idle > 1\nbudget: 6",
    # rank and budget
    "evict: kind in ['tool_output', 'record', 'rationale'] or tokens >= 3\n"
    "rank: recency * frequency - tokens\nbudget: 5",
    # min / max and division by a non-zero interval
    "evict: namespace == 'window' and min(age, idle) >= 1 and max(reads, 1) / (1 + age) <= 0.5",
    "evict: edited or abs(tokens - 2) == 1\nrank: 0 - age\nbudget: 4",
    "evict: true\nrank: tokens / (1 + reads) - max(idle, 2)\nbudget: 3",
    "evict: window_tokens > 4 and step >= 2 and reads == 0",
    # budgets that force truncation: nothing or little evicted, then oldest-first
    "evict: false\nbudget: 3",
    "evict: kind == 'diff'\nbudget: 4",
    "evict: false\nrank: tokens\nbudget: 2",
    "evict: kind == 'tool_output' and idle > 2\nrank: recency\nbudget: 4",
    # the safe design's policy: names the undo region, cannot reach it
    "evict: namespace == 'undo' or kind == 'record' or (not pinned and recency * frequency < 0.25)",
]

deployments = st.builds(Deployment, **{key: st.sampled_from(values) for key, values in DEPLOYMENT_CHOICES.items()})


def _policy(text, deployment=FIRST_SEED):
    return parse_policy_text(f"name: t\n{text}\n", "t.yaml", deployment)


def _run(policy, actions, max_spans=None):
    """Apply actions from the empty state; returns the final state and every transition."""
    state, transitions = State(), []
    for action in actions:
        transition = step(policy, state, action, max_spans)
        transitions.append(transition)
        state = transition.after
    return state, transitions


def _gap(state):
    return any(not state.span(e.record).alive for e in state.live_edits())


def _alive_records(state):
    return {e.record for e in state.edits if state.span(e.record).alive}


# --------------------------------------------------------------------------- append


def test_append_creates_a_fresh_window_span_at_the_new_step():
    policy = _policy("evict: false")
    state, _ = _run(policy, [Append("message", 2), Read(0), Append("file_body", 3)])
    assert state.step == 3
    assert state.spans[1] == Span(id=1, kind="file_body", namespace="window", tokens=3, created=3, last_read=3,
                                  reads=0, pinned=False, edited=False, version=0, alive=True)
    assert state.window_tokens() == 5
    assert state.edits == ()


def test_append_guards_kind_tokens_and_slots():
    policy = _policy("evict: false")
    one = _run(policy, [Append("message", 1)])[0]
    for action in (Append("record", 1), Append("rationale", 1), Append("message", 0), Append("message", 1.5)):
        with pytest.raises(ActionRefused):
            step(policy, State(), action)
    assert not enabled(policy, one, Append("message", 1), max_spans=1)
    assert enabled(policy, one, Append("message", 1), max_spans=2)


# --------------------------------------------------------------------------- edit


@pytest.mark.parametrize("records, record_ns", [("undo_region", "undo"), ("window", "window")])
@pytest.mark.parametrize("rationale, rationale_ns", [("decision_log", "log"), ("window", "window")])
@pytest.mark.parametrize("pins", ["host", "self"])
@pytest.mark.parametrize("mode, new_kind, record_tokens", [("transform", "summary", 1), ("destroy", "diff", 4)])
def test_edit_writes_record_and_rationale(records, record_ns, rationale, rationale_ns, pins, mode, new_kind,
                                          record_tokens):
    policy = _policy("evict: false", replace(FIRST_SEED, records=records, rationale=rationale, pins=pins))
    state, _ = _run(policy, [Append("stack_trace", 4), Edit(0, mode)])
    host = pins == "host"
    assert state.step == 2
    assert state.spans == (
        Span(0, new_kind, "window", 4, 1, 1, reads=0, pinned=False, edited=True, version=1, alive=True),
        Span(1, "record", record_ns, record_tokens, 2, 2, reads=0, pinned=host, edited=False, version=0,
             role="tool_result"),
        Span(2, "rationale", rationale_ns, 1, 2, 2, reads=0, pinned=host, edited=False, version=0,
             role="tool_result"),
    )
    assert state.edits == (EditInfo(record=1, rationale=2, target=0, mode=mode, version=1,
                                    prior_kind="stack_trace", prior_edited=False, undone=False),)
    expected_window = 4 + (record_tokens if record_ns == "window" else 0) + (1 if rationale_ns == "window" else 0)
    assert state.window_tokens() == expected_window


def test_second_edit_records_the_first_edit_as_its_prior():
    policy = _policy("evict: false")
    state, _ = _run(policy, [Append("file_body", 2), Edit(0, "transform"), Edit(0, "destroy")])
    assert state.span(0).kind == "diff" and state.span(0).version == 2 and state.span(0).edited
    assert state.edit(3) == EditInfo(3, 4, 0, "destroy", 2, "summary", True, False)
    assert state.edit(1).version == 1
    assert state.edit(0) is None and state.edit(2) is None


def test_edit_guards():
    policy = _policy("evict: kind == 'message'", Deployment(records="window"))
    state, _ = _run(policy, [Append("message", 1), Append("diff", 1), Edit(1, "transform")])
    assert not enabled(policy, state, Edit(2, "transform"))  # a record, even in the window
    assert not enabled(policy, state, Edit(3, "transform"))  # a rationale
    assert not enabled(policy, state, Edit(9, "transform"))  # no such span
    assert not enabled(policy, state, Edit(0, "rewrite"))  # no such mode
    assert enabled(policy, state, Edit(0, "destroy"), max_spans=6)
    assert not enabled(policy, state, Edit(0, "destroy"), max_spans=5)  # record and rationale need two slots
    gone = step(policy, state, Compact()).after
    assert not gone.span(0).alive
    with pytest.raises(ActionRefused):
        step(policy, gone, Edit(0, "transform"))


# --------------------------------------------------------------------------- read


def test_read_bumps_reads_and_last_read_in_any_namespace():
    policy = _policy("evict: false")
    state, _ = _run(policy, [Append("message", 1), Append("message", 1), Edit(0, "transform"),
                             Read(0), Read(2), Read(0)])
    assert state.step == 6
    assert (state.span(0).reads, state.span(0).last_read, state.span(0).created) == (2, 6, 1)
    assert (state.span(2).reads, state.span(2).last_read, state.span(2).namespace) == (1, 5, "undo")
    assert (state.span(1).reads, state.span(1).last_read) == (0, 2)


def test_read_of_a_dead_span_is_refused():
    policy = _policy("evict: true")
    state, _ = _run(policy, [Append("message", 1), Compact()])
    assert not state.span(0).alive
    with pytest.raises(ActionRefused):
        step(policy, state, Read(0))
    with pytest.raises(ActionRefused):
        step(policy, state, Read(1))


# --------------------------------------------------------------------------- pin / unpin


def test_host_pins_guard_records_and_rationale_from_the_agent():
    policy = _policy("evict: false", Deployment(records="window", rationale="window", pins="host"))
    state, _ = _run(policy, [Append("message", 1), Edit(0, "transform")])
    assert state.span(1).pinned and state.span(2).pinned
    # only the kind guard stands between the agent and unpinning its own records
    assert not enabled(policy, state, Unpin(1))
    assert not enabled(policy, state, Unpin(2))
    assert enabled(policy, state, Pin(0))
    pinned = step(policy, state, Pin(0)).after
    assert pinned.span(0).pinned and pinned.step == 3
    assert not enabled(policy, pinned, Pin(0))  # already pinned
    unpinned = step(policy, pinned, Unpin(0)).after
    assert not unpinned.span(0).pinned and unpinned.step == 4
    assert {a.name for a in enabled_actions(policy, state) if getattr(a, "span", None) in (1, 2)} == {"read"}


def test_self_pins_allow_anything_live():
    policy = _policy("evict: kind == 'summary'", Deployment(records="window", rationale="window", pins="self"))
    state, _ = _run(policy, [Append("message", 1), Edit(0, "transform")])
    assert not state.span(1).pinned and not state.span(2).pinned
    state, _ = _run(policy, [Append("message", 1), Edit(0, "transform"), Pin(1), Pin(2), Unpin(2)])
    assert state.span(1).pinned and not state.span(2).pinned
    assert not enabled(policy, state, Unpin(2))
    dead = step(policy, state, Compact()).after
    assert not dead.span(0).alive
    assert not enabled(policy, dead, Pin(0))  # a dead span cannot be pinned


# --------------------------------------------------------------------------- compaction


def test_compact_without_rank_or_budget_evicts_every_candidate():
    policy = _policy("evict: kind == 'tool_output'")
    state, transitions = _run(policy, [Append("tool_output", 2), Append("message", 1), Append("tool_output", 3),
                                       Compact()])
    assert transitions[-1].evicted == frozenset({0, 2}) and transitions[-1].truncated == frozenset()
    assert [s.alive for s in state.spans] == [False, True, False]
    assert state.step == 4 and state.window_tokens() == 1


def test_compact_with_budget_but_no_rank_evicts_all_candidates_even_below_budget():
    policy = _policy("evict: kind == 'tool_output'\nbudget: 100")
    _, transitions = _run(policy, [Append("tool_output", 2), Append("message", 1), Append("tool_output", 3),
                                   Compact()])
    assert transitions[-1].evicted == frozenset({0, 2}) and transitions[-1].truncated == frozenset()


def test_compact_with_rank_but_no_budget_evicts_all_candidates():
    policy = _policy("evict: tokens >= 2\nrank: tokens")
    _, transitions = _run(policy, [Append("message", 2), Append("message", 1), Append("message", 3), Compact()])
    assert transitions[-1].evicted == frozenset({0, 2})


def test_ranked_compaction_evicts_in_rank_order_until_the_window_fits():
    policy = _policy("evict: kind != 'message'\nrank: 0 - tokens\nbudget: 5")
    state, transitions = _run(policy, [Append("tool_output", 1), Append("file_body", 4), Append("diff", 2),
                                       Append("message", 3), Compact()])
    # W = 10; ranks -1, -4, -2: evict 1 (W 6), evict 2 (W 4 <= 5), stop before 0
    assert transitions[-1].evicted == frozenset({1, 2})
    assert transitions[-1].truncated == frozenset()
    assert state.window_tokens() == 4


def test_ranked_compaction_breaks_ties_by_lower_id():
    policy = _policy("evict: true\nrank: tokens\nbudget: 7")
    _, transitions = _run(policy, [Append("message", 3), Append("message", 1), Append("message", 1),
                                   Append("message", 3), Compact()])
    # W = 8; spans 1 and 2 tie at rank 1: the lower id goes first and one eviction suffices
    assert transitions[-1].evicted == frozenset({1})


def test_truncation_is_oldest_first_and_ignores_pins():
    policy = _policy("evict: false\nbudget: 4")
    state, transitions = _run(policy, [Append("message", 2), Append("message", 2), Append("message", 2),
                                       Pin(0), Compact()])
    assert transitions[-1].evicted == frozenset() and transitions[-1].truncated == frozenset({0})
    assert [s.alive for s in state.spans] == [False, True, True]
    assert state.window_tokens() == 4


def test_truncation_follows_evictions_and_skips_evicted_spans():
    policy = _policy("evict: kind == 'diff'\nbudget: 3")
    state, transitions = _run(policy, [Append("message", 2), Append("diff", 1), Append("message", 2),
                                       Append("message", 1), Compact()])
    # W = 6: evict 1 (W 5), then truncate 0 (W 3)
    assert transitions[-1].evicted == frozenset({1}) and transitions[-1].truncated == frozenset({0})
    assert [s.alive for s in state.spans] == [False, False, True, True]


def test_truncation_takes_window_records_pinned_or_not():
    policy = _policy("evict: not pinned\nbudget: 3", replace(FIRST_SEED, records="window", pins="host"))
    state, transitions = _run(policy, [Append("message", 4), Edit(0, "destroy"), Compact()])
    assert transitions[-1].before.span(1).pinned
    # span 0 (4 tokens, unpinned) is evicted; the host-pinned record (4 tokens) is truncated
    assert transitions[-1].evicted == frozenset({0}) and transitions[-1].truncated == frozenset({1})
    assert "C2" in violations(policy, transitions[-1])
    assert state.window_tokens() == 0


def test_compaction_never_touches_the_undo_region_or_the_log():
    text = "evict: namespace == 'undo' or namespace == 'log' or kind in ['record', 'rationale'] or true\nbudget: 1"
    policy = _policy(text)
    state, transitions = _run(policy, [Append("message", 5), Edit(0, "destroy"), Append("message", 3), Compact()])
    assert candidates(policy, transitions[-1].before) == (0, 3)
    assert transitions[-1].evicted == frozenset({0, 3}) and transitions[-1].truncated == frozenset()
    assert state.span(1).alive and state.span(1).namespace == "undo" and state.span(1).tokens == 5
    assert state.span(2).alive and state.span(2).namespace == "log"
    assert state.window_tokens() == 0
    assert not violations(policy, transitions[-1])


def test_compaction_evaluates_the_policy_before_the_clock_advances():
    policy = _policy("evict: age >= 1")
    state, transitions = _run(policy, [Append("message", 1), Compact()])
    # at the compaction the span's age is 1 - 1 = 0, not 2 - 1
    assert transitions[-1].evicted == frozenset() and state.span(0).alive and state.step == 2


# --------------------------------------------------------------------------- undo


def test_undo_of_an_absent_record_is_irreversible_and_never_reconstructs():
    policy = _policy("evict: kind == 'record'", Deployment(records="window", pins="self"))
    state, transitions = _run(policy, [Append("stack_trace", 3), Edit(0, "transform"), Compact()])
    assert transitions[-1].evicted == frozenset({1}) and not state.span(1).alive
    transition = step(policy, state, Undo(1))
    assert transition.outcome == "irreversible"
    assert transition.after == replace(state, step=state.step + 1)
    with pytest.raises(IrreversibleEditError):
        undo(policy, state, 1)
    assert state.span(0).kind == "summary" and not state.edit(1).undone


def test_undo_of_a_re_edited_target_under_versioned_undo_requires_a_merge():
    policy = _policy("evict: false")
    state, _ = _run(policy, [Append("message", 1), Edit(0, "transform"), Edit(0, "destroy")])
    transition = step(policy, state, Undo(1))
    assert transition.outcome == "merge required"
    assert transition.after == replace(state, step=4)
    assert not transition_violations(transition)
    with pytest.raises(MergeRequired):
        undo(policy, state, 1)


def test_undo_of_a_re_edited_target_under_blind_undo_is_a_stale_revert():
    policy = _policy("evict: false", Deployment(undo="blind"))
    state, _ = _run(policy, [Append("message", 1), Edit(0, "transform"), Edit(0, "destroy")])
    transition = step(policy, state, Undo(1))
    assert transition.outcome == "reverted"
    target = transition.after.span(0)
    assert (target.kind, target.edited, target.version) == ("message", False, 3)
    assert transition.after.edit(1).undone and not transition.after.edit(3).undone
    assert transition_violations(transition) == frozenset({"C3"})
    assert undo(policy, state, 1) == transition.after


def test_successful_undo_restores_the_target_and_revives_it():
    policy = _policy("evict: kind == 'summary'")
    state, transitions = _run(policy, [Append("file_body", 2), Edit(0, "transform"), Compact()])
    assert transitions[-1].evicted == frozenset({0})
    transition = step(policy, state, Undo(1))
    assert transition.outcome == "reverted"
    after = transition.after
    assert after.span(0) == replace(state.span(0), kind="file_body", edited=False, version=2, alive=True)
    assert after.edit(1) == replace(state.edit(1), undone=True)
    assert after.spans[1:] == state.spans[1:]  # record and rationale unchanged
    assert after.step == 4 and after.window_tokens() == 2
    assert not violations(policy, transition)
    assert undo(policy, state, 1) == after


def test_undo_in_reverse_order_then_the_older_record_is_stale():
    policy = _policy("evict: false")
    state, _ = _run(policy, [Append("message", 1), Edit(0, "transform"), Edit(0, "destroy"), Undo(3)])
    assert (state.span(0).kind, state.span(0).edited, state.span(0).version) == ("summary", True, 3)
    # the revert bumped the version: edit 1's record (version 1) is now stale
    assert step(policy, state, Undo(1)).outcome == "merge required"


def test_undo_of_an_undone_or_unknown_edit_is_refused():
    policy = _policy("evict: false")
    state, _ = _run(policy, [Append("message", 1), Edit(0, "transform"), Undo(1)])
    assert state.edit(1).undone
    for edit_id in (1, 0, 2, 7, "1"):
        with pytest.raises(ActionRefused):
            step(policy, state, Undo(edit_id))
    with pytest.raises(ActionRefused):
        undo(policy, state, 1)


# --------------------------------------------------------------------------- status


def test_independent_audit_reports_unknown_whenever_a_live_record_is_gone():
    policy = _policy("evict: kind == 'record'", Deployment(records="window", pins="self"))
    state, transitions = _run(policy, [Append("message", 1), Edit(0, "destroy"), Audit()])
    assert transitions[-1].outcome == REVERSIBLE and status(policy, state) == REVERSIBLE
    state, transitions = _run(policy, [Append("message", 1), Edit(0, "destroy"), Compact(), Audit()])
    assert not state.span(1).alive
    assert transitions[-1].outcome == UNKNOWN == "reversibility unknown"
    assert status(policy, state) == UNKNOWN
    assert "C4" not in state_violations(policy, state)


def test_a_dead_record_of_an_undone_edit_leaves_no_gap():
    policy = _policy("evict: kind == 'record'", replace(FIRST_SEED, records="window", pins="self"))
    state, _ = _run(policy, [Append("message", 1), Edit(0, "destroy"), Undo(1), Compact()])
    assert not state.span(1).alive and state.edit(1).undone
    assert status(policy, state) == REVERSIBLE


@pytest.mark.parametrize("evict, rationale, expected", [
    # record and rationale both gone from the window: the self-certified pass sees nothing
    ("kind in ['record', 'rationale']", "window", REVERSIBLE),
    # the rationale is still in the window: the pass sees the edit and its missing record
    ("kind == 'record'", "window", UNKNOWN),
    # the rationale is in the decision log: never visible to the pruning pass
    ("kind == 'record'", "decision_log", REVERSIBLE),
])
def test_self_certified_audit_only_sees_edits_visible_in_the_window(evict, rationale, expected):
    deployment = Deployment(records="window", rationale=rationale, pins="self", audit="policy")
    policy = _policy(f"evict: {evict}", deployment)
    state, transitions = _run(policy, [Append("message", 1), Edit(0, "destroy"), Compact(), Audit()])
    assert not state.span(1).alive
    assert transitions[-1].outcome == expected == status(policy, state)
    assert ("C4" in state_violations(policy, state)) == (expected == REVERSIBLE)
    independent = _policy(f"evict: {evict}", replace(deployment, audit="independent"))
    assert status(independent, state) == UNKNOWN


def test_audit_changes_nothing_but_the_clock():
    policy = _policy("evict: false")
    state, _ = _run(policy, [Append("message", 1), Edit(0, "transform")])
    transition = step(policy, state, Audit())
    assert transition.after == replace(state, step=3) and transition.outcome == REVERSIBLE


# --------------------------------------------------------------------------- random runs


@st.composite
def runs(draw, deployment=deployments, max_steps=15):
    """A policy from POLICIES under a drawn deployment, and up to max_steps enabled actions (name first)."""
    policy = _policy(draw(st.sampled_from(POLICIES)), draw(deployment))
    max_spans = draw(st.sampled_from([None, 8]))
    state, transitions = State(), []
    for _ in range(draw(st.integers(1, max_steps))):
        options = enabled_actions(policy, state, max_spans, token_choices=(1, 2, 3, 5))
        name = draw(st.sampled_from(sorted({a.name for a in options})))
        action = draw(st.sampled_from([a for a in options if a.name == name]))
        transition = step(policy, state, action, max_spans)
        transitions.append(transition)
        state = transition.after
    return policy, max_spans, transitions


def _fixed(text, deployment, actions):
    """A hand-written run in the shape `runs` draws, for @example: rare paths every time."""
    policy = _policy(text, deployment)
    return policy, None, _run(policy, actions)[1]


STALE = [Append("message", 1), Edit(0, "transform"), Edit(0, "destroy"), Undo(1), Undo(3), Audit()]
GONE = [Append("message", 2), Edit(0, "destroy"), Append("diff", 1), Compact(), Undo(1), Audit()]
FIXED_RUNS = [
    _fixed("evict: false", SAFE_VERBATIM, STALE),  # merge required, then a clean revert
    _fixed("evict: false", SAFE, STALE),  # merge required, then a destroy's id-only record: irreversible
    _fixed("evict: false", Deployment(undo="blind"), STALE),  # a stale revert (C3)
    _fixed("evict: kind == 'record'", Deployment(records="window", pins="self"), GONE),  # irreversible, gap
    _fixed("evict: kind in ['record', 'rationale']", WINDOW, GONE),  # a gap the self-certified audit misses
    _fixed("evict: false\nbudget: 2", replace(FIRST_SEED, records="window"), GONE),  # truncation takes a pinned record
    _fixed("evict: kind == 'diff'\nbudget: 2", SAFE_VERBATIM, GONE),  # a compacted target revived
]


def with_fixed_runs(test, only=None):
    for run in FIXED_RUNS:
        if only is None or run[0].deployment in only:
            test = example(run)(test)
    return test


def with_safe_fixed_runs(test):
    return with_fixed_runs(test, only=SAFE_DESIGNS)


@settings(max_examples=200)
@with_safe_fixed_runs
@given(runs(deployment=st.sampled_from(SAFE_DESIGNS)))
def test_safe_deployment_never_violates_a_condition(run):
    # R1 judges the policy's text, not the deployment: a policy that names the undo region violates it anywhere.
    policy, _, transitions = run
    assert not state_violations(policy, State())
    for transition in transitions:
        assert violations(policy, transition) - {"R1"} == frozenset(), transition.action


@settings(max_examples=150)
@with_fixed_runs
@given(runs())
def test_records_shrink_only_by_compaction_and_never_in_the_undo_region(run):
    policy, _, transitions = run
    for t in transitions:
        before, after = _alive_records(t.before), _alive_records(t.after)
        assert after >= before or t.action.name == "compact", t.action
        if policy.deployment.records == "undo_region":
            assert after >= before
        # the edit ledger is append-only
        assert [e.record for e in t.after.edits[:len(t.before.edits)]] == [e.record for e in t.before.edits]


@settings(max_examples=150)
@with_fixed_runs
@given(runs())
def test_clock_ticks_once_per_action_and_ids_are_dense(run):
    policy, max_spans, transitions = run
    for k, t in enumerate(transitions, start=1):
        assert t.after.step == t.before.step + 1 == k
        assert [s.id for s in t.after.spans] == list(range(len(t.after.spans)))
        if t.action.name in ("append", "audit"):
            assert t.after.spans[:len(t.before.spans)] == t.before.spans and t.after.edits == t.before.edits
        assert max_spans is None or len(t.after.spans) <= max_spans
        for e in t.after.edits:
            assert e.rationale == e.record + 1 and e.target < e.record
            assert t.after.span(e.record).kind == "record" and t.after.span(e.rationale).kind == "rationale"


@settings(max_examples=150)
@with_fixed_runs
@given(runs())
def test_budgeted_compaction_leaves_the_window_within_budget(run):
    policy, _, transitions = run
    for t in transitions:
        if t.action.name == "compact":
            assert t.evicted <= set(candidates(policy, t.before))
            assert not (t.evicted & t.truncated)
            assert all(addressable(t.before.span(i)) for i in t.truncated)
            # removed from the window: dead, or (evicted: logged) alive in the log
            assert {s.id for s in t.before.spans if addressable(s) and not addressable(t.after.span(s.id))} == \
                t.evicted | t.truncated
            if t.outcome == "blocked":  # the refusal stopped it (X1's business): nothing truncated
                assert not t.truncated
                continue
            limit = effective_budget(policy, t.action.budget)
            if limit is not None:
                assert t.after.window_tokens() <= limit
            else:  # the compaction's own citations count while it runs (defer spares them)
                assert not t.truncated and t.evicted == set(candidates(policy, citing(t.before, t.action.cites)))


@settings(max_examples=150)
@with_fixed_runs
@given(runs())
def test_status_matches_the_gap(run):
    policy, _, transitions = run
    independent = replace(policy, deployment=replace(policy.deployment, audit="independent"))
    for t in transitions:
        state = t.after
        gap = _gap(state)
        assert (status(independent, state) == REVERSIBLE) == (not gap)
        if policy.deployment.audit == "policy":
            seen_gap = any(not state.span(e.record).alive and addressable(state.span(e.rationale))
                           for e in state.live_edits())
            assert (status(policy, state) == REVERSIBLE) == (not seen_gap)
        if t.action.name == "audit":
            assert t.outcome == status(policy, t.before)
            assert t.after == replace(t.before, step=t.before.step + 1)


def _closed_form(policy, state, host=None, cites=()):
    """SPEC section 4's closed form of compaction (what the z3 model encodes): (evicted, truncated); under evidence:
    on with `rationale: window` the ledger rationale joins the window, newest, before the truncation (SPEC §6d)."""
    spans, budget, total = state.spans, policy.budget, state.window_tokens()
    limit = budget if host is None else min(host, budget if budget is not None else host)
    chosen = set(candidates(policy, citing(state, cites)))
    if policy.rank is not None and budget is not None:
        rank = {i: evaluate(policy.rank, span_env(policy, state, spans[i])) for i in chosen}

        def ahead(j, i):
            return rank[j] < rank[i] or (rank[j] == rank[i] and j < i)

        evicted = {i for i in chosen
                   if total - sum(spans[j].tokens for j in chosen if j != i and ahead(j, i)) > budget}
    else:
        evicted = chosen
    rest = total - sum(spans[i].tokens for i in evicted)
    remaining = [s.id for s in spans if addressable(s) and s.id not in evicted]
    tokens = {i: spans[i].tokens for i in remaining}
    if evicted and policy.deployment.evidence == "on" and policy.deployment.rationale == "window":
        remaining, tokens[len(spans)], rest = remaining + [len(spans)], 1, rest + 1
    truncated = set()
    if limit is not None:
        truncated = {i for i in remaining if rest - sum(tokens[j] for j in remaining if j < i) > limit}
    return evicted, truncated


@settings(max_examples=150)
@with_fixed_runs
@given(runs())
def test_compaction_matches_the_closed_form(run):
    policy, _, transitions = run
    # A blocked compaction (SPEC §6e) is the refusal's, not section 4's.
    compactions = [t for t in transitions if t.action.name == "compact" and t.outcome != "blocked"]
    for t in compactions:
        assert (set(t.evicted), set(t.truncated)) == _closed_form(policy, t.before, t.action.budget, t.action.cites)


@settings(max_examples=100)
@with_fixed_runs
@given(runs())
def test_host_budgets_list_every_distinct_compaction_once(run):
    policy, _, transitions = run
    for t in transitions:
        state = t.after
        listed = host_budgets(policy, state)
        outcomes = [step(policy, state, Compact(h)).after for h in (None,) + listed]
        assert len(set(outcomes)) == len(outcomes), listed
        for host in range(1, state.window_tokens() + 2):
            assert step(policy, state, Compact(host)).after in outcomes, host


def test_a_host_budget_is_an_integer_of_at_least_one():
    policy = _policy("evict: false")
    for bad in (0, -1, True, 1.5, "2"):
        assert not enabled(policy, State(), Compact(bad))
    hosted = _policy("evict: false", replace(FIRST_SEED, host_truncation="on"))  # a host that truncates (SPEC §2)
    transition = step(hosted, _run(hosted, [Append("message", 3)])[0], Compact(2))
    assert transition.truncated == {0} and transition.action == Compact(2)
    unhosted = step(policy, _run(policy, [Append("message", 3)])[0], Compact(2))  # off: enabled, truncates nothing
    assert unhosted.truncated == frozenset() and unhosted.action == Compact(2)


def _id_only(policy, info):
    """The edit destroyed its target and its record keeps only the target's id (`destroy_record: id`)."""
    return info.mode == "destroy" and policy.deployment.destroy_record == "id"


def _expected_undo_outcome(policy, state, edit_id):
    info = state.edit(edit_id)
    if policy.deployment.safe_undo == "on" and status(policy, state) != REVERSIBLE:
        return "irreversible"  # the seed's safe_undo: the deployment's closure check refuses first
    if not present(state.span(info.record)):
        return "reconstructed" if policy.deployment.missing_record == "reconstruct" else "irreversible"
    if _id_only(policy, info):  # a destroy whose record keeps only its id: never a revert or a merge (ADR 0034)
        return "irreversible"
    if state.span(info.target).version != info.version:
        return {"versioned": "merge required", "blind": "reverted", "merge": "merged"}[policy.deployment.undo]
    return "reverted"


def _check_written_target(t, info):
    """A revert, merge or reconstruction restores the prior kind, alive and unmasked, one version on."""
    target = t.after.span(info.target)
    edited = True if t.outcome == "merged" else info.prior_edited
    assert (target.kind, target.edited, target.alive, target.masked) == (info.prior_kind, edited, True, False)
    assert target.version == t.before.span(info.target).version + 1
    assert target.confabulated or t.outcome != "reconstructed"
    assert t.after.edit(info.record).undone


@settings(max_examples=150)
@with_fixed_runs
@given(runs())
def test_every_undo_outcome_follows_the_rules(run):
    policy, _, transitions = run
    for t in transitions:
        if t.action.name != "undo":
            continue
        before, after, edit_id = t.before, t.after, t.action.edit
        assert t.outcome == _expected_undo_outcome(policy, before, edit_id)
        if t.outcome in ("reverted", "merged", "reconstructed"):
            _check_written_target(t, before.edit(edit_id))
            assert undo(policy, before, edit_id) == after
            added = len(after.spans) - len(before.spans)
            assert added == (2 if t.outcome == "merged" else 0)
        else:
            assert after == replace(before, step=before.step + 1)
            error = IrreversibleEditError if t.outcome == "irreversible" else MergeRequired
            with pytest.raises(error):
                undo(policy, before, edit_id)


# --------------------------------------------------------------------------- state machine


class RuntimeMachine(RuleBasedStateMachine):
    """Random enabled actions over one policy and deployment; the seeds' rules checked after every step."""

    MAX_SPANS = 12

    @initialize(text=st.sampled_from(POLICIES),
                deployment=st.one_of(st.sampled_from(SAFE_DESIGNS), st.just(WINDOW), deployments),
                prefix=st.lists(st.tuples(st.sampled_from(CONTENT_KINDS), st.sampled_from([1, 2, 3, 5])), max_size=4))
    def setup(self, text, deployment, prefix):
        self.policy = _policy(text, deployment)
        self.state = State()
        self.last = None
        for kind, tokens in prefix:  # some content to edit from the start, so edits and undos are not rare
            self._do(Append(kind, tokens))
        assert self.state.step == len(prefix) == len(self.state.spans)

    def _do(self, action):
        assert enabled(self.policy, self.state, action, self.MAX_SPANS)
        transition = step(self.policy, self.state, action, self.MAX_SPANS)
        assert transition.after.step == self.state.step + 1
        self.last = transition
        self.state = transition.after
        return transition

    def _undoable(self):
        """The live edits whose undo is enabled (a merge needs two free slots)."""
        return [e.record for e in self.state.live_edits() if enabled(self.policy, self.state, Undo(e.record),
                                                                     self.MAX_SPANS)]

    def _ids(self, make):
        return [i for i in range(len(self.state.spans)) if enabled(self.policy, self.state, make(i), self.MAX_SPANS)]

    # Every rule takes one `data` argument: hypothesis orders rules by argument count, then name, and
    # favours the first, so this keeps argument-free rules (compact, audit) from crowding out the rest.

    @precondition(lambda self: len(self.state.spans) < RuntimeMachine.MAX_SPANS)
    @rule(data=st.data())
    def append(self, data):
        kind = data.draw(st.sampled_from(CONTENT_KINDS))
        tokens = data.draw(st.sampled_from([1, 2, 3, 5]))
        span = self._do(Append(kind, tokens)).after.spans[-1]
        assert (span.kind, span.tokens, span.namespace, span.created) == (kind, tokens, "window", self.state.step)

    @precondition(lambda self: self._ids(lambda i: Edit(i, "transform")))
    @rule(data=st.data())
    def edit(self, data):
        mode = data.draw(st.sampled_from(["transform", "destroy"]))
        target = data.draw(st.sampled_from(self._ids(lambda i: Edit(i, mode))))
        after = self._do(Edit(target, mode)).after
        record, rationale = after.spans[-2:]
        assert record.pinned == rationale.pinned == (self.policy.deployment.pins == "host")
        verbatim = mode == "destroy" and self.policy.deployment.destroy_record == "verbatim"  # else the id: 1 token
        assert record.tokens == (after.span(target).tokens if verbatim else 1)

    @precondition(lambda self: self._ids(Read))
    @rule(data=st.data())
    def read(self, data):
        span_id = data.draw(st.sampled_from(self._ids(Read)))
        reads = self.state.span(span_id).reads
        assert self._do(Read(span_id)).after.span(span_id).reads == reads + 1

    @precondition(lambda self: self._ids(Pin))
    @rule(data=st.data())
    def pin(self, data):
        span_id = data.draw(st.sampled_from(self._ids(Pin)))
        if self.policy.deployment.pins == "host":
            assert self.state.span(span_id).kind in CONTENT_KINDS
        assert self._do(Pin(span_id)).after.span(span_id).pinned

    @precondition(lambda self: self._ids(Unpin))
    @rule(data=st.data())
    def unpin(self, data):
        span_id = data.draw(st.sampled_from(self._ids(Unpin)))
        if self.policy.deployment.pins == "host":
            assert self.state.span(span_id).kind in CONTENT_KINDS
        assert not self._do(Unpin(span_id)).after.span(span_id).pinned

    # compacting an empty window only ticks the clock; still allowed when nothing else may be
    @precondition(lambda self: self.state.window_tokens() > 0 or len(self.state.spans) >= RuntimeMachine.MAX_SPANS)
    @rule(data=st.data())
    def compact(self, data):
        full = len(self.state.spans) + slots_needed(self.policy) > RuntimeMachine.MAX_SPANS
        if full and stage_taken(self.policy, self.state)[0]:  # no slot for its summary or ledger entry (SPEC §6d)
            assert not enabled(self.policy, self.state, Compact(), self.MAX_SPANS)
            return
        transition = self._do(Compact())
        if self.policy.budget is not None:
            assert transition.after.window_tokens() <= self.policy.budget

    @precondition(lambda self: self._undoable())
    @rule(data=st.data())
    def undo(self, data):
        edit_id = data.draw(st.sampled_from(self._undoable()))
        expected = _expected_undo_outcome(self.policy, self.state, edit_id)
        assert self._do(Undo(edit_id)).outcome == expected

    @precondition(lambda self: self.state.edits)  # without edits the status is trivially reversible
    @rule(data=st.data())
    def audit(self, data):
        expected = status(self.policy, self.state)
        transition = self._do(Audit())
        assert transition.outcome == expected and transition.after == replace(transition.before, step=self.state.step)

    @invariant()
    def safe_deployment_keeps_every_condition(self):
        if self.policy.deployment in SAFE_DESIGNS:  # R1 judges the policy's text (it may name the region)
            assert not state_violations(self.policy, self.state) - {"R1"}
            if self.last is not None:
                assert not violations(self.policy, self.last) - {"R1"}
                assert _alive_records(self.last.after) >= _alive_records(self.last.before)

    @invariant()
    def absence_is_a_hard_error(self):
        for info in self.state.live_edits():
            if not self.state.span(info.record).alive:
                if self.policy.deployment.missing_record == "refuse":
                    with pytest.raises(IrreversibleEditError):
                        undo(self.policy, self.state, info.record)
                else:  # the seed's confabulation, which U1 reports
                    transition = step(self.policy, self.state, Undo(info.record))
                    assert transition.outcome == "reconstructed" and "U1" in transition_violations(transition)

    @invariant()
    def stale_records_are_merges_under_versioned_undo(self):
        for info in self.state.live_edits():
            if self.state.span(info.record).alive and self.state.span(info.target).version != info.version:
                if _id_only(self.policy, info):  # nothing to revert or merge from: a hard error (ADR 0034)
                    with pytest.raises(IrreversibleEditError):
                        undo(self.policy, self.state, info.record)
                elif self.policy.deployment.undo == "versioned":
                    with pytest.raises(MergeRequired):
                        undo(self.policy, self.state, info.record)
                elif self.policy.deployment.undo == "blind":
                    transition = step(self.policy, self.state, Undo(info.record))
                    assert transition.outcome == "reverted" and "C3" in transition_violations(transition)
                else:  # merge: a new edit, never a revert
                    transition = step(self.policy, self.state, Undo(info.record))
                    assert transition.outcome == "merged" and "C3" not in transition_violations(transition)
                    assert transition.after.edits[-1].mode == "merge" and not transition.after.edits[-1].undone

    @invariant()
    def independent_status_is_unknown_exactly_on_a_gap(self):
        independent = replace(self.policy, deployment=replace(self.policy.deployment, audit="independent"))
        assert (status(independent, self.state) == UNKNOWN) == _gap(self.state)
        if self.policy.deployment.records == "undo_region":
            assert not _gap(self.state)
        if self.policy.deployment.audit == "policy":
            seen_gap = any(not self.state.span(e.record).alive and addressable(self.state.span(e.rationale))
                           for e in self.state.live_edits())
            assert (status(self.policy, self.state) == UNKNOWN) == seen_gap


RuntimeMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=20, deadline=None)
TestRuntimeMachine = RuntimeMachine.TestCase
