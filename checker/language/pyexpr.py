"""The restricted-Python policy form's expressions: Python ast expression nodes read into the policy AST."""

from __future__ import annotations

import ast
import math
from fractions import Fraction
from typing import Optional

from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import (
    AGGREGATES,
    FUNCTIONS,
    SPAN_ATTRS,
    TRIGGER_ATTRS,
    WINDOW_ATTRS,
    Attr,
    Binary,
    BoolLit,
    Call,
    Cond,
    EnumLit,
    InSet,
    Loc,
    Num,
    Unary,
)

from prunecheck.checker.language.bounds import MAX_DEPTH, MAX_DIGITS, MAX_NAME, suggestion
from prunecheck.checker.language.builder import Builder, is_literal, too_deep_message
from prunecheck.checker.language.pyscan import PythonSource

MODULE_CONSTANTS = ("NAME", "BUDGET", "EFFECT", "PLACEHOLDER_TOKENS", "SUMMARY_ROLE", "SUMMARY_AT", "PAIRS", "DEPLOYMENT",
                    "EXPECT", "ACCEPT", "ORDER", "START_ON")

_ONLY_READS = "a policy may only read span.<attribute> and window.<attribute>"
_ONLY_CALLS = "only min, max and abs may be called"
CONSTRUCTS = {  # what each refused ast node is called in an error
    "Import": "import",
    "ImportFrom": "import",
    "ClassDef": "class definition",
    "FunctionDef": "nested function definition",
    "AsyncFunctionDef": "async def",
    "Delete": "del statement",
    "Assign": "assignment",
    "AugAssign": "augmented assignment",
    "AnnAssign": "annotated assignment",
    "For": "for loop",
    "AsyncFor": "async for loop",
    "While": "while loop",
    "With": "with statement",
    "AsyncWith": "async with statement",
    "Match": "match statement",
    "Raise": "raise statement",
    "Try": "try statement",
    "TryStar": "try statement",
    "Assert": "assert statement",
    "Global": "global statement",
    "Nonlocal": "nonlocal statement",
    "Expr": "expression statement",
    "Pass": "pass",
    "Break": "break",
    "Continue": "continue",
    "If": "if statement",
    "Return": "return",
    "Lambda": "lambda",
    "ListComp": "list comprehension",
    "SetComp": "set comprehension",
    "DictComp": "dict comprehension",
    "GeneratorExp": "generator expression",
    "JoinedStr": "f-string",
    "FormattedValue": "f-string",
    "NamedExpr": "walrus (:=) assignment",
    "Subscript": "subscript",
    "Starred": "starred expression",
    "Await": "await",
    "Yield": "yield",
    "YieldFrom": "yield from",
    "Dict": "dict literal",
    "Set": "set literal",
    "List": "list outside `in`",
    "Tuple": "tuple outside `in`",
    "Slice": "slice",
}
_ARITH = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%"}
_OTHER_BINOPS = {
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.BitAnd: "&",
    ast.MatMult: "@",
}
_COMPARE = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


