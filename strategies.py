"""Hypothesis strategies for well-typed policy expressions, parsed policies, policy files and runtime traces."""

from __future__ import annotations

import json
from fractions import Fraction
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Optional, Union

from hypothesis import strategies as st

from prunecheck.checker.language.document import policy_document
from prunecheck.checker.language.expr_parser import parse_expr
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.language.printer import policy_python, policy_yaml
from prunecheck.spec.policy import (
    AGGREGATES,
    WHOLE_OPS,
    BOOL,
    BOOL_OPS,
    COMPARE_OPS,
    DEPLOYMENT_CHOICES,
    ENUM_VALUES,
    KIND,
    NAME_ATTRS,
    NAMESPACE,
    NUM,
    ORDERS,
    PAIRS,
    ROLE,
    ROLES,
    SPAN_ATTRS,
    SUMMARY_AT,
    SUMMARY_ROLES,
    WINDOW_ATTRS,
    Attr,
    Binary,
    BoolLit,
    Call,
    Cond,
    Deployment,
    EnumLit,
    InSet,
    Num,
    Policy,
    Unary,
)
from prunecheck.spec.runtime import (
    CONTENT_KINDS, REPEATABLE, Append, Compact, State, answers_call, enabled_actions, step,
)
from prunecheck.spec.actions import ACTION_TYPES

FORMS = ("yaml", "python", "json")
TYPES = (BOOL, NUM, KIND, NAMESPACE, ROLE)

_NUM_ATTRS = tuple(n for n, (t, _) in {**SPAN_ATTRS, **WINDOW_ATTRS}.items() if t == NUM)
_BOOL_ATTRS = tuple(n for n, (t, _) in SPAN_ATTRS.items() if t == BOOL)
_ENUM_ATTR = {KIND: "kind", NAMESPACE: "namespace", ROLE: "role"}
# Attributes whose interval is [0, oo): `1 + x` is a provably nonzero divisor.
_SHIFTABLE = ("idle", "age", "reads", "frequency", "step", "window_tokens", "position", "from_end", "window_spans")
# Attributes whose interval already excludes zero.
_NONZERO = ("recency", "tokens")
# What the Python form's host passes as fractions.Fraction (the README's host contract); the rest are ints.
_FRACTION_ATTRS = ("recency", "frequency")
# What a numeric operand of the Python form may be: a float too (only compared), int or Fraction, a Fraction.
ANY, EXACT, FRACTION = "any", "exact", "fraction"


@dataclass(frozen=True)
class _Mode:
    budget: bool  # `budget` may be referenced
    python: bool = False  # keep the meaning CPython gives the Python form (see expressions)


def _check_depth(max_depth) -> int:
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
        raise ValueError(f"max_depth must be an integer >= 1, got {max_depth!r}")
    return max_depth


def _decimal(numerator: int, places: int) -> Num:
    return Num(Fraction(numerator, 10**places))


# Issue 16's settings (the second seed's evidence, the refusal, merge, reconstruction, tombstones). Each makes the
# models larger, so deployments() draws them only when asked; tests of those settings ask.
EXTENDED_CHOICES = {"undo": ("merge",), "evicted": ("tombstone",), "evidence": ("on",),
                    "justification": ("downgrade", "defer"), "refusal": ("atomic", "sequential"),
                    "missing_record": ("reconstruct",)}
CORE_CHOICES = {key: tuple(v for v in values if v not in EXTENDED_CHOICES.get(key, ()))
                for key, values in DEPLOYMENT_CHOICES.items()}


def deployments(extended: bool = False) -> st.SearchStrategy:
    """Deployments: each key drawn from CORE_CHOICES (from DEPLOYMENT_CHOICES when extended), record_tool from
    NAME_POOL."""
    choices = DEPLOYMENT_CHOICES if extended else CORE_CHOICES
    return st.builds(Deployment, **{key: st.sampled_from(values) for key, values in choices.items()},
                     record_tool=st.sampled_from(NAME_POOL))


def numbers(positive: bool = False) -> st.SearchStrategy:
    """Num literals as the parsers produce them: non-negative finite decimals (0, 7, 0.5, 12.25); > 0 if positive."""
    return st.builds(_decimal, st.integers(1 if positive else 0, 100), st.sampled_from((0, 1, 2)))


