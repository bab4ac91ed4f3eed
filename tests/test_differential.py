"""The symbolic engine against the explicit-state oracle: same verdicts, same shortest counterexample lengths."""

import importlib.util
import itertools
import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prunecheck.checker.engines.bmc import check_bounded
from prunecheck.checker.check import check
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.engines.explicit import DEFAULT_REPEATS, DEFAULT_TOKENS, domains_for, explore
from prunecheck.checker.result import Verdict
from prunecheck.spec.policy import Deployment

from prunecheck.strategies import deployments as all_deployments, policies
from prunecheck.checker.outputs.reasons import domains_text

from conftest import BOUNDS, ROOT
from support import POLICIES, deployments, extended_deployments, model_policy

# Bounded by depth, span slots, explored states and z3's rlimit, never by the clock.
from support import DIFF_DEPTH as DEPTH, DIFF_RLIMIT as RLIMIT, DIFF_SPANS as SPANS, DIFF_STATES as STATES
from support import engines_agree as agree, explore_within as _explore, verdict_summary as _summary
SLOW_STATES = 1_000_000
_SPEC = importlib.util.spec_from_file_location("differential_sweep", ROOT / "benchmarks" / "differential_sweep.py")
sweep = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(sweep)

# Thresholds people write, with large constants: {c} a clock or token threshold, {r} = 1/c, {h} = c/2, {b} a budget.
LARGE = [
    "evict: age > {c}", "evict: age >= {c}", "evict: not pinned and idle > {c}",
    "evict: step > {c} and kind != 'message'", "evict: reads >= {c}", "evict: reads < 3 and age > {c}",
    "evict: recency < {r}", "evict: frequency == 0.84", "evict: frequency < 0.5 and age >= {c}",
    "evict: idle >= {c} or tokens > {c}", "evict: tokens > {c}\nbudget: {b}",
    "evict: window_tokens > {c} and age > 1\nbudget: {b}", "evict: idle > {c}\nrank: 0 - age\nbudget: {b}",
    "evict: age > {c} and idle < {h}", "evict: step == {c}", "evict: frequency > 0.5",
]
CONSTANTS = (13, 1000, 10**6)
LEAKY = (Deployment(records="window"), Deployment(rationale="window"),
         Deployment(records="window", pins="self", audit="policy"),
         Deployment(records="window", rationale="window", pins="self", audit="policy", undo="blind"))


