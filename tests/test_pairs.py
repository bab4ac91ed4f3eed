"""Tool-call pairs: the append guard of a tool result, `pairs: together` and condition T1 (spec/SPEC.md §6c)."""

import io
import json
from dataclasses import replace

import pytest
import z3

from prunecheck.checker.check import check, clear_caches
from prunecheck.checker.engines.certificate_model import free_shape
from prunecheck.checker.cli import main
from prunecheck.checker.commands.policydiff import equivalence
from prunecheck.checker.engines.certificate import Status, confirm_certificate
from prunecheck.checker.engines.replay import confirm
from prunecheck.checker.language.document import policy_document, policy_hash
from prunecheck.checker.language.loader import load_policy, parse_policy_text
from prunecheck.checker.language.printer import policy_python, policy_yaml
from prunecheck.checker.options import CheckOptions, Engine
from prunecheck.checker.result import Verdict
from prunecheck.spec.conditions import applicable, split_pairs, violations
from prunecheck.spec.runtime import ActionRefused, Append, Compact, Edit, State, step
from prunecheck.symbolic.model import ACT, Model, R

from support import cli_error, run_actions, run_cli, unroll
from conftest import BOUNDS, CLI_BOUNDS, EXAMPLES, HOUR, RLIMIT

DROP_RESULTS = "name: p\nevict: role == 'tool_result'\n"
TOGETHER = DROP_RESULTS + "pairs: together\n"
CALL, RESULT = Append("message", 1, "tool_call"), Append("message", 2, "tool_result")


def _run(policy, actions):
    return run_actions(policy, actions)[1]


@pytest.mark.parametrize("before", [
    (), (Append("message", 1),), (CALL, RESULT), (CALL, Compact()), (Append("message", 1, "assistant"),),
])
def test_a_tool_result_is_refused_unless_the_newest_span_is_a_live_tool_call(before):
    policy = parse_policy_text("name: p\nevict: role == 'tool_call'\n", "p.yaml")
    state = _run(policy, before)[-1].after if before else State()
    with pytest.raises(ActionRefused, match="tool result"):
        step(policy, state, RESULT)


def test_a_record_with_the_tool_call_role_is_no_call_to_answer():
    policy = parse_policy_text("name: p\nevict: false\ndeployment: {record_role: tool_call}\n", "p.yaml")
    after = _run(policy, (Append("message", 1), Edit(0, "transform")))[-1].after
    with pytest.raises(ActionRefused):
        step(policy, after, RESULT)
    assert _run(policy, (CALL, RESULT))[-1].after.span(1).role == "tool_result"


def _unrolled_enables(policy, actions) -> bool:
    solver, _ = unroll(Model(policy, 3), actions, lambda model, a, action: (
        a.act == ACT["append"], a.role == R[action.role], a.tokens == action.tokens))
    return solver.check() == z3.sat


def test_the_unrolled_model_guards_a_tool_result_as_the_runtime_does():
    policy = parse_policy_text(DROP_RESULTS, "p.yaml")
    got = [_unrolled_enables(policy, prefix + (RESULT,)) for prefix in ((), (Append("message", 1),), (CALL,))]
    assert got == [False, False, True]


def test_together_takes_the_partner_of_every_taken_span_after_the_ranked_walk():
    policy = parse_policy_text("name: p\nevict: true\nrank: 0 - tokens\nbudget: 3\npairs: together\n", "p.yaml")
    actions = (Append("message", 2, "tool_call"), Append("message", 2, "tool_result"), Append("message", 1), Compact())
    last = _run(policy, actions)[-1]
    # The walk stops after #0 (5 - 2 <= 3); the closure adds #1 and overshoots the target.
    assert last.evicted == {0, 1} and last.after.window_tokens() == 1
    apart = _run(parse_policy_text("name: p\nevict: true\nrank: 0 - tokens\nbudget: 3\n", "p.yaml"), actions)[-1]
    assert apart.evicted == {0} and "T1" not in violations(policy, last)


