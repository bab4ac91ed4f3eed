"""Policy expressions as z3 terms: rationals become Int numerator/denominator pairs (one numeric sort), enums enumeration sorts."""

from __future__ import annotations

from typing import Mapping, Optional

import z3

from prunecheck.spec.errors import EncodingError
from prunecheck.spec.policy import (
    AGGREGATES, ATTRS, KIND, KINDS, NAME_TYPED, NAMESPACE, NAMESPACES, ROLE, ROLES, Attr, Binary, BoolLit, Call, Cond, EnumLit, Expr, InSet,
    Num, Policy, Unary,
)
from prunecheck.spec.policy import name_code
from prunecheck.spec.walker import MemoWalker

def one_stage(policy: Policy, why: str = "the symbolic models encode one stage (a list of stages is checked by the "
                                            "explicit engine)") -> Policy:
    """The policy, if its compaction has one stage: the models encode one stage only, and a policy with a list of
    stages (SPEC §4h) raises EncodingError, located at its `compaction` key, rather than be encoded as its first
    stage."""
    if policy.later:
        at = policy.origin.locations().get("compaction") if policy.origin is not None else None
        where = f"{policy.source}:{at.line}:{at.col}: " if at is not None else ""
        raise EncodingError(f"{where}policy {policy.name!r} has {len(policy.stages)} compaction stages; {why}")
    return policy


KindSort, _kind_consts = z3.EnumSort("Kind", KINDS)
NamespaceSort, _ns_consts = z3.EnumSort("Namespace", NAMESPACES)
RoleSort, _role_consts = z3.EnumSort("Role", ROLES)
ENUM_CODES = {KIND: dict(zip(KINDS, _kind_consts)), NAMESPACE: dict(zip(NAMESPACES, _ns_consts)),
              ROLE: dict(zip(ROLES, _role_consts))}
ENUM_NAMES = {str(c): name for table in ENUM_CODES.values() for name, c in table.items()}


class Frac:
    """num/den with den > 0 in every model; den None means 1. Holds z3 terms, so it defines no equality."""

    __slots__ = ("num", "den")

    def __init__(self, num, den=None):
        self.num = num
        self.den = den

    def scaled_num(self, other_den):
        return self.num if other_den is None else self.num * other_den


def _mul(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a * b


def _ite(cond, a, b):
    if a is None and b is None:
        return None
    return z3.If(cond, z3.IntVal(1) if a is None else a, z3.IntVal(1) if b is None else b)


def frac_add(x: Frac, y: Frac, sign: int = 1) -> Frac:
    right = y.scaled_num(x.den)
    return Frac(x.scaled_num(y.den) + (right if sign > 0 else -right), _mul(x.den, y.den))


def frac_mul(x: Frac, y: Frac) -> Frac:
    return Frac(x.num * y.num, _mul(x.den, y.den))


def frac_div(x: Frac, y: Frac) -> Frac:
    num, den = x.scaled_num(y.den), (y.num if x.den is None else x.den * y.num)
    if z3.is_int_value(y.num):
        if y.num.as_long() == 0:
            # Type checking rules out a zero divisor in every reachable state; a numeral 0 here comes from the
            # default fields of an unused slot (tokens 0 in the empty window), whose policy terms are never used.
            return Frac(z3.IntVal(0))
        return Frac(num, den) if y.num.as_long() > 0 else Frac(-num, -den)
    # Type checking keeps every reachable divisor away from 0 with a fixed sign; in unreachable
    # states (an induction pre-state) a 0 denominator is possible and only weakens what is proved.
    positive = y.num > 0
    return Frac(z3.If(positive, num, -num), z3.If(positive, den, -den))


def frac_compare(op: str, x: Frac, y: Frac):
    left, right = x.scaled_num(y.den), y.scaled_num(x.den)
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right,
            "==": left == right, "!=": left != right}[op]


def frac_ite(cond, x: Frac, y: Frac) -> Frac:
    return Frac(z3.If(cond, x.num, y.num), _ite(cond, x.den, y.den))


def enum_type(expr: Expr) -> Optional[str]:
    """KIND, NAMESPACE or ROLE for an enum-valued expression other than a bare literal."""
    if isinstance(expr, Attr) and ATTRS[expr.name][0] in ENUM_CODES:
        return ATTRS[expr.name][0]
    if isinstance(expr, Cond):
        return enum_type(expr.then) or enum_type(expr.orelse)
    return None


def _name_attr(expr: Expr) -> bool:
    return isinstance(expr, Attr) and expr.name in NAME_TYPED


