"""Theorem: the decision log is append-only — with evidence: on, A1 holds for every policy in every deployment."""

from __future__ import annotations

from dataclasses import replace

from prunecheck.checker.engines.certificate import Status
from prunecheck.proofs.theorem import TheoremResult, any_policy, deployments, induction_label, prove_invariant, timed
from prunecheck.proofs.tombstones import audit_unread
from prunecheck.spec.policy import DEPLOYMENT_CHOICES, EFFECTS

NAME = "the decision log is append-only"
STATEMENT = ("With evidence: on, A1 (no step removes or rewrites a decision-log entry: a rationale in the log "
             "namespace) holds for every policy the language can express (evict, rank and budget all free), "
             "whatever its effect and whatever `evicted` does with removed spans, in every deployment of the other "
             "settings, at every depth and window size. The archive of evicted: logged is not the decision log "
             "(an undo rewrites an archived target in place; spec/SPEC.md §6f). `audit` is fixed: the pair model's Init, "
             "Trans and A1's Bad are the same text under both audits (checked).")


def cases() -> list:
    """(policy, condition) pairs the theorem proves."""
    return [(replace(any_policy(dep), effect=effect), "A1") for evicted in DEPLOYMENT_CHOICES["evicted"]
            for dep in deployments(evicted=evicted, evidence="on", audit="independent") for effect in EFFECTS]


def label():
    return induction_label(cases())


def prove() -> TheoremResult:
    def run():
        return [(p.deployment, p.effect, *prove_invariant(p, c, free_policy=True)) for p, c in cases()]
    outcomes, seconds = timed(run)
    failed = [f"A1 under {dep.as_dict()}, effect {effect}: {why}" for dep, effect, ok, _, why in outcomes if not ok]
    failed += [f"A1 reads audit under {dep.as_dict()}, effect {effect}" for dep, effect, *_ in outcomes
               if dep.records == dep.rationale == "window" and not audit_unread("A1", dep, effect)]
    confirmed = sum(1 for *_, ok, status, _ in outcomes if ok and status is Status.CONFIRMED)
    detail = (f"{len(outcomes) - len(failed)}/{len(outcomes)} (deployment, effect) pairs proved" +
              (f"; failed: {failed[0]}" if failed else ""))
    return TheoremResult(NAME, STATEMENT, not failed, detail, seconds, f"cvc5 {confirmed}/{len(outcomes)}")
