"""Terms that relate a state's slots to each other: positions in the window (spec/SPEC.md §1b), role boundaries
(start_on, §4b) and tool-call pairs."""

from __future__ import annotations

import z3

from prunecheck.spec.policy import AGGREGATES, ROLE
from prunecheck.symbolic.terms import ENUM_CODES, Frac

R = ENUM_CODES[ROLE]


def _count(terms) -> z3.ArithRef:
    return z3.Sum([z3.IntVal(0)] + list(terms))


def place_term(s, i: int):
    """Slot i's window-order key (spec/SPEC.md 4d): its `place` field in a summarising model, else the constant slot
    index (spans are then in id order)."""
    return s.place[i] if "place" in s.fields else z3.IntVal(i)


def before(s, j: int, i: int, places=None):
    """Slot j comes before slot i in window order (spec.stage.window_order: place, then id). A Python bool when places
    are the slot indices, so that the terms of a policy without summaries are what they were; `places` overrides the
    slots' places (a summary being written)."""
    if places is None and "place" not in s.fields:
        return j < i
    pj, pi = (places[j], places[i]) if places is not None else (s.place[j], s.place[i])
    return z3.Or(pj < pi, pj == pi) if j < i else pj < pi


def among(inw, order, *more):
    """In the window, in the given window order (a bool or a term), and `more`: a bare `inw` when nothing else is
    asked (the terms of before places)."""
    if order is False:
        return None
    conds = ([] if order is True else [order]) + list(more)
    return z3.And(inw, *conds) if conds else inw


def position_terms(s, i: int, names) -> dict:
    """The positional attributes in `names` of slot i in s, as Int sums over the other slots in window order
    (before): the runtime's spec.runtime.positions."""
    n, inw = s.n, [s.in_window(j) for j in range(s.n)]

    def over(value, later: bool, *more):
        sides = [(j, before(s, i, j) if later else before(s, j, i)) for j in range(n) if j != i]
        conds = [(j, among(inw[j], order, *(m(j) for m in more))) for j, order in sides]
        return _count(z3.If(c, value(j), 0) for j, c in conds if c is not None)
    one = lambda j: 1  # noqa: E731
    sums = {
        "position": lambda: over(one, False),
        "from_end": lambda: over(one, True),
        "from_end_in_role": lambda: over(one, True, lambda j: s.role[j] == s.role[i]),
        "turn": lambda: over(one, True, lambda j: s.role[j] == R["user"]),
        "tokens_after": lambda: over(lambda j: s.tokens[j], True),
        "window_spans": lambda: _count(z3.If(inw[j], 1, 0) for j in range(n)),
    }
    return {name: sums[name]() for name in names}


def aggregate_terms(s, i, nodes, holds: dict) -> dict:
    """The aggregates among `nodes` (SPEC §1e) as Frac sums over the slots in the window (the runtime's
    spec.state.aggregates): of slot i (those counting newer or older spans), or with i None the window's. holds[node]
    is, per slot, its condition on that slot's own attributes."""
    out = {}
    for node in nodes:
        side, measure = AGGREGATES[node.fn]
        if (i is None) != (side == "window"):
            continue
        terms = []
        for j in range(s.n):
            if side == "window":
                order = True
            elif j == i:
                continue
            else:
                order = before(s, i, j) if side == "newer" else before(s, j, i)
            cond = among(s.in_window(j), order, holds[node][j])
            if cond is not None:
                terms.append(z3.If(cond, 1 if measure == "spans" else s.tokens[j], 0))
        out[node] = Frac(_count(terms))
    return out


def pair_closure(s, taken: list, kept: list) -> list:
    """Per slot, `taken` closed under pairs as spec/runtime.py pair_closure: a taken slot whose partner in the window
    is kept is not taken; the partner in the window of every other taken slot is taken too (it is never kept)."""
    n = len(taken)
    partners = [[(j, z3.And(s.is_pair(min(i, j)), s.in_window(j))) for j in (i - 1, i + 1) if 0 <= j < n]
                for i in range(n)]
    stays = [z3.And([taken[i]] + [z3.Not(z3.And(linked, kept[j])) for j, linked in partners[i]]) for i in range(n)]
    return [z3.Or([stays[i]] + [z3.And(s.in_window(i), s.is_pair(min(i, j)), stays[j]) for j, _ in partners[i]])
            for i in range(n)]


def window_before(s, j: int, i: int):
    """Slot j stands before slot i in window order (place order, SPEC 4d): a Python bool where places are the slot
    indices, a z3 term where they are terms."""
    return before(s, j, i)


def start_on_terms(s, role, taken: list, kept: list, trigger) -> list:
    """Per slot, `taken` with start_on's leading spans, as spec/stage.py start_on_taken: when the trigger holds, a
    slot in the window, neither taken nor kept, of another role than `role`, with no such slot of `role` before it."""
    n = len(taken)
    left = [z3.And(s.in_window(i), z3.Not(taken[i]), z3.Not(kept[i])) for i in range(n)]
    stops = [z3.And(left[j], s.role[j] == role) for j in range(n)]

    def not_stopped_by(j, i):
        order = window_before(s, j, i)
        return z3.Not(stops[j]) if order is True else z3.Implies(order, z3.Not(stops[j]))
    return [z3.Or(taken[i], z3.And([trigger, left[i], s.role[i] != role] + [
        not_stopped_by(j, i) for j in range(n) if j != i and window_before(s, j, i) is not False])) for i in range(n)]


def stage_closures(s, policy, taken: list, kept: list, trigger) -> list:
    """Per slot, the stage's taken set after the walk: with start_on's leading spans (SPEC 4b), then closed under
    pairs with `pairs: together` (SPEC 6c), in the runtime's order."""
    if policy.start_on is not None:
        taken = start_on_terms(s, R[policy.start_on], taken, kept, trigger)
    return pair_closure(s, taken, kept) if policy.pairs == "together" else taken
