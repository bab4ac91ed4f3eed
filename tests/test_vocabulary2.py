"""Issue 29's constructs: aggregates over span subsets (spec/SPEC.md §1e), whole-number arithmetic (§1d) and the
compaction's trigger from outside the window (§4g): parsing, the runtime's values, the unrolled and the pair model
against the runtime, and both engines, for each construct and every pair of them."""

import itertools
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings

from prunecheck.spec.policy import AGGREGATES, TRIGGER_ATTRS, WHOLE_OPS, Deployment
from prunecheck.spec.runtime import Append, Compact, Edit, State, enabled, enabled_actions, step
from prunecheck.spec.state import span_env, window_env
from prunecheck.spec.policy import ROLES

from support import (AGGREGATE_POLICIES, N, agree, check_projection, engines_agree, model_policy, policy_error,
                     run_actions, runs)

# Each new construct as a condition (SPEC §1d, §1e); `when` is the window's aggregate as a trigger.
CONSTRUCTS = {
    "floordiv": "position < window_spans // 2",
    "mod": "from_end % 2 == 0",
    "count": "count(role == 'user') >= 2",
    "count_newer": "count_newer(role == 'user') >= 1",
    "count_older": "count_older(kind != 'record') <= 2",
    "tokens_of": "tokens_of(role == 'tool_result') > 2",
    "tokens_newer": "tokens_newer(not pinned) >= 2",
    "tokens_older": "tokens_older(true) >= tokens",
    # the stage's trigger: on a window aggregate, on the host's event, on the usage the host reported (§4g)
    "when": "count(role != 'user') >= 1 and tokens_of(true) % 2 == 0",
    "event": "event == 'overflow'",
    "reported": "reported_tokens > 4",
}
TRIGGERS = ("when", "event", "reported")


def blocks() -> list:
    """Triples of constructs covering every pair of them (a greedy cover, deterministic)."""
    names = sorted(CONSTRUCTS)
    uncovered = {frozenset(p) for p in itertools.combinations(names, 2)}
    out = []
    while uncovered:
        best = max(itertools.combinations(names, 3),
                   key=lambda b: (sum(frozenset(p) in uncovered for p in itertools.combinations(b, 2)), b))
        out.append(best)
        uncovered -= {frozenset(p) for p in itertools.combinations(best, 2)}
    return out


def block_policy(block) -> str:
    """The policy text of a triple: the first span condition or the second selects, a third keeps; the triggers
    among them, joined by `or`, are the stage's `when`."""
    conds = [CONSTRUCTS[name] for name in block if name not in TRIGGERS] or ["from_end >= 1"]
    lines = [f"evict: {' or '.join(conds[:2])}"]
    if len(conds) > 2:
        lines.append(f"keep: {conds[2]}")
    triggers = [CONSTRUCTS[name] for name in block if name in TRIGGERS]
    if triggers:
        lines.append(f"when: {' or '.join(triggers)}")
    return "\n".join(lines)


BLOCKS = blocks()
DEPLOYMENTS = (Deployment(records="window", rationale="window", pins="self", audit="policy"),
               Deployment(records="window", evicted="logged", evidence="off"))


def test_every_pair_of_constructs_is_in_a_block():
    pairs = {frozenset(p) for b in BLOCKS for p in itertools.combinations(b, 2)}
    assert pairs == {frozenset(p) for p in itertools.combinations(CONSTRUCTS, 2)}
    assert len(BLOCKS) <= 21
    texts = "\n".join(block_policy(b) for b in BLOCKS) + "\n".join(AGGREGATE_POLICIES)
    assert all(f"{fn}(" in texts for fn in AGGREGATES) and all(f" {op} " in texts for op in WHOLE_OPS)
    assert all(name in texts for name in TRIGGER_ATTRS)


def walk(policy, seed: int, steps: int = 9) -> tuple:
    """A run of enabled actions drawn with random.Random(seed), appends of every role."""
    rng = random.Random(seed)
    state, actions = State(), []
    for _ in range(steps):
        options = enabled_actions(policy, state, N, token_choices=(1, 2, 3), roles=ROLES)
        options += (Compact(2),) if enabled(policy, state, Compact(2), N) else ()
        name = rng.choice(sorted({a.name for a in options}))
        action = rng.choice([a for a in options if a.name == name])
        actions.append(action)
        state = step(policy, state, action, N).after
    return tuple(actions)


@pytest.mark.parametrize("block", BLOCKS, ids="-".join)
def test_runs_of_every_pair_of_constructs_project_onto_both_pair_models(block):
    for k, deployment in enumerate(DEPLOYMENTS):  # one run under each
        policy = model_policy(block_policy(block), deployment)
        actions = walk(policy, 100 * k + BLOCKS.index(block))
        for free_policy in (False, True):
            assert check_projection(policy, actions, free_policy, batched=True, context=f"{block} run {k}: ") > 0


