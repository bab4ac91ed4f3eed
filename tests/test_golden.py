"""Every example policy's report, ITF traces, certificates and scripts match the stored golden outputs byte for byte."""

import pytest
import z3

from prunecheck.checker.engines.certificate_model import Encoding
from prunecheck.checker.language.loader import load_policy
from prunecheck.checker.engines.spacer import Found, spacer_invariant

from conftest import EXAMPLES, HOUR, RLIMIT
from golden import differences, example_policies, generate, normalise, stored

# Representative: violations with traces and scripts next to proofs with certificates (seed_flawed.yaml), and a
# step condition's violation (P1, rationale_in_window.yaml).
FAST = ("seed_flawed.yaml", "rationale_in_window.yaml")


def _compare(names, tmp_path):
    expected = stored(names)
    assert expected, f"no golden outputs for {names}: run `python tests/golden.py --write`"
    diff = differences(expected, generate(names, tmp_path))
    assert not diff, f"outputs differ from tests/data/golden (see tests/golden.py):\n{diff}"


def test_representative_policies_match_golden(tmp_path):
    _compare(FAST, tmp_path)


@pytest.mark.slow
def test_every_example_policy_matches_golden(tmp_path):
    assert {path.split("/")[0] for path in stored()} == set(example_policies()), "golden outputs out of date"
    _compare(example_policies(), tmp_path)


def test_normalise_replaces_only_run_dependent_values():
    text = ('{"versions": {"prunecheck": "0.1.0", "python": "3.11.7", "z3": "4.13", "cvc5": "1.2"}, '
            '"seconds": 0.25, "queries": 7, "timestamp": 1796089996553, "depth": 6, "python": "3.11.7"}\n'
            "CHECKED_FROM = '/tmp/golden-x/examples/policies/a.yaml'\n")
    assert normalise(text, "/tmp/golden-x") == (
        '{"versions": {"prunecheck": "0.1.0", "python": "<version>", "z3": "<version>", "cvc5": "<version>"}, '
        '"seconds": "<seconds>", "queries": "<queries>", "timestamp": "<timestamp>", "depth": 6, "python": "3.11.7"}\n'
        "CHECKED_FROM = '<ROOT>/examples/policies/a.yaml'\n")


def test_differences_name_changed_missing_and_new_files():
    diff = differences({"a/report.json": "x\n", "a/old.json": "o\n"}, {"a/report.json": "y\n", "a/new.json": "n\n"})
    assert "-x\n+y\n" in diff and "golden/a/old.json" in diff and "now/a/new.json" in diff
    assert differences({"a": "same\n"}, {"a": "same\n"}) == ""


def test_spacer_does_not_depend_on_what_the_process_solved_before():
    """Spacer's search once depended on the terms earlier checks had made in z3's process-wide context: the same
    query found another invariant after another condition's, and in a full check another outcome. With a context of
    its own the outcome no longer depends on it. The invariant's text still may: z3's symbol table is process-wide
    (a CI worker that had run other tests first found an equivalent invariant with one more disjunct), so the
    invariant is compared by meaning, and golden certificates are made in fresh processes (tests/golden.py)."""
    policy = load_policy(EXAMPLES / "seed_safe_design.yaml")
    first = spacer_invariant(Encoding(policy, "C2", True), HOUR, RLIMIT)
    spacer_invariant(Encoding(policy, "C1", True), HOUR, RLIMIT)
    again = spacer_invariant(Encoding(policy, "C2", True), HOUR, RLIMIT)
    assert first[0] is again[0] is Found.PROVED
    for inv in (first[1], again[1]):  # each an invariant of the same model: initiated, preserved and safe
        enc = Encoding(policy, "C2", True)
        assert confirms_invariant(enc, inv)
    assert not confirms_invariant(Encoding(policy, "C2", True), z3.BoolVal(True))  # the check can say no


def confirms_invariant(enc: Encoding, inv) -> bool:
    """inv (over enc.param) holds initially, is preserved by every step and excludes the violation: z3 says unsat to
    each obligation's negation within RLIMIT."""
    def at(state):
        return z3.substitute(inv, *zip(enc.param.variables(), state.variables()))
    obligations = [enc.init + [z3.Not(at(enc.pre))], [at(enc.pre)] + enc.trans + [z3.Not(at(enc.post))],
                   [at(enc.pre)] + enc.trans + [enc.bad]]
    for negation in obligations:
        solver = z3.Solver()
        solver.set("rlimit", RLIMIT)
        solver.add(*negation)
        if solver.check() != z3.unsat:
            return False
    return True

