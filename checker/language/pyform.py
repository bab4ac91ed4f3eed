"""The restricted-Python policy form: read with ast.parse (which only builds a tree), never executed.

A policy module holds an optional docstring (the description), the constants NAME, BUDGET, EFFECT,
PLACEHOLDER_TOKENS, PAIRS, START_ON, ORDER, DEPLOYMENT, EXPECT and ACCEPT (literals only; ACCEPT maps a condition to the reason it is accepted), `def evict(span, window):` and optionally
`def rank(span, window):`.  Function bodies are if/elif/else chains of `return <expr>`; an
`if t: return a` followed by the rest of the block becomes Cond(t, a, rest).  Everything else is
refused with a PolicySyntaxError naming the construct at its line and column.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import EFFECTS, ORDERS, PAIRS, ROLES, SIZED, SUMMARY_AT, SUMMARY_ROLES, Cond, Loc

# The module constants whose value is one string of a fixed set, and that set.
CHOICES = {"EFFECT": EFFECTS, "SUMMARY_ROLE": SUMMARY_ROLES, "SUMMARY_AT": SUMMARY_AT, "PAIRS": PAIRS, "START_ON": ROLES,
           "ORDER": ORDERS}

from prunecheck.checker.language.bounds import MAX_DEPTH, MAX_DIGITS, MAX_NAME, suggestion
from prunecheck.checker.language.builder import too_deep_message
from prunecheck.checker.language.typecheck import ORDER_WITH_RANK
from prunecheck.checker.language.pyarith import check_python_arithmetic
from prunecheck.checker.language.pyexpr import CONSTRUCTS, MODULE_CONSTANTS, ExpressionReader
from prunecheck.checker.language.pyscan import PythonSource, parse_module

POLICY_FUNCTIONS = ("evict", "rank", "keep", "when", "until")
WINDOW_FUNCTIONS = ("when", "until")  # the compaction stage's window conditions: `def when(window):`


@dataclass
class PyPolicyParts:
    """What a Python-form module declares, before the loader turns it into a Policy."""

    name: Optional[str] = None
    description: str = ""
    evict: object = None
    rank: object = None
    keep: object = None
    when: object = None
    until: object = None
    order: Optional[str] = None  # ORDER's value; None when absent
    order_loc: Loc = field(default_factory=lambda: Loc(1, 1))
    budget: Optional[int] = None
    effect: str = "evict"
    placeholder_tokens: int = 1
    summary_role: str = "user"
    summary_at: str = "replaced"
    pairs: str = "apart"
    start_on: Optional[str] = None  # START_ON's role; None when absent
    # (key, value, key Loc, value Loc) per DEPLOYMENT entry; None when DEPLOYMENT is absent
    deployment: Optional[List[Tuple[str, str, Loc, Loc]]] = None
    expect: Optional[List[Tuple[str, str, Loc, Loc]]] = None  # (condition, verdict, their Locs) per EXPECT entry
    accept: List[Tuple[str, str, Loc, Loc]] = field(default_factory=list)  # (condition, reason, their Locs)
    evict_loc: Loc = field(default_factory=lambda: Loc(1, 1))
    floats: tuple = ()  # the Num nodes of evict and rank that Python reads as floats (compared by identity)


class _Converter(ExpressionReader):
    """A whole policy module: its constants, and each function's if/return chain as one expression."""

    def __init__(self, src: PythonSource, file: str):
        super().__init__(src, file)
        self.reached = {}  # id -> statement list that some path falls through into (kept alive)

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
                        f"function `{stmt.name[:MAX_NAME]}` is not allowed in a policy "
                        f"(only {', '.join(POLICY_FUNCTIONS)})"
                        f"{suggestion(stmt.name, POLICY_FUNCTIONS)}",
                        stmt,
                    )
                self.once(seen, stmt.name, stmt)
                expr = self.function(stmt)
                if stmt.name == "evict":
                    parts.evict, parts.evict_loc = expr, self.loc(stmt)
                else:
                    setattr(parts, stmt.name, expr)
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
        if parts.order is not None and parts.rank is not None:
            raise PolicySyntaxError(ORDER_WITH_RANK, self.file, parts.order_loc.line, parts.order_loc.col)
        if "PLACEHOLDER_TOKENS" in seen and parts.effect not in SIZED:
            raise PolicySyntaxError('PLACEHOLDER_TOKENS is only for EFFECT = "mask", "cut" or "summarise"', self.file,
                                    seen["PLACEHOLDER_TOKENS"], 1)
        for key in ("SUMMARY_ROLE", "SUMMARY_AT"):
            if key in seen and parts.effect != "summarise":
                raise PolicySyntaxError(f'{key} is only for EFFECT = "summarise"', self.file, seen[key], 1)
        parts.floats = tuple(self.floats)
        return parts

    def once(self, seen, key, node):
        if key in seen:
            self.fail(f"`{key}` is defined twice (first at line {seen[key]})", node)
        seen[key] = node.lineno

    def constant(self, stmt: ast.Assign, parts: PyPolicyParts, seen) -> None:
        if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
            self.refuse(stmt, "assignment other than NAME, BUDGET, EFFECT, PLACEHOLDER_TOKENS, SUMMARY_ROLE, SUMMARY_AT, "
                        "PAIRS, START_ON, ORDER, DEPLOYMENT, EXPECT or ACCEPT = <literal>")
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
        elif name in ("BUDGET", "PLACEHOLDER_TOKENS"):
            setattr(parts, name.lower(), self.whole(value, name))
        elif name in CHOICES:
            choices = CHOICES[name]
            if not (isinstance(value, ast.Constant) and value.value in choices):
                self.fail(f"{name} must be one of {', '.join(map(repr, choices))}", value)
            setattr(parts, name.lower(), value.value)
            if name == "ORDER":
                parts.order_loc = self.loc(value)
        elif name == "DEPLOYMENT":
            parts.deployment = [(k, v, kl, vl) for k, v, kl, vl in self.string_dict(value, name)]
        elif name == "ACCEPT":
            parts.accept = self.string_dict(value, name)
        else:
            parts.expect = self.string_dict(value, name)

    def whole(self, value, name: str) -> int:
        if not (isinstance(value, ast.Constant) and type(value.value) is int) or value.value < 1:
            self.fail(f"{name} must be a whole number literal >= 1", value)
        if value.value >= 10**MAX_DIGITS:
            self.fail(f"{name} is too large: at most {MAX_DIGITS} digits", value)
        return value.value

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
        params = ["window"] if fn.name in WINDOW_FUNCTIONS else ["span", "window"]
        if [a.arg for a in args.args] != params:
            self.fail(f"{fn.name} must be declared as `def {fn.name}({', '.join(params)}):`", fn)
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
    return CONSTRUCTS.get(name, name)


def parse_python_policy(text: str, file: str = "<policy>") -> PyPolicyParts:
    """Read a restricted-Python policy module into its parts (expressions are not type checked here)."""
    tree, src = parse_module(text, file)
    return _Converter(src, file).module(tree)


def python_expect(text: str, file: str = "<policy>") -> List[Tuple[str, str, Loc, Loc]]:
    """The module-level EXPECT literal of a Python-form policy, (condition, verdict, their Locs) per entry ([] when
    absent), without checking the rest."""
    tree, src = parse_module(text, file)
    conv = _Converter(src, file)
    found: List[Tuple[str, str, Loc, Loc]] = []
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == "EXPECT"
        ):
            found = conv.string_dict(stmt.value, "EXPECT")
    return found


__all__ = [  # parse_module and check_python_arithmetic are the reader's steps, kept here for its callers
    "PyPolicyParts",
    "parse_python_policy",
    "python_expect",
    "parse_module",
    "check_python_arithmetic",
    "MODULE_CONSTANTS",
]