@pytest.mark.parametrize("block", BLOCKS, ids="-".join)
def test_the_unrolled_model_reaches_the_runtimes_states_for_every_pair_of_constructs(block):
    policy = model_policy(block_policy(block), DEPLOYMENTS[0])
    agree(policy, walk(policy, 7, steps=6), with_lemmas=False)


@settings(max_examples=15)
@given(runs(policies=AGGREGATE_POLICIES, max_steps=6))
def test_the_unrolled_model_reaches_the_runtimes_states(run):
    agree(*run, with_lemmas=False)


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.parametrize("block", BLOCKS, ids="-".join)
def test_both_engines_agree_on_every_pair_of_constructs(block):
    # depth 3: CI's 30 minutes (the projections above go deeper); AGGREGATE_POLICIES agree in the slow tier's sweep
    engines_agree(model_policy(block_policy(block), DEPLOYMENTS[BLOCKS.index(block) % 2]), depth=3)


@pytest.mark.slow
@pytest.mark.parametrize("text", AGGREGATE_POLICIES)
def test_both_engines_agree_on_the_aggregate_policies(text):
    engines_agree(model_policy(text, DEPLOYMENTS[AGGREGATE_POLICIES.index(text) % 2]))


def test_the_runtime_counts_what_each_aggregate_says():
    policy = model_policy("evict: count_newer(role == 'user') >= 1 and count_older(true) >= 0 and "
                          "tokens_newer(role == 'tool_result') >= 0 and tokens_older(not pinned) >= 0\n"
                          "when: count(role == 'user') >= 0 and tokens_of(role == 'tool_result') >= 0",
                          Deployment(records="window", rationale="window"))
    state, _ = run_actions(policy, (Append("message", 2), Append("message", 3, "tool_call"),
                                    Append("message", 5, "tool_result"), Append("message", 7), Edit(0, "transform")))
    # spans: 0 user (2, edited), 1 call (3), 2 result (5), 3 user (7), 4 record, 5 rationale (both tool results)
    env = span_env(policy, state, state.span(1))
    values = {node.fn: env[node] for node in policy.aggregates}
    record_tokens = state.span(4).tokens + state.span(5).tokens
    assert values == {"count_newer": 1, "count_older": 1, "tokens_newer": 5 + record_tokens, "tokens_older": 2,
                      "count": 2, "tokens_of": 5 + record_tokens}
    window = window_env(policy, state)
    assert {node.fn for node in policy.aggregates if node in window} == {"count", "tokens_of"}


def test_floor_division_and_remainder_are_pythons():
    policy = model_policy("evict: window_spans // 2 == 1 and (window_spans + 3) % 4 == 0", Deployment())
    state, _ = run_actions(policy, (Append("message", 1), Append("message", 1), Append("message", 1)))
    env = span_env(policy, state, state.span(0))
    from prunecheck.spec.evaluate import evaluate
    assert evaluate(policy.evict, env) is False  # 3 // 2 == 1, but (3 + 3) % 4 == 2
    assert evaluate(policy.evict.left.left, env) == Fraction(1)


@pytest.mark.parametrize("text, line, col, words", [
    ("evict: tokens // 0 > 1", 2, 18, ("right side of //", "whole number >= 1")),
    ("evict: tokens % window_spans == 0", 2, 17, ("right side of %", "literal")),
    ("evict: tokens / 2 // 3 > 1", 2, 15, ("left side of //", "whole number")),
    ("evict: recency % 2 == 0", 2, 8, ("left side of %",)),
    ("evict: count(position > 1) > 0", 2, 14, ("counted span's own attributes", "position")),
    ("evict: count(window_tokens > 1) > 0", 2, 14, ("own attributes", "window_tokens")),
    ("evict: count(tokens) > 0", 2, 14, ("must be a condition",)),
    ("evict: count(count(true) > 1) > 0", 2, 14, ("nested",)),
    ("evict: count_newer(true, true) > 0", 2, 8, ("exactly one argument",)),
    ("evict: true\nwhen: count_newer(true) > 0", 3, 7, ("window's aggregates", "count_newer")),
    ("evict: true\nuntil: count(true) <= 2", 3, 8, ("`until` cannot read an aggregate",)),
    ("evict: counts(true) > 0", 2, 8, ("unknown function", "count")),
])
def test_bad_uses_are_one_line_errors_at_their_place(text, line, col, words):
    err = policy_error(text)
    assert (err.line, err.col) == (line, col), str(err)
    assert all(word in err.message for word in words), str(err)


# The compaction's trigger from outside the window (SPEC §4g).
EVENT_POLICY = "evict: from_end >= 2\npairs: together\nwhen: event == 'overflow' or reported_tokens > 100"