def _num_attrs(with_budget: bool) -> st.SearchStrategy:
    names = _NUM_ATTRS if with_budget else tuple(n for n in _NUM_ATTRS if n != "budget")
    return st.sampled_from(names).map(Attr)


@lru_cache(maxsize=None)
def _divisors(depth: int, with_budget: bool) -> st.SearchStrategy:
    """Numeric expressions of depth <= depth whose interval excludes zero."""
    leaves = [numbers(positive=True), st.sampled_from(_NONZERO + (("budget",) if with_budget else ())).map(Attr)]
    if depth >= 2:
        shifted = st.sampled_from(_SHIFTABLE).map(Attr)
        leaves.append(st.builds(lambda a, c: Binary("+", c, a), shifted, numbers(positive=True)))
        leaves.append(st.builds(lambda a, c: Binary("+", a, c), shifted, numbers(positive=True)))
    return st.one_of(leaves)


def _integers(positive: bool = False) -> st.SearchStrategy:
    return st.integers(1 if positive else 0, 100).map(lambda n: Num(Fraction(n)))


def _doubles() -> st.SearchStrategy:
    """Nums as the Python form reads float literals: 0.5 and 12.25 exactly, 0.1 as its double 3602879701896397/2**55."""
    return st.one_of(
        st.builds(lambda n, k: Num(Fraction(n, 2**k)), st.integers(0, 100), st.sampled_from((0, 1, 2, 3))),
        st.builds(lambda n, k: Num(Fraction(n / 10**k)), st.integers(0, 100), st.sampled_from((1, 2))),
    )


@lru_cache(maxsize=None)
def _python_divisors(depth: int, with_budget: bool, fraction: bool) -> st.SearchStrategy:
    """Divisors whose interval excludes zero, in integers and Fractions only; Fraction-valued when fraction."""
    positive = _integers(positive=True)
    if fraction:
        leaves, shifted = [st.just(Attr("recency"))], st.just(Attr("frequency"))
    else:
        leaves = [positive, st.sampled_from(_NONZERO + (("budget",) if with_budget else ())).map(Attr)]
        shifted = st.sampled_from(_SHIFTABLE).map(Attr)
    if depth >= 2:
        leaves.append(st.builds(lambda a, c: Binary("+", c, a), shifted, positive))
        leaves.append(st.builds(lambda a, c: Binary("+", a, c), shifted, positive))
    return st.one_of(leaves)


@lru_cache(maxsize=None)
def _literals(type_: str, depth: int, python: bool = False) -> st.SearchStrategy:
    """Literals allowed in an `in` list for an argument of type_, of depth <= depth."""
    if type_ == NUM:
        base = _doubles() if python else numbers()
        if depth >= 2:
            return st.one_of(base, base.map(lambda n: Unary("-", n)))
        return base
    if type_ == BOOL:
        return st.booleans().map(BoolLit)
    return st.sampled_from(ENUM_VALUES[type_]).map(EnumLit)


_NUM_SHAPES = ("leaf", "arith", "divide", "negate", "abs", "minmax", "cond", "whole", "aggregate")
# Conditions on a counted span's own attributes, for the aggregates (spec/SPEC.md §1e).
_OWN_CONDITIONS = ("true", "role == 'user'", "role == 'tool_result'", "kind == 'record'", "not pinned", "tokens >= 2",
                   "masked or edited", "tool == 'browse'")
_WHOLE_LEAVES = tuple(n for n in _NUM_ATTRS if n not in _FRACTION_ATTRS)
_BOOL_SHAPES = ("leaf", "compare", "bool_eq", "enum_compare", "in", "not", "connective", "cond")
# Tool names and tags the generated policies, deployments and traces use (spec/SPEC.md 1c: any name is allowed).
NAME_POOL = ("", "browse", "edit", "agents_md")
_ENUM_SHAPES = ("attr", "cond")


def _shape(draw, shapes, depth: int) -> str:
    """A node shape (always shapes[0], the leaf, at depth 1); sampling shrinks towards the leaf."""
    return shapes[0] if depth <= 1 else draw(st.sampled_from(shapes))


