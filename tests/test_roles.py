"""The `role` span attribute end to end: runtime, forms, printers, engines and the deployment's record_role."""

import pytest

from prunecheck.checker.check import check
from prunecheck.checker.engines.certificate import Status, confirm_certificate
from prunecheck.checker.engines.explicit import domains_for
from prunecheck.checker.engines.replay import confirm
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.language.printer import policy_python, policy_yaml
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.outputs.itf import actions_of, itf_states
from prunecheck.checker.result import Verdict
from prunecheck.spec.policy import ROLES, Deployment
from prunecheck.spec.runtime import ActionRefused, Append, Compact, Edit, State, Undo, candidates, span_env, step
from prunecheck.spec.actions import action_text

from conftest import BOUNDS, HOUR, RLIMIT
from support import policy_error, run_actions

CLEAR_OLD = "name: clear-old-tool-results\nevict: role == 'tool_result' and age > 2\n"
CLEAR_ALL = "name: clear-tool-results\nevict: role == 'tool_result'\n"


def _policy(text, **deployment):
    return parse_policy_text(text, "p.yaml", Deployment(**deployment))


@pytest.mark.parametrize("record_role", ROLES)
def test_roles_are_set_when_written_and_never_changed(record_role):
    policy = _policy("name: t\nevict: role == 'system'\n", records="window", rationale="window",
                     record_role=record_role)
    state, _ = run_actions(policy, [Append("message", 1, "assistant"), Append("diff", 2), Edit(0, "destroy"),
                             Undo(2), Edit(0, "transform")])
    assert [s.role for s in state.spans] == ["assistant", "user"] + [record_role] * 4
    assert span_env(policy, state, state.span(0))["role"] == "assistant"
    assert set(candidates(policy, state)) == ({2, 3, 4, 5} if record_role == "system" else set())


def test_an_append_of_an_unknown_role_is_refused_and_the_default_role_is_not_written():
    policy = _policy("name: t\nevict: false\n")
    with pytest.raises(ActionRefused):
        step(policy, State(), Append("message", 1, "robot"))
    assert action_text(Append("message", 1)) == "append('message', 1)"
    assert action_text(Append("message", 1, "tool_call")) == "append('message', 1, role='tool_call')"


def test_an_itf_trace_keeps_the_roles_and_reads_them_back():
    policy = _policy(CLEAR_ALL, records="window")
    actions = (Append("message", 1, "tool_call"), Append("message", 1), Edit(1, "transform"), Compact())
    _, transitions = run_actions(policy, actions)
    states = itf_states(policy, transitions)
    # the compaction's ledger entry (evidence: on, SPEC §6d) has `record_role`, as an edit's rationale does
    assert [s["role"] for s in states[-1]["spans"]] == ["tool_call", "user"] + ["tool_result"] * 3
    assert actions_of({"states": states}) == actions


@pytest.mark.parametrize("printer, name", [(policy_yaml, "p.yaml"), (policy_python, "p.py")])
def test_role_comparisons_and_record_role_round_trip_through_both_printers(printer, name):
    text = ("name: t\nevict: role in ['tool_result', 'tool_call'] and not (role == 'system')\n"
            "rank: 0 if role != 'user' else tokens\nbudget: 3\ndeployment:\n  record_role: assistant\n")
    policy = parse_policy_text(text, "p.yaml")
    again = parse_policy_text(printer(policy), name)
    assert (again.evict, again.rank, again.deployment) == (policy.evict, policy.rank, policy.deployment)
    assert again.deployment.record_role == "assistant"


@pytest.mark.parametrize("text, words", [
    ("evict: role == 'message'", "'message' is not a role"),
    ("evict: role == kind", "role"),
    ("evict: role > 1", "role"),
    ("evict: true\ndeployment:\n  record_role: robot", "record_role"),
])
def test_role_type_errors_are_one_line_policy_errors(text, words):
    assert words in str(policy_error(text))


def test_the_explicit_engine_appends_the_named_roles_and_one_other():
    # and, under tool_calls: on (the default), a tool call and a tool result for every policy, role-blind or not,
    # since T1 applies to every policy whose agent calls tools (docs/decisions/0033)
    assert domains_for(_policy(CLEAR_ALL)).roles == ("tool_result", "user", "tool_call")
    assert domains_for(_policy("name: t\nevict: role in ['user', 'system']\n")).roles == (
        "user", "system", "assistant", "tool_call", "tool_result")
    assert domains_for(_policy("name: t\nevict: age > 1\n")).roles == ("user", "tool_call", "tool_result")
    # An agent that calls no tools: only the named roles and one other.
    assert domains_for(_policy("name: t\nevict: age > 1\n", tool_calls="off")).roles == ("user",)
    assert domains_for(_policy(CLEAR_ALL, tool_calls="off")).roles == ("tool_result", "user")


def test_clearing_old_tool_results_catches_records_that_are_tool_results():
    policy = _policy(CLEAR_OLD, records="window", record_role="tool_result")
    (result,) = check(policy, CheckOptions(depth=4, spans=3, only=("C1",), **BOUNDS)).results
    assert result.verdict is Verdict.VIOLATED
    confirm(policy, result.trace.actions, "C1", result.trace.spans)


def test_clearing_tool_results_is_safe_when_records_have_another_role():
    policy = _policy(CLEAR_ALL, records="window", record_role="system")
    (result,) = check(policy, CheckOptions(depth=4, spans=3, only=("C1",), **BOUNDS)).results
    assert result.verdict is Verdict.HOLDS
    recheck = confirm_certificate(result.certificate, policy, "C1", timeout_ms=int(HOUR * 1000), rlimit=RLIMIT)
    assert recheck.status is Status.CONFIRMED
