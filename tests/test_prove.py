"""The unbounded engine: proofs where expected, never a proof of something violated, certificates that resist tampering."""

import io
import json

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from prunecheck import cli
from prunecheck.checker.engines.bmc import check_bounded
from prunecheck.checker.engines.certificate import Status, recheck
from prunecheck.checker.engines.certificate_model import Encoding
from prunecheck.checker.check import check
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.language.document import policy_document, policy_hash
from prunecheck.checker.language.loader import load_policy, parse_policy_text
from prunecheck.checker.engines.prove import prove
from prunecheck.checker.result import Verdict
from prunecheck.spec.conditions import CONDITIONS, applicable
from prunecheck.checker.outputs.reasons import reason_text

from conftest import BOUNDS, CLI_BOUNDS, HOUR, RLIMIT
from policy_table import EXAMPLES, example_table
from support import POLICIES, deployments, extended_deployments, model_policy

ROWS = example_table()


def _prove(policy, condition):
    return prove(policy, condition, policy_document(policy), policy_hash(policy), **BOUNDS)


@pytest.mark.parametrize("name,path,text,expected", ROWS, ids=[r[0] for r in ROWS])
def test_prover_proves_exactly_the_conditions_expected_to_hold(name, path, text, expected):
    policy = load_policy(path) if path is not None else parse_policy_text(text, name)
    for condition, want in expected.items():
        result = _prove(policy, condition)
        if want == "holds":
            assert result.verdict == Verdict.HOLDS, f"{name} {condition}: {reason_text(result.reason)}"
            assert "cvc5" in reason_text(result.reason) and result.certificate
        else:
            assert result.verdict == Verdict.UNKNOWN, f"{name} {condition} is violated but was proved"


@pytest.mark.parametrize("name,path,text,expected", ROWS, ids=[r[0] for r in ROWS])
def test_check_combines_both_engines(name, path, text, expected):
    policy = load_policy(path) if path is not None else parse_policy_text(text, name)
    report = check(policy, CheckOptions(**BOUNDS))
    for condition, want in expected.items():
        got = report.result(condition).verdict
        assert str(got) == want, f"{name} {condition}: {reason_text(report.result(condition).reason)}"


@settings(max_examples=12)
@given(st.sampled_from(POLICIES), deployments, st.sampled_from(CONDITIONS))
def test_no_condition_is_both_proved_and_refuted(text, deployment, condition):
    _proved_and_refuted(text, deployment, condition)


@pytest.mark.slow
@settings(max_examples=100)
@given(st.sampled_from(POLICIES), extended_deployments, st.sampled_from(CONDITIONS))
def test_no_condition_is_both_proved_and_refuted_under_every_setting(text, deployment, condition):
    _proved_and_refuted(text, deployment, condition)


def _proved_and_refuted(text, deployment, condition):
    policy = model_policy(text, deployment)
    assume(condition in applicable(policy))
    proof = _prove(policy, condition)
    if proof.verdict != Verdict.HOLDS:
        # Nothing to contradict. The bounded search is asked only of proofs: its canonical trace of a violation the
        # prover did not claim could cost z3 many 100-million-rlimit queries (the ranked, budgeted policy
        # `kind in ['tool_output', 'record', 'rationale'] or tokens >= 3` under records and rationale in the window,
        # self pins, a self-certified audit, blind undo, destroy_record: id, P1, which the prover leaves unknown: after
        # the satisfiable query, the least-model queries that make its trace canonical ran for minutes each).
        return
    (bounded,) = check_bounded(policy, depth=7, spans=5, conditions=[condition], **BOUNDS)
    assert not (proof.verdict == Verdict.HOLDS and bounded.verdict == Verdict.VIOLATED), \
        f"{condition} proved yet violated by {bounded.trace}"


def _recheck(document, encoding):
    return recheck(document, encoding, int(HOUR * 1000), RLIMIT)


def _certificate(name="host_pins_records.yaml", condition="C1"):
    policy = load_policy(EXAMPLES / name)
    result = _prove(policy, condition)
    assert result.verdict == Verdict.HOLDS
    return policy, json.loads(result.certificate)


