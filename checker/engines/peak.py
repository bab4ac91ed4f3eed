"""The recovery set's peak size over the runs explored (--recovery-peak): a bounded figure, never a proof."""

from __future__ import annotations

import time
from typing import Optional

import z3

from prunecheck.spec.errors import SolverUnknown
from prunecheck.spec.policy import Policy
from prunecheck.spec.runtime import Edit, State, present, step
from prunecheck.symbolic.model import Model
from prunecheck.symbolic.solver import Status, new_solver, query, queries_asked

from prunecheck.checker.engines.explicit import SearchLimits, action_choices
from prunecheck.checker.engines.invariants import inductive_lemmas, lemma_terms
from prunecheck.checker.result import Domains, Method, RecoveryPeak


def recovery_set(state: State) -> tuple:
    """The record spans present in the state (a record of an undone edit too: it is still held)."""
    return tuple(state.span(e.record) for e in state.edits if present(state.span(e.record)))


def reservation(state: State) -> tuple:
    """What the first seed's cost reserves: "a small, permanent token reservation for the recovery set", its
    records and their rationale spans present, wherever they live (undo region, log or window)."""
    return recovery_set(state) + tuple(state.span(e.rationale) for e in state.edits
                                       if present(state.span(e.rationale)))


def _size(state: State) -> tuple:
    return len(recovery_set(state)), sum(span.tokens for span in reservation(state))


def _path(parent: dict, state: State) -> tuple:
    actions = []
    while parent[state] is not None:
        state, action = parent[state]
        actions.append(action)
    return tuple(reversed(actions))


class PeakWatch:
    """The recovery set's largest figures over the states a breadth-first search reaches (explicit.explore's
    `watch`), as of its last complete level, each with a run to it."""

    def __init__(self):
        self.started = time.perf_counter()
        self.best = {"records": (0, State()), "tokens": (0, State())}
        self.levels, self.figures = 0, ((0, ()), (0, ()))

    def see(self, state: State) -> None:
        for key, value in zip(("records", "tokens"), _size(state)):
            if value > self.best[key][0]:
                self.best[key] = (value, state)

    def level_done(self, level: int, parent: dict) -> None:
        self.levels = level
        self.figures = tuple((self.best[key][0], _path(parent, self.best[key][1])) for key in ("records", "tokens"))

    def peak(self, depth: int, spans: int, domains: Domains) -> RecoveryPeak:
        """The figures of the levels searched completely (its depth): complete if that is every level to `depth`."""
        (records, witness), (tokens, tokens_witness) = self.figures
        return RecoveryPeak(Method.EXPLICIT, records, tokens, self.levels, spans, domains.tokens, self.levels == depth,
                            witness, tokens_witness, seconds=time.perf_counter() - self.started)


def explicit_peak(policy: Policy, depth: int, spans: int, domains: Domains, time_limit: float,
                  modes: tuple = ("transform", "destroy"), memory_mb: int = 0) -> RecoveryPeak:
    """The max over every state the runtime reaches within `depth` actions over the domains (exact there), with a
    run to each maximum; stopped at `time_limit` seconds or `memory_mb` MB (looked at after each state), the figures
    are those of the levels searched completely (its depth). `modes`: the edit modes the agent uses (an agent that
    only transforms writes 1-token records)."""
    limits, watch = SearchLimits(time_limit, memory_mb=memory_mb), PeakWatch()
    parent, frontier = {State(): None}, [State()]
    for level in range(1, depth + 1):
        following = []
        for state in frontier:
            for action in action_choices(policy, state, spans, domains):
                if isinstance(action, Edit) and action.mode not in modes:
                    continue
                after = step(policy, state, action, spans).after
                if after in parent:
                    continue
                parent[after] = (state, action)
                following.append(after)
                watch.see(after)
            if limits.reached(len(parent)) is not None:
                return watch.peak(depth, spans, domains)
        watch.level_done(level, parent)
        frontier = following
    return watch.peak(depth, spans, domains)


def _unrolled(policy: Policy, depth: int, spans: int, token_domain, timeout: float, rlimit: int) -> tuple:
    """(a solver over the model unrolled `depth` actions from the empty window, each state's count of records)."""
    model = Model(policy, spans, token_domain=token_domain, accelerate=True)
    invariant = inductive_lemmas(model, timeout, rlimit)  # the bounded search's structural lemmas, as it adds them
    solver = new_solver(timeout * 1000, rlimit)
    states = [model.state(0)]
    solver.add(model.encode_init(states[0]))
    for k in range(depth):
        states.append(model.state(k + 1))
        solver.add(model.encode_step(states[k], model.action(k), states[k + 1]).constraints)
        solver.add(lemma_terms(model, states[k + 1], invariant))
    counts = [z3.Sum([z3.If(z3.And(s.is_record(i), s.present(i)), 1, 0) for i in range(spans)]) for s in states]
    return solver, counts


def symbolic_peak(policy: Policy, depth: int, spans: int, token_domain: Optional[tuple], timeout: float,
                  rlimit: int) -> RecoveryPeak:
    """The most records present at once within `depth` actions and `spans` slots, by queries "some state has at least
    k records" for growing k until one is unsat (complete) or unknown (the figure is what was reached); tokens are
    not counted (a destroy record's are as unbounded as its target's). The queries share `timeout` seconds; z3
    running out of memory (check's --memory) stops them too."""
    started, asked = time.perf_counter(), queries_asked()
    solver, counts = _unrolled(policy, depth, spans, token_domain, timeout, rlimit)
    reached, complete = 0, False
    while True:
        left = timeout - (time.perf_counter() - started)
        if left <= 0:
            break
        try:
            answer = query(solver, [z3.Or([c >= reached + 1 for c in counts])], timeout_ms=left * 1000)
        except SolverUnknown:  # z3's memory limit
            break
        if answer.status is not Status.SAT:
            complete = answer.status is Status.UNSAT
            break
        found = solver.model()
        reached = max(found.eval(c, model_completion=True).as_long() for c in counts)
    return RecoveryPeak(Method.BMC, reached, None, depth, spans, token_domain, complete,
                        queries=queries_asked() - asked, seconds=time.perf_counter() - started)


__all__ = ["PeakWatch", "explicit_peak", "recovery_set", "symbolic_peak"]
