"""The recovery set's peak size over the runs explored (--recovery-peak): a bounded figure, never a proof."""

from __future__ import annotations

import time
from typing import Optional

import z3

from prunecheck.spec.policy import Policy
from prunecheck.spec.runtime import Edit, State, present, step
from prunecheck.symbolic.model import Model
from prunecheck.symbolic.solver import Status, new_solver, query, queries_asked

from prunecheck.checker.engines.explicit import action_choices
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


def explicit_peak(policy: Policy, depth: int, spans: int, domains: Domains, time_limit: float,
                  modes: tuple = ("transform", "destroy")) -> RecoveryPeak:
    """The max over every state the runtime reaches within `depth` actions over the domains (exact there), with a
    run to each maximum; stopped at `time_limit` seconds, the figures are those of the levels searched (its depth).
    `modes`: the edit modes the agent uses (an agent that only transforms writes 1-token records)."""
    started = time.perf_counter()
    parent, frontier = {State(): None}, [State()]
    best = {"records": (0, State()), "tokens": (0, State())}
    searched = 0
    for level in range(depth):
        if level > 0 and time.perf_counter() - started > time_limit:
            break
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
                for key, value in zip(("records", "tokens"), _size(after)):
                    if value > best[key][0]:
                        best[key] = (value, after)
        frontier, searched = following, level + 1
    return RecoveryPeak(Method.EXPLICIT, best["records"][0], best["tokens"][0], searched, spans, domains.tokens,
                        searched == depth, _path(parent, best["records"][1]), _path(parent, best["tokens"][1]),
                        seconds=time.perf_counter() - started)


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
    not counted (a destroy record's are as unbounded as its target's)."""
    started, asked = time.perf_counter(), queries_asked()
    solver, counts = _unrolled(policy, depth, spans, token_domain, timeout, rlimit)
    reached, complete = 0, False
    while True:
        answer = query(solver, [z3.Or([c >= reached + 1 for c in counts])])
        if answer.status is not Status.SAT:
            complete = answer.status is Status.UNSAT
            break
        found = solver.model()
        reached = max(found.eval(c, model_completion=True).as_long() for c in counts)
    return RecoveryPeak(Method.BMC, reached, None, depth, spans, token_domain, complete,
                        queries=queries_asked() - asked, seconds=time.perf_counter() - started)


__all__ = ["explicit_peak", "recovery_set", "symbolic_peak"]
