"""The checking entry point: a policy in, a Report out, with everything needed to reproduce it."""

from __future__ import annotations

import contextlib
import time
from dataclasses import replace
from typing import Optional

import z3

from prunecheck.spec.conditions import applicable
from prunecheck.spec.errors import ReplayMismatch, SolverUnknown
from prunecheck.spec.policy import Policy, staged

from prunecheck.checker.engines.bmc import check_bounded
from prunecheck.checker.engines.unknowns import counted_spans
from prunecheck.symbolic.runs import run_lengths, runs_apply, turning
from prunecheck.checker.engines.explicit import domains_for, explore
from prunecheck.checker.engines.peak import PeakWatch, explicit_peak, symbolic_peak
from prunecheck.checker.language.document import policy_document, policy_hash
from prunecheck.checker.versions import versions
from prunecheck.checker.engines.certificate import clear_memos
from prunecheck.checker.engines.prove import clear_shared, prove_all
from prunecheck.checker.engines.spacer import prove_with_spacer
from prunecheck.checker.options import DEFAULTS, MAX_SPANS, CheckOptions, Engine
from prunecheck.checker.progress import current
from prunecheck.checker.result import (Bounds, Clause, EngineRun, Found, Method, Note, Outcome, Reason, Report, Result,
                                       Stats, Stop, Verdict)
from prunecheck.symbolic.solver import out_of_memory, queries_asked
from prunecheck.symbolic.template import clear_templates
from prunecheck.checker.engines.unknowns import part_of, unknown_reason
from prunecheck.checker.engines.variants import search_counterexamples


QUICK_DEPTH = 4


def new_report(policy: Policy, digest: str, depth: int, spans: int, results: tuple, bounds: Bounds = None) -> Report:
    """A Report that names the deployment it was checked under, the keys an override set and its bounds."""
    return Report(policy.name, digest, policy.source, depth, spans, results, versions(),
                  tuple(policy.deployment.as_dict(policy.overridden).items()), tuple(policy.overridden), bounds,
                  basis=policy.basis)


def _domain(values):
    return None if values is None else tuple(sorted(set(values)))


def clear_caches() -> None:
    """Forget what this process shares between checks: step templates (with their lemmas), proofs with the policy
    abstracted, cvc5's answers, regenerated models, confirmed certificates and the counts comparisons turn at. Reports
    do not change; only the time of the next checks does."""
    clear_templates()
    clear_shared()
    clear_memos()
    turning.cache_clear()


def check(policy: Policy, options: CheckOptions = DEFAULTS, proofs: Optional[dict] = None) -> Report:
    """The one entry point: the policy checked as `options` say, by the engine they name.

    Symbolic: prove by induction what it can, search for counterexamples to the rest, then give Spacer what is left.
    Every `holds` carries a certificate re-checked by a second solver; every `violated` carries a trace already
    replayed on the runtime; everything else is `unknown`, with the reasons of both engines. With a generous timeout
    and an `rlimit`, the report no longer depends on the machine's load (tests use it). `proofs` ({condition:
    Result}) are this policy's induction attempts at these bounds, already made (`prove_all`): they are not made
    again. Explicit: the explicit-state oracle's report, of the same shape and never `holds` (with the recovery
    peak, one search finds both within the one time limit).
    """
    if options.engine is Engine.EXPLICIT:
        current().step(f"explicit-state search to depth {options.depth}")
        return _explicit(policy, options)
    if staged(policy):
        current().step(f"a list of stages: explicit-state search to depth {options.depth}")
        return _stages_explicit(policy, options)
    if options.recovery_peak:
        report = check(policy, replace(options, recovery_peak=False), proofs)
        return replace(report, recovery_peak=peak(policy, options))
    memory_mb = options.memory_mb
    bounds = Bounds(options.timeout, int(options.rlimit), int(memory_mb), _domain(options.tokens),
                    _domain(options.repeats))
    try:
        with _z3_memory(memory_mb):
            report = replace(_check(policy, options, proofs or {}), bounds=bounds)
            return with_variants(policy, report, options) if options.counterexamples > 1 else report
    except (SolverUnknown, z3.Z3Exception) as exc:
        if isinstance(exc, z3.Z3Exception) and not out_of_memory(exc):  # building terms can run out of memory too
            raise
        memory = Reason((Clause(Method.BMC, Found.MEMORY, megabytes=int(memory_mb)),))
        results = tuple(Result(c, Verdict.UNKNOWN, None, memory) for c in applicable(policy, options.conditions))
        return new_report(policy, policy_hash(policy), options.depth, options.spans, results, bounds)


