"""Exact evaluation of a policy expression over one span's attributes (Fractions, never floats)."""

from __future__ import annotations

from fractions import Fraction
from typing import Mapping, Union

from prunecheck.spec.policy import Attr, Binary, BoolLit, Call, Cond, EnumLit, Expr, InSet, Num, Unary

Value = Union[Fraction, bool, str]


def evaluate(expr: Expr, env: Mapping[str, Value]) -> Value:
    """The value of a type-checked expression, given every attribute's value in env."""
    if isinstance(expr, Num):
        return expr.value
    if isinstance(expr, BoolLit):
        return expr.value
    if isinstance(expr, EnumLit):
        return expr.value
    if isinstance(expr, Attr):
        return env[expr.name]
    if isinstance(expr, Unary):
        value = evaluate(expr.arg, env)
        return (not value) if expr.op == "not" else -value
    if isinstance(expr, Binary):
        op = expr.op
        if op == "and":
            return bool(evaluate(expr.left, env)) and bool(evaluate(expr.right, env))
        if op == "or":
            return bool(evaluate(expr.left, env)) or bool(evaluate(expr.right, env))
        left, right = evaluate(expr.left, env), evaluate(expr.right, env)
        if op == "+":
            return left + right
        if op == "-":
            return left - right
        if op == "*":
            return left * right
        if op == "/":
            return Fraction(left) / Fraction(right)
        if op == "<":
            return left < right
        if op == "<=":
            return left <= right
        if op == ">":
            return left > right
        if op == ">=":
            return left >= right
        if op == "==":
            return left == right
        if op == "!=":
            return left != right
        raise ValueError(f"unknown operator {op}")
    if isinstance(expr, InSet):
        value = evaluate(expr.arg, env)
        return any(value == evaluate(v, env) for v in expr.values)
    if isinstance(expr, Call):
        args = [evaluate(a, env) for a in expr.args]
        if expr.fn == "min":
            return min(args)
        if expr.fn == "max":
            return max(args)
        return abs(args[0])
    if isinstance(expr, Cond):
        return evaluate(expr.then, env) if evaluate(expr.test, env) else evaluate(expr.orelse, env)
    raise ValueError(f"not an expression: {expr!r}")
