"""Theorem: atomic refusal — a compaction the refusal blocks changes nothing, for every policy (SPEC §6e)."""

from __future__ import annotations

from prunecheck.checker.engines.certificate import Status
from prunecheck.proofs.theorem import TheoremResult, any_policy, deployments, induction_label, prove_invariant, timed

NAME = "atomic refusal"
STATEMENT = ("With refusal: silent or atomic, X1 holds for every policy the language can express (evict, rank and "
             "budget all free): no compaction that is blocked because the policy names a recovery span changes "
             "anything but the clock, in every deployment of the other settings, at every depth and window size. "
             "(Under refusal: sequential, the seed demo's walk, it does not: the checker finds X1 violated.)")


def cases() -> list:
    """(policy, condition) pairs the theorem proves."""
    return [(any_policy(dep), "X1") for refusal in ("silent", "atomic") for dep in deployments(refusal=refusal)]


def label():
    return induction_label(cases())


def prove() -> TheoremResult:
    def run():
        outcomes = [(p.deployment, *prove_invariant(p, c, free_policy=True)) for p, c in cases()]
        failed = [f"X1 under {dep.as_dict()}: {why}" for dep, ok, _, why in outcomes if not ok]
        confirmed = sum(1 for _, ok, status, _ in outcomes if ok and status is Status.CONFIRMED)
        return outcomes, failed, confirmed
    (outcomes, failed, confirmed), seconds = timed(run)
    detail = f"{len(outcomes) - len(failed)}/{len(outcomes)} deployments proved" + (
        f"; failed: {failed[0]}" if failed else "")
    return TheoremResult(NAME, STATEMENT, not failed, detail, seconds, f"cvc5 {confirmed}/{len(outcomes)}")
