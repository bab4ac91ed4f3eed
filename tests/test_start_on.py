"""Role boundaries: the stage key `start_on` (spec/SPEC.md §4b) in every layer, and AutoGen's middle-out order."""

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings

from prunecheck.checker.check import check
from prunecheck.checker.commands.policydiff import equivalence
from prunecheck.checker.engines.certificate import Status, confirm_certificate
from prunecheck.checker.engines.explicit import role_representatives
from prunecheck.checker.engines.replay import confirm, replay
from prunecheck.checker.findings.explain import cause_of
from prunecheck.checker.language.document import policy_document, policy_hash
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.language.policy_schema import policy_schema
from prunecheck.checker.language.printer import policy_python, policy_yaml
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.result import Verdict
from prunecheck.spec.conditions import applicable, violations
from prunecheck.spec.policy import ROLES, Deployment
from prunecheck.spec.runtime import Append, Compact, Edit, State, step, window_in_order
from prunecheck.symbolic.parametric import PairModel

from conftest import BOUNDS, HOUR, RLIMIT
from support import START_ON, agree, cli_error, engines_agree, model_policy, policy_error, runs

SYSTEM, USER, ASSISTANT = (Append("message", 1, role) for role in ("system", "user", "assistant"))
CALL, RESULT = Append("message", 1, "tool_call"), Append("message", 1, "tool_result")
# A chat that starts mid-turn: system prompt, an assistant reply, a tool call and its result, then a user turn.
CHAT = (SYSTEM, ASSISTANT, CALL, RESULT, USER, ASSISTANT)
WINDOW = Deployment(records="window", rationale="window")


def _policy(text, deployment=Deployment()):
    return model_policy(text, deployment)


def _last(policy, actions):
    state, transition = State(), None
    for action in actions:
        transition = step(policy, state, action)
        state = transition.after
    return transition


def _compacted(text, actions=CHAT, compact=Compact()):
    return _last(_policy(text), actions + (compact,))


def test_the_leading_spans_left_up_to_the_first_user_span_are_taken_too():
    # The walk takes #0 (position 0); of what it leaves, #1-#3 come before the first user span #4.
    assert _compacted("evict: position < 1\nstart_on: user").evicted == {0, 1, 2, 3}
    assert _compacted("evict: position < 1").evicted == {0}


def test_start_on_another_role_stops_at_that_role():
    assert _compacted("evict: position < 1\nstart_on: assistant").evicted == {0}
    assert _compacted("evict: position < 2\nstart_on: assistant").evicted == {0, 1, 2, 3, 4}


def test_kept_spans_are_neither_taken_nor_a_boundary():
    # The kept system prompt stays in front; a kept user span does not stop the scan either.
    assert _compacted("evict: false\nkeep: role == 'system'\nstart_on: user").evicted == {1, 2, 3}
    assert _compacted("evict: false\nkeep: role in ['system', 'user']\nstart_on: user").evicted == {1, 2, 3, 5}


def test_without_a_span_of_the_role_everything_left_is_taken():
    actions = (SYSTEM, ASSISTANT, CALL, RESULT)
    assert _compacted("evict: false\nkeep: position < 1\nstart_on: user", actions).evicted == {1, 2, 3}
    assert _compacted("evict: false\nstart_on: user", actions).after.window_tokens() == 0


def test_a_false_trigger_takes_nothing_and_a_true_one_runs_the_rule():
    assert _compacted("evict: false\nwhen: window_spans > 6\nstart_on: user").evicted == frozenset()
    assert _compacted("evict: false\nwhen: window_spans > 5\nstart_on: user").evicted == {0, 1, 2, 3}


def test_start_on_overshoots_the_target():
    # The walk stops after #0 (5 spans left, the target holds); start_on then takes #1-#3 and leaves 2 spans.
    last = _compacted("evict: true\nuntil: window_spans <= 5\nstart_on: user")
    assert last.evicted == {0, 1, 2, 3} and len(window_in_order(last.after)) == 2