def large(template: str, c: int, deployment: Deployment):
    text = template.format(c=c, r=f"{1 / c:.7f}".rstrip("0"), h=c // 2, b=min(10**5, 10 * c))
    return model_policy(text, deployment)


def agree_unrestricted(policy, depth, states=STATES):
    """The explicit engine at its default domains finds every violation the unrestricted symbolic search finds, as
    short in actions; and it finds nothing the symbolic search does not. Returns the depth compared too."""
    depth, explicit = _explore(policy, depth, domains_for(policy), states)
    symbolic = _summary(check_bounded(policy, depth, SPANS, timeout=3600.0, rlimit=RLIMIT))
    assert _summary(explicit) == symbolic, f"explicit {_summary(explicit)} symbolic {symbolic}"
    return depth, symbolic


# About 60 policies per default run keep CI within its budget; the slow variants and benchmarks/differential_sweep.py
# go further. Each family is drawn by two tests (derandomized per test, so they draw different policies), which lets
# the two test workers share it instead of one worker finishing a minute after the other.
@settings(max_examples=12)
@given(st.sampled_from(POLICIES), deployments)
def test_engines_agree_on_table_policies(text, deployment):
    agree(model_policy(text, deployment))


@settings(max_examples=12)
@given(st.sampled_from(POLICIES), deployments)
def test_engines_agree_on_more_table_policies(text, deployment):
    agree(model_policy(text, deployment))


@settings(max_examples=15)
@given(policies(max_depth=3))
def test_engines_agree_on_generated_policies(policy):
    agree(policy)


@settings(max_examples=15)
@given(policies(max_depth=3))
def test_engines_agree_on_more_generated_policies(policy):
    agree(policy)


# Issue 16's settings (strategies.EXTENDED_CHOICES) make every model larger: drawn by these tests alone.
@settings(max_examples=5)
@given(st.sampled_from(POLICIES), extended_deployments)
def test_engines_agree_on_table_policies_under_every_setting(text, deployment):
    agree(model_policy(text, deployment))


@pytest.mark.slow
@settings(max_examples=200)
@given(policies(max_depth=3, deployment=all_deployments(extended=True)))
def test_engines_agree_on_many_generated_policies_under_every_setting(policy):
    agree(policy)


# The sweep's vocabulary family (positions, roles, masked, the stage's keys, effects, pairs, the log) at small bounds.
@settings(max_examples=10, derandomize=True)
@given(sweep.vocabulary_policies())
def test_engines_agree_on_generated_vocabulary_policies(policy):
    agree(policy, depth=3, spans=3)


@pytest.mark.slow
@settings(max_examples=300)
@given(policies(max_depth=3))
def test_engines_agree_on_many_generated_policies_over_all_their_derived_domains(policy):
    agree(policy, tokens=None)


def test_engines_agree_and_find_violations_on_the_seed_policy():
    seed = Deployment(records="window", pins="self", audit="policy")
    summary = agree(model_policy("evict: not pinned and recency * frequency < 0.25", seed))
    assert summary["C1"] == (Verdict.VIOLATED, 2) and summary["C2"] == (Verdict.VIOLATED, 3)


@pytest.mark.parametrize("index", range(len(LARGE)))
def test_default_domains_find_what_the_unrestricted_symbolic_search_finds_with_large_constants(index):
    # One constant and one leaky deployment per template here; the slow test below takes every combination. Within
    # 3 actions a threshold that needs the clock may be out of reach when only the policy removes spans (the default
    # host_truncation: off, SPEC §2), so a violation is required under a host that truncates (as before ADR 0032);
    # the engines must agree under both.
    policy = large(LARGE[index], CONSTANTS[index % 3], LEAKY[index % 2 * 2])
    depth, _ = agree_unrestricted(policy, 3)
    assert depth == 3
    hosted = replace(policy, deployment=replace(policy.deployment, host_truncation="on"))
    depth, summary = agree_unrestricted(hosted, 3)
    assert depth == 3 and any(verdict == Verdict.VIOLATED for verdict, _ in summary.values())


@pytest.mark.slow
@pytest.mark.parametrize("template,c,deployment", list(itertools.product(LARGE, CONSTANTS, LEAKY)))
def test_default_domains_agree_on_every_large_constant_policy(template, c, deployment):
    assert agree_unrestricted(large(template, c, deployment), DEPTH, SLOW_STATES)[0] == DEPTH


@pytest.mark.parametrize("template,c", [("evict: age > {c}", 10**6), ("evict: recency < {r}", 1000),
                                        ("evict: tokens > {c}\nbudget: {b}", 10**4)])
def test_nothing_proved_safe_is_found_violated(template, c):
    # The seed's safe design: what the symbolic engine proves holds, the explicit engine must not refute.
    policy = large(template, c, Deployment())
    report = check(policy, CheckOptions(depth=3, spans=SPANS, **BOUNDS))
    proved = {r.condition for r in report.results if r.verdict == Verdict.HOLDS}
    explicit = explore(policy, 3, SPANS, domains=domains_for(policy), time_limit=math.inf, max_states=STATES)
    assert proved and not [r.condition for r in explicit if r.verdict == Verdict.VIOLATED and r.condition in proved]


def test_domains_come_from_the_policys_constants_and_overrides_replace_them():
    policy = model_policy("evict: age > 1000 or recency < 0.001 or frequency == 0.84 or tokens > 50\nbudget: 100000",
                     Deployment())
    domains = domains_for(policy)
    assert domains.tokens == tuple(sorted({*DEFAULT_TOKENS, 49, 50, 51, 99999, 100000, 100001}))
    # age > 1000: 999..1001; recency < 1/1000: idle 998..1000; frequency 21/25: 21 reads and 3 other steps, or
    # n reads from birth with n/(1+n) on either side of 21/25 (n = 5, 6), or n reads that keep the frequency above
    # 21/25 through a wait w of 998..1001 asked by the other comparisons: n = 21/25 (1 + w) / (4/25) = 5.25 (1 + w)
    # (5244.75, 5250, 5255.25, 5260.5: an integer gives its neighbours, a fraction its floor and ceiling)
    held = {5244, 5245, 5249, 5250, 5251, 5255, 5256, 5260, 5261}
    assert domains.repeats == tuple(sorted({*DEFAULT_REPEATS, 3, 5, 6, 21, 998, 999, 1000, 1001} | held))
    assert "(given)" not in domains_text(domains)
    given_ = domains_for(policy, tokens=(5,), repeats=(7, 8))
    assert (given_.tokens, given_.repeats) == ((5,), (7, 8))
    assert domains_text(given_).count("(given)") == 2
    assert domains_for(model_policy("evict: age > 12.5", Deployment())).repeats == (1, 12, 13)
    # the clock is absolute: `step == 1000` after two single steps needs audit(times=998), a clock target
    clock = domains_for(model_policy("evict: step == 1000", Deployment()))
    assert (clock.repeats, clock.clock_targets) == ((1,), (999, 1000, 1001))
    assert domains_for(model_policy("evict: step == 1000", Deployment()), repeats=(1,)).clock_targets == ()


def test_a_restricted_model_has_its_own_step_template():
    from prunecheck.symbolic.model import Model
    from prunecheck.symbolic.template import step_template

    policy = model_policy("evict: age > 13", Deployment(records="window"))
    free = step_template(Model(policy, 3, accelerate=True))
    restricted = step_template(Model(policy, 3, accelerate=True, repeat_domain=(1, 14)))
    targeted = step_template(Model(policy, 3, accelerate=True, repeat_domain=(1,), clock_targets=(14,)))
    assert len({id(free), id(restricted), id(targeted)}) == 3
    assert step_template(Model(policy, 3, accelerate=True, repeat_domain=(1, 14))) is restricted


# Undo's options (spec/SPEC.md §4e): the explicit engine runs the runtime's merge and reconstruction; the symbolic
# search must find the same violations (U1's too) at the same lengths.
UNDO_OPTIONS = (Deployment(undo="merge"), Deployment(records="window", missing_record="reconstruct"),
                Deployment(records="window", undo="merge", missing_record="reconstruct", audit="policy"))


@pytest.mark.parametrize("deployment", UNDO_OPTIONS)
def test_engines_agree_under_undos_options(deployment):
    found = agree(model_policy("evict: kind == 'record' or edited", deployment), depth=5, spans=5)
    assert ("U1" in found) == (deployment.missing_record == "reconstruct")
    assert found.get("U1", (None,))[0] in (None, Verdict.VIOLATED)
