"""Type checking of the policy AST: the type of every expression, divisions, budget use and bounds."""

from __future__ import annotations

from typing import Optional

from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import (
    AGGREGATES,
    ATTRS,
    BOOL,
    CALLABLE,
    OWN_ATTRS,
    WHOLE_OPS,
    Num,
    is_aggregate,
    outer_subexpressions,
    window_aggregate,
    ENUM_VALUES,
    FUNCTIONS,
    KIND,
    NAMESPACE,
    NUM,
    ORDERS,
    NAME_TYPED,
    TRIGGER_ATTRS,
    ROLE,
    SPAN_ATTRS,
    WINDOW_ATTRS,
    Attr,
    Cond,
    Deployment,
    EnumLit,
    InSet,
    Policy,
    name_problem,
    subexpressions,
)
from prunecheck.spec.walker import Walker

from prunecheck.checker.language.bounds import (
    MAX_DEPTH,
    MAX_DIGITS,
    MAX_FILE_BYTES,
    MAX_NAME,
    MAX_NODES,
    check_bounds,
    closest,
    count_nodes,
    fail_at,
    shown,
    suggestion,
)
from prunecheck.checker.language.builder import is_literal
from prunecheck.checker.language.intervals import ARITH, interval_of, is_whole, refuse_zero_divisors

ORDER = ("<", "<=", ">", ">=")
EQUALITY = ("==", "!=")
CONNECTIVES = ("and", "or")
_ENUMS = (KIND, NAMESPACE, ROLE)


# --------------------------------------------------------------------------- types


def _context_typed(node) -> bool:
    """True for expressions whose type comes from what they are compared with (enum literals)."""
    if isinstance(node, EnumLit):
        return True
    if isinstance(node, Cond):
        return _context_typed(node.then) and _context_typed(node.orelse)
    return False


