"""Several counterexamples for one condition, pairwise different in their sequence of actions, not only in values."""

from __future__ import annotations

import time
from typing import Sequence

import z3

from prunecheck.symbolic.conditions import violation_at
from prunecheck.symbolic.model import ACT, Model
from prunecheck.spec.policy import Policy

from prunecheck.checker.engines.invariants import inductive_lemmas, lemma_terms
from prunecheck.checker.engines.minimize import minimize
from prunecheck.checker.engines.replay import confirm, decode_action, decode_state
from prunecheck.checker.result import Search, Trace, Variants
from prunecheck.symbolic.solver import Status, new_solver, query
from prunecheck.checker.engines.unknowns import solver_words


EXTRA_DEPTH = 3
MAX_QUERIES_PER_TRACE = 16  # a deterministic bound (time limits are not): the second pass skips many known traces


def action_names(actions: Sequence) -> tuple:
    return tuple(a.name for a in actions)


def contains_sequence(acts: Sequence, names: tuple):
    """A z3 term: the action terms `acts` contain the action names `names` as a subsequence (not necessarily
    contiguous)."""
    row = [z3.BoolVal(True)] * (len(acts) + 1)
    for name in names:
        nxt = [z3.BoolVal(False)]
        for i, a in enumerate(acts):
            nxt.append(z3.Or(nxt[i], z3.And(row[i], a.act == ACT[name])))
        row = nxt
    return row[-1]


def distinct_counterexamples(policy: Policy, condition: str, first: Trace, count: int, depth: int,
                             timeout: float, rlimit: int = 0) -> tuple:
    """Up to `count` replayed, reduced traces (the first included); search_counterexamples says more."""
    return search_counterexamples(policy, condition, first, count, depth, timeout, rlimit)[0]


def search_counterexamples(policy: Policy, condition: str, first: Trace, count: int, depth: int,
                           timeout: float, rlimit: int = 0) -> tuple:
    """(traces, Variants): up to `count` replayed, reduced traces (the first included), shortest first, pairwise
    different in their action sequences, each violating `condition` first at its end; and how the search ended.

    First pass: none may contain an earlier one's action sequence as a subsequence, so each is a different way to
    violate the condition, not the same one padded. Reduction only drops steps, so a trace that reduces to one
    already found contains its sequence, and blocking subsequences skips all of those without solving for them.
    Second pass, if the first found fewer than `count`: sequences need only differ (and not extend one already
    found); a trace that reduces to a known sequence is skipped. Each pass goes at most EXTRA_DEPTH steps past
    the first trace, asks the solver at most MAX_QUERIES_PER_TRACE * count times, and the two passes spend at most
    `timeout` seconds together, so fewer than `count` may come back. A pass that ran to its depth without finding
    enough establishes what it blocked (Variants says it)."""
    found = [first]
    deadline = time.monotonic() + timeout
    reach = min(depth, len(first.actions) + EXTRA_DEPTH)
    passes = [_search(policy, condition, found, count, reach, deadline, timeout, rlimit, strict,
                      MAX_QUERIES_PER_TRACE * count) if len(found) < count else (Search.ENOUGH, (), "")
              for strict in (True, False)]
    if len(found) >= count:
        return tuple(found), Variants(count, Search.ENOUGH, reach)
    (first_pass, raws, _), (search, reducible, reason) = passes
    shown = [action_names(t.actions) for t in found]
    # The first pass blocked every trace containing a raw trace's actions; its claim is about the ones shown only if
    # each raw trace contains one shown (reduction only drops steps, so it does).
    contained = first_pass is Search.EXHAUSTED and all(any(_within(s, raw) for s in shown) for raw in raws)
    return tuple(found), Variants(count, search, reach, len(reducible), reason, contained)


def _within(short: tuple, long: tuple) -> bool:
    """short is a subsequence of long."""
    rest = iter(long)
    return all(name in rest for name in short)


def _search(policy, condition, found, count, reach, deadline, timeout, rlimit, strict, queries: int) -> tuple:
    """One pass, adding to `found`; (Search, the action sequences it blocked that are not shown, plain reason)."""
    spans = found[0].spans
    model = Model(policy, spans, accelerate=True)
    invariant = inductive_lemmas(model, timeout, rlimit)
    solver = new_solver(timeout * 1000, rlimit)
    states, actions, steps = [model.state(0)], [], []
    solver.add(model.encode_init(states[0]))

    def avoid(names: tuple):
        if strict:
            return z3.Not(contains_sequence(actions, names))
        return z3.Or([actions[i].act != ACT[n] for i, n in enumerate(names)]) if len(names) <= len(actions) \
            else z3.BoolVal(True)

    seen = {action_names(t.actions) for t in found}
    reducible = set()
    for k in range(reach + 1):
        if k > 0:
            actions.append(model.action(k - 1))
            states.append(model.state(k))
            steps.append(model.encode_step(states[k - 1], actions[k - 1], states[k]))
            solver.add(steps[-1].constraints)
            solver.add(lemma_terms(model, states[k], invariant))
        bad = violation_at(model, condition, states, actions, steps, k)
        if bad is None:
            continue
        literal = z3.Bool(f"variant_{condition}_{strict}@{k}")
        solver.add(z3.Implies(literal, z3.And([bad] + [avoid(names) for names in seen])))
        while len(found) < count:
            left = deadline - time.monotonic()
            queries -= 1
            if left <= 0:
                return Search.LIMIT, (), f"its time limit of {timeout:g} s ran out"
            if queries < 0:
                return Search.QUERIES, (), ""
            answer = query(solver, [literal], int(left * 1000))
            if answer.status == Status.UNKNOWN:
                return Search.LIMIT, (), solver_words(answer.reason)
            if answer.status != Status.SAT:
                break
            zmodel = solver.model()
            raw = tuple(decode_action(zmodel, a) for a in actions[:k])
            confirm(policy, raw, condition, spans, [decode_state(zmodel, s) for s in states[: k + 1]])
            solver.add(z3.Implies(literal, avoid(action_names(raw))))
            reduced = minimize(policy, raw, condition, spans)
            confirm(policy, reduced, condition, spans)
            names = action_names(reduced)
            if action_names(raw) != names:
                reducible.add(action_names(raw))
            if names in seen:
                continue
            seen.add(names)
            found.append(Trace(condition, reduced, spans))
            solver.add(z3.Implies(literal, avoid(names)))
        if len(found) >= count:
            return Search.ENOUGH, (), ""
        # Later traces must violate first at their end: the condition holds at every shorter depth from here on.
        solver.add(z3.Not(bad))
    return Search.EXHAUSTED, tuple(sorted(reducible - seen)), ""
