"""The reference runtime: the step function of a self-editing context window, its guards, and undo."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from prunecheck.spec.errors import IrreversibleEditError, MergeRequired
from prunecheck.spec.actions import (REPEATABLE, Action, Append, Audit, Compact, Edit, Pin, Read, Undo, Unpin, expand,
                                     steps_of)
from prunecheck.spec.policy import (CONTENT_KINDS, EVENT, ROLES, Num, Policy, keeps_destroyed_content, mentioned_events,
                                    name_problem, read_triggers, subexpressions, unmentioned_name)
from prunecheck.spec.state import (REVERSIBLE, UNKNOWN, Span, EditInfo, LedgerEntry, State, deferred, effective_budget,
                                   ActionRefused, Transition, window_env, window_in_order, window_spans, span_env,
                                   positions, addressable, present, is_candidate, candidates, status, with_span,
                                   answers_call, is_call, is_pair, partner, kept, PROVISIONAL, claim_status, counter)
from prunecheck.spec.compaction import (stage_order, triggered, pair_closure, stage_taken, removed, take,
                                        summary_span, staged_state, truncated_ids, compact_transition, host_budgets,
                                        citing, slots_needed, slots_written, stage_steps, refuses,
                                        taking_stage, selecting_stage)

# The runtime is the one place callers import the window's vocabulary from; state and compaction hold its parts.
__all__ = ["REVERSIBLE", "UNKNOWN", "Span", "EditInfo", "State", "effective_budget", "ActionRefused", "Transition",
           "window_env", "window_in_order", "window_spans", "span_env", "positions", "addressable", "present",
           "is_candidate", "candidates", "status", "with_span", "answers_call", "is_call", "is_pair", "partner",
           "kept", "stage_order", "triggered", "pair_closure", "stage_taken", "removed", "take", "summary_span",
           "staged_state", "truncated_ids", "compact_transition", "host_budgets", "enabled", "step", "undo",
           "enabled_actions", "PROVISIONAL", "claim_status", "LedgerEntry", "deferred", "citing", "slots_needed",
           "slots_written", "stage_steps", "refuses", "taking_stage", "selecting_stage",
           "cite_choices", "counter"]


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
        _require_cites(policy, state, action.cites)
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
        _require(room is None or room >= 2 or not _merges(policy, state, info),
                 "no span slots left for the merge's record and rationale")
    elif isinstance(action, Compact):
        host = action.budget
        _require(host is None or (type(host) is int and host >= 1), "a host budget is an integer >= 1")
        _require_cites(policy, state, action.cites)
        _require(isinstance(action.event, str) and not name_problem(action.event), "an event is a name (SPEC §4g)")
        _require(type(action.reported_tokens) is int and action.reported_tokens >= 0,
                 "reported tokens are an integer >= 0")
        if room is not None and room < slots_needed(policy):
            _require(room >= slots_written(policy, state, action),
                     "no span slot left for the summary or the ledger entry")
    elif not isinstance(action, Audit):
        raise ActionRefused(f"not an action: {action!r}")


def _require_cites(policy: Policy, state: State, cites) -> None:
    """An entry cites present spans (they are older than it), by ascending distinct ids, only under evidence: on."""
    _require(isinstance(cites, tuple), "cites is a tuple of span ids")
    if not cites:
        return
    _require(policy.deployment.evidence == "on", "citations need evidence: on")
    _require(all(_exists(state, c) and type(c) is int for c in cites), "cites a span that does not exist")
    _require(list(cites) == sorted(set(cites)), "cites lists distinct span ids in ascending order")
    _require(all(present(state.span(c)) for c in cites), "cites a span that is not present")


def _merges(policy: Policy, state: State, info: EditInfo) -> bool:
    """Under `undo: merge`, this undo is a merge: its record is present and its target was re-edited."""
    return (policy.deployment.undo == "merge" and present(state.span(info.record))
            and state.span(info.target).version != info.version)


def step(policy: Policy, state: State, action: Action, max_spans: Optional[int] = None) -> Transition:
    """Apply one enabled action; raises ActionRefused if its guard is false."""
    _guard(policy, state, action, max_spans)
    now = state.step + 1
    if isinstance(action, Append):
        spans = tuple(Span(len(state.spans) + k, one.kind, "window", one.tokens, state.step + k + 1,
                           state.step + k + 1, role=one.role, tool=one.tool, tag=one.tag)
                      for k, one in enumerate(expand(action)))
        after = replace(state, step=state.step + len(spans), spans=state.spans + spans)
        return Transition(state, action, after, "ok")
    if isinstance(action, Edit):
        target = state.span(action.target)
        new_target = replace(target, kind="summary" if action.mode == "transform" else "diff",
                             edited=True, version=target.version + 1)
        record_tokens = target.tokens if keeps_verbatim(policy, action.mode) else 1
        after = _write_entry(policy, with_span(state, new_target), target, new_target.version, action.mode,
                             record_tokens, now, action.cites)
        return Transition(state, action, after, "ok")
    if isinstance(action, Read):
        now = state.step + action.times
        span = state.span(action.span)
        after = with_span(state, replace(span, reads=span.reads + action.times, last_read=now))
        return Transition(state, action, replace(after, step=now), "ok")
    if isinstance(action, (Pin, Unpin)):
        after = with_span(state, replace(state.span(action.span), pinned=isinstance(action, Pin)))
        return Transition(state, action, replace(after, step=now), "ok")
    if isinstance(action, Compact):
        return compact_transition(policy, state, action, now)
    if isinstance(action, Undo):
        return _undo(policy, state, action, now)
    return Transition(state, action, replace(state, step=state.step + action.times), status(policy, state))


def keeps_verbatim(policy: Policy, mode: str) -> bool:
    """An edit's record holds the target's content verbatim: a destroy's under `destroy_record: verbatim` (its
    tokens); a transform's record is a pointer to the content the target still has (1 token)."""
    return mode == "destroy" and keeps_destroyed_content(policy.deployment)


