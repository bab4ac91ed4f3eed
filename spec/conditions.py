"""The five validity conditions, each defined once with its runtime semantics on one concrete transition."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Callable

from prunecheck.spec.policy import Policy, calls_tools
from prunecheck.spec.refusal import named_spans
from prunecheck.spec.runtime import (REVERSIBLE, Compact, State, Transition, Undo, addressable, is_candidate, is_pair,
                                     present, status)


class Scope(enum.Enum):
    """A state condition is checked in every state of a run, a step condition on every step."""

    STATE = "state"
    STEP = "step"


@dataclass(frozen=True)
class Condition:
    """One condition: its id, scope, the seed's words it comes from, its description and SARIF rule name, and its
    semantics: `violated(policy, state)` for a state condition, `violated(transition)` for a step condition."""

    id: str
    scope: Scope
    source: str
    words: str
    description: str
    rule: str
    violated: Callable[..., bool]
    applies: Callable[[Policy], bool] = lambda policy: True  # which policies it is reported for (default: all)
    applies_when: str = ""  # where it applies, in words, when not everywhere (what a report says of one left out)


def _c1(policy: Policy, state: State) -> bool:
    return any(state.span(e.record).alive and is_candidate(policy, state, state.span(e.record))
               for e in state.live_edits())


def _c2(transition: Transition) -> bool:
    before, after = transition.before, transition.after
    return isinstance(transition.action, Compact) and any(
        present(before.span(e.record)) and not present(after.span(e.record)) for e in before.edits)


def _c3(transition: Transition) -> bool:
    if not (isinstance(transition.action, Undo) and transition.outcome == "reverted"):
        return False
    info = transition.before.edit(transition.action.edit)
    return transition.before.span(info.target).version != info.version


def _c4(policy: Policy, state: State) -> bool:
    gap = any(not present(state.span(e.record)) for e in state.live_edits())
    return gap and status(policy, state) == REVERSIBLE


def _p1(policy: Policy, state: State) -> bool:
    # A compaction's ledger entry (evidence: on) is an entry that is never undone: its rationale is held to P1 too.
    return any(not present(state.span(e.rationale)) for e in state.live_edits() + state.entries)


def stage_removed(transition: Transition) -> frozenset:
    """The ids the compaction's stage took out of the window: taken and no longer addressable after the step (a span
    masked or cut in place stays; a downgraded mask or cut moves to the log, masked before or not), never the ones
    the host's truncation took."""
    after = transition.after
    return frozenset(i for i in transition.evicted - transition.truncated if not addressable(after.span(i)))


def split_pairs(transition: Transition) -> tuple:
    """The tool-call pairs (k, k+1), both in the window before the compaction, of which its stage removed one."""
    before, removed = transition.before, stage_removed(transition)
    return tuple(k for k in range(len(before.spans) - 1)
                 if is_pair(before, k) and addressable(before.span(k)) and addressable(before.span(k + 1))
                 and (k in removed) != (k + 1 in removed))


def _t1(transition: Transition) -> bool:
    return isinstance(transition.action, Compact) and bool(split_pairs(transition))


def lost_content(before: State, after: State) -> tuple:
    """The ids of spans with content in `before` (present) that have none in `after` (dead, masked or cut) with
    neither a tombstone nor a place in the log: M1's destructions without evidence."""
    return tuple(s.id for s in before.spans if present(s) and not present(after.span(s.id))
                 and not after.span(s.id).tombstone and after.span(s.id).namespace != "log")


def log_entry(span) -> bool:
    """A decision-log entry: a rationale in the log namespace (not the archive of `evicted: logged`, SPEC 6f)."""
    return span.kind == "rationale" and span.namespace == "log"


LOG_CONTENT = ("kind", "tokens", "alive", "masked", "namespace", "version")  # reads, last_read, pinned: metadata


def rewritten_log_entries(before: State, after: State) -> tuple:
    """The ids of decision-log entries in `before` whose content `after` changes or removes: A1's violations."""
    return tuple(s.id for s in before.spans if log_entry(s)
                 and any(getattr(s, f) != getattr(after.span(s.id), f) for f in LOG_CONTENT))


def _m1(transition: Transition) -> bool:
    return bool(lost_content(transition.before, transition.after))


def _a1(transition: Transition) -> bool:
    return bool(rewritten_log_entries(transition.before, transition.after))