def _draw_num(draw, depth: int, m: "_Mode"):
    if m.python:
        return _draw_python_num(draw, depth, m, ANY)
    shape = _shape(draw, _NUM_SHAPES, depth)
    d = depth - 1
    if shape == "leaf":
        return draw(st.one_of(numbers(), _num_attrs(m.budget)))
    if shape == "arith":
        op = draw(st.sampled_from(("+", "-", "*")))
        return Binary(op, _draw_num(draw, d, m), _draw_num(draw, d, m))
    if shape == "divide":
        return Binary("/", _draw_num(draw, d, m), draw(_divisors(d, m.budget)))
    if shape == "negate":
        return Unary("-", _draw_num(draw, d, m))
    if shape == "abs":
        return Call("abs", (_draw_num(draw, d, m),))
    if shape == "minmax":
        fn = draw(st.sampled_from(("min", "max")))
        return Call(fn, tuple(_draw_num(draw, d, m) for _ in range(draw(st.integers(2, 3)))))
    if shape == "whole":  # a whole left side, a whole literal >= 1 on the right (spec/SPEC.md §1d)
        names = _WHOLE_LEAVES if m.budget else tuple(n for n in _WHOLE_LEAVES if n != "budget")
        lefts = [st.sampled_from(names).map(Attr)]
        if d >= 3:  # an aggregate's condition is at most 2 deep
            lefts.append(st.builds(_aggregate, st.sampled_from(tuple(AGGREGATES)), st.sampled_from(_OWN_CONDITIONS)))
        return Binary(draw(st.sampled_from(WHOLE_OPS)), draw(st.one_of(lefts)), Num(Fraction(draw(st.integers(1, 4)))))
    if shape == "aggregate":  # its condition is at most 2 deep: `true` alone where only 1 is left
        condition = draw(st.sampled_from(_OWN_CONDITIONS)) if depth >= 3 else "true"
        return _aggregate(draw(st.sampled_from(tuple(AGGREGATES))), condition)
    return Cond(_draw_bool(draw, d, m), _draw_num(draw, d, m), _draw_num(draw, d, m))


def _aggregate(fn: str, condition: str) -> Call:
    """An aggregate over one of the fixed own-attribute conditions, parsed as the loader parses it."""
    return Call(fn, (_own_condition(condition),))


@lru_cache(maxsize=None)
def _own_condition(text: str):
    """A fixed condition (an aggregate's, or a trigger's), parsed as the loader parses it."""
    return parse_expr(text)


def _draw_python_num(draw, depth: int, m: "_Mode", want: str):
    """A numeric expression that CPython computes exactly under the host contract: arithmetic on ints and
    Fractions only, `/` with a Fraction operand, a non-integer literal (a float) only where want is ANY."""
    shape = _shape(draw, _NUM_SHAPES, depth)
    d = depth - 1
    if shape == "leaf":
        if want == FRACTION:
            return Attr(draw(st.sampled_from(_FRACTION_ATTRS)))
        return draw(st.one_of(_doubles() if want == ANY else _integers(), _num_attrs(m.budget)))
    if shape == "arith":
        op = draw(st.sampled_from(("+", "-", "*")))
        wants = draw(st.permutations((FRACTION, EXACT))) if want == FRACTION else (EXACT, EXACT)
        return Binary(op, *(_draw_python_num(draw, d, m, w) for w in wants))
    if shape == "divide":
        by_fraction = draw(st.booleans())
        left = _draw_python_num(draw, d, m, EXACT if by_fraction else FRACTION)
        return Binary("/", left, draw(_python_divisors(d, m.budget, by_fraction)))
    if shape in ("negate", "abs"):
        arg = _draw_python_num(draw, d, m, want)
        return Unary("-", arg) if shape == "negate" else Call("abs", (arg,))
    if shape == "minmax":
        fn = draw(st.sampled_from(("min", "max")))
        return Call(fn, tuple(_draw_python_num(draw, d, m, want) for _ in range(draw(st.integers(2, 3)))))
    return Cond(_draw_bool(draw, d, m), _draw_python_num(draw, d, m, want), _draw_python_num(draw, d, m, want))


def _draw_enum(draw, type_: str, depth: int, m: "_Mode"):
    """An enum-valued operand, never a bare literal: the attribute, or a conditional with such a branch."""
    if _shape(draw, _ENUM_SHAPES, depth) == "attr":
        return Attr(_ENUM_ATTR[type_])
    d = depth - 1
    test = _draw_bool(draw, d, m)
    operand = _draw_enum(draw, type_, d, m)
    other = draw(_literals(type_, 1)) if draw(st.booleans()) else _draw_enum(draw, type_, d, m)
    return Cond(test, other, operand) if draw(st.booleans()) else Cond(test, operand, other)


