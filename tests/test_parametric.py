"""The parametric model over-approximates the runtime: every run, projected on every pair (r, r+1), is a run of it."""

import z3
from hypothesis import given, settings

from prunecheck.spec.actions import ACTION_TYPES, expand
from prunecheck.spec.conditions import STATE_CONDITIONS, STEP_CONDITIONS
from prunecheck.spec.policy import (ARITH_OPS, ATTRS, CALLABLE, EFFECTS, Binary, Call, stage_exprs, subexpressions, ORDERS, PAIRS, POSITION_ATTRS, ROLES, SUMMARY_ROLES, Deployment,
                                    read_attributes, read_positions, summarises)
from prunecheck.symbolic.parametric import PairModel, PairState
from prunecheck.spec.runtime import (Append, Audit, Compact, Edit, Pin, Read, State, Undo, enabled, enabled_actions,
                                     step)

from support import (AGGREGATE_POLICIES, TRIGGER_POLICIES, AT_GHOST, AT_RECORD, NAMED, POLICIES, POSITIONAL, STAGE_POLICIES, START_ON, STEP_AT_PAIR,
                     SUMMARY_POLICIES, TARGETED, check_projection, enabled_prefix, model_policy, runs)


# The first seed's deployment (no evidence, a destroy's record as large as its target): for runs that undo or merge a
# destroy and name the edits they write, and for the pair model "as it was" before positions and names, with no
# evidence fields; the second seed's defaults are tested elsewhere.
FIRST_SEED = {"evidence": "off", "destroy_record": "verbatim"}


def test_every_condition_has_a_projection_witness():
    assert set(AT_RECORD) | set(AT_GHOST) == set(STATE_CONDITIONS)
    assert set(STEP_AT_PAIR) == set(STEP_CONDITIONS)


@settings(max_examples=30)
@given(runs())
def test_every_run_projects_onto_every_pair(run):
    check_projection(*run)


def test_targeted_runs_project_onto_every_pair():
    for text, deployment, actions in TARGETED:
        check_projection(model_policy(text, deployment), actions)


# Undo's options (spec/SPEC.md §4e): a merge writes a new record and rationale on an undo step (here at r or q) and
# is itself undone; a reconstruction restores a target whose record is gone (U1 at the record).
UNDO_RUNS = (
    ("evict: kind == 'record'", Deployment(records="window", missing_record="reconstruct", **FIRST_SEED),
     (Append("message", 2), Edit(0, "destroy"), Compact(1), Undo(1))),
    ("evict: kind == 'record'", Deployment(undo="merge", **FIRST_SEED),
     (Append("message", 2), Edit(0, "destroy"), Edit(0, "transform"), Undo(1), Undo(5), Undo(3))),
    ("evict: kind == 'record'", Deployment(records="window", undo="merge", missing_record="reconstruct", **FIRST_SEED),
     (Append("message", 1), Edit(0, "transform"), Edit(0, "destroy"), Undo(1), Compact(), Undo(5))),
)


def test_runs_under_undos_options_project_onto_every_pair():
    for text, deployment, actions in UNDO_RUNS:
        check_projection(model_policy(text, deployment), actions)


@settings(max_examples=30)
@given(runs(policies=POSITIONAL))
def test_runs_of_policies_reading_positions_project_onto_every_pair(run):
    # The counters' facts (spec/SPEC.md §1b) are part of the pair model's step: each projected state must meet them.
    check_projection(*run)


def test_the_positional_policies_read_every_positional_attribute_and_get_counters():
    policies = [model_policy(text, Deployment()) for text in POSITIONAL]
    assert set().union(*(read_positions(p) for p in policies)) == set(POSITION_ATTRS)
    assert all(PairModel(p).positions and PairModel(p).state("s").window_spans is not None for p in policies)
    old = PairModel(model_policy(POLICIES[0], Deployment(**FIRST_SEED)))
    assert not old.positions and old.state("s").variables() == PairState("s").variables()


# Runs whose pairs meet each counter fact at its edge: adjacent spans of different roles with a span of the first's
# role after them, user turns between them, records in the window among them, spans evicted from between them.
POSITION_TARGETED = [
    (POSITIONAL[0], Deployment(), (Append("message", 2, "tool_call"), Append("message", 1, "tool_result"),
                                   Append("message", 3, "tool_call"), Append("diff", 1, "user"), Compact(), Audit())),
    (POSITIONAL[1], Deployment(records="window", rationale="window"),
     (Append("message", 1, "assistant"), Append("message", 2, "user"), Edit(0, "transform"),
      Append("message", 1, "assistant"), Compact(), Compact(2), Audit())),
    (POSITIONAL[2], Deployment(records="window"),
     (Append("message", 1), Append("message", 1), Append("message", 1), Edit(1, "destroy"), Compact(), Audit())),
]


