"""The unbounded engine: induction strengthened by Houdini over the parametric model, with re-checked certificates."""

from __future__ import annotations

import time

import z3

from prunecheck.spec.pair_lemmas import pair_candidates

from .certificate import STEP_CONDITIONS, Encoding, certificate_document, dumps, recheck
from .invariants import houdini
from .result import Result, Verdict
from .solver import new_solver, query


def _induction(policy, condition: str, free_policy: bool, timeout: float):
    """(encoding, names of the proved invariant, proved?, why not) for one attempt."""
    enc = Encoding(policy, condition, free_policy)
    at_init = dict(pair_candidates(enc.model, enc.pre))
    before = dict(pair_candidates(enc.model, enc.pre))
    after = dict(pair_candidates(enc.model, enc.post))
    invariant = houdini(enc.init, at_init, enc.trans, before, after, timeout)
    if not invariant.complete:
        return enc, (), False, invariant.reason
    names = invariant.names
    solver = new_solver(timeout * 1000)
    solver.add([before[n] for n in names])
    if condition in STEP_CONDITIONS:
        solver.add(enc.trans)
    solver.add(enc.bad)
    answer = query(solver)
    if answer.status == "unsat":
        return enc, names, True, ""
    if answer.status == "unknown":
        return enc, names, False, f"safety check gave up: {answer.reason}"
    return enc, names, False, "not inductive relative to the invariant templates"


def prove(policy, condition: str, policy_doc: dict, policy_hash: str, timeout: float = 30.0,
          recheck_timeout_ms: int = 10000) -> Result:
    """`holds` with a re-checked certificate, or `unknown` with why; never `violated` (that is the bounded engine's)."""
    started = time.perf_counter()
    reasons = []
    for free_policy in (True, False):
        enc, names, proved, why = _induction(policy, condition, free_policy, timeout)
        if not proved:
            reasons.append(f"{'any policy' if free_policy else 'this policy'}: {why}")
            continue
        params = dict(pair_candidates(enc.model, enc.param))
        invariant = z3.And([params[n] for n in names]) if names else z3.BoolVal(True)
        # SMT-LIB text: z3's Python pretty-printer costs a quarter of a proof.
        readable = [f"{n}: {params[n].sexpr()}" for n in names]
        engine = "induction" + (", policy abstracted to a free predicate" if free_policy else "")
        document = certificate_document(policy_doc, policy_hash, enc, invariant, readable, engine)
        check = recheck(document, enc, recheck_timeout_ms)
        seconds = time.perf_counter() - started
        if check.status == "confirmed":
            return Result(condition, Verdict.HOLDS, None, f"proved for every depth and window size ({engine}); "
                          "certificate re-checked by cvc5", engine=engine, certificate=dumps(document),
                          seconds=seconds)
        if check.status == "z3-only":
            return Result(condition, Verdict.HOLDS, None, f"proved for every depth and window size ({engine}); "
                          "single-solver certificate: cvc5 gave up, z3 re-checked it", engine=engine,
                          certificate=dumps(document), seconds=seconds)
        return Result(condition, Verdict.UNKNOWN, None, f"checker fault: certificate {check.status} on re-check "
                      f"({check.reason})", engine=engine, seconds=seconds)
    return Result(condition, Verdict.UNKNOWN, None, "not proved: " + "; ".join(reasons), engine="induction",
                  seconds=time.perf_counter() - started)