def restorable(policy: Policy, info: EditInfo) -> bool:
    """The edit's record can restore its target: a transform's, or a destroy's kept verbatim (the second seed:
    "Transformation is reversible within the session; destruction is not", unless the content was kept)."""
    return info.mode != "destroy" or keeps_destroyed_content(policy.deployment)


def _undo(policy: Policy, state: State, action: Undo, now: int) -> Transition:
    info = state.edit(action.edit)
    if policy.deployment.safe_undo == "on" and status(policy, state) != REVERSIBLE:
        # The seed's safe_undo: the deployment's closure check (its `audit`) raises before the undo.
        return Transition(state, action, replace(state, step=now), "irreversible")
    if not present(state.span(info.record)):
        return _undo_absent(policy, state, action, now)
    if not restorable(policy, info):
        return Transition(state, action, replace(state, step=now), "irreversible")  # the record holds only an id
    if state.span(info.target).version != info.version:
        return _undo_stale(policy, state, action, now)
    return _revert(state, action, now)


def _undo_absent(policy: Policy, state: State, action: Undo, now: int) -> Transition:
    """No present record: irreversible, or under `missing_record: reconstruct` the seed's confabulation."""
    if policy.deployment.missing_record != "reconstruct":
        return Transition(state, action, replace(state, step=now), "irreversible")
    info = state.edit(action.edit)
    target = state.span(info.target)
    made_up = replace(_restored(target, info.prior_kind, info.prior_edited), confabulated=True)
    after = _mark_undone(with_span(state, made_up), info)
    return Transition(state, action, replace(after, step=now), "reconstructed")


def _undo_stale(policy: Policy, state: State, action: Undo, now: int) -> Transition:
    """A present record whose target was re-edited: refused (versioned), reverted (blind) or merged (merge)."""
    if policy.deployment.undo == "versioned":
        return Transition(state, action, replace(state, step=now), "merge required")
    if policy.deployment.undo == "blind":
        return _revert(state, action, now)
    info = state.edit(action.edit)
    target = state.span(info.target)
    merged = _restored(target, info.prior_kind, True)
    after = _mark_undone(with_span(state, merged), info)
    after = _write_entry(policy, after, target, merged.version, "merge", 1, now)
    return Transition(state, action, after, "merged")


def _revert(state: State, action: Undo, now: int) -> Transition:
    info = state.edit(action.edit)
    restored = _restored(state.span(info.target), info.prior_kind, info.prior_edited)
    after = _mark_undone(with_span(state, restored), info)
    return Transition(state, action, replace(after, step=now), "reverted")


def _restored(target: Span, kind: str, edited: bool) -> Span:
    return replace(target, kind=kind, edited=edited, version=target.version + 1, alive=True, masked=False)


def _mark_undone(state: State, info: EditInfo) -> State:
    return replace(state, edits=tuple(replace(e, undone=True) if e.record == info.record else e for e in state.edits))


