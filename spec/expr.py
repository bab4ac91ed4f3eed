"""The policy expression AST: its literals, attributes, operators and calls (aggregates too), and walks over it."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Union

ARITH_OPS = ("+", "-", "*", "/", "//", "%")
WHOLE_OPS = ("//", "%")  # floor division and remainder, by a whole number >= 1 written as a literal (SPEC §1d)
COMPARE_OPS = ("<", "<=", ">", ">=", "==", "!=")
BOOL_OPS = ("and", "or")
FUNCTIONS = ("min", "max", "abs")
# Aggregates over the live window spans (SPEC §1e): name -> (which spans: all of the window, or those newer or older
# than this span in window order; what is summed: 1 per span, or its tokens). The one argument is a condition on the
# counted span's own attributes (spec.policy.OWN_ATTRS).
AGGREGATES = {
    "count": ("window", "spans"), "count_newer": ("newer", "spans"), "count_older": ("older", "spans"),
    "tokens_of": ("window", "tokens"), "tokens_newer": ("newer", "tokens"), "tokens_older": ("older", "tokens"),
}
CALLABLE = FUNCTIONS + tuple(AGGREGATES)


@dataclass(frozen=True)
class Loc:
    """A position in the policy's own text, 1-based."""

    line: int
    col: int


NOWHERE = Loc(0, 0)


@dataclass(frozen=True)
class Num:
    """A rational literal; the parsers only produce non-negative finite decimals (minus is a Unary)."""

    value: Fraction
    loc: Loc = field(default=NOWHERE, compare=False, repr=False)


@dataclass(frozen=True)
class BoolLit:
    """`true` or `false`."""

    value: bool
    loc: Loc = field(default=NOWHERE, compare=False, repr=False)


@dataclass(frozen=True)
class EnumLit:
    """A quoted enum name, typed by the expression it is compared with."""

    value: str
    loc: Loc = field(default=NOWHERE, compare=False, repr=False)


@dataclass(frozen=True)
class Attr:
    """A span attribute (`tokens`) or a window attribute (`window_tokens`)."""

    name: str
    loc: Loc = field(default=NOWHERE, compare=False, repr=False)


@dataclass(frozen=True)
class Unary:
    """`not x` or `-x`."""

    op: str
    arg: "Expr"
    loc: Loc = field(default=NOWHERE, compare=False, repr=False)


@dataclass(frozen=True)
class Binary:
    """Arithmetic, comparison and boolean connectives."""

    op: str
    left: "Expr"
    right: "Expr"
    loc: Loc = field(default=NOWHERE, compare=False, repr=False)


@dataclass(frozen=True)
class InSet:
    """`x in [a, b, ...]`."""

    arg: "Expr"
    values: tuple
    loc: Loc = field(default=NOWHERE, compare=False, repr=False)


@dataclass(frozen=True)
class Call:
    """`min(a, b, ...)`, `max(a, b, ...)` or `abs(a)`."""

    fn: str
    args: tuple
    loc: Loc = field(default=NOWHERE, compare=False, repr=False)


@dataclass(frozen=True)
class Cond:
    """`then if test else orelse`: what a Python `if`/`return` chain becomes."""

    test: "Expr"
    then: "Expr"
    orelse: "Expr"
    loc: Loc = field(default=NOWHERE, compare=False, repr=False)


NODE_TYPES = (Num, BoolLit, EnumLit, Attr, Unary, Binary, InSet, Call, Cond)  # every walker handles each (spec/walker.py)
Expr = Union[NODE_TYPES]


def children(node: Expr) -> tuple:
    """The direct subexpressions of node, left to right."""
    if isinstance(node, Unary):
        return (node.arg,)
    if isinstance(node, Binary):
        return (node.left, node.right)
    if isinstance(node, InSet):
        return (node.arg,) + tuple(node.values)
    if isinstance(node, Call):
        return tuple(node.args)
    if isinstance(node, Cond):
        return (node.test, node.then, node.orelse)
    return ()


def subexpressions(expr: Expr):
    """Yield expr and every expression below it, parents first, left to right."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def is_aggregate(node) -> bool:
    """node is a call of an aggregate (`count_newer(role == 'user')`, SPEC §1e)."""
    return isinstance(node, Call) and node.fn in AGGREGATES


def window_aggregate(node) -> bool:
    """node is an aggregate over the whole window: a window attribute (it reads no span of its own)."""
    return is_aggregate(node) and AGGREGATES[node.fn][0] == "window"


def outer_subexpressions(expr: Expr):
    """Yield expr and every expression below it, parents first, but not the condition inside an aggregate (whose
    attributes are the counted span's, not this span's or the window's)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        if not is_aggregate(node):
            stack.extend(reversed(children(node)))
