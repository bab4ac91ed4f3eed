"""Counterexample reduction: drop every step and span the violation does not need, then shrink the values left."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional, Sequence

from prunecheck.spec.actions import steps_of
from prunecheck.spec.policy import CONTENT_KINDS, NAME_ATTRS, ROLES, Policy
from prunecheck.spec.runtime import (
    REPEATABLE, ActionRefused, Append, Compact, Edit, Pin, Read, State, Undo, Unpin, host_budgets, step,
)

from prunecheck.checker.engines.replay import first_violation
from prunecheck.symbolic.interrupts import stop_if_interrupted

MAX_TOKEN_TRIES = 64


def _referenced(action) -> Optional[int]:
    for field in ("target", "span", "edit"):
        if hasattr(action, field):
            return getattr(action, field)
    return None


def _renamed(action, new_id: int):
    if isinstance(action, Edit):
        return replace(action, target=new_id)
    if isinstance(action, (Read, Pin, Unpin)):
        return replace(action, span=new_id)
    if isinstance(action, Undo):
        return replace(action, edit=new_id)
    return action


def without_step(actions: Sequence, index: int) -> tuple:
    """The trace with step `index` removed, later span references renumbered, and every later step that refers to
    a span the removed step created removed too (a span that is never written cannot be read, edited or undone)."""
    gone, mapping, next_id, count = set(), {}, 0, 0
    out = []
    for position, action in enumerate(actions):
        made = 2 if isinstance(action, Edit) else steps_of(action) if isinstance(action, Append) else 0
        old_ids = range(count, count + made)
        count += made
        ref = _referenced(action)
        if position == index or (ref is not None and ref in gone):
            gone.update(old_ids)
            continue
        for old in old_ids:
            mapping[old] = next_id
            next_id += 1
        out.append(action if ref is None else _renamed(action, mapping.get(ref, ref)))
    return tuple(out)


def violation_prefix(policy: Policy, actions: Sequence, condition: str, max_spans: Optional[int]) -> Optional[tuple]:
    """The trace cut at the first step that violates `condition` on the runtime, or None (refused or no violation)."""
    stop_if_interrupted()  # minimising replays many candidates
    state, transitions = State(), []
    for action in actions:
        try:
            transition = step(policy, state, action, max_spans)
        except ActionRefused:
            return None
        transitions.append(transition)
        state = transition.after
    where = first_violation(policy, transitions, condition)
    if where is None or where == 0:
        return None
    return tuple(actions[:where])


def simpler_choices(action) -> list:
    """Per value of one action, its simpler alternatives, simplest first: fewer tokens (of calls' results too),
    earlier kinds and roles, no tool name or tag, transform, fewer repetitions, a compaction fired on no event with
    no usage reported."""
    fewer = [("times", list(range(1, min(action.times, MAX_TOKEN_TRIES + 1))))] \
        if isinstance(action, REPEATABLE) and action.times > 1 else []
    if isinstance(action, Append):
        tokens = list(range(1, min(action.tokens, MAX_TOKEN_TRIES + 1)))
        kinds = CONTENT_KINDS[:CONTENT_KINDS.index(action.kind)] if action.kind in CONTENT_KINDS else ()
        roles = ROLES[:ROLES.index(action.role)] if action.role in ROLES else ()
        results = list(range(1, min(action.result_tokens, MAX_TOKEN_TRIES + 1)))
        unnamed = [(attr, [""]) for attr in NAME_ATTRS if getattr(action, attr)]  # a tool name or tag: none
        return ([("tokens", tokens), ("result_tokens", results), ("kind", list(kinds)), ("role", list(roles))]
                + unnamed + fewer)
    if isinstance(action, REPEATABLE):
        return fewer
    if isinstance(action, Edit) and action.mode == "destroy":
        return [("mode", ["transform"])]
    if isinstance(action, Compact):  # no event, no reported usage (spec/SPEC.md §4g)
        return ([("event", [""])] if action.event else []) + (
            [("reported_tokens", [0])] if action.reported_tokens else [])
    return []


def _counted(action) -> tuple:
    """The fields of an action that count something: an append's tokens (and its results'), a read's or audit's
    repetitions."""
    return ("tokens", "result_tokens") if isinstance(action, Append) else ("times",) if isinstance(action, REPEATABLE) \
        else ()


def _fewer(policy, actions: tuple, index: int, condition: str, max_spans) -> tuple:
    """For a large token or repetition count, bisect towards the smallest count that still violates (each probe
    replayed); simpler_choices tries the small counts one by one."""
    for field in _counted(actions[index]):
        actions = _bisected(policy, actions, index, field, condition, max_spans)
    return actions


def _bisected(policy, actions: tuple, index: int, field: str, condition: str, max_spans) -> tuple:
    action = actions[index]
    if getattr(action, field) <= MAX_TOKEN_TRIES + 1:
        return actions
    low, high, best = MAX_TOKEN_TRIES + 1, getattr(action, field) - 1, actions
    while low <= high:
        middle = (low + high) // 2
        candidate = actions[:index] + (replace(action, **{field: middle}),) + actions[index + 1:]
        reduced = violation_prefix(policy, candidate, condition, max_spans)
        if reduced is not None and len(reduced) == len(actions):
            best, high = reduced, middle - 1
        else:
            low = middle + 1
    return best


def milder_budget(policy, actions: tuple, index: int, condition: str, max_spans) -> tuple:
    """A host budget as mild as the violation allows: none if possible, else the largest that still violates (the
    top of the least truncating budget interval; each probe replayed)."""
    action = actions[index]
    if not isinstance(action, Compact) or action.budget is None:
        return actions
    state = State()
    for before in actions[:index]:
        state = step(policy, state, before, max_spans).after
    for host in (None,) + host_budgets(policy, state, action.cites, action):
        if host is not None and host < action.budget:
            break
        candidate = actions[:index] + (replace(action, budget=host),) + actions[index + 1:]
        reduced = violation_prefix(policy, candidate, condition, max_spans)
        if reduced is not None and len(reduced) == len(actions):
            return reduced
    return actions


def minimize(policy: Policy, actions: Sequence, condition: str, max_spans: Optional[int] = None) -> tuple:
    """A reduced counterexample: no step can be dropped and no value made simpler while `condition` is still violated
    on the runtime at the last step (a host budget is dropped or enlarged as far as the violation allows, a repeated
    read or audit repeated as few times as it allows). Never longer than `actions`, in actions or in real steps;
    returns `actions` unchanged if they do not violate."""
    current = violation_prefix(policy, actions, condition, max_spans)
    if current is None:
        return tuple(actions)
    while True:
        # A simpler value may let a step go (a tool call no longer answered by a tool result), so repeat both.
        reduced = _simpler_values(policy, _fewer_steps(policy, current, condition, max_spans), condition, max_spans)
        if reduced == current:
            return current
        current = reduced


def _fewer_steps(policy: Policy, current: tuple, condition: str, max_spans) -> tuple:
    """Every step dropped that the violation does not need."""
    changed = True
    while changed:
        changed = False
        for index in reversed(range(len(current))):
            if index >= len(current):
                continue
            shorter = violation_prefix(policy, without_step(current, index), condition, max_spans)
            if shorter is not None:
                current, changed = shorter, True
    return current


def _simpler_values(policy: Policy, current: tuple, condition: str, max_spans) -> tuple:
    """Each step's values made as simple as the violation allows, first step first."""
    for index in range(len(current)):
        current = _fewer(policy, current, index, condition, max_spans)
        current = milder_budget(policy, current, index, condition, max_spans)
        for field, values in simpler_choices(current[index]):
            for value in values:
                simpler = replace(current[index], **{field: value})
                candidate = current[:index] + (simpler,) + current[index + 1:]
                reduced = violation_prefix(policy, candidate, condition, max_spans)
                if reduced is not None and len(reduced) == len(current):
                    current = reduced
                    break
    return current
