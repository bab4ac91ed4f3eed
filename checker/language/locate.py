"""Where a policy's keys and sub-expressions sit in its own file: 1-based line and column for reports and SARIF."""

from __future__ import annotations

import ast
import re
from typing import Dict, Optional

from yaml.nodes import MappingNode, ScalarNode

from prunecheck.spec.errors import PrunecheckError
from prunecheck.spec.policy import NOWHERE, DeploymentOverride, Expr, Loc, Policy, subexpressions

from prunecheck.checker.language.loader import _BREAKS, _compose, _form_of, _read, _Text, decode_policy_bytes, parse_policy_text
from prunecheck.checker.language.pyform import parse_python_policy


def expression_start(expr: Expr) -> Loc:
    """The first position of a sub-expression: its leftmost located node (operators are located at the operator)."""
    located = [node.loc for node in subexpressions(expr) if node.loc != NOWHERE]
    return min(located, key=lambda loc: (loc.line, loc.col), default=NOWHERE)


def key_locations(policy: Policy) -> Dict[str, Loc]:
    """Positions of the keys `evict`, `rank`, `deployment`, and of the values of `budget` and `deployment.KEY`, in the
    policy's file ({} when the
    policy did not come from a readable file). Keys absent from the file are absent from the mapping."""
    try:
        data, filename = _read(policy.source)
        form = _form_of(filename)
        text = decode_policy_bytes(data, filename)
        if form == "python":
            return _python_locations(text, filename)
        return _yaml_locations(_Text(text, filename, form))
    except (PrunecheckError, OSError, ValueError, SyntaxError, RecursionError):
        return {}


def _yaml_locations(src: _Text) -> Dict[str, Loc]:
    root = _compose(src)
    out: Dict[str, Loc] = {}
    if not isinstance(root, MappingNode):
        return out
    for key, value in root.value:
        if not isinstance(key, ScalarNode):
            continue
        at = value if key.value == "budget" else key
        out[key.value] = Loc(*src.pos(at.start_mark.index))
        if key.value == "deployment" and isinstance(value, MappingNode):
            for sub, subvalue in value.value:
                if isinstance(sub, ScalarNode):
                    out[f"deployment.{sub.value}"] = Loc(*src.pos(subvalue.start_mark.index))
    return out


def _python_locations(text: str, filename: str) -> Dict[str, Loc]:
    parts = parse_python_policy(text, filename)
    out = {"evict": parts.evict_loc}
    for key, _value, key_loc, value_loc in parts.deployment or ():
        out.setdefault("deployment", key_loc)
        out[f"deployment.{key}"] = value_loc
    for node in ast.parse(text, "<policy>").body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            at = node.value if name == "BUDGET" else node
            if name in ("BUDGET", "DEPLOYMENT"):
                out.setdefault(name.lower(), Loc(at.lineno, at.col_offset + 1))
        if isinstance(node, ast.FunctionDef) and node.name == "rank":
            out["rank"] = Loc(node.lineno, node.col_offset + 1)
    return out


def deployment_location(policy: Policy, key: str, where: Optional[Dict[str, Loc]] = None) -> Loc:
    """The position of a deployment setting, or of the deployment section, or the file's start."""
    where = key_locations(policy) if where is None else where
    return where.get(f"deployment.{key}") or where.get("deployment") or Loc(1, 1)


def source_lines(policy: Policy) -> Optional[tuple]:
    """The lines of the policy's file, numbered as every location counts them (line breaks removed), or None when
    the file cannot be read or no longer parses to this policy, so that its locations would not point into it."""
    try:
        data, filename = _read(policy.source)
        form = _form_of(filename)
        src = _Text(decode_policy_bytes(data, filename), filename, form)
        deployment = policy.deployment.as_dict()
        override = DeploymentOverride.of({k: deployment[k] for k in policy.overridden}) if policy.overridden else None
        if parse_policy_text(src.text, filename, override) != policy:
            return None
    except (PrunecheckError, OSError, ValueError, SyntaxError, RecursionError):
        return None
    ends = src.starts[1:] + [len(src.text)]
    line_break = re.compile(f"(?:{_BREAKS.get(form, _BREAKS['yaml']).pattern})\\Z")
    lines = [line_break.sub("", src.text[start:end]) for start, end in zip(src.starts, ends)]
    return tuple(lines[:-1] if len(lines) > 1 and not lines[-1] else lines)  # no line after the final break