def test_a_role_reading_policy_that_splits_pairs_violates_t1_with_a_replayed_trace():
    policy = parse_policy_text(DROP_RESULTS, "p.yaml")
    result = check(policy, CheckOptions(depth=4, spans=3, only=("T1",), **BOUNDS)).result("T1")
    assert result.verdict is Verdict.VIOLATED
    assert [a.name for a in result.trace.actions] == ["append", "append", "compact"]
    confirm(policy, result.trace.actions, "T1", result.trace.spans)


def test_pairs_together_holds_t1_with_a_certificate_cvc5_confirms():
    policy = parse_policy_text(TOGETHER, "p.yaml")
    result = check(policy, CheckOptions(depth=4, spans=3, only=("T1",), **BOUNDS)).result("T1")
    assert result.verdict is Verdict.HOLDS and json.loads(result.certificate)["condition"] == "T1"
    recheck = confirm_certificate(result.certificate, policy, "T1", timeout_ms=int(HOUR * 1000), rlimit=RLIMIT)
    assert recheck.status is Status.CONFIRMED


def test_t1_is_proved_with_the_policy_when_its_selection_never_splits_a_pair():
    policy = parse_policy_text("name: p\nevict: role in ['tool_call', 'tool_result']\n", "p.yaml")
    result = check(policy, CheckOptions(depth=4, spans=3, only=("T1",), **BOUNDS)).result("T1")
    assert result.verdict is Verdict.HOLDS
    assert json.loads(result.certificate)["free_policy"] is False


@pytest.mark.parametrize("text, violated", [
    (DROP_RESULTS, True), (TOGETHER, False), ("name: p\nevict: role == 'tool_call' and age > 1\n", True),
    ("name: p\nevict: true\nrank: 0 - tokens\nbudget: 2\n", True),  # role-blind: the walk splits a pair
    ("name: p\nevict: true\nrank: 0 - tokens\nbudget: 2\npairs: together\n", False),
])
def test_the_explicit_and_symbolic_engines_agree_on_t1(text, violated):
    policy = parse_policy_text(text, "p.yaml")
    options = CheckOptions(depth=4, spans=4, only=("T1",), prove=False, **BOUNDS)
    symbolic = check(policy, options).results
    explicit = check(policy, CheckOptions(depth=4, spans=4, only=("T1",), engine=Engine.EXPLICIT)).results
    assert tuple(r.condition for r in symbolic) == tuple(r.condition for r in explicit) == ("T1",)
    for s, e in zip(symbolic, explicit):
        assert (s.verdict is Verdict.VIOLATED) == (e.verdict is Verdict.VIOLATED) == violated
        if violated:
            assert s.trace.length() == e.trace.length()


def test_t1_is_asked_of_every_example_and_of_no_policy_whose_agent_calls_no_tools():
    examples = sorted(p for p in EXAMPLES.iterdir() if p.suffix in (".yaml", ".json", ".py"))
    assert len(examples) == 11
    for path in examples:
        policy = load_policy(path)
        assert "T1" in applicable(policy)
        off = replace(policy, deployment=replace(policy.deployment, tool_calls="off"))
        assert "T1" not in applicable(off) and check(off, CheckOptions(only=("T1",), **BOUNDS)).results == ()


KEEP_NEWEST = "name: keep-newest\nevict: tokens_after >= 100\n"  # keep the newest messages within 100 tokens


def test_a_role_blind_keep_the_newest_within_n_tokens_splits_a_pair_and_the_report_says_it_cannot_tell_pairs(
        tmp_path):
    policy = parse_policy_text(KEEP_NEWEST, "p.yaml")
    (result,) = check(policy, CheckOptions(only=("T1",), **BOUNDS)).results
    assert result.verdict is Verdict.VIOLATED
    transitions = confirm(policy, result.trace.actions, "T1", result.trace.spans)
    assert split_pairs(transitions[-1]), result.trace.actions
    (tmp_path / "p.yaml").write_text(KEEP_NEWEST)
    code, out, _err = run_cli("check", str(tmp_path / "p.yaml"), "--only", "T1")
    assert code == 1 and "the policy cannot tell pairs apart" in out, out


