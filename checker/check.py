"""The checking entry point: a policy in, a Report out, with everything needed to reproduce it."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Iterable, Optional

import z3

from prunecheck import __version__
from prunecheck.spec.conditions import CONDITIONS
from prunecheck.spec.policy import Policy

from .bmc import DEFAULT_DEPTH, DEFAULT_SPANS, DEFAULT_TIMEOUT, check_bounded
from .explicit import domains_for, explore
from .printer import to_text
from .prove import prove_all
from .spacer import prove_with_spacer
from .result import Report, Result, Stop, Verdict
from .unknowns import attempt_of, unknown_reason
from .variants import distinct_counterexamples


QUICK_DEPTH = 4


def policy_document(policy: Policy) -> dict:
    """The parsed policy as a canonical mapping; parsing it back (as JSON) gives an equal Policy."""
    doc = {"name": policy.name}
    if policy.description:
        doc["description"] = policy.description
    doc["evict"] = to_text(policy.evict)
    if policy.rank is not None:
        doc["rank"] = to_text(policy.rank)
    if policy.budget is not None:
        doc["budget"] = policy.budget
    doc["deployment"] = policy.deployment.as_dict()
    return doc


def policy_hash(policy: Policy) -> str:
    """sha256 of the parsed policy (not of its text: reformatting does not change it)."""
    return hashlib.sha256(repr(policy).encode()).hexdigest()


def versions() -> tuple:
    return (("prunecheck", __version__), ("z3", z3.get_version_string()))


def new_report(policy: Policy, digest: str, depth: int, spans: int, results: tuple) -> Report:
    """A Report that names the deployment it was checked under and the keys an override set."""
    return Report(policy.name, digest, policy.source, depth, spans, results, versions(),
                  tuple(policy.deployment.as_dict().items()), tuple(policy.overridden))


def clear_caches() -> None:
    """Forget what this process shares between checks: step templates (with their lemmas), proofs with the policy
    abstracted, cvc5's answers, regenerated models and confirmed certificates. Reports do not change; only the time
    of the next checks does."""
    from prunecheck.spec import template

    from . import certificate, prove

    template._templates.clear()
    prove._shared.clear()
    certificate.clear_memos()


def check(policy: Policy, depth: int = DEFAULT_DEPTH, spans: int = DEFAULT_SPANS,
          only: Iterable[str] = CONDITIONS, timeout: float = DEFAULT_TIMEOUT, memory_mb: int = 0,
          prove: bool = True, token_domain=None, counterexamples: int = 1, repeat_domain=None,
          rlimit: int = 0, proofs: Optional[dict] = None) -> Report:
    """Prove by induction what it can, search for counterexamples to the rest, then give Spacer what is left.

    Every `holds` carries a certificate re-checked by a second solver; every `violated` carries a trace already
    replayed on the runtime; everything else is `unknown`, with the reasons of both engines. `rlimit` (0: none)
    bounds every solver query by resources as well as `timeout` does by seconds: with a generous timeout, the
    report no longer depends on the machine's load (tests use it). `proofs` ({condition: Result}) are this
    policy's induction attempts at these bounds, already made (`prove_all`): they are not made again.
    """
    wanted = [c for c in CONDITIONS if c in set(only)]
    if memory_mb > 0:
        z3.set_param("memory_max_size", int(memory_mb))
    try:
        restrict = {"token_domain": token_domain, "repeat_domain": repeat_domain, "rlimit": rlimit}
        report = _check(policy, wanted, depth, spans, timeout, prove, restrict, proofs or {})
        return with_variants(policy, report, counterexamples, timeout, rlimit) if counterexamples > 1 else report
    except z3.Z3Exception as exc:
        if "memory" not in str(exc):
            raise
        results = tuple(Result(c, Verdict.UNKNOWN, None, f"solver memory limit of {memory_mb} MB reached")
                        for c in wanted)
        return new_report(policy, policy_hash(policy), depth, spans, results)
    finally:
        if memory_mb > 0:
            z3.set_param("memory_max_size", 0)


def _check(policy, wanted, depth, spans, timeout, prove, restrict, known) -> Report:
    rlimit = restrict["rlimit"]
    doc, digest = policy_document(policy), policy_hash(policy)
    refuted = {}
    if prove:
        # Most violations are a few steps deep: find those first, so the prover only sees what may hold.
        quick = check_bounded(policy, min(depth, QUICK_DEPTH), spans, wanted, timeout, lemmas=False, **restrict)
        refuted = {r.condition: r for r in quick if r.verdict == Verdict.VIOLATED}
    proofs = {}
    if prove:
        proofs = {c: known[c] for c in wanted if c in known and c not in refuted}
        pending = [c for c in wanted if c not in refuted and c not in known]
        proofs.update(prove_all(policy, pending, doc, digest, timeout, rlimit))
    open_conditions = [c for c in wanted
                       if c not in refuted and (c not in proofs or proofs[c].verdict != Verdict.HOLDS)]
    bounded = {r.condition: r for r in check_bounded(policy, depth, spans, open_conditions, timeout, **restrict)}
    bounded.update(refuted)
    results = []
    for c in wanted:
        if c in proofs and proofs[c].verdict == Verdict.HOLDS:
            results.append(proofs[c])
            continue
        r = bounded[c]
        if not prove and r.verdict == Verdict.UNKNOWN:
            attempts = [attempt_of(r, "bounded search")]
            reason = unknown_reason(policy, attempts, depth, spans, timeout, rlimit)
            results.append(replace(r, reason=f"{reason}; no proof attempted (--no-prove: bounded search only)"))
            continue
        if r.verdict != Verdict.UNKNOWN or c not in proofs:
            results.append(r)
            continue
        # Neither proved by induction nor refuted within the bound: give Spacer the condition's time.
        spacer = prove_with_spacer(policy, c, doc, digest, timeout, rlimit=rlimit)
        if spacer.verdict == Verdict.HOLDS:
            results.append(spacer)
        else:
            attempts = [attempt_of(r, "bounded search"), attempt_of(proofs[c], "induction"),
                        attempt_of(spacer, "Spacer")]
            stop = Stop.LIMIT if any(a.stop is Stop.LIMIT for a in attempts) else r.stop
            reason = unknown_reason(policy, attempts, depth, spans, timeout, rlimit)
            results.append(Result(c, Verdict.UNKNOWN, r.depth, reason, engine="bmc+induction+spacer",
                                  seconds=r.seconds + proofs[c].seconds + spacer.seconds, stop=stop))
    return new_report(policy, digest, depth, spans, tuple(results))


def with_variants(policy: Policy, report: Report, count: int, timeout: float, rlimit: int = 0) -> Report:
    """The report with up to `count` counterexamples per violated condition, different in their action sequences."""
    results = []
    for r in report.results:
        if r.trace is not None:
            traces = distinct_counterexamples(policy, r.condition, r.trace, count, report.depth, timeout, rlimit)
            r = replace(r, others=traces[1:])
        results.append(r)
    return replace(report, results=tuple(results))


def check_explicit(policy: Policy, depth: int = DEFAULT_DEPTH, spans: int = DEFAULT_SPANS,
                   only: Iterable[str] = CONDITIONS, time_limit: float = DEFAULT_TIMEOUT,
                   tokens=None, repeats=None) -> Report:
    """The explicit-state oracle's report: the same shape, never `holds`, its domains named in every reason (tokens
    and repeats, when given, replace the domains derived from the policy's constants)."""
    results = explore(policy, depth, spans, only, domains_for(policy, tokens, repeats), time_limit)
    return new_report(policy, policy_hash(policy), depth, spans, results)
