"""Houdini: the largest subset of candidate lemmas that is inductive, so BMC may assume it at every depth."""

from __future__ import annotations

from dataclasses import dataclass

import z3

from prunecheck.spec.lemmas import candidate_lemmas
from prunecheck.spec.model import Model

from .solver import new_solver, query


@dataclass(frozen=True)
class Invariant:
    """Names of lemmas proved inductive for one policy and slot bound, and how the proof went."""

    names: frozenset
    rounds: int
    complete: bool
    reason: str = ""


def inductive_lemmas(model: Model, timeout: float = 10.0) -> Invariant:
    """Drop every candidate false at init or not preserved by a step from the survivors; what is left is proved."""
    init = model.state(0)
    model.encode_init(init)
    pre, act, post = model.generic_state("pre"), model.action("pre"), model.state("post")
    step = model.encode_step(pre, act, post)
    now = dict(candidate_lemmas(model, pre))
    after = dict(candidate_lemmas(model, post))
    # Kept as an ordered list: assertion order steers z3's search, and a set's order varies between runs.
    alive = [name for name, term in candidate_lemmas(model, init) if z3.is_true(z3.simplify(term))]
    solver = new_solver(timeout * 1000)
    solver.add(step.constraints)
    rounds = 0
    while alive:
        rounds += 1
        solver.push()
        solver.add([now[name] for name in alive])
        solver.add(z3.Not(z3.And([after[name] for name in alive])))
        answer = query(solver)
        if answer.status == "unsat":
            solver.pop()
            return Invariant(frozenset(alive), rounds, True)
        if answer.status == "unknown":
            solver.pop()
            return Invariant(frozenset(), rounds, False, f"induction check gave up: {answer.reason}")
        m = solver.model()
        broken = {name for name in alive if not z3.is_true(m.eval(after[name], model_completion=True))}
        solver.pop()
        alive = [name for name in alive if name not in broken]
    return Invariant(frozenset(), rounds, True)


def lemma_terms(model: Model, state, invariant: Invariant) -> list:
    return [term for _, term in candidate_lemmas(model, state, invariant.names)]
