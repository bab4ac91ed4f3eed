"""Bounded model checking: one incremental z3 solver per policy, an assumption literal per condition and depth."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Iterable

import z3

from prunecheck.spec.conditions import CONDITIONS
from prunecheck.symbolic.conditions import violation_at
from prunecheck.symbolic.model import Model
from prunecheck.spec.policy import Policy

from prunecheck.checker.engines.canonical import least_model
from prunecheck.checker.engines.invariants import inductive_lemmas, lemma_terms
from prunecheck.spec.errors import ReplayMismatch

from prunecheck.checker.engines.minimize import minimize
from prunecheck.checker.engines.replay import confirm, decode_action, decode_state, first_violation
from prunecheck.checker.result import EngineRun, Outcome, Result, Stats, Stop, Trace, Verdict
from prunecheck.symbolic.solver import new_solver, queries_asked, query
from prunecheck.checker.engines.unknowns import bound_words, limit_words

DEFAULT_DEPTH = 12
DEFAULT_SPANS = 6
DEFAULT_TIMEOUT = 30.0


def check_bounded(policy: Policy, depth: int = DEFAULT_DEPTH, spans: int = DEFAULT_SPANS,
                  conditions: Iterable[str] = CONDITIONS, timeout: float = DEFAULT_TIMEOUT,
                  assume: Iterable[str] = (), token_domain=None, lemmas: bool = True, rlimit: int = 0,
                  accelerate: bool = True, repeat_domain=None, clock_targets=()) -> tuple:
    """Per condition: `violated` with a replayed shortest trace, or `unknown` with why (never `holds`).

    With `assume`, only runs along which those conditions hold at every step are searched (for witnesses that
    one condition does not imply another). Without `lemmas`, the search skips proving structural invariants first:
    cheaper for a few steps, exponentially dearer for many. `rlimit` bounds each query by z3's resource count as well
    as by time (tests pass a generous timeout and an rlimit, so that load cannot change their outcome).
    With `accelerate` (the default) a step may repeat a read or an audit any number of times, so `depth` counts
    actions, not steps: a violation after 3 actions and 10^6 steps is found at depth 3 (spec/SPEC.md §7).
    `token_domain` and `repeat_domain` (with `clock_targets`) restrict appends' tokens and repetitions, to compare
    with the explicit engine (checker/engines/explicit.py `Domains`).
    """
    pending = [c for c in CONDITIONS if c in set(conditions)]
    if not pending:
        return ()
    assume = tuple(assume)
    model = Model(policy, spans, token_domain=token_domain, accelerate=accelerate, repeat_domain=repeat_domain,
                  clock_targets=clock_targets)
    before = queries_asked()
    invariant = inductive_lemmas(model, timeout, rlimit) if lemmas else None
    asked = {c: queries_asked() - before for c in pending}  # the lemmas serve every condition
    solver = new_solver(timeout * 1000, rlimit)
    states, actions, steps = [model.state(0)], [], []
    solver.add(model.encode_init(states[0]))
    spent = {c: 0.0 for c in pending}
    results = {}
    for k in range(depth + 1):
        if k > 0:
            actions.append(model.action(k - 1))
            states.append(model.state(k))
            step = model.encode_step(states[k - 1], actions[k - 1], states[k])
            steps.append(step)
            solver.add(step.constraints)
            if invariant is not None:
                solver.add(lemma_terms(model, states[k], invariant))
        for c in assume:
            held = violation_at(model, c, states, actions, steps, k)
            if held is not None:
                solver.add(z3.Not(held))
        bads = {c: violation_at(model, c, states, actions, steps, k) for c in pending}
        groups = [{c: term for c, term in bads.items() if term is not None}]
        while groups:
            group = groups.pop()
            if not group:
                continue
            literal = z3.Bool(f"check_{'_'.join(group)}@{k}")
            solver.add(z3.Implies(literal, z3.Or(list(group.values()))))
            left = timeout - max(spent[c] for c in group)
            answer = query(solver, [literal], int(left * 1000)) if left > 0 else None
            for c in group:
                spent[c] += answer.seconds if answer is not None else 0.0
                asked[c] += answer is not None
            if answer is not None and answer.status == "unsat":
                continue
            if answer is None or answer.status == "unknown":
                if len(group) > 1:
                    # A joint query may give up where single ones do not: ask each condition alone.
                    groups.extend({c: term} for c, term in group.items())
                    continue
                why = answer.reason if answer is not None else "timeout"
                searched = f"; {bound_words(k - 1, spans, accelerate)}" if k else ""
                (c,) = group
                results[c] = Result(c, Verdict.UNKNOWN, max(k - 1, 0), f"{limit_words(why, k)}{searched}",
                                    seconds=spent[c], stop=Stop.LIMIT,
                                    stats=_stats(Outcome.LIMIT, max(k - 1, 0), asked[c], spent[c]))
                pending.remove(c)
                continue
            zmodel = solver.model()
            hit = [c for c, term in group.items() if z3.is_true(zmodel.eval(term, model_completion=True))]
            for c in hit:
                started, before = time.monotonic(), queries_asked()
                least = least_model(solver, [literal, group[c]], actions[:k], zmodel, spans,
                                    started + max(0.0, timeout - spent[c]), states[k].clock)
                spent[c] += time.monotonic() - started
                asked[c] += queries_asked() - before
                found = _counterexample(policy, least, c, states, actions, spans, k, spent[c], assume)
                results[c] = replace(found, stats=_stats(Outcome.COUNTEREXAMPLE, k, asked[c], spent[c]))
                pending.remove(c)
            groups.append({c: term for c, term in group.items() if c not in hit})
        if not pending:
            break
    for condition in pending:
        results[condition] = Result(condition, Verdict.UNKNOWN, depth, bound_words(depth, spans, accelerate),
                                    seconds=spent[condition], stop=Stop.BOUND,
                                    stats=_stats(Outcome.BOUND, depth, asked[condition], spent[condition]))
    return tuple(results[c] for c in CONDITIONS if c in results)


def _stats(outcome: Outcome, depth: int, queries: int, seconds: float) -> Stats:
    return Stats((EngineRun("bmc", outcome, depth, queries, None, seconds),))


def _counterexample(policy, zmodel, condition, states, actions, spans, k, seconds, assume=()) -> Result:
    trace_actions = tuple(decode_action(zmodel, a) for a in actions[:k])
    symbolic = [decode_state(zmodel, s) for s in states[: k + 1]]
    transitions = confirm(policy, trace_actions, condition, spans, symbolic)
    for c in assume:
        if first_violation(policy, transitions, c) is not None:
            raise ReplayMismatch(f"a run assumed to keep {c} violates it on the runtime")
    if not assume:
        trace_actions = minimize(policy, trace_actions, condition, spans)
        confirm(policy, trace_actions, condition, spans)
    trace = Trace(condition, trace_actions, spans)
    return Result(condition, Verdict.VIOLATED, k, f"violated after {trace.length()} (shortest within {spans} spans, "
                  "reduced); replayed on the runtime", trace=trace, seconds=seconds)
