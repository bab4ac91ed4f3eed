"""Aggregates over span subsets (spec/SPEC.md §1e) and whole-number arithmetic (§1d): parsing, the runtime's values,
the unrolled and the pair model against the runtime, and both engines, for each construct and every pair of them."""

import itertools
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings

from prunecheck.spec.policy import AGGREGATES, WHOLE_OPS, Deployment
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
    "when": None,  # the stage's trigger on a window aggregate
}
WHEN = "when: count(role != 'user') >= 1 and tokens_of(true) % 2 == 0"


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
    """The policy text of a triple: the first condition or the second selects, the third keeps; the trigger when
    `when` is among them."""
    conds = [CONSTRUCTS[name] for name in block if name != "when"]
    lines = [f"evict: {' or '.join(conds[:2])}" if len(conds) > 1 else f"evict: {conds[0]}"]
    if len(conds) > 2:
        lines.append(f"keep: {conds[2]}")
    if "when" in block:
        lines.append(WHEN)
    return "\n".join(lines)


BLOCKS = blocks()
DEPLOYMENTS = (Deployment(records="window", rationale="window", pins="self", audit="policy"),
               Deployment(records="window", evicted="logged", evidence="off"))


def test_every_pair_of_constructs_is_in_a_block():
    pairs = {frozenset(p) for b in BLOCKS for p in itertools.combinations(b, 2)}
    assert pairs == {frozenset(p) for p in itertools.combinations(CONSTRUCTS, 2)}
    assert len(BLOCKS) <= 14
    texts = "\n".join(block_policy(b) for b in BLOCKS) + "\n".join(AGGREGATE_POLICIES)
    assert all(f"{fn}(" in texts for fn in AGGREGATES) and all(f" {op} " in texts for op in WHOLE_OPS)


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
    for k, deployment in enumerate(DEPLOYMENTS):
        policy = model_policy(block_policy(block), deployment)
        for seed in range(2):
            actions = walk(policy, 100 * k + seed)
            for free_policy in (False, True):
                assert check_projection(policy, actions, free_policy, batched=True,
                                        context=f"{block} seed {seed}: ") > 0


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
@pytest.mark.parametrize("index", range(len(BLOCKS) + len(AGGREGATE_POLICIES)))
def test_both_engines_agree_on_every_pair_of_constructs(index):
    text = (list(map(block_policy, BLOCKS)) + AGGREGATE_POLICIES)[index]
    engines_agree(model_policy(text, DEPLOYMENTS[index % 2]))


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