def _draw_operand(draw, type_: str, depth: int, m: "_Mode"):
    if type_ == NUM:
        return _draw_num(draw, depth, m)
    if type_ == BOOL:
        return _draw_bool(draw, depth, m)
    return _draw_enum(draw, type_, depth, m)


def _draw_bool(draw, depth: int, m: "_Mode"):
    shape = _shape(draw, _BOOL_SHAPES, depth)
    d = depth - 1
    if shape == "leaf":
        return draw(st.one_of(st.booleans().map(BoolLit), st.sampled_from(_BOOL_ATTRS).map(Attr)))
    if shape == "compare":
        op = draw(st.sampled_from(COMPARE_OPS))
        return Binary(op, _draw_num(draw, d, m), _draw_num(draw, d, m))
    if shape == "bool_eq":
        op = draw(st.sampled_from(("==", "!=")))
        return Binary(op, _draw_bool(draw, d, m), _draw_bool(draw, d, m))
    if shape == "enum_compare":
        type_ = draw(st.sampled_from((KIND, NAMESPACE, ROLE, NAME_ATTRS)))
        if type_ == NAME_ATTRS:  # drawn last, so that shrinking prefers the fixed enumerations
            return _draw_names(draw)
        op = draw(st.sampled_from(("==", "!=")))
        left = _draw_enum(draw, type_, d, m)
        form = draw(st.sampled_from(("name", "name_first", "operands")))
        if form == "operands":
            return Binary(op, left, _draw_enum(draw, type_, d, m))
        name = draw(_literals(type_, 1))
        return Binary(op, name, left) if form == "name_first" else Binary(op, left, name)
    if shape == "in":
        negated = depth >= 3 and draw(st.booleans())  # `x not in [...]`, one level more
        d = d - 1 if negated else d
        type_ = draw(st.sampled_from((KIND, NAMESPACE, ROLE, NUM, BOOL)))
        arg = _draw_operand(draw, type_, d, m)
        inset = InSet(arg, tuple(draw(st.lists(_literals(type_, d, m.python), min_size=1, max_size=3))))
        return Unary("not", inset) if negated else inset
    if shape == "not":
        return Unary("not", _draw_bool(draw, d, m))
    if shape == "connective":
        op = draw(st.sampled_from(BOOL_OPS))
        return Binary(op, _draw_bool(draw, d, m), _draw_bool(draw, d, m))
    return Cond(_draw_bool(draw, d, m), _draw_bool(draw, d, m), _draw_bool(draw, d, m))


def _draw_names(draw):
    """A tool name or tag compared with names: `tool == 'browse'`, `'edit' != tag`, `tool in ['', 'edit']`."""
    attr, form = Attr(draw(st.sampled_from(NAME_ATTRS))), draw(st.sampled_from(("==", "!=", "first", "in")))
    if form == "in":
        return InSet(attr, tuple(EnumLit(n) for n in draw(st.lists(st.sampled_from(NAME_POOL), min_size=1, max_size=3))))
    name = EnumLit(draw(st.sampled_from(NAME_POOL)))
    return Binary(draw(st.sampled_from(("==", "!="))), name, attr) if form == "first" else Binary(form, attr, name)


@st.composite
def _expressions(draw, type_: str, depth: int, m: "_Mode"):
    return _draw_operand(draw, type_, depth, m)


def expressions(
    type: str = BOOL, max_depth: int = 3, *, with_budget: bool = True, python: bool = False
) -> st.SearchStrategy:
    """Well-typed expressions of `type` ("bool", "num", "kind" or "namespace") with AST depth <= max_depth.

    They range over every attribute and operator; a division's divisor is provably nonzero (a positive
    constant, recency, tokens, budget, or `1 + idle`-style sums), Nums are non-negative decimals as the
    parsers produce them, and `budget` appears only when with_budget is true.

    With python, every expression means in CPython what it means to prunecheck (the Python form accepts it):
    arithmetic is on ints and the Fractions recency and frequency only, every `/` has a Fraction operand, and
    non-integer Nums are doubles (0.5, 0.1 as 3602879701896397/2**55) that are only compared, never computed with.
    """
    max_depth = _check_depth(max_depth)
    if type in TYPES:
        return _expressions(type, max_depth, _Mode(bool(with_budget), bool(python)))
    raise ValueError(f"type must be one of {', '.join(TYPES)}, got {type!r}")


