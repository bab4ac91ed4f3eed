"""Every example policy, through every engine, gets its expected verdicts; every counterexample replays."""

import pytest

from prunecheck.checker.engines.bmc import check_bounded
from prunecheck.checker.language.loader import load_policy, parse_policy_text
from prunecheck.checker.engines.replay import confirm
from prunecheck.checker.result import Stop, Verdict
from prunecheck.spec.conditions import applicable
from prunecheck.checker.outputs.reasons import reason_text

from conftest import BOUNDS
from policy_table import EXAMPLES, example_table

ENGINES = {"bmc": check_bounded}
ROWS = example_table()
# Under `evidence: on` (the default, ADR 0035) the bounded search of P1 in kind_excludes_records.json (records and
# rationale in the window, where the compactions' ledger entries go too) needs more than the 100 million resource units
# per query of conftest's BOUNDS to reach its bound: measured, the solver limit at depth 11; the bound at 200 million.
RLIMIT = 200_000_000


def _load(path, text, name):
    return load_policy(path) if path is not None else parse_policy_text(text, name)


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("name,path,text,expected", ROWS, ids=[r[0] for r in ROWS])
def test_example_verdicts(engine, name, path, text, expected):
    policy = _load(path, text, name)
    assert set(expected) == set(applicable(policy)), f"{name} must state a verdict for every condition that applies"
    results = {r.condition: r for r in ENGINES[engine](policy, **{**BOUNDS, "rlimit": RLIMIT})}
    for condition, want in expected.items():
        got = results[condition]
        if got.verdict == Verdict.VIOLATED:
            assert want == "violated", f"{name} {condition}: {reason_text(got.reason)}"
            confirm(policy, got.trace.actions, condition, got.trace.spans)
        else:
            # The bounded engine cannot prove `holds`; a safe condition is unknown, searched to the bound.
            assert want == "holds", f"{name} {condition}: {reason_text(got.reason)}"
            assert got.verdict == Verdict.UNKNOWN and got.stop is Stop.BOUND
            assert "no violation within" in reason_text(got.reason)


def test_seed_flawed_policy_violates_c1_within_8_steps():
    # One bounded search per form (the dearest of this module): C1 violated within 8 steps, and both forms agree.
    forms = {path: check_bounded(load_policy(EXAMPLES / path), **BOUNDS)
             for path in ("seed_flawed.yaml", "seed_flawed.py")}
    for path, results in forms.items():
        result = {r.condition: r for r in results}["C1"]
        assert result.verdict == Verdict.VIOLATED and len(result.trace.actions) <= 8, path
    yaml_form, py_form = forms.values()
    assert [(r.condition, r.verdict, r.depth) for r in yaml_form] == \
        [(r.condition, r.verdict, r.depth) for r in py_form]


def test_late_violation_is_found_in_three_actions_and_twenty_three_steps():
    policy = parse_policy_text(example_table()[-1][2], "late.yaml")
    (result,) = check_bounded(policy, depth=4, spans=3, conditions=["C1"], timeout=3600.0, rlimit=RLIMIT)
    assert result.verdict == Verdict.VIOLATED
    # append, edit, then 21 audits: the record is 21 steps old (age > 20) at step 23.
    assert (len(result.trace.actions), result.trace.steps) == (3, 23)


@pytest.mark.slow
def test_unaccelerated_search_needs_the_depth_of_every_step():
    policy = parse_policy_text(example_table()[-1][2], "late.yaml")
    (result,) = check_bounded(policy, depth=23, spans=3, conditions=["C1"], timeout=3600.0, rlimit=RLIMIT,
                              accelerate=False)
    assert result.verdict == Verdict.VIOLATED and len(result.trace.actions) == result.trace.steps == 23


def test_a_counterexample_the_runtime_does_not_reproduce_is_never_reported(monkeypatch):
    from dataclasses import replace

    import z3
    from prunecheck.spec.errors import ReplayMismatch
    from prunecheck.symbolic.conditions import TERMS

    # A planted model fault: C1 "fails" whenever a live record exists, whatever the policy says.
    planted = replace(TERMS["C1"], unrolled=lambda model, t: z3.Or([t.live_edit(i) for i in range(model.n)]))
    monkeypatch.setitem(TERMS, "C1", planted)
    policy = load_policy(EXAMPLES / "seed_safe_design.yaml")
    with pytest.raises(ReplayMismatch):
        check_bounded(policy, depth=3, spans=4, conditions=["C1"], **BOUNDS)
