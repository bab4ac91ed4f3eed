"""Theorem: downgrade suffices — under `justification: downgrade` J1 holds for every policy (spec/SPEC.md §6d)."""

from __future__ import annotations

from dataclasses import replace

from prunecheck.checker.engines.certificate import Status
from prunecheck.proofs.theorem import TheoremResult, any_policy, deployments, induction_label, prove_invariant, timed

NAME = "downgrade suffices"
STATEMENT = ("With evidence edges on and `justification: downgrade`, J1 (justification survives) holds for every "
             "policy the language can express (evict, rank and budget all free), with the stage evicting or masking, "
             "in every deployment of the first seed's settings, at every host budget, depth and window size: a "
             "removal of a cited span moves it to the log, where it stays present.")
EFFECTS = ("evict", "mask")


def cases() -> list:
    """(policy, condition) pairs the theorem proves."""
    return [(replace(any_policy(dep), effect=effect), "J1")
            for dep in deployments(evidence="on", justification="downgrade") for effect in EFFECTS]


def label():
    return induction_label(cases())


def prove() -> TheoremResult:
    def run():
        outcomes = [(p, *prove_invariant(p, c, free_policy=True)) for p, c in cases()]
        failed = [f"{p.effect} under {p.deployment.as_dict()}: {why}" for p, ok, _, why in outcomes if not ok]
        confirmed = sum(1 for _, ok, status, _ in outcomes if ok and status is Status.CONFIRMED)
        return outcomes, failed, confirmed
    (outcomes, failed, confirmed), seconds = timed(run)
    detail = (f"{len(outcomes) - len(failed)}/{len(outcomes)} (deployment, effect) pairs proved" +
              (f"; failed: {failed[0]}" if failed else ""))
    return TheoremResult(NAME, STATEMENT, not failed, detail, seconds, f"cvc5 {confirmed}/{len(outcomes)}")
