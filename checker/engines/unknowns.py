"""Why a condition is `unknown`, as values: what each engine tried, where it stopped, and what would decide it."""

from __future__ import annotations

import re
from typing import Sequence

import z3

from prunecheck.spec.policy import Attr, Policy, stage_exprs, subexpressions
from prunecheck.symbolic.runs import COUNTING, count_thresholds

from prunecheck.checker.options import DEFAULTS, MAX_DEPTH, MAX_SPANS
from prunecheck.checker.result import Advice, Need, Part, Reason, SolverSaid, SolverStop, Stop


def solver_said(reason) -> SolverSaid:
    """A solver's reason_unknown() or exception text as a SolverStop (never a Python repr such as b'canceled')."""
    if isinstance(reason, z3.Z3Exception):
        reason = reason.value
    if isinstance(reason, bytes):
        reason = reason.decode("utf-8", "replace")
    text = " ".join(str(reason).split()).strip("'\"")
    if text.startswith("b'") or text.startswith('b"'):
        text = text[2:].strip("'\"")
    lowered = text.lower()
    if lowered in ("canceled", "cancelled") or "time or resource" in lowered:
        return SolverSaid(SolverStop.TIME_OR_RESOURCE)
    if "timeout" in lowered:
        return SolverSaid(SolverStop.TIME)
    if "resource limit" in lowered or "rlimit" in lowered:
        return SolverSaid(SolverStop.RLIMIT)
    if "memory" in lowered:
        return SolverSaid(SolverStop.MEMORY)
    if "incomplete" in lowered and "arith" in lowered:
        return SolverSaid(SolverStop.NONLINEAR)
    return SolverSaid(SolverStop.OTHER, re.sub(r"[^\x20-\x7e]", "?", text))


def solver_words(reason) -> str:
    """A solver's stop in plain words, for the prose outside a Result's reason (counterexample search, policy diff,
    theorems)."""
    said = solver_said(reason)
    return f"{said.stop.value} ({said.words})" if said.words else said.stop.value


def part_of(result, engine) -> Part:
    """The part an engine's unknown Result plays (its `stop`, or NO_PROOF for a proof engine without one)."""
    return Part(engine, result.stop or Stop.NO_PROOF, result.reason.clauses)


def _compared(policy: Policy) -> tuple:
    exprs = stage_exprs(policy)
    return tuple(sorted({node.name for e in exprs for node in subexpressions(e) if isinstance(node, Attr)}))


def counted_spans(policy: Policy) -> int:
    """The most window spans a comparison of the policy's counts can ask for (0 if it counts none): c + 3 for the
    largest count c a comparison turns at (c spans besides the one compared, plus a record, its rationale and its
    edit's target), spec/SPEC.md §1b; 2c + 3 for a count of spans of one role (`from_end_in_role`) or of a subset
    (an aggregate that counts, §1e), which may be tool results, each after its call (§7d). c is a constant a count
    is compared with, or, for a threshold hidden in arithmetic or in another count, one fewer than the fewest window
    spans at which the comparison can decide the conjunction it is in (symbolic/runs.py count_thresholds), looked
    for up to MAX_SPANS."""
    constants = count_thresholds(policy, most=MAX_SPANS)
    in_role = count_thresholds(policy, ("from_end_in_role", COUNTING), MAX_SPANS)  # a subset's members may be
    # results, each after its call
    return max([c + 3 for c in constants[-1:]] + [2 * c + 3 for c in in_role[-1:]], default=0)


def advice(policy: Policy, parts: Sequence[Part], depth: int, spans: int, timeout: float, rlimit: int = 0) -> tuple:
    """What would decide the condition, as command-line options, most promising first."""
    tries = []
    if any(p.stop is Stop.LIMIT for p in parts):
        tries.append(Advice("--timeout", float(max(2 * timeout, timeout + 30)), Need.TIME))
        if rlimit:
            tries.append(Advice("--rlimit", None, Need.RESOURCES))
    if any(p.stop is Stop.BOUND for p in parts):
        attrs = _compared(policy)
        many = {"window_tokens", "window_spans", "budget"} & set(attrs) or policy.rank is not None
        more_spans = _larger("--spans", spans, spans + 4, MAX_SPANS, Need.SPANS)
        more_depth = _larger("--depth", depth, 2 * depth if depth else DEFAULTS.depth, MAX_DEPTH, Need.ACTIONS)
        counted = counted_spans(policy)
        if counted > spans:
            tries += _larger("--spans", spans, counted, MAX_SPANS, Need.COUNT) + more_depth
        else:
            tries += more_spans + more_depth if many else more_depth + more_spans
    return tuple(tries)


def _larger(option: str, used: int, wanted: int, most: int, why: Need) -> list:
    """[the advice to raise option from `used` to `wanted`, at most `most`], or [] when nothing larger is accepted:
    advice never repeats the value just used."""
    value = min(wanted, most)
    return [Advice(option, value, why)] if value > used else []


def unknown_reason(policy: Policy, parts: Sequence[Part], depth: int, spans: int, timeout: float,
                   rlimit: int = 0) -> Reason:
    """Each engine's part, then the advice."""
    return Reason(parts=tuple(parts), advice=advice(policy, parts, depth, spans, timeout, rlimit))
