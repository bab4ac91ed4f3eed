"""A resource limit reaches every engine: too small, everything is `unknown` and says so; never a wrong verdict."""

import io
from types import SimpleNamespace

import pytest
import z3

from prunecheck.checker.commands import policydiff
from prunecheck.checker.engines.certificate_model import Encoding
from prunecheck.checker.check import check
from prunecheck.checker.options import DIFF_DEFAULTS, CheckOptions, options_with
from prunecheck.checker.cli import main
from prunecheck.checker.language.loader import load_policy, parse_policy_text
from prunecheck.checker.result import Verdict
from prunecheck.checker.engines.spacer import Found, spacer_invariant
from prunecheck.checker.outputs.reasons import reason_text
from prunecheck.spec.errors import SolverUnknown
from prunecheck.symbolic.solver import Status, query

from conftest import EXAMPLES, HOUR, RLIMIT

STARVED = 1  # resource unit: less than any query needs


def test_a_starved_check_is_unknown_in_every_engine_and_names_the_limit():
    options = CheckOptions(depth=3, spans=4, timeout=HOUR, rlimit=STARVED)
    report = check(load_policy(EXAMPLES / "seed_flawed.yaml"), options)
    for r in report.results:
        assert r.verdict == Verdict.UNKNOWN and r.certificate is None and r.trace is None
        # the bounded search, induction and Spacer each ran out of resources
        assert reason_text(r.reason).count("resource limit") >= 3, reason_text(r.reason)


def test_spacer_is_bounded_by_its_own_rlimit():
    enc = Encoding(load_policy(EXAMPLES / "seed_safe_design.yaml"), "C1", True)
    assert spacer_invariant(enc, HOUR, STARVED)[0] is Found.UNKNOWN
    assert spacer_invariant(enc, HOUR, RLIMIT)[0] is Found.PROVED


def test_a_starved_diff_is_unknown_never_equivalent():
    old = parse_policy_text("name: a\nevict: age > 1\n", "a.yaml")
    new = parse_policy_text("name: b\nevict: age >= 2\n", "b.yaml")
    fed, starved = (options_with(DIFF_DEFAULTS, depth=2, spans=2, timeout=HOUR, rlimit=r) for r in (RLIMIT, STARVED))
    assert policydiff.diff_policies(old, new, fed).outcome == policydiff.EQUIVALENT
    diff = policydiff.diff_policies(old, new, starved)
    assert diff.outcome == policydiff.UNKNOWN
    assert "resource limit" in diff.equivalence.reason
    assert "resource limit" in diff.new_evicts.reason and "resource limit" in diff.old_evicts.reason


def test_the_command_line_takes_rlimit():
    out = io.StringIO()
    code = main(["check", str(EXAMPLES / "seed_flawed.yaml"), "--depth", "2", "--no-prove", "--timeout", "3600",
                 "--rlimit", str(STARVED)], out, io.StringIO())
    assert code == 3 and out.getvalue().count("resource limit") >= 5


def test_z3_out_of_memory_in_a_query_is_the_solver_phase_error():
    """The one query function reads z3's exception words once: out of memory becomes SolverUnknown (the check turns it
    into `unknown`); any other solver error is an `unknown` answer, never `unsat`."""

    def failing(words):
        def check(*assumptions):
            raise z3.Z3Exception(words)
        return SimpleNamespace(check=check, set=lambda *a: None)

    with pytest.raises(SolverUnknown):
        query(failing("out of memory"))
    assert query(failing("something else")).status is Status.UNKNOWN
