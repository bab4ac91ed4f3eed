"""The compaction's closed forms in the unrolled model (spec/SPEC.md 4, 4b, 4d): the stage's walk, the summary a
summarising stage writes, and the host's oldest-first truncation over what the stage leaves."""

from __future__ import annotations

import z3

from prunecheck.spec.policy import IN_PLACE
from prunecheck.symbolic import evidence
from prunecheck.spec.stage import stage_target
from prunecheck.spec.state import host_truncates
from prunecheck.symbolic.span_terms import trigger_env
from prunecheck.symbolic.terms import ExprEncoder, Frac, left_tokens_term, window_env
from prunecheck.symbolic.window_terms import before, place_term


def stage_trigger(model, s, budget, a):
    """The stage's trigger `when` in s, for the compaction action a (true without one)."""
    env = {**window_env(s.clock, Frac(s.window_tokens()), budget, s.window_spans()), **model.window_aggregates(s),
           **trigger_env(a)}
    return z3.BoolVal(True) if model.policy.when is None else ExprEncoder(env).encode(model.policy.when)


def stage_walk(model, s, cand: list, ahead, budget, a) -> list:
    """Per slot: taken by a stage with a trigger or a target (SPEC 4b). Slot i is taken iff the trigger holds, it
    is a candidate, and the target is false before it and before every candidate ahead of it, each in the state
    all candidates ahead of that one leave (the walk takes a prefix, so this is the loop)."""
    n, policy = model.n, model.policy
    trigger, target = stage_trigger(model, s, budget, a), stage_target(policy)
    if target is None:
        return [z3.And(trigger, c) for c in cand]
    removed = [model.taken_effect(s, k) for k in range(n)]
    totals = (s.window_tokens(), s.window_spans())
    stop = []
    for j in range(n):
        ahead_j = [z3.And(cand[k], ahead(k, j)) for k in range(n)]
        left = [total - z3.Sum([z3.IntVal(0)] + [z3.If(ahead_j[k], removed[k][m], 0) for k in range(n) if k != j])
                for m, total in enumerate(totals)]
        stop.append(ExprEncoder(window_env(s.clock, Frac(left[0]), budget, left[1])).encode(target))
    return [z3.And([trigger, cand[i], z3.Not(stop[i])]
                   + [z3.Implies(z3.And(cand[j], ahead(j, i)), z3.Not(stop[j])) for j in range(n) if j != i])
            for i in range(n)]


def summary_written(model, s, evicted: list) -> tuple:
    """The summary a summarising stage writes (SPEC 4d): per slot, whether it is written there (the first free slot,
    as an append, when anything was taken), and its place, the least place among the taken slots (None under
    `summary_at: end`: the slot's own, as an append's)."""
    if not model.placing:
        return [z3.BoolVal(False)] * model.n, None
    wrote = z3.Or(evicted)
    if model.policy.summary_at == "end":  # after every span: its place is its own slot's, as an append's
        return [z3.And(wrote, s.first_free(i)) for i in range(model.n)], None
    least, any_before = place_term(s, 0), evicted[0]
    for j in range(1, model.n):
        least = z3.If(z3.And(evicted[j], z3.Or(z3.Not(any_before), s.place[j] < least)), s.place[j], least)
        any_before = z3.Or(any_before, evicted[j])
    return [z3.And(wrote, s.first_free(i)) for i in range(model.n)], least


def truncation(model, s, a, evicted: list, summary: tuple, budget) -> list:
    """Per slot: truncated by the host, oldest first in window order, over what the stage left (a summary
    included) until the window is within the effective budget."""
    n, total = model.n, s.window_tokens()
    if not host_truncates(model.policy):  # only the policy's own declared truncation (SPEC §2)
        if budget is None:
            return [z3.BoolVal(False)] * n
        limited, limit = z3.BoolVal(True), budget
    elif budget is None:
        limited, limit = a.hosted, a.host
    else:
        limited, limit = z3.BoolVal(True), z3.If(z3.And(a.hosted, a.host < budget), a.host, budget)
    rest = total - z3.Sum([z3.If(evicted[i], model.taken_effect(s, i)[0], 0) for i in range(n)])
    if model.policy.effect in IN_PLACE:
        # Masked or cut spans stay in the window, with what is left of them, for the host's truncation.
        remaining = [s.in_window(i) for i in range(n)]
        left = [z3.If(evicted[i], left_tokens_term(model.policy, s.tokens[i]), s.tokens[i]) for i in range(n)]
        if model.evidence and model.dep.justification == "downgrade":
            # A cited span the stage took went to the log whole (spec/SPEC.md §6d): out of the window.
            moved = evidence.moved(model, s, a, evicted)
            rest = rest - z3.Sum([z3.If(moved[i], left[i], 0) for i in range(n)])
            remaining = [z3.And(r, z3.Not(m)) for r, m in zip(remaining, moved)]
    else:
        remaining = [z3.And(s.in_window(i), z3.Not(evicted[i])) for i in range(n)]
        left = s.tokens
    places = None
    if model.placing:
        written, place = summary
        tokens = z3.IntVal(model.policy.placeholder_tokens)
        rest = rest + z3.If(z3.Or(evicted), tokens, 0)
        remaining = [z3.Or(remaining[i], written[i]) for i in range(n)]
        left = [z3.If(written[i], tokens, left[i]) for i in range(n)]
        # a summary at the end (place None, SPEC 4d) stands at its own slot's place, as an append
        places = [z3.If(written[i], z3.IntVal(i) if place is None else place, s.place[i]) for i in range(n)]
    rest, remaining, left, places = evidence.ledger_in_window(model, s, a, evicted, (rest, remaining, left, places))
    truncated = []
    for i in range(n):
        older = z3.Sum([z3.IntVal(0)] + [z3.If(remaining[j], left[j], 0) for j in range(i)]) if places is None \
            else z3.Sum([z3.IntVal(0)] + [z3.If(z3.And(remaining[j], before(s, j, i, places)), left[j], 0)
                                          for j in range(n) if j != i])
        truncated.append(z3.And(limited, remaining[i], rest - older > limit))
    return truncated
