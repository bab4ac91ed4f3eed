"""The compaction stage (keep, when, until, order): forms, runtime walk, unrolled and pair models, engines."""

import pytest
from hypothesis import given, settings

from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import Deployment
from prunecheck.spec.runtime import Append, Compact, State, step

from support import STAGE_POLICIES, agree, at, model_policy, runs

def _policy(text, **deployment):
    return parse_policy_text(f"name: t\n{text}\n", "t.yaml", Deployment(**deployment))


def _state(*tokens, roles=None):
    """A window of appended message spans with these token counts (and roles), oldest first."""
    state = State()
    for i, count in enumerate(tokens):
        state = step(_policy("evict: false"), state, Append("message", count, (roles or {}).get(i, "user"))).after
    return state


def _taken(text, state, host=None):
    transition = step(_policy(text), state, Compact(host))
    return sorted(transition.evicted), sorted(transition.truncated)


# --------------------------------------------------------------------------- runtime


def test_a_false_trigger_takes_nothing_but_the_host_still_truncates():
    state = _state(3, 3, 3)
    assert _taken("evict: true\nwhen: window_tokens > 9", state) == ([], [])
    assert _taken("evict: true\nwhen: window_tokens > 9", state, host=4) == ([], [0, 1])
    assert _taken("evict: true\nwhen: window_tokens > 8", state) == ([0, 1, 2], [])


def test_until_stops_the_walk_at_the_target():
    state = _state(3, 3, 3, 3)
    assert _taken("evict: true\nuntil: window_tokens <= 6", state) == ([0, 1], [])
    assert _taken("evict: true\nuntil: window_spans <= 3", state) == ([0], [])
    assert _taken("evict: true\nuntil: window_tokens <= 12", state) == ([], [])


def test_newest_order_walks_from_the_end():
    state = _state(1, 2, 3, 4)
    assert _taken("evict: true\nuntil: window_tokens <= 5\norder: newest", state) == ([2, 3], [])
    assert _taken("evict: true\nuntil: window_tokens <= 5", state) == ([0, 1, 2], [])


def test_keep_protects_spans_from_the_stage_but_not_from_the_host():
    state = _state(2, 2, 2, roles={0: "system"})
    text = "evict: true\nkeep: role == 'system'"
    assert _taken(text, state) == ([1, 2], [])
    assert _taken("evict: true\nkeep: role == 'system'\nuntil: window_tokens <= 1", state, host=1) == ([1, 2], [0])


def test_legacy_ranked_walk_is_the_target_window_tokens_within_budget():
    state = _state(1, 2, 3, 4)
    legacy = _taken("evict: true\nrank: 0 - tokens\nbudget: 4", state)
    explicit = _taken("evict: true\nrank: 0 - tokens\nbudget: 4\nuntil: window_tokens <= budget", state)
    assert legacy == explicit == ([2, 3], [])


def test_the_host_budget_truncates_what_the_walk_left():
    state = _state(3, 3, 3)
    assert _taken("evict: true\nuntil: window_tokens <= 6", state, host=2) == ([0], [1, 2])


# --------------------------------------------------------------------------- the unrolled model against the runtime


@settings(max_examples=30, deadline=None)
@given(runs(max_steps=7, policies=STAGE_POLICIES))
def test_model_and_runtime_agree_on_stage_policies(run):
    agree(*run, with_lemmas=False)


@pytest.mark.parametrize("text", STAGE_POLICIES)
def test_model_agrees_on_a_full_window_compaction(text):
    actions = (Append("message", 2), Append("message", 3, "system"), Append("tool_output", 1),
               Append("message", 2), Compact())
    agree(model_policy(text, Deployment()), actions, with_lemmas=False)
