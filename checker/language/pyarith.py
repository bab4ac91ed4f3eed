"""The CPython types of a Python-form policy's numbers: refuses every operator whose value CPython rounds."""

from __future__ import annotations

from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import ARITH_OPS, ATTRS, NUM, Binary, children
from prunecheck.spec.walker import Walker

from prunecheck.checker.language.printer import to_python

# Under the host contract (README, "What a Python-form policy means") integer attributes are int, recency and frequency are
# fractions.Fraction, and a float literal is a float.  int and Fraction arithmetic is exact in CPython, and
# so are comparisons, min, max, abs and negation of any of the three; everything else below is refused.

INT, FRACTION, FLOAT = "int", "Fraction", "float"
_NONE, _INT, _FRACTION, _FLOAT = frozenset(), frozenset((INT,)), frozenset((FRACTION,)), frozenset((FLOAT,))
FRACTION_ATTRS = ("recency", "frequency")
_CROSS = "compare cross-multiplied integers instead (a * d < c * b)"
_SCALE = "scale by an integer instead, e.g. `4 * span.age < 3 * span.tokens`, not `span.age < 0.75 * span.tokens`"


class _NumericTypes(Walker):
    """The set of CPython types each numeric subexpression can have; refuses every rounded-float operator."""

    def __init__(self, floats, file: str):
        self.nums = tuple(floats)
        self.floats = {id(num) for num in self.nums}
        self.file = file

    def fail(self, message: str, node) -> None:
        loc = node.loc
        raise PolicySyntaxError(message, self.file, max(loc.line, 1), max(loc.col, 1))

    def num(self, node) -> frozenset:
        return _FLOAT if id(node) in self.floats else _INT

    def attr(self, node) -> frozenset:
        if ATTRS.get(node.name, (None,))[0] != NUM:
            return _NONE
        return _FRACTION if node.name in FRACTION_ATTRS else _INT

    def binary(self, node) -> frozenset:
        left, right = self.visit(node.left), self.visit(node.right)
        if node.op in ARITH_OPS:
            return self.arith(node, left, right)
        return _NONE  # comparisons, and, or: exact in CPython, and bool

    def cond(self, node) -> frozenset:
        self.visit(node.test)
        return self.visit(node.then) | self.visit(node.orelse)

    def call(self, node) -> frozenset:
        return frozenset().union(*[self.visit(arg) for arg in node.args])  # min/max return an operand; abs keeps it

    def unary(self, node) -> frozenset:
        found = self.visit(node.arg)
        return found if node.op == "-" else _NONE

    def in_set(self, node) -> frozenset:
        for child in children(node):
            self.visit(child)
        return _NONE

    def bool_lit(self, node) -> frozenset:
        return _NONE

    enum_lit = unknown = bool_lit

    def arith(self, node: Binary, left: frozenset, right: frozenset) -> frozenset:
        op = node.op
        for side, types in ((node.left, left), (node.right, right)):
            if FLOAT in types:
                verb, hint = "is" if types == _FLOAT else "can be", _CROSS if op == "/" else _SCALE
                why = f"`{self.shown(side)}` {verb} a float"
                self.fail(f"`{op}` with a float operand is a rounded float in Python ({why}); {hint}", node)
        if op == "/":
            if INT in left and INT in right:
                verb = "are" if left == right == _INT else "can both be"
                why = f"`{self.shown(node.left)}` and `{self.shown(node.right)}` {verb} ints"
                self.fail(f"`/` between two integers is a rounded float in Python ({why}); {_CROSS}", node)
            return _FRACTION
        out = _INT if INT in left and INT in right else _NONE
        return out | (_FRACTION if FRACTION in left | right else _NONE)

    def shown(self, node) -> str:
        try:
            text = to_python(node, self.nums)
        except ValueError:
            text = type(node).__name__
        return text if len(text) <= 40 else text[:37] + "..."


def check_python_arithmetic(exprs, floats, file: str = "<policy>") -> None:
    """Refuse, at the operator, every arithmetic operation whose CPython value is a rounded float.

    exprs are type-checked policy expressions read from the Python form; floats are the Num nodes that
    were float literals (PyPolicyParts.floats).  What is accepted evaluates exactly in CPython, so its
    deployed value is its checked value.
    """
    checker = _NumericTypes(floats, file)
    for expr in exprs:
        if expr is not None:
            checker.visit(expr)


__all__ = ["check_python_arithmetic"]
