"""What a theorem module returns, and the one way theorems prove invariants of the parametric model."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass
from typing import Optional
from fractions import Fraction
from itertools import product

import z3

from prunecheck.spec.conditions import STEP_CONDITIONS
from prunecheck.checker.engines.certificate import certificate_document, recheck
from prunecheck.checker.engines.certificate_model import Encoding, by_construction
from prunecheck.checker.language.document import policy_document, policy_hash
from prunecheck.checker.engines.invariants import houdini
from prunecheck.symbolic.solver import Status, new_solver, query
from prunecheck.checker.engines.unknowns import solver_words
from prunecheck.checker.progress import current
from prunecheck.symbolic.pair_lemmas import pair_candidates
from prunecheck.spec.policy import DEPLOYMENT_CHOICES, BoolLit, Deployment, Num, Policy

# A theorem is a fixed statement: bounded by solver resources (per query) rather than by seconds, it is decided alike
# on every machine, however loaded; TIMEOUT only cuts off a hang.
RLIMIT = 100_000_000
TIMEOUT = 600.0


class Shown(enum.Enum):
    """What a theorem's evidence shows: a non-trivial inductive or unbounded proof; a statement whose violation term
    is False under the deployments it is about (true by construction, not a theorem); or a result within bounds."""

    PROVED = "proved"
    BY_CONSTRUCTION = "by construction"
    BOUNDED = "bounded"


@dataclass(frozen=True)
class Label:
    """A theorem's label, derived from its code: `shown`, and the bounds (bounded) or the part by construction
    (proved with some cases trivial)."""

    shown: Shown
    qualifier: str = ""

    def __str__(self) -> str:
        return f"{self.shown.value} ({self.qualifier})" if self.qualifier else self.shown.value


def induction_label(cases) -> Label:
    """The label of a theorem proved by induction over `cases`, (policy, condition) pairs with the policy free: by
    construction when every case's violation term simplifies to False, proved otherwise (naming the trivial part)."""
    cases = list(cases)
    trivial = sum(1 for policy, condition in cases if by_construction(policy, condition))
    if trivial == len(cases):
        return Label(Shown.BY_CONSTRUCTION)
    return Label(Shown.PROVED, f"{trivial} of {len(cases)} cases by construction" if trivial else "")


def bounded_label(slots: int) -> Label:
    """The label of a theorem decided by z3 alone on the model over `slots` span slots, without induction."""
    return Label(Shown.BOUNDED, f"{slots} span slots, z3 only")


@dataclass(frozen=True)
class TheoremResult:
    """One theorem's outcome: proved (or, for a negative result, its counterexample replayed), with evidence, and
    its label (what the evidence shows; the module's `label()`)."""

    name: str
    statement: str
    proved: bool
    detail: str
    seconds: float
    rechecked: str
    extra: str = ""
    label: Optional[Label] = None  # set by run.results from the module's label(), never by hand


# The first seed's deployment choices, over which the structural theorems quantify (issue 16's keys are fixed by the
# theorems that are about them).
THEOREM_CHOICES = {key: DEPLOYMENT_CHOICES[key] for key in ("records", "rationale", "pins", "audit")}
THEOREM_CHOICES["undo"] = ("versioned", "blind")


def any_policy(deployment: Deployment) -> Policy:
    """A stand-in for every policy: with free_policy its predicate, rank and budget choices are all free."""
    return Policy("any policy", BoolLit(True), rank=Num(Fraction(0)), budget=1, deployment=deployment)


def deployments(**fixed) -> list:
    """Every deployment with the `fixed` keys, over the keys of THEOREM_CHOICES; the other keys stay at their
    defaults unless fixed. record_role is left out since the theorems are about any policy (a free predicate on
    every span), which no role can change; so is evicted (the theorems are about the deployments in which a
    compaction destroys what it removes; `logged` only keeps more present)."""
    keys = [k for k in THEOREM_CHOICES if k not in fixed]
    return [Deployment(**fixed, **dict(zip(keys, values)))
            for values in product(*(THEOREM_CHOICES[k] for k in keys))]


def prove_invariant(policy: Policy, condition: str, free_policy: bool, assume=(), timeout: float = TIMEOUT,
                    rlimit: int = RLIMIT):
    """(proved, re-check status, why) for `condition` on the parametric model, restricted to the runs along which
    the `assume` conditions hold at every step; a proof is re-checked from its certificate like any other."""
    current().step(f"{condition}{' assuming ' + ', '.join(assume) if assume else ''}: proof by induction")
    enc = Encoding(policy, condition, free_policy, assume)
    before = dict(pair_candidates(enc.model, enc.pre))
    after = dict(pair_candidates(enc.model, enc.post))
    invariant = houdini(enc.init, before, enc.trans, before, after, timeout, rlimit)
    if not invariant.complete:
        return False, "n/a", solver_words(invariant.reason)
    solver = new_solver(timeout * 1000, rlimit)
    solver.add([before[n] for n in invariant.names])
    if condition in STEP_CONDITIONS:
        solver.add(enc.trans)
    solver.add(enc.bad)
    answer = query(solver)
    if answer.status != Status.UNSAT:
        return False, "n/a", "not inductive relative to the templates" if answer.status == Status.SAT \
            else solver_words(answer.reason)
    params = dict(pair_candidates(enc.model, enc.param))
    document = certificate_document(policy_document(policy), policy_hash(policy), enc,
                                    z3.And([params[n] for n in invariant.names]), [], "induction")
    return True, recheck(document, enc, int(timeout * 1000), rlimit).status, ""


def timed(fn):
    started = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - started