def test_targeted_runs_of_policies_reading_positions_project_onto_every_pair():
    for text, deployment, actions in POSITION_TARGETED:
        check_projection(model_policy(text, deployment), actions)
@settings(max_examples=18)
@given(runs(policies=STAGE_POLICIES))
def test_runs_of_stage_policies_project_onto_every_pair(run):
    check_projection(*run)


@settings(max_examples=20)
@given(runs(policies=SUMMARY_POLICIES))
def test_runs_of_summarising_policies_project_onto_every_pair(run):
    # A summary is written at r, q or elsewhere; the adjacency facts hold only for pairs without a summary.
    check_projection(*run)


# A summary written at r and at q, folded by the next one, standing before an appended pair, truncated at once.
SUMMARY_TARGETED = [
    (SUMMARY_POLICIES[0], Deployment(), (Append("message", 2, "tool_call"), Append("message", 1, "tool_result"),
                                         Append("message", 3), Compact(), Append("message", 1), Compact(), Audit())),
    (SUMMARY_POLICIES[4], Deployment(records="window"),
     (Append("message", 1), Append("message", 1), Append("message", 1), Append("message", 1), Compact(),
      Compact(1))),
    (SUMMARY_POLICIES[2], Deployment(evicted="logged"),
     (Append("message", 1), Append("message", 2), Append("message", 1), Compact(2), Compact())),
]


def test_targeted_runs_of_summarising_policies_project_onto_every_pair():
    for text, deployment, actions in SUMMARY_TARGETED:
        check_projection(model_policy(text, deployment), actions)


def test_only_a_summarising_policy_reading_positions_gets_the_summary_flag():
    assert PairModel(model_policy(SUMMARY_POLICIES[0], Deployment())).summaries
    assert not PairModel(model_policy(SUMMARY_POLICIES[3], Deployment())).summaries
    plain = PairModel(model_policy(POSITIONAL[0], Deployment()))
    assert "summary" not in plain.state("s").span["r"]
@settings(max_examples=18)
@given(runs(policies=START_ON))
def test_runs_of_start_on_policies_project_onto_every_pair(run):
    # start_on's leading spans (SPEC 4b): r leads iff nothing left before it has the role (a free choice), q as r says.
    check_projection(*run)


# Runs where start_on takes r and q together, takes r but stops at q, is stopped before r by a span of the role,
# skips a kept span, and takes a record left in the window.
SYSTEM, USER, ASSISTANT = (Append("message", 1, role) for role in ("system", "user", "assistant"))
CALL, RESULT = Append("message", 1, "tool_call"), Append("message", 1, "tool_result")
START_ON_TARGETED = [
    (START_ON[0], Deployment(), (ASSISTANT, CALL, RESULT, USER, Compact())),
    (START_ON[4], Deployment(), (USER, CALL, RESULT, ASSISTANT, Compact())),
    (START_ON[0], Deployment(), (SYSTEM, USER, CALL, RESULT, Compact())),
    (START_ON[1], Deployment(records="window"), (SYSTEM, ASSISTANT, Edit(1, "transform"), Compact(), Audit())),
    ("evict: false\nkeep: role == 'user'\nstart_on: user", Deployment(), (USER, ASSISTANT, USER, CALL, Compact())),
]


def test_targeted_runs_of_start_on_policies_project_onto_every_pair():
    for text, deployment, actions in START_ON_TARGETED:
        check_projection(model_policy(text, deployment), actions)
def test_a_run_of_call_result_pairs_projects_onto_every_pair_step_by_step():
    # Append(times=n, result_tokens=m) stands for its single calls and results (spec.actions.expand), one step each:
    # those are what the pair model's steps must project.
    policy = model_policy("evict: role == 'tool_result' and from_end_in_role >= 2\npairs: together",
                          Deployment(records="window"))
    run = (Append("message", 2), Edit(0, "transform"), Append("message", 1, "tool_call", 3, 2), Compact(), Audit())
    check_projection(policy, tuple(single for action in run for single in expand(action)))
