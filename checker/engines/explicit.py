"""The explicit-state oracle: breadth-first search over the reference runtime, independent of the z3 model."""

from __future__ import annotations

import math
import os
import sys
import time
from fractions import Fraction
from typing import Iterable, Optional

from prunecheck.spec.conditions import CONDITIONS, applicable, violations
from prunecheck.spec.policy import (COMPARE_OPS, CONTENT_KINDS, ROLES, SIZED, Attr, Binary, EnumLit, InSet, Num, Policy,
                                    mentioned_names, read_attributes, stage_exprs, subexpressions, unmentioned_name,
                                    calls_tools, read_triggers)
from prunecheck.spec.runtime import Append, Audit, State, enabled_actions, step, trigger_choices

from prunecheck.symbolic.interrupts import stop_if_interrupted

from prunecheck.checker.engines.replay import confirm
from prunecheck.checker.result import (Clause, Domains, EngineRun, Found, Method, Outcome, Reason, Result, Stats, Trace,
                                       Verdict)

MEMORY_EVERY = 256  # states between looks at the process's memory (each look reads /proc)
DEFAULT_TOKENS = (1, 2)
DEFAULT_REPEATS = (1,)
# Which domain a constant feeds, by the attributes it is compared with (spec/SPEC.md §7c).
CLOCK_ATTRS = ("age", "idle", "step", "reads", "recency", "frequency")
TOKEN_ATTRS = ("tokens", "window_tokens", "budget", "tokens_after")  # window_spans asks for no value: spans are bounded by N


def representatives(policy: Policy, values: tuple) -> tuple:
    """The values the policy names, plus one for all the others: unnamed values behave identically."""
    exprs = stage_exprs(policy)
    named = {node.value for e in exprs for node in subexpressions(e) if isinstance(node, EnumLit)}
    kept = [k for k in values if k in named]
    others = [k for k in values if k not in named]
    return tuple(kept + others[:1])


def kind_representatives(policy: Policy) -> tuple:
    """Content kinds the policy names, plus one for all the others."""
    return representatives(policy, CONTENT_KINDS)


def role_representatives(policy: Policy) -> tuple:
    """Roles the policy names, plus one for all the others (`user` first, so a policy naming none keeps `user`);
    `turn` tells `user` from one other role, and `from_end_in_role` compares any two roles, so it keeps them all;
    tool_call and tool_result when the agent calls tools (`tool_calls: on`, T1 applies), role-blind policy or not: they
    make pairs. start_on (SPEC 4b) keeps them all too: every role but its own leads, and pairs still matter."""
    read = read_attributes(policy)
    if "from_end_in_role" in read or any(st.start_on is not None for st in policy.stages):
        return ROLES
    named = representatives(policy, ROLES)  # always holds `user`, named or as the one for all the others
    named = named + ROLES[1:2] if "turn" in read and named == ("user",) else named
    return named + tuple(r for r in ("tool_call", "tool_result") if calls_tools(policy) and r not in named)


def neighbours(x: Fraction) -> set:
    """The integers next to a threshold x: x-1, x, x+1 for an integer, floor(x) and ceil(x) otherwise."""
    if x.denominator == 1:
        return {int(x) - 1, int(x), int(x) + 1}
    return {math.floor(x), math.ceil(x)}


def _contexts(policy: Policy):
    """(attribute names, constants) per comparison of evict, keep, when and until, and for rank as a whole."""
    ranks = [st.rank for st in policy.stages if st.rank is not None]
    nodes = [n for e in stage_exprs(policy) if not any(e is r for r in ranks) for n in subexpressions(e)
             if isinstance(n, InSet) or (isinstance(n, Binary) and n.op in COMPARE_OPS)]
    for node in nodes + ranks:
        inside = list(subexpressions(node))
        yield ({n.name for n in inside if isinstance(n, Attr)},
               {n.value for n in inside if isinstance(n, Num)})


def _repeat_values(attrs: set, c: Fraction) -> set:
    """What a constant c compared with clock attributes asks of a repetition count."""
    out = neighbours(c)  # the constant itself, whatever arithmetic surrounds it (`recency * 13 < 1`)
    if attrs & {"recency", "frequency"} and c > 0:
        out |= neighbours(1 / c - 1)  # 1/(1+idle), or one read's 1/(1+age), crosses c at 1/c - 1
    if "frequency" in attrs:
        out |= {c.numerator, c.denominator - c.numerator - 1}  # p reads at age q-1: q-p-1 other steps
        if c < 1:
            out |= neighbours(c / (1 - c))  # n reads from birth: n/(1+n) crosses c at n = c/(1-c)
    return out


