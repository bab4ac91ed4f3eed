"""Theorem: a merge is not a revert — under undo: merge, C3 holds for every policy."""

from __future__ import annotations

from prunecheck.checker.engines.certificate import Status
from prunecheck.proofs.theorem import TheoremResult, any_policy, deployments, induction_label, prove_invariant, timed

NAME = "a merge is not a revert"
STATEMENT = ("With undo: merge, a stale undo writes the target as a new edit with its own record instead of "
             "reverting it, so C3 ('no undo reverts a span re-edited since its record was taken') holds for every "
             "policy the language can express, in every deployment of the other settings (missing_record: refuse "
             "or reconstruct), at every depth and window size.")


def cases() -> list:
    """(policy, condition) pairs the theorem proves."""
    deps = deployments(undo="merge") + deployments(undo="merge", missing_record="reconstruct")
    return [(any_policy(dep), "C3") for dep in deps]


def label():
    return induction_label(cases())


def prove() -> TheoremResult:
    def run():
        outcomes = [(p.deployment, *prove_invariant(p, c, free_policy=True)) for p, c in cases()]
        failed = [f"C3 under {dep.as_dict()}: {why}" for dep, ok, _, why in outcomes if not ok]
        confirmed = sum(1 for *_, ok, status, _ in outcomes if ok and status is Status.CONFIRMED)
        return outcomes, failed, confirmed
    (outcomes, failed, confirmed), seconds = timed(run)
    detail = f"{len(outcomes) - len(failed)}/{len(outcomes)} deployments proved" + (
        f"; failed: {failed[0]}" if failed else "")
    return TheoremResult(NAME, STATEMENT, not failed, detail, seconds, f"cvc5 {confirmed}/{len(outcomes)}")