_WINDOW_NUM = tuple(n for n, (t, _) in WINDOW_ATTRS.items() if t == NUM)


def window_conditions(with_budget: bool = True) -> st.SearchStrategy:
    """Boolean expressions over window attributes only (what a stage's `when` and `until` may read): comparisons
    of window_tokens, window_spans, step (and budget) with whole numbers, negated or joined by and/or."""
    names = tuple(n for n in _WINDOW_NUM if with_budget or n != "budget")
    atom = st.builds(lambda a, op, c: Binary(op, Attr(a), c), st.sampled_from(names), st.sampled_from(COMPARE_OPS),
                     _integers())
    joined = st.builds(lambda op, left, right: Binary(op, left, right), st.sampled_from(BOOL_OPS), atom, atom)
    return st.one_of(atom, joined, atom.map(lambda x: Unary("not", x)))


@st.composite
def _stage(draw, max_depth: int, with_budget: bool, ranked: bool, python: bool) -> dict:
    """The compaction stage's keys, each drawn or left at its default (spec/SPEC.md 4b)."""
    out = {}
    if draw(st.booleans()):
        out["keep"] = draw(expressions(BOOL, max_depth, with_budget=with_budget, python=python))
    for key in ("when", "until"):
        if draw(st.booleans()):
            out[key] = draw(window_conditions(with_budget))
    if "when" in out and draw(st.booleans()):  # fired by the host, or on a window aggregate, on about half (§4g, §1e)
        options = ("event == 'overflow'", "event != ''", "reported_tokens > 3") + (
            () if python else ("count(role == 'user') >= 2", "tokens_of(role == 'tool_result') > 3"))  # YAML only
        fired = draw(st.sampled_from(options))
        out["when"] = Binary(draw(st.sampled_from(BOOL_OPS)), out["when"], _own_condition(fired))
    if not ranked:
        out["order"] = draw(st.sampled_from(ORDERS))
    if draw(st.integers(0, 3)) == 0:  # a role boundary, on about a quarter of the stages
        out["start_on"] = draw(st.sampled_from(ROLES))
    return out


def policy_names() -> st.SearchStrategy:
    """Short policy names: a lowercase letter, then letters, digits and dashes."""
    return st.from_regex(r"[a-z][a-z0-9-]{0,11}", fullmatch=True)


@st.composite
def _policies(draw, max_depth: int, deployment, python: bool, stage: bool = True) -> Policy:
    budget = draw(st.one_of(st.none(), st.integers(2, 12)))
    with_budget = budget is not None
    evict = draw(expressions(BOOL, max_depth, with_budget=with_budget, python=python))
    rank = draw(st.one_of(st.none(), expressions(NUM, max_depth, with_budget=with_budget, python=python)))
    if deployment is None:
        chosen = draw(deployments())
    elif isinstance(deployment, Deployment):
        chosen = deployment
    else:
        chosen = draw(deployment)
    name = draw(policy_names())
    keys = draw(_stage(max_depth, with_budget, rank is not None, python)) if stage and draw(st.booleans()) else {}
    effect, placeholder = draw(st.one_of(st.just(("evict", 1)), st.tuples(st.sampled_from(("mask", "cut", "summarise")),
                                                                           st.integers(1, 3))))
    summary_role = draw(st.sampled_from(SUMMARY_ROLES)) if effect == "summarise" else "user"
    summary_at = draw(st.sampled_from(SUMMARY_AT)) if effect == "summarise" else "replaced"
    pairs = draw(st.sampled_from(PAIRS))
    text = policy_yaml(Policy(name=name, evict=evict, rank=rank, budget=budget, deployment=chosen, effect=effect,
                              placeholder_tokens=placeholder, pairs=pairs, summary_role=summary_role,
                              summary_at=summary_at, **keys))
    return parse_policy_text(text, f"{name}.yaml")


def policies(
    max_depth: int = 3, *, deployment: Union[None, Deployment, st.SearchStrategy] = None, python: bool = False,
    stage: bool = True,
) -> st.SearchStrategy:
    """Parsed, type-checked Policies: evict (depth <= max_depth), optional rank, optional budget in 2..12
    (`budget` is referenced only when set), an effect (evict, or mask to 1..3 placeholder tokens), `pairs` apart or
    together, and a deployment (drawn, fixed, or from the given strategy). With stage (the default), about half of
    them also set some of the compaction stage's keep, when, until, order and start_on (window_conditions);
    stage=False draws the policies of before the stage.

    Each is printed to YAML and read back with parse_policy_text, so the real parser accepts every one; with
    python, the expressions are those of expressions(python=True), which the Python form accepts too.
    """
    _check_depth(max_depth)
    if deployment is not None and not isinstance(deployment, (Deployment, st.SearchStrategy)):
        raise TypeError("deployment must be None, a Deployment or a strategy of Deployments")
    return _policies(max_depth, deployment, bool(python), bool(stage))


