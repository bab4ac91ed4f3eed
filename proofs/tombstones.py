"""Theorem: tombstones suffice — under `evicted: tombstone` M1 (monotone evidence) holds for every policy."""

from __future__ import annotations

from dataclasses import replace

from prunecheck.checker.engines.certificate import Status
from prunecheck.checker.engines.certificate_model import Encoding
from prunecheck.checker.engines.replay import replay
from prunecheck.proofs.theorem import TheoremResult, any_policy, deployments, induction_label, prove_invariant, timed
from prunecheck.spec.conditions import violations
from prunecheck.spec.policy import DEPLOYMENT_CHOICES, EFFECTS, BoolLit, Deployment, Policy
from prunecheck.spec.runtime import Append, Compact

NAME = "tombstones suffice"
STATEMENT = ("With evidence: on and evicted: tombstone, M1 (no step destroys a span's content without a tombstone or a "
             "place in the log) holds for every policy the language can express (evict, rank and budget all free), "
             "whatever its effect (evict, mask, cut, summarise), and with evicted: logged for the effects evict and "
             "summarise, in every deployment of the other settings, at every depth and window size. Under "
             "evicted: destroyed and a host that truncates (host_truncation: on) the schema append(message, 2); "
             "compact(budget=1) violates M1 for every policy (the host's truncation takes the span whatever the "
             "policy says): replayed on the runtime for each effect. `audit` "
             "is fixed: the pair model's Init, Trans and M1's Bad are the same text under both audits (checked).")
# What each `evicted` keeps of a removed span, with the effects under which it is evidence for every removal.
EVIDENCE = (("tombstone", EFFECTS), ("logged", ("evict", "summarise")))
SCHEMA = (Append("message", 2), Compact(1))


def _policy(deployment: Deployment, effect: str) -> Policy:
    return replace(any_policy(deployment), effect=effect)


def audit_unread(condition: str, deployment: Deployment, effect: str) -> bool:
    """The certificate model of `condition` is the same text under every `audit`: a proof under one covers all."""
    return len({Encoding(_policy(replace(deployment, audit=audit), effect), condition, True).model_text()
                for audit in DEPLOYMENT_CHOICES["audit"]}) == 1


def _destroyed_violates(effect: str) -> bool:
    """The schema violates M1 on the runtime under destroyed and a truncating host, for a policy that takes nothing
    itself."""
    policy = replace(Policy("takes nothing", BoolLit(False), deployment=Deployment(evidence="on", host_truncation="on")),
                     effect=effect)
    return "M1" in violations(policy, replay(policy, SCHEMA)[-1])


def cases() -> list:
    """(policy, condition) pairs the theorem proves."""
    return [(_policy(dep, effect), "M1") for evicted, effects in EVIDENCE
            for dep in deployments(evicted=evicted, evidence="on", audit="independent") for effect in effects]


def label():
    return induction_label(cases())


def prove() -> TheoremResult:
    def run():
        return [(p.deployment, p.effect, *prove_invariant(p, c, free_policy=True)) for p, c in cases()]
    outcomes, seconds = timed(run)
    failed = [f"M1 under {dep.as_dict()}, effect {effect}: {why}" for dep, effect, ok, _, why in outcomes if not ok]
    failed += [f"the schema does not violate M1 under destroyed, effect {e}" for e in EFFECTS
               if not _destroyed_violates(e)]
    failed += [f"M1 reads audit under {dep.as_dict()}, effect {effect}" for dep, effect, *_ in outcomes
               if dep.records == dep.rationale == "window" and not audit_unread("M1", dep, effect)]
    confirmed = sum(1 for *_, ok, status, _ in outcomes if ok and status is Status.CONFIRMED)
    detail = (f"{len(outcomes) - len(failed)}/{len(outcomes)} (deployment, effect) pairs proved; the destroyed "
              "schema replayed for every effect" + (f"; failed: {failed[0]}" if failed else ""))
    return TheoremResult(NAME, STATEMENT, not failed, detail, seconds, f"cvc5 {confirmed}/{len(outcomes)}")
