"""What a process shares between checks (step templates, lemmas, proofs of abstracted policies, cvc5's answers)
changes no report: not its verdicts, traces, certificates or the policy a certificate names."""

import json

import pytest

from prunecheck.checker.engines.certificate import Status, confirm_certificate, recheck
from prunecheck.checker.engines.certificate_model import Encoding, free_shape
from prunecheck.checker.engines.invariants import inductive_lemmas
from prunecheck.checker.check import check, clear_caches
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.language.loader import load_policy, parse_policy_text
from prunecheck.symbolic.model import Model
from prunecheck.symbolic.template import step_template

from conftest import BOUNDS, EXAMPLES, HOUR, RLIMIT

NAMES = ("seed_flawed.yaml", "blind_undo.yaml", "budget_truncates_records.yaml", "seed_safe_design.yaml")
# Same deployment and shape as seed_safe_design.yaml, other expressions: the abstracted proofs are shared.
SIBLING = "name: sibling\nevict: kind == 'tool_output' and reads < 2\n"


def _strip_timing(report):
    return [(r.condition, r.verdict, r.depth, r.trace, r.certificate, r.reason) for r in report.results]


def test_reports_are_the_same_with_caches_cold_and_warm():
    policies = [load_policy(EXAMPLES / name) for name in NAMES] + [parse_policy_text(SIBLING, "sibling.yaml")]
    cold = []
    for policy in policies:
        clear_caches()
        cold.append(_strip_timing(check(policy, CheckOptions(depth=6, spans=5, **BOUNDS))))
    options = CheckOptions(depth=6, spans=5, **BOUNDS)
    warm = [_strip_timing(check(policy, options)) for policy in reversed(policies)][::-1]
    assert warm == cold


def test_a_shared_proof_certifies_the_policy_it_is_reported_for():
    clear_caches()
    first = check(load_policy(EXAMPLES / "seed_safe_design.yaml"), CheckOptions(depth=4, spans=4, **BOUNDS))
    sibling = parse_policy_text(SIBLING, "sibling.yaml")
    second = check(sibling, CheckOptions(depth=4, spans=4, **BOUNDS))
    shared = [r for r in second.results if r.engine.abstracted]
    assert shared, "the sibling should reuse a proof with the policy abstracted"
    for result in shared:
        document = json.loads(result.certificate)
        assert document["policy"]["name"] == "sibling" and document["policy_hash"] == second.policy_hash
        assert document["policy_hash"] != first.policy_hash
        encoding = Encoding(sibling, result.condition, free_policy=True)
        assert recheck(document, encoding, int(HOUR * 1000), RLIMIT).status is Status.CONFIRMED


def test_a_template_is_shared_by_policies_of_one_shape_and_not_across_shapes():
    a = Model(parse_policy_text("name: a\nevict: idle > 3\n", "a.yaml"), 4)
    b = Model(parse_policy_text("name: b\nevict: kind == 'diff' or reads > 1\n", "b.yaml"), 4)
    c = Model(parse_policy_text("name: c\nevict: idle > 3\nbudget: 5\n", "c.yaml"), 4)
    assert step_template(a) is step_template(b)
    assert step_template(a) is not step_template(c)


# A stage with a trigger, and the same stage without it: one free shape (the abstracted policy cannot see `when`).
TRIGGERED = "name: t\nevict: true\nkeep: role == 'system'\nwhen: window_spans > 3\nuntil: window_tokens <= 10\n"
UNTRIGGERED = TRIGGERED.replace("when: window_spans > 3\n", "")


def test_a_proof_shared_across_a_trigger_certifies_the_model_of_the_policy_it_is_reported_for():
    clear_caches()
    options = CheckOptions(depth=3, spans=4, only=("C2",), **BOUNDS)
    check(parse_policy_text(UNTRIGGERED, "u.yaml"), options)  # leaves its abstracted proof to the next check
    triggered = parse_policy_text(TRIGGERED, "t.yaml")
    (result,) = check(triggered, options).results
    assert result.engine.abstracted, "the triggered policy should reuse the abstracted proof"
    assert confirm_certificate(result.certificate, triggered, "C2", int(HOUR * 1000), RLIMIT).status \
        is Status.CONFIRMED
    clear_caches()
    assert json.loads(result.certificate)["model_smt2"] == Encoding(triggered, "C2", True).model_text()


BASES = ("evict: true\n", "evict: true\neffect: mask\n", "evict: true\neffect: summarise\nsummary_role: system\n",
         "evict: true\npairs: together\n", "evict: true\nrank: tokens\nbudget: 8\n")
# Each changes only what the abstracted policy does not see (its expressions, the stage's trigger, target, order,
# start_on), so the policy's free shape is the base's.
VARIANTS = ("evict: kind == 'tool_output' and reads < 2\n", "keep: role == 'system'\n", "when: window_spans > 3\n",
            "until: window_tokens <= 10\n", "until: window_spans <= 2\norder: newest\n", "start_on: user\n",
            "evict: position < 2\n")


@pytest.mark.parametrize("base", BASES)
def test_policies_of_one_free_shape_have_one_free_model(base):
    """What the caches of abstracted proofs and regenerated models assume: the free model is a function of the key."""
    first = parse_policy_text("name: a\n" + base, "a.yaml")
    text = Encoding(first, "C1", True).model_text()
    for variant in (v for v in VARIANTS if not ("rank" in base and "order" in v)):  # a rank orders by itself
        lines = dict(line.split(": ", 1) for line in (base + variant).splitlines())
        other = parse_policy_text("name: b\n" + "".join(f"{k}: {v}\n" for k, v in lines.items()), "b.yaml")
        assert free_shape(other, 1.0) == free_shape(first, 1.0), variant
        assert Encoding(other, "C1", True).model_text() == text, variant


def test_the_lemmas_a_template_remembers_are_those_each_policy_of_its_shape_would_prove():
    """One template serves both (same key); only the policy reading roles has the records' role among its lemmas."""
    plain = Model(parse_policy_text("name: a\nevict: idle > 3\n", "a.yaml"), 3)
    roles = Model(parse_policy_text("name: b\nevict: role == 'tool_result'\n", "b.yaml"), 3)
    assert step_template(plain) is step_template(roles)
    cold = []
    for model in (roles, plain):
        clear_caches()
        cold.append(inductive_lemmas(model, HOUR, RLIMIT).names)
    clear_caches()
    warm = [inductive_lemmas(model, HOUR, RLIMIT).names for model in (plain, roles)][::-1]
    assert warm == cold and cold[0] != cold[1]
