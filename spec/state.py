"""States of the window and what can be read from one: spans, edits, the window's attributes, candidates, status."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Optional

from prunecheck.spec.actions import Action
from prunecheck.spec.evaluate import evaluate
from prunecheck.spec.policy import AGGREGATES, CONTENT_KINDS, Policy
from prunecheck.spec.stage import window_order

REVERSIBLE = "reversible"
UNKNOWN = "reversibility unknown"


@dataclass(frozen=True)
class Span:
    """One span; records and rationale entries are spans too, in their own namespace or in the window."""

    id: int
    kind: str
    namespace: str
    tokens: int
    created: int
    last_read: int
    reads: int = 0
    pinned: bool = False
    edited: bool = False
    version: int = 0
    alive: bool = True
    role: str = "user"  # set when the span is written, never changed
    tool: str = ""  # likewise (spec/SPEC.md §1c): the tool's name, "" = unnamed
    tag: str = ""  # likewise: a label the host attaches
    masked: bool = False  # its content was replaced by a placeholder (effect: mask); an undo of its edit clears it
    place: Optional[int] = None  # the window-order key (SPEC 4d); None means the id, what every span but a summary has
    tombstone: bool = False  # evicted: tombstone: its content is gone, a tombstone (its id and hash) stays (SPEC 6f)
    confabulated: bool = False  # an undo without its record "restored" it from what was left (missing_record: reconstruct)

    def __post_init__(self):
        if self.place is None:
            object.__setattr__(self, "place", self.id)

    def __repr__(self) -> str:
        # place is left out where it is the id, tombstone and confabulated where false, so that every old trace
        # prints as before.
        shown = [k for k in self.__dataclass_fields__
                 if (k != "place" or self.place != self.id)
                 and (k not in ("tombstone", "confabulated") or getattr(self, k))]
        return f"Span({', '.join(f'{k}={getattr(self, k)!r}' for k in shown)})"


@dataclass(frozen=True)
class EditInfo:
    """What a recovery record holds about its edit; the edit's id is its record span's id."""

    record: int
    rationale: int
    target: int
    mode: str
    version: int
    prior_kind: str
    prior_edited: bool
    undone: bool = False
    cites: tuple = ()  # the span ids its rationale cites (spec/SPEC.md §6d)

    def __repr__(self) -> str:
        return _quiet_repr(self, "cites", ())


@dataclass(frozen=True)
class LedgerEntry:
    """A compaction's entry in the decision log (evidence: on): its rationale span and what that cites. It has no
    record and is never undone, so it is kept apart from the edits (spec/SPEC.md §6d)."""

    rationale: int
    cites: tuple = ()


@dataclass(frozen=True)
class State:
    """The whole window: every span ever written (evicted ones with alive=False) and every edit."""

    step: int = 0
    spans: tuple = ()
    edits: tuple = ()
    entries: tuple = ()  # the compactions' LedgerEntry records, oldest first (evidence: on)

    def __repr__(self) -> str:
        return _quiet_repr(self, "entries", ())

    def span(self, span_id: int) -> Span:
        return self.spans[span_id]

    def edit(self, edit_id: int) -> Optional[EditInfo]:
        for info in self.edits:
            if info.record == edit_id:
                return info
        return None

    def live_edits(self) -> tuple:
        return tuple(e for e in self.edits if not e.undone)

    def window_tokens(self) -> int:
        return sum(s.tokens for s in self.spans if s.alive and s.namespace == "window")

    def cited_ids(self) -> frozenset:
        """The spans some live entry cites: a not-undone edit, or a compaction (never undone)."""
        return frozenset(c for e in self.live_edits() + self.entries for c in e.cites)


def _quiet_repr(obj, key: str, default) -> str:
    # `key` at its default is left out, so that every state and edit without evidence edges prints as before.
    shown = [k for k in obj.__dataclass_fields__ if k != key or getattr(obj, k) != default]
    return f"{type(obj).__name__}({', '.join(f'{k}={getattr(obj, k)!r}' for k in shown)})"


def effective_budget(policy: Policy, host: Optional[int]) -> Optional[int]:
    """The budget truncation walks to: the policy's own (its declared truncation), and under `host_truncation: on`
    the least of it and the host's; None when neither is set (SPEC §2)."""
    if not host_truncates(policy):
        return policy.budget
    budgets = [b for b in (policy.budget, host) if b is not None]
    return min(budgets) if budgets else None