@contextlib.contextmanager
def _z3_memory(megabytes: int):
    """While inside, z3 holds at most `megabytes` MB (0: no limit)."""
    if megabytes > 0:
        z3.set_param("memory_max_size", int(megabytes))
    try:
        yield
    finally:
        if megabytes > 0:
            z3.set_param("memory_max_size", 0)


def _check(policy: Policy, options: CheckOptions, known: dict) -> Report:
    wanted, depth, spans, timeout = options.conditions, options.depth, options.spans, options.timeout
    wanted = applicable(policy, wanted)  # T1 only for a policy that uses pairs
    restrict = {"token_domain": options.tokens, "repeat_domain": options.repeats, "rlimit": options.rlimit}
    doc, digest = policy_document(policy), policy_hash(policy)
    refuted = {}
    if options.prove:
        # Most violations are a few steps deep: find those first, so the prover only sees what may hold.
        quick = check_bounded(policy, min(depth, QUICK_DEPTH), spans, wanted, timeout, lemmas=False, **restrict)
        refuted = {r.condition: r for r in quick if r.verdict == Verdict.VIOLATED}
        before = {r.condition: r.stats for r in quick if r.condition not in refuted}
    else:
        before = {}
    proofs = {}
    if options.prove:
        proofs = {c: known[c] for c in wanted if c in known and c not in refuted}
        pending = [c for c in wanted if c not in refuted and c not in known]
        proofs.update(prove_all(policy, pending, doc, digest, timeout, options.rlimit))
    open_conditions = [c for c in wanted
                       if c not in refuted and (c not in proofs or proofs[c].verdict != Verdict.HOLDS)]
    # A shallow search with runs first: for a policy counting more spans than the slots, the bounded search to full
    # depth rarely finds what it finds (spec/SPEC.md §7d, "Order").
    early = _with_runs(policy, open_conditions, options, QUICK_DEPTH) if options.prove else {}
    found = {c: r for c, r in early.items() if r.verdict == Verdict.VIOLATED}
    before.update({c: before.get(c, Stats()).then(r.stats) for c, r in early.items() if c not in found})
    searched = [c for c in open_conditions if c not in found]
    bounded = {r.condition: r for r in check_bounded(policy, depth, spans, searched, timeout, **restrict)}
    bounded.update(refuted)
    bounded.update(found)
    results = []
    for c in wanted:  # each result's statistics: every engine that ran on it, in order
        result = _decide(policy, c, proofs, bounded, options, (doc, digest))
        ran = [r.stats for r in (proofs.get(c), bounded.get(c)) if r is not None]
        results.append(replace(result, stats=before.get(c, Stats()).then(*ran, _spacer_stats(result))))
    left = _with_runs(policy, [r.condition for r in results if r.verdict == Verdict.UNKNOWN], options, depth)
    results = [replace(left[r.condition], stats=r.stats.then(left[r.condition].stats))
               if r.condition in left and left[r.condition].verdict == Verdict.VIOLATED else r for r in results]
    return new_report(policy, digest, depth, spans, tuple(results))


def _with_runs(policy: Policy, conditions: list, options: CheckOptions, depth: int) -> dict:
    """The results of the search with runs (symbolic/runs.py) to `depth`, by condition, for the conditions given,
    if the policy counts more spans than the bound holds and runs can serve it (else none): violations, or
    `unknown` (nothing is claimed when a replay disagrees)."""
    if not conditions or counted_spans(policy) <= options.spans or not runs_apply(policy):
        return {}
    # Under `evidence: on` every compaction writes a ledger entry: one more slot, so that a window filled with runs
    # still has room for the compaction that shows the violation.
    slots = options.spans + (policy.deployment.evidence == "on")
    try:
        searched = check_bounded(policy, depth, slots, conditions, options.timeout,
                                 token_domain=options.tokens, lemmas=False, rlimit=options.rlimit,
                                 runs=run_lengths(policy, MAX_SPANS))
    except ReplayMismatch:  # a run the policy does not treat as a whole after all: nothing is claimed
        return {}
    return {r.condition: r for r in searched}


def _spacer_stats(result: Result) -> Stats:
    return Stats(tuple(run for run in result.stats.runs if run.engine is Method.SPACER))