def test_tool_calls_at_its_default_leaves_the_repr_and_the_document_as_they_were():
    policy = parse_policy_text(KEEP_NEWEST, "p.yaml")
    off = parse_policy_text(KEEP_NEWEST + "deployment: {tool_calls: 'off'}\n", "p.yaml")
    assert "tool_calls" not in repr(policy) and "tool_calls" not in policy_document(policy)["deployment"]
    assert policy_document(off)["deployment"]["tool_calls"] == "off" and "T1" not in applicable(off)


def test_pairs_at_its_default_leaves_the_repr_the_hash_and_the_document_as_they_were():
    plain, apart = (parse_policy_text(DROP_RESULTS + extra, "p.yaml") for extra in ("", "pairs: apart\n"))
    assert plain == apart and "pairs" not in repr(plain) and "pairs" not in policy_document(plain)
    together = parse_policy_text(TOGETHER, "p.yaml")
    assert policy_hash(together) != policy_hash(plain) and policy_document(together)["pairs"] == "together"


@pytest.mark.parametrize("printer, name", [(policy_yaml, "p.yaml"), (policy_python, "p.py"),
                                           (lambda p: json.dumps(policy_document(p)), "p.json")])
def test_pairs_round_trips_through_every_form(printer, name):
    policy = parse_policy_text(TOGETHER, "p.yaml")
    assert parse_policy_text(printer(policy), name) == policy


@pytest.mark.parametrize("text, name, at", [
    ("name: p\nevict: true\npairs: sometimes\n", "p.yaml", ":3:8:"),
    ("name: p\nevict: true\npairs: [together]\n", "p.yaml", ":3:8:"),
    ('NAME = "p"\nPAIRS = "sometimes"\ndef evict(span, window):\n    return True\n', "p.py", ":2:9:"),
])
def test_a_bad_pairs_value_is_one_located_line_and_exit_2(tmp_path, text, name, at):
    assert "pairs" in cli_error(tmp_path / name, text, at).lower()


def test_sarif_lists_the_t1_rule_only_when_the_agent_calls_tools(tmp_path):
    rules = {}
    for name, text in (("off.yaml", "name: p\nevict: false\ndeployment: {tool_calls: 'off'}\n"),
                       ("new.yaml", TOGETHER)):
        (tmp_path / name).write_text(text)
        out = io.StringIO()
        main(["check", str(tmp_path / name), "--format", "sarif", "--depth", "2", "--spans", "3", "--no-cache",
              "--trust-policy-deployment", *CLI_BOUNDS], out, io.StringIO())
        rules[name] = [r["id"] for r in json.loads(out.getvalue())["runs"][0]["tool"]["driver"]["rules"]]
    # M1, A1, J1: asked of every policy under evidence: on, the default (ADR 0035)
    assert rules == {"off.yaml": ["C1", "C2", "C3", "C4", "P1", "R1", "M1", "A1", "J1"],
                     "new.yaml": ["C1", "C2", "C3", "C4", "P1", "T1", "R1", "M1", "A1", "J1"]}


def test_host_truncation_never_counts_against_t1():
    policy = parse_policy_text('name: p\nevict: false\npairs: together\ndeployment: {host_truncation: "on"}\n', "p.yaml")
    last = _run(policy, (CALL, RESULT, Compact(2)))[-1]
    assert last.truncated == {0} and "T1" not in violations(policy, last)


def test_policies_that_differ_only_in_pairs_are_not_proved_equivalent():
    apart, together = parse_policy_text(DROP_RESULTS, "p.yaml"), parse_policy_text(TOGETHER, "p.yaml")
    result = equivalence(apart, together, HOUR, RLIMIT)
    assert not result.proved and "pairs differ" in result.reason