def test_the_pair_closure_runs_after_start_on():
    # start_on: tool_result takes #0-#2 and stops at the result #3, orphaning it; together takes it with its call.
    apart, together = "evict: false\nstart_on: tool_result", "evict: false\nstart_on: tool_result\npairs: together"
    assert _compacted(apart).evicted == {0, 1, 2} and "T1" in violations(_policy(apart), _compacted(apart))
    assert _compacted(together).evicted == {0, 1, 2, 3}
    assert "T1" not in violations(_policy(together), _compacted(together))


def test_a_masking_stage_masks_the_leading_spans_in_place():
    last = _compacted("evict: false\nstart_on: user\neffect: mask")
    assert last.evicted == {0, 1, 2, 3} and all(last.after.span(i).masked for i in range(4))
    assert len(window_in_order(last.after)) == 6


def test_start_on_reads_roles_so_t1_applies_and_the_domains_hold_every_role():
    policy, plain = _policy("evict: tokens >= 2\nstart_on: user"), _policy("evict: tokens >= 2")
    assert "T1" in applicable(policy) and "T1" in applicable(plain)  # T1 applies wherever the agent calls tools
    assert role_representatives(policy) == ROLES and role_representatives(plain) == ("user", "tool_call", "tool_result")
    assert PairModel(policy).roles and PairModel(policy).leads and not PairModel(policy, free_policy=True).leads
    assert not PairModel(plain).leads and PairModel(plain).action("a").lead is None


def test_start_on_at_its_default_leaves_the_repr_hash_and_document_as_they_were():
    plain, marked = _policy("evict: false"), _policy("evict: false\nstart_on: user")
    assert "start_on" not in repr(plain) and "start_on" not in policy_document(plain)
    assert policy_hash(plain) != policy_hash(marked) and policy_document(marked)["start_on"] == "user"


@pytest.mark.parametrize("printer, name", [(policy_yaml, "p.yaml"), (policy_python, "p.py"),
                                           (lambda p: json.dumps(policy_document(p)), "p.json")])
@pytest.mark.parametrize("text", START_ON)
def test_start_on_round_trips_through_every_form(printer, name, text):
    policy = _policy(text)
    assert parse_policy_text(printer(policy), name) == policy


def test_the_schema_lists_start_on_with_the_roles():
    assert policy_schema()["properties"]["start_on"]["enum"] == list(ROLES)


@pytest.mark.parametrize("text, name, at", [
    ("name: p\nevict: true\nstart_on: human\n", "p.yaml", ":3:11:"),
    ("name: p\nevict: true\nstart_on: [user]\n", "p.yaml", ":3:11:"),
    ('{"name": "p", "evict": true, "start_on": "ai"}', "p.json", ":1:42:"),
    ('NAME = "p"\nSTART_ON = "human"\ndef evict(span, window):\n    return True\n', "p.py", ":2:12:"),
])
def test_a_bad_start_on_is_one_located_line_and_exit_2(tmp_path, text, name, at):
    assert "start_on" in cli_error(tmp_path / name, text, at).lower()


def test_a_misspelt_role_gets_a_suggestion():
    assert "did you mean" in policy_error("evict: true\nstart_on: usr").message


def test_policies_that_differ_only_in_start_on_are_not_proved_equivalent():
    result = equivalence(_policy("evict: false"), _policy("evict: false\nstart_on: user"), HOUR, RLIMIT)
    assert not result.proved and "start_on" in result.reason


# Runs of at most 5 spans (support.N slots) that meet each part of the rule: a boundary after the walk, a kept span,
# an edit's record and rationale in the window, a target with the pair closure, a ranked masking walk.
TARGETED = [
    (START_ON[0], (ASSISTANT, CALL, RESULT, USER, Compact(), Append("message", 2), Compact(1))),
    (START_ON[1], (SYSTEM, ASSISTANT, Edit(1, "transform"), USER, Compact())),
    (START_ON[2], (USER, CALL, RESULT, ASSISTANT, USER, Compact())),
    (START_ON[3], (ASSISTANT, Append("message", 3, "tool_call"), RESULT, USER, Compact(), Compact(2))),
    (START_ON[4], (USER, CALL, RESULT, ASSISTANT, Compact())),
]


