"""Type checking, interval bounds and resource limits over the policy AST."""

from __future__ import annotations

import difflib
from fractions import Fraction
from typing import Iterable, Optional

from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import (
    ATTRS,
    BOOL,
    ENUM_VALUES,
    FUNCTIONS,
    KIND,
    NAMESPACE,
    NUM,
    Attr,
    Binary,
    BoolLit,
    Call,
    Cond,
    Deployment,
    EnumLit,
    InSet,
    Interval,
    Loc,
    Num,
    Policy,
    Unary,
    children,
)

from prunecheck.checker.language.printer import to_text

# Resource bounds shared by every front end.
MAX_FILE_BYTES = 256 * 1024
MAX_NODES = 4000  # expression nodes per policy (evict + rank)
MAX_DEPTH = 64  # AST depth of one expression; also the bracket/indentation bound of the readers
MAX_DIGITS = 30  # digits in one number literal
MAX_NAME = 64  # characters in one identifier or enum name

ARITH = ("+", "-", "*", "/")
ORDER = ("<", "<=", ">", ">=")
EQUALITY = ("==", "!=")
CONNECTIVES = ("and", "or")
_ENUMS = (KIND, NAMESPACE)
_NODE_TYPES = (Num, BoolLit, EnumLit, Attr, Unary, Binary, InSet, Call, Cond)


def closest(word: str, choices: Iterable[str]) -> Optional[str]:
    """The choice closest to word, if any is reasonably close."""
    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return matches[0] if matches else None


def suggestion(word: str, choices: Iterable[str]) -> str:
    """`; did you mean "x"?` or the empty string."""
    best = closest(word, choices)
    return f'; did you mean "{best}"?' if best else ""


def _where(node) -> tuple:
    loc = getattr(node, "loc", None)
    if isinstance(loc, Loc) and loc.line >= 1 and loc.col >= 1:
        return loc.line, loc.col
    return 1, 1


def _fail(message: str, node, file: str):
    raise PolicySyntaxError(message, file, *_where(node))


def _show(node) -> str:
    try:
        text = to_text(node)
    except Exception:  # a malformed constructed node: describe it, do not crash
        text = type(node).__name__
    return text if len(text) <= 60 else text[:57] + "..."


# --------------------------------------------------------------------------- bounds


def check_bounds(exprs: Iterable, file: str = "<policy>") -> int:
    """Refuse expressions over the node, depth, literal and name bounds; returns the node count.

    Iterative, so it is safe on arbitrarily deep constructed trees; run it before anything recursive.
    """
    total = 0
    for expr in exprs:
        if expr is None:
            continue
        stack = [(expr, 1)]
        while stack:
            node, depth = stack.pop()
            if not isinstance(node, _NODE_TYPES):
                raise PolicySyntaxError(f"not a policy expression: {type(node).__name__}", file, 1, 1)
            total += 1
            if total > MAX_NODES:
                _fail(f"policy is too large: more than {MAX_NODES} expression nodes", node, file)
            if depth > MAX_DEPTH:
                _fail(
                    f"expression is nested too deeply: more than {MAX_DEPTH} levels "
                    "(each operator in a chain like a + b + c adds a level)",
                    node,
                    file,
                )
            if isinstance(node, Num):
                _check_number(node, file)
            elif isinstance(node, (Attr, EnumLit)):
                text = node.value if isinstance(node, EnumLit) else node.name
                if not isinstance(text, str):
                    _fail(f"{type(node).__name__} must hold a string, got {type(text).__name__}", node, file)
                if len(text) > MAX_NAME:
                    _fail(f"name is too long: {len(text)} characters (at most {MAX_NAME})", node, file)
            for child in children(node):
                stack.append((child, depth + 1))
    return total


def _check_number(node: Num, file: str) -> None:
    value = node.value
    if isinstance(value, bool) or not isinstance(value, (int, Fraction)):
        _fail(f"number literal must be exact, got {type(value).__name__}", node, file)
    value = Fraction(value)
    limit = 10**MAX_DIGITS
    if abs(value.numerator) >= limit or value.denominator >= limit:
        _fail(f"number literal is too large: at most {MAX_DIGITS} digits", node, file)


