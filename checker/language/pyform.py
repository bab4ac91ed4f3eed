"""The restricted-Python policy form: read with ast.parse (which only builds a tree), never executed.

A policy module holds an optional docstring (the description), the constants NAME, BUDGET,
DEPLOYMENT, EXPECT and ACCEPT (literals only; ACCEPT maps a condition to the reason it is accepted), `def evict(span, window):` and optionally
`def rank(span, window):`.  Function bodies are if/elif/else chains of `return <expr>`; an
`if t: return a` followed by the rest of the block becomes Cond(t, a, rest).  Everything else is
refused with a PolicySyntaxError naming the construct at its line and column.
"""

from __future__ import annotations

import ast
import io
import keyword
import math
import re
import tokenize
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Dict, List, Optional, Tuple

from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import (
    ARITH_OPS,
    ATTRS,
    FUNCTIONS,
    NUM,
    SPAN_ATTRS,
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
    children,
)

from prunecheck.checker.language.expr_parser import Builder, is_literal, too_deep_message
from prunecheck.checker.language.printer import to_python
from prunecheck.checker.language.typecheck import MAX_DEPTH, MAX_DIGITS, MAX_NAME, suggestion

MODULE_CONSTANTS = ("NAME", "BUDGET", "DEPLOYMENT", "EXPECT", "ACCEPT")
POLICY_FUNCTIONS = ("evict", "rank")

