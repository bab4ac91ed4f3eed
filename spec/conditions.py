"""The five validity conditions, decided on one concrete transition of the reference runtime."""

from __future__ import annotations

from prunecheck.spec.policy import Policy
from prunecheck.spec.runtime import REVERSIBLE, Compact, State, Transition, Undo, is_candidate, status

CONDITIONS = ("C1", "C2", "C3", "C4", "P1")
DESCRIPTIONS = {
    "C1": "separation: no recovery record of a live edit is ever a compaction candidate",
    "C2": "budget independence: no compaction, at any budget, removes a recovery record",
    "C3": "tested undo: no undo reverts a span re-edited since its record was taken",
    "C4": "independent audit: status is never 'reversible' while a live edit lacks its record",
    "P1": "provenance: the rationale of a live edit is never evicted",
}


def state_violations(policy: Policy, state: State) -> frozenset:
    """Conditions C1, C4, P1, which are properties of a single state."""
    bad = set()
    for info in state.live_edits():
        record = state.span(info.record)
        if record.alive and is_candidate(policy, state, record):
            bad.add("C1")
        if not state.span(info.rationale).alive:
            bad.add("P1")
    gap = any(not state.span(e.record).alive for e in state.live_edits())
    if gap and status(policy, state) == REVERSIBLE:
        bad.add("C4")
    return frozenset(bad)


def transition_violations(transition: Transition) -> frozenset:
    """Conditions C2 and C3, which are properties of a step."""
    bad = set()
    before, after = transition.before, transition.after
    if isinstance(transition.action, Compact):
        if any(before.span(e.record).alive and not after.span(e.record).alive for e in before.edits):
            bad.add("C2")
    if isinstance(transition.action, Undo) and transition.outcome == "reverted":
        info = before.edit(transition.action.edit)
        if before.span(info.target).version != info.version:
            bad.add("C3")
    return frozenset(bad)


def violations(policy: Policy, transition: Transition) -> frozenset:
    """Every condition the step violates, in the step itself or in the state it leaves."""
    return transition_violations(transition) | state_violations(policy, transition.after)
