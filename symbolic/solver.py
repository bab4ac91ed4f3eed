"""The one way prunecheck asks z3 anything: seeded, bounded, never reading unknown as unsat nor an interrupt as a
limit."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass

import z3

from prunecheck.spec.errors import SolverUnknown
from prunecheck.symbolic.interrupts import asking, handling, stop_if_interrupted, stop_if_said

RANDOM_SEED = 0
_asked = [0]  # queries asked in this process; engines count their own as differences (statistics only)


def queries_asked() -> int:
    """How many queries this process has asked so far."""
    return _asked[0]


class Status(enum.Enum):
    """A query's answer; UNKNOWN (a limit, an error, an incomplete theory) is never read as UNSAT."""

    SAT = "sat"
    UNSAT = "unsat"
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Answer:
    """sat, unsat or unknown, why if unknown, and how long it took."""

    status: Status
    reason: str
    seconds: float


def new_solver(timeout_ms: int, rlimit: int = 0) -> z3.Solver:
    """A solver with the seed pinned and time bounded (memory is bounded per check, in checker.check); with `rlimit`,
    also bounded per query by z3's resource count, which a loaded machine cannot change (tests use it). While the
    process handles SIGINT itself (symbolic/interrupts.py), z3's own Ctrl-C handler stays off."""
    solver = z3.Solver()
    solver.set("random_seed", RANDOM_SEED)
    if handling():
        solver.set("ctrl_c", False)
    solver.set("timeout", max(1, int(timeout_ms)))
    if rlimit > 0:
        solver.set("rlimit", int(rlimit))
    return solver


def out_of_memory(exc: z3.Z3Exception) -> bool:
    """Whether z3 gave up for lack of memory (z3 says so only in its exception's words: they are read here alone)."""
    return "memory" in str(exc)


def query(solver: z3.Solver, assumptions=(), timeout_ms: int = 0) -> Answer:
    """Check under assumptions; on `unknown` record reason_unknown(), never treat it as unsat. An interrupt (a signal
    before or during the query, or z3 saying it was interrupted) raises Interrupted: never an answer."""
    stop_if_interrupted()
    if timeout_ms > 0:
        solver.set("timeout", max(1, int(timeout_ms)))
    started = time.perf_counter()
    _asked[0] += 1
    try:
        with asking():
            result = solver.check(*assumptions)
    except z3.Z3Exception as exc:
        message = exc.value.decode("utf-8", "replace") if isinstance(exc.value, bytes) else str(exc.value)
        stop_if_said(message)
        if out_of_memory(exc):
            raise SolverUnknown("z3 reached its memory limit") from exc
        return Answer(Status.UNKNOWN, f"solver error: {message}", time.perf_counter() - started)
    seconds = time.perf_counter() - started
    stop_if_interrupted()  # a signal during the query: even a sat or unsat is not reported
    if result == z3.sat:
        return Answer(Status.SAT, "", seconds)
    if result == z3.unsat:
        return Answer(Status.UNSAT, "", seconds)
    # z3's own words; checker/unknowns.solver_words says them plainly wherever a reason is shown.
    reason = solver.reason_unknown() or "unknown"
    stop_if_said(reason)
    return Answer(Status.UNKNOWN, reason, seconds)