_ONLY_READS = "a policy may only read span.<attribute> and window.<attribute>"
_ONLY_CALLS = "only min, max and abs may be called"
_CONSTRUCTS = {
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
_ARITH = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_OTHER_BINOPS = {
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.BitAnd: "&",
    ast.MatMult: "@",
}
_COMPARE = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


@dataclass
class PyPolicyParts:
    """What a Python-form module declares, before the loader turns it into a Policy."""

    name: Optional[str] = None
    description: str = ""
    evict: object = None
    rank: object = None
    budget: Optional[int] = None
    # (key, value, key Loc, value Loc) per DEPLOYMENT entry; None when DEPLOYMENT is absent
    deployment: Optional[List[Tuple[str, str, Loc, Loc]]] = None
    expect: Optional[Dict[str, str]] = None
    accept: List[Tuple[str, str, Loc, Loc]] = field(default_factory=list)  # (condition, reason, their Locs)
    evict_loc: Loc = field(default_factory=lambda: Loc(1, 1))
    floats: tuple = ()  # the Num nodes of evict and rank that Python reads as floats (compared by identity)


MAX_BLANKS = 200
_BLANK_RUN = re.compile(r"[ \t\f\v]{%d,}" % (MAX_BLANKS + 1))


class _Source:
    """Line table for converting ast's (line, UTF-8 byte column) positions to 1-based character columns."""

    def __init__(self, text: str):
        self.text = text
        self.lines = text.split("\n")
        self._columns = {}  # line number -> byte offset -> character offset, for non-ASCII lines
        self.starts = []
        pos = 0
        for line in self.lines:
            self.starts.append(pos)
            pos += len(line) + 1

    def charcol(self, lineno: int, byte_col: int) -> int:
        if not 1 <= lineno <= len(self.lines):
            return max(byte_col, 0)
        line = self.lines[lineno - 1]
        if line.isascii():
            return byte_col
        if lineno not in self._columns:
            table = []
            for index, ch in enumerate(line):
                table.extend([index] * len(ch.encode("utf-8", "surrogatepass")))
            table.append(len(line))
            self._columns[lineno] = table
        table = self._columns[lineno]
        return table[min(max(byte_col, 0), len(table) - 1)]

    def loc(self, lineno, byte_col) -> Loc:
        lineno = lineno or 1
        return Loc(lineno, self.charcol(lineno, byte_col or 0) + 1)

    def index(self, lineno, byte_col) -> int:
        if not 1 <= lineno <= len(self.lines):
            return len(self.text)
        return self.starts[lineno - 1] + self.charcol(lineno, byte_col)

    def segment(self, node) -> str:
        """The node's source text, like ast.get_source_segment but without re-splitting the file per call."""
        end_line, end_col = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
        if end_line is None or end_col is None:
            return ""
        return self.text[self.index(node.lineno, node.col_offset): self.index(end_line, end_col)]

    def loc_at(self, index: int) -> Loc:
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= index:
                lo = mid
            else:
                hi = mid - 1
        return Loc(lo + 1, index - self.starts[lo] + 1)


_RUN_CLASSES = {  # operator -> binding rank; a run of one rank at one bracket level is a left-deep chain
    "or": 1,
    "and": 2,
    **{op: 3 for op in ("<", "<=", ">", ">=", "==", "!=", "in", "is")},
    **{op: 4 for op in ("|", "^", "&", "<<", ">>")},
    "+": 5,
    "-": 5,
    **{op: 6 for op in ("*", "/", "//", "%", "@")},
    "**": 7,
    "trailer": 8,  # .name, (call), [subscript] after an operand
}
_SEPARATORS = frozenset((",", ":", ";", "=", ":=", "if", "else", "lambda", "not", "for", "yield", "return", "assert"))
_OPERAND_TYPES = (tokenize.NAME, tokenize.NUMBER, tokenize.STRING)


def _prescan(text: str, file: str) -> Loc:
    """Bound nesting before ast.parse: brackets, indentation, prefix-operator runs, operator chains.

    Returns the position of the logical line with the most operators (where to blame a parser
    RecursionError/MemoryError).  Tokenizer errors are left for ast.parse to report.
    """
    indent = run = inline_ifs = ops = 0
    levels = [{}]  # per open bracket: rank -> length of the current operator chain
    worst_ops, worst = -1, Loc(1, 1)
    line_start = None
    after_operand = False

    def fail(message, start):
        raise PolicySyntaxError(message, file, start[0], start[1] + 1)

    def chain(rank, start):
        counts = levels[-1]
        for r in [r for r in counts if r > rank]:
            del counts[r]
        counts[rank] = counts.get(rank, 0) + 1
        if counts[rank] > MAX_DEPTH:
            fail(too_deep_message(), start)

    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            kind, string, start = tok.type, tok.string, tok.start
            if kind in (tokenize.NL, tokenize.COMMENT):
                continue
            if line_start is None and kind not in (tokenize.INDENT, tokenize.DEDENT):
                line_start = start
            is_op = kind == tokenize.OP or (kind == tokenize.NAME and keyword.iskeyword(string))
            if kind == tokenize.INDENT:
                indent += 1
                if indent > MAX_DEPTH:
                    fail(f"too many levels of indentation (more than {MAX_DEPTH})", start)
            elif kind == tokenize.DEDENT:
                indent -= 1
            elif is_op and string in "([{":
                if after_operand:
                    chain(_RUN_CLASSES["trailer"], start)
                levels.append({})
                if len(levels) - 1 > MAX_DEPTH:
                    fail(f"too many nested brackets (more than {MAX_DEPTH})", start)
            elif is_op and string in ")]}":
                if len(levels) > 1:
                    levels.pop()
            elif is_op and string == ".":
                chain(_RUN_CLASSES["trailer"], start)
            elif is_op and string in _RUN_CLASSES and (after_operand or string not in ("+", "-")):
                chain(_RUN_CLASSES[string], start)
            elif is_op and string in _SEPARATORS:
                levels[-1].clear()
            if is_op and string in ("not", "-", "+", "~") and not after_operand:
                run += 1
                if run > MAX_DEPTH:
                    fail(f"too many consecutive unary operators (more than {MAX_DEPTH})", start)
            elif kind not in (tokenize.INDENT, tokenize.DEDENT):
                run = 0
            if is_op and string == "if":
                inline_ifs += 1
                if inline_ifs > MAX_DEPTH:
                    fail(f"too many conditional expressions in one statement (more than {MAX_DEPTH})", start)
            if is_op and string not in "()[]{},:;":
                ops += 1
            after_operand = (kind in _OPERAND_TYPES and not is_op) or (is_op and string in ")]}") or string in (
                "True",
                "False",
                "None",
            )
            if kind in (tokenize.NEWLINE, tokenize.ENDMARKER):
                if ops > worst_ops and line_start is not None:
                    worst_ops, worst = ops, Loc(line_start[0], line_start[1] + 1)
                ops = inline_ifs = 0
                line_start = None
                levels = [{}]
                after_operand = False
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass
    return worst


def parse_module(text: str, file: str):
    """ast.parse the policy text with every failure turned into a PolicySyntaxError; returns (tree, source)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    src = _Source(text)
    for number, line in enumerate(src.lines, start=1):
        # Python 3.11's pure-Python tokenizer rescans a run of blanks once per blank: bound the runs first.
        run = _BLANK_RUN.search(line, len(line) - len(line.lstrip(" \t\f\v")))
        if run:
            raise PolicySyntaxError(f"a run of more than {MAX_BLANKS} blanks", file, number, run.start() + 1)
    worst = _prescan(text, file)
    try:
        with warnings.catch_warnings():  # e.g. SyntaxWarning for `1if`: policies are not run, stay quiet
            warnings.simplefilter("ignore")
            # A name no file can have: on a SyntaxError CPython re-opens `filename` to quote the line.
            tree = ast.parse(text, filename="<policy>", mode="exec")
    except SyntaxError as exc:  # includes IndentationError and TabError
        line = exc.lineno or 1
        col = exc.offset if exc.offset and exc.offset > 0 else 1
        raise PolicySyntaxError(f"invalid Python: {exc.msg}", file, line, col) from None
    except (RecursionError, MemoryError):
        raise PolicySyntaxError(
            "policy is nested too deeply or is too large to parse", file, worst.line, worst.col
        ) from None
    except ValueError as exc:
        raise PolicySyntaxError(f"invalid Python: {exc}", file, 1, 1) from None
    return tree, src


class _Converter:
    def __init__(self, src: _Source, file: str):
        self.src = src
        self.file = file
        self.b = Builder(file)
        self.fn = "evict"
        self.reached = {}  # id -> statement list that some path falls through into (kept alive)
        self.floats = []  # the Nums read from float literals (by identity: Num(2) from `2.0` is a float)

    # -- positions and errors
    def loc(self, node) -> Loc:
        return self.src.loc(getattr(node, "lineno", 1), getattr(node, "col_offset", 0))

    def fail(self, message, where):
        loc = where if isinstance(where, Loc) else self.loc(where)
        raise PolicySyntaxError(message, self.file, loc.line, loc.col)

    def refuse(self, node, what: Optional[str] = None):
        what = what or _CONSTRUCTS.get(type(node).__name__, type(node).__name__)
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

    # -- module
    def module(self, tree: ast.Module) -> PyPolicyParts:
        parts = PyPolicyParts()
        seen: Dict[str, int] = {}
        body = list(tree.body)
        if body and _is_docstring(body[0]):
            parts.description = ast.get_docstring(tree) or ""
            body = body[1:]
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef):
                if stmt.name not in POLICY_FUNCTIONS:
                    self.fail(
                        f"function `{stmt.name[:MAX_NAME]}` is not allowed in a policy (only evict and rank)"
                        f"{suggestion(stmt.name, POLICY_FUNCTIONS)}",
                        stmt,
                    )
                self.once(seen, stmt.name, stmt)
                expr = self.function(stmt)
                if stmt.name == "evict":
                    parts.evict, parts.evict_loc = expr, self.loc(stmt)
                else:
                    parts.rank = expr
            elif isinstance(stmt, ast.Assign):
                self.constant(stmt, parts, seen)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                self.fail("a string here is not allowed in a policy (only the module docstring may be a bare string)", stmt)
            elif isinstance(stmt, ast.Expr):
                self.expr(stmt.value, 1)  # name the inner construct if it is refused
                self.refuse(stmt)
            else:
                self.refuse(stmt, _module_construct(stmt))
        if parts.evict is None:
            raise PolicySyntaxError("policy defines no `def evict(span, window):`", self.file, 1, 1)
        parts.floats = tuple(self.floats)
        return parts

    def once(self, seen, key, node):
        if key in seen:
            self.fail(f"`{key}` is defined twice (first at line {seen[key]})", node)
        seen[key] = node.lineno

    def constant(self, stmt: ast.Assign, parts: PyPolicyParts, seen) -> None:
        if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
            self.refuse(stmt, "assignment other than NAME, BUDGET, DEPLOYMENT, EXPECT or ACCEPT = <literal>")
        name = stmt.targets[0].id
        if name not in MODULE_CONSTANTS:
            self.fail(
                f"module-level assignment to `{name[:MAX_NAME]}` is not allowed "
                f"(allowed: {', '.join(MODULE_CONSTANTS)}){suggestion(name, MODULE_CONSTANTS)}",
                stmt.targets[0],
            )
        self.once(seen, name, stmt)
        value = stmt.value
        if name == "NAME":
            if not (isinstance(value, ast.Constant) and isinstance(value.value, str)) or not value.value.strip():
                self.fail("NAME must be a non-empty string literal", value)
            parts.name = value.value
        elif name == "BUDGET":
            if not (isinstance(value, ast.Constant) and type(value.value) is int) or value.value < 1:
                self.fail("BUDGET must be a whole number literal >= 1", value)
            if value.value >= 10**MAX_DIGITS:
                self.fail(f"BUDGET is too large: at most {MAX_DIGITS} digits", value)
            parts.budget = value.value
        elif name == "DEPLOYMENT":
            parts.deployment = [(k, v, kl, vl) for k, v, kl, vl in self.string_dict(value, name)]
        elif name == "ACCEPT":
            parts.accept = self.string_dict(value, name)
        else:
            parts.expect = {k: v for k, v, _, _ in self.string_dict(value, name)}

    def string_dict(self, value, name):
        if not isinstance(value, ast.Dict):
            self.fail(f"{name} must be a dict literal of strings", value)
        out, keys = [], {}
        for key, val in zip(value.keys, value.values):
            if key is None:
                self.fail(f"`**` unpacking is not allowed in {name}", val)
            for part in (key, val):
                if not (isinstance(part, ast.Constant) and isinstance(part.value, str)):
                    self.fail(f"{name} keys and values must be string literals", part)
            if key.value in keys:
                self.fail(f"duplicate key `{key.value}` in {name} (first at line {keys[key.value]})", key)
            keys[key.value] = key.lineno
            out.append((key.value, val.value, self.loc(key), self.loc(val)))
        return out

    # -- functions and statements
    def function(self, fn: ast.FunctionDef):
        self.fn = fn.name
        if fn.decorator_list:
            self.refuse(fn.decorator_list[0], "decorator")
        args = fn.args
        if args.posonlyargs:
            self.refuse(args.posonlyargs[0], "positional-only parameter")
        if args.vararg:
            self.refuse(args.vararg, "*args")
        if args.kwonlyargs:
            self.refuse(args.kwonlyargs[0], "keyword-only parameter")
        if args.kwarg:
            self.refuse(args.kwarg, "**kwargs")
        if args.defaults:
            self.refuse(args.defaults[0], "default argument")
        for arg in args.args:
            if arg.annotation is not None:
                self.refuse(arg.annotation, "annotation")
        if fn.returns is not None:
            self.refuse(fn.returns, "return annotation")
        if [a.arg for a in args.args] != ["span", "window"]:
            self.fail(f"{fn.name} must be declared as `def {fn.name}(span, window):`", fn)
        body = list(fn.body)
        if body and _is_docstring(body[0]):
            body = body[1:]
        if not body:
            self.fail(f"{fn.name} must return a value", fn)
        return self.block(body, None, 1, lambda: self.fail(f"{fn.name} must return a value", fn))

    def block(self, stmts, cont, depth: int, fall):
        """The value a statement list returns, as one expression.

        cont is what runs when stmts end without returning (Python's fall-through out of an if
        branch): None, or (statements, cont) of the enclosing block.  fall raises the error for a
        path that runs off the end of the function; it belongs to the innermost `if` that let it.
        """
        if not stmts:
            if cont is None:
                fall()
            following, outer = cont
            self.reached[id(following)] = following
            return self.block(following, outer, depth, fall)
        stmt, rest = stmts[0], stmts[1:]
        if depth > MAX_DEPTH:
            self.fail(too_deep_message(), stmt)
        if isinstance(stmt, ast.Return):
            if stmt.value is None:
                self.fail(f"bare return: {self.fn} must return a value", stmt)
            if rest:
                self.fail("unreachable code after return", rest[0])
            return self.expr(stmt.value, depth)
        if isinstance(stmt, ast.If):
            fn, test_text = self.fn, self.segment(stmt.test)
            after = (rest, cont)

            def else_fall():
                self.fail(
                    f"{fn} does not return a value when `{test_text}` is false: add an else branch or a final return",
                    stmt,
                )

            test = self.expr(stmt.test, depth + 1)
            then = self.block(stmt.body, after, depth + 1, fall)
            if stmt.orelse:
                orelse = self.block(stmt.orelse, after, depth + 1, fall)
            else:
                self.reached[id(rest)] = rest
                orelse = self.block(rest, cont, depth + 1, else_fall)
            if rest and id(rest) not in self.reached:
                self.fail("unreachable code: every branch of the if above returns", rest[0])
            return self.make(Cond, test, then, orelse, loc=self.loc(stmt), children=(test, then, orelse))
        if isinstance(stmt, ast.Pass):
            self.fail("pass is not allowed in a policy: every path must return a value", stmt)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.decorator_list:
            self.refuse(stmt.decorator_list[0], "decorator")
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, (ast.Lambda, ast.NamedExpr, ast.Call, ast.JoinedStr)):
            self.expr(stmt.value, depth)  # name the inner construct if it is refused
        self.refuse(stmt)

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
            own, other, other_name = SPAN_ATTRS, WINDOW_ATTRS, "window"
        elif base.id == "window":
            own, other, other_name = WINDOW_ATTRS, SPAN_ATTRS, "span"
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


# --------------------------------------------------------------------------- CPython's numeric types
# Under the host contract (README, "What a Python-form policy means") integer attributes are int, recency and frequency are
# fractions.Fraction, and a float literal is a float.  int and Fraction arithmetic is exact in CPython, and
# so are comparisons, min, max, abs and negation of any of the three; everything else below is refused.

INT, FRACTION, FLOAT = "int", "Fraction", "float"
_NONE, _INT, _FRACTION, _FLOAT = frozenset(), frozenset((INT,)), frozenset((FRACTION,)), frozenset((FLOAT,))
FRACTION_ATTRS = ("recency", "frequency")
_CROSS = "compare cross-multiplied integers instead (a * d < c * b)"
_SCALE = "scale by an integer instead, e.g. `4 * span.age < 3 * span.tokens`, not `span.age < 0.75 * span.tokens`"


class _NumericTypes:
    """The set of CPython types each numeric subexpression can have; refuses every rounded-float operator."""

    def __init__(self, floats, file: str):
        self.nums = tuple(floats)
        self.floats = {id(num) for num in self.nums}
        self.file = file

    def fail(self, message: str, node) -> None:
        loc = node.loc
        raise PolicySyntaxError(message, self.file, max(loc.line, 1), max(loc.col, 1))

    def types(self, node) -> frozenset:
        if isinstance(node, Num):
            return _FLOAT if id(node) in self.floats else _INT
        if isinstance(node, Attr):
            if ATTRS.get(node.name, (None,))[0] != NUM:
                return _NONE
            return _FRACTION if node.name in FRACTION_ATTRS else _INT
        if isinstance(node, Binary) and node.op in ARITH_OPS:
            return self.arith(node, self.types(node.left), self.types(node.right))
        if isinstance(node, Cond):
            self.types(node.test)
            return self.types(node.then) | self.types(node.orelse)
        found = [self.types(child) for child in children(node)]
        if isinstance(node, Call) or (isinstance(node, Unary) and node.op == "-"):
            return frozenset().union(*found)  # min/max return an operand; abs and minus keep the type
        return _NONE  # comparisons, in, not, and, or: exact in CPython, and bool

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
            checker.types(expr)


def _is_docstring(stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _module_construct(stmt) -> str:
    name = type(stmt).__name__
    if name == "FunctionDef":
        return "function definition"
    if name == "If":
        return "if statement at module level"
    if name == "Return":
        return "return outside a function"
    return _CONSTRUCTS.get(name, name)


def parse_python_policy(text: str, file: str = "<policy>") -> PyPolicyParts:
    """Read a restricted-Python policy module into its parts (expressions are not type checked here)."""
    tree, src = parse_module(text, file)
    return _Converter(src, file).module(tree)


def python_expect(text: str, file: str = "<policy>") -> Dict[str, str]:
    """The module-level EXPECT literal of a Python-form policy ({} when absent), without checking the rest."""
    tree, src = parse_module(text, file)
    conv = _Converter(src, file)
    found: Dict[str, str] = {}
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == "EXPECT"
        ):
            found = {k: v for k, v, _, _ in conv.string_dict(stmt.value, "EXPECT")}
    return found


__all__ = [
    "PyPolicyParts",
    "parse_python_policy",
    "python_expect",
    "parse_module",
    "check_python_arithmetic",
    "MODULE_CONSTANTS",
]
