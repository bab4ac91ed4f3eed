"""One step of a trace in words (`step_label`): what it changed in the window and the edit/record graph."""

from __future__ import annotations

from dataclasses import replace

from prunecheck.spec.actions import paired
from prunecheck.spec.policy import CONTENT_KINDS, IN_PLACE, NAME_ATTRS, Policy, reads_roles, uses_pairs
from prunecheck.spec.compaction import blocking_spans
from prunecheck.spec.runtime import (Append, Audit, Compact, Edit, Pin, Read, State, Transition, Undo, Unpin, citing,
                                    stage_steps, triggered)
from prunecheck.spec.state import host_truncates
from prunecheck.checker.language.printer import to_text


def host_decides(policy: Policy, action) -> bool:
    """The compaction truncated to the host's budget, not the policy's (under `host_truncation: on` the least of the
    two applies; off, a host budget changes nothing, SPEC §2)."""
    host = getattr(action, "budget", None)
    return host is not None and host_truncates(policy) and (policy.budget is None or host < policy.budget)


def budget_words(policy: Policy, action) -> str:
    if host_decides(policy, action):
        return f"the host budget of {action.budget}"
    return f"the policy's budget of {policy.budget}"


def edit_number(state: State, record: int) -> int:
    """The edit whose record is span `record`, counted as the text numbers edits: 1 for the run's first, 2, ...
    (the runtime and `undo(edit=...)` know an edit by its record's span id instead)."""
    return next(number for number, e in enumerate(state.edits, start=1) if e.record == record)


def span_words(state: State, span_id: int) -> str:
    for number, e in enumerate(state.edits, start=1):
        if e.record == span_id:
            return f"record of edit {number}"
        if e.rationale == span_id:
            return f"rationale of edit {number}"
    return state.span(span_id).kind


def taken_words(policy: Policy) -> str:
    """What the stage did to the spans it took: evicted (and where they went), masked or cut in place."""
    if policy.effect == "cut":
        return f"cut by the policy to at most {policy.placeholder_tokens} token{'s' * (policy.placeholder_tokens != 1)}" \
               " (its content no longer whole)"
    if policy.effect == "mask":
        return f"masked by the policy (content replaced by {policy.placeholder_tokens} placeholder token" \
               f"{'s' * (policy.placeholder_tokens != 1)})"
    if policy.effect == "summarise":
        return "summarised by the policy" + (" and moved to the log" if policy.deployment.evicted == "logged" else "")
    return "evicted by the policy" + (" and moved to the log" if policy.deployment.evicted == "logged" else "")


def _downgraded(policy: Policy, before: State, after: State, span_id: int) -> bool:
    """The stage's taken span went to the log because it was cited (justification: downgrade), not by its effect."""
    dep = policy.deployment
    effect_logs = dep.evicted == "logged" and policy.effect not in IN_PLACE  # the effect itself goes to the log
    return (dep.evidence == "on" and dep.justification == "downgrade" and not effect_logs
            and after.span(span_id).namespace == "log")


def _truncated_label(policy: Policy, a: Compact) -> str:
    moved = " (moved to the log)" if policy.deployment.evicted == "logged" else ""
    return f"truncated to {budget_words(policy, a)}{moved}: "


def _names(written) -> str:
    """An appended span's or a record's tool name and tag, where set (spec/SPEC.md 1c)."""
    return "".join(f", {attr} {getattr(written, attr)!r}" for attr in NAME_ATTRS if getattr(written, attr))


def step_label(policy: Policy, t: Transition) -> str:
    """What one step changed in the edit/record graph."""
    a, before, after = t.action, t.before, t.after
    # Roles are named where the policy tells roles or pairs apart, or the run has a tool call (T1 may be about it).
    roles = reads_roles(policy) or uses_pairs(policy) or any(s.role in ("tool_call", "tool_result")
                                                              and s.kind in CONTENT_KINDS for s in after.spans)
    if isinstance(a, Append):
        role = (f", role {a.role}" if roles else "") + _names(a)
        what = f"({a.kind}{role}, {a.tokens} token{'s' * (a.tokens != 1)}"
        if paired(a):
            first = len(before.spans)
            return (f"spans #{first}-#{len(after.spans) - 1} ({a.kind}, {a.times} tool call{'s' * (a.times != 1)} of "
                    f"{a.tokens} token{'s' * (a.tokens != 1)}, each followed by its result of {a.result_tokens} "
                    f"token{'s' * (a.result_tokens != 1)}) enter the window (steps {before.step + 1}-{after.step})")
        if a.times != 1:
            first = len(before.spans)
            return (f"spans #{first}-#{first + a.times - 1} {what} each) enter the window, {a.times} in a row "
                    f"(steps {before.step + 1}-{after.step})")
        return f"span #{len(before.spans)} {what}) enters the window"
    if isinstance(a, Edit):
        info = after.edits[-1]
        record, rationale = after.span(info.record), after.span(info.rationale)
        pinned = (f", role {record.role}" if roles else "") + _names(record) + (
            ", pinned by the host" if record.pinned else "")
        return (f"edit {len(after.edits)}: {a.mode} #{a.target} (now {after.span(a.target).kind}); "
                f"record #{info.record} in the {record.namespace} namespace{pinned}; rationale #{info.rationale} "
                f"in the {rationale.namespace} namespace")
    if isinstance(a, Read):
        times = f" {a.times} times in a row (steps {before.step + 1}-{after.step})" if a.times != 1 else ""
        return f"#{a.span} ({span_words(after, a.span)}) read{times}: reads={after.span(a.span).reads}"
    if isinstance(a, (Pin, Unpin)):
        return f"#{a.span} ({span_words(after, a.span)}) {'pinned' if isinstance(a, Pin) else 'unpinned'}"
    if isinstance(a, Compact):
        return _compaction_label(policy, t)
    if isinstance(a, Undo):
        return _undo_label(t)
    if isinstance(a, Audit):
        if a.times != 1:
            return f"{a.times} audits in a row (steps {before.step + 1}-{after.step}, the clock is now {after.step}): " \
                   f"status says '{t.outcome}'"
        return f"audit: status says '{t.outcome}'"
    return repr(a)