@settings(max_examples=25)
@given(runs(policies=NAMED))
def test_runs_of_policies_reading_tool_names_and_tags_project_onto_every_pair(run):
    # Names are codes (mentioned names, 0 for the rest), the result's tool is its call's, records get record_tool's.
    check_projection(*run)


def test_targeted_runs_with_tool_names_project_onto_every_pair():
    calls = (Append("message", 1, "tool_call", tool="browse"), Append("message", 2, "tool_result", tool="browse"),
             Append("message", 1, "tool_call", tool="zz", tag="agents_md"),
             Append("message", 1, "tool_result", tool="zz"))
    for text in NAMED:
        for deployment in (Deployment(records="window", rationale="window", record_tool="edit"), Deployment()):
            check_projection(model_policy(text, deployment), calls + (Edit(0, "transform"), Compact(), Compact(1)))
    assert PairModel(model_policy(NAMED[0], Deployment())).state("s").span["r"]["tool"].sort() == z3.IntSort()
    old = PairModel(model_policy(POLICIES[0], Deployment(**FIRST_SEED)))
    assert old.state("s").variables() == PairState("s").variables()


# Every list whose runs the tests above project (random runs of each, targeted runs of most).
PROJECTED = (POLICIES + POSITIONAL + STAGE_POLICIES + SUMMARY_POLICIES + START_ON + NAMED + AGGREGATE_POLICIES
             + TRIGGER_POLICIES)


@settings(max_examples=20)
@given(runs(policies=TRIGGER_POLICIES))
def test_runs_of_policies_fired_on_events_project_onto_every_pair(run):
    # The compaction's event and reported usage (spec/SPEC.md §4g) are the pair action's, pinned to the runtime's.
    check_projection(*run)


@settings(max_examples=30)
@given(runs(policies=AGGREGATE_POLICIES))
def test_runs_of_policies_reading_aggregates_project_onto_every_pair(run):
    # The aggregates' facts (spec/SPEC.md §1e) are part of the pair model's step, as the positions' are.
    check_projection(*run)


def test_the_projected_policies_cover_the_whole_vocabulary():
    # So that `holds` stays sound for every construct: each attribute, effect, order, pairs value and stage key is
    # in some policy whose runs are projected onto the pair model, and the runs draw every deployment choice.
    policies = [model_policy(text, Deployment()) for text in PROJECTED]
    assert set().union(*(read_attributes(p) for p in policies)) == set(ATTRS)
    nodes = [n for p in policies for e in stage_exprs(p) for n in subexpressions(e)]
    assert {n.fn for n in nodes if isinstance(n, Call)} == set(CALLABLE)
    assert {n.op for n in nodes if isinstance(n, Binary)} >= set(ARITH_OPS)
    assert {p.effect for p in policies} == set(EFFECTS)
    assert {p.order for p in policies} == set(ORDERS) and {p.pairs for p in policies} == set(PAIRS)
    assert {p.summary_role for p in policies if summarises(p)} == set(SUMMARY_ROLES)
    for key in ("keep", "when", "until", "start_on", "rank", "budget"):
        assert any(getattr(p, key) is not None for p in policies), key
    assert {p.placeholder_tokens for p in policies if p.effect != "evict"} > {1}


def test_the_projected_runs_take_every_action():
    # Random runs draw from enabled_actions: on a state with a pinned span, an edit and a call awaiting its result,
    # every action of the runtime is among them; a repeated append (a run, of pairs too) is its single appends.
    policy = model_policy(POLICIES[0], Deployment(records="window"))
    state = State()
    for action in (Append("message", 1), Edit(0, "transform"), Append("message", 1, "tool_call")):
        state = step(policy, state, action, 8).after
    state = step(policy, state, Pin(state.spans[-1].id), 8).after
    names = {a.name for a in enabled_actions(policy, state, 8, token_choices=(1,), roles=ROLES)}
    assert names == set(ACTION_TYPES)
    assert any(a.role == "tool_result" for a in enabled_actions(policy, state, 8, token_choices=(1,), roles=ROLES)
               if isinstance(a, Append))
    run = Append("message", 1, "tool_call", 2, 3)
    assert [(a.role, a.tokens, a.times) for a in expand(run)] == [("tool_call", 1, 1), ("tool_result", 3, 1)] * 2


