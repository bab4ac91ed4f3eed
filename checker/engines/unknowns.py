"""Why a condition is `unknown`, in plain words: what each engine tried, where it stopped, and what would decide it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

import z3

from prunecheck.spec.policy import Attr, Policy, subexpressions

from prunecheck.checker.result import Stop


@dataclass(frozen=True)
class Attempt:
    """One engine's part of an unknown: how it stopped and a clause saying what it tried."""

    engine: str
    stop: Stop
    said: str


def solver_words(reason) -> str:
    """A solver's reason_unknown() or exception text as plain words (never a Python repr such as b'canceled')."""
    if isinstance(reason, z3.Z3Exception):
        reason = reason.value
    if isinstance(reason, bytes):
        reason = reason.decode("utf-8", "replace")
    text = " ".join(str(reason).split()).strip("'\"")
    if text.startswith("b'") or text.startswith('b"'):
        text = text[2:].strip("'\"")
    lowered = text.lower()
    if lowered in ("canceled", "cancelled") or "time or resource" in lowered:
        return "its time or resource limit ran out"
    if "timeout" in lowered:
        return "its time limit ran out"
    if "resource limit" in lowered or "rlimit" in lowered:
        return "its resource limit (rlimit) ran out"
    if "memory" in lowered:
        return "its memory limit ran out"
    if "incomplete" in lowered and "arith" in lowered:
        return "the arithmetic is beyond its decision procedures (non-linear)"
    text = re.sub(r"[^\x20-\x7e]", "?", text)
    return f"it answered unknown ({text})" if text else "it answered unknown"


def attempt_of(result, engine: str) -> Attempt:
    """The attempt an engine's unknown Result records (its `stop`, or NO_PROOF for a proof engine without one)."""
    return Attempt(engine, result.stop or Stop.NO_PROOF, result.reason)


def _compared(policy: Policy) -> tuple:
    exprs = [policy.evict] + ([policy.rank] if policy.rank is not None else [])
    return tuple(sorted({node.name for e in exprs for node in subexpressions(e) if isinstance(node, Attr)}))


def advice(policy: Policy, attempts: Sequence[Attempt], depth: int, spans: int, timeout: float, rlimit: int = 0) -> str:
    """What would decide the condition, as command-line options, most promising first."""
    tries = []
    if any(a.stop is Stop.LIMIT for a in attempts):
        more = f"--timeout {max(2 * timeout, timeout + 30):g}"
        tries.append(f"{more} (more solver time){' or a larger --rlimit' if rlimit else ''}")
    if any(a.stop is Stop.BOUND for a in attempts):
        attrs = _compared(policy)
        many = {"window_tokens", "budget"} & set(attrs) or policy.rank is not None
        more_spans = f"--spans {spans + 4} (a violation may need more spans in the window at once)"
        more_depth = f"--depth {2 * depth} (a violation may need more actions)"
        tries += [more_spans, more_depth] if many else [more_depth, more_spans]
    if not tries:
        return ""
    return "to decide it, try " + " or ".join(tries)


def unknown_reason(policy: Policy, attempts: Sequence[Attempt], depth: int, spans: int, timeout: float,
                   rlimit: int = 0) -> str:
    """One line: each engine's clause, then the advice."""
    said = "; ".join(f"{a.engine}: {a.said}" for a in attempts)
    hint = advice(policy, attempts, depth, spans, timeout, rlimit)
    return f"{said}; {hint}" if hint else said


def bound_words(depth: int, spans: int, accelerate: bool = True) -> str:
    """The clause of a bounded search that found nothing within its bounds."""
    unit = "action" if accelerate else "step"
    within = f"no violation within {depth} {unit}{'s' if depth != 1 else ''} over {spans} spans"
    return f"{within} (reads and waits repeated any number of times)" if accelerate else within


def scoped(reasons: Sequence[tuple]) -> str:
    """(scope, why) pairs as one clause, said once when every scope has the same why."""
    whys = {why for _, why in reasons}
    if len(whys) == 1 and len(reasons) > 1:
        return f"{whys.pop()} ({' or '.join(scope for scope, _ in reasons)})"
    return "; ".join(f"{scope}: {why}" for scope, why in reasons)


def limit_words(reason, at: Optional[int] = None) -> str:
    where = f" at depth {at}" if at is not None else ""
    return f"stopped{where}: {solver_words(reason)}"
