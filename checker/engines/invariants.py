"""Houdini: the largest subset of candidate lemmas that is inductive; what survives is proved."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import z3

from prunecheck.symbolic.lemmas import candidate_lemmas, lemma_key
from prunecheck.symbolic.model import Model
from prunecheck.symbolic.template import step_template

from prunecheck.symbolic.solver import Status, new_solver, query


@dataclass(frozen=True)
class Invariant:
    """Names of lemmas proved inductive, in candidate order, and how the proof went."""

    names: tuple
    rounds: int
    complete: bool
    reason: str = ""  # the solver's reason_unknown() when not complete


def houdini(init, at_init, step: Sequence, before: dict, after: dict, timeout: float, rlimit: int = 0) -> Invariant:
    """Drop every candidate false in some initial state (init constraints, candidates at_init; init None: already
    filtered) or broken by a step from the survivors (candidates before -> after); what is left is inductive."""
    alive = list(before)
    rounds = 0
    phases = ([] if init is None else [(list(init), at_init)]) + [(list(step), after)]
    for constraints, goal in phases:
        solver = new_solver(timeout * 1000, rlimit)
        solver.add(list(constraints))
        while alive:
            rounds += 1
            solver.push()
            if goal is after:
                solver.add([before[name] for name in alive])
            solver.add(z3.Not(z3.And([goal[name] for name in alive])))
            answer = query(solver)
            if answer.status == Status.UNKNOWN:
                solver.pop()
                return Invariant((), rounds, False, answer.reason)
            if answer.status == Status.UNSAT:
                solver.pop()
                break
            m = solver.model()
            broken = {name for name in alive if not z3.is_true(m.eval(goal[name], model_completion=True))}
            solver.pop()
            alive = [name for name in alive if name not in broken]
    return Invariant(tuple(alive), rounds, True)


def inductive_lemmas(model: Model, timeout: float = 10.0, rlimit: int = 0) -> Invariant:
    """The structural lemmas of the N-slot model that are inductive: sound to assume at every BMC depth.

    The policy's per-slot verdicts, ranks and budget are left free (the step template's placeholders): the lemmas
    hold for every policy of the model's shape, so one Houdini run serves them all in this process. Lemmas that only
    this policy makes inductive (a record the policy never selects stays alive) are lost; the search is no less sound.
    """
    template, key = step_template(model), (timeout, rlimit) + lemma_key(model)
    known = template.lemmas.get(key)
    if known is None:
        known = _houdini_step(model, template.step.constraints, template.pre, template.post, timeout, rlimit)
        if known.complete:
            template.lemmas[key] = known
    return known


def _houdini_step(model: Model, constraints, pre, post, timeout: float, rlimit: int) -> Invariant:
    init = model.state(0)
    model.encode_init(init)
    # The initial state is all constants: a candidate either simplifies to true there or is dropped.
    at_init = [name for name, term in candidate_lemmas(model, init) if z3.is_true(z3.simplify(term))]
    before = {name: term for name, term in candidate_lemmas(model, pre) if name in at_init}
    after = {name: term for name, term in candidate_lemmas(model, post) if name in at_init}
    return houdini(None, None, constraints, before, after, timeout, rlimit)


def lemma_terms(model: Model, state, invariant: Invariant) -> list:
    keep = frozenset(invariant.names)
    return model.at(state, ("lemmas", keep), lambda g: [term for _, term in candidate_lemmas(model, g, keep)])