# The refusal's free choices (SPEC §6e): a named recovery span outside the pair blocks an atomic compaction (r's
# record names nothing of the pair), and a sequential walk keeps the candidates before the named record and not
# those after it.
REFUSAL_TARGETED = [
    ("evict: kind == 'record' or kind == 'message'", Deployment(refusal="atomic"),
     (Append("message", 1), Append("diff", 1), Edit(0, "transform"), Compact(), Compact(1), Audit())),
    ("evict: namespace == 'undo' or kind == 'summary' or kind == 'diff'", Deployment(refusal="sequential"),
     (Append("message", 1), Append("file_body", 1), Edit(0, "transform"), Append("diff", 2), Append("diff", 1),
      Compact(), Compact())),
    ("evict: namespace == 'log' or tokens >= 2", Deployment(refusal="sequential", records="window"),
     (Append("message", 2), Append("message", 1), Edit(1, "destroy"), Append("tool_output", 3), Compact())),
]


def test_targeted_runs_of_refusing_deployments_project_onto_every_pair():
    for text, deployment, actions in REFUSAL_TARGETED:
        policy = model_policy(text, deployment)
        blocked = [step(policy, s, a).outcome for s, a in _states(policy, actions) if isinstance(a, Compact)]
        assert "blocked" in blocked, text
        check_projection(policy, actions)


def _states(policy, actions):
    state = State()
    for action in actions:
        yield state, action
        state = step(policy, state, action).after


# Runs under evidence: on (spec/SPEC.md §6d) exercising every free choice of the pair model's evidence: a citation by
# an edit and by a compaction (kept only if it writes its entry), an undo that clears a citation, a ledger rationale
# allocated at a ghost (after a summary too), and each justification's removal (downgrade to the log, defer).
EVIDENCE_RUNS = (
    ("evict: kind == 'tool_output'", (Append("tool_output", 2), Append("tool_output", 2), Append("message", 1),
                                      Compact(cites=(1,)), Compact(1, cites=(2,)))),
    ("evict: false", (Append("message", 2), Append("message", 1), Edit(1, "transform", cites=(0,)), Compact(1),
                      Undo(2), Compact(cites=(0,)))),
    ("evict: kind == 'message'\neffect: mask\nplaceholder_tokens: 1",
     (Append("message", 2), Append("tool_output", 1), Compact(cites=(0,)), Append("message", 1), Compact(1))),
    ("evict: kind == 'tool_output'\neffect: summarise\nplaceholder_tokens: 1",
     (Append("tool_output", 2), Append("message", 1), Edit(1, "destroy", cites=(0,)), Compact(cites=(1,)),
      Compact(1))),
    ("evict: age > 1", (Append("message", 1), Append("message", 1), Compact(cites=(0,)), Audit(), Audit(), Compact(),
                        Compact(1))),
)


def test_targeted_evidence_runs_project_onto_every_pair():
    for text, actions in EVIDENCE_RUNS:
        for justification in ("unchecked", "downgrade", "defer"):
            for rationale in ("decision_log", "window"):
                deployment = Deployment(evidence="on", justification=justification, rationale=rationale,
                                        records="window")
                policy = model_policy(text, deployment)
                check_projection(policy, _enabled_prefix(policy, actions))


def _enabled_prefix(policy, actions) -> tuple:
    """The actions, those the runtime refuses left out (a span cited later may be gone under some deployments)."""
    out = enabled_prefix(policy, actions)
    assert any(getattr(a, "cites", ()) for a in out)
    return tuple(out)


def test_an_undo_that_brings_a_summarised_span_back_beside_its_summary_projects():
    """Issue 27 (the 3-wise covering array's row 66): the undo of edit 2 (a merge) brings span 0 back at its own
    place, where compaction 6's summary stands, so spans 0 and 1 are no longer adjacent in window order; the pair model
    of a summarising policy that reads positions once assumed they were, and the read that follows did not project."""
    deployment = Deployment(rationale="window", pins="self", audit="policy", undo="merge", record_role="user",
                            evicted="tombstone", evidence="on", justification="defer", record_tool="edit")
    policy = model_policy("evict: from_end >= 1 and position >= 0 or turn >= 1 or tokens_after > window_spans\n"
                          "rank: 0 - tokens\nwhen: window_tokens > 2\neffect: summarise\npairs: together\n"
                          "placeholder_tokens: 3\nsummary_role: system\nstart_on: tool_result", deployment)
    actions = (Append("message", 2), Append("file_body", 1, "assistant"), Edit(0, "transform", cites=(1,)),
               Edit(0, "destroy"), Pin(1), Compact(), Undo(2), Read(0), Compact(1), Undo(4))
    for free_policy in (False, True):
        assert check_projection(policy, actions, free_policy=free_policy) >= 2
