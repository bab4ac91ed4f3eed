"""The search with runs (symbolic/runs.py): real-size counts decided at the default span bound, every trace replayed."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prunecheck.checker.check import QUICK_DEPTH, check
from prunecheck.checker.engines.bmc import check_bounded
from prunecheck.checker.engines.replay import confirm
from prunecheck.checker.findings.explain import step_label
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.outputs.reasons import reason_text
from prunecheck.checker.outputs.render import variants_text
from prunecheck.checker.result import Method, Verdict
from prunecheck.spec.actions import expand
from prunecheck.spec.policy import Deployment
from prunecheck.spec.runtime import Append, State, step
from prunecheck.symbolic.runs import count_constants, run_lengths, runs_apply

from conftest import BOUNDS, HOUR, RLIMIT
from support import model_policy

WINDOW = Deployment(records="window")


def _run(policy, actions):
    state = State()
    for action in actions:
        state = step(policy, state, action).after
    return state


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
    policy = model_policy("evict: from_end >= 20", Deployment())
    results = check(policy, CheckOptions(depth=4, spans=6, **BOUNDS)).results
    assert all(r.verdict is Verdict.HOLDS and r.engine is not Method.RUNS for r in results)
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


def test_a_count_past_the_bound_is_searched_with_runs_before_the_full_bounded_search():
    # 6 slots cannot hold 21 spans one by one: only the quick bounded search runs before the run search decides C1
    # (spec/SPEC.md §7e), not a bounded search to the full depth that could find nothing.
    policy = model_policy("evict: from_end >= 20", WINDOW)
    (c1,) = check(policy, CheckOptions(depth=8, spans=6, only=("C1",), **BOUNDS)).results
    assert c1.verdict is Verdict.VIOLATED and c1.engine is Method.RUNS
    bmc = [run for run in c1.stats.runs if run.engine is Method.BMC]
    assert bmc and all(run.depth <= QUICK_DEPTH for run in bmc)
