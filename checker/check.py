"""The checking entry point: a policy in, a Report out, with everything needed to reproduce it."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Iterable, Optional

import z3

from prunecheck.spec.conditions import CONDITIONS
from prunecheck.spec.policy import Policy

from prunecheck.checker.engines.bmc import DEFAULT_DEPTH, DEFAULT_SPANS, DEFAULT_TIMEOUT, check_bounded
from prunecheck.checker.engines.explicit import domains_for, explore
from prunecheck.checker.language.document import policy_document, policy_hash
from prunecheck.checker.versions import versions
from prunecheck.checker.engines.prove import prove_all
from prunecheck.checker.engines.spacer import prove_with_spacer
from prunecheck.checker.result import Bounds, EngineRun, Outcome, Report, Result, Stats, Stop, Verdict
from prunecheck.symbolic.solver import queries_asked
from prunecheck.checker.engines.unknowns import attempt_of, unknown_reason
from prunecheck.checker.engines.variants import search_counterexamples


QUICK_DEPTH = 4


def new_report(policy: Policy, digest: str, depth: int, spans: int, results: tuple, bounds: Bounds = None) -> Report:
    """A Report that names the deployment it was checked under, the keys an override set and its bounds."""
    return Report(policy.name, digest, policy.source, depth, spans, results, versions(),
                  tuple(policy.deployment.as_dict().items()), tuple(policy.overridden), bounds)


def _domain(values):
    return None if values is None else tuple(sorted(set(values)))


def clear_caches() -> None:
    """Forget what this process shares between checks: step templates (with their lemmas), proofs with the policy
    abstracted, cvc5's answers, regenerated models and confirmed certificates. Reports do not change; only the time
    of the next checks does."""
    from prunecheck.symbolic import template

    from prunecheck.checker.engines import certificate
    from prunecheck.checker.engines import prove

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
    bounds = Bounds(float(timeout), int(rlimit), int(memory_mb), _domain(token_domain), _domain(repeat_domain))
    if memory_mb > 0:
        z3.set_param("memory_max_size", int(memory_mb))
    try:
        restrict = {"token_domain": token_domain, "repeat_domain": repeat_domain, "rlimit": rlimit}
        report = replace(_check(policy, wanted, depth, spans, timeout, prove, restrict, proofs or {}), bounds=bounds)
        return with_variants(policy, report, counterexamples, timeout, rlimit) if counterexamples > 1 else report
    except z3.Z3Exception as exc:
        if "memory" not in str(exc):
            raise
        results = tuple(Result(c, Verdict.UNKNOWN, None, f"solver memory limit of {memory_mb} MB reached")
                        for c in wanted)
        return new_report(policy, policy_hash(policy), depth, spans, results, bounds)
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
        before = {r.condition: r.stats for r in quick if r.condition not in refuted}
    else:
        before = {}
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
    for c in wanted:  # each result's statistics: every engine that ran on it, in order
        result = _decide(policy, c, proofs, bounded, prove, doc, digest, (depth, spans, timeout, rlimit))
        ran = [r.stats for r in (proofs.get(c), bounded.get(c)) if r is not None]
        results.append(replace(result, stats=before.get(c, Stats()).then(*ran, _spacer_stats(result))))
    return new_report(policy, digest, depth, spans, tuple(results))


def _spacer_stats(result: Result) -> Stats:
    return Stats(tuple(run for run in result.stats.runs if run.engine == "spacer"))


def _decide(policy, c, proofs, bounded, prove, doc, digest, limits) -> Result:
    """Condition c's result from the proof, the bounded search and, if neither decided it, Spacer."""
    depth, spans, timeout, rlimit = limits
    if c in proofs and proofs[c].verdict == Verdict.HOLDS:
        return proofs[c]
    r = bounded[c]
    if not prove and r.verdict == Verdict.UNKNOWN:
        attempts = [attempt_of(r, "bounded search")]
        reason = unknown_reason(policy, attempts, depth, spans, timeout, rlimit)
        return replace(r, reason=f"{reason}; no proof attempted (--no-prove: bounded search only)")
    if r.verdict != Verdict.UNKNOWN or c not in proofs:
        return r
    # Neither proved by induction nor refuted within the bound: give Spacer the condition's time.
    spacer = prove_with_spacer(policy, c, doc, digest, timeout, rlimit=rlimit)
    if spacer.verdict == Verdict.HOLDS:
        return spacer
    attempts = [attempt_of(r, "bounded search"), attempt_of(proofs[c], "induction"), attempt_of(spacer, "Spacer")]
    stop = Stop.LIMIT if any(a.stop is Stop.LIMIT for a in attempts) else r.stop
    reason = unknown_reason(policy, attempts, depth, spans, timeout, rlimit)
    return Result(c, Verdict.UNKNOWN, r.depth, reason, engine="bmc+induction+spacer",
                  seconds=r.seconds + proofs[c].seconds + spacer.seconds, stop=stop, stats=spacer.stats)


def with_variants(policy: Policy, report: Report, count: int, timeout: float, rlimit: int = 0) -> Report:
    """The report with up to `count` counterexamples per violated condition, different in their action sequences."""
    results = []
    for r in report.results:
        if r.trace is not None:
            started, asked = time.perf_counter(), queries_asked()
            traces, variants = search_counterexamples(policy, r.condition, r.trace, count, report.depth, timeout,
                                                      rlimit)
            search = EngineRun("bmc", Outcome.COUNTEREXAMPLE, r.depth, queries_asked() - asked, None,
                               time.perf_counter() - started)  # the further counterexamples' queries
            r = replace(r, others=traces[1:], variants=variants, stats=r.stats.then(Stats((search,))))
        results.append(r)
    return replace(report, results=tuple(results))


def check_explicit(policy: Policy, depth: int = DEFAULT_DEPTH, spans: int = DEFAULT_SPANS,
                   only: Iterable[str] = CONDITIONS, time_limit: float = DEFAULT_TIMEOUT,
                   tokens=None, repeats=None) -> Report:
    """The explicit-state oracle's report: the same shape, never `holds`, its domains named in every reason (tokens
    and repeats, when given, replace the domains derived from the policy's constants)."""
    domains = domains_for(policy, tokens, repeats)
    results = explore(policy, depth, spans, only, domains, time_limit)
    bounds = Bounds(float(time_limit), tokens=domains.tokens, repeats=domains.repeats)
    return new_report(policy, policy_hash(policy), depth, spans, results, bounds)