def evidence_on(policy: Policy) -> bool:
    return policy.deployment.evidence == "on"


def _u1(transition: Transition) -> bool:
    if not (isinstance(transition.action, Undo) and transition.outcome in CHANGES_TARGET):
        return False
    return not present(transition.before.span(transition.action.edit))


def _reconstructs(policy: Policy) -> bool:
    return policy.deployment.missing_record == "reconstruct"


# The undo outcomes that write the target (spec/runtime.py _undo).
CHANGES_TARGET = ("reverted", "merged", "reconstructed")


def _r1(policy: Policy, state: State) -> bool:
    return bool(named_spans(policy, state))


def _x1(transition: Transition) -> bool:
    before, after = transition.before, transition.after
    return (isinstance(transition.action, Compact) and transition.outcome == "blocked"
            and replace(after, step=before.step) != before)


def _refuses(policy: Policy) -> bool:
    return policy.deployment.refusal != "silent"


def _j1(policy: Policy, state: State) -> bool:
    return any(not present(state.span(c)) for c in state.cited_ids())


_FIRST_SEED = "seed 000_33fda43b115e94e6, condition of validity"
_SECOND_SEED = "seed 004_c989c62c2c56fca8, condition of validity"

CONDITION_TABLE = (
    Condition(
        id="C1", scope=Scope.STATE, source=f"{_FIRST_SEED} 1",
        words="The recovery record for the edit exists in a store the active pruning policy cannot address as a "
              "candidate (separate namespace, or a policy predicate that structurally excludes the undo region — not "
              "a \"pinned\" flag the policy sets on itself).",
        description="separation: no recovery record of a live edit is ever a compaction candidate",
        rule="RecordSeparation", violated=_c1),
    Condition(
        id="C2", scope=Scope.STEP, source=f"{_FIRST_SEED} 2",
        words="The record's integrity is independent of the window's token budget; compaction may shrink the working "
              "set but must not touch the recovery set.",
        description="budget independence: no compaction, at any budget, removes a recovery record",
        rule="BudgetIndependence", violated=_c2),
    Condition(
        id="C3", scope=Scope.STEP, source=f"{_FIRST_SEED} 3",
        words="The undo operation is *tested* against the current window state, not assumed. A record that "
              "references a span which has since been re-edited may be stale even if present.",
        description="tested undo: no undo reverts a span re-edited since its record was taken",
        rule="TestedUndo", violated=_c3),
    Condition(
        id="C4", scope=Scope.STATE, source=f"{_FIRST_SEED} 4",
        words="The policy's author and the policy's auditor are distinguished — at minimum, the closure check "
              "(records ⊇ live edits) runs as a separate pass that the editing policy cannot suppress.",
        description="independent audit: status is never 'reversible' while a live edit lacks its record",
        rule="IndependentAudit", violated=_c4),
    Condition(
        id="P1", scope=Scope.STATE, source=f"{_SECOND_SEED} 1",
        words="**Provenance separation.** The rationale for an edit is stored outside the span being edited — in a "
              "separate, append-only decision log that is never itself a pruning target.",
        description="provenance: the rationale of a live edit is never evicted",
        rule="RationaleProvenance", violated=_p1),
    Condition(
        id="T1", scope=Scope.STEP, source="issue 15, item 3 (model APIs reject a tool result without its call)",
        words="An optional integrity condition for tool pairs: no compaction leaves a tool result without its call "
              "(or the reverse) — the property real model APIs reject requests for.",
        description="tool-call pairs: no compaction stage removes one span of a tool call and its result",
        rule="ToolCallPairs", violated=_t1, applies=calls_tools,
        applies_when="where the agent calls tools (`tool_calls: on`)"),
    Condition(
        id="R1", scope=Scope.STATE, source="seed 000_33fda43b115e94e6, operational effect (issue 16, item 2)",
        words="refuses to let a pruning policy name the undo region as a candidate, even when the policy is its own "
              "output and even when tokens are tight",
        description="refusal: the policy's selection never names a present recovery record or rationale entry",
        rule="RefuseNamingUndoRegion", violated=_r1),
    Condition(
        id="X1", scope=Scope.STEP, source="issue 16, item 5 (the first seed's demo: `blocked: ...`)",
        words="Atomic compaction: the seed's demo pops `e1` from the live edits before it raises on `undo:e1`, so its "
              "\"blocked\" compaction has already changed the window; a blocked compaction must change nothing.",
        description="atomic compaction: a compaction the refusal blocks changes nothing but the clock",
        rule="AtomicCompaction", violated=_x1, applies=_refuses,
        applies_when="under `refusal: atomic` or `sequential`"),
    Condition(
        id="M1", scope=Scope.STEP, source=f"{_SECOND_SEED} 2",
        words="**Monotone evidence.** Every destructive edit is accompanied by a retained, addressable record (hash, "
              "span ID, or verbatim excerpt) s... [the seed's text is cut off here]",
        description="monotone evidence: no step destroys a span's content without a tombstone or a place in the log",
        rule="MonotoneEvidence", violated=_m1, applies=evidence_on,
        applies_when="where the agent keeps evidence (`evidence: on`)"),
    Condition(
        id="A1", scope=Scope.STEP, source=f"{_SECOND_SEED} 1",
        words="a separate, append-only decision log that is never itself a pruning target",
        description="append-only log: no step removes or rewrites a decision-log entry (a rationale in the log)",
        rule="AppendOnlyLog", violated=_a1, applies=evidence_on,
        applies_when="where the agent keeps evidence (`evidence: on`)"),
    Condition(
        id="U1", scope=Scope.STEP, source="seed 000_33fda43b115e94e6, operational effect",
        words="It treats a missing recovery record as a *hard* error that halts the undo path rather than a soft miss "
              "it routes around",
        description="no undo without its record: no undo changes its target while the edit's record is not present",
        rule="NoUndoWithoutRecord", violated=_u1, applies=_reconstructs,
        applies_when="under `missing_record: reconstruct`"),
    Condition(
        id="J1", scope=Scope.STATE, source="seed 004_c989c62c2c56fca8, decision boundary",
        words="The operational rule: **before any destructive edit, ask whether the justification for the edit "
              "survives the edit.** If the justification lives in the span being removed, the edit must be downgraded "
              "to a transformation with an external pointer, or deferred until the justification is relocated. "
              "Concretely — do not prune a span that contains the reason another...",
        description="justification survives: no span a live edit or compaction cites is removed while it is live "
                    "(moved to the log counts as kept)",
        rule="JustificationSurvives", violated=_j1, applies=evidence_on,
        applies_when="where the agent keeps evidence (`evidence: on`)"),
)

