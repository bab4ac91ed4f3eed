"""The reference runtime: states, actions and the step function of a self-editing context window."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Optional

from prunecheck.spec.errors import IrreversibleEditError, MergeRequired
from prunecheck.spec.evaluate import evaluate
from prunecheck.spec.actions import (REPEATABLE, Action, Append, Audit, Compact, Edit, Pin, Read, Undo, Unpin, expand,
                                     steps_of)
from prunecheck.spec.policy import CONTENT_KINDS, IN_PLACE, ROLES, Policy, left_tokens, name_problem
from prunecheck.spec.stage import start_on_taken, taken_effect, walk, window_order

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

    def __post_init__(self):
        if self.place is None:
            object.__setattr__(self, "place", self.id)

    def __repr__(self) -> str:
        # place is left out where it is the id, so that every trace without summaries prints as before.
        shown = [k for k in self.__dataclass_fields__ if k != "place" or self.place != self.id]
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
    return env


def window_in_order(state: State) -> list:
    """The live spans of the window namespace, in window order (place order, spec/SPEC.md §4d)."""
    return sorted((s for s in state.spans if addressable(s)), key=window_order)


def window_spans(state: State) -> int:
    """The number of live spans in the window namespace."""
    return sum(1 for s in state.spans if addressable(s))


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
        "tool": span.tool,
        "tag": span.tag,
        "masked": span.masked,
    }
    env.update(positions(state, span))
    env.update(window_env(policy, state))
    return env


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
    """In the window, selected by `evict` and not protected by `keep`."""
    if not addressable(span):
        return False
    env = span_env(policy, state, span)
    return bool(evaluate(policy.evict, env)) and not (policy.keep is not None and evaluate(policy.keep, env))


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
        _require(action.role != "tool_result" or (answers_call(state) and action.times == 1),
                 "a tool result answers the newest span, which is not a tool call in the window")
        _require(type(action.result_tokens) is int and action.result_tokens >= 0, "result tokens are an integer >= 0")
        _require(action.result_tokens == 0 or action.role == "tool_call", "only tool calls are appended with results")
        _require(not name_problem(action.tool) and not name_problem(action.tag), "append of a bad tool name or tag")
        _require(action.role != "tool_result" or action.tool == state.spans[-1].tool,
                 "a tool result names its call's tool")
        _require(room is None or room >= steps_of(action), "no span slot left")
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
        if policy.effect == "summarise" and room is not None and room < 1:
            _require(not _evict(policy, state)[0], "no span slot left for the summary")
    elif not isinstance(action, Audit):
        raise ActionRefused(f"not an action: {action!r}")


def step(policy: Policy, state: State, action: Action, max_spans: Optional[int] = None) -> Transition:
    """Apply one enabled action; raises ActionRefused if its guard is false."""
    _guard(policy, state, action, max_spans)
    now = state.step + 1
    host = policy.deployment.pins == "host"
    if isinstance(action, Append):
        spans = tuple(Span(len(state.spans) + k, one.kind, "window", one.tokens, state.step + k + 1,
                           state.step + k + 1, role=one.role, tool=one.tool, tag=one.tag)
                      for k, one in enumerate(expand(action)))
        after = replace(state, step=state.step + len(spans), spans=state.spans + spans)
        return Transition(state, action, after, "ok")
    if isinstance(action, Edit):
        target = state.span(action.target)
        record_id, rationale_id = len(state.spans), len(state.spans) + 1
        new_target = replace(target, kind="summary" if action.mode == "transform" else "diff",
                             edited=True, version=target.version + 1)
        record_ns = "undo" if policy.deployment.records == "undo_region" else "window"
        rationale_ns = "log" if policy.deployment.rationale == "decision_log" else "window"
        record_tokens = 1 if action.mode == "transform" else target.tokens
        role, tool = policy.deployment.record_role, policy.deployment.record_tool
        record = Span(record_id, "record", record_ns, record_tokens, now, now, pinned=host, role=role, tool=tool)
        rationale = Span(rationale_id, "rationale", rationale_ns, 1, now, now, pinned=host, role=role, tool=tool)
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


def stage_order(policy: Policy, state: State, chosen) -> list:
    """The candidates in the order the stage walks them: by (rank, id), else oldest or newest first."""
    if policy.rank is not None:
        return sorted(chosen, key=lambda s: (evaluate(policy.rank, span_env(policy, state, s)), window_order(s)))
    return sorted(chosen, key=window_order, reverse=policy.order == "newest")


def triggered(policy: Policy, state: State) -> bool:
    """The stage's trigger `when` in the state the compaction starts from (true without one)."""
    return policy.when is None or bool(evaluate(policy.when, window_env(policy, state)))


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
    """The stage's `keep` holds on span (false without a keep)."""
    return policy.keep is not None and bool(evaluate(policy.keep, span_env(policy, state, span)))


def pair_closure(policy: Policy, state: State, taken) -> list:
    """`pairs: together`: `taken` closed under pairs. A taken span whose partner is in the window and kept is not
    taken; the partner in the window of every other taken span is taken too."""
    def windowed(i):
        p = partner(state, i)
        return p if p is not None and addressable(state.span(p)) else None
    out = [i for i in taken if windowed(i) is None or not kept(policy, state, state.span(windowed(i)))]
    return out + sorted({windowed(i) for i in out} - {None} - set(out))


