"""The search with runs (symbolic/runs.py): real-size counts decided at the default span bound, every trace replayed."""

from dataclasses import replace

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from prunecheck.checker.check import check
from prunecheck.checker.engines.bmc import check_bounded
from prunecheck.checker.engines.replay import confirm, replay
from prunecheck.checker.engines.unknowns import counted_spans
from prunecheck.checker.language.document import policy_document
from prunecheck.checker.language.loader import load_policy
from prunecheck.checker.outputs.itf import actions_of, trace_document
from prunecheck.checker.findings.explain import step_label
from prunecheck.checker.options import MAX_SPANS, CheckOptions
from prunecheck.checker.outputs.reasons import reason_text
from prunecheck.checker.outputs.render import variants_text
from prunecheck.checker.result import Method, Verdict
from prunecheck.spec.actions import action_text, expand, steps_of
from prunecheck.spec.policy import Deployment, DeploymentOverride
from prunecheck.spec.runtime import ActionRefused, Append, Compact, Edit, State, addressable, positions, step
from prunecheck.symbolic.model import ACT
from prunecheck.spec.state import aggregates
from prunecheck.symbolic.runs import (MOST_COUNT, RunModel, count_constants, count_thresholds, member_aggregates,
                                      member_positions, run_lengths, runs_apply)
from prunecheck.symbolic.terms import ENUM_CODES

from conftest import BOUNDS, HOUR, RLIMIT, ROOT
from support import model_policy, run_actions, unroll

WINDOW = Deployment(records="window")


def _run(policy, actions):
    return run_actions(policy, actions)[0]


@settings(max_examples=40)
@given(st.sampled_from(("user", "assistant", "system", "tool_call")), st.integers(1, 4), st.integers(1, 6))
def test_an_append_of_a_run_is_its_single_appends(role, tokens, times):
    policy = model_policy("evict: from_end >= 2", WINDOW)
    start = _run(policy, (Append("message", 2), Append("diff", 1, "assistant")))
    run = Append("message", tokens, role, times)
    one_by_one = start
    for single in expand(run):
        one_by_one = step(policy, one_by_one, single).after
    assert step(policy, start, run).after == one_by_one and len(expand(run)) == times


def test_a_run_of_tool_results_is_refused():
    policy = model_policy("evict: role == 'tool_result'", WINDOW)
    state = _run(policy, (Append("message", 1, "tool_call"),))
    assert step(policy, state, Append("message", 1, "tool_result")).after.spans[-1].role == "tool_result"
    with pytest.raises(Exception, match="tool result"):
        step(policy, state, Append("message", 1, "tool_result", 2))


@pytest.mark.parametrize("text, lengths", [
    ("evict: from_end >= 20", (18, 19, 20, 21)),
    ("evict: true\nwhen: window_spans > 10\nkeep: from_end < 3", (2, 3, 4, 8, 9, 10, 11)),
    ("evict: tokens > 100", ()),
])
def test_run_lengths_surround_every_count_the_policy_compares(text, lengths):
    assert run_lengths(model_policy(text, WINDOW)) == lengths


def test_runs_serve_only_policies_that_cannot_tell_a_runs_members_apart():
    assert runs_apply(model_policy("evict: from_end >= 20", WINDOW))
    assert runs_apply(model_policy("evict: from_end >= 20\nkeep: position == 0", WINDOW))  # == 0 is monotone
    for text in ("evict: from_end >= 20 and age > 3", "evict: from_end == 20", "evict: true\nuntil: window_spans < 5",
                 "evict: from_end >= 2\nrank: tokens\nbudget: 4"):
        assert not runs_apply(model_policy(text, WINDOW)), text
    assert count_constants(model_policy("evict: from_end >= 20 or 3 > turn", WINDOW)) == (3, 20)