def _decide(policy, c, proofs, bounded, options: CheckOptions, document: tuple) -> Result:
    """Condition c's result from the proof, the bounded search and, if neither decided it, Spacer."""
    limits = (options.depth, options.spans, options.timeout, options.rlimit)
    if c in proofs and proofs[c].verdict == Verdict.HOLDS:
        return proofs[c]
    r = bounded[c]
    if not options.prove and r.verdict == Verdict.UNKNOWN:
        reason = unknown_reason(policy, [part_of(r, Method.BMC)], *limits)
        return replace(r, reason=replace(reason, note=Note.NO_PROVE))
    if r.verdict != Verdict.UNKNOWN or c not in proofs:
        return r
    # Neither proved by induction nor refuted within the bound: give Spacer the condition's time.
    current().step(f"{c}: Spacer")
    spacer = prove_with_spacer(policy, c, *document, options.timeout, rlimit=options.rlimit)
    if spacer.verdict == Verdict.HOLDS:
        return spacer
    parts = [part_of(r, Method.BMC), part_of(proofs[c], Method.INDUCTION), part_of(spacer, Method.SPACER)]
    stop = Stop.LIMIT if any(p.stop is Stop.LIMIT for p in parts) else r.stop
    reason = unknown_reason(policy, parts, *limits)
    return Result(c, Verdict.UNKNOWN, r.depth, reason, engine=Method.COMBINED,
                  seconds=r.seconds + proofs[c].seconds + spacer.seconds, stop=stop, stats=spacer.stats)


def with_variants(policy: Policy, report: Report, options: CheckOptions) -> Report:
    """The report with up to `options.counterexamples` counterexamples per violated condition, different in their
    action sequences."""
    results = []
    for r in report.results:
        if r.trace is not None:
            current().step(f"{r.condition}: more counterexamples")
            started, asked = time.perf_counter(), queries_asked()
            traces, variants = search_counterexamples(policy, r.condition, r.trace, options.counterexamples,
                                                      report.depth, options.timeout, options.rlimit)
            search = EngineRun(Method.BMC, Outcome.COUNTEREXAMPLE, r.depth, queries_asked() - asked, None,
                               time.perf_counter() - started)  # the further counterexamples' queries
            r = replace(r, others=traces[1:], variants=variants, stats=r.stats.then(Stats((search,))))
        results.append(r)
    return replace(report, results=tuple(results))


def peak(policy: Policy, options: CheckOptions):
    """The recovery set's peak size within the options' bounds, by the engine they name (a bounded figure), within
    their time and memory limits."""
    current().step("recovery peak")
    if options.engine is Engine.EXPLICIT:
        domains = domains_for(policy, options.tokens, options.repeats)
        return explicit_peak(policy, options.depth, options.spans, domains, options.timeout,
                             memory_mb=options.memory_mb)
    with _z3_memory(options.memory_mb):
        return symbolic_peak(policy, options.depth, options.spans, _domain(options.tokens), options.timeout,
                             int(options.rlimit))


def _stages_explicit(policy: Policy, options: CheckOptions) -> Report:
    """A policy with a list of stages (SPEC §4h), which the symbolic models do not encode: the explicit engine's
    report, every reason noting that nothing was proved (so never `holds`)."""
    report = _explicit(policy, replace(options, engine=Engine.EXPLICIT))
    return replace(report, results=tuple(replace(r, reason=replace(r.reason, note=Note.STAGES))
                                         for r in report.results))


def _explicit(policy: Policy, options: CheckOptions) -> Report:
    """The explicit-state oracle's report: never `holds`, its domains named in every reason (tokens and repeats,
    when given, replace the domains derived from the policy's constants); with the recovery peak, measured on the
    same search."""
    domains = domains_for(policy, options.tokens, options.repeats)
    watch = PeakWatch() if options.recovery_peak else None
    results = explore(policy, options.depth, options.spans, options.only, domains, options.timeout,
                      memory_mb=options.memory_mb, watch=watch)
    bounds = Bounds(options.timeout, memory_mb=int(options.memory_mb), tokens=domains.tokens, repeats=domains.repeats)
    report = new_report(policy, policy_hash(policy), options.depth, options.spans, results, bounds)
    if watch is not None:
        report = replace(report, recovery_peak=watch.peak(options.depth, options.spans, domains))
    return report
