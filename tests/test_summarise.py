"""effect: summarise (spec/SPEC.md 4d): the summary span, window order by place, in every layer."""

import json

import pytest
from hypothesis import given, settings, strategies as st

from prunecheck.checker.language.document import policy_document
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.language.printer import policy_python, policy_yaml
from prunecheck.checker.outputs.itf import itf_states
from prunecheck.spec.policy import Deployment
from prunecheck.spec.runtime import (
    ActionRefused, Append, Compact, Edit, State, Undo, enabled, positions, span_env, step,
)

from support import agree, policy_error

FOLD = "name: t\nevict: from_end >= 2\neffect: summarise\nplaceholder_tokens: 3\nsummary_role: system\n"


def _policy(text, **deployment):
    return parse_policy_text(text, "p.yaml", Deployment(**deployment) if deployment else None)


def _run(policy, actions, max_spans=None):
    state, transitions = State(), []
    for action in actions:
        transitions.append(step(policy, state, action, max_spans))
        state = transitions[-1].after
    return state, transitions


FOUR = tuple(Append("message", t) for t in (5, 6, 7, 8))


def test_the_summary_stands_at_the_oldest_taken_spans_place_and_folds_an_earlier_summary():
    policy = _policy(FOLD)
    state, transitions = _run(policy, FOUR + (Compact(),))
    summary = state.span(4)
    assert transitions[-1].evicted == {0, 1}
    assert (summary.kind, summary.role, summary.tokens, summary.place, summary.created) == ("summary", "system", 3, 0, 5)
    assert [s.id for s in state.spans if s.alive] == [2, 3, 4]
    assert positions(state, summary)["position"] == 0 and positions(state, state.span(3))["from_end"] == 0
    state, transitions = _run(policy, FOUR + (Compact(), Append("message", 2), Compact()))
    assert transitions[-1].evicted == {2, 4}  # the earlier summary, oldest in window order, is folded
    assert state.span(6).place == 0 and state.window_tokens() == 3 + 8 + 2
    assert [s.id for s in sorted((s for s in state.spans if s.alive), key=lambda s: s.place)] == [6, 3, 5]


def test_nothing_taken_writes_no_summary_and_a_full_window_refuses_only_a_compaction_that_would_write_one():
    policy = _policy(FOLD)
    state, transitions = _run(policy, FOUR[:2] + (Compact(),))
    assert not transitions[-1].evicted and len(state.spans) == 2
    full, _ = _run(policy, FOUR, max_spans=4)
    assert not enabled(policy, full, Compact(), 4) and enabled(policy, full, Compact(), 5)
    with pytest.raises(ActionRefused):
        step(policy, full, Compact(), 4)


def test_logged_and_destroyed_records_are_judged_as_for_evict():
    text = "name: t\nevict: kind == 'record'\neffect: summarise\n"
    actions = (Append("message", 3), Edit(0, "destroy"), Compact())
    destroyed, transitions = _run(_policy(text, records="window"), actions)
    assert not destroyed.span(1).alive and destroyed.span(3).kind == "summary" and destroyed.span(3).place == 1
    from prunecheck.spec.conditions import violations
    assert "C2" in violations(_policy(text, records="window"), transitions[-1])
    logged, transitions = _run(_policy(text, records="window", evicted="logged"), actions + (Undo(1),))
    assert logged.span(1).namespace == "log" and transitions[-1].outcome == "reverted"


def test_window_order_is_place_order_for_order_newest_and_for_truncation():
    policy = _policy("name: t\nevict: kind == 'diff'\neffect: summarise\nplaceholder_tokens: 4\n")
    actions = (Append("message", 1), Append("diff", 2), Append("message", 3), Compact(), Compact(4))
    state, transitions = _run(policy, actions)
    # the summary (#3, 4 tokens) stands at place 1, so the host truncates #0 then the summary, and keeps #2
    assert transitions[-2].evicted == {1} and state.span(3).place == 1
    assert transitions[-1].truncated == {0, 3} and state.span(2).alive
    newest = _policy("name: t\nevict: kind != 'diff'\nuntil: window_spans <= 3\norder: newest\neffect: summarise\n")
    state, transitions = _run(newest, (Append("diff", 1), Append("message", 1), Append("message", 1),
                                       Append("diff", 1), Compact()))
    assert transitions[-1].evicted == {2} and state.span(4).place == 2
    assert span_env(newest, state, state.span(4))["from_end"] == 1


def test_place_is_quiet_where_it_is_the_id():
    policy = _policy(FOLD)
    state, transitions = _run(policy, FOUR + (Compact(),))
    assert "place" not in repr(state.span(0)) and "place=0" in repr(state.span(4))
    spans = itf_states(policy, transitions)[-1]["spans"]
    assert "place" not in spans[0] and spans[4]["place"] == {"#bigint": "0"}


AGREE = [
    (FOLD, {}, FOUR[:3] + (Compact(), Compact(4))),
    (FOLD.replace(">= 2", ">= 1"), {}, FOUR[:2] + (Compact(), Append("message", 2), Compact(3))),
    ("name: t\nevict: kind == 'record'\neffect: summarise\n", {"records": "window"},
     (Append("message", 3), Edit(0, "destroy"), Compact(), Undo(1))),
    ("name: t\nevict: kind != 'diff'\nuntil: window_spans <= 2\norder: newest\neffect: summarise\n"
     "placeholder_tokens: 2", {"evicted": "logged"},
     (Append("diff", 1), Append("message", 1), Append("message", 2), Compact(), Compact(2))),
    ("name: t\nevict: true\nrank: 0\nbudget: 4\neffect: summarise\n", {},
     (Append("message", 2), Append("message", 2), Append("message", 2), Compact(), Compact(1))),
    ("name: t\nevict: role == 'tool_result' or kind == 'summary'\npairs: together\neffect: summarise\n"
     "summary_role: assistant", {},
     (Append("message", 1, "tool_call"), Append("message", 2, "tool_result"), Compact(), Compact())),
]


@pytest.mark.parametrize("text, deployment, actions", AGREE)
def test_the_model_agrees_with_the_runtime_on_summaries(text, deployment, actions):
    agree(_policy(text, **deployment), actions, with_lemmas=False)