BY_ID = {c.id: c for c in CONDITION_TABLE}
CONDITIONS = tuple(BY_ID)
DESCRIPTIONS = {c.id: c.description for c in CONDITION_TABLE}
STATE_CONDITIONS = tuple(c.id for c in CONDITION_TABLE if c.scope is Scope.STATE)
STEP_CONDITIONS = tuple(c.id for c in CONDITION_TABLE if c.scope is Scope.STEP)


def not_applicable(policy: Policy, conditions=CONDITIONS) -> tuple:
    """(condition, where it applies in words) for each of `conditions` that is not reported for this policy."""
    return tuple((c, BY_ID[c].applies_when) for c in CONDITIONS if c in set(conditions) and not BY_ID[c].applies(policy))


def applicable(policy: Policy, conditions=CONDITIONS) -> tuple:
    """The conditions of `conditions` reported for this policy, in table order (T1 only where it applies)."""
    return tuple(c for c in CONDITIONS if c in set(conditions) and BY_ID[c].applies(policy))


def state_violations(policy: Policy, state: State) -> frozenset:
    """The state conditions (C1, C4, P1) that `state` violates, whether or not they apply to the policy."""
    return frozenset(c.id for c in CONDITION_TABLE if c.scope is Scope.STATE and c.violated(policy, state))


def transition_violations(transition: Transition) -> frozenset:
    """The step conditions (C2, C3, T1) that the step violates, whether or not they apply to the policy."""
    return frozenset(c.id for c in CONDITION_TABLE if c.scope is Scope.STEP and c.violated(transition))


def violations(policy: Policy, transition: Transition) -> frozenset:
    """Every condition that applies to the policy and that the step violates, in the step or in the state it leaves."""
    after = transition.after
    return frozenset(c.id for c in CONDITION_TABLE if c.applies(policy)
                     and (c.violated(transition) if c.scope is Scope.STEP else c.violated(policy, after)))
