"""The reference runtime: states, actions and the step function of a self-editing context window."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Optional, Union

from prunecheck.spec.errors import IrreversibleEditError, MergeRequired
from prunecheck.spec.evaluate import evaluate
from prunecheck.spec.policy import CONTENT_KINDS, ROLES, Policy

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


@dataclass(frozen=True)
class State:
    """The whole window: every span ever written (evicted ones with alive=False) and every edit."""

    step: int = 0
    spans: tuple = ()
    edits: tuple = ()

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


@dataclass(frozen=True)
class Append:
    """New content arrives at the end of the window."""

    kind: str
    tokens: int
    role: str = "user"
    name = "append"


@dataclass(frozen=True)
class Edit:
    """Summarise (`transform`) or replace-and-discard (`destroy`) a content span, writing a record and a rationale."""

    target: int
    mode: str
    name = "edit"


@dataclass(frozen=True)
class Read:
    """The agent reads a span, `times` times in a row (one step each; see expand)."""

    span: int
    times: int = 1
    name = "read"


@dataclass(frozen=True)
class Pin:
    """The agent sets a span's pinned flag."""

    span: int
    name = "pin"


@dataclass(frozen=True)
class Unpin:
    """The agent clears a span's pinned flag."""

    span: int
    name = "unpin"


@dataclass(frozen=True)
class Compact:
    """Evict the policy's candidates, then truncate oldest-first to the effective budget: the least of the policy's
    budget and the host's (`budget`, None when the host imposes none; it may differ at every compaction)."""

    budget: Optional[int] = None
    name = "compact"


@dataclass(frozen=True)
class Undo:
    """Undo the edit whose record is span `edit`."""

    edit: int
    name = "undo"


@dataclass(frozen=True)
class Audit:
    """Ask for the closure status, `times` times in a row: changes nothing but the clock (a wait of `times` steps)."""

    times: int = 1
    name = "audit"


Action = Union[Append, Edit, Read, Pin, Unpin, Compact, Undo, Audit]
ACTION_TYPES = {cls.name: cls for cls in (Append, Edit, Read, Pin, Unpin, Compact, Undo, Audit)}


REPEATABLE = (Read, Audit)


def action_args(action: Action) -> dict:
    """The action's arguments, without the defaults that mean "as a single step": a compaction without a host
    budget, a read or audit done once."""
    return {key: getattr(action, key) for key in action.__dataclass_fields__
            if not (isinstance(action, Compact) and getattr(action, key) is None)
            and not (key == "times" and getattr(action, key) == 1)
            and not (key == "role" and getattr(action, key) == "user")}


OPTIONAL_ARGS = ("role", "budget", "times")  # what action_args leaves out at its default; always passed by name


def action_text(action: Action, keywords: bool = False) -> str:
    """The action as a call: `compact(3, budget=2)`, or with every argument named, `compact(now=3, budget=2)`."""
    args = action_args(action)
    if keywords:
        return f"{action.name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"
    positional = [repr(v) for k, v in args.items() if k not in OPTIONAL_ARGS]
    named = [f"{k}={args[k]!r}" for k in OPTIONAL_ARGS if k in args]
    return f"{action.name}({', '.join(positional + named)})"


def steps_of(action: Action) -> int:
    """How many real steps the action stands for: its `times` for a repeated read or audit, else 1."""
    return action.times if isinstance(action, REPEATABLE) else 1


def real_steps(actions) -> int:
    """The number of real steps a sequence of actions stands for (each repeated action counts `times`)."""
    return sum(steps_of(a) for a in actions)


def expand(action: Action) -> tuple:
    """The single steps a repeated action stands for: step(expand(a)) reaches the state step(a) does (tested)."""
    if isinstance(action, REPEATABLE) and action.times != 1:
        return (replace(action, times=1),) * action.times
    return (action,)


def effective_budget(policy: Policy, host: Optional[int]) -> Optional[int]:
    """The budget truncation walks to: the least of the policy's and the host's, None when neither is set."""
    budgets = [b for b in (policy.budget, host) if b is not None]
    return min(budgets) if budgets else None


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


def span_env(policy: Policy, state: State, span: Span) -> dict:
    """Every vocabulary attribute of `span` in `state`, as the policy sees it."""
    age = state.step - span.created
    idle = state.step - span.last_read
    env = {
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
        "window_tokens": Fraction(state.window_tokens()),
        "step": Fraction(state.step),
    }
    if policy.budget is not None:
        env["budget"] = Fraction(policy.budget)
    return env


def addressable(span: Span) -> bool:
    """The policy's address space: live spans in the window namespace."""
    return span.alive and span.namespace == "window"


def is_candidate(policy: Policy, state: State, span: Span) -> bool:
    return addressable(span) and bool(evaluate(policy.evict, span_env(policy, state, span)))


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
    return REVERSIBLE if all(state.span(e.record).alive for e in known) else UNKNOWN


def _set(state: State, span: Span) -> State:
    spans = list(state.spans)
    spans[span.id] = span
    return replace(state, spans=tuple(spans))


def _require(condition: bool, why: str) -> None:
    if not condition:
        raise ActionRefused(why)