def test_keep_the_last_twenty_is_violated_at_the_default_span_bound():
    # Records in the window look like any span: the 21st newest is a candidate. 6 slots hold it with one run of 20.
    policy = model_policy("evict: from_end >= 20", WINDOW)
    (c1,) = check(policy, CheckOptions(depth=4, spans=6, only=("C1",), **BOUNDS)).results
    assert c1.verdict is Verdict.VIOLATED and c1.engine is Method.RUNS
    assert any(isinstance(a, Append) and a.times >= 20 for a in c1.trace.actions)
    confirm(policy, c1.trace.actions, "C1", None)  # replays on the runtime, which expands the run
    assert "runs of equal appended spans" in reason_text(c1.reason) and "replayed on the runtime" in reason_text(c1.reason)
    assert c1.trace.spans == len(_run(policy, c1.trace.actions).spans) > 6


def test_the_run_search_never_claims_holds_and_the_safe_deployment_is_still_proved():
    # the safe design of both seeds: what a compaction removes leaves a tombstone, a cited span moves to the log
    policy = model_policy("evict: from_end >= 20", Deployment(evicted="tombstone", justification="downgrade"))
    results = {r.condition: r for r in check(policy, CheckOptions(depth=4, spans=6, **BOUNDS)).results}
    # T1 applies to this role-blind policy too (tool_calls: on, ADR 0033): a call, its result in the same run, then
    # 19 user messages, and the compaction takes the call alone; only the run search reaches 21 spans, and it says
    # `violated` with a replayed trace, never `holds`.
    t1 = results.pop("T1")
    assert t1.verdict is Verdict.VIOLATED and t1.engine is Method.RUNS
    confirm(policy, t1.trace.actions, "T1", None)
    assert all(r.verdict is Verdict.HOLDS and r.engine is not Method.RUNS for r in results.values())
    searched = check_bounded(policy, 4, 6, ("C1", "C2"), HOUR, lemmas=False, rlimit=RLIMIT,
                             runs=run_lengths(policy))
    assert all(r.verdict is Verdict.UNKNOWN for r in searched)


def test_a_run_is_explained_as_the_spans_it_writes():
    policy = model_policy("evict: from_end >= 2", WINDOW)
    label = step_label(policy, step(policy, State(), Append("message", 2, "user", 3)))
    assert label == "spans #0-#2 (message, 2 tokens each) enter the window, 3 in a row (steps 1-3)"


@pytest.mark.slow
def test_more_counterexamples_asked_of_a_run_trace_never_call_it_the_shortest():
    policy = model_policy("evict: from_end >= 20", WINDOW)
    report = check(policy, CheckOptions(depth=4, spans=6, only=("C1",), counterexamples=2, **BOUNDS))
    (c1,) = report.results
    assert c1.engine is Method.RUNS
    text = variants_text(c1, report.spans, 12)  # as a check to depth 12 whose search for more stopped earlier says
    assert text.startswith("1 of 2 counterexamples asked") and "past the one shown" in text and "shortest" not in text


# Runs of call/result pairs (spec/SPEC.md §7d, "Runs of pairs").

@pytest.mark.parametrize("times, result_tokens", [(1, 1), (3, 5), (5, 2)])
def test_an_append_of_pairs_is_its_single_calls_and_results(times, result_tokens):
    policy = model_policy("evict: role == 'tool_result' and from_end_in_role >= 3", WINDOW)
    start = _run(policy, (Append("message", 2), Append("diff", 1, "assistant")))
    run = Append("message", 3, "tool_call", times, result_tokens)
    one_by_one = start
    for single in expand(run):
        one_by_one = step(policy, one_by_one, single).after
    after = step(policy, start, run).after
    assert after == one_by_one and steps_of(run) == len(expand(run)) == 2 * times
    assert [s.role for s in after.spans[2:]] == ["tool_call", "tool_result"] * times
    assert [s.tokens for s in after.spans[2:]] == [3, result_tokens] * times