@pytest.mark.parametrize("text, actions", TARGETED)
# The runs fill support.N slots: they state the first seed's deployment, whose compactions write no ledger entry.
@pytest.mark.parametrize("deployment", [Deployment(evidence="off"), replace(WINDOW, evidence="off")])
def test_the_unrolled_model_takes_what_the_runtime_takes(text, actions, deployment):
    agree(_policy(text, deployment), actions, with_lemmas=False)


@settings(max_examples=12)
@given(runs(max_steps=6, policies=START_ON))
def test_the_unrolled_model_agrees_with_the_runtime_on_runs_of_start_on_policies(run):
    agree(*run, with_lemmas=False)


@pytest.mark.parametrize("text", [START_ON[0], START_ON[2], START_ON[4], "evict: tokens >= 2\nstart_on: user"])
def test_the_explicit_and_symbolic_engines_agree_on_start_on_policies(text):
    engines_agree(_policy(text, WINDOW))


def test_a_boundary_after_a_walk_that_splits_a_pair_violates_t1_with_a_replayed_trace():
    # The walk takes the 2-token call; the user span before its result stops start_on, so the result is orphaned.
    policy = _policy("evict: tokens >= 2\nstart_on: user")
    result = check(policy, CheckOptions(depth=4, spans=4, only=("T1",), **BOUNDS)).result("T1")  # 4: the ledger entry
    assert result.verdict is Verdict.VIOLATED
    confirm(policy, result.trace.actions, "T1", result.trace.spans)


def test_start_on_names_itself_where_it_took_a_record():
    policy = _policy("evict: false\nstart_on: user", WINDOW)
    actions = (ASSISTANT, Edit(0, "transform"), USER, Compact())
    transitions = replay(policy, actions, 5)
    assert "C2" in violations(policy, transitions[-1])
    assert any(p.text == "start_on: user" for p in cause_of(policy, transitions, "C2").points)


def test_a_boundary_alone_never_splits_a_pair_proved_with_a_certificate_cvc5_confirms():
    # Nothing is selected: start_on takes the leading non-user spans, and a call's result always follows it.
    policy = _policy("evict: false\nwhen: window_spans > 3\nstart_on: user")
    result = check(policy, CheckOptions(depth=4, spans=4, only=("T1",), **BOUNDS)).result("T1")  # 4: the ledger entry
    assert result.verdict is Verdict.HOLDS and json.loads(result.certificate)["free_policy"] is False
    recheck = confirm_certificate(result.certificate, policy, "T1", timeout_ms=int(HOUR * 1000), rlimit=RLIMIT)
    assert recheck.status is Status.CONFIRMED


# AutoGen's TokenLimitedChatCompletionContext pops the message at len(messages) // 2 of the current list while the
# count is over the limit (docs/frameworks/autogen.md §3): a rank over positions says that order, with the budget as
# the limit.
EXACT_MIDDLE = "abs(4 * position + 1 - 2 * window_spans)"
BRIEF_MIDDLE = "abs(2 * position + 1 - window_spans)"


def _autogen_removes(tokens, limit) -> set:
    messages, removed = list(range(len(tokens))), set()
    while sum(tokens[i] for i in messages) > limit and messages:
        removed.add(messages.pop(len(messages) // 2))
    return removed


def _middle_out(rank, tokens, limit):
    policy = _policy(f"evict: true\nrank: {rank}\nbudget: {limit}")
    return _last(policy, tuple(Append("message", t) for t in tokens) + (Compact(),)).evicted


@pytest.mark.parametrize("count", range(1, 9))
def test_a_position_rank_takes_exactly_what_autogen_pops_from_the_middle(count):
    tokens = [1 + (3 * i) % 4 for i in range(count)]
    for limit in range(1, sum(tokens) + 1):
        assert _middle_out(EXACT_MIDDLE, tokens, limit) == _autogen_removes(tokens, limit), (tokens, limit)


@pytest.mark.parametrize("count", range(1, 9))
def test_the_simpler_rank_takes_a_middle_block_first(count):
    for limit in range(1, count):
        taken = sorted(_middle_out(BRIEF_MIDDLE, [1] * count, limit))
        assert len(taken) == count - limit and taken == list(range(taken[0], taken[-1] + 1))
        assert taken[0] <= (count - 1) // 2 <= taken[-1]
