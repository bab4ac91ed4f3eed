"""Resource bounds of every front end, the refusal of expressions beyond them, and positioned errors on nodes."""

from __future__ import annotations

import difflib
from fractions import Fraction
from typing import Iterable, Optional

from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import NODE_TYPES, Attr, EnumLit, Loc, Num, children, subexpressions

from prunecheck.checker.language.printer import to_text

MAX_FILE_BYTES = 256 * 1024
MAX_NODES = 4000  # expression nodes per policy (evict + rank)
MAX_DEPTH = 64  # AST depth of one expression; also the bracket/indentation bound of the readers
MAX_DIGITS = 30  # digits in one number literal
MAX_NAME = 64  # characters in one identifier or enum name


def closest(word: str, choices: Iterable[str]) -> Optional[str]:
    """The choice closest to word, if any is reasonably close."""
    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return matches[0] if matches else None


def suggestion(word: str, choices: Iterable[str]) -> str:
    """`; did you mean "x"?` or the empty string."""
    best = closest(word, choices)
    return f'; did you mean "{best}"?' if best else ""


def fail_at(message: str, node, file: str):
    """Raise a PolicySyntaxError at node's position (1:1 when it has none)."""
    loc = getattr(node, "loc", None)
    if isinstance(loc, Loc) and loc.line >= 1 and loc.col >= 1:
        raise PolicySyntaxError(message, file, loc.line, loc.col)
    raise PolicySyntaxError(message, file, 1, 1)


def shown(node) -> str:
    """node's text for an error message, at most 60 characters."""
    try:
        text = to_text(node)
    except Exception:  # a malformed constructed node: describe it, do not crash
        text = type(node).__name__
    return text if len(text) <= 60 else text[:57] + "..."


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
            if not isinstance(node, NODE_TYPES):
                raise PolicySyntaxError(f"not a policy expression: {type(node).__name__}", file, 1, 1)
            total += 1
            if total > MAX_NODES:
                fail_at(f"policy is too large: more than {MAX_NODES} expression nodes", node, file)
            if depth > MAX_DEPTH:
                fail_at(
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
                    fail_at(f"{type(node).__name__} must hold a string, got {type(text).__name__}", node, file)
                if len(text) > MAX_NAME:
                    fail_at(f"name is too long: {len(text)} characters (at most {MAX_NAME})", node, file)
            for child in children(node):
                stack.append((child, depth + 1))
    return total


def _check_number(node: Num, file: str) -> None:
    value = node.value
    if isinstance(value, bool) or not isinstance(value, (int, Fraction)):
        fail_at(f"number literal must be exact, got {type(value).__name__}", node, file)
    value = Fraction(value)
    limit = 10**MAX_DIGITS
    if abs(value.numerator) >= limit or value.denominator >= limit:
        fail_at(f"number literal is too large: at most {MAX_DIGITS} digits", node, file)


def count_nodes(expr) -> int:
    """Number of nodes in expr (iterative)."""
    return sum(1 for _node in subexpressions(expr))
