"""Theorem: separation suffices — records in the undo region keep C1, C2 and (under reconstruct) U1 for every policy."""

from __future__ import annotations

from prunecheck.checker.engines.certificate import Status
from prunecheck.proofs.theorem import TheoremResult, any_policy, deployments, induction_label, prove_invariant, timed

NAME = "separation suffices"
STATEMENT = ("With recovery records in their own undo region, C1 and C2 hold for every policy the language can "
             "express (evict, rank and budget all free), in every deployment of the other settings, at every depth "
             "and window size; so does U1 ('no undo without its record') where an undo without its record would "
             "reconstruct (missing_record: reconstruct), and all three where a stale undo is a merge that writes its "
             "own record (undo: merge).")
# (deployments, conditions): the first seed's settings, then issue 16's undo options (spec/SPEC.md §4e).
CASES = (({"records": "undo_region"}, ("C1", "C2")),
         ({"records": "undo_region", "missing_record": "reconstruct"}, ("U1",)),
         ({"records": "undo_region", "missing_record": "reconstruct", "undo": "merge"}, ("C1", "C2", "U1")))


def cases() -> list:
    """(policy, condition) pairs the theorem proves."""
    return [(any_policy(dep), c) for fixed, conditions in CASES for dep in deployments(**fixed) for c in conditions]


def label():
    return induction_label(cases())


def prove() -> TheoremResult:
    def run():
        outcomes = [(p.deployment, c, *prove_invariant(p, c, free_policy=True)) for p, c in cases()]
        failed = [f"{c} under {dep.as_dict()}: {why}" for dep, c, ok, _, why in outcomes if not ok]
        confirmed = sum(1 for *_, ok, status, _ in outcomes if ok and status is Status.CONFIRMED)
        return outcomes, failed, confirmed
    (outcomes, failed, confirmed), seconds = timed(run)
    detail = (f"{len(outcomes) - len(failed)}/{len(outcomes)} (deployment, condition) pairs proved" +
              (f"; failed: {failed[0]}" if failed else ""))
    return TheoremResult(NAME, STATEMENT, not failed, detail, seconds, f"cvc5 {confirmed}/{len(outcomes)}")