def count_nodes(expr) -> int:
    """Number of nodes in expr (iterative)."""
    n, stack = 0, [expr]
    while stack:
        node = stack.pop()
        n += 1
        stack.extend(children(node))
    return n


# --------------------------------------------------------------------------- intervals
# An endpoint is a Fraction, or the string "-inf" / "+inf"; an interval is (lo, lo_open, hi, hi_open).

_NEG, _POS = "-inf", "+inf"


def _key(v):
    if v == _NEG:
        return (-1, 0)
    if v == _POS:
        return (1, 0)
    return (0, v)


def _sign(v) -> int:
    if v == _NEG:
        return -1
    if v == _POS:
        return 1
    return (v > 0) - (v < 0)


def _eadd(a, b):
    if isinstance(a, Fraction) and isinstance(b, Fraction):
        return a + b
    inf = a if not isinstance(a, Fraction) else b
    return inf  # -inf + +inf never arises: lower ends add to lower ends


def _emul(a, b):
    if isinstance(a, Fraction) and isinstance(b, Fraction):
        return a * b
    if (isinstance(a, Fraction) and a == 0) or (isinstance(b, Fraction) and b == 0):
        return Fraction(0)
    return _POS if _sign(a) * _sign(b) > 0 else _NEG


def _pick(cands, want_min: bool):
    """The least (greatest) candidate endpoint; open only if every tied candidate is open."""
    cands = list(cands)
    best = min(cands, key=lambda c: _key(c[0])) if want_min else max(cands, key=lambda c: _key(c[0]))
    value = best[0]
    if not isinstance(value, Fraction):
        return value, True
    is_open = all(o for v, o in cands if isinstance(v, Fraction) and v == value)
    return value, is_open


def _from_spec(iv: Interval):
    lo = _NEG if iv.lo is None else Fraction(iv.lo)
    hi = _POS if iv.hi is None else Fraction(iv.hi)
    return (lo, iv.lo_open or iv.lo is None, hi, iv.hi_open or iv.hi is None)


def _to_spec(t) -> Interval:
    lo, lo_open, hi, hi_open = t
    return Interval(
        None if lo == _NEG else lo,
        None if hi == _POS else hi,
        bool(lo_open) and lo != _NEG,
        bool(hi_open) and hi != _POS,
    )


def _point(v: Fraction):
    return (v, False, v, False)


def _i_add(a, b):
    return (_eadd(a[0], b[0]), a[1] or b[1], _eadd(a[2], b[2]), a[3] or b[3])


def _i_neg(a):
    flip = {_NEG: _POS, _POS: _NEG}
    lo = flip.get(a[2], None) if not isinstance(a[2], Fraction) else -a[2]
    hi = flip.get(a[0], None) if not isinstance(a[0], Fraction) else -a[0]
    return (lo, a[3], hi, a[1])


def _closed_zero(v, is_open: bool) -> bool:
    return isinstance(v, Fraction) and v == 0 and not is_open


def _i_mul(a, b):
    cands = []
    for x, xo in ((a[0], a[1]), (a[2], a[3])):
        for y, yo in ((b[0], b[1]), (b[2], b[3])):
            zero_closed = _closed_zero(x, xo) or _closed_zero(y, yo)
            cands.append((_emul(x, y), (xo or yo) and not zero_closed))
    lo, lo_open = _pick(cands, True)
    hi, hi_open = _pick(cands, False)
    return (lo, lo_open, hi, hi_open)


def _excludes_zero(a) -> bool:
    lo, lo_open, hi, hi_open = a
    if _key(lo) > (0, 0) or (lo == 0 and lo_open and isinstance(lo, Fraction)):
        return True
    if _key(hi) < (0, 0) or (hi == 0 and hi_open and isinstance(hi, Fraction)):
        return True
    return False


def _i_recip(a):
    lo, lo_open, hi, hi_open = a
    if _key(hi) < (0, 0) or (isinstance(hi, Fraction) and hi == 0):
        return _i_neg(_i_recip(_i_neg(a)))
    # strictly positive values
    new_lo, new_lo_open = (Fraction(0), True) if hi == _POS else (1 / hi, hi_open)
    new_hi, new_hi_open = (_POS, True) if lo == 0 else (1 / lo, lo_open)
    return (new_lo, new_lo_open, new_hi, new_hi_open)


