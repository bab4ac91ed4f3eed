"""The symbolic engine against the explicit-state oracle: same verdicts, same shortest counterexample lengths."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prunecheck.checker.bmc import check_bounded
from prunecheck.checker.explicit import domains_for, explore
from prunecheck.checker.result import Verdict
from prunecheck.spec.policy import Deployment

from prunecheck.strategies import policies

from conftest import BOUNDS, HOUR
from test_model import POLICIES, _policy, deployments

DEPTH, SPANS, TOKENS = 4, 4, (1, 2)


def _summary(results):
    return {r.condition: (r.verdict, r.depth if r.verdict == Verdict.VIOLATED else None) for r in results}


def agree(policy):
    domains = domains_for(policy, TOKENS)
    explicit = explore(policy, DEPTH, SPANS, domains=domains, time_limit=HOUR)
    symbolic = check_bounded(policy, DEPTH, SPANS, token_domain=domains.tokens, **BOUNDS)
    assert all(r.verdict != Verdict.UNKNOWN or "time limit" not in r.reason for r in explicit)
    assert _summary(explicit) == _summary(symbolic), f"explicit {_summary(explicit)} symbolic {_summary(symbolic)}"
    return _summary(symbolic)


# 100 policies per default run keep CI within its budget; the slow variants and benchmarks/differential_sweep.py
# (2000 policies) go further.
@settings(max_examples=40)
@given(st.sampled_from(POLICIES), deployments)
def test_engines_agree_on_table_policies(text, deployment):
    agree(_policy(text, deployment))


@settings(max_examples=60)
@given(policies(max_depth=3))
def test_engines_agree_on_generated_policies(policy):
    agree(policy)


@pytest.mark.slow
@settings(max_examples=300)
@given(policies(max_depth=3))
def test_engines_agree_on_many_generated_policies(policy):
    agree(policy)


def test_engines_agree_and_find_violations_on_the_seed_policy():
    seed = Deployment(records="window", pins="self", audit="policy")
    summary = agree(_policy("evict: not pinned and recency * frequency < 0.25", seed))
    assert summary["C1"] == (Verdict.VIOLATED, 2) and summary["C2"] == (Verdict.VIOLATED, 3)
