"""Each condition is defined once: every entry of spec/conditions.py's table has its runtime semantics, both violation
terms, an explainer and a SARIF rule, and every view of the conditions is derived from the table."""

from dataclasses import replace

import z3

from prunecheck.checker.engines.certificate_model import Encoding
from prunecheck.checker.findings.explain import EXPLAINERS
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.outputs import sarif
from prunecheck.spec.conditions import (
    BY_ID, CONDITION_TABLE, CONDITIONS, DESCRIPTIONS, STATE_CONDITIONS, STEP_CONDITIONS, Scope,
)
from prunecheck.spec.runtime import Append, State, step
from prunecheck.symbolic.conditions import TERMS, pair_violation, violation_at
from prunecheck.symbolic.model import Model
from prunecheck.symbolic.parametric import PairModel

POLICY = "name: p\nevict: kind == 'record'\ndeployment: {records: window, rationale: window}\n"


def _parts(policy, transition) -> dict:
    """Per part a condition needs: a check that is true when the condition has it (KeyError when it is absent)."""
    model = Model(policy, 3)
    states, actions = [model.state(0)], [model.action(0)]
    model.encode_init(states[0])
    states.append(model.state(1))
    steps = [model.encode_step(states[0], actions[0], states[1])]
    pair = PairModel(policy)
    post = pair.state("post")  # the model's own fields: the evidence ghosts too, under the default evidence: on
    pair_step = pair.encode_step(pair.state("pre"), pair.action("a"), post)
    rules = {r["id"]: r["name"] for r in sarif.sarif_log([])["runs"][0]["tool"]["driver"]["rules"]}
    return {
        "runtime semantics": lambda c: isinstance(
            c.violated(policy, transition.after) if c.scope is Scope.STATE else c.violated(transition), bool),
        "unrolled term": lambda c: z3.is_bool(violation_at(model, c.id, states, actions, steps, 1)),
        "pair term": lambda c: z3.is_bool(pair_violation(pair, c.id, post, pair_step)),
        "explainer": lambda c: callable(EXPLAINERS[c.id]),
        "SARIF rule": lambda c: rules[c.id] == c.rule and c.rule.isidentifier(),
    }


def _missing(table) -> list:
    """'id: part' for every part a condition of `table` lacks."""
    policy = parse_policy_text(POLICY, "p.yaml")
    transition = step(policy, State(), Append("message", 1))
    missing = []
    for part, has in _parts(policy, transition).items():
        for c in table:
            try:
                ok = has(c)
            except KeyError:
                ok = False
            if not ok:
                missing.append(f"{c.id}: {part}")
    return missing


def test_every_condition_has_semantics_both_terms_an_explainer_and_a_rule():
    assert _missing(CONDITION_TABLE) == []
    assert set(TERMS) == set(EXPLAINERS) == set(CONDITIONS), "an entry for a condition the table does not have"


def test_a_condition_added_with_only_its_record_is_named_with_what_it_lacks(monkeypatch):
    """The check above fails loudly on a table entry whose terms and explainer were not written."""
    new = replace(BY_ID["P1"], id="P2", rule="RationaleProvenanceAgain")
    monkeypatch.setitem(BY_ID, "P2", new)
    monkeypatch.setattr(sarif, "CONDITION_TABLE", CONDITION_TABLE + (new,))
    assert _missing(CONDITION_TABLE + (new,)) == ["P2: unrolled term", "P2: pair term", "P2: explainer"]


def test_the_views_of_the_conditions_are_derived_from_the_table():
    assert CONDITIONS == tuple(c.id for c in CONDITION_TABLE) == tuple(BY_ID)
    assert DESCRIPTIONS == {c.id: c.description for c in CONDITION_TABLE}
    assert STATE_CONDITIONS == tuple(c.id for c in CONDITION_TABLE if c.scope is Scope.STATE)
    assert STEP_CONDITIONS == tuple(c.id for c in CONDITION_TABLE if c.scope is Scope.STEP)
    assert set(STATE_CONDITIONS) | set(STEP_CONDITIONS) == set(CONDITIONS)
    assert len({c.rule for c in CONDITION_TABLE}) == len(CONDITION_TABLE)


def test_a_certificate_asks_trans_in_its_safety_obligation_exactly_for_step_conditions():
    base = Encoding(parse_policy_text(POLICY, "p.yaml"), CONDITIONS[0], True)
    for c in CONDITION_TABLE:
        safety = base.for_condition(c.id).obligations()["safety"]
        assert ("(assert Trans)" in safety) == (c.scope is Scope.STEP), c.id