def _i_minmax(items, fn: str):
    want_min = fn == "min"
    lo, lo_open = _pick([(i[0], i[1]) for i in items], want_min)
    hi, hi_open = _pick([(i[2], i[3]) for i in items], want_min)
    return (lo, lo_open, hi, hi_open)


def _i_hull(a, b):
    lo, lo_open = _pick([(a[0], a[1]), (b[0], b[1])], True)
    hi, hi_open = _pick([(a[2], a[3]), (b[2], b[3])], False)
    return (lo, lo_open, hi, hi_open)


def _i_abs(a):
    lo, lo_open, hi, hi_open = a
    if _key(lo) >= (0, 0):
        return a
    if _key(hi) <= (0, 0):
        return _i_neg(a)
    neg = _i_neg(a)
    top, top_open = _pick([(neg[2], neg[3]), (hi, hi_open)], False)
    return (Fraction(0), False, top, top_open)


def _interval(expr, file: str):
    """Internal interval of a numeric expression; assumes it is well typed except for division."""
    if isinstance(expr, Num):
        return _point(Fraction(expr.value))
    if isinstance(expr, Attr):
        entry = ATTRS.get(expr.name)
        if entry is None or entry[1] is None:
            _fail(f"`{expr.name}` is not a number", expr, file)
        return _from_spec(entry[1])
    if isinstance(expr, Unary) and expr.op == "-":
        return _i_neg(_interval(expr.arg, file))
    if isinstance(expr, Binary) and expr.op in ARITH:
        left = _interval(expr.left, file)
        right = _interval(expr.right, file)
        if expr.op == "+":
            return _i_add(left, right)
        if expr.op == "-":
            return _i_add(left, _i_neg(right))
        if expr.op == "*":
            return _i_mul(left, right)
        if not _excludes_zero(right):
            _fail(f"division by `{_show(expr.right)}`, which can be zero", expr, file)
        return _i_mul(left, _i_recip(right))
    if isinstance(expr, Call) and expr.fn in ("min", "max"):
        return _i_minmax([_interval(a, file) for a in expr.args], expr.fn)
    if isinstance(expr, Call) and expr.fn == "abs":
        return _i_abs(_interval(expr.args[0], file))
    if isinstance(expr, Cond):
        return _i_hull(_interval(expr.then, file), _interval(expr.orelse, file))
    _fail(f"`{_show(expr)}` is not a number", expr, file)


def interval_of(expr, file: str = "<policy>") -> Interval:
    """The rational interval containing every value of numeric expr (lo None: unbounded below; hi None: above).

    Raises PolicySyntaxError on a division whose divisor's interval contains zero.
    """
    check_bounds([expr], file)
    return _to_spec(_interval(expr, file))


# --------------------------------------------------------------------------- types


def _context_typed(node) -> bool:
    """True for expressions whose type comes from what they are compared with (enum literals)."""
    if isinstance(node, EnumLit):
        return True
    if isinstance(node, Cond):
        return _context_typed(node.then) and _context_typed(node.orelse)
    return False


def _is_literal(node) -> bool:
    if isinstance(node, (Num, BoolLit, EnumLit)):
        return True
    return isinstance(node, Unary) and node.op == "-" and isinstance(node.arg, Num)