def _taken_parts(policy: Policy, t: Transition, before: State, after: State, taken) -> list:
    """What one stage did to the spans it took, from `before` to `after`, in words (nothing if it took nothing)."""
    parts = []
    if policy.when is not None and not triggered(policy, before, t.action):
        parts.append(f"the trigger `{to_text(policy.when)}` is false, the policy takes nothing")
    # A cited span under `justification: downgrade` is moved to the log whatever the effect (SPEC §6d).
    moved = sorted(i for i in taken if _downgraded(policy, before, after, i))
    unchanged = sorted(i for i in taken if after.span(i) == replace(before.span(i), reads=after.span(i).reads,
                                                                      last_read=after.span(i).last_read))
    kept_words = sorted(set(taken) - set(moved) - set(unchanged))
    if kept_words:
        parts.append(f"{taken_words(policy)}: " + ", ".join(f"#{i} ({span_words(before, i)})" for i in kept_words))
    if unchanged:  # a cut that shortens nothing removes nothing (SPEC §4c)
        parts.append("taken but left whole (no longer than the cut): "
                     + ", ".join(f"#{i} ({span_words(before, i)})" for i in unchanged))
    if moved:
        parts.append("cited, so moved to the log (justification: downgrade): "
                     + ", ".join(f"#{i} ({span_words(before, i)})" for i in moved))
    return parts


def _compaction_label(policy: Policy, t: Transition) -> str:
    """What a compaction removed, moved, wrote and truncated."""
    a, before, after = t.action, t.before, t.after
    parts = [f"blocked (refusal: {policy.deployment.refusal}), the policy names "
             + ", ".join(f"#{i}" for i in blocking_spans(policy, t))] if t.outcome == "blocked" else []
    if policy.later:  # a list of stages (SPEC §4h): what each stage took, from the state the one before left
        steps = stage_steps(policy, citing(before, a.cites), after.step, a)
        for k, (st, start, taken, staged, _tokens) in enumerate(steps, 1):
            if t.outcome == "blocked" and not set(taken) <= set(t.evicted):  # the refusal stopped it here
                partial = [i for i in taken if i in t.evicted]
                parts += [f"stage {k}: {part}" for part in _taken_parts(st, t, start, after, partial)]
                break
            parts += [f"stage {k}: {part}" for part in _taken_parts(st, t, start, staged, taken)]
    else:
        parts += _taken_parts(policy, t, before, after, t.evicted)
    for written in after.spans[len(before.spans):]:  # a summary, a ledger entry's rationale (SPEC 4d, 6d)
        tokens = f"{written.tokens} token{'s' * (written.tokens != 1)}"
        if written.kind == "summary":
            where = "at the end of the window" if written.place == written.id else "in their place"  # SPEC 4d
            parts.append(f"summary #{written.id} ({written.role}, {tokens}) written {where}")
        else:
            parts.append(f"ledger entry: rationale #{written.id} in the {written.namespace} namespace"
                         + "".join(f", cites #{c}" for c in getattr(a, "cites", ())))
    if t.truncated:  # a summary truncated at once is not in `before`
        parts.append(_truncated_label(policy, a)
                     + ", ".join(f"#{i} ({span_words(before if i < len(before.spans) else after, i)})"
                                 for i in sorted(t.truncated)))
    return "compaction: " + ("; ".join(parts) if parts else "nothing removed")


def _undo_label(t: Transition) -> str:
    a, before, merge = t.action, t.before, t.after.edits[-1]
    info = before.edit(a.edit)
    undo = f"undo of edit {edit_number(before, a.edit)} (record #{a.edit})"
    if t.outcome == "reverted":
        return f"{undo}: #{info.target} reverted to {info.prior_kind}"
    if t.outcome == "irreversible":
        return f"{undo}: irreversible, the record is {absence_words(before, a.edit)}"
    if t.outcome == "merged":
        return (f"{undo}: #{info.target} was re-edited, merged as new edit {len(t.after.edits)} "
                f"(record #{merge.record}, rationale #{merge.rationale})")
    if t.outcome == "reconstructed":
        return (f"{undo}: the record is {absence_words(before, a.edit)}, #{info.target} "
                f"reconstructed as {info.prior_kind} from what is left (confabulated)")
    return f"{undo}: refused, merge required (#{info.target} was re-edited)"


def absence_words(state: State, span_id: int) -> str:
    return "masked" if state.span(span_id).masked and state.span(span_id).alive else "gone"
