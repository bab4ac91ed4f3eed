"""A policy-difference witness: one run of actions under two policies whose last compaction removes a span under one
and keeps it under the other, replayed on the runtime under both, and made canonical."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Optional

from prunecheck.spec.errors import ReplayMismatch
from prunecheck.spec.evaluate import evaluate
from prunecheck.spec.policy import Policy, has_effects
from prunecheck.spec.runtime import Compact, State, addressable, is_candidate, present, span_env
from prunecheck.checker.engines.minimize import simpler_choices
from prunecheck.checker.engines.replay import replay
from prunecheck.checker.result import counted

NEW_EVICTS, OLD_EVICTS = "new_evicts", "old_evicts"
DIRECTIONS = (NEW_EVICTS, OLD_EVICTS)
DIRECTION_TEXT = {NEW_EVICTS: "NEW evicts what OLD keeps", OLD_EVICTS: "OLD evicts what NEW keeps"}


@dataclass(frozen=True)
class View:
    """One policy's side of a witness: the span's attributes in its own run just before the compaction, its evict
    and rank values there, whether it was a candidate (evict and in the window), and what the compaction did to it
    (`evicted`, `truncated` or `kept`)."""

    attributes: tuple
    evict: bool
    rank: Optional[Fraction]
    candidate: bool
    fate: str


@dataclass(frozen=True)
class Witness:
    """A run, driven by the same actions under both policies, whose last step (a compaction) removes span `span`
    under one policy and keeps it under the other; replayed on the runtime under both."""

    direction: str
    actions: tuple
    span: int
    kind: str
    old: View
    new: View


def _runtime_run(policy: Policy, label: str, actions, spans: int, symbolic) -> list:
    transitions = replay(policy, actions, spans)
    states = [State()] + [t.after for t in transitions]
    for index, (sym, real) in enumerate(zip(symbolic, states)):
        if sym != real:
            raise ReplayMismatch(f"{label} state {index} differs between the z3 model and the runtime: "
                                 f"model {sym!r} runtime {real!r}")
    return transitions


def _view(policy: Policy, transition, span_id: int) -> View:
    span = transition.before.span(span_id)
    env = span_env(policy, transition.before, span)
    rank = None if policy.rank is None else Fraction(evaluate(policy.rank, env))
    taken = {"mask": "masked", "cut": "cut", "summarise": "summarised"}.get(policy.effect, "evicted")
    fate = (taken if span_id in transition.evicted else
            "truncated" if span_id in transition.truncated else "kept")
    return View(tuple(env.items()), bool(evaluate(policy.evict, env)), rank,
                is_candidate(policy, transition.before, span), fate)


def replayed_witness(old: Policy, new: Policy, direction: str, actions: tuple, span_id: int, spans: int,
                     old_states=None, new_states=None) -> Witness:
    """The witness as the runtime sees it under both policies; ReplayMismatch unless the runtime agrees with the
    solver's states (when given) and the last step is a compaction removing span_id from one run only."""
    old_run = _runtime_run(old, "OLD", actions, spans, old_states or ())
    new_run = _runtime_run(new, "NEW", actions, spans, new_states or ())
    if not actions or not isinstance(actions[-1], Compact):
        raise ReplayMismatch("a policy-difference witness does not end in a compaction")
    last_old, last_new = old_run[-1], new_run[-1]
    dropped, kept = (last_new, last_old) if direction == NEW_EVICTS else (last_old, last_new)
    def on(t, when):  # the span is in the window with its content (alive, for policies without effects)
        span = getattr(t, when).span(span_id)
        return span.alive if not (has_effects(old) or has_effects(new)) else addressable(span) and present(span)
    if not (span_id < len(last_old.before.spans) and span_id < len(last_new.before.spans) and on(last_old, "before")
            and on(last_new, "before") and not on(dropped, "after") and on(kept, "after")):
        raise ReplayMismatch(f"{DIRECTION_TEXT[direction]} witness of {counted(len(actions), 'step')} does not remove "
                             f"span #{span_id} from one run only on the runtime")
    return Witness(direction, tuple(actions), span_id, dropped.before.span(span_id).kind,
                   _view(old, last_old, span_id), _view(new, last_new, span_id))


def simplest_witness(old: Policy, new: Policy, direction: str, actions: tuple, span_id: int, spans: int) -> Witness:
    """The witness with each step's values made as simple as still shows the difference (fewer tokens, earlier kinds
    and roles, no host budget, ...; first step first, each probe replayed), so that it does not depend on which of
    many models the solver returned (as check's traces, ADR 0015)."""
    current = tuple(actions)
    for index in range(len(current)):
        action = current[index]
        budget = [("budget", [None])] if isinstance(action, Compact) and action.budget is not None else []
        for name, values in simpler_choices(action) + budget:
            for value in values:
                trial = current[:index] + (replace(current[index], **{name: value}),) + current[index + 1:]
                try:
                    replayed_witness(old, new, direction, trial, span_id, spans)
                except ReplayMismatch:
                    continue
                current = trial
                break
    return replayed_witness(old, new, direction, current, span_id, spans)
