"""An unknown says, in plain words, what each engine tried and which option would decide it."""

import json

import pytest
import z3

from conftest import BOUNDS
from prunecheck.checker.check import check
from prunecheck.checker.options import MAX_DEPTH, MAX_SPANS, CheckOptions
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.result import (Advice, Clause, Domains, Found, Method, Need, Note, Part, Reason, Scope,
                                       SolverSaid, SolverStop, Stop, Tried, Verdict)
from prunecheck.checker.engines.unknowns import advice, solver_said, solver_words
from prunecheck.checker.outputs.reason_doc import ReasonFormatError, reason_from_json, reason_json
from prunecheck.checker.outputs.reasons import reason_text

# C1 is violated after 2 actions (a 2-token append, then a destroying edit whose record has 2 tokens).
POLICY = "name: u\nevict: \"window_tokens > 3 and kind == 'record'\"\ndeployment: {records: window}\n"


@pytest.mark.parametrize("raw,words", [
    (b"canceled", "its time or resource limit ran out"),
    (z3.Z3Exception(b"canceled"), "its time or resource limit ran out"),
    ("b'canceled'", "its time or resource limit ran out"),
    ("timeout", "its time limit ran out"),
    ("max. resource limit exceeded", "its resource limit (rlimit) ran out"),
    ("(incomplete (theory arithmetic))", "the arithmetic is beyond its decision procedures (non-linear)"),
    ("smt tactic failed \x00", "it answered unknown (smt tactic failed ?)"),
])
def test_solver_reasons_are_plain_words(raw, words):
    assert solver_words(raw) == words


def test_a_search_bounded_short_of_the_violation_says_what_would_decide_it():
    policy = parse_policy_text(POLICY, "u.yaml")
    result = check(policy, CheckOptions(depth=1, only=["C1"], **BOUNDS)).result("C1")
    assert result.verdict == Verdict.UNKNOWN and result.stop is Stop.BOUND
    reason = reason_text(result.reason)
    assert reason.startswith("bounded search: no violation within 1 action over 6 spans")
    assert "induction: " in reason and "Spacer: " in reason and "b'" not in reason
    # The policy compares window_tokens, so more spans come first; the violation needs 2 actions.
    assert reason.endswith("to decide it, try --spans 10 (a violation may need more spans in the window at once) "
                           "or --depth 2 (a violation may need more actions)")
    assert check(policy, CheckOptions(depth=2, only=["C1"], **BOUNDS)).result("C1").verdict == Verdict.VIOLATED


def test_the_advice_never_suggests_the_depth_or_spans_just_used():
    policy = parse_policy_text(POLICY, "u.yaml")
    result = check(policy, CheckOptions(depth=0, only=["C1"], prove=False, **BOUNDS)).result("C1")
    assert result.verdict == Verdict.UNKNOWN and "--depth 0" not in reason_text(result.reason)
    assert Advice("--depth", CheckOptions().depth, Need.ACTIONS) in result.reason.advice
    bound = [Part(Method.BMC, Stop.BOUND, ())]
    assert [a.value for a in advice(policy, bound, 3, 6, 30.0) if a.option == "--depth"] == [6]
    assert [a.value for a in advice(policy, bound, 150, 6, 30.0) if a.option == "--depth"] == [MAX_DEPTH]
    at_most = advice(policy, bound, MAX_DEPTH, MAX_SPANS, 30.0)
    assert not [a for a in at_most if a.option in ("--depth", "--spans")]  # nothing larger is accepted


def test_a_solver_out_of_resources_is_told_to_take_more():
    policy = parse_policy_text(POLICY, "u.yaml")
    result = check(policy, CheckOptions(depth=3, only=["C1"], timeout=3600.0, rlimit=1)).result("C1")
    assert result.verdict == Verdict.UNKNOWN and result.stop is Stop.LIMIT
    reason = reason_text(result.reason)
    assert "limit" in reason and "--timeout" in reason and "--rlimit" in reason


DOMAINS = Domains((1, 2), ("message", "tool_output"), (1, 3), ("tokens",), (7,))
STOPPED = SolverSaid(SolverStop.OTHER, "smt tactic failed")
CLAUSES = [
    Clause(Method.BMC, Found.VIOLATED, 3, 4, 3, 503),
    Clause(Method.EXPLICIT, Found.VIOLATED, 2, 4, 2, 2, domains=DOMAINS),
    Clause(Method.BMC, Found.BOUND, 5, 4, repeats=False),
    Clause(Method.BMC, Found.LIMIT, 2, 4, repeats=True, at=3, solver=STOPPED),
    Clause(Method.EXPLICIT, Found.LIMIT, at=3, states=120, time_limit=2.5),
    Clause(Method.EXPLICIT, Found.LIMIT, at=3, states=120, state_limit=100),
    Clause(Method.EXPLICIT, Found.BOUND, 4, 3, states=99, domains=DOMAINS),
    Clause(Method.SPACER_ABSTRACTED, Found.PROVED),
    Clause(Method.INDUCTION, Found.UNCONFIRMED, certificate="unchecked", detail="cvc5 gave up"),
    Clause(Method.SPACER, Found.FAULT, certificate="refuted", detail="safety"),
    Clause(Method.BMC, Found.MEMORY, megabytes=512),
]
PROOFS = (Clause(Method.INDUCTION, Found.LIMIT, solver=SolverSaid(SolverStop.RLIMIT), scope=Scope.ABSTRACTED,
                 tried=Tried.LEMMAS),
          Clause(Method.INDUCTION, Found.NO_PROOF, scope=Scope.AS_WRITTEN, tried=Tried.TEMPLATES))
SPACER = (Clause(Method.SPACER, Found.NO_PROOF, scope=Scope.ABSTRACTED, tried=Tried.ABSTRACTION),
          Clause(Method.SPACER, Found.LIMIT, scope=Scope.TIME))
REASONS = [Reason((c,)) for c in CLAUSES] + [Reason(PROOFS), Reason(SPACER), Reason(
    parts=(Part(Method.BMC, Stop.BOUND, (CLAUSES[2],)), Part(Method.INDUCTION, Stop.LIMIT, PROOFS),
           Part(Method.SPACER, Stop.NO_PROOF, SPACER)),
    advice=(Advice("--timeout", 60.0, Need.TIME), Advice("--rlimit", None, Need.RESOURCES),
            Advice("--depth", 10, Need.ACTIONS), Advice("--spans", 8, Need.SPANS)), note=Note.NO_PROVE)]


@pytest.mark.parametrize("reason", REASONS, ids=range(len(REASONS)))
def test_every_kind_of_reason_reads_back_from_the_cache_s_json(reason):
    back = reason_from_json(json.loads(json.dumps(reason_json(reason))))
    assert back == reason and reason_text(back) == reason_text(reason) and "\n" not in reason_text(reason)


def test_a_solver_s_stop_is_a_value_and_its_words_are_rendered():
    said = solver_said(b"smt tactic failed \x00")
    assert said == SolverSaid(SolverStop.OTHER, "smt tactic failed ?")
    assert f"stopped at depth 3: {solver_words(b'smt tactic failed')}" in reason_text(Reason((CLAUSES[3],)))


def test_a_reason_that_is_not_one_reason_json_writes_is_refused():
    good = reason_json(Reason((CLAUSES[4],)))
    for bad in ({**good, "note": "checked"}, {**good, "clauses": [{**good["clauses"][0], "time_limit": "2"}]},
                {**good, "clauses": [{**good["clauses"][0], "state_limit": 100}]}, {**good, "parts": [{}]}):
        with pytest.raises(ReasonFormatError):
            reason_from_json(bad)