@pytest.mark.parametrize("action, why", [
    (Append("message", 1, "user", 2, 1), "only tool calls"),
    (Append("message", 1, "tool_call", 2, -1), "result tokens"),
    (Append("message", 1, "tool_call", 3, 1), "no span slot"),
])
def test_a_run_of_pairs_is_refused_where_its_spans_could_not_be_appended(action, why):
    policy = model_policy("evict: role == 'tool_result'", WINDOW)
    with pytest.raises(ActionRefused, match=why):
        step(policy, State(), action, max_spans=5)


def test_a_run_of_pairs_prints_and_reads_back_only_when_it_has_results():
    single, pairs = Append("message", 1, "tool_call"), Append("message", 1, "tool_call", 3, 7)
    assert "result_tokens" not in repr(single) + action_text(single)
    assert action_text(pairs) == "append('message', 1, role='tool_call', times=3, result_tokens=7)"
    policy = model_policy("evict: role == 'tool_result' and from_end_in_role >= 3", WINDOW)
    transitions = replay(policy, (Append("message", 1), pairs))
    assert actions_of(trace_document(policy, policy_document(policy), transitions, {})) == (Append("message", 1), pairs)
    label = step_label(policy, transitions[1])
    assert label == ("spans #1-#6 (message, 3 tool calls of 1 token, each followed by its result of 7 tokens) enter "
                     "the window (steps 2-7)")


# A window with two runs of pairs, a run of assistant messages, a record, and the first run's results evicted: the
# model's positions of every run's first and last members are the runtime's. Without evidence (the first seed's
# deployment): the slots below are the trace's spans, and a compaction's ledger entry would take one more; the
# second seed's defaults are tested elsewhere.
PAIR_POLICY = "evict: role == 'tool_result' and from_end_in_role >= 3 and from_end >= 0 and position >= 0 " \
              "and turn >= 0 and tokens_after >= 0"
PAIR_TRACE = (Append("message", 2), Edit(0, "transform"), Append("message", 3, "tool_call", 3, 5),
              Append("message", 1, "assistant", 2), Append("message", 4, "tool_call", 3, 1), Compact(),
              Append("message", 2, "user", 2))


def _slot_members(actions) -> list:
    """Per slot of the model with runs: the runtime ids of its run's first and last members."""
    slots, written = [], 0
    for action in actions:
        if isinstance(action, Edit):
            slots += [(written, written), (written + 1, written + 1)]
        elif isinstance(action, Append) and action.result_tokens:
            slots += [(written, written + 2 * action.times - 2), (written + 1, written + 2 * action.times - 1)]
        elif isinstance(action, Append):
            slots.append((written, written + action.times - 1))
        written += 2 if isinstance(action, Edit) else steps_of(action) if isinstance(action, Append) else 0
    return slots


def _pinned(model, a, action) -> list:
    out = [a.act == ACT[action.name]]
    if isinstance(action, Append):
        out += [a.kind == ENUM_CODES["kind"][action.kind], a.tokens == action.tokens, a.result == action.result_tokens,
                a.role == ENUM_CODES["role"][action.role], a.times == steps_of(action)]
    elif isinstance(action, Edit):
        out += [a.arg == model.slots[action.target], a.destroy == (action.mode == "destroy")]
    else:
        out.append(z3.Not(a.hosted))
    return out


def test_the_positions_of_a_run_of_pairs_members_are_the_runtimes():
    policy = model_policy(PAIR_POLICY, replace(WINDOW, evidence="off"))
    slots = _slot_members(PAIR_TRACE)
    model = RunModel(policy, len(slots), (2, 3))
    solver, states = unroll(model, PAIR_TRACE, _pinned)
    assert solver.check() == z3.sat
    zmodel, final, runtime = solver.model(), states[-1], _run(policy, PAIR_TRACE)
    assert not addressable(runtime.span(4)) and addressable(runtime.span(3))  # the first run's results went
    assert zmodel.eval(final.clock).as_long() == runtime.step
    for i, ids in enumerate(slots):  # policies see window spans only (the sums are not the runtime's elsewhere)
        for member, span_id in [m for m in zip(("first", "last"), ids) if addressable(runtime.span(m[1]))]:
            want = positions(runtime, runtime.span(span_id))
            got = member_positions(final, i, member)
            for name, term in got.items():
                value = zmodel.eval(term.num, model_completion=True).as_long()
                assert value == want[name], (i, member, name)