def test_an_untouched_certificate_is_confirmed_by_cvc5():
    policy, document = _certificate()
    check = _recheck(document, Encoding(policy, "C1", document["free_policy"]))
    assert check.status is Status.CONFIRMED and [o.cvc5 for o in check.obligations] == ["unsat"] * 3


@pytest.mark.parametrize("tamper,failing", [
    (lambda inv: inv.replace(") Bool ", ") Bool (and false ", 1) + ")", "initiation"),
    (lambda inv: inv[: inv.index(") Bool ") + 7] + "true)\n", "safety"),
    (lambda inv: inv.replace("(>= clock@p 0)", "(>= clock@p 1)", 1), "initiation"),
])
def test_an_altered_invariant_is_rejected(tamper, failing):
    policy, document = _certificate()
    document["invariant_smt2"] = tamper(document["invariant_smt2"])
    check = _recheck(document, Encoding(policy, "C1", document["free_policy"]))
    assert check.status is Status.REFUTED
    assert failing in check.reason


def test_a_certificate_for_another_model_is_rejected():
    policy, document = _certificate()
    document["model_smt2"] = document["model_smt2"].replace("(define-fun Bad () Bool", "(define-fun Bad () Bool false)\n(define-fun Unused () Bool", 1)
    assert _recheck(document, Encoding(policy, "C1", document["free_policy"])).status == Status.REJECTED
    unsafe = load_policy(EXAMPLES / "seed_flawed.yaml")
    _, document = _certificate()
    assert _recheck(document, Encoding(unsafe, "C1", document["free_policy"])).status == Status.REJECTED


def test_certify_command(tmp_path):
    policy, document = _certificate()
    good = tmp_path / "good.cert.json"
    good.write_text(json.dumps(document))
    document["invariant_smt2"] = document["invariant_smt2"].replace(") Bool ", ") Bool (and false ", 1) + ")"
    bad = tmp_path / "bad.cert.json"
    bad.write_text(json.dumps(document))
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["certify", str(good), *CLI_BOUNDS], out, err) == 0 and "confirmed" in out.getvalue()
    out = io.StringIO()
    assert cli.main(["certify", str(good), str(bad), *CLI_BOUNDS], out, err) == 1 and "refuted" in out.getvalue()
    assert "assumes nothing" in out.getvalue()
    junk = tmp_path / "junk.json"
    junk.write_text("[1, 2")
    err = io.StringIO()
    assert cli.main(["certify", str(junk)], io.StringIO(), err) == 2 and err.getvalue().count("\n") == 1


# (evict template, deployment, conditions violated only after the threshold, conditions violated early). With
# records or rationale in the window, a host budget truncates them within a few steps whatever the threshold.
LATE = [
    ("kind == 'record' and age > {n}", {"records": "window", "pins": "self"}, ("C1",), ("C2",)),
    ("kind == 'record' and idle >= {n}", {"records": "window", "pins": "host"}, ("C1",), ("C2",)),
    ("kind == 'rationale' and step > {n}", {"rationale": "window"}, (), ("P1",)),
    ("kind == 'record' and reads > {n}", {"records": "window", "audit": "policy"}, ("C1",), ("C2", "C4")),
]


@pytest.mark.parametrize("threshold", [13, 1000, 10**6])
@pytest.mark.parametrize("template,deployment,violated,early", LATE, ids=[t[0] for t in LATE])
def test_violations_after_any_threshold_are_found_in_a_few_actions(template, deployment, violated, early, threshold):
    from prunecheck.spec.policy import Deployment
    policy = parse_policy_text(f"name: late\nevict: \"{template.format(n=threshold)}\"\n", "late.yaml",
                               Deployment(**deployment))
    results = {r.condition: r for r in check_bounded(policy, depth=4, spans=6, conditions=violated + early,
                                                     timeout=3600.0, rlimit=200_000_000)}
    for condition in violated:
        r = results[condition]
        assert r.verdict == Verdict.VIOLATED and r.depth <= 4, f"{condition}: {reason_text(r.reason)}"
        # The threshold is passed by waiting (or reading) in one repeated step, not by `threshold` steps.
        assert r.trace.steps > threshold and len(r.trace.actions) <= 4
    for condition in early:
        assert results[condition].verdict == Verdict.VIOLATED and results[condition].depth <= 4