def test_a_compaction_fires_on_the_hosts_event_or_its_reported_usage():
    policy = model_policy(EVENT_POLICY, DEPLOYMENTS[0])
    appends = (Append("message", 1), Append("message", 1), Append("message", 1))
    for fired, taken in ((Compact(), False), (Compact(event="overflow"), True), (Compact(event="other"), False),
                         (Compact(reported_tokens=100), False), (Compact(reported_tokens=101), True)):
        _state, transitions = run_actions(policy, appends + (fired,))
        assert bool(transitions[-1].evicted) is taken, fired
    assert not enabled(policy, State(), Compact(event="a\nb")) and not enabled(policy, State(), Compact(reported_tokens=-1))


def test_the_explicit_engine_fires_each_event_and_the_usages_around_the_constants():
    from prunecheck.spec.runtime import trigger_choices
    assert trigger_choices(model_policy(EVENT_POLICY, Deployment())) == tuple(
        (e, r) for e in ("", "overflow") for r in (0, 99, 100, 101))
    assert trigger_choices(model_policy("evict: true\nwhen: event != ''", Deployment())) == (("", 0), ("other", 0))
    assert trigger_choices(model_policy("evict: true", Deployment())) == (("", 0),)


def test_a_violation_shows_when_the_host_fired_the_compaction():
    from prunecheck.checker.check import check
    from prunecheck.checker.options import CheckOptions
    from conftest import BOUNDS
    policy = model_policy("evict: true\nwhen: event == 'overflow'", Deployment(records="window"))
    report = check(policy, CheckOptions(depth=4, spans=4, only=("C2",), **BOUNDS))
    (c2,) = report.results  # a compaction removes a record: only one fired on an overflow takes anything
    compactions = [a for a in c2.trace.actions if isinstance(a, Compact)]
    assert c2.verdict.name == "VIOLATED" and compactions and all(a.event == "overflow" for a in compactions)


def test_a_trace_with_events_is_written_and_read_back_as_itf():
    import json
    from prunecheck.checker.engines.replay import replay
    from prunecheck.checker.language.document import policy_document
    from prunecheck.checker.outputs.itf import actions_of, trace_document
    from support import assert_itf_py_reads_our_states
    policy = model_policy(EVENT_POLICY, DEPLOYMENTS[0])
    actions = (Append("message", 1), Append("message", 1), Append("message", 1), Compact(event="overflow"),
               Compact(None, (), "", 101))
    transitions = replay(policy, actions, 5)
    document = json.loads(json.dumps(trace_document(policy, policy_document(policy), transitions, {})))
    assert_itf_py_reads_our_states(policy, transitions, document)
    assert actions_of(document) == actions  # and prunecheck reads its own trace back, events and usage included


@pytest.mark.parametrize("text, line, col, words", [
    ("evict: event == 'overflow'", 2, 8, ("`event`", "read it in `when`", "`evict`")),
    ("evict: true\nkeep: reported_tokens > 3", 3, 7, ("reported_tokens", "`keep`")),
    ("evict: true\nuntil: reported_tokens > 3", 3, 8, ("`until`",)),
    ("evict: true\nwhen: event > 3", 3, 7, ("compared with a string",)),
    ("evict: true\nwhen: event == 3", 3, 16, ("compared with a string",)),
    ("evict: true\nwhen: reported_tokens == 'x'", 3, 23, ("cannot compare num",)),
])
def test_bad_uses_of_the_trigger_are_one_line_errors_at_their_place(text, line, col, words):
    err = policy_error(text)
    assert (err.line, err.col) == (line, col), str(err)
    assert all(word in err.message for word in words), str(err)


def test_the_explicit_engines_trigger_domain_is_named_and_read_back_from_a_cache():
    from prunecheck.checker.engines.explicit import domains_for
    from prunecheck.checker.outputs.reason_doc import ReasonFormatError, reason_from_json, reason_json
    from prunecheck.checker.outputs.reasons import domains_text
    from prunecheck.checker.result import Clause, Found, Method, Reason
    domains = domains_for(model_policy(EVENT_POLICY, Deployment()))
    assert ("'overflow', 101" in domains_text(domains) and domains.triggers
            and domains_for(model_policy("evict: true", Deployment())).triggers == ())
    reason = Reason((Clause(Method.EXPLICIT, Found.BOUND, depth=4, spans=4, states=9, domains=domains),))
    written = reason_json(reason)
    assert reason_from_json(written) == reason
    for forged in ([["a\nb", 1]], [["", -1]], [["", 1, 2]], "x"):
        doc = {**written, "clauses": [{**written["clauses"][0],
                                       "domains": {**written["clauses"][0]["domains"], "triggers": forged}}]}
        with pytest.raises(ReasonFormatError):
            reason_from_json(doc)