class _Checker(Walker):
    """The type of each expression, given the type its context expects (which types enum literals)."""

    def __init__(self, file: str, has_budget: bool):
        self.file = file
        self.has_budget = has_budget

    def fail(self, message, node):
        fail_at(message, node, self.file)

    def check(self, node, expected: str, what: str = "expression") -> None:
        got = self.infer(node, expected)
        if got != expected:
            self.fail(f"{what} must be {_article(expected)}, got {got} `{shown(node)}`", node)

    def enum(self, node: EnumLit, enum_type: str) -> str:
        allowed = ENUM_VALUES[enum_type]
        if not isinstance(node.value, str) or node.value not in allowed:
            hint = suggestion(str(node.value), allowed)
            self.fail(f"'{node.value}' is not a {enum_type} (one of {', '.join(allowed)}){hint}", node)
        return enum_type

    def infer(self, node, expected: Optional[str] = None) -> str:
        return self.visit(node, expected)

    def num(self, node, expected) -> str:
        return NUM

    def bool_lit(self, node, expected) -> str:
        if not isinstance(node.value, bool):
            self.fail("boolean literal must be true or false", node)
        return BOOL

    def enum_lit(self, node, expected) -> str:
        if expected in _ENUMS:
            return self.enum(node, expected)
        if expected is None:
            self.fail(f"'{node.value}' must be compared with kind or namespace (e.g. kind == '{node.value}')", node)
        self.fail(f"enum name '{node.value}' used where {_article(expected)} is expected", node)

    def attr(self, node, expected) -> str:
        entry = ATTRS.get(node.name)
        if entry is None:
            self.fail(f"unknown attribute `{node.name}`{suggestion(str(node.name), ATTRS)}", node)
        if node.name in NAME_TYPED:  # reached only outside a comparison with string literals (see names)
            self.fail(f"`{node.name}` can only be compared with a string: {node.name} == 'name', "
                      f"{node.name} != 'name' or {node.name} in ['a', 'b']", node)
        if node.name == "budget" and not self.has_budget:
            self.fail("`budget` is referenced but the policy sets no budget (add `budget: <tokens>`)", node)
        return entry[0]

    def unary(self, node, expected) -> str:
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

    def unknown(self, node, expected) -> str:
        self.fail(f"not a policy expression: {type(node).__name__}", node)

    def binary(self, node, expected) -> str:
        op = node.op
        if op in ARITH or op in ORDER:
            for side in (node.left, node.right):
                got = self.infer(side, NUM)
                if got != NUM:
                    self.fail(f"cannot apply {op} to {got}", node)
            if op == "/":
                refuse_zero_divisors(node, self.file)
            if op in WHOLE_OPS:
                self.whole_operands(node)
            return NUM if op in ARITH else BOOL
        if op in CONNECTIVES:
            for side in (node.left, node.right):
                got = self.infer(side, BOOL)
                if got != BOOL:
                    self.fail(f"cannot apply {op} to {got}", node)
            return BOOL
        if op in EQUALITY and (_is_name(node.left) or _is_name(node.right)):
            return self.names(node, (node.right,) if _is_name(node.left) else (node.left,))
        if op in EQUALITY:
            left_ctx, right_ctx = _context_typed(node.left), _context_typed(node.right)
            if left_ctx and right_ctx:
                self.fail(
                    f"cannot compare two enum names (`{shown(node.left)}` {op} `{shown(node.right)}`); "
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
            self.fail(f"cannot compare {other_type} with enum name `{shown(ctx_node)}`", parent)
        self.infer(ctx_node, other_type)

    def names(self, node, literals) -> str:
        """A tool name or tag compared with string literals (any names: an open enumeration, spec/SPEC.md 1c)."""
        for value in literals:
            if not isinstance(value, EnumLit):
                attr = node.arg if isinstance(node, InSet) else node.left if _is_name(node.left) else node.right
                self.fail(f"`{shown(node)}`: a {attr.name} is compared with a string, got `{shown(value)}`", value)
            problem = name_problem(value.value)
            if problem:
                self.fail(problem, value)
        return BOOL

    def in_set(self, node, expected) -> str:
        if _is_name(node.arg) and node.values:
            return self.names(node, node.values)
        if _context_typed(node.arg):
            self.fail("the left side of `in` must be an attribute or expression, not an enum name", node)
        arg_type = self.infer(node.arg)
        if not node.values:
            self.fail("`in` needs at least one value in its list", node)
        for value in node.values:
            if not is_literal(value):
                self.fail(f"values in an `in` list must be literals, got `{shown(value)}`", value)
            if isinstance(value, EnumLit):
                if arg_type not in _ENUMS:
                    self.fail(f"cannot test {arg_type} for membership of enum name '{value.value}'", value)
                self.enum(value, arg_type)
            else:
                got = self.infer(value)
                if got != arg_type:
                    self.fail(f"`in` list mixes {arg_type} with {got} `{shown(value)}`", value)
        return BOOL

    def whole_operands(self, node) -> None:
        """`a // k` and `a % k` (SPEC §1d): k a whole-number literal >= 1, a a whole number in every state."""
        right = node.right
        if not (isinstance(right, Num) and right.value.denominator == 1 and right.value >= 1):
            self.fail(f"the right side of {node.op} must be a whole number >= 1 written as a literal, got "
                      f"`{shown(right)}`", right)
        if not is_whole(node.left):
            self.fail(f"the left side of {node.op} must be a whole number (counts, tokens, ages and whole literals, "
                      f"with + - * // % min max abs), got `{shown(node.left)}`", node.left)

    def call(self, node, expected) -> str:
        if node.fn in AGGREGATES:
            return self.aggregate(node)
        if node.fn not in FUNCTIONS:
            self.fail(f"unknown function `{node.fn}`{suggestion(str(node.fn), CALLABLE)}", node)
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

    def aggregate(self, node) -> str:
        """An aggregate (SPEC §1e): one condition on the counted span's own attributes."""
        if len(node.args) != 1:
            self.fail(f"{node.fn} takes exactly one argument, a condition on the counted span, got {len(node.args)}",
                      node)
        for inner in subexpressions(node.args[0]):
            if isinstance(inner, Attr) and inner.name in ATTRS and inner.name not in OWN_ATTRS:
                self.fail(f"inside {node.fn}(...) only the counted span's own attributes may be read "
                          f"({', '.join(OWN_ATTRS)}), not `{inner.name}`", inner)
            if is_aggregate(inner) and inner is not node:
                self.fail(f"an aggregate cannot be nested inside {node.fn}(...)", inner)
        got = self.infer(node.args[0], BOOL)
        if got != BOOL:
            self.fail(f"the argument of {node.fn} must be a condition (a bool), got {got} `{shown(node.args[0])}`",
                      node.args[0])
        return NUM

    def cond(self, node, expected: Optional[str]) -> str:
        got = self.infer(node.test, BOOL)
        if got != BOOL:
            self.fail(f"condition must be bool, got {got} `{shown(node.test)}`", node.test)
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


def _is_name(node) -> bool:
    """node is the attribute `tool`, `tag` or `event`."""
    return isinstance(node, Attr) and node.name in NAME_TYPED


def _article(t: str) -> str:
    return {BOOL: "a bool", NUM: "a number", KIND: "a kind", NAMESPACE: "a namespace", ROLE: "a role"}.get(t, t)


def type_of(expr, file: str = "<policy>", *, has_budget: bool = True, expected: Optional[str] = None) -> str:
    """The type (BOOL, NUM, KIND, NAMESPACE or ROLE) of expr; raises PolicySyntaxError on any type or bound error."""
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
    for st in policy.stages:  # each stage as a policy of one stage (SPEC §4h)
        check_parts(st.evict, st.rank, budget=st.budget, file=file)
        check_stage(st, file)
    return policy


def check_stage(policy: Policy, file: str) -> None:
    """The compaction stage's keys: keep is a span condition; when and until are conditions on the window alone (they
    are evaluated once per compaction, not per span); order is oldest or newest, and only without a rank; start_on is
    a role."""
    check_bounds([policy.keep, policy.when, policy.until], file)
    checker = _Checker(file, policy.budget is not None)
    for key in ("evict", "rank", "keep", "until"):
        for node in subexpressions(getattr(policy, key)) if getattr(policy, key) is not None else ():
            if isinstance(node, Attr) and node.name in TRIGGER_ATTRS:
                fail_at(f"`{node.name}` is what the host tells a compaction it fires: read it in `when`, not in "
                        f"`{key}`", node, file)
    if policy.keep is not None:
        checker.check(policy.keep, BOOL, "keep")
    for key in ("when", "until"):
        expr = getattr(policy, key)
        if expr is None:
            continue
        for node in outer_subexpressions(expr):
            if isinstance(node, Attr) and node.name in SPAN_ATTRS:
                fail_at(f"`{key}` may only read window attributes ({', '.join(WINDOW_ATTRS)}), not the span "
                        f"attribute `{node.name}`", node, file)
            if is_aggregate(node) and not window_aggregate(node):
                fail_at(f"`{key}` may only read the window's aggregates (count, tokens_of), not `{node.fn}`, which "
                        "counts from a span", node, file)
            if is_aggregate(node) and key == "until":
                fail_at("`until` cannot read an aggregate: the walk tracks only window_tokens and window_spans as "
                        "it takes spans (use `when` for a trigger on counts)", node, file)
        checker.check(expr, BOOL, key)
    if policy.order not in ORDERS:
        raise PolicySyntaxError(f"order must be one of {', '.join(ORDERS)}, got {str(policy.order)[:40]!r}", file, 1, 1)
    if policy.order != "oldest" and policy.rank is not None:
        raise PolicySyntaxError(ORDER_WITH_RANK, file, 1, 1)
    if policy.start_on is not None and policy.start_on not in ENUM_VALUES[ROLE]:
        raise PolicySyntaxError(f"start_on must be a role, got {str(policy.start_on)[:40]!r}", file, 1, 1)


ORDER_WITH_RANK = "`order` cannot be combined with `rank`: a rank orders the candidates (ties oldest first)"


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