class _Checker:
    def __init__(self, file: str, has_budget: bool):
        self.file = file
        self.has_budget = has_budget

    def fail(self, message, node):
        _fail(message, node, self.file)

    def check(self, node, expected: str, what: str = "expression") -> None:
        got = self.infer(node, expected)
        if got != expected:
            self.fail(f"{what} must be {_article(expected)}, got {got} `{_show(node)}`", node)

    def enum(self, node: EnumLit, enum_type: str) -> str:
        allowed = ENUM_VALUES[enum_type]
        if not isinstance(node.value, str) or node.value not in allowed:
            hint = suggestion(str(node.value), allowed)
            self.fail(f"'{node.value}' is not a {enum_type} (one of {', '.join(allowed)}){hint}", node)
        return enum_type

    def infer(self, node, expected: Optional[str] = None) -> str:
        if isinstance(node, Num):
            return NUM
        if isinstance(node, BoolLit):
            if not isinstance(node.value, bool):
                self.fail("boolean literal must be true or false", node)
            return BOOL
        if isinstance(node, EnumLit):
            if expected in _ENUMS:
                return self.enum(node, expected)
            if expected is None:
                self.fail(f"'{node.value}' must be compared with kind or namespace (e.g. kind == '{node.value}')", node)
            self.fail(f"enum name '{node.value}' used where {_article(expected)} is expected", node)
        if isinstance(node, Attr):
            entry = ATTRS.get(node.name)
            if entry is None:
                self.fail(f"unknown attribute `{node.name}`{suggestion(str(node.name), ATTRS)}", node)
            if node.name == "budget" and not self.has_budget:
                self.fail("`budget` is referenced but the policy sets no budget (add `budget: <tokens>`)", node)
            return entry[0]
        if isinstance(node, Unary):
            if node.op == "not":
                got = self.infer(node.arg, BOOL)
                if got != BOOL:
                    self.fail(f"cannot apply not to {got}", node)
                return BOOL
            if node.op == "-":
                got = self.infer(node.arg, NUM)
                if got != NUM:
                    self.fail(f"cannot apply - to {got}", node)
                return NUM
            self.fail(f"unknown unary operator `{node.op}`", node)
        if isinstance(node, Binary):
            return self.binary(node)
        if isinstance(node, InSet):
            return self.inset(node)
        if isinstance(node, Call):
            return self.call(node)
        if isinstance(node, Cond):
            return self.cond(node, expected)
        self.fail(f"not a policy expression: {type(node).__name__}", node)

    def binary(self, node: Binary) -> str:
        op = node.op
        if op in ARITH or op in ORDER:
            for side in (node.left, node.right):
                got = self.infer(side, NUM)
                if got != NUM:
                    self.fail(f"cannot apply {op} to {got}", node)
            if op == "/":
                _interval(node, self.file)  # refuses a possibly-zero divisor
            return NUM if op in ARITH else BOOL
        if op in CONNECTIVES:
            for side in (node.left, node.right):
                got = self.infer(side, BOOL)
                if got != BOOL:
                    self.fail(f"cannot apply {op} to {got}", node)
            return BOOL
        if op in EQUALITY:
            left_ctx, right_ctx = _context_typed(node.left), _context_typed(node.right)
            if left_ctx and right_ctx:
                self.fail(
                    f"cannot compare two enum names (`{_show(node.left)}` {op} `{_show(node.right)}`); "
                    "compare kind or namespace with a name",
                    node,
                )
            if left_ctx:
                self.compare_with(node.left, self.infer(node.right), node)
            elif right_ctx:
                self.compare_with(node.right, self.infer(node.left), node)
            else:
                left, right = self.infer(node.left), self.infer(node.right)
                if left != right:
                    self.fail(f"cannot compare {left} with {right} using {op}", node)
            return BOOL
        self.fail(f"unknown operator `{op}`", node)

    def compare_with(self, ctx_node, other_type: str, parent) -> None:
        if other_type not in _ENUMS:
            self.fail(f"cannot compare {other_type} with enum name `{_show(ctx_node)}`", parent)
        self.infer(ctx_node, other_type)

    def inset(self, node: InSet) -> str:
        if _context_typed(node.arg):
            self.fail("the left side of `in` must be an attribute or expression, not an enum name", node)
        arg_type = self.infer(node.arg)
        if not node.values:
            self.fail("`in` needs at least one value in its list", node)
        for value in node.values:
            if not _is_literal(value):
                self.fail(f"values in an `in` list must be literals, got `{_show(value)}`", value)
            if isinstance(value, EnumLit):
                if arg_type not in _ENUMS:
                    self.fail(f"cannot test {arg_type} for membership of enum name '{value.value}'", value)
                self.enum(value, arg_type)
            else:
                got = self.infer(value)
                if got != arg_type:
                    self.fail(f"`in` list mixes {arg_type} with {got} `{_show(value)}`", value)
        return BOOL

    def call(self, node: Call) -> str:
        if node.fn not in FUNCTIONS:
            self.fail(f"unknown function `{node.fn}`{suggestion(str(node.fn), FUNCTIONS)}", node)
        n = len(node.args)
        if node.fn == "abs" and n != 1:
            self.fail(f"abs takes exactly one argument, got {n}", node)
        if node.fn in ("min", "max") and n < 2:
            self.fail(f"{node.fn} takes at least two arguments, got {n}", node)
        for arg in node.args:
            got = self.infer(arg, NUM)
            if got != NUM:
                self.fail(f"cannot apply {node.fn} to {got}", node)
        return NUM

    def cond(self, node: Cond, expected: Optional[str]) -> str:
        got = self.infer(node.test, BOOL)
        if got != BOOL:
            self.fail(f"condition must be bool, got {got} `{_show(node.test)}`", node.test)
        then_ctx, else_ctx = _context_typed(node.then), _context_typed(node.orelse)
        if then_ctx and not else_ctx:
            orelse = self.infer(node.orelse, expected)
            then = self.infer(node.then, orelse if orelse in _ENUMS else expected)
        else:
            then = self.infer(node.then, expected)
            orelse = self.infer(node.orelse, then if else_ctx and then in _ENUMS else expected)
        if then != orelse:
            self.fail(f"the branches of a conditional have different types: {then} and {orelse}", node)
        return then