def test_a_cached_report_with_t1_is_verified_and_reused(tmp_path):
    (tmp_path / "policies").mkdir()
    texts = {"apart.yaml": DROP_RESULTS, "together.yaml": TOGETHER, "old.yaml": "name: o\nevict: false\n"}
    for name, text in texts.items():
        (tmp_path / "policies" / name).write_text(text)
    argv = ["check", str(tmp_path / "policies"), "--cache", str(tmp_path / "cache"), "--depth", "3", "--spans", "3",
            "--trust-policy-deployment", *CLI_BOUNDS]
    outputs = []
    for _ in range(2):
        out, err = io.StringIO(), io.StringIO()
        assert main(argv, out, err) == 1
        outputs.append(out.getvalue())
    assert "0 from the cache" in outputs[0] and "3 from the cache" in outputs[1] and "rejected" not in outputs[1]


def test_a_proof_with_the_policy_abstracted_is_shared_only_between_policies_with_the_same_free_model():
    # A masking policy's free pair model has no T1 (a mask splits no pair); reusing its proofs for a policy that
    # evicts once proved T1 for a stage that can stop between a call and its result.
    clear_caches()
    masking = parse_policy_text("name: m\nevict: true\neffect: mask\n", "m.yaml")
    check(masking, CheckOptions(depth=2, spans=3, only=("C2",), **BOUNDS))
    splitting = parse_policy_text("name: s\nevict: true\nkeep: role == 'system'\nwhen: window_spans > 3\n"
                                  "until: window_tokens <= 10\n", "s.yaml")
    (t1,) = check(splitting, CheckOptions(depth=3, spans=4, only=("T1",), **BOUNDS)).results
    assert t1.verdict is not Verdict.HOLDS
    assert free_shape(masking, 1.0) != free_shape(parse_policy_text("name: m\nevict: true\n", "m.yaml"), 1.0)


FALSE_PROOF = "tests/data/false_proofs/t1_mask_downgrade.yaml"


def test_a_downgraded_mask_that_moves_one_span_of_a_pair_violates_t1_on_the_runtime_and_the_pair_model():
    """Issue 27's false proof: the cited call moves to the log, its result is masked in place: the pair is split."""
    policy = load_policy(FALSE_PROOF)
    transitions = run_actions(policy, (Append("message", 1, "tool_call"), Append("message", 1, "tool_result"),
                                       Compact(cites=(0,))))[1]
    assert "T1" in violations(policy, transitions[-1])
    code, out, err = run_cli("check", FALSE_PROOF, "--only", "T1")
    assert (code, err) == (1, "") and "T1  violated    3" in out and "replayed on the runtime" in out, out
    assert "moves tool call #0 out of the window" in out or "moves tool result #1 out of the window" in out, out


def test_the_certificate_of_the_false_t1_proof_is_rejected(tmp_path):
    """The certificate the unsound pair term let cvc5 confirm (kept as it was written) is no longer the policy's."""
    written = FALSE_PROOF.replace(".yaml", ".T1.cert.json")
    code, out, _err = run_cli("certify", written, "--policy", FALSE_PROOF)
    # its embedded policy omits destroy_record, then verbatim by default; now it means `id`, another hash (ADR 0035)
    assert code == 1 and "rejected (policy_hash" in out, out
    with open(written, encoding="utf-8") as file:
        document = json.load(file)
    document["policy"]["deployment"]["destroy_record"] = "verbatim"  # what it meant: its hash is the one it carries
    (tmp_path / "cert.json").write_text(json.dumps(document))
    (tmp_path / "verbatim.yaml").write_text("destroy_record: verbatim\n")
    code, out, _err = run_cli("certify", str(tmp_path / "cert.json"), "--policy", FALSE_PROOF,
                              "--deployment", str(tmp_path / "verbatim.yaml"))
    assert code == 1 and "rejected (model_smt2" in out, out
