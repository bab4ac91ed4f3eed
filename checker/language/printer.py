"""Canonical text of a policy expression in the YAML mini-language; it re-parses to an equal AST."""

from __future__ import annotations

from fractions import Fraction

from prunecheck.spec.policy import (
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
    Num,
    Unary,
)
from prunecheck.spec.walker import Walker
from prunecheck.spec.errors import EncodingError

# Binding strength, loosest first (mirrors checker/language/expr_parser.py).
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
    "//": P_MUL,
    "%": P_MUL,
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


def python_number_text(value) -> str:
    """A Python literal with exactly this value: `7`, `0.25`, `0.1` (the double 3602879701896397/2**55), `(-2.5)`.

    A non-integer prints as the repr of its double, which CPython reads back to the same double; a value no
    double equals (1/10, 1/3) has no such literal and raises ValueError rather than print a different number.
    """
    value = Fraction(value)
    if value < 0:
        return f"(-{python_number_text(-value)})"
    if value.denominator == 1:
        return str(value.numerator)
    try:
        double = float(value)
    except OverflowError:
        double = None
    if double is None or Fraction(double) != value:
        raise ValueError(f"{value} is not a double: the Python form has no literal for it")
    return repr(double)


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


class _Printer(Walker):
    """One walker for both printed forms: the same precedence and parentheses; subclasses spell the leaves."""

    def fmt(self, node, min_prec: int) -> str:
        text = self.visit(node)
        return f"({text})" if _prec(node) < min_prec else text

    def num(self, node: Num) -> str:
        return self.number(node.value)

    def bool_lit(self, node: BoolLit) -> str:
        return "true" if node.value else "false"

    def enum_lit(self, node: EnumLit) -> str:
        return _quote(node.value)

    def attr(self, node: Attr) -> str:
        return node.name

    def unary(self, node: Unary) -> str:
        if node.op == "not":
            if isinstance(node.arg, InSet):  # `x not in [...]` parses back to not (x in [...])
                return self.in_text(node.arg, "not in")
            # parenthesise comparisons for readability: not (kind == 'diff')
            return f"not {self.fmt(node.arg, P_CMP + 1) if _prec(node.arg) != P_NOT else self.visit(node.arg)}"
        if node.op != "-":
            raise ValueError(f"unknown unary operator {node.op!r}")
        arg = self.fmt(node.arg, P_NEG)
        if arg.startswith("-"):
            arg = f"({arg})"
        return f"-{arg}"

    def binary(self, node: Binary) -> str:
        prec = _BINARY_PREC.get(node.op)
        if prec is None:
            raise ValueError(f"unknown operator {node.op!r}")
        if prec == P_CMP:  # comparisons do not chain (Python's would): parenthesise comparison operands
            return f"{self.fmt(node.left, P_ADD)} {node.op} {self.fmt(node.right, P_ADD)}"
        if node.op == "or":  # a or (b and c), for readability
            left, right = (f"({self.visit(c)})" if _is_and(c) else None for c in (node.left, node.right))
            return f"{left or self.fmt(node.left, prec)} or {right or self.fmt(node.right, prec + 1)}"
        return f"{self.fmt(node.left, prec)} {node.op} {self.fmt(node.right, prec + 1)}"

    def in_set(self, node: InSet) -> str:
        return self.in_text(node, "in")

    def call(self, node: Call) -> str:
        return f"{node.fn}({', '.join(self.fmt(a, P_COND) for a in node.args)})"

    def cond(self, node: Cond) -> str:
        return f"{self.fmt(node.then, P_OR)} if {self.fmt(node.test, P_OR)} else {self.fmt(node.orelse, P_OR)}"

    def unknown(self, node) -> str:
        raise ValueError(f"not a policy expression: {type(node).__name__}")

    def in_text(self, node: InSet, keyword: str) -> str:
        values = ", ".join(self.fmt(v, P_COND) for v in node.values)
        return f"{self.fmt(node.arg, P_ADD)} {keyword} [{values}]"

    def number(self, value) -> str:
        return number_text(value)


