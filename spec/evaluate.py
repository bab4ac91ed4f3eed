"""Exact evaluation of a policy expression over one span's attributes (Fractions, never floats)."""

from __future__ import annotations

import operator
from fractions import Fraction
from typing import Mapping, Union

from prunecheck.spec.policy import AGGREGATES, Expr
from prunecheck.spec.walker import Walker

Value = Union[Fraction, bool, str]


def _divide(left, right):
    return Fraction(left) / Fraction(right)


_BINARY = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": _divide,
    "//": lambda left, right: Fraction(Fraction(left) // Fraction(right)),
    "%": lambda left, right: Fraction(left) % Fraction(right),
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}


def evaluate(expr: Expr, env: Mapping[str, Value]) -> Value:
    """The value of a type-checked expression, given every attribute's value in env."""
    return _EVALUATOR.visit(expr, env)


class _Evaluator(Walker):
    """The values of expressions; stateless, so one instance serves every call."""

    def num(self, expr, env):
        return expr.value

    def bool_lit(self, expr, env):
        return expr.value

    def enum_lit(self, expr, env):
        return expr.value

    def attr(self, expr, env):
        return env[expr.name]

    def unary(self, expr, env):
        value = self.visit(expr.arg, env)
        return (not value) if expr.op == "not" else -value

    def binary(self, expr, env):
        op = expr.op
        if op == "and":
            return bool(self.visit(expr.left, env)) and bool(self.visit(expr.right, env))
        if op == "or":
            return bool(self.visit(expr.left, env)) or bool(self.visit(expr.right, env))
        left, right = self.visit(expr.left, env), self.visit(expr.right, env)
        if op not in _BINARY:
            raise ValueError(f"unknown operator {op}")
        return _BINARY[op](left, right)

    def in_set(self, expr, env):
        value = self.visit(expr.arg, env)
        return any(value == self.visit(v, env) for v in expr.values)

    def call(self, expr, env):
        if expr.fn in AGGREGATES:
            return env[expr]  # a sum over other spans, taken by whoever built env (spec.state.aggregates)
        args = [self.visit(a, env) for a in expr.args]
        if expr.fn == "min":
            return min(args)
        if expr.fn == "max":
            return max(args)
        return abs(args[0])

    def cond(self, expr, env):
        return self.visit(expr.then, env) if self.visit(expr.test, env) else self.visit(expr.orelse, env)

    def unknown(self, expr, env):
        raise ValueError(f"not an expression: {expr!r}")


_EVALUATOR = _Evaluator()
