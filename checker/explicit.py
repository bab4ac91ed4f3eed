"""The explicit-state oracle: breadth-first search over the reference runtime, independent of the z3 model."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterable

from prunecheck.spec.conditions import CONDITIONS, violations
from prunecheck.spec.policy import CONTENT_KINDS, EnumLit, Policy, subexpressions
from prunecheck.spec.runtime import Append, State, enabled_actions, step

from .replay import confirm
from .result import Result, Trace, Verdict

DEFAULT_TOKENS = (1, 2)


@dataclass(frozen=True)
class Domains:
    """The finite choices the explorer tries for an append: token counts, and content kinds."""

    tokens: tuple
    kinds: tuple

    def describe(self) -> str:
        return (f"tokens {{{', '.join(map(str, self.tokens))}}}, kinds {{{', '.join(self.kinds)}}}, "
                "host budgets: one per distinct compaction")


def kind_representatives(policy: Policy) -> tuple:
    """Content kinds the policy names, plus one for all the others: unnamed kinds behave identically."""
    exprs = [policy.evict] + ([policy.rank] if policy.rank is not None else [])
    named = {node.value for e in exprs for node in subexpressions(e) if isinstance(node, EnumLit)}
    kept = [k for k in CONTENT_KINDS if k in named]
    others = [k for k in CONTENT_KINDS if k not in named]
    return tuple(kept + others[:1])


def domains_for(policy: Policy, tokens: Iterable[int] = DEFAULT_TOKENS) -> Domains:
    return Domains(tuple(sorted(set(tokens))), kind_representatives(policy))


def explore(policy: Policy, depth: int, spans: int, conditions: Iterable[str] = CONDITIONS,
            domains: Domains = None, time_limit: float = 60.0) -> tuple:
    """Per condition: `violated` with a shortest trace (within the domains), or `unknown`; never `holds`."""
    domains = domains or domains_for(policy)
    pending = [c for c in CONDITIONS if c in set(conditions)]
    results, started = {}, time.perf_counter()
    parent = {State(): None}
    frontier, explored, stopped = [State()], 1, None

    def trace_to(state, action) -> tuple:
        actions = [action]
        while parent[state] is not None:
            state, taken = parent[state]
            actions.append(taken)
        return tuple(reversed(actions))

    for level in range(1, depth + 1):
        following = []
        for state in frontier:
            for action in enabled_actions(policy, state, spans, domains.tokens):
                if isinstance(action, Append) and action.kind not in domains.kinds:
                    continue
                transition = step(policy, state, action, spans)
                for c in [c for c in pending if c in violations(policy, transition)]:
                    actions = trace_to(state, action)
                    confirm(policy, actions, c, spans)
                    results[c] = Result(c, Verdict.VIOLATED, level, f"violated after {level} steps (shortest within "
                                        f"{spans} spans, {domains.describe()}); explicit search",
                                        engine="explicit", trace=Trace(c, actions, spans),
                                        seconds=time.perf_counter() - started)
                    pending.remove(c)
                if transition.after not in parent:
                    parent[transition.after] = (state, action)
                    following.append(transition.after)
            if time.perf_counter() - started > time_limit:
                stopped = level
                break
        explored += len(following)
        frontier = following
        if not pending or stopped is not None:
            break
    for c in pending:
        if stopped is not None:
            why = f"explicit search stopped in depth {stopped} after {explored} states (time limit {time_limit:g} s)"
            reached = stopped - 1
        else:
            why = (f"no violation up to depth {depth} over {spans} spans, {domains.describe()} "
                   f"(explicit search, {explored} states)")
            reached = depth
        results[c] = Result(c, Verdict.UNKNOWN, reached, why, engine="explicit",
                            seconds=time.perf_counter() - started)
    return tuple(results[c] for c in CONDITIONS if c in results)