def host_truncates(policy: Policy) -> bool:
    """The deployment's host truncates the window to a budget of its own (`host_truncation: on`, SPEC §2)."""
    return policy.deployment.host_truncation == "on"


class ActionRefused(Exception):
    """The action's guard is false in this state (not a PrunecheckError: callers decide)."""


@dataclass(frozen=True)
class Transition:
    """One step's result: the new state, what happened, and which spans compaction removed."""

    before: State
    action: Action
    after: State
    outcome: str
    evicted: frozenset = frozenset()
    truncated: frozenset = frozenset()


def window_env(policy: Policy, state: State, tokens: Optional[int] = None, spans: Optional[int] = None) -> dict:
    """The window attributes in `state`, or with the window's totals replaced by `tokens` and `spans` (what the
    stage's target sees part-way through its walk)."""
    env = {
        "window_tokens": Fraction(state.window_tokens() if tokens is None else tokens),
        "window_spans": Fraction(window_spans(state) if spans is None else spans),
        "step": Fraction(state.step),
    }
    if policy.budget is not None:
        env["budget"] = Fraction(policy.budget)
    env.update(aggregates(policy, state))  # `until`, which sees the totals part-way, reads none (SPEC §1e)
    return env


def window_in_order(state: State) -> list:
    """The live spans of the window namespace, in window order (place order, spec/SPEC.md §4d)."""
    return sorted((s for s in state.spans if addressable(s)), key=window_order)


def window_spans(state: State) -> int:
    """The number of live spans in the window namespace."""
    return sum(1 for s in state.spans if addressable(s))


def own_env(state: State, span: Span) -> dict:
    """The attributes of `span` itself (OWN_ATTRS): what an aggregate's condition reads of each counted span."""
    age = state.step - span.created
    idle = state.step - span.last_read
    return {
        "tokens": Fraction(span.tokens),
        "age": Fraction(age),
        "idle": Fraction(idle),
        "reads": Fraction(span.reads),
        "recency": Fraction(1, 1 + idle),
        "frequency": Fraction(span.reads, 1 + age),
        "pinned": span.pinned,
        "edited": span.edited,
        "kind": span.kind,
        "namespace": span.namespace,
        "role": span.role,
        "tool": span.tool,
        "tag": span.tag,
        "masked": span.masked,
    }


def span_env(policy: Policy, state: State, span: Span) -> dict:
    """Every vocabulary attribute of `span` in `state`, as the policy sees it."""
    env = own_env(state, span)
    env.update(positions(state, span))
    env.update(window_env(policy, state))
    env.update(aggregates(policy, state, span))
    return env


def aggregates(policy: Policy, state: State, span: Optional[Span] = None) -> dict:
    """The value of each aggregate the policy reads (SPEC §1e), keyed by its node; see aggregate_values."""
    return aggregate_values(policy.aggregates, state, span) if policy.aggregates else {}


def aggregate_values(nodes, state: State, span: Optional[Span] = None) -> dict:
    """The value of each aggregate of `nodes` (SPEC §1e), keyed by its node: the sum over the live window spans (all
    of them, or those newer or older than `span` in window order) whose own attributes satisfy its condition, of 1
    (count) or of their tokens. Without `span`, only the window's aggregates."""
    out = {}
    for node in nodes:
        side, measure = AGGREGATES[node.fn]
        if side != "window" and span is None:
            continue
        key = None if span is None else window_order(span)
        total = 0
        for other in state.spans:
            if not addressable(other) or (side == "newer" and not window_order(other) > key) or (
                    side == "older" and not window_order(other) < key):
                continue
            if evaluate(node.args[0], own_env(state, other)):
                total += 1 if measure == "spans" else other.tokens
        out[node] = Fraction(total)
    return out


def positions(state: State, span: Span) -> dict:
    """The positional attributes of `span` (spec/SPEC.md §1b): counts over the live window spans W, in window order
    (window_order). Policies see them only on spans of W; the same sums are taken for any other span."""
    window = [s for s in state.spans if addressable(s)]
    newer = [s for s in window if window_order(s) > window_order(span)]
    return {
        "position": Fraction(sum(1 for s in window if window_order(s) < window_order(span))),
        "from_end": Fraction(len(newer)),
        "from_end_in_role": Fraction(sum(1 for s in newer if s.role == span.role)),
        "turn": Fraction(sum(1 for s in newer if s.role == "user")),
        "tokens_after": Fraction(sum(s.tokens for s in newer)),
        "window_spans": Fraction(len(window)),
    }


