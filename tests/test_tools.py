"""Tool names and tags (spec/SPEC.md 1c) end to end: runtime, guard, forms, type errors, both engines, proofs."""

import io
import json
import re

import pytest
from hypothesis import given, settings

from prunecheck.checker.cli import main
from prunecheck.checker.commands import policydiff
from prunecheck.checker.check import check
from prunecheck.checker.engines.certificate import Status, confirm_certificate
from prunecheck.checker.engines.explicit import domains_for, explore
from prunecheck.checker.engines.replay import confirm
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.language.printer import policy_python, policy_yaml
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.outputs.itf import actions_of, itf_states, trace_document
from prunecheck.checker.outputs.reason_doc import ReasonFormatError, reason_from_json, reason_json
from prunecheck.checker.outputs.reasons import domains_text
from prunecheck.checker.result import Verdict
from prunecheck.spec.actions import action_text
from prunecheck.spec.errors import PolicySyntaxError, TraceFormatError
from prunecheck.spec.policy import Deployment, mentioned_names, name_code, name_of, unmentioned_name
from prunecheck.spec.runtime import ActionRefused, Append, Compact, Edit, State, Undo, candidates, span_env, step
from prunecheck.strategies import policy_json
from prunecheck.symbolic.model import Model

from conftest import BOUNDS, CLI_BOUNDS, HOUR, RLIMIT
from support import (NAMED, agree, assert_itf_py_reads_our_states, engines_agree, model_policy, policy_error,
                     run_actions, runs)

NOT_THE_EDIT_TOOL = "name: not-the-edit-tool\nevict: tool != 'edit'\n"


def _policy(text, **deployment):
    return parse_policy_text(text, "p.yaml", Deployment(**deployment))


def test_names_are_written_once_records_get_record_tool_and_policies_read_them():
    policy = _policy("name: t\nevict: tool == 'browse' or tag in ['agents_md']\n", records="window",
                     record_tool="edit")
    state, _ = run_actions(policy, [Append("message", 1, "tool_call", tool="browse"),
                             Append("message", 1, "tool_result", tool="browse", tag="big"),
                             Append("file_body", 2, tag="agents_md"), Edit(1, "destroy"), Undo(3)])
    assert [(s.tool, s.tag) for s in state.spans] == [("browse", ""), ("browse", "big"), ("", "agents_md"),
                                                      ("edit", ""), ("edit", "")]
    assert span_env(policy, state, state.span(1))["tool"] == "browse"
    assert set(candidates(policy, state)) == {0, 1, 2}


def test_a_tool_result_names_its_calls_tool_and_bad_names_are_refused():
    policy = _policy("name: t\nevict: false\n")
    call = step(policy, State(), Append("message", 1, "tool_call", tool="browse")).after
    with pytest.raises(ActionRefused, match="call's tool"):
        step(policy, call, Append("message", 1, "tool_result", tool="edit"))
    assert step(policy, call, Append("message", 1, "tool_result", tool="browse")).outcome == "ok"
    for bad in ("a\nb", "x" * 65, "\u202e", 3):
        with pytest.raises(ActionRefused):
            step(policy, State(), Append("message", 1, tag=bad))
    assert action_text(Append("message", 1)) == "append('message', 1)"
    assert action_text(Append("message", 1, tool="browse", tag="a")) == "append('message', 1, tool='browse', tag='a')"


def test_mentioned_names_and_the_one_unmentioned_name():
    policy = _policy("name: t\nevict: tool in ['b', 'a'] and 'x' != tag or tool == ''\n", record_tool="edit")
    assert mentioned_names(policy) == (("tool", ("", "a", "b", "edit")), ("tag", ("x",)))
    assert unmentioned_name(("a",)) == "" and unmentioned_name(("", "other")) == "other2"
    assert [name_code(("a", "b"), n) for n in ("a", "b", "zz")] == [1, 2, 0]
    assert [name_of(("a", "b"), k) for k in (0, 1, 2, 7)] == ["", "a", "b", ""]
    assert mentioned_names(_policy("name: t\nevict: age > 1\n", record_tool="edit")) == ()
    assert domains_for(policy).names == (("tool", ("", "a", "b", "edit", "other")), ("tag", ("", "x")))