def _article(t: str) -> str:
    return {BOOL: "a bool", NUM: "a number", KIND: "a kind", NAMESPACE: "a namespace"}.get(t, t)


def type_of(expr, file: str = "<policy>", *, has_budget: bool = True, expected: Optional[str] = None) -> str:
    """The type (BOOL, NUM, KIND or NAMESPACE) of expr; raises PolicySyntaxError on any type or bound error."""
    check_bounds([expr], file)
    return _Checker(file, has_budget).infer(expr, expected)


def check_expr(
    expr, expected: str, file: str = "<policy>", *, has_budget: bool = True, what: str = "expression"
) -> None:
    """Require expr to be well typed with type expected (and within the bounds)."""
    check_bounds([expr], file)
    _Checker(file, has_budget).check(expr, expected, what)


def check_parts(evict, rank=None, *, budget: Optional[int] = None, file: str = "<policy>") -> None:
    """Check an evict (bool) and optional rank (num) expression together, as one policy."""
    check_bounds([evict, rank], file)
    _check_budget_value(budget, file)
    checker = _Checker(file, budget is not None)
    if evict is None:
        raise PolicySyntaxError("policy has no evict expression", file, 1, 1)
    checker.check(evict, BOOL, "evict")
    if rank is not None:
        checker.check(rank, NUM, "rank")


def _check_budget_value(budget, file: str) -> None:
    if budget is None:
        return
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise PolicySyntaxError(f"budget must be a whole number >= 1, got {budget!r}", file, 1, 1)
    if budget >= 10**MAX_DIGITS:
        raise PolicySyntaxError(f"budget is too large: at most {MAX_DIGITS} digits", file, 1, 1)


def check_policy(policy: Policy, file: Optional[str] = None) -> Policy:
    """Check a whole Policy (types, divisions, budget use, bounds); returns it unchanged."""
    file = file or getattr(policy, "source", None) or "<policy>"
    if not isinstance(policy.name, str) or not policy.name.strip():
        raise PolicySyntaxError("policy name must be a non-empty string", file, 1, 1)
    if not isinstance(policy.deployment, Deployment):
        raise PolicySyntaxError("policy deployment must be a Deployment", file, 1, 1)
    check_parts(policy.evict, policy.rank, budget=policy.budget, file=file)
    return policy


__all__ = [
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "MAX_DEPTH",
    "MAX_DIGITS",
    "MAX_NAME",
    "check_bounds",
    "check_expr",
    "check_parts",
    "check_policy",
    "closest",
    "count_nodes",
    "interval_of",
    "suggestion",
    "type_of",
]
