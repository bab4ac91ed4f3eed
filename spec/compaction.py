"""A compaction: the policy's stage (trigger, selection, order, walk, effect), then the host's truncation."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Optional

from prunecheck.spec.actions import Compact
from prunecheck.spec.evaluate import evaluate
from prunecheck.spec.policy import IN_PLACE, Policy, left_tokens, shortens
from prunecheck.spec.refusal import blocked, named_spans, sequential_taken
from prunecheck.spec.stage import start_on_taken, taken_effect, walk, window_order
from prunecheck.spec.state import (LedgerEntry, Span, State, Transition, addressable, candidates, effective_budget,
                                   host_truncates, is_candidate, kept, partner, span_env, window_env, window_in_order, window_spans, with_span)

def stage_order(policy: Policy, state: State, chosen) -> list:
    """The candidates in the order the stage walks them: by (rank, id), else oldest or newest first."""
    if policy.rank is not None:
        return sorted(chosen, key=lambda s: (evaluate(policy.rank, span_env(policy, state, s)), window_order(s)))
    return sorted(chosen, key=window_order, reverse=policy.order == "newest")


def trigger_env(action: Optional[Compact]) -> dict:
    """What the host tells the compaction it fires (SPEC §4g): its event and the usage the last call reported."""
    fired = Compact() if action is None else action
    return {"event": fired.event, "reported_tokens": Fraction(fired.reported_tokens)}


def triggered(policy: Policy, state: State, action: Optional[Compact] = None) -> bool:
    """The stage's trigger `when` in the state the compaction `action` starts from (true without one)."""
    return policy.when is None or bool(evaluate(policy.when, {**window_env(policy, state), **trigger_env(action)}))


def pair_closure(policy: Policy, state: State, taken) -> list:
    """`pairs: together`: `taken` closed under pairs. A taken span whose partner is in the window and kept is not
    taken; the partner in the window of every other taken span is taken too."""
    def windowed(i):
        p = partner(state, i)
        return p if p is not None and addressable(state.span(p)) else None
    out = [i for i in taken if windowed(i) is None or not kept(policy, state, state.span(windowed(i)))]
    return out + sorted({windowed(i) for i in out} - {None} - set(out))


def stage_taken(policy: Policy, state: State, action: Optional[Compact] = None) -> tuple:
    """Step 2 of a compaction (the stage): the taken ids in order, and the window's tokens after them. Nothing when
    the trigger is false; otherwise each candidate in order is taken while the target is false in the state the ones
    taken before it leave (the host's budget plays no part), then start_on's leading spans and (pairs: together)
    the pair closure."""
    tokens, spans = state.window_tokens(), window_spans(state)
    if not triggered(policy, state, action):
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


def removed(policy: Policy, span: Span, cited: bool = False) -> Span:
    """A span a compaction removes from the window: dead, or (evicted: logged) alive in the log; a cited span under
    `justification: downgrade` goes to the log whatever `evicted` says (spec/SPEC.md §6d); under `evicted: tombstone`
    a dead span gets a tombstone (§6f)."""
    if policy.deployment.evicted == "logged" or (cited and downgrades(policy)):
        return replace(span, namespace="log")
    return replace(span, alive=False, tombstone=span.tombstone or policy.deployment.evicted == "tombstone")


def downgrades(policy: Policy) -> bool:
    return policy.deployment.justification == "downgrade"


def take(policy: Policy, state: State, taken) -> State:
    """The stage's effect on the spans it takes: removed from the window, or masked or cut in place (with a tombstone
    under `evicted: tombstone`); a cited span under `justification: downgrade` is moved to the log instead."""
    cited = state.cited_ids()
    for span_id in taken:
        span = state.span(span_id)
        if policy.effect in IN_PLACE and not shortens(policy, span.tokens):
            continue  # a cut that shortens nothing removes nothing: the span stays whole (and is not moved)
        if policy.effect in IN_PLACE and not (span_id in cited and downgrades(policy)):
            state = with_span(state, replace(span, masked=True, tokens=left_tokens(policy, span.tokens),
                                             tombstone=span.tombstone or policy.deployment.evicted == "tombstone"))
        else:
            state = with_span(state, removed(policy, span, span_id in cited))
    return state


def citing(state: State, cites: tuple) -> State:
    """`state` as a compaction citing `cites` sees it: its own citations count as cited while it runs (a pending
    ledger entry, never stored: its rationale id is not yet known)."""
    return replace(state, entries=state.entries + (LedgerEntry(-1, cites),)) if cites else state


def ledger_entry(policy: Policy, before: State, after: State, cites: tuple, taken, now: int) -> State:
    """Under `evidence: on`, a compaction whose stage took a span writes its ledger entry: a rationale span (as an
    edit's) and a LedgerEntry with the action's citations (spec/SPEC.md §6d)."""
    if policy.deployment.evidence != "on" or not taken:
        return after
    dep, rid = policy.deployment, len(after.spans)
    rationale = Span(rid, "rationale", "log" if dep.rationale == "decision_log" else "window", 1, now, now,
                     pinned=dep.pins == "host", role=dep.record_role, tool=dep.record_tool)
    return replace(after, spans=after.spans + (rationale,), entries=before.entries + (LedgerEntry(rid, cites),))


