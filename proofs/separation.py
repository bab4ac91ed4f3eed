"""Theorem: separation suffices — records in the undo region keep C1 and C2 for every policy."""

from __future__ import annotations

from prunecheck.checker.engines.certificate import Status
from prunecheck.proofs.theorem import TheoremResult, any_policy, deployments, prove_invariant, timed

NAME = "separation suffices"
STATEMENT = ("With recovery records in their own undo region, C1 and C2 hold for every policy the language can "
             "express (evict, rank and budget all free), in every deployment of the other settings, at every depth "
             "and window size.")


def prove() -> TheoremResult:
    def run():
        outcomes = [(dep, c, *prove_invariant(any_policy(dep), c, free_policy=True))
                    for dep in deployments(records="undo_region") for c in ("C1", "C2")]
        failed = [f"{c} under {dep.as_dict()}: {why}" for dep, c, ok, _, why in outcomes if not ok]
        confirmed = sum(1 for *_, ok, status, _ in outcomes if ok and status is Status.CONFIRMED)
        return outcomes, failed, confirmed
    (outcomes, failed, confirmed), seconds = timed(run)
    detail = (f"{len(outcomes) - len(failed)}/{len(outcomes)} (deployment, condition) pairs proved" +
              (f"; failed: {failed[0]}" if failed else ""))
    return TheoremResult(NAME, STATEMENT, not failed, detail, seconds, f"cvc5 {confirmed}/{len(outcomes)}")
