"""The least counterexample of a given length: one fixed choice among equally short runs, whatever the solver's state."""

from __future__ import annotations

import time
from typing import Sequence

import z3

from prunecheck.spec.policy import name_code
from prunecheck.symbolic.model import ACT, CONTENT, R, SymAction, slot_sort
from prunecheck.symbolic.runs import RunAction

from prunecheck.symbolic.solver import Status, query

USES_SLOT = ("edit", "read", "pin", "unpin", "undo")
# Waiting reads best as audits, so an audit is preferred to a read wherever either will do.
PREFERENCE = ("append", "edit", "audit", "read", "pin", "unpin", "compact", "undo")


def _arguments(model: z3.ModelRef, a: SymAction, spans: int) -> list:
    """(variable, values in preference order) for the arguments the step's action actually uses."""
    name = model.eval(a.act, model_completion=True).decl().name().removeprefix("do_")
    out = []
    if name in USES_SLOT:
        out.append((a.arg, list(slot_sort(spans)[1])))
    if name == "append":
        out.append((a.kind, list(CONTENT)))
        out.append((a.role, list(R.values())))
        out += [(getattr(a, attr), [z3.IntVal(k) for k in _name_preference(table)]) for attr, table in a.names]
    if name == "edit":
        out.append((a.destroy, [z3.BoolVal(False), z3.BoolVal(True)]))
    if name == "compact":
        out.append((a.hosted, [z3.BoolVal(False), z3.BoolVal(True)]))
    if name in ("edit", "compact"):  # evidence: on: the fewest citations, the lowest slots first
        out += [(cite, [z3.BoolVal(False), z3.BoolVal(True)]) for cite in a.cites]
    return out


def _name_preference(names: tuple) -> list:
    """A tool name's or tag's codes, unnamed ("") first, then the unmentioned names, then the rest in order."""
    unnamed = name_code(names, "")
    return [unnamed] + [k for k in range(len(names) + 1) if k != unnamed]


def least_model(solver: z3.Solver, assumptions: Sequence, actions: Sequence[SymAction], model: z3.ModelRef,
                spans: int, deadline: float, clock=None) -> z3.ModelRef:
    """A model of `assumptions` with the least final `clock` (the fewest real steps, when steps are accelerated),
    then with lexicographically least actions (action name in PREFERENCE order, then span slot, kind, role, transform
    before destroy, no citation before one (slot by slot, under evidence: on), an append's token count (with runs, then its results' tokens and its run's length), a read's or audit's
    repetitions, and a compaction without a host budget before one with the least host budget, step by step),
    starting from `model`.

    The solver picks among equally short counterexamples by its internal state, which depends on everything the
    process asked z3 before; this makes the reported trace a function of the policy and the bounds alone. Only
    values smaller than the current model's are tried, one query each (token counts by bisection); if a query gives
    up (time), the current value is kept, which is still a valid run."""
    fixed = list(assumptions)

    def settle(variable, values):
        nonlocal model
        current = model.eval(variable, model_completion=True)
        for value in values:
            left = deadline - time.monotonic()
            if z3.eq(value, current) or left <= 0:
                break
            if query(solver, fixed + [variable == value], int(left * 1000)).status == Status.SAT:
                model = solver.model()
                break
        fixed.append(variable == model.eval(variable, model_completion=True))

    def least_int(variable, low=1):
        nonlocal model
        high = model.eval(variable, model_completion=True).as_long()
        while low < high and deadline > time.monotonic():
            middle = (low + high) // 2
            left = deadline - time.monotonic()
            answer = query(solver, fixed + [variable <= middle], int(left * 1000)) if left > 0 else None
            if answer is not None and answer.status == Status.SAT:
                model = solver.model()
                high = model.eval(variable, model_completion=True).as_long()
            elif answer is not None and answer.status == Status.UNSAT:
                low = middle + 1
            else:
                break
        fixed.append(variable == model.eval(variable, model_completion=True))

    if clock is not None and not z3.is_int_value(clock):
        least_int(clock, len(actions))
    for a in actions:
        settle(a.act, [ACT[n] for n in PREFERENCE])
        for variable, values in _arguments(model, a, spans):
            settle(variable, values)
        name = model.eval(a.act, model_completion=True).decl().name()
        if name == "do_append":
            least_int(a.tokens)
        if name == "do_append" and isinstance(a, RunAction):  # with runs: no results (no pairs) first, then short runs
            least_int(a.result, 0)
            least_int(a.times)
        if name in ("do_read", "do_audit"):
            least_int(a.times)
        if name == "do_compact" and z3.is_true(model.eval(a.hosted, model_completion=True)):
            least_int(a.host)
    return model