@pytest.mark.parametrize("name", ["langchain_clear_tool_uses.yaml", "sweagent_last_n_observations.yaml"])
def test_strategies_that_keep_the_newest_tool_results_are_violated_by_a_run_of_pairs(name):
    # Keeping the newest 3 (5) tool results: a record among the tool results is masked once 3 (5) results are newer,
    # which takes 2·3 (2·5) spans after it, more than the 6 slots; one run of pairs needs two.
    policy = load_policy(ROOT / "examples" / "frameworks" / name)
    report = check(policy, CheckOptions(only=("C1", "C2"), **BOUNDS))
    for r in report.results:
        assert r.verdict is Verdict.VIOLATED and r.engine is Method.RUNS, r.condition
        assert any(isinstance(a, Append) and a.result_tokens > 0 for a in r.trace.actions)
        confirm(policy, r.trace.actions, r.condition, None)


def test_the_search_with_runs_goes_before_the_bounded_search_to_full_depth():
    # For a policy counting more spans than the slots, the bounded search from depth 5 to 12 within the slots is
    # not run for a condition the search with runs finds (SPEC §7d addendum, "Order").
    policy = model_policy("evict: from_end >= 20", WINDOW)
    (c1,) = check(policy, CheckOptions(depth=12, spans=6, only=("C1",), **BOUNDS)).results
    assert c1.verdict is Verdict.VIOLATED and c1.engine is Method.RUNS
    # Neither the bounded search to depth 12 nor Spacer (which ran when that search left C1 open) took part.
    assert [run.engine for run in c1.stats.runs] == [Method.BMC, Method.INDUCTION] and c1.stats.runs[0].depth < 12


def test_a_count_within_one_role_asks_for_a_call_before_each_counted_result():
    # `from_end_in_role >= 3` may count tool results, each right after its call: 2·3 + 3 spans, more than 6 slots.
    assert counted_spans(model_policy("evict: role == 'tool_result' and from_end_in_role >= 3", WINDOW)) == 9
    assert counted_spans(model_policy("evict: from_end >= 3 or from_end_in_role >= 1", WINDOW)) == 6


# Aggregates (spec/SPEC.md §1e) of every run member, over the trace above: subsets by role, by kind, of every span.
AGGREGATE_RUN_POLICY = ("evict: role == 'tool_result' and from_end_in_role >= 3 "
                        "and count_newer(role == 'tool_result') >= 0 and count_older(role != 'assistant') >= 0 "
                        "and tokens_newer(role == 'tool_call') >= 0 and tokens_older(true) >= 0 "
                        "and count(role == 'tool_result') >= 0 and tokens_of(kind != 'record') >= 0")


def test_the_aggregates_of_a_runs_members_are_the_runtimes():
    policy = model_policy(AGGREGATE_RUN_POLICY, replace(WINDOW, evidence="off"))
    assert runs_apply(policy)
    slots = _slot_members(PAIR_TRACE)
    model = RunModel(policy, len(slots), (2, 3))
    solver, states = unroll(model, PAIR_TRACE, _pinned)
    assert solver.check() == z3.sat
    zmodel, final, runtime = solver.model(), states[-1], _run(policy, PAIR_TRACE)
    holds = model.aggregate_conditions(final)
    window = member_aggregates(final, None, "first", policy.aggregates, holds)
    assert {n.fn: zmodel.eval(t.num).as_long() for n, t in window.items()} == {
        n.fn: int(v) for n, v in aggregates(policy, runtime).items()}
    checked = 0
    envs = {member: model.slot_envs(final, policy.budget, member) for member in ("first", "last")}
    for i, ids in enumerate(slots):
        for member, span_id in [m for m in zip(("first", "last"), ids) if addressable(runtime.span(m[1]))]:
            want = aggregates(policy, runtime, runtime.span(span_id))
            for node, term in member_aggregates(final, i, member, policy.aggregates, holds).items():
                assert zmodel.eval(term.num, model_completion=True).as_long() == want[node], (i, member, node.fn)
                checked += 1
            # What the stage reads of the member: the window's aggregates too count every member of a run, not slots.
            for node in policy.aggregates:
                got = zmodel.eval(envs[member][i][node].num, model_completion=True).as_long()
                assert got == want[node], (i, member, node.fn)
    assert checked >= 4 * len(slots)


