"""What a process shares between checks (step templates, lemmas, proofs of abstracted policies, cvc5's answers)
changes no report: not its verdicts, traces, certificates or the policy a certificate names."""

import json

from prunecheck.checker.engines.certificate import Status, recheck
from prunecheck.checker.engines.certificate_model import Encoding
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