def addressable(span: Span) -> bool:
    """The policy's address space: live spans in the window namespace."""
    return span.alive and span.namespace == "window"


def present(span: Span) -> bool:
    """A record or rationale is present (it can serve undo and audit) iff it is alive and not masked."""
    return span.alive and not span.masked


def is_candidate(policy: Policy, state: State, span: Span) -> bool:
    """In the window, selected by `evict` and not protected by `keep`: by any of the compaction's stages (§4h)."""
    if not addressable(span):
        return False
    if deferred(policy, state, span):
        return False
    for st in policy.stages:
        env = span_env(st, state, span)
        if evaluate(st.evict, env) and not (st.keep is not None and evaluate(st.keep, env)):
            return True
    return False


def candidates(policy: Policy, state: State) -> tuple:
    return tuple(s.id for s in state.spans if is_candidate(policy, state, s))


def status(policy: Policy, state: State) -> str:
    """The closure status the deployment's audit reports."""
    if policy.deployment.audit == "independent":
        known = state.live_edits()
    else:
        def visible(span_id: int) -> bool:
            return addressable(state.span(span_id))
        known = tuple(e for e in state.live_edits() if visible(e.record) or visible(e.rationale))
    return REVERSIBLE if all(present(state.span(e.record)) for e in known) else UNKNOWN


def counter(state: State) -> tuple:
    """The first seed's "monotone counter of edits-performed vs. records-present": (every edit the ledger holds,
    undone or not; the records among them still present). Neither count is reduced by an undo, so a gap opened by a
    lost record stays open, a confabulated undo included."""
    return len(state.edits), sum(1 for e in state.edits if present(state.span(e.record)))


PROVISIONAL = "provisional"


def claim_status(policy: Policy, state: State) -> str:
    """The first seed's status (spec/SPEC.md §4e), which no condition reads: "provisional" with records in the
    window; "reversibility unknown" with a self-certified audit, a blind undo, or a live edit whose record is absent
    or stale; else "reversible"."""
    dep = policy.deployment
    if dep.records == "window":
        return PROVISIONAL
    if dep.audit == "policy" or dep.undo == "blind":
        return UNKNOWN
    for e in state.live_edits():
        if not present(state.span(e.record)) or state.span(e.target).version != e.version:
            return UNKNOWN
    return REVERSIBLE


def with_span(state: State, span: Span) -> State:
    spans = list(state.spans)
    spans[span.id] = span
    return replace(state, spans=tuple(spans))


def answers_call(state: State) -> bool:
    """A tool result may be appended: the newest span is an appended tool call, alive in the window."""
    return bool(state.spans) and is_call(state.spans[-1]) and addressable(state.spans[-1])


def is_call(span: Span) -> bool:
    return span.kind in CONTENT_KINDS and span.role == "tool_call"


def is_pair(state: State, k: int) -> bool:
    """Spans k and k+1 are a tool call and its result (the append guard makes every appended result one)."""
    return (0 <= k < len(state.spans) - 1 and is_call(state.span(k))
            and state.span(k + 1).kind in CONTENT_KINDS and state.span(k + 1).role == "tool_result")


def partner(state: State, span_id: int) -> Optional[int]:
    """The other span of span_id's tool-call pair, None if it is in none."""
    if is_pair(state, span_id):
        return span_id + 1
    return span_id - 1 if is_pair(state, span_id - 1) else None


def kept(policy: Policy, state: State, span: Span) -> bool:
    """The stage's `keep` holds on span (false without a keep), or `justification: defer` spares it."""
    if deferred(policy, state, span):
        return True
    return policy.keep is not None and bool(evaluate(policy.keep, span_env(policy, state, span)))


def deferred(policy: Policy, state: State, span: Span) -> bool:
    """`justification: defer` keeps a cited span out of the stage (the host's truncation may still take it)."""
    return policy.deployment.justification == "defer" and span.id in state.cited_ids()
