"""Every `holds` prunecheck proves, attacked by the runtime: the explicit search, a beam to depth 16, random runs."""

from functools import lru_cache

import pytest

from prunecheck.spec.policy import Deployment

from cross_examination import CHUNKS, attack, example_policies, generated_policies, proved
from support import model_policy


@lru_cache(maxsize=1)
def _policies() -> tuple:
    """Every example policy, then the generated ones (drawn once, on first use: not at collection)."""
    return tuple(example_policies() + generated_policies())


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_no_proved_condition_is_violated_by_any_run(chunk):
    tally, failures = 0, []
    policies = [(k, named) for k, named in enumerate(_policies()) if k % CHUNKS == chunk]
    counts = {"policies": 0, "proofs": 0, "runs": 0}
    for k, (name, policy) in policies:
        result = attack(name, policy, proved(policy), seed=k)
        counts["policies"] += 1
        counts["proofs"] += result.proofs
        counts["runs"] += result.runs
        failures += result.contradictions
        tally += result.proofs
    print(f"cross-examination chunk {chunk}: {counts['policies']} policies, {counts['proofs']} proofs attacked, "
          f"{counts['runs']} random runs, {len(failures)} contradictions")
    assert not failures, "\n\n".join(failures)
    assert counts["policies"] == len(policies) and tally > 0


def test_the_attacks_find_issue_27s_split_pair():
    # The harness has teeth: the run behind issue 27's false T1 proof (a cited call moved to the log, its result
    # masked in place) is found by the explicit search and by the random runs, whatever the prover says of T1.
    policy = model_policy("evict: true\neffect: mask\nplaceholder_tokens: 3\npairs: together",
                          Deployment(evidence="on", justification="downgrade"))
    explicit = attack("issue 27", policy, ["T1"], runs=0, depth=3, beam=1)
    assert len(explicit.contradictions) == 1 and "explicit search" in explicit.contradictions[0]
    walks = attack("issue 27", policy, ["T1"], runs=300, depth=0, states=1)
    assert walks.runs == 300 and len(walks.contradictions) == 1 and "random run" in walks.contradictions[0]