def _evict(policy: Policy, state: State) -> tuple:
    """Step 2 of a compaction (the stage): the taken ids in order, and the window's tokens after them. Nothing when
    the trigger is false; otherwise each candidate in order is taken while the target is false in the state the ones
    taken before it leave (the host's budget plays no part), then start_on's leading spans and (pairs: together)
    the pair closure."""
    tokens, spans = state.window_tokens(), window_spans(state)
    if not triggered(policy, state):
        return [], tokens
    ordered = stage_order(policy, state, [state.span(i) for i in candidates(policy, state)])
    taken, after = walk(policy, ordered, tokens, spans, lambda t, n: window_env(policy, state, t, n))
    if policy.pairs != "together" and policy.start_on is None:
        return taken, after
    taken = taken + start_on_taken(policy, window_in_order(state), set(taken), lambda s: kept(policy, state, s))
    if policy.pairs == "together":
        taken = pair_closure(policy, state, taken)
    for i in taken:
        tokens, spans = taken_effect(policy, state.span(i), tokens, spans)
    return taken, tokens


def _remove(policy: Policy, span: Span) -> Span:
    """A span a compaction removes from the window: dead, or (evicted: logged) alive in the log."""
    if policy.deployment.evicted == "logged":
        return replace(span, namespace="log")
    return replace(span, alive=False)


def _take(policy: Policy, state: State, taken) -> State:
    """The stage's effect on the spans it takes: removed from the window, or masked or cut in place."""
    for span_id in taken:
        span = state.span(span_id)
        if policy.effect in IN_PLACE:
            state = _set(state, replace(span, masked=True, tokens=left_tokens(policy, span.tokens)))
        else:
            state = _set(state, _remove(policy, span))
    return state


def summary_span(policy: Policy, state: State, taken, now: int) -> Span:
    """The summary a summarising stage writes for the spans `taken` (SPEC 4d): the next id, at the place of the oldest
    of them."""
    place = min(window_order(state.span(i)) for i in taken)[0]
    return Span(len(state.spans), "summary", "window", policy.placeholder_tokens, now, now,
                role=policy.summary_role, place=place)


def _staged(policy: Policy, state: State, now: int) -> tuple:
    """The stage of a compaction: the ids it took, the state its effect leaves (with the summary, if it wrote one)
    and that state's window tokens."""
    taken, tokens = _evict(policy, state)
    staged = _take(policy, state, taken)
    if policy.effect == "summarise" and taken:
        staged = replace(staged, spans=staged.spans + (summary_span(policy, state, taken, now),))
        tokens += policy.placeholder_tokens
    return taken, staged, tokens


def _truncate(state: State, tokens: int, limit: Optional[int]) -> list:
    """Step 3, on the state the stage leaves: the ids truncated oldest-first until the window is within `limit`
    (none without a limit)."""
    truncated = []
    if limit is None:
        return truncated
    for span in sorted(state.spans, key=window_order):
        if tokens <= limit:
            break
        if addressable(span):
            truncated.append(span.id)
            tokens -= span.tokens
    return truncated


def _compact(policy: Policy, state: State, action: Compact, now: int) -> Transition:
    evicted, staged, tokens = _staged(policy, state, now)
    truncated = _truncate(staged, tokens, effective_budget(policy, action.budget))
    after = staged
    for span_id in truncated:
        after = _set(after, _remove(policy, after.span(span_id)))
    return Transition(state, action, replace(after, step=now), "ok", frozenset(evicted), frozenset(truncated))


def host_budgets(policy: Policy, state: State) -> tuple:
    """Host budgets whose compactions differ from compact() and from each other, one per distinct outcome (the
    largest budget of each), largest first: every compact(budget=H) from `state` has the outcome of one of them
    or of compact(). Exact, not a sample: truncating exactly k spans is a budget interval, whose top is listed."""
    _taken, staged, rest = _staged(policy, state, state.step + 1)
    remaining = [s.tokens for s in sorted(staged.spans, key=window_order) if addressable(s)]
    tops = {rest - sum(remaining[:k]) - 1 for k in range(len(remaining))}
    if policy.budget is not None:
        tops.add(policy.budget - 1)
    seen = {frozenset(_truncate(staged, rest, policy.budget))}
    out = []
    for host in sorted((h for h in tops if h >= 1), reverse=True):
        outcome = frozenset(_truncate(staged, rest, effective_budget(policy, host)))
        if outcome not in seen:
            seen.add(outcome)
            out.append(host)
    return tuple(out)


def _undo(policy: Policy, state: State, action: Undo, now: int) -> Transition:
    info = state.edit(action.edit)
    if not present(state.span(info.record)):
        return Transition(state, action, replace(state, step=now), "irreversible")
    target = state.span(info.target)
    if policy.deployment.undo == "versioned" and target.version != info.version:
        return Transition(state, action, replace(state, step=now), "merge required")
    restored = replace(target, kind=info.prior_kind, edited=info.prior_edited, version=target.version + 1, alive=True,
                       masked=False)
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
                    repeats=(1,), roles=("user",), tools=("",), tags=("",)) -> tuple:
    """Every enabled action in `state`, appends drawn from CONTENT_KINDS x token_choices x roles x tools x tags, reads
    and audits repeated each number of times in `repeats`, and compact() plus one compact(budget=H) per distinct outcome
    of a host budget (see host_budgets)."""
    options = [Append(kind, tokens, role, tool=tool, tag=tag) for kind in CONTENT_KINDS for tokens in token_choices
               for role in roles for tool in tools for tag in tags]
    for span in state.spans:
        options += [Edit(span.id, "transform"), Edit(span.id, "destroy"), Pin(span.id), Unpin(span.id)]
        options += [Read(span.id, times) for times in repeats]
    options += [Undo(e.record) for e in state.edits] + [Compact()]
    options += [Compact(host) for host in host_budgets(policy, state)] + [Audit(times) for times in repeats]
    return tuple(a for a in options if enabled(policy, state, a, max_spans))