def enabled(policy: Policy, state: State, action: Action, max_spans: Optional[int] = None) -> bool:
    try:
        _guard(policy, state, action, max_spans)
    except ActionRefused:
        return False
    return True


def _exists(state: State, span_id) -> bool:
    return isinstance(span_id, int) and 0 <= span_id < len(state.spans)


def _guard(policy: Policy, state: State, action: Action, max_spans: Optional[int]) -> None:
    room = None if max_spans is None else max_spans - len(state.spans)
    if isinstance(action, REPEATABLE):
        _require(type(action.times) is int and action.times >= 1, "a repetition count is an integer >= 1")
    if isinstance(action, Append):
        _require(action.kind in CONTENT_KINDS, f"append of non-content kind {action.kind!r}")
        _require(isinstance(action.tokens, int) and action.tokens >= 1, "append needs tokens >= 1")
        _require(action.role in ROLES, f"append of unknown role {action.role!r}")
        _require(action.role != "tool_result" or answers_call(state), "a tool result answers the newest span, which is "
                 "not a tool call in the window")
        _require(room is None or room >= 1, "no span slot left")
    elif isinstance(action, Edit):
        _require(_exists(state, action.target), f"no span {action.target}")
        target = state.span(action.target)
        _require(addressable(target) and target.kind in CONTENT_KINDS, "edit targets a live content span in the window")
        _require(action.mode in ("transform", "destroy"), f"unknown edit mode {action.mode!r}")
        _require(room is None or room >= 2, "no span slots left for record and rationale")
    elif isinstance(action, Read):
        _require(_exists(state, action.span) and state.span(action.span).alive, "read of an absent span")
    elif isinstance(action, (Pin, Unpin)):
        _require(_exists(state, action.span) and state.span(action.span).alive, "pin of an absent span")
        span = state.span(action.span)
        _require(span.pinned == isinstance(action, Unpin), "pin state already as asked")
        if policy.deployment.pins == "host":
            _require(span.kind in CONTENT_KINDS, "only the host pins and unpins records and rationale")
    elif isinstance(action, Undo):
        info = state.edit(action.edit) if isinstance(action.edit, int) else None
        _require(info is not None, f"no edit {action.edit}")
        _require(not info.undone, f"edit {action.edit} already undone")
    elif isinstance(action, Compact):
        host = action.budget
        _require(host is None or (type(host) is int and host >= 1), "a host budget is an integer >= 1")
    elif not isinstance(action, Audit):
        raise ActionRefused(f"not an action: {action!r}")


def step(policy: Policy, state: State, action: Action, max_spans: Optional[int] = None) -> Transition:
    """Apply one enabled action; raises ActionRefused if its guard is false."""
    _guard(policy, state, action, max_spans)
    now = state.step + 1
    host = policy.deployment.pins == "host"
    if isinstance(action, Append):
        span = Span(len(state.spans), action.kind, "window", action.tokens, now, now, role=action.role)
        after = replace(state, step=now, spans=state.spans + (span,))
        return Transition(state, action, after, "ok")
    if isinstance(action, Edit):
        target = state.span(action.target)
        record_id, rationale_id = len(state.spans), len(state.spans) + 1
        new_target = replace(target, kind="summary" if action.mode == "transform" else "diff",
                             edited=True, version=target.version + 1)
        record_ns = "undo" if policy.deployment.records == "undo_region" else "window"
        rationale_ns = "log" if policy.deployment.rationale == "decision_log" else "window"
        record_tokens = 1 if action.mode == "transform" else target.tokens
        role = policy.deployment.record_role
        record = Span(record_id, "record", record_ns, record_tokens, now, now, pinned=host, role=role)
        rationale = Span(rationale_id, "rationale", rationale_ns, 1, now, now, pinned=host, role=role)
        info = EditInfo(record_id, rationale_id, target.id, action.mode, new_target.version,
                        target.kind, target.edited)
        after = _set(state, new_target)
        after = replace(after, step=now, spans=after.spans + (record, rationale), edits=state.edits + (info,))
        return Transition(state, action, after, "ok")
    if isinstance(action, Read):
        now = state.step + action.times
        span = state.span(action.span)
        after = _set(state, replace(span, reads=span.reads + action.times, last_read=now))
        return Transition(state, action, replace(after, step=now), "ok")
    if isinstance(action, (Pin, Unpin)):
        after = _set(state, replace(state.span(action.span), pinned=isinstance(action, Pin)))
        return Transition(state, action, replace(after, step=now), "ok")
    if isinstance(action, Compact):
        return _compact(policy, state, action, now)
    if isinstance(action, Undo):
        return _undo(policy, state, action, now)
    return Transition(state, action, replace(state, step=state.step + action.times), status(policy, state))


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


def pair_closure(state: State, taken) -> list:
    """`pairs: together`: the spans of the window the stage takes besides `taken` because their partner was taken."""
    extra = {partner(state, i) for i in taken} - {None} - set(taken)
    return sorted(i for i in extra if addressable(state.span(i)))


