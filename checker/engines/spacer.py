"""z3's Spacer CHC engine over the parametric model: an inductive invariant found without templates."""

from __future__ import annotations

import enum
import time
from dataclasses import replace

import z3

from prunecheck.spec.conditions import STEP_CONDITIONS
from prunecheck.checker.engines.certificate_model import Encoding
from prunecheck.checker.engines.prove import certified, unproved
from prunecheck.checker.result import Clause, EngineRun, Found as Finding, Method, Outcome, Result, Scope, Stats, Tried
from prunecheck.symbolic.interrupts import handling, interruptible, stop_if_interrupted, stop_if_said
from prunecheck.symbolic.solver import RANDOM_SEED, queries_asked
from prunecheck.checker.engines.unknowns import solver_said


class Found(enum.Enum):
    """What one Spacer query found."""

    PROVED = "proved"  # an inductive invariant
    REFUTED = "refuted"  # a violation of the two-span abstraction (not of any real window)
    UNKNOWN = "unknown"  # a limit or an error


def spacer_invariant(enc: Encoding, timeout: float, rlimit: int = 0):
    """(Found, invariant over enc.param or None, Clause): the invariant when PROVED, why not otherwise.
    `rlimit` bounds the query by z3's resource count as well as by time (Fixedpoint's own `rlimit`, per query)."""
    # Spacer gets a context of its own: on the process-wide one its search depends on the terms earlier checks made.
    ctx = z3.Context()
    pre, post, act = ([v.translate(ctx) for v in vs.variables()] for vs in (enc.pre, enc.post, enc.act))
    fp = z3.Fixedpoint(ctx=ctx)
    fp.set(engine="spacer")
    fp.set("fp.spacer.ground_pobs", False)
    fp.set("fp.spacer.q3.use_qgen", True)
    fp.set("fp.spacer.random_seed", RANDOM_SEED)
    if handling():
        fp.set("ctrl_c", False)
    fp.set("timeout", max(1, int(timeout * 1000)))
    if rlimit > 0:
        fp.set("rlimit", int(rlimit))
    inv = z3.Function("Inv", *[v.sort() for v in pre], z3.BoolSort(ctx))
    init, trans = [e.translate(ctx) for e in enc.init], [e.translate(ctx) for e in enc.trans]
    fp.register_relation(inv)
    fp.declare_var(*(pre + post + act))
    fp.rule(inv(*pre), z3.And(init))
    fp.rule(inv(*post), [inv(*pre)] + trans)
    step = trans if enc.condition in STEP_CONDITIONS else []
    try:
        with interruptible(ctx):
            answer = fp.query(z3.And(inv(*pre), *step, enc.bad.translate(ctx)))
    except z3.Z3Exception as exc:
        stop_if_said(exc.value.decode("utf-8", "replace") if isinstance(exc.value, bytes) else exc.value)
        return Found.UNKNOWN, None, _stopped(exc)
    stop_if_interrupted()
    if answer == z3.sat:
        # Not a counterexample: the two-span abstraction also has runs no real window has.
        return Found.REFUTED, None, Clause(Method.SPACER, Finding.NO_PROOF, tried=Tried.ABSTRACTION)
    if answer != z3.unsat:
        stop_if_said(fp.reason_unknown())
        return Found.UNKNOWN, None, _stopped(fp.reason_unknown())
    body = fp.get_cover_delta(-1, inv)
    param = [v.translate(ctx) for v in enc.param.variables()]
    return Found.PROVED, z3.substitute_vars(body, *param).translate(z3.main_ctx()), None


def _stopped(solver) -> Clause:
    return Clause(Method.SPACER, Finding.LIMIT, solver=solver_said(solver))


def prove_with_spacer(policy, condition: str, policy_doc: dict, policy_hash: str, timeout: float = 30.0,
                      recheck_timeout_ms: int = 0, rlimit: int = 0) -> Result:
    """`holds` with a re-checked certificate, or `unknown` with why; bounded like prove.prove."""
    started, before, spacer_queries = time.perf_counter(), queries_asked(), 0

    def stats(outcome: Outcome) -> Stats:
        queries = spacer_queries + queries_asked() - before  # Spacer's own, then z3's in the certificate re-check
        return Stats((EngineRun(Method.SPACER, outcome, None, queries, None, time.perf_counter() - started),))

    reasons, limited = [], False
    for free_policy in (True, False):
        left = timeout - (time.perf_counter() - started)
        if left <= 0:
            reasons.append(Clause(Method.SPACER, Finding.LIMIT, scope=Scope.TIME))
            limited = True
            break
        enc = Encoding(policy, condition, free_policy)
        status, invariant, why = spacer_invariant(enc, left, rlimit)
        spacer_queries += 1
        if status is not Found.PROVED:
            reasons.append(replace(why, scope=Scope.ABSTRACTED if free_policy else Scope.AS_WRITTEN))
            limited = limited or status is Found.UNKNOWN
            continue
        engine = Method.SPACER_ABSTRACTED if free_policy else Method.SPACER
        result = certified(condition, engine, (policy_doc, policy_hash), (enc, invariant, [str(invariant)]),
                           (recheck_timeout_ms or int(timeout * 1000), rlimit), started)
        return replace(result, stats=stats(Outcome.PROVED))
    return unproved(condition, Method.SPACER, reasons, limited, started, stats)
