"""The unbounded engine: induction strengthened by Houdini over the parametric model, with re-checked certificates."""

from __future__ import annotations

import time
from dataclasses import replace

import z3

from prunecheck.symbolic.pair_lemmas import pair_candidates

from prunecheck.spec.conditions import STEP_CONDITIONS
from prunecheck.checker.engines.certificate import Status, certificate_document, dumps, recheck
from prunecheck.checker.engines.certificate_model import Encoding, free_shape
from prunecheck.checker.engines.invariants import houdini
from prunecheck.checker.result import (Clause, EngineRun, Found, Method, Outcome, Reason, Result, Scope, Stats, Stop,
                                       Tried, Verdict)
from prunecheck.symbolic.solver import Status as Solved, new_solver, queries_asked, query
from prunecheck.checker.engines.unknowns import solver_said
from prunecheck.checker.progress import current


_SHARED_SIZE = 32
# Attempts with the policy abstracted to a free predicate depend only on the deployment and on whether the policy
# ranks and budgets, not on its expressions: one per shape serves every policy checked in this process.
_shared: dict = {}


def clear_shared() -> None:
    """Forget the attempts with the policy abstracted that this process shares between checks."""
    _shared.clear()


class _Attempts:
    """One encoding and one Houdini run per (policy, free_policy), shared by every condition checked: the candidate
    lemmas and the transition relation do not depend on the condition, only the final safety query does."""

    def __init__(self, policy, timeout: float, rlimit: int = 0):
        self.policy, self.timeout, self.rlimit, self.done, self.proved = policy, timeout, rlimit, {}, {}
        self.asked = {}  # queries each Houdini run asked in this process (0: shared from an earlier check)
        shared = _shared.get(free_shape(policy, timeout, rlimit))
        if shared is not None:
            self.done[True], self.proved[True] = shared
            self.asked[True] = 0

    def base(self, free_policy: bool):
        if free_policy not in self.done:
            asked = queries_asked()
            enc = Encoding(self.policy, "C1", free_policy)
            at_init = dict(pair_candidates(enc.model, enc.pre))
            before = dict(pair_candidates(enc.model, enc.pre))
            after = dict(pair_candidates(enc.model, enc.post))
            self.done[free_policy] = (enc, before, houdini(enc.init, at_init, enc.trans, before, after,
                                                           self.timeout, self.rlimit))
            self.proved[free_policy] = {}
            self.asked[free_policy] = queries_asked() - asked
            if free_policy and self.done[True][2].complete:
                # Only complete runs: an incomplete one gave up on time, which another run may not.
                if len(_shared) >= _SHARED_SIZE:
                    _shared.clear()
                _shared[free_shape(self.policy, self.timeout, self.rlimit)] = (self.done[True], self.proved[True])
        return self.done[free_policy]

    def induction(self, condition: str, free_policy: bool):
        """(encoding, names of the proved invariant, proved?, why not, stopped by a solver limit?) for one attempt."""
        base, before, invariant = self.base(free_policy)
        known = self.proved[free_policy]
        if condition in known:
            return known[condition]
        outcome, decided = self._induction(condition, base, before, invariant)
        if decided:
            # A safety check that gave up on time is not remembered: another attempt may decide it.
            known[condition] = outcome
        return outcome

    def invariant(self, free_policy: bool, names: tuple):
        """The proved lemmas over the certificate's parameter state, as one term and as readable lines."""
        enc, _, _ = self.base(free_policy)
        if getattr(enc, "invariants", None) is None:
            enc.invariants = {"params": dict(pair_candidates(enc.model, enc.param))}
        if names not in enc.invariants:
            params = enc.invariants["params"]
            term = z3.And([params[n] for n in names]) if names else z3.BoolVal(True)
            # SMT-LIB text: z3's Python pretty-printer costs a quarter of a proof.
            enc.invariants[names] = (term, [f"{n}: {params[n].sexpr()}" for n in names])
        return enc.invariants[names]

    def _induction(self, condition, base, before, invariant):
        """((encoding, names, proved?, why not, limit?), whether the outcome is decided rather than a solver giving
        up)."""
        enc = base.for_condition(condition)
        if not invariant.complete:
            return (enc, (), False, _why(Found.LIMIT, Tried.LEMMAS, invariant.reason), True), True
        names = invariant.names
        solver = new_solver(self.timeout * 1000, self.rlimit)
        solver.add([before[n] for n in names])
        if condition in STEP_CONDITIONS:
            solver.add(enc.trans)
        solver.add(enc.bad)
        answer = query(solver)
        if answer.status == Solved.UNSAT:
            return (enc, names, True, None, False), True
        if answer.status == Solved.UNKNOWN:
            return (enc, names, False, _why(Found.LIMIT, Tried.SAFETY, answer.reason), True), False
        return (enc, names, False, _why(Found.NO_PROOF, Tried.TEMPLATES), False), True