def slots_needed(policy: Policy) -> int:
    """The span slots a compaction whose stages take something may write: a summary per summarising stage, a ledger
    entry's rationale."""
    return sum(st.effect == "summarise" for st in policy.stages) + (policy.deployment.evidence == "on")


def slots_written(policy: Policy, state: State, action: Optional[Compact] = None) -> int:
    """The span slots the compaction `action` from `state` writes, the refusal aside: a summary per summarising
    stage that took something, and a ledger entry's rationale if any stage did (under `evidence: on`)."""
    seen = citing(state, action.cites if action is not None else ())
    if not policy.later:  # one stage: its walk alone says whether it takes anything
        return slots_needed(policy) if stage_taken(policy, seen, action)[0] else 0
    steps = stage_steps(policy, seen, state.step + 1, action)
    taken = [(st, t) for st, _start, t, _after, _tokens in steps if t]
    return sum(st.effect == "summarise" for st, _t in taken) + (bool(taken) and policy.deployment.evidence == "on")


def summary_span(policy: Policy, state: State, taken, now: int) -> Span:
    """The summary a summarising stage writes for the spans `taken` (SPEC 4d): the next id, at the place of the oldest
    of them, or (summary_at: end) at its own id's, after every span."""
    place = min(window_order(state.span(i)) for i in taken)[0] if policy.summary_at == "replaced" else len(state.spans)
    return Span(len(state.spans), "summary", "window", policy.placeholder_tokens, now, now,
                role=policy.summary_role, place=place)


def stage_steps(policy: Policy, state: State, now: int, action: Optional[Compact] = None) -> list:
    """The stages of a compaction from `state`, in order (SPEC §4h): per stage (the stage as a one-stage policy, the
    state it starts from, the ids it took, the state it leaves, that state's window tokens); each stage starts
    from the state the one before it left, on the compaction's clock, in which a span an earlier stage wrote is new
    (age and idle 0; `written_at` gives it its clock back)."""
    out, born = [], len(state.spans)
    for st in policy.stages:
        start = _new_to_later_stages(state, born)
        taken, after, tokens = staged_state(st, start, now, action)
        out.append((st, start, taken, after, tokens))
        state = after
    return out


def _new_to_later_stages(state: State, born: int) -> State:
    """`state` with the spans from id `born` on (written by this compaction's earlier stages) created and last read
    at its clock."""
    if len(state.spans) <= born:
        return state
    fresh = tuple(replace(s, created=state.step, last_read=state.step) for s in state.spans[born:])
    return replace(state, spans=state.spans[:born] + fresh)


def written_at(state: State, born: int, now: int) -> State:
    """`state` with the spans from id `born` on (written by the compaction that ends at `now`) created and last read
    at `now`."""
    if len(state.spans) <= born:
        return state
    return replace(state, spans=state.spans[:born] + tuple(replace(s, created=now, last_read=now)
                                                           for s in state.spans[born:]))


def staged_state(policy: Policy, state: State, now: int, action: Optional[Compact] = None) -> tuple:
    """One stage of a compaction (a one-stage policy): the ids it took, the state its effect leaves (with the
    summary, if it wrote one) and that state's window tokens."""
    taken, tokens = stage_taken(policy, state, action)
    staged = take(policy, state, taken)
    if downgrades(policy) and policy.effect in IN_PLACE:
        # The walk planned with the mask's accounting; a downgraded (moved) span left the window entirely.
        tokens = staged.window_tokens()
    if policy.effect == "summarise" and taken:
        staged = replace(staged, spans=staged.spans + (summary_span(policy, state, taken, now),))
        tokens += policy.placeholder_tokens
    return taken, staged, tokens


def truncated_ids(state: State, tokens: int, limit: Optional[int]) -> list:
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


def refused_compaction(policy: Policy, state: State, action: Compact, now: int) -> Optional[Transition]:
    """A compaction that names a recovery span under refusal: atomic or sequential (SPEC §6e), outcome "blocked";
    None when it proceeds. The stages run in order (§4h); a stage is refused when it names a recovery span in the
    state it starts from. Atomic changes nothing but the clock; sequential keeps what the stages before it did and
    what the refused stage's walk took before it met the first named span, and truncates nothing. Either writes no
    ledger entry (the compaction did not complete); its citations count while it runs, as a completed one's do
    (spec/SPEC.md §6d)."""
    if policy.deployment.refusal == "silent":
        return None
    seen = citing(state, action.cites)
    current, taken_before = seen, []
    for st in policy.stages:
        current = _new_to_later_stages(current, len(state.spans))
        start = state if current is seen else replace(current, entries=state.entries)  # without the pending entry
        if blocked(st, start):
            if policy.deployment.refusal == "atomic":
                return Transition(state, action, replace(state, step=now), "blocked")
            taken = sequential_taken(start, stage_taken(st, current, action)[0], named_spans(st, start))
            after = replace(take(st, current, taken), entries=state.entries)
            if st.effect == "summarise" and taken:
                after = replace(after, spans=after.spans + (summary_span(st, start, taken, now),))
            return Transition(state, action, replace(written_at(after, len(state.spans), now), step=now), "blocked",
                              frozenset(taken_before + taken))
        taken, current, _tokens = staged_state(st, current, now, action)
        taken_before += taken
    return None