def constant_domains(policy: Policy) -> tuple:
    """(token counts, repetitions, clock targets) the policy's constants and budget ask for, beyond the defaults."""
    tokens, repeats, targets, rates, waits = set(), set(), set(), set(), set()
    for attrs, constants in _contexts(policy):
        for c in constants:
            if attrs & set(TOKEN_ATTRS):
                tokens |= neighbours(c)
            if attrs & (set(CLOCK_ATTRS) - {"step"}):  # `step` asks for clock targets instead
                repeats |= _repeat_values(attrs, c)
                if "frequency" not in attrs:
                    waits |= _repeat_values(attrs, c)
            if "step" in attrs:
                targets |= neighbours(c)  # the clock is absolute: wait until it reads c, whatever came before
            if "frequency" in attrs and 0 < c < 1:
                rates.add(c)
    # n reads then a wait of w (asked by another comparison) keep n/(1+n+w) above c from n = c(1+w)/(1-c).
    repeats |= {v for c in rates for w in waits if w > 1 for v in neighbours(c * (1 + w) / (1 - c))}
    if policy.budget is not None:
        tokens |= neighbours(Fraction(policy.budget))
    for st in policy.stages:  # a span smaller than, as large as, or larger than a placeholder (or a summary)
        if st.effect in SIZED:
            tokens |= neighbours(Fraction(st.placeholder_tokens))
    return tuple({v for v in values if v >= 1} for values in (tokens, repeats, targets))


def domains_for(policy: Policy, tokens: Optional[Iterable[int]] = None,
                repeats: Optional[Iterable[int]] = None) -> Domains:
    """The explorer's domains: the defaults plus what the policy's constants ask for (spec/SPEC.md §7c), unless
    `tokens` or `repeats` is given, which then replaces that domain."""
    wanted_tokens, wanted_repeats, targets = constant_domains(policy)
    derived = tuple(name for name, given in (("tokens", tokens), ("repetitions", repeats)) if given is None)
    tokens = set(DEFAULT_TOKENS) | wanted_tokens if tokens is None else set(tokens)
    targets = targets if repeats is None else set()
    repeats = set(DEFAULT_REPEATS) | wanted_repeats if repeats is None else set(repeats)
    return Domains(tuple(sorted(tokens)), kind_representatives(policy), tuple(sorted(repeats)), derived,
                   tuple(sorted(targets)), role_representatives(policy), name_representatives(policy),
                   policy.deployment.evidence == "on", trigger_choices(policy) if read_triggers(policy) else ())


def name_representatives(policy: Policy) -> tuple:
    """Per tool/tag attribute the policy reads: the names it mentions and one unmentioned name standing for all the
    others (spec/SPEC.md 1c: the policy cannot tell them apart), unnamed ("") first when it is among them."""
    return tuple((attr, tuple(sorted((*names, unmentioned_name(names)), key=lambda n: (n != "", n))))
                 for attr, names in mentioned_names(policy))


def action_choices(policy: Policy, state: State, spans: int, domains: Domains) -> list:
    """The enabled actions within the domains, audits first (waiting reads best as an audit, as in the symbolic
    engine's canonical traces)."""
    repeats = set(domains.repeats) | {t - state.step for t in domains.clock_targets if t > state.step}
    names = dict(domains.names)
    actions = [a for a in enabled_actions(policy, state, spans, domains.tokens, tuple(sorted(repeats)), domains.roles,
                                          names.get("tool", ("",)), names.get("tag", ("",)))
               if not (isinstance(a, Append) and a.kind not in domains.kinds)]
    return sorted(actions, key=lambda a: not isinstance(a, Audit))


def resident_megabytes() -> float:
    """This process's resident memory in MB (where there is no /proc: its peak so far)."""
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (2**20 if sys.platform == "darwin" else 2**10)