def _why(found: Found, tried: Tried, solver=None) -> Clause:
    """Why an induction attempt proved nothing (its scope is set by the caller)."""
    said = solver_said(solver) if solver is not None else None
    return Clause(Method.INDUCTION, found, solver=said, tried=tried)


def certified_result(condition: str, engine: Method, document: dict, check, seconds: float) -> Result:
    """`holds` with the certificate if cvc5 confirmed it; otherwise `unknown`, saying why (a refuted or rejected
    certificate of prunecheck's own proof is a checker fault)."""
    if check.status == Status.CONFIRMED:
        proved = Reason((Clause(engine, Found.PROVED),))
        return Result(condition, Verdict.HOLDS, None, proved, engine=engine, certificate=dumps(document),
                      seconds=seconds)
    found = Found.UNCONFIRMED if check.status == Status.UNCHECKED else Found.FAULT
    why = Clause(engine, found, certificate=check.status.value, detail=check.reason)
    return Result(condition, Verdict.UNKNOWN, None, Reason((why,)), engine=engine, seconds=seconds)


def certified(condition: str, engine: Method, policy: tuple, proof: tuple, bounds: tuple, started: float) -> Result:
    """A proof's certificate, re-checked: `holds` if cvc5 confirms it, otherwise `unknown` saying why. `policy` is
    (document, hash), `proof` (encoding, invariant, its readable lemmas), `bounds` (re-check ms, rlimit)."""
    enc, invariant, readable = proof
    document = certificate_document(*policy, enc, invariant, readable, str(engine))
    check = recheck(document, enc, *bounds)
    return certified_result(condition, engine, document, check, time.perf_counter() - started)


def unproved(condition: str, engine: Method, reasons: list, limited: bool, started: float, stats) -> Result:
    """`unknown`: every attempt's reason, stopped at a limit or without a proof."""
    return Result(condition, Verdict.UNKNOWN, None, Reason(tuple(reasons)), engine=engine,
                  seconds=time.perf_counter() - started, stop=Stop.LIMIT if limited else Stop.NO_PROOF,
                  stats=stats(Outcome.LIMIT if limited else Outcome.NO_PROOF))


def prove_all(policy, conditions, policy_doc: dict, policy_hash: str, timeout: float = 30.0,
              rlimit: int = 0) -> dict:
    """{condition: prove(...)} with the encodings and Houdini runs shared between conditions."""
    attempts = _Attempts(policy, timeout, rlimit)
    proofs = {}
    for c in conditions:
        current().step(f"{c}: proof by induction")
        proofs[c] = prove(policy, c, policy_doc, policy_hash, timeout, attempts=attempts, rlimit=rlimit)
    return proofs


def prove(policy, condition: str, policy_doc: dict, policy_hash: str, timeout: float = 30.0,
          recheck_timeout_ms: int = 0, attempts: "_Attempts" = None, rlimit: int = 0) -> Result:
    """`holds` with a re-checked certificate, or `unknown` with why; never `violated` (that is the bounded engine's).
    `rlimit` bounds every z3 query (and cvc5's re-check, as rlimit-per) by resources as well as by time; the re-check
    has `recheck_timeout_ms`, by default the condition's `timeout`."""
    started, before = time.perf_counter(), queries_asked()
    attempts = attempts or _Attempts(policy, timeout, rlimit)
    built = set(attempts.asked)
    reasons, limited, used = [], False, []

    def stats(outcome: Outcome) -> Stats:
        # The Houdini runs this attempt relied on count for every condition they served.
        queries = queries_asked() - before + sum(attempts.asked[f] for f in used if f in built)
        return Stats((EngineRun(Method.INDUCTION, outcome, None, queries, None, time.perf_counter() - started),))

    for free_policy in (True, False):
        used.append(free_policy)
        enc, names, proved, why, limit = attempts.induction(condition, free_policy)
        if not proved:
            reasons.append(replace(why, scope=Scope.ABSTRACTED if free_policy else Scope.AS_WRITTEN))
            limited = limited or limit
            continue
        invariant, readable = attempts.invariant(free_policy, names)
        engine = Method.INDUCTION_ABSTRACTED if free_policy else Method.INDUCTION
        proof = (enc, invariant, readable)
        result = certified(condition, engine, (policy_doc, policy_hash), proof,
                           (recheck_timeout_ms or int(timeout * 1000), rlimit), started)
        if result.verdict == Verdict.HOLDS and z3.is_false(z3.simplify(enc.bad)):
            # True by definition of the deployment, not a theorem: the label says so (the certificate stands).
            result = replace(result, reason=Reason((Clause(engine, Found.BY_CONSTRUCTION),)))
        return replace(result, stats=stats(Outcome.PROVED))
    return unproved(condition, Method.INDUCTION, reasons, limited, started, stats)