def _write_entry(policy: Policy, state: State, before: Span, version: int, mode: str, record_tokens: int,
                 now: int, cites: tuple = ()) -> State:
    """An edit's record and rationale (two new spans) and its entry with its citations (a merge cites nothing),
    `before` being the target before it."""
    host = policy.deployment.pins == "host"
    record_id, rationale_id = len(state.spans), len(state.spans) + 1
    record_ns = "undo" if policy.deployment.records == "undo_region" else "window"
    rationale_ns = "log" if policy.deployment.rationale == "decision_log" else "window"
    role, tool = policy.deployment.record_role, policy.deployment.record_tool
    record = Span(record_id, "record", record_ns, record_tokens, now, now, pinned=host, role=role, tool=tool)
    rationale = Span(rationale_id, "rationale", rationale_ns, 1, now, now, pinned=host, role=role, tool=tool)
    info = EditInfo(record_id, rationale_id, before.id, mode, version, before.kind, before.edited, cites=cites)
    return replace(state, step=now, spans=state.spans + (record, rationale), edits=state.edits + (info,))


def undo(policy: Policy, state: State, edit_id: int) -> State:
    """The seed's undo as a function: raises IrreversibleEditError on an absent record (under `missing_record:
    refuse`; under `reconstruct` it confabulates, as the seed's failure did)."""
    transition = step(policy, state, Undo(edit_id))
    gated = policy.deployment.safe_undo == "on" and status(policy, state) != REVERSIBLE
    if transition.outcome == "irreversible" and gated:
        raise IrreversibleEditError("closure violated: a live edit has no recovery record; status is 'reversibility "
                                    "unknown', not 'reversible'")
    if transition.outcome == "irreversible" and present(state.span(edit_id)):
        raise IrreversibleEditError(f"cannot undo the edit with record #{edit_id}: it destroyed its target and its "
                                    "record keeps only an id (destroy_record: id)")
    if transition.outcome == "irreversible":
        raise IrreversibleEditError(f"cannot undo the edit with record #{edit_id}: recovery record absent or pruned")
    if transition.outcome == "merge required":
        raise MergeRequired(f"cannot revert the edit with record #{edit_id}: its target was re-edited; merge required")
    return transition.after


def cite_choices(policy: Policy, state: State) -> tuple:
    """The citations the explicit engine explores: none, and (evidence: on) each single present span. A violation of
    J1 needs one cited span; a policy reading `cited` non-monotonically may need more (the reason names the domain)."""
    if policy.deployment.evidence != "on":
        return ((),)
    return ((),) + tuple((s.id,) for s in state.spans if present(s))


def trigger_choices(policy: Policy) -> tuple:
    """The (event, reported_tokens) pairs the explicit engine fires compactions with (SPEC §4g): each event the policy
    mentions and one unmentioned name standing for the rest (no event, "", unless mentioned), times 0 and each
    constant of `when` less one, itself and plus one (a domain: exact for comparisons of reported_tokens with
    constants). Only ("", 0) for a policy that reads neither."""
    read = read_triggers(policy)
    events = (*mentioned_events(policy), unmentioned_name(mentioned_events(policy))) if EVENT in read else ("",)
    reported = (0,)
    if "reported_tokens" in read:
        constants = {int(n.value) for st in policy.stages if st.when is not None for n in subexpressions(st.when)
                     if isinstance(n, Num)}
        reported = tuple(sorted({0} | {v for c in constants for v in (c - 1, c, c + 1) if v >= 0}))
    return tuple((e, r) for e in sorted(events, key=lambda e: (e != "", e)) for r in reported)


def enabled_actions(policy: Policy, state: State, max_spans: Optional[int] = None, token_choices=(1,),
                    repeats=(1,), roles=("user",), tools=("",), tags=("",)) -> tuple:
    """Every enabled action in `state`, appends drawn from CONTENT_KINDS x token_choices x roles x tools x tags, reads
    and audits repeated each number of times in `repeats`, and compact() plus one compact(budget=H) per distinct outcome
    of a host budget (see host_budgets)."""
    options = [Append(kind, tokens, role, tool=tool, tag=tag) for kind in CONTENT_KINDS for tokens in token_choices
               for role in roles for tool in tools for tag in tags]
    citations = cite_choices(policy, state)
    for span in state.spans:
        options += [Edit(span.id, mode, c) for c in citations for mode in ("transform", "destroy")]
        options += [Pin(span.id), Unpin(span.id)] + [Read(span.id, times) for times in repeats]
    options += [Undo(e.record) for e in state.edits]
    for c in citations:
        for event, reported in trigger_choices(policy):
            fired = Compact(None, c, event, reported)
            options += [fired] + [replace(fired, budget=host) for host in host_budgets(policy, state, c, fired)]
    options += [Audit(times) for times in repeats]
    return tuple(a for a in options if enabled(policy, state, a, max_spans))
