"""Canonical text of a policy expression in the YAML mini-language; it re-parses to an equal AST."""

from __future__ import annotations

from fractions import Fraction

from prunecheck.spec.policy import Attr, Binary, BoolLit, Call, Cond, EnumLit, InSet, Num, Unary

# Binding strength, loosest first (mirrors checker/expr_parser.py).
P_COND, P_OR, P_AND, P_NOT, P_CMP, P_ADD, P_MUL, P_NEG, P_ATOM = range(1, 10)
_BINARY_PREC = {
    "or": P_OR,
    "and": P_AND,
    "<": P_CMP,
    "<=": P_CMP,
    ">": P_CMP,
    ">=": P_CMP,
    "==": P_CMP,
    "!=": P_CMP,
    "+": P_ADD,
    "-": P_ADD,
    "*": P_MUL,
    "/": P_MUL,
}


def number_text(value) -> str:
    """An exact literal for a rational: `7`, `0.25`, or `(1 / 3)`; negative values as `(-x)`.

    Non-negative integers and finite decimals re-parse to the same Num; the parenthesised forms
    re-parse to an equal-valued Binary/Unary (the parsers never produce such Nums themselves).
    """
    value = Fraction(value)
    if value < 0:
        return f"(-{number_text(-value)})"
    den = value.denominator
    twos = fives = 0
    while den % 2 == 0:
        den //= 2
        twos += 1
    while den % 5 == 0:
        den //= 5
        fives += 1
    if den != 1:
        return f"({value.numerator} / {value.denominator})"
    places = max(twos, fives)
    if places == 0:
        return str(value.numerator)
    digits = str(value.numerator * 10**places // value.denominator).rjust(places + 1, "0")
    return f"{digits[:-places]}.{digits[-places:]}"


def _quote(name: str) -> str:
    if "'" not in name:
        return f"'{name}'"
    if '"' not in name:
        return f'"{name}"'
    raise ValueError(f"enum name {name!r} contains both quote characters")


def _prec(node) -> int:
    if isinstance(node, Binary):
        return _BINARY_PREC.get(node.op, P_ATOM)
    if isinstance(node, InSet):
        return P_CMP
    if isinstance(node, Unary):
        return P_NOT if node.op == "not" else P_NEG
    if isinstance(node, Cond):
        return P_COND
    return P_ATOM


def _fmt(node, min_prec: int) -> str:
    text = _bare(node)
    return f"({text})" if _prec(node) < min_prec else text


def _bare(node) -> str:
    if isinstance(node, Num):
        return number_text(node.value)
    if isinstance(node, BoolLit):
        return "true" if node.value else "false"
    if isinstance(node, EnumLit):
        return _quote(node.value)
    if isinstance(node, Attr):
        return node.name
    if isinstance(node, Unary):
        if node.op == "not":
            if isinstance(node.arg, InSet):  # `x not in [...]` parses back to not (x in [...])
                return _in_text(node.arg, "not in")
            # parenthesise comparisons for readability: not (kind == 'diff')
            return f"not {_fmt(node.arg, P_CMP + 1) if _prec(node.arg) != P_NOT else _bare(node.arg)}"
        arg = _fmt(node.arg, P_NEG)
        if arg.startswith("-"):
            arg = f"({arg})"
        return f"{node.op}{arg}"
    if isinstance(node, Binary):
        prec = _BINARY_PREC.get(node.op)
        if prec is None:
            raise ValueError(f"unknown operator {node.op!r}")
        if prec == P_CMP:  # comparisons do not chain: parenthesise comparison operands
            return f"{_fmt(node.left, P_ADD)} {node.op} {_fmt(node.right, P_ADD)}"
        if node.op == "or":  # a or (b and c), for readability
            left, right = (f"({_bare(c)})" if _is_and(c) else None for c in (node.left, node.right))
            return f"{left or _fmt(node.left, prec)} or {right or _fmt(node.right, prec + 1)}"
        return f"{_fmt(node.left, prec)} {node.op} {_fmt(node.right, prec + 1)}"
    if isinstance(node, InSet):
        return _in_text(node, "in")
    if isinstance(node, Call):
        return f"{node.fn}({', '.join(_fmt(a, P_COND) for a in node.args)})"
    if isinstance(node, Cond):
        return f"{_fmt(node.then, P_OR)} if {_fmt(node.test, P_OR)} else {_fmt(node.orelse, P_OR)}"
    raise ValueError(f"not a policy expression: {type(node).__name__}")


def _is_and(node) -> bool:
    return isinstance(node, Binary) and node.op == "and"


def _in_text(node: InSet, keyword: str) -> str:
    values = ", ".join(_fmt(v, P_COND) for v in node.values)
    return f"{_fmt(node.arg, P_ADD)} {keyword} [{values}]"


def to_text(expr) -> str:
    """Canonical mini-language text for expr: parenthesised where precedence requires, plus `a or (b and c)`
    and `not (a == b)` for readability; `not (x in [...])` prints as `x not in [...]`."""
    return _fmt(expr, P_COND)


__all__ = ["to_text", "number_text"]