def _evict(policy: Policy, state: State) -> tuple:
    """Step 2 of a compaction: the evicted ids in order (the selection's, then its pair closure's), and the
    window's tokens after them."""
    evicted, tokens = _select(policy, state)
    if policy.pairs == "together":
        extra = pair_closure(state, evicted)
        evicted, tokens = evicted + extra, tokens - sum(state.span(i).tokens for i in extra)
    return evicted, tokens


def _select(policy: Policy, state: State) -> tuple:
    """The stage's selection: the chosen ids in order, and the window's tokens after them (the host's budget plays
    no part: the ranked walk stops at the policy's own budget)."""
    chosen = [state.span(i) for i in candidates(policy, state)]
    budget = policy.budget
    tokens = state.window_tokens()
    if policy.rank is not None and budget is not None:
        def order(span: Span):
            return (evaluate(policy.rank, span_env(policy, state, span)), span.id)
        evicted = []
        for span in sorted(chosen, key=order):
            if tokens <= budget:
                break
            evicted.append(span.id)
            tokens -= span.tokens
        return evicted, tokens
    return [s.id for s in chosen], tokens - sum(s.tokens for s in chosen)


def _truncate(state: State, evicted: list, tokens: int, limit: Optional[int]) -> list:
    """Step 3: the ids truncated oldest-first until the window is within `limit` (none without a limit)."""
    truncated = []
    if limit is None:
        return truncated
    for span in state.spans:
        if tokens <= limit:
            break
        if addressable(span) and span.id not in evicted:
            truncated.append(span.id)
            tokens -= span.tokens
    return truncated


def _compact(policy: Policy, state: State, action: Compact, now: int) -> Transition:
    evicted, tokens = _evict(policy, state)
    truncated = _truncate(state, evicted, tokens, effective_budget(policy, action.budget))
    after = state
    for span_id in evicted + truncated:
        after = _set(after, replace(after.span(span_id), alive=False))
    return Transition(state, action, replace(after, step=now), "ok", frozenset(evicted), frozenset(truncated))


def host_budgets(policy: Policy, state: State) -> tuple:
    """Host budgets whose compactions differ from compact() and from each other, one per distinct outcome (the
    largest budget of each), largest first: every compact(budget=H) from `state` has the outcome of one of them
    or of compact(). Exact, not a sample: truncating exactly k spans is a budget interval, whose top is listed."""
    evicted, rest = _evict(policy, state)
    remaining = [s.tokens for s in state.spans if addressable(s) and s.id not in evicted]
    tops = {rest - sum(remaining[:k]) - 1 for k in range(len(remaining))}
    if policy.budget is not None:
        tops.add(policy.budget - 1)
    seen = {frozenset(_truncate(state, evicted, rest, policy.budget))}
    out = []
    for host in sorted((h for h in tops if h >= 1), reverse=True):
        outcome = frozenset(_truncate(state, evicted, rest, effective_budget(policy, host)))
        if outcome not in seen:
            seen.add(outcome)
            out.append(host)
    return tuple(out)


def _undo(policy: Policy, state: State, action: Undo, now: int) -> Transition:
    info = state.edit(action.edit)
    if not state.span(info.record).alive:
        return Transition(state, action, replace(state, step=now), "irreversible")
    target = state.span(info.target)
    if policy.deployment.undo == "versioned" and target.version != info.version:
        return Transition(state, action, replace(state, step=now), "merge required")
    restored = replace(target, kind=info.prior_kind, edited=info.prior_edited, version=target.version + 1, alive=True)
    after = _set(state, restored)
    edits = tuple(replace(e, undone=True) if e.record == info.record else e for e in after.edits)
    return Transition(state, action, replace(after, step=now, edits=edits), "reverted")


def undo(policy: Policy, state: State, edit_id: int) -> State:
    """The seed's undo as a function: raises IrreversibleEditError on an absent record, never reconstructs."""
    transition = step(policy, state, Undo(edit_id))
    if transition.outcome == "irreversible":
        raise IrreversibleEditError(f"cannot undo the edit with record #{edit_id}: recovery record absent or pruned")
    if transition.outcome == "merge required":
        raise MergeRequired(f"cannot revert the edit with record #{edit_id}: its target was re-edited; merge required")
    return transition.after


def enabled_actions(policy: Policy, state: State, max_spans: Optional[int] = None, token_choices=(1,),
                    repeats=(1,), roles=("user",)) -> tuple:
    """Every enabled action in `state`, appends drawn from CONTENT_KINDS x token_choices x roles, reads and audits
    repeated each number of times in `repeats`, and compact() plus one compact(budget=H) per distinct outcome of a host budget
    (see host_budgets)."""
    options = [Append(kind, tokens, role) for kind in CONTENT_KINDS for tokens in token_choices for role in roles]
    for span in state.spans:
        options += [Edit(span.id, "transform"), Edit(span.id, "destroy"), Pin(span.id), Unpin(span.id)]
        options += [Read(span.id, times) for times in repeats]
    options += [Undo(e.record) for e in state.edits] + [Compact()]
    options += [Compact(host) for host in host_budgets(policy, state)] + [Audit(times) for times in repeats]
    return tuple(a for a in options if enabled(policy, state, a, max_spans))