def test_the_models_have_name_fields_only_for_a_policy_that_reads_them():
    plain = Model(_policy("name: t\nevict: age > 1\n", record_tool="edit"), 3)
    named = Model(_policy("name: t\nevict: tag == 'a'\n"), 3)
    assert "tool" not in plain.generic().fields and "tag" not in plain.generic().fields
    assert "tag" in named.generic().fields and "tool" not in named.generic().fields
    assert len(named.action(0).variables()) == len(plain.action(0).variables()) + 1


def test_excluding_the_edit_tool_proves_separation_when_records_carry_its_name():
    policy = _policy(NOT_THE_EDIT_TOOL, records="window", record_tool="edit")
    (result,) = check(policy, CheckOptions(depth=4, spans=3, only=("C1",), **BOUNDS)).results
    assert result.verdict is Verdict.HOLDS
    recheck = confirm_certificate(result.certificate, policy, "C1", timeout_ms=int(HOUR * 1000), rlimit=RLIMIT)
    assert recheck.status is Status.CONFIRMED


def test_excluding_the_edit_tool_is_violated_when_records_are_unnamed():
    policy = _policy(NOT_THE_EDIT_TOOL, records="window")
    (result,) = check(policy, CheckOptions(depth=4, spans=3, only=("C1",), **BOUNDS)).results
    assert result.verdict is Verdict.VIOLATED
    transitions = confirm(policy, result.trace.actions, "C1", result.trace.spans)
    assert transitions[-1].after.span(1).tool == ""


@pytest.mark.parametrize("text", NAMED[:3])
def test_the_explicit_and_symbolic_engines_agree_on_policies_reading_names(text):
    engines_agree(model_policy(text, Deployment(records="window", rationale="window", record_tool="edit")), depth=3)


def test_the_engines_agree_on_a_tool_pair_policy_with_unnamed_records():
    engines_agree(model_policy("evict: tool == 'browse' and role == 'tool_call'", Deployment()), depth=3, spans=3)


@settings(max_examples=15, deadline=None)
@given(runs(policies=NAMED, max_steps=6))
def test_the_unrolled_model_reaches_the_runtimes_states_on_runs_with_names(run):
    agree(*run, with_lemmas=False)


@pytest.mark.parametrize("text, words", [
    ("evict: tool == 3", "compared with a string"),
    ("evict: tool < 'a'", "can only be compared with a string"),
    ("evict: tool == tag", "compared with a string"),
    ("evict: tool", "can only be compared with a string"),
    ("evict: tag + 1 > 2", "can only be compared with a string"),
    ("evict: (tool if true else tag) == 'x'", "can only be compared with a string"),
    ("evict: role == 'browse'", "'browse' is not a role"),
    ("evict: tool == 'a\u200bb'", "printable"),
    ("evict: true\ndeployment:\n  record_tool: [1]", "record_tool"),
    ("evict: true\ndeployment:\n  record_tool: \"a\\tb\"", "printable"),
])
def test_type_errors_about_names_are_one_line_policy_errors(text, words):
    assert words in str(policy_error(text))


