"""The attribute space of `prunecheck diff`'s equivalence proof: every attribute a free term within its interval."""

from __future__ import annotations

from fractions import Fraction
from typing import Optional

import z3

from prunecheck.spec.policy import NAMESPACE, POSITION_ATTRS, name_of
from prunecheck.symbolic.span_terms import NameValue
from prunecheck.symbolic.terms import ENUM_CODES, ENUM_NAMES, Frac, KindSort, RoleSort


def attribute_space(budget: Optional[int], positions: tuple = (), names: tuple = ()):
    """Every attribute as a term over free integer fields constrained only by the vocabulary's intervals: a
    superset of the valuations of addressable spans in reachable states (their namespace is always the window).
    `positions`: the positional attributes too (only for policies that read one: others' queries stay as they were);
    `names`: the tool/tag tables, each attribute a code 0..N (spec/SPEC.md 1c)."""
    ints = {name: z3.Int(f"diff_{name}") for name in ("tokens", "age", "idle", "reads", "window_tokens", "step")
            + positions}
    env = {name: Frac(term) for name, term in ints.items()}
    env.update({
        "recency": Frac(z3.IntVal(1), 1 + ints["idle"]), "frequency": Frac(ints["reads"], 1 + ints["age"]),
        "pinned": z3.Bool("diff_pinned"), "edited": z3.Bool("diff_edited"), "masked": z3.Bool("diff_masked"),
        "kind": z3.Const("diff_kind", KindSort),
        "namespace": ENUM_CODES[NAMESPACE]["window"], "role": z3.Const("diff_role", RoleSort),
    })
    if budget is not None:
        env["budget"] = Frac(z3.IntVal(budget))
    codes = {attr: z3.Int(f"diff_{attr}") for attr, _table in names}
    env.update({attr: NameValue(codes[attr], table) for attr, table in names})
    constraints = [ints["tokens"] >= 1] + [ints[n] >= 0 for n in ("age", "idle", "reads", "window_tokens", "step")]
    constraints += [z3.And(codes[attr] >= 0, codes[attr] <= len(table)) for attr, table in names]
    return ints, env, constraints + (position_space(ints) if positions else [])


def position_space(p: dict) -> list:
    """What the positions of a span of the window satisfy in every reachable state (spec/SPEC.md §1b)."""
    return [p[n] >= 0 for n in POSITION_ATTRS] + [
        p["position"] + p["from_end"] + 1 == p["window_spans"], p["from_end_in_role"] <= p["from_end"],
        p["turn"] <= p["from_end"], p["tokens_after"] >= p["from_end"],
        p["window_tokens"] >= p["tokens_after"] + p["tokens"]]


def valuation(model: z3.ModelRef, ints: dict, env: dict, budget: Optional[int]) -> dict:
    """The runtime attribute environment that a solver model of the attribute space denotes."""
    value = {name: model.eval(term, model_completion=True).as_long() for name, term in ints.items()}
    out = {name: Fraction(value[name]) for name in ("tokens", "age", "idle", "reads") + POSITION_ATTRS
           if name in value}
    out["recency"] = Fraction(1, 1 + value["idle"])
    out["frequency"] = Fraction(value["reads"], 1 + value["age"])
    for name in ("pinned", "edited", "masked"):
        out[name] = z3.is_true(model.eval(env[name], model_completion=True))
    out["kind"] = ENUM_NAMES[str(model.eval(env["kind"], model_completion=True))]
    out["namespace"] = "window"
    out["role"] = ENUM_NAMES[str(model.eval(env["role"], model_completion=True))]
    for name, term in env.items():
        if isinstance(term, NameValue):
            out[name] = name_of(term.names, model.eval(term.term, model_completion=True).as_long())
    for name in ("window_tokens", "window_spans", "step"):
        if name in value:
            out[name] = Fraction(value[name])
    if budget is not None:
        out["budget"] = Fraction(budget)
    return out