def policy_json(policy: Policy) -> str:
    """A complete JSON policy file for policy: its canonical document (the expressions as mini-language strings)."""
    return json.dumps(policy_document(policy), indent=2) + "\n"


_PRINTERS = {"yaml": policy_yaml, "python": policy_python, "json": policy_json}
EXTENSION = {"yaml": ".yaml", "python": ".py", "json": ".json"}


def policy_texts(form: str = "yaml", max_depth: int = 3, stage: bool = True) -> st.SearchStrategy:
    """Complete policy files in `form` ("yaml", "python" or "json") for policies(max_depth, stage=stage), with
    python=True for the Python form; parse them with a filename ending in EXTENSION[form]."""
    if form not in _PRINTERS:
        raise ValueError(f"form must be one of {', '.join(FORMS)}, got {form!r}")
    return policies(max_depth, python=form == "python", stage=stage).map(_PRINTERS[form])


@st.composite
def _traces(draw, policy: Policy, max_steps: int, max_spans: Optional[int], max_tokens: int, max_times: int) -> list:
    state = State()
    actions = []
    for _ in range(draw(st.integers(0, max_steps))):
        by_name = {}
        for action in enabled_actions(policy, state, max_spans):
            by_name.setdefault(action.name, []).append(action)
        name = draw(st.sampled_from([n for n in ACTION_TYPES if n in by_name]))  # compact, audit: never empty
        if name == "append":
            roles = [r for r in ROLES if r != "tool_result" or answers_call(state)]  # a result answers a call
            role = draw(st.sampled_from(roles))
            tool = state.spans[-1].tool if role == "tool_result" else draw(st.sampled_from(NAME_POOL))
            action = Append(draw(st.sampled_from(CONTENT_KINDS)), draw(st.integers(1, max_tokens)), role,
                            tool=tool, tag=draw(st.sampled_from(NAME_POOL)))
        elif name == "compact":
            action = Compact(draw(st.none() | st.integers(1, state.window_tokens() + 1)))
        else:
            action = draw(st.sampled_from(by_name[name]))
            if isinstance(action, REPEATABLE) and max_times > 1:
                action = replace(action, times=draw(st.integers(1, max_times)))
        state = step(policy, state, action, max_spans).after
        actions.append(action)
    return actions


def traces(policy: Policy, max_steps: int = 10, max_spans: Optional[int] = 8, *, max_tokens: int = 4,
           max_times: int = 3) -> st.SearchStrategy:
    """Lists of at most max_steps runtime actions, each enabled (see spec.runtime.enabled_actions) in the state
    the previous ones reach from State() under policy with max_spans; each step draws the action name first,
    then its arguments (appends carry 1..max_tokens tokens, any role the state enables, and a tool name and tag from
    NAME_POOL, a result its call's tool; a compaction has no host budget or one of 1 up to the window's tokens + 1;
    a read or audit is repeated 1..max_times times, one action standing for that many steps:
    spec.runtime.real_steps counts them; max_times=1 draws single steps only)."""
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 0:
        raise ValueError(f"max_steps must be an integer >= 0, got {max_steps!r}")
    if max_spans is not None and (isinstance(max_spans, bool) or not isinstance(max_spans, int) or max_spans < 0):
        raise ValueError(f"max_spans must be None or an integer >= 0, got {max_spans!r}")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be an integer >= 1, got {max_tokens!r}")
    if isinstance(max_times, bool) or not isinstance(max_times, int) or max_times < 1:
        raise ValueError(f"max_times must be an integer >= 1, got {max_times!r}")
    return _traces(policy, max_steps, max_spans, max_tokens, max_times)


__all__ = [
    "FORMS",
    "TYPES",
    "EXTENSION",
    "deployments",
    "numbers",
    "expressions",
    "policy_names",
    "window_conditions",
    "policies",
    "policy_json",
    "policy_texts",
    "traces",
]