def test_a_type_error_about_names_exits_2_with_file_line_and_column(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("name: t\nevict: tool > 1\n")
    out, err = io.StringIO(), io.StringIO()
    assert main(["check", str(path)] + CLI_BOUNDS, out, err) == 2
    assert err.getvalue().count("\n") == 1 and f"{path}:2:8:" in err.getvalue()


ODD = ("", "it's", 'say "hi"', "日本語ツール", "🔧", "a" * 64, "yes", "1", "#x", "a: b", "مرحبا")


def _literal(name: str) -> str:
    return f'"{name}"' if "'" in name else f"'{name}'"


def _json_policy(evict: str, record_tool: str = "") -> str:
    """A JSON policy (its strings' escapes give the raw characters, whatever they are)."""
    deployment = {"deployment": {"record_tool": record_tool}} if record_tool else {}
    return json.dumps({"name": "t", "evict": evict, **deployment}, ensure_ascii=False)


@pytest.mark.parametrize("name", ODD)
@pytest.mark.parametrize("form, printer", [("p.yaml", policy_yaml), ("p.py", policy_python), ("p.json", policy_json)])
def test_names_round_trip_through_every_form(name, form, printer):
    text = _json_policy(f"tool == {_literal(name)} or {_literal(name)} != tag and tag not in ['a', {_literal(name)}]",
                        record_tool=name)
    policy = parse_policy_text(text, "p.json")
    assert mentioned_names(policy)[1] == ("tag", tuple(sorted({"a", name})))
    again = parse_policy_text(printer(policy), form)
    assert (again.evict, again.deployment, repr(again)) == (policy.evict, policy.deployment, repr(policy))


@pytest.mark.parametrize("name, words", [
    ("x" * 65, "64"), ("a\u202eb", "printable"), ("\x00", "printable"), ("\ud83d", "printable|surrogate"),
    ("a\u2028b", "printable"), ("'\"", "quote|closing")])
def test_hostile_names_are_refused_in_one_line(name, words):
    for text in (_json_policy(f"tag == {_literal(name)}"), _json_policy("true", record_tool=name)):
        with pytest.raises(PolicySyntaxError) as caught:
            parse_policy_text(text, "p.json")
        assert re.search(words, str(caught.value)) and "\n" not in str(caught.value)


def test_record_tool_is_left_out_of_the_repr_at_its_default():
    assert "record_tool" not in repr(Deployment()) and "record_tool" not in Deployment().as_dict()
    assert "record_tool='edit'" in repr(Deployment(record_tool="edit"))
    with pytest.raises(ValueError):
        Deployment(record_tool="a\nb")


def test_an_itf_trace_writes_names_only_when_set_and_reads_them_back():
    policy = _policy("name: t\nevict: tool == 'browse'\n", records="window", record_tool="edit")
    actions = (Append("message", 1, "tool_call", tool="browse"), Append("message", 1, "tool_result", tool="browse"),
               Append("message", 1, tag="x"), Edit(2, "transform"), Compact())
    _, transitions = run_actions(policy, actions)
    states = itf_states(policy, transitions)
    spans = states[-1]["spans"]
    # the compaction's ledger entry (evidence: on, SPEC §6d) is named `record_tool`, as an edit's rationale is
    assert [s.get("tool") for s in spans] == ["browse", "browse", None, "edit", "edit", "edit"]
    assert [s.get("tag") for s in spans] == [None, None, "x", None, None, None]
    assert actions_of({"states": states}) == actions
    states[1]["mbt::nondetPicks"]["tool"] = "a\u202eb"
    with pytest.raises(TraceFormatError):
        actions_of({"states": states})


@pytest.mark.parametrize("new, outcome", [("role == 'tool_call' and 'browse' == tool", "equivalent"),
                                          ("tool in ['browse', 'edit'] and role == 'tool_call'", "different")])
def test_diff_codes_both_policies_names_alike(tmp_path, new, outcome):
    old_path, new_path = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old_path.write_text("name: old\nevict: tool == 'browse' and role == 'tool_call'\n")
    new_path.write_text(f"name: new\nevict: {new}\n")
    out, err = io.StringIO(), io.StringIO()
    code = main(["diff", *CLI_BOUNDS, "--depth", "4", "--spans", "3", str(old_path), str(new_path)], out, err,
                extra_commands={"diff": (policydiff.add_parser, policydiff.run)})
    assert f"outcome: {outcome}" in out.getvalue() and err.getvalue() == "" and code in (0, 1)


def test_itf_py_reads_a_trace_whose_spans_have_names():
    policy = _policy("name: t\nevict: tool == 'browse'\n", records="window", record_tool="edit")
    _, transitions = run_actions(policy, (Append("message", 1, "tool_call", tool="browse"),
                                   Append("message", 1, "tool_result", tool="browse"), Append("message", 1, tag="x"),
                                   Edit(2, "transform"), Compact()))
    document = json.loads(json.dumps(trace_document(policy, {}, transitions, {})))
    assert_itf_py_reads_our_states(policy, transitions, document)


def test_the_explicit_engines_name_domains_survive_a_reason_document():
    policy = _policy("name: t\nevict: tool == 'browse' and tag != 'a b'\n", records="window", record_tool="edit")
    (result,) = explore(policy, 2, 3, ["C1"])
    doc = json.loads(json.dumps(reason_json(result.reason)))
    assert reason_from_json(doc) == result.reason
    assert "tools {'', 'browse', 'edit'}, tags {'', 'a b'}" in domains_text(result.reason.clauses[0].domains)
    doc["clauses"][0]["domains"]["names"]["tag"] = ["a\nb"]
    with pytest.raises(ReasonFormatError):
        reason_from_json(doc)
