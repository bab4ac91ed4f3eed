"""The refusal's terms (SPEC §6e): which recovery spans the policy names, in the unrolled and in the pair model."""

from __future__ import annotations

import z3

from prunecheck.spec.policy import KIND, NAMESPACE
from prunecheck.spec.refusal import RECOVERY_KINDS, control_kinds
from prunecheck.spec.stage import selection
from prunecheck.symbolic.span_terms import attribute_env
from prunecheck.symbolic.terms import ENUM_CODES, ExprEncoder, Frac
from prunecheck.symbolic.window_terms import before

K, NS = ENUM_CODES[KIND], ENUM_CODES[NAMESPACE]


def named_in(policy, env: dict, kind, present):
    """spec.refusal.named over one span's vocabulary `env` (its kind term `kind`, its presence `present`): a present
    recovery span the selection selects as it is and not in the window with a kind the selection does not mention."""
    chosen = selection(policy)
    recovery = z3.Or([kind == K[k] for k in RECOVERY_KINDS])
    controls = [z3.Not(ExprEncoder({**env, "kind": K[k], "namespace": NS["window"]}).encode(chosen))
                for k in control_kinds(policy)]
    return z3.And([recovery, present, ExprEncoder(env).encode(chosen)] + controls)


def named_slots(model, s) -> list:
    """Per slot of the unrolled model: the policy names it in s."""
    return [z3.And(s.used[i], named_in(model.policy, env, s.kind[i], s.present(i)))
            for i, env in enumerate(model.slot_envs(s, model.policy.budget))]


def names_any(model, t):
    """Some recovery span is named in state t of the unrolled model (built once, on the generic state)."""
    return model.at(t, "R1", lambda g: z3.Or(named_slots(model, g)))


def refusal_blocks(model, s):
    """A compaction from s is blocked (spec.refusal.blocked): false under refusal: silent."""
    if model.dep.refusal == "silent":
        return z3.BoolVal(False)
    return z3.Or(model.at(s, "named", lambda g: named_slots(model, g)))


def refused_step(model, s, evicted: list, truncated: list, written: list) -> tuple:
    """spec.compaction.refused_compaction on a compaction's per-slot terms (taken by the stage, truncated, summary
    written there): unchanged under refusal: silent; when s names a recovery span, atomic takes and truncates
    nothing, sequential keeps the taken slots before every named one in window order and truncates nothing."""
    if model.dep.refusal == "silent":
        return evicted, truncated, written
    n, names = model.n, model.at(s, "named", lambda g: named_slots(model, g))
    blocked = z3.Or(names)
    if model.dep.refusal == "atomic":
        kept = [z3.BoolVal(False)] * n
    else:
        kept = [z3.And([evicted[i]] + [z3.Implies(names[j], _strictly_before(s, i, j)) for j in range(n)])
                for i in range(n)]
    return ([z3.If(blocked, kept[i], evicted[i]) for i in range(n)],
            [z3.And(z3.Not(blocked), truncated[i]) for i in range(n)],
            [z3.And(written[i], z3.Or(z3.Not(blocked), z3.Or(kept))) for i in range(n)])


def _strictly_before(s, i: int, j: int):
    """Slot i stands before slot j in window order (false for i == j)."""
    if i == j:
        return z3.BoolVal(False)
    order = before(s, i, j)
    return z3.BoolVal(order) if isinstance(order, bool) else order


def changed(s, t):
    """Some slot field differs between s and t (the clock aside)."""
    return z3.Or([a != b for name in s.fields for a, b in zip(s.fields[name], t.fields[name])])


def pair_named(pair, s, g: str):
    """Ghost g is a recovery span the policy names (exact: from its own fields). With the policy abstracted a free
    predicate names any span, so a present recovery span is enough."""
    f = s.span[g]
    if pair.free_policy:
        return z3.And(f["used"], z3.Or([f["kind"] == K[k] for k in RECOVERY_KINDS]),
                      s.present(g))
    env = attribute_env(s.clock, f, Frac(s.window_tokens), pair.policy.budget, s.window_spans, s.positions(g),
                        pair.names)
    term = z3.And(f["used"], named_in(pair.policy, env, f["kind"], s.present(g)))
    return z3.And(pair.position_facts(s) + [term]) if pair.positions else term


# The pair model: a named recovery span elsewhere, and where it stands, are unseen, so they are free choices.

def refusal_choices(dep, a, label: str):
    """The pair action `a` with the refusal's free choices (none under refusal: silent): whether a recovery span
    outside the pair (or, with the policy abstracted, any) is named (`blocked_elsewhere`), and per ghost whether it
    stands before every named span
    (`ahead_named_g`, sequential)."""
    if dep.refusal != "silent":
        a.refusal = {"elsewhere": z3.Bool(f"blocked_elsewhere@{label}")}
    if dep.refusal == "sequential":
        a.refusal.update({g: z3.Bool(f"ahead_named_{g}@{label}") for g in ("r", "q")})
    return a


def refused_pair(pair, s, a, taken: dict, out: list, step: tuple) -> tuple:
    """The stage's taken ghosts after the refusal, and the term "the compaction is blocked" (false under silent);
    `step` is (the step compacts, per ghost: the action's ghost is it).
    when blocked, nothing is truncated; atomic takes nothing and writes no summary; sequential takes a subset of the
    taken ghosts, never a named one (which ones is free: an over-approximation of the runtime's walk)."""
    if pair.dep.refusal == "silent":
        return taken, z3.BoolVal(False)
    # With the policy abstracted whether it names a ghost is unknown (pair_named over-approximates it, which is
    # sound for R1's Bad, not here): blocked is then the free choice alone, and sequential's ahead_named_g covers it.
    named = {g: z3.BoolVal(False) if pair.free_policy else pair_named(pair, s, g) for g in ("r", "q")}
    compacts, at_ghost = step
    blocked = z3.And(compacts, z3.Or(named["r"], named["q"], a.refusal["elsewhere"]))
    out.extend(z3.Implies(blocked, z3.Not(a.truncate[g])) for g in ("r", "q"))
    if pair.dep.refusal == "atomic":
        if pair.summarising:
            out.extend(z3.Implies(blocked, z3.Not(at_ghost[g])) for g in at_ghost)  # no summary written
        return {g: z3.And(z3.Not(blocked), taken[g]) for g in taken}, blocked
    return {g: z3.And(taken[g], z3.Implies(blocked, z3.And(a.refusal[g], z3.Not(named[g])))) for g in taken}, blocked


def pair_changed(s, t):
    """A ghost's field differs between s and t."""
    return z3.Or([s.span[g][name] != t.span[g][name] for g in ("r", "q") for name in s.span[g]])
