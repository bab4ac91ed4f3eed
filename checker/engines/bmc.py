"""Bounded model checking: one incremental z3 solver per policy, an assumption literal per condition and depth."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Iterable

import z3

from prunecheck.spec.conditions import CONDITIONS, applicable
from prunecheck.symbolic.conditions import violation_at
from prunecheck.symbolic.model import Model
from prunecheck.symbolic.runs import RunModel
from prunecheck.spec.policy import Policy

from prunecheck.checker.engines.canonical import least_model
from prunecheck.checker.engines.invariants import inductive_lemmas, lemma_terms
from prunecheck.spec.errors import ReplayMismatch

from prunecheck.checker.engines.minimize import minimize
from prunecheck.checker.engines.replay import confirm, decode_action, decode_state, first_violation
from prunecheck.checker.options import DEFAULTS
from prunecheck.checker.result import (Clause, EngineRun, Found, Method, Outcome, Reason, Result, Stats, Stop, Trace,
                                       Verdict)
from prunecheck.symbolic.solver import Status, new_solver, queries_asked, query
from prunecheck.checker.engines.unknowns import solver_said
from prunecheck.checker.progress import current

def check_bounded(policy: Policy, depth: int = DEFAULTS.depth, spans: int = DEFAULTS.spans,
                  conditions: Iterable[str] = CONDITIONS, timeout: float = DEFAULTS.timeout,
                  assume: Iterable[str] = (), token_domain=None, lemmas: bool = True, rlimit: int = 0,
                  accelerate: bool = True, repeat_domain=None, clock_targets=(), runs: tuple = ()) -> tuple:
    """Per condition: `violated` with a replayed shortest trace, or `unknown` with why (never `holds`).

    With `assume`, only runs along which those conditions hold at every step are searched (for witnesses that
    one condition does not imply another). Without `lemmas`, the search skips proving structural invariants first:
    cheaper for a few steps, exponentially dearer for many. `rlimit` bounds each query by z3's resource count as well
    as by time (tests pass a generous timeout and an rlimit, so that load cannot change their outcome).
    With `accelerate` (the default) a step may repeat a read or an audit any number of times, so `depth` counts
    actions, not steps: a violation after 3 actions and 10^6 steps is found at depth 3 (spec/SPEC.md §7).
    `token_domain` and `repeat_domain` (with `clock_targets`) restrict appends' tokens and repetitions, to compare
    with the explicit engine (checker/result.py `Domains`).
    With `runs` (a domain of run lengths), an append may add a run of equal spans in one slot (symbolic/runs.py): a
    search for violations at real sizes, whose traces are replayed like any other but are not claimed shortest.
    """
    pending = list(applicable(policy, conditions))
    if not pending:
        return ()
    if runs:
        model = RunModel(policy, spans, runs, token_domain=token_domain)
    else:
        model = Model(policy, spans, token_domain=token_domain, accelerate=accelerate, repeat_domain=repeat_domain,
                      clock_targets=clock_targets)
    before = queries_asked()
    progress = current()
    if lemmas:
        progress.step("bounded search: structural lemmas")
    invariant = inductive_lemmas(model, timeout, rlimit) if lemmas else None
    search = _Unrolling(policy, model, pending, tuple(assume), timeout, rlimit)
    search.asked = {c: queries_asked() - before for c in pending}  # the lemmas serve every condition
    for k in range(depth + 1):
        progress.step(f"bounded search{' with runs' * bool(runs)} {k}/{depth}: {', '.join(search.pending)}")
        if k > 0:
            search.extend(invariant)
        search.ask(k)
        if not search.pending:
            break
    for c in search.pending:
        search.results[c] = Result(c, Verdict.UNKNOWN, depth, _bound(depth, spans, accelerate),
                                   seconds=search.spent[c], stop=Stop.BOUND,
                                   stats=_stats(Outcome.BOUND, depth, search.asked[c], search.spent[c]))
    return tuple(search.results[c] for c in CONDITIONS if c in search.results)


class _Unrolling:
    """One incremental solver over the model unrolled step by step, asked at each depth whether the pending
    conditions can be violated there (jointly first, one by one where a joint query gives up)."""

    def __init__(self, policy, model: Model, pending: list, assume: tuple, timeout: float, rlimit: int):
        self.policy, self.model, self.pending, self.assume = policy, model, pending, assume
        self.timeout, self.spans = timeout, model.n
        self.solver = new_solver(timeout * 1000, rlimit)
        self.states, self.actions, self.steps = [model.state(0)], [], []
        self.solver.add(model.encode_init(self.states[0]))
        self.spent = {c: 0.0 for c in pending}
        self.asked, self.results = {}, {}

    def extend(self, invariant) -> None:
        """One more step, with the structural lemmas on its post-state."""
        k, model = len(self.states), self.model
        self.actions.append(model.action(k - 1))
        self.states.append(model.state(k))
        step = model.encode_step(self.states[k - 1], self.actions[k - 1], self.states[k])
        self.steps.append(step)
        self.solver.add(step.constraints)
        if invariant is not None:
            self.solver.add(lemma_terms(model, self.states[k], invariant))

    def bad(self, condition: str, k: int):
        return violation_at(self.model, condition, self.states, self.actions, self.steps, k)

    def ask(self, k: int) -> None:
        """Settle every pending condition violable at depth k."""
        for c in self.assume:
            held = self.bad(c, k)
            if held is not None:
                self.solver.add(z3.Not(held))
        bads = {c: self.bad(c, k) for c in self.pending}
        groups = [{c: term for c, term in bads.items() if term is not None}]
        while groups:
            group = groups.pop()
            if group:
                groups.extend(self._ask_group(group, k))

    def _ask_group(self, group: dict, k: int) -> list:
        """Ask whether some condition of the group is violable at depth k; the groups still to ask."""
        literal = z3.Bool(f"check_{'_'.join(group)}@{k}")
        self.solver.add(z3.Implies(literal, z3.Or(list(group.values()))))
        left = self.timeout - max(self.spent[c] for c in group)
        answer = query(self.solver, [literal], int(left * 1000)) if left > 0 else None
        for c in group:
            self.spent[c] += answer.seconds if answer is not None else 0.0
            self.asked[c] += answer is not None
        if answer is not None and answer.status == Status.UNSAT:
            return []
        if answer is None or answer.status == Status.UNKNOWN:
            if len(group) > 1:
                # A joint query may give up where single ones do not: ask each condition alone.
                return [{c: term} for c, term in group.items()]
            self._gave_up(*group, answer.reason if answer is not None else "timeout", k)
            return []
        zmodel = self.solver.model()
        hit = [c for c, term in group.items() if z3.is_true(zmodel.eval(term, model_completion=True))]
        for c in hit:
            self._found(c, [literal, group[c]], zmodel, k)
        return [{c: term for c, term in group.items() if c not in hit}]

    def _gave_up(self, c: str, why, k: int) -> None:
        stopped = Clause(Method.BMC, Found.LIMIT, max(k - 1, 0), self.spans, repeats=self.model.accelerate, at=k,
                         solver=solver_said(why))
        self.results[c] = Result(c, Verdict.UNKNOWN, max(k - 1, 0), Reason((stopped,)),
                                 seconds=self.spent[c], stop=Stop.LIMIT,
                                 stats=_stats(Outcome.LIMIT, max(k - 1, 0), self.asked[c], self.spent[c]))
        self.pending.remove(c)

    def _found(self, c: str, assumptions: list, zmodel, k: int) -> None:
        """The canonical counterexample to c at depth k, replayed and reduced."""
        started, before = time.monotonic(), queries_asked()
        least = least_model(self.solver, assumptions, self.actions[:k], zmodel, self.spans,
                            started + max(0.0, self.timeout - self.spent[c]), self.states[k].clock)
        self.spent[c] += time.monotonic() - started
        self.asked[c] += queries_asked() - before
        found = _counterexample(self.policy, least, c, self.states, self.actions, self.spans, k, self.spent[c],
                                self.assume, runs=isinstance(self.model, RunModel))
        self.results[c] = replace(found, stats=_stats(Outcome.COUNTEREXAMPLE, k, self.asked[c], self.spent[c]))
        self.pending.remove(c)


def _run_counterexample(policy, trace_actions, condition, k, seconds) -> Result:
    """A counterexample of the run search: replayed on the runtime (its runs expanded by the runtime itself) and
    reduced; its span bound is the spans it writes, and it is not claimed shortest."""
    confirm(policy, trace_actions, condition, None)
    trace_actions = minimize(policy, trace_actions, condition, None)
    transitions = confirm(policy, trace_actions, condition, None)
    written = len(transitions[-1].after.spans)
    trace = Trace(condition, trace_actions, written)
    found = Clause(Method.RUNS, Found.VIOLATED, k, written, len(trace.actions), trace.steps)
    return Result(condition, Verdict.VIOLATED, k, Reason((found,)), trace=trace, seconds=seconds,
                  engine=Method.RUNS)


def _bound(depth: int, spans: int, accelerate: bool) -> Reason:
    return Reason((Clause(Method.BMC, Found.BOUND, depth, spans, repeats=accelerate),))


def _stats(outcome: Outcome, depth: int, queries: int, seconds: float) -> Stats:
    return Stats((EngineRun(Method.BMC, outcome, depth, queries, None, seconds),))


def _counterexample(policy, zmodel, condition, states, actions, spans, k, seconds, assume=(), runs=False) -> Result:
    trace_actions = tuple(decode_action(zmodel, a) for a in actions[:k])
    if runs:
        return _run_counterexample(policy, trace_actions, condition, k, seconds)
    symbolic = [decode_state(zmodel, s) for s in states[: k + 1]]
    transitions = confirm(policy, trace_actions, condition, spans, symbolic)
    for c in assume:
        if first_violation(policy, transitions, c) is not None:
            raise ReplayMismatch(f"a run assumed to keep {c} violates it on the runtime")
    if not assume:
        trace_actions = minimize(policy, trace_actions, condition, spans)
        confirm(policy, trace_actions, condition, spans)
    trace = Trace(condition, trace_actions, spans)
    found = Clause(Method.BMC, Found.VIOLATED, k, spans, len(trace.actions), trace.steps)
    return Result(condition, Verdict.VIOLATED, k, Reason((found,)), trace=trace, seconds=seconds)