class ExpressionReader:
    """Python ast expressions to policy expressions; everything outside the restricted form is refused."""

    def __init__(self, src: PythonSource, file: str):
        self.src = src
        self.file = file
        self.b = Builder(file)
        self.fn = "evict"
        self.floats = []  # the Nums read from float literals (by identity: Num(2) from `2.0` is a float)

    # -- positions and errors
    def loc(self, node) -> Loc:
        return self.src.loc(getattr(node, "lineno", 1), getattr(node, "col_offset", 0))

    def fail(self, message, where):
        loc = where if isinstance(where, Loc) else self.loc(where)
        raise PolicySyntaxError(message, self.file, loc.line, loc.col)

    def refuse(self, node, what: Optional[str] = None):
        what = what or CONSTRUCTS.get(type(node).__name__, type(node).__name__)
        self.fail(f"{what} is not allowed in a policy", node)

    def gap_loc(self, left, right) -> Loc:
        """Position of the operator token between two expression nodes."""
        i = self.src.index(left.end_lineno, left.end_col_offset)
        j = self.src.index(right.lineno, right.col_offset)
        text = self.src.text
        while i < j:
            ch = text[i]
            if ch in " \t\f\n\\()":
                i += 1
            elif ch == "#":
                nl = text.find("\n", i)
                if nl < 0:
                    break
                i = nl
            else:
                return self.src.loc_at(i)
        return self.loc(left)

    def make(self, cls, *args, loc: Loc, children=()):
        return self.b.make(cls, *args, loc=loc, children=children)

    def segment(self, node, limit: int = 40) -> str:
        text = self.src.segment(node) or "..."
        text = " ".join(text.split())
        return text if len(text) <= limit else text[: limit - 3] + "..."

    # -- expressions
    def expr(self, node, depth: int):
        if depth > MAX_DEPTH:
            self.fail(too_deep_message(), node)
        d = depth + 1
        if isinstance(node, ast.Constant):
            return self.constant_expr(node)
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            values = [self.expr(v, d) for v in node.values]
            result = values[0]
            for prev, cur, conv in zip(node.values, node.values[1:], values[1:]):
                result = self.make(Binary, op, result, conv, loc=self.gap_loc(prev, cur), children=(result, conv))
            return result
        if isinstance(node, ast.BinOp):
            kind = type(node.op)
            if kind not in _ARITH:
                shown = _OTHER_BINOPS.get(kind, kind.__name__)
                self.fail(f"operator {shown} is not allowed in a policy", self.gap_loc(node.left, node.right))
            left, right = self.expr(node.left, d), self.expr(node.right, d)
            loc = self.gap_loc(node.left, node.right)
            return self.make(Binary, _ARITH[kind], left, right, loc=loc, children=(left, right))
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                op = "not"
            elif isinstance(node.op, ast.USub):
                op = "-"
            elif isinstance(node.op, ast.UAdd):
                self.fail("unary + is not allowed in a policy", node)
            else:
                self.fail("operator ~ is not allowed in a policy", node)
            arg = self.expr(node.operand, d)
            return self.make(Unary, op, arg, loc=self.loc(node), children=(arg,))
        if isinstance(node, ast.Compare):
            return self.compare(node, d)
        if isinstance(node, ast.IfExp):
            then, test, orelse = self.expr(node.body, d), self.expr(node.test, d), self.expr(node.orelse, d)
            loc = self.gap_loc(node.body, node.test)
            return self.make(Cond, test, then, orelse, loc=loc, children=(test, then, orelse))
        if isinstance(node, ast.Call):
            return self.call(node, d)
        self.refuse(node)

    def constant_expr(self, node: ast.Constant):
        value, loc = node.value, self.loc(node)
        if isinstance(value, bool):
            return self.make(BoolLit, value, loc=loc)
        if isinstance(value, int):
            if abs(value) >= 10**MAX_DIGITS:
                self.fail(f"number literal is too long (at most {MAX_DIGITS} digits)", node)
            return self.make(Num, Fraction(value), loc=loc)
        if isinstance(value, float):
            return self.double(node)
        if isinstance(value, str):
            if len(value) > MAX_NAME:
                self.fail(f"enum name is too long: {len(value)} characters (at most {MAX_NAME})", node)
            return self.make(EnumLit, value, loc=loc)
        if isinstance(value, complex):
            self.fail("complex number is not allowed in a policy", node)
        if isinstance(value, bytes):
            self.fail("bytes literal is not allowed in a policy", node)
        self.fail(f"{value!r} is not allowed in a policy", node)

    def double(self, node) -> Num:
        """A float literal means its IEEE-754 double, exactly as CPython reads it (`0.1` is not 1/10)."""
        value, text = node.value, self.segment(node)
        if not math.isfinite(value):
            self.fail(f"float literal `{text}` is infinite in Python (it overflows a double)", node)
        exact = Fraction(value)
        if abs(exact.numerator) >= 10**MAX_DIGITS or exact.denominator >= 10**MAX_DIGITS:
            self.fail(
                f"float literal `{text}` is too large or too small to check exactly: the double it denotes needs "
                f"more than {MAX_DIGITS} digits in its numerator or denominator",
                node,
            )
        num = self.make(Num, exact, loc=self.loc(node))
        self.floats.append(num)
        return num

    def attribute(self, node: ast.Attribute):
        attr = node.attr
        attr_loc = self.src.loc(node.end_lineno, node.end_col_offset - len(attr.encode("utf-8", "surrogatepass")))
        if attr.startswith("__") and attr.endswith("__"):
            self.fail(f"dunder attribute `{attr[:MAX_NAME]}` is not allowed in a policy", attr_loc)
        if attr.startswith("_"):
            self.fail(f"private attribute `{attr[:MAX_NAME]}` is not allowed in a policy", attr_loc)
        if len(attr) > MAX_NAME:
            self.fail(f"name is too long: {len(attr)} characters (at most {MAX_NAME})", attr_loc)
        base = node.value
        if not isinstance(base, ast.Name):
            self.fail(
                f"attribute `.{attr}` of `{self.segment(base)}` is not allowed: read span.<attribute> or window.<attribute>",
                attr_loc,
            )
        if base.id == "span":
            own, other, other_name = SPAN_ATTRS, {**WINDOW_ATTRS, **TRIGGER_ATTRS}, "window"
        elif base.id == "window":  # the compaction's trigger is the window's in the Python form (`window.event`)
            own, other, other_name = {**WINDOW_ATTRS, **TRIGGER_ATTRS}, SPAN_ATTRS, "span"
        else:
            self.fail(f"unknown name `{base.id[:MAX_NAME]}`: {_ONLY_READS}", base)
        if attr in own:
            return self.make(Attr, attr, loc=self.loc(node))
        if attr in other:
            self.fail(f"`{attr}` is a {other_name} attribute: write {other_name}.{attr}", attr_loc)
        self.fail(
            f"unknown {base.id} attribute `{attr}`{suggestion(attr, own)} ({base.id} attributes: {', '.join(own)})",
            attr_loc,
        )

    def name(self, node: ast.Name):
        name = node.id
        if name in ("span", "window"):
            example = "span.tokens" if name == "span" else "window.window_tokens"
            self.fail(f"`{name}` must be followed by an attribute, e.g. {example}", node)
        if name in SPAN_ATTRS:
            self.fail(f"unknown name `{name}`: write span.{name}", node)
        if name in WINDOW_ATTRS:
            self.fail(f"unknown name `{name}`: write window.{name}", node)
        if name in FUNCTIONS:
            self.fail(f"`{name}` must be called, e.g. {name}(a, b)", node)
        if name in MODULE_CONSTANTS:
            self.fail(f"module constant `{name}` cannot be read inside a policy function", node)
        self.fail(f"unknown name `{name[:MAX_NAME]}`: {_ONLY_READS}", node)

    def compare(self, node: ast.Compare, d: int):
        ops = node.ops
        for op in ops:
            if isinstance(op, (ast.Is, ast.IsNot)):
                self.fail("`is` is not allowed in a policy: use == or !=", node)
        has_in = any(isinstance(op, (ast.In, ast.NotIn)) for op in ops)
        operands = [node.left] + list(node.comparators)
        if has_in:
            if len(ops) != 1:
                self.fail("`in` cannot be chained with another comparison: join them with `and`", node)
            arg = self.expr(node.left, d)
            seq = node.comparators[0]
            if not isinstance(seq, (ast.List, ast.Tuple)):
                self.fail("`in` needs a literal list or tuple, e.g. span.kind in ('record', 'diff')", seq)
            values = []
            for elt in seq.elts:
                value = self.expr(elt, d)
                if not is_literal(value):
                    self.fail("values in an `in` list must be literals: numbers, enum names as strings, True or False", elt)
                values.append(value)
            op_loc = self.gap_loc(node.left, seq)
            if isinstance(ops[0], ast.NotIn):
                i = self.src.index(op_loc.line, 0) + op_loc.col - 1 + 3
                text = self.src.text
                while i < len(text) and text[i] in " \t\f\n\\":
                    i += 1
                in_loc = self.src.loc_at(i)
                inset = self.make(InSet, arg, tuple(values), loc=in_loc, children=(arg,) + tuple(values))
                return self.make(Unary, "not", inset, loc=op_loc, children=(inset,))
            return self.make(InSet, arg, tuple(values), loc=op_loc, children=(arg,) + tuple(values))
        converted = [self.expr(o, d) for o in operands]
        chain = [(_COMPARE[type(op)], self.gap_loc(a, b)) for op, a, b in zip(ops, operands, operands[1:])]
        if len(chain) == 1:
            return self.make(Binary, chain[0][0], converted[0], converted[1], loc=chain[0][1], children=converted)
        return self.b.chain_comparisons(converted, chain)

    def call(self, node: ast.Call, d: int):
        func = node.func
        if isinstance(func, ast.Name):
            fn = func.id
            if fn in AGGREGATES:
                self.fail(f"`{fn}(...)` is written in the YAML or JSON form only: the Python form has no way yet to "
                          "name the counted span", node)
            if fn not in FUNCTIONS:
                self.fail(f"call to `{fn[:MAX_NAME]}` is not allowed in a policy ({_ONLY_CALLS})", node)
        elif isinstance(func, ast.Attribute):
            if isinstance(func.value, ast.Call):
                self.call(func.value, d)  # name the inner call first, as in f(x).g(): f is the one to refuse
            self.fail(f"method call `{self.segment(func)}(...)` is not allowed in a policy ({_ONLY_CALLS})", node)
        else:
            self.expr(func, d)  # name the construct being called, e.g. a lambda
            self.fail("only min, max and abs may be called in a policy", node)
        if node.keywords:
            self.refuse(node.keywords[0], "keyword argument")
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                self.refuse(arg)
        if fn == "abs" and len(node.args) != 1:
            self.fail(f"abs takes exactly one argument, got {len(node.args)}", node)
        if fn in ("min", "max") and len(node.args) < 2:
            self.fail(f"{fn} takes at least two arguments, got {len(node.args)}", node)
        args = tuple(self.expr(a, d) for a in node.args)
        return self.make(Call, fn, args, loc=self.loc(node), children=args)


__all__ = ["CONSTRUCTS", "MODULE_CONSTANTS", "ExpressionReader"]