def test_keep_the_last_twenty_user_turns_is_violated_at_real_size():
    policy = model_policy("evict: count_newer(role == 'user') >= 20\npairs: together", WINDOW)
    assert run_lengths(policy) == (18, 19, 20, 21) and counted_spans(policy) == 43
    (c1,) = check(policy, CheckOptions(depth=4, spans=6, only=("C1",), **BOUNDS)).results
    assert c1.verdict is Verdict.VIOLATED and c1.engine is Method.RUNS
    confirm(policy, c1.trace.actions, "C1", None)


# Roo Code's sliding window (examples/frameworks/roocode_sliding_window.yaml): the visible messages 1 .. n are hidden,
# n = (visible - 1) // 2 rounded down to an even number, so nothing is taken before 5 visible messages.
ROO = ("evict: kind != 'summary' and count_older(kind != 'summary') >= 1 "
       "and count_older(kind != 'summary') <= (count(kind != 'summary') - 1) // 2 // 2 * 2")


def test_a_threshold_hidden_in_arithmetic_asks_for_the_spans_it_turns_at():
    # Roo's even half turns at 5 counted spans (4 besides the one compared), not at the constant 1 beside it: more
    # than the 6 slots (a subset's members may be results, each after its call: 2·4 + 3), so the runs are asked for.
    roo = model_policy(ROO, WINDOW)
    assert count_constants(roo) == (1,) and count_thresholds(roo) == (1, 4)
    assert counted_spans(roo) == 11 and run_lengths(roo) == (2, 3, 4, 5)
    # One threshold, written with a constant or hidden in arithmetic, asks for the same spans.
    for plain, hidden in (("evict: from_end >= 20", "evict: position < window_spans - 20"),
                          ("evict: true\nwhen: window_spans > 99", "evict: true\nwhen: window_spans // 10 > 9"),
                          ("evict: from_end >= 9", "evict: from_end % 10 == 9"),
                          ("evict: from_end >= 8", "evict: 2 * from_end >= 15"),
                          ("evict: count_newer(role == 'user') >= 3",
                           "evict: count_newer(role == 'user') >= count_older(role == 'user') + 3")):
        assert counted_spans(model_policy(plain, WINDOW)) == counted_spans(model_policy(hidden, WINDOW)), hidden
    # A comparison that never turns asks for nothing; one that turns beyond the most slots asks for the most.
    assert counted_spans(model_policy("evict: position < window_spans", WINDOW)) == 0
    far = model_policy("evict: from_end >= count(role == 'user') + 300", WINDOW)
    assert MOST_COUNT == MAX_SPANS and count_thresholds(far) == (MAX_SPANS - 1,) and counted_spans(far) > MAX_SPANS


def test_roos_sliding_window_is_violated_under_the_safe_default_at_the_default_bounds():
    # The removal that leaves no tombstone (M1) and cuts what a rationale cites (J1) needs 5 visible messages, the
    # marker and the rationale: found with runs (5 visible messages in 3 slots), replayed on the runtime.
    safe = DeploymentOverride.of({"records": "undo_region", "rationale": "decision_log", "evicted": "destroyed"})
    policy = load_policy(ROOT / "examples" / "frameworks" / "roocode_sliding_window.yaml", safe)
    for r in check(policy, CheckOptions(only=("M1", "J1"), **BOUNDS)).results:
        assert r.verdict is Verdict.VIOLATED and r.engine is Method.RUNS, r.condition
        confirm(policy, r.trace.actions, r.condition, None)
