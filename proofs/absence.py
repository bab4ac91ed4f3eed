"""Theorem: absence is observable — an independent audit never says "reversible" over a gap."""

from __future__ import annotations

from prunecheck.checker.engines.certificate import Status
from prunecheck.proofs.theorem import TheoremResult, any_policy, deployments, induction_label, prove_invariant, timed

NAME = "absence is observable"
STATEMENT = ("With an independent audit, a gap between edits performed and records present is always reported as "
             "'reversibility unknown' (C4 holds) for every policy, in every deployment of the other settings, at "
             "every depth and window size.")


def cases() -> list:
    """(policy, condition) pairs the theorem proves."""
    return [(any_policy(dep), "C4") for dep in deployments(audit="independent")]


def label():
    return induction_label(cases())


def prove() -> TheoremResult:
    def run():
        return [(policy.deployment, *prove_invariant(policy, c, free_policy=True)) for policy, c in cases()]
    outcomes, seconds = timed(run)
    failed = [f"{dep.as_dict()}: {why}" for dep, ok, _, why in outcomes if not ok]
    confirmed = sum(1 for _, ok, status, _ in outcomes if ok and status is Status.CONFIRMED)
    detail = f"{len(outcomes) - len(failed)}/{len(outcomes)} deployments proved" + (f"; failed: {failed[0]}" if failed else "")
    return TheoremResult(NAME, STATEMENT, not failed, detail, seconds, f"cvc5 {confirmed}/{len(outcomes)}")