def refuses(policy: Policy, state: State, action: Optional[Compact] = None) -> bool:
    """Whether the refusal blocks the compaction `action` from `state` (SPEC §6e): for one stage, whether it names a
    recovery span in `state`, whatever the action."""
    if not policy.later:
        return blocked(policy, state)
    return refused_compaction(policy, state, action or Compact(), state.step + 1) is not None


def compact_transition(policy: Policy, state: State, action: Compact, now: int) -> Transition:
    refused = refused_compaction(policy, state, action, now)
    if refused is not None:
        return refused
    evicted, staged, tokens, cited = prepared(policy, state, action.cites, now, action)
    truncated = truncated_ids(staged, tokens, effective_budget(policy, action.budget))
    after = staged
    for span_id in truncated:
        after = with_span(after, removed(policy, after.span(span_id), span_id in cited))
    return Transition(state, action, replace(after, step=now), "ok", frozenset(evicted), frozenset(truncated))


def prepared(policy: Policy, state: State, cites: tuple, now: int, action: Optional[Compact] = None) -> tuple:
    """What the host's truncation starts from: the stage's taken ids, the state it leaves with its summary and
    ledger entry written (both before truncation, which may take them), that state's window tokens, and the spans
    cited while the compaction runs (its own citations too)."""
    steps = stage_steps(policy, citing(state, cites), now, action)
    evicted = list(dict.fromkeys(i for _st, _start, taken, _after, _tokens in steps for i in taken))
    staged, tokens = written_at(steps[-1][3], len(state.spans), now), steps[-1][4]
    cited = staged.cited_ids()
    written = ledger_entry(policy, state, replace(staged, entries=state.entries), cites, evicted, now)
    if len(written.spans) > len(staged.spans) and addressable(written.spans[-1]):
        tokens += written.spans[-1].tokens
    return evicted, written, tokens, cited


def host_budgets(policy: Policy, state: State, cites: tuple = (), action: Optional[Compact] = None) -> tuple:
    """Host budgets whose compactions differ from compact() and from each other, one per distinct outcome (the
    largest budget of each), largest first: every compact(budget=H) from `state` has the outcome of one of them
    or of compact(). Exact, not a sample: truncating exactly k spans is a budget interval, whose top is listed.
    None while the refusal blocks every compaction (SPEC §6e): a blocked compaction truncates nothing; none without
    `host_truncation: on` (SPEC §2): a host budget then changes nothing."""
    fired = replace(action or Compact(), cites=tuple(cites))
    if not host_truncates(policy) or refuses(policy, state, fired):
        return ()
    _taken, staged, rest, _cited = prepared(policy, state, cites, state.step + 1, action)
    remaining = [s.tokens for s in sorted(staged.spans, key=window_order) if addressable(s)]
    tops = {rest - sum(remaining[:k]) - 1 for k in range(len(remaining))}
    if policy.budget is not None:
        tops.add(policy.budget - 1)
    seen = {frozenset(truncated_ids(staged, rest, policy.budget))}
    out = []
    for host in sorted((h for h in tops if h >= 1), reverse=True):
        outcome = frozenset(truncated_ids(staged, rest, effective_budget(policy, host)))
        if outcome not in seen:
            seen.add(outcome)
            out.append(host)
    return tuple(out)


def taking_stage(policy: Policy, t: Transition, span_id: int) -> tuple:
    """(the stage, as a one-stage policy, that last took `span_id` in the compaction t, the state that stage
    started from): the policy itself and t's state before, for one stage or a span no stage took (SPEC §4h)."""
    if not policy.later or not isinstance(t.action, Compact):
        return policy, t.before
    found = (policy.stages[0], t.before)
    for st, start, taken, _after, _tokens in stage_steps(policy, citing(t.before, t.action.cites), t.after.step,
                                                         t.action):
        if span_id in taken:
            found = (st, replace(start, entries=t.before.entries))
    return found


def selecting_stage(policy: Policy, state: State, span: Span) -> Policy:
    """The first stage, as a one-stage policy, whose selection is true on `span` in `state` (the first stage when
    none is)."""
    return next((st for st in policy.stages if is_candidate(st, state, span)), policy.stages[0])


def blocking_spans(policy: Policy, t: Transition) -> tuple:
    """The recovery spans the refusal blocked the compaction t on (SPEC §6e): those the first refused stage names in
    the state it started from."""
    for st, start, _taken, _after, _tokens in stage_steps(policy, citing(t.before, t.action.cites), t.after.step,
                                                          t.action):
        names = named_spans(st, replace(start, entries=t.before.entries))
        if names:
            return names
    return ()
