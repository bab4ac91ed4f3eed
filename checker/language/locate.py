"""Where a policy's keys and sub-expressions sit in the text it was parsed from: 1-based line and column.

Every answer comes from what the loader recorded (Policy.origin), never from the policy's file, which may have
changed since it was read.
"""

from __future__ import annotations

from typing import Dict, Optional

from prunecheck.spec.policy import NOWHERE, Expr, Loc, Policy, subexpressions

from prunecheck.checker.language.source_text import SourceText


def expression_start(expr: Expr) -> Loc:
    """The first position of a sub-expression: its leftmost located node (operators are located at the operator)."""
    located = [node.loc for node in subexpressions(expr) if node.loc != NOWHERE]
    return min(located, key=lambda loc: (loc.line, loc.col), default=NOWHERE)


def key_locations(policy: Policy) -> Dict[str, Loc]:
    """Positions of the keys `evict`, `rank`, `deployment`, and of the values of `budget` and `deployment.KEY`, in
    the text the policy was parsed from ({} for a policy not parsed from text). Keys absent from the text are absent
    from the mapping."""
    return policy.origin.locations() if policy.origin is not None else {}


def deployment_location(policy: Policy, key: str, where: Optional[Dict[str, Loc]] = None) -> Loc:
    """The position of a deployment setting, or of the deployment section, or the text's start."""
    where = key_locations(policy) if where is None else where
    return where.get(f"deployment.{key}") or where.get("deployment") or Loc(1, 1)


def source_lines(policy: Policy) -> Optional[tuple]:
    """The lines of the text the policy was parsed from, numbered as every location counts them (line breaks
    removed), or None for a policy not parsed from text."""
    origin = policy.origin
    if origin is None:
        return None
    return SourceText(origin.text, policy.source, origin.form).lines()
