"""The first seed's refusal (SPEC §6e): which recovery spans a policy names, and what a compaction does about it."""

from __future__ import annotations

from dataclasses import replace

from prunecheck.spec.evaluate import evaluate
from prunecheck.spec.policy import CONTENT_KINDS, EnumLit, Policy, subexpressions
from prunecheck.spec.stage import selection, window_order
from prunecheck.spec.state import Span, State, present, span_env

RECOVERY_KINDS = ("record", "rationale")


def control_kinds(policy: Policy) -> tuple:
    """The kinds the control view of a recovery span takes: the first content kind the selection (evict, keep) does
    not mention, or every content kind when it mentions all six."""
    mentioned = {node.value for expr in (policy.evict, policy.keep) if expr is not None
                 for node in subexpressions(expr) if isinstance(node, EnumLit)}
    free = [kind for kind in CONTENT_KINDS if kind not in mentioned]
    return (free[0],) if free else CONTENT_KINDS


def selects(policy: Policy, state: State, span: Span) -> bool:
    """The stage's selection `evict and not keep` on `span` as it is, wherever it lives."""
    return bool(evaluate(selection(policy), span_env(policy, state, span)))


def is_recovery(span: Span) -> bool:
    """A present record or rationale entry, in any namespace."""
    return span.kind in RECOVERY_KINDS and present(span)


def named(policy: Policy, state: State, span: Span) -> bool:
    """The policy names the recovery span: its selection is true on the span as it is, and false on the same span
    in the window with a kind the selection does not mention (so it is the recovery span's own namespace or kind,
    not a predicate true of anything, that selects it)."""
    if not (is_recovery(span) and selects(policy, state, span)):
        return False
    return not any(selects(policy, state, replace(span, namespace="window", kind=kind))
                   for kind in control_kinds(policy))


def named_spans(policy: Policy, state: State) -> tuple:
    """The ids of the recovery spans the policy names in `state`: that any of its stages names (SPEC §4h)."""
    return tuple(s.id for s in state.spans if any(named(st, state, s) for st in policy.stages))


def blocked(policy: Policy, state: State) -> bool:
    """A compaction from `state` is refused (refusal: atomic or sequential): it names a recovery span."""
    return policy.deployment.refusal != "silent" and bool(named_spans(policy, state))


def refusal_key(policy: Policy) -> tuple:
    """What a model's refused compaction reads of the policy besides its deployment: its selection and budget (empty
    under refusal: silent, whose models are what they were)."""
    if policy.deployment.refusal == "silent":
        return ()
    return (policy.evict, policy.keep, policy.budget)


def sequential_taken(state: State, taken, names) -> list:
    """The demo's walk (refusal: sequential): of the ids the stage takes, those that stand before every named
    recovery span in window order (the walk meets a named span at its place and stops there)."""
    first = min(window_order(state.span(i)) for i in names)
    return [i for i in taken if window_order(state.span(i)) < first]