class ExprEncoder(MemoWalker):
    """One memoized pass from a closed, type-checked expression to z3 terms, in one attribute environment."""

    def __init__(self, env: Mapping[str, object]):
        super().__init__()
        self.env = env

    def encode(self, expr: Expr, enum: Optional[str] = None):
        return self.walk(expr, enum)

    def num(self, expr: Num, enum):
        value = expr.value
        if value.denominator == 1:
            return Frac(z3.IntVal(value.numerator))
        return Frac(z3.IntVal(value.numerator), z3.IntVal(value.denominator))

    def bool_lit(self, expr: BoolLit, enum):
        return z3.BoolVal(expr.value)

    def enum_lit(self, expr: EnumLit, enum: Optional[str]):
        if enum is None or expr.value not in ENUM_CODES[enum]:
            raise EncodingError(f"enum literal {expr.value!r} has no enum type here")
        return ENUM_CODES[enum][expr.value]

    def attr(self, expr: Attr, enum):
        if expr.name not in self.env:
            raise EncodingError(f"attribute {expr.name!r} has no value in this model")
        return self.env[expr.name]

    def unary(self, expr: Unary, enum):
        arg = self.encode(expr.arg)
        return z3.Not(arg) if expr.op == "not" else Frac(-arg.num, arg.den)

    def names(self, attr: Attr, literals) -> list:
        """A tool name or tag equal to each literal, as code comparisons (spec/SPEC.md 1c; every literal compared
        with it is a mentioned name, so its code is >= 1)."""
        value = self.encode(attr)
        if not hasattr(value, "names"):
            raise EncodingError(f"attribute {attr.name!r} has no names in this model")
        return [value.term == z3.IntVal(name_code(value.names, lit.value)) for lit in literals]

    def in_set(self, expr: InSet, enum):
        if _name_attr(expr.arg):
            return z3.Or(self.names(expr.arg, expr.values))
        kind = enum_type(expr.arg)
        arg = self.encode(expr.arg, kind)
        return z3.Or([self._equal(arg, self.encode(v, kind), kind) for v in expr.values])

    def call(self, expr: Call, enum):
        if expr.fn in AGGREGATES:  # a sum over other spans, built by whoever built the environment (SPEC §1e)
            if expr not in self.env:
                raise EncodingError(f"aggregate {expr.fn} has no value in this model")
            return self.env[expr]
        args = [self.encode(a) for a in expr.args]
        if expr.fn == "abs":
            (x,) = args
            return Frac(z3.If(x.num >= 0, x.num, -x.num), x.den)
        best = args[0]
        for other in args[1:]:
            keep = frac_compare("<=" if expr.fn == "min" else ">=", best, other)
            best = frac_ite(keep, best, other)
        return best

    def cond(self, expr: Cond, enum: Optional[str]):
        test = self.encode(expr.test)
        then, orelse = self.encode(expr.then, enum), self.encode(expr.orelse, enum)
        if isinstance(then, Frac):
            return frac_ite(test, then, orelse)
        return z3.If(test, then, orelse)

    def unknown(self, expr, enum):
        raise EncodingError(f"not an expression: {type(expr).__name__}")

    def _equal(self, left, right, kind):
        if isinstance(left, Frac):
            return frac_compare("==", left, right)
        return left == right

    def binary(self, expr: Binary, enum):
        op = expr.op
        if op in ("and", "or"):
            left, right = self.encode(expr.left), self.encode(expr.right)
            return z3.And(left, right) if op == "and" else z3.Or(left, right)
        if op in ("==", "!=") and (_name_attr(expr.left) or _name_attr(expr.right)):
            attr, lit = (expr.left, expr.right) if _name_attr(expr.left) else (expr.right, expr.left)
            (same,) = self.names(attr, (lit,))
            return same if op == "==" else z3.Not(same)
        if op in ("==", "!="):
            kind = enum_type(expr.left) or enum_type(expr.right)
            left, right = self.encode(expr.left, kind), self.encode(expr.right, kind)
            same = self._equal(left, right, kind)
            return same if op == "==" else z3.Not(same)
        left, right = self.encode(expr.left), self.encode(expr.right)
        if op == "+":
            return frac_add(left, right)
        if op == "-":
            return frac_add(left, right, -1)
        if op == "*":
            return frac_mul(left, right)
        if op == "/":
            return frac_div(left, right)
        if op in ("//", "%"):  # a whole left side by a whole literal >= 1 (type checking): Int div and mod
            if left.den is not None or right.den is not None:
                raise EncodingError(f"{op} of a fraction")
            return Frac(left.num / right.num if op == "//" else left.num % right.num)
        if op in ("<", "<=", ">", ">="):
            return frac_compare(op, left, right)
        raise EncodingError(f"unknown operator {op}")


def left_tokens_term(policy: Policy, tokens):
    """spec.policy.left_tokens as a term: the placeholder's tokens (mask), or at most that many (cut)."""
    p = z3.IntVal(policy.placeholder_tokens)
    return p if policy.effect == "mask" else z3.If(tokens < p, tokens, p)


def shortens_term(policy: Policy, tokens):
    """spec.policy.shortens as a term: a mask always changes a span; a cut only one longer than its placeholder."""
    return z3.BoolVal(True) if policy.effect != "cut" else tokens > policy.placeholder_tokens


def window_env(clock, window_tokens: Frac, budget, window_spans=None) -> dict:
    """The window attributes as z3 terms; budget is an int, a z3 term (a template's placeholder) or None, and
    window_spans None in a pair model whose policy does not read it."""
    env = {"window_tokens": window_tokens, "step": Frac(clock)}
    if window_spans is not None:
        env["window_spans"] = Frac(window_spans)
    if budget is not None:
        env["budget"] = Frac(z3.IntVal(budget) if isinstance(budget, int) else budget)
    return env
