"""Interval bounds of numeric policy expressions: the values each can take in every reachable state."""

from __future__ import annotations

from fractions import Fraction

from prunecheck.spec.policy import AGGREGATES, ATTRS, NUM, Attr, Binary, Call, Cond, Interval, Num, Unary
from prunecheck.spec.walker import Walker

from prunecheck.checker.language.bounds import check_bounds, fail_at, shown

ARITH = ("+", "-", "*", "/", "//", "%")

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


class _Intervals(Walker):
    """The internal interval of a numeric expression; assumes it is well typed except for division."""

    def __init__(self, file: str):
        self.file = file

    def not_a_number(self, expr):
        fail_at(f"`{shown(expr)}` is not a number", expr, self.file)

    def num(self, expr):
        return _point(Fraction(expr.value))

    def attr(self, expr):
        entry = ATTRS.get(expr.name)
        if entry is None or entry[1] is None:
            fail_at(f"`{expr.name}` is not a number", expr, self.file)
        return _from_spec(entry[1])

    def unary(self, expr):
        if expr.op != "-":
            self.not_a_number(expr)
        return _i_neg(self.visit(expr.arg))

    def binary(self, expr):
        if expr.op not in ARITH:
            self.not_a_number(expr)
        left, right = self.visit(expr.left), self.visit(expr.right)
        if expr.op == "+":
            return _i_add(left, right)
        if expr.op == "-":
            return _i_add(left, _i_neg(right))
        if expr.op == "*":
            return _i_mul(left, right)
        if expr.op == "//":  # by a whole literal k >= 1 (type checking): floor is monotone
            k = expr.right.value
            lo, hi = (v if v in (_NEG, _POS) else Fraction(v // k) for v in (left[0], left[2]))
            return (lo, lo == _NEG, hi, hi == _POS)
        if expr.op == "%":
            return (Fraction(0), False, Fraction(expr.right.value - 1), False)
        if not _excludes_zero(right):
            fail_at(f"division by `{shown(expr.right)}`, which can be zero", expr, self.file)
        return _i_mul(left, _i_recip(right))

    def call(self, expr):
        if expr.fn in ("min", "max"):
            return _i_minmax([self.visit(a) for a in expr.args], expr.fn)
        if expr.fn == "abs":
            return _i_abs(self.visit(expr.args[0]))
        if expr.fn in AGGREGATES:
            return (Fraction(0), False, _POS, True)
        self.not_a_number(expr)

    def cond(self, expr):
        return _i_hull(self.visit(expr.then), self.visit(expr.orelse))

    bool_lit = enum_lit = in_set = unknown = not_a_number


# The numeric attributes whose every value is a whole number (recency and frequency are ratios).
WHOLE_ATTRS = frozenset(name for name, (kind, _iv) in ATTRS.items() if kind == NUM) - {"recency", "frequency"}


def is_whole(expr) -> bool:
    """Whether a numeric expression is a whole number in every state: whole literals and attributes, aggregates,
    and + - * // % min max abs and conditionals of them (never /). What `//` and `%` take on the left (SPEC §1d)."""
    if isinstance(expr, Num):
        return Fraction(expr.value).denominator == 1
    if isinstance(expr, Attr):
        return expr.name in WHOLE_ATTRS
    if isinstance(expr, Unary):
        return expr.op == "-" and is_whole(expr.arg)
    if isinstance(expr, Binary):
        return expr.op in ("+", "-", "*", "//", "%") and is_whole(expr.left) and (
            expr.op in ("//", "%") or is_whole(expr.right))
    if isinstance(expr, Call):
        return expr.fn in AGGREGATES or all(is_whole(a) for a in expr.args)
    if isinstance(expr, Cond):
        return is_whole(expr.then) and is_whole(expr.orelse)
    return False


def refuse_zero_divisors(expr, file: str) -> None:
    """Raise PolicySyntaxError at a division in numeric expr whose divisor's interval contains zero."""
    _Intervals(file).visit(expr)


def interval_of(expr, file: str = "<policy>") -> Interval:
    """The rational interval containing every value of numeric expr (lo None: unbounded below; hi None: above).

    Raises PolicySyntaxError on a division whose divisor's interval contains zero.
    """
    check_bounds([expr], file)
    return _to_spec(_Intervals(file).visit(expr))


__all__ = ["interval_of", "refuse_zero_divisors"]