class SearchLimits:
    """A breadth-first search's limits, looked at after each state it expands: seconds, states, the process's
    memory (every MEMORY_EVERY looks); and an interrupt, which raises Interrupted."""

    def __init__(self, time_limit: float, max_states: Optional[int] = None, memory_mb: int = 0):
        self.time_limit, self.max_states, self.memory_mb = time_limit, max_states, memory_mb
        self.started, self.looks = time.perf_counter(), 0

    def reached(self, states: int) -> Optional[dict]:
        """The limit reached, as the Clause fields that name it (time_limit, state_limit or megabytes), or None."""
        stop_if_interrupted()
        self.looks += 1
        if time.perf_counter() - self.started > self.time_limit:
            return {"time_limit": float(self.time_limit)}
        if self.max_states is not None and states > self.max_states:
            return {"state_limit": self.max_states}
        if self.memory_mb > 0 and self.looks % MEMORY_EVERY == 0 and resident_megabytes() > self.memory_mb:
            return {"megabytes": int(self.memory_mb)}
        return None


def explore(policy: Policy, depth: int, spans: int, conditions: Iterable[str] = CONDITIONS,
            domains: Domains = None, time_limit: float = 60.0, max_states: Optional[int] = None,
            memory_mb: int = 0, watch=None) -> tuple:
    """Per condition: `violated` with a shortest trace (within the domains), or `unknown`; never `holds`.

    Shortest in actions: a repeated read or audit is one action (depth counts actions, as in the symbolic search).
    The search stops at `time_limit` seconds, once the process holds more than `memory_mb` MB (0: no limit) or,
    deterministically, once it has explored `max_states` states. `watch` (peak.PeakWatch) sees every new state and
    each level completed (watch.see(state), watch.level_done(level, parent)); with it the search goes on to `depth`
    after every condition is violated.
    """
    domains = domains or domains_for(policy)
    pending = list(applicable(policy, conditions))
    results, started = {}, time.perf_counter()
    limits = SearchLimits(time_limit, max_states, memory_mb)
    parent = {State(): None}
    frontier, explored, stopped = [State()], 1, None
    for level in range(1, depth + 1):
        following = []
        for state in frontier:
            for action in action_choices(policy, state, spans, domains):
                transition = step(policy, state, action, spans)
                found_here = violations(policy, transition) if pending else frozenset()
                for c in [c for c in pending if c in found_here]:
                    actions = _trace_to(parent, state, action)
                    confirm(policy, actions, c, spans)
                    trace = Trace(c, actions, spans)
                    seconds = time.perf_counter() - started
                    run = EngineRun(Method.EXPLICIT, Outcome.COUNTEREXAMPLE, level, 0, explored + len(following), seconds)
                    found = Clause(Method.EXPLICIT, Found.VIOLATED, level, spans, len(actions), trace.steps,
                                   domains=domains)
                    results[c] = Result(c, Verdict.VIOLATED, level, Reason((found,)), engine=Method.EXPLICIT,
                                        trace=trace, seconds=seconds, stats=Stats((run,)))
                    pending.remove(c)
                if transition.after not in parent:
                    parent[transition.after] = (state, action)
                    following.append(transition.after)
                    if watch is not None:
                        watch.see(transition.after)
            limit = limits.reached(explored + len(following))
            if limit is not None:
                stopped = level
                break
        explored += len(following)
        frontier = following
        if stopped is not None:
            break
        if watch is not None:
            watch.level_done(level, parent)
        elif not pending:
            break
    for c in pending:
        results[c] = _undecided(c, depth, spans, domains, explored, (stopped, limit) if stopped is not None else None, started)
    return tuple(results[c] for c in CONDITIONS if c in results)


def _trace_to(parent: dict, state: State, action) -> tuple:
    """The actions from the empty window to state (parent: each state's predecessor and action), then action."""
    actions = [action]
    while parent[state] is not None:
        state, taken = parent[state]
        actions.append(taken)
    return tuple(reversed(actions))


def _undecided(c: str, depth: int, spans: int, domains: Domains, explored: int, stop, started: float) -> Result:
    """`unknown` for a condition the search did not violate: every run up to `depth` explored, or `stop` = (the
    level it stopped in, the limit that stopped it)."""
    if stop is not None:
        why = Clause(Method.EXPLICIT, Found.LIMIT, at=stop[0], states=explored, **stop[1])
        reached = stop[0] - 1
    else:
        why = Clause(Method.EXPLICIT, Found.BOUND, depth, spans, states=explored, domains=domains)
        reached = depth
    seconds = time.perf_counter() - started
    run = EngineRun(Method.EXPLICIT, Outcome.BOUND if stop is None else Outcome.LIMIT, reached, 0, explored, seconds)
    return Result(c, Verdict.UNKNOWN, reached, Reason((why,)), engine=Method.EXPLICIT, seconds=seconds,
                  stats=Stats((run,)))