class _PythonPrinter(_Printer):
    """The restricted-Python spellings: True/False, repr'd enum names, span.x and window.x, doubles' reprs."""

    def __init__(self, floats=()):
        self.floats = {id(num) for num in floats}

    def number(self, value) -> str:
        return python_number_text(value)

    def num(self, node: Num) -> str:
        if id(node) in self.floats:
            return repr(float(node.value))
        return super().num(node)

    def bool_lit(self, node: BoolLit) -> str:
        return "True" if node.value else "False"

    def enum_lit(self, node: EnumLit) -> str:
        if not isinstance(node.value, str):
            raise ValueError(f"enum name must be a string, got {type(node.value).__name__}")
        return repr(node.value)

    def attr(self, node: Attr) -> str:
        if node.name in SPAN_ATTRS:
            return f"span.{node.name}"
        if node.name in WINDOW_ATTRS or node.name in TRIGGER_ATTRS:
            return f"window.{node.name}"
        raise ValueError(f"unknown attribute {node.name!r}")


_TEXT, _PYTHON = _Printer(), _PythonPrinter()


def _is_and(node) -> bool:
    return isinstance(node, Binary) and node.op == "and"


def to_text(expr) -> str:
    """Canonical mini-language text for expr: parenthesised where precedence requires, plus `a or (b and c)`
    and `not (a == b)` for readability; `not (x in [...])` prints as `x not in [...]`."""
    return _TEXT.fmt(expr, P_COND)


def to_python(expr, floats=()) -> str:
    """expr in the restricted Python form (span.x, window.x, True/False, python_number_text's literals); it
    re-parses to expr (negative Nums as negations) unless the Python form refuses it: `/` between integers and
    arithmetic on a non-integer literal are rounded floats in CPython.  ValueError for a Num that is not a double.
    The Nums in floats (by identity; non-negative) print as float literals even when whole: `2.0`, not `2`."""
    printer = _PythonPrinter(floats) if floats else _PYTHON
    return printer.fmt(expr, P_COND)


# --------------------------------------------------------------------------- whole policy files


def _yaml_escape(ch: str) -> str:
    code = ord(ch)
    named = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    if ch in named:
        return named[ch]
    printable = 0x20 <= code <= 0x7E or (0xA0 <= code <= 0xD7FF and code not in (0x2028, 0x2029)) or (
        0xE000 <= code <= 0xFFFD and code != 0xFEFF
    ) or code >= 0x10000
    if printable:
        return ch
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def _yaml_scalar(text: str) -> str:
    """text as a YAML scalar that reads back as exactly that string: plain when safe, else double-quoted."""
    import yaml  # local: the printer is imported by the parsers and needs PyYAML only here

    simple = text and text == text.strip() and text.isprintable() and text.isascii() and "\\" not in text
    if simple:
        try:
            if yaml.safe_load(f"key: {text}\n") == {"key": text}:
                return text
        except yaml.YAMLError:
            pass
    return '"' + "".join(_yaml_escape(ch) for ch in text) + '"'


def _deployment_items(policy):
    deployment = getattr(policy, "deployment", None)
    if deployment is None:
        return []
    return list(deployment.as_dict().items())


def _effect_items(policy) -> list:
    """(key, value) for `effect`, `placeholder_tokens`, `summary_role` and `summary_at`, each only when not at its
    default."""
    effect, placeholder = getattr(policy, "effect", "evict"), getattr(policy, "placeholder_tokens", 1)
    role, at = getattr(policy, "summary_role", "user"), getattr(policy, "summary_at", "replaced")
    return ([("effect", effect)] if effect != "evict" else []) + \
        ([("placeholder_tokens", placeholder)] if placeholder != 1 else []) + \
        ([("summary_role", role)] if role != "user" else []) + ([("summary_at", at)] if at != "replaced" else [])


