"""An unknown says, in plain words, what each engine tried and which option would decide it."""

import pytest
import z3

from conftest import BOUNDS
from prunecheck.checker.check import check
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.result import Stop, Verdict
from prunecheck.checker.engines.unknowns import solver_words

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
    reason = result.reason
    assert reason.startswith("bounded search: no violation within 1 action over 6 spans")
    assert "induction: " in reason and "Spacer: " in reason and "b'" not in reason
    # The policy compares window_tokens, so more spans come first; the violation needs 2 actions.
    assert reason.endswith("to decide it, try --spans 10 (a violation may need more spans in the window at once) "
                           "or --depth 2 (a violation may need more actions)")
    assert check(policy, CheckOptions(depth=2, only=["C1"], **BOUNDS)).result("C1").verdict == Verdict.VIOLATED


def test_a_solver_out_of_resources_is_told_to_take_more():
    policy = parse_policy_text(POLICY, "u.yaml")
    result = check(policy, CheckOptions(depth=3, only=["C1"], timeout=3600.0, rlimit=1)).result("C1")
    assert result.verdict == Verdict.UNKNOWN and result.stop is Stop.LIMIT
    assert "limit" in result.reason and "--timeout" in result.reason and "--rlimit" in result.reason