def policy_yaml(policy) -> str:
    """A complete YAML policy file for policy (name, description, evict, rank, budget, the stage's keep, when, until
    and order, effect, pairs, deployment)."""
    lines = [f"name: {_yaml_scalar(policy.name)}"]
    if policy.description:
        lines.append(f"description: {_yaml_scalar(policy.description)}")
    later = getattr(policy, "later", ())
    if later:  # a list of stages (SPEC §4h): each stage's keys in its entry
        if policy.budget is not None:
            lines.append(f"budget: {int(policy.budget)}")
        lines.append("compaction:")
        for stage in (policy, *later):
            lines += [("  - " if k == 0 else "    ") + line for k, line in enumerate(_stage_lines(stage))]
    else:
        stage = _stage_lines(policy)
        lines += stage[:1 + (policy.rank is not None)]
        if policy.budget is not None:
            lines.append(f"budget: {int(policy.budget)}")
        lines += stage[1 + (policy.rank is not None):]
    items = _deployment_items(policy)
    if items:
        lines.append("deployment:")
        lines += [f"  {key}: {_yaml_scalar(value)}" for key, value in items]
    return "\n".join(lines) + "\n"


def _stage_lines(stage) -> list:
    """One stage's keys (a policy's own, or a Stage's) as YAML lines: evict, rank, keep, when, until, order, effect,
    placeholder_tokens, summary_role, pairs, start_on (those not at their defaults)."""
    lines = [f"evict: {_yaml_scalar(to_text(stage.evict))}"]
    if stage.rank is not None:
        lines.append(f"rank: {_yaml_scalar(to_text(stage.rank))}")
    lines += [f"{key}: {_yaml_scalar(to_text(expr))}" for key, expr in _stage_items(stage)]
    if getattr(stage, "order", "oldest") != "oldest":
        lines.append(f"order: {stage.order}")
    lines += [f"{key}: {value}" for key, value in _effect_items(stage)]
    if getattr(stage, "pairs", "apart") != "apart":
        lines.append(f"pairs: {stage.pairs}")
    if getattr(stage, "start_on", None) is not None:
        lines.append(f"start_on: {stage.start_on}")
    return lines


def _stage_items(policy) -> list:
    """The compaction stage's expressions that are set, as (key, expression): keep, when, until."""
    return [(key, getattr(policy, key)) for key in ("keep", "when", "until") if getattr(policy, key, None) is not None]


def _py_function(name: str, expr) -> str:
    """`def name(span, window):` (`def name(window):` for the stage's window conditions) with a top-level chain of
    conditionals written as if/return statements."""
    lines = [f"def {name}({'window' if name in ('when', 'until') else 'span, window'}):"]
    while isinstance(expr, Cond):
        lines.append(f"    if {to_python(expr.test)}:")
        lines.append(f"        return {to_python(expr.then)}")
        expr = expr.orelse
    lines.append(f"    return {to_python(expr)}")
    return "\n".join(lines) + "\n"


def policy_python(policy) -> str:
    """A complete restricted-Python policy module for policy (docstring, NAME, BUDGET, DEPLOYMENT, ORDER, EFFECT,
    PLACEHOLDER_TOKENS, PAIRS, START_ON, evict, rank, keep, when, until)."""
    if getattr(policy, "later", ()):
        raise EncodingError(f"policy {policy.name!r} has a list of compaction stages, which the Python form cannot "
                            "write (write it as YAML or JSON)")
    parts = []
    if policy.description:
        parts.append(repr(policy.description) + "\n")  # a string first statement is the module docstring
    head = [f"NAME = {policy.name!r}"]
    if policy.budget is not None:
        head.append(f"BUDGET = {int(policy.budget)}")
    head += [f"{key.upper()} = {value!r}" for key, value in _effect_items(policy)]
    if getattr(policy, "pairs", "apart") != "apart":
        head.append(f"PAIRS = {policy.pairs!r}")
    if getattr(policy, "start_on", None) is not None:
        head.append(f"START_ON = {policy.start_on!r}")
    items = _deployment_items(policy)
    if items:
        head.append("DEPLOYMENT = {" + ", ".join(f"{k!r}: {v!r}" for k, v in items) + "}")
    if getattr(policy, "order", "oldest") != "oldest":
        head.append(f"ORDER = {policy.order!r}")
    parts.append("\n".join(head) + "\n")
    parts.append(_py_function("evict", policy.evict))
    if policy.rank is not None:
        parts.append(_py_function("rank", policy.rank))
    parts += [_py_function(key, expr) for key, expr in _stage_items(policy)]
    return "\n\n".join(parts)


__all__ = ["to_text", "number_text", "python_number_text", "to_python", "policy_yaml", "policy_python"]
