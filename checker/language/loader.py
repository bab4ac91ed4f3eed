"""Reading policy and deployment files (YAML, JSON or restricted Python) into checked Policies.

Policy text is untrusted: it is parsed (PyYAML's composer, json, ast.parse) and never evaluated.
Every problem with the input, whatever its bytes, surfaces as a PolicySyntaxError(message, file,
line, col) pointing into the file. Each Policy keeps the text it was parsed from and where its keys sit
in it (Policy.origin), so that reports locate findings in the text checked, never in the file as it is later.
"""

from __future__ import annotations

import ast
from pathlib import PurePath
from typing import Dict, Optional, Tuple

from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from prunecheck.spec.conditions import CONDITIONS
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import (DEPLOYMENT_CHOICES, DEPLOYMENT_KEYS, DEPLOYMENT_NAMES, Acceptance, Deployment,
                                   DeploymentOverride, Loc, Origin, Policy, Stage, deployment_value_problem,
                                   stage_exprs, with_override)

from prunecheck.checker.language.expr_parser import Builder
from prunecheck.checker.language.nodes import compose, is_null, items, kind_of, reason, string
from prunecheck.checker.language.stage_keys import (compaction_stages, stage_expressions, stage_settings,
                                                    whole_number)
from prunecheck.checker.language.pyform import check_python_arithmetic, parse_python_policy, python_expect
from prunecheck.checker.language.source_text import (EXTENSIONS, SourceText, decode_policy_bytes, display_name,
                                                     form_of, read_policy_file)
from prunecheck.checker.language.typecheck import check_policy, suggestion
from prunecheck.checker.options import override_of
from prunecheck.checker.result import Expectation

TOP_KEYS = ("name", "description", "evict", "rank", "budget", "keep", "when", "until", "order", "effect",
            "placeholder_tokens", "summary_role", "summary_at", "pairs", "start_on", "compaction", "deployment",
            "expect", "accept")
ACCEPT_KEYS = ("condition", "reason")
VERDICTS = ("holds", "violated", "unknown")  # what an `expect:` entry may expect


# --------------------------------------------------------------------------- YAML / JSON policies


def _deployment(src: SourceText, node) -> Deployment:
    return Deployment(**_deployment_values(src, node))


def _deployment_values(src: SourceText, node) -> Dict[str, str]:
    values = {}
    for key, knode, vnode in items(src, node, "deployment"):
        if key not in DEPLOYMENT_KEYS:
            src.fail_at(
                f"unknown deployment key `{key[:64]}`{suggestion(key, DEPLOYMENT_KEYS)} "
                f"(keys: {', '.join(DEPLOYMENT_KEYS)})",
                knode,
            )
        value = string(src, vnode, f"deployment {key}")
        problem = deployment_value_error(key, value)
        if problem:
            src.fail_at(problem, vnode)
        values[key] = value
    return values


def deployment_value_error(key: str, value: str) -> str:
    """The one-line error for a bad value of a known deployment key, or ""."""
    if key in DEPLOYMENT_NAMES:
        return deployment_value_problem(key, value)
    allowed = DEPLOYMENT_CHOICES[key]
    if value not in allowed:
        return f"deployment {key} must be one of {', '.join(allowed)}, got `{value[:64]}`{suggestion(value, allowed)}"
    return ""


def _did_you_mean(word: str, choices: tuple) -> str:
    """suggestion(), and first the choice that differs from word only in case (`c1` for C1, which is too short for
    a close match)."""
    same = [c for c in choices if c.lower() == word.lower()]
    return f'; did you mean "{same[0]}"?' if same else suggestion(word, choices)


def expect_problem(condition: str, verdict: str, what: str = "expect") -> Tuple[str, str]:
    """(the message, "key" or "value": which of the entry it is about) for a bad `expect` entry, or ("", "")."""
    if condition not in CONDITIONS:
        return (f"{what} names unknown condition `{condition[:64]}`{_did_you_mean(condition, CONDITIONS)} "
                f"(conditions: {', '.join(CONDITIONS)})", "key")
    if verdict not in VERDICTS:
        return (f"expected verdict for {condition} must be one of {', '.join(VERDICTS)}, got `{verdict[:64]}`"
                f"{_did_you_mean(verdict, VERDICTS)}", "value")
    return "", ""


def _expect(src: SourceText, node) -> tuple:
    """The `expect:` table, as the schema has it: condition ids, each to holds, violated or unknown."""
    out = []
    for key, knode, vnode in items(src, node, "expect"):
        if not isinstance(vnode, ScalarNode) or is_null(src, vnode):
            src.fail_at(f"expected verdict for `{key[:64]}` must be a string", vnode)
        problem, at = expect_problem(key, vnode.value)
        if problem:
            src.fail_at(problem, knode if at == "key" else vnode)
        out.append(Expectation(key, vnode.value, src.file, Loc(*src.pos(knode.start_mark.index))))
    return tuple(out)


def _python_expect(src: SourceText, entries) -> tuple:
    """EXPECT's (condition, verdict, key Loc, value Loc) entries, checked as the YAML form's `expect:` is."""
    out = []
    for condition, verdict, key_loc, value_loc in entries or ():
        problem, at = expect_problem(condition, verdict, "EXPECT")
        if problem:
            loc = key_loc if at == "key" else value_loc
            raise PolicySyntaxError(problem, src.file, loc.line, loc.col)
        out.append(Expectation(condition, verdict, src.file, key_loc))
    return tuple(out)


def _acceptance(src: SourceText, node, seen: Dict[str, int]) -> Acceptance:
    fields = {}
    for key, knode, vnode in items(src, node, "an accept entry"):
        if key not in ACCEPT_KEYS:
            src.fail_at(f"unknown key `{key[:64]}` in an accept entry{suggestion(key, ACCEPT_KEYS)} "
                        f"(keys: {', '.join(ACCEPT_KEYS)})", knode)
        fields[key] = vnode
    for required in ACCEPT_KEYS:
        if required not in fields:
            src.fail_at(f"an accept entry needs `{required}` (keys: {', '.join(ACCEPT_KEYS)})", node)
    condition = string(src, fields["condition"], "accept condition")
    if condition not in CONDITIONS:
        src.fail_at(f"accept names unknown condition `{condition[:64]}`{suggestion(condition, CONDITIONS)} "
                    f"(conditions: {', '.join(CONDITIONS)})", fields["condition"])
    if condition in seen:
        src.fail_at(f"{condition} is accepted twice (first at line {seen[condition]})", fields["condition"])
    seen[condition] = src.pos(fields["condition"].start_mark.index)[0]
    why = reason(src, fields["reason"], "accept reason")
    return Acceptance(condition, why, "inSource", src.file, Loc(*src.pos(node.start_mark.index)))


def _accepts(src: SourceText, node) -> tuple:
    """The `accept:` list: findings the policy's author accepts, each a condition with a non-blank reason."""
    if not isinstance(node, SequenceNode):
        src.fail_at(f"accept must be a list of {{condition, reason}} entries, got {kind_of(node)}", node)
    seen: Dict[str, int] = {}
    return tuple(_acceptance(src, entry, seen) for entry in node.value)


def _yaml_policy(src: SourceText) -> Policy:
    root = compose(src)
    if not isinstance(root, MappingNode):
        src.fail_at(f"a policy must be a mapping with keys {', '.join(TOP_KEYS)}; got {kind_of(root)}", root)
    fields = {}
    for key, knode, vnode in items(src, root, "the policy"):
        if key not in TOP_KEYS:
            src.fail_at(
                f"unknown key `{key[:64]}`{suggestion(key, TOP_KEYS)} (allowed keys: {', '.join(TOP_KEYS)})", knode
            )
        fields[key] = vnode
    for required in ("name",) + (() if "compaction" in fields else ("evict",)):
        if required not in fields:
            src.fail_at(f"missing required key `{required}`", root)
    name = string(src, fields["name"], "name")
    if not name.strip():
        src.fail_at("name must not be blank", fields["name"])
    description = string(src, fields["description"], "description") if "description" in fields else ""
    budget = whole_number(src, fields["budget"]) if "budget" in fields else None
    stages = compaction_stages(src, fields["compaction"], fields) if "compaction" in fields else [fields]
    settings = [stage_settings(src, stage) for stage in stages]
    deployment = _deployment(src, fields["deployment"]) if "deployment" in fields else Deployment()
    expects = _expect(src, fields["expect"]) if "expect" in fields else ()
    accepts = _accepts(src, fields["accept"]) if "accept" in fields else ()
    builder = Builder(src.file)  # one node budget for the whole policy
    first, *later = [{**stage_expressions(src, stage, builder), **kept} for stage, kept in zip(stages, settings)]
    policy = Policy(
        name=name,
        budget=budget,
        deployment=deployment,
        description=description,
        source=src.file,
        accepts=accepts,
        expects=expects,
        origin=_yaml_origin(src, root),
        later=tuple(Stage(**keys) for keys in later),
        **first,
    )
    return policy


def _python_policy(src: SourceText) -> Tuple[Policy, tuple]:
    parts = parse_python_policy(src.text, src.file)
    values = {}
    for key, value, key_loc, value_loc in parts.deployment or ():
        if key not in DEPLOYMENT_KEYS:
            raise PolicySyntaxError(
                f"unknown deployment key `{key[:64]}`{suggestion(key, DEPLOYMENT_KEYS)} "
                f"(keys: {', '.join(DEPLOYMENT_KEYS)})",
                src.file,
                key_loc.line,
                key_loc.col,
            )
        problem = deployment_value_error(key, value)
        if problem:
            raise PolicySyntaxError(problem, src.file, value_loc.line, value_loc.col)
        values[key] = value
    accepts = tuple(_python_acceptance(src, *entry) for entry in parts.accept)
    expects = _python_expect(src, parts.expect)
    stage = {key: getattr(parts, key) for key in ("keep", "when", "until") if getattr(parts, key) is not None}
    policy = Policy(
        name=parts.name or (PurePath(src.file).stem or "policy"),
        evict=parts.evict,
        rank=parts.rank,
        order=parts.order or "oldest",
        **stage,
        budget=parts.budget,
        deployment=Deployment(**values),
        description=parts.description,
        source=src.file,
        accepts=accepts,
        expects=expects,
        origin=_python_origin(src, parts),
        effect=parts.effect,
        placeholder_tokens=parts.placeholder_tokens,
        pairs=parts.pairs,
        summary_role=parts.summary_role,
        summary_at=parts.summary_at,
        start_on=parts.start_on,
    )
    return policy, parts.floats


def _python_acceptance(src: SourceText, condition: str, why: str, key_loc: Loc, value_loc: Loc) -> Acceptance:
    """An ACCEPT = {"C2": "reason"} entry of a Python-form policy, checked as the YAML form's `accept:` is."""
    if condition not in CONDITIONS:
        raise PolicySyntaxError(f"ACCEPT names unknown condition `{condition[:64]}`{suggestion(condition, CONDITIONS)} "
                                f"(conditions: {', '.join(CONDITIONS)})", src.file, key_loc.line, key_loc.col)
    if not why.strip():
        raise PolicySyntaxError("ACCEPT reason must not be blank: say why the finding is accepted", src.file,
                                value_loc.line, value_loc.col)
    return Acceptance(condition, " ".join(why.split()), "inSource", src.file, key_loc)


# --------------------------------------------------------------------------- where the keys are written


def _yaml_origin(src: SourceText, root: MappingNode) -> Origin:
    """The text and its keys' positions (the keys were checked: plain names, each once)."""
    keys = []
    for key, value in root.value:
        at = value if key.value in ("budget", "pairs", "start_on") else key
        keys.append((key.value, Loc(*src.pos(at.start_mark.index))))
        if key.value == "compaction" and isinstance(value, SequenceNode):  # stage 1's keys as the top's (SPEC §4h)
            for k, entry in enumerate(value.value):
                prefix = "" if k == 0 else f"compaction[{k}]."
                keys += [(prefix + sub.value, Loc(*src.pos((subvalue if sub.value in ("pairs", "start_on")
                                                            else sub).start_mark.index)))
                         for sub, subvalue in entry.value]
        if key.value == "deployment" and isinstance(value, MappingNode):
            keys += [(f"deployment.{sub.value}", Loc(*src.pos(subvalue.start_mark.index)))
                     for sub, subvalue in value.value]
    return Origin(src.text, src.form, tuple(keys))


def _python_origin(src: SourceText, parts) -> Origin:
    """The text and its names' positions: EVICT (or def evict), def rank, BUDGET's value, DEPLOYMENT and its values."""
    out = {"evict": parts.evict_loc}
    for key, _value, key_loc, value_loc in parts.deployment or ():
        out.setdefault("deployment", key_loc)
        out[f"deployment.{key}"] = value_loc
    for node in ast.parse(src.text, "<policy>").body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            at = node.value if name in ("BUDGET", "PAIRS", "START_ON") else node
            if name in ("BUDGET", "PAIRS", "START_ON", "DEPLOYMENT", "EFFECT"):
                out.setdefault(name.lower(), Loc(at.lineno, at.col_offset + 1))
        if isinstance(node, ast.FunctionDef) and node.name in ("rank", "keep", "when", "until"):
            out[node.name] = Loc(node.lineno, node.col_offset + 1)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and getattr(node.targets[0], "id", "") == "ORDER":
            out["order"] = Loc(node.lineno, node.col_offset + 1)
    return Origin(src.text, src.form, tuple(out.items()))


def _guarded(filename, fn, *args):
    """Run fn, letting PolicySyntaxError through and turning anything else into one at 1:1."""
    try:
        return fn(*args)
    except PolicySyntaxError:
        raise
    except (RecursionError, MemoryError):
        raise PolicySyntaxError("policy is nested too deeply or is too large", str(filename), 1, 1) from None
    except Exception as exc:  # last resort: never leak another exception for any input
        raise PolicySyntaxError(
            f"internal error while reading the policy: {type(exc).__name__}: {exc}", str(filename), 1, 1
        ) from None


def _parse(data, filename: str, deployment_override) -> Policy:
    form = form_of(filename)
    src = SourceText(decode_policy_bytes(data, filename), filename, form)
    if form == "python":
        policy, floats = _python_policy(src)
    else:
        policy, floats = _yaml_policy(src), None
    check_policy(policy, filename)
    if floats is not None:  # after the type check, whose messages are the more specific ones
        check_python_arithmetic(stage_exprs(policy), floats, filename)
    return with_override(policy, as_override(deployment_override, filename))


def as_override(override, filename: str = "<deployment>") -> Optional[DeploymentOverride]:
    """None, a DeploymentOverride, or a complete Deployment (an override of every key) as a DeploymentOverride."""
    return override_of(override, filename)


# --------------------------------------------------------------------------- public API


def parse_policy_text(text_or_bytes, filename: str, deployment_override=None) -> Policy:
    """Parse and type-check policy text; the form is chosen by filename's extension (.yaml .yml .json .py)."""
    filename = str(filename)
    return _guarded(filename, lambda: _parse(text_or_bytes, filename, deployment_override))


def load_policy(path, deployment_override=None) -> Policy:
    """Read, parse and type-check a policy file; deployment_override (a DeploymentOverride, or a Deployment: every
    key) sets its keys in the file's deployment, the others keep the file's values."""

    def run():
        data, filename = read_policy_file(path)
        return _parse(data, filename, deployment_override)

    return _guarded(display_name(path), run)


def expected_verdicts(path) -> Dict[str, str]:
    """The `expect` mapping (YAML/JSON) or module-level EXPECT literal (.py) of a policy file; {} if absent.

    Only the file's structure and the table itself are read (its entries checked as `check` checks them), so it
    also works for example policies that are meant to be refused.
    """

    def run():
        data, filename = read_policy_file(path)
        form = form_of(filename)
        src = SourceText(decode_policy_bytes(data, filename), filename, form)
        if form == "python":
            return {e.condition: e.verdict for e in _python_expect(src, python_expect(src.text, filename))}
        root = compose(src)
        if not isinstance(root, MappingNode):
            return {}
        for key, _knode, vnode in items(src, root, "the policy"):
            if key == "expect":
                return {e.condition: e.verdict for e in _expect(src, vnode)}
        return {}

    return _guarded(display_name(path), run)


def parse_deployment_text(text_or_bytes, filename: str) -> DeploymentOverride:
    """A DeploymentOverride (only the keys given) from YAML/JSON text: a bare mapping of deployment keys, or a
    top-level `deployment:` mapping."""
    filename = str(filename)

    def run():
        form = form_of(filename)
        if form == "python":
            raise PolicySyntaxError("a deployment file must be YAML or JSON", filename, 1, 1)
        src = SourceText(decode_policy_bytes(text_or_bytes, filename), filename, form)
        root = compose(src)
        if not isinstance(root, MappingNode):
            src.fail_at(f"a deployment file must be a mapping, got {kind_of(root)}", root)
        for key, _knode, vnode in items(src, root, "the deployment file"):
            if key == "deployment":
                return DeploymentOverride.of(_deployment_values(src, vnode), filename)
        return DeploymentOverride.of(_deployment_values(src, root), filename)

    return _guarded(filename, run)


def load_deployment(path) -> DeploymentOverride:
    """Read a deployment file (see parse_deployment_text)."""

    def run():
        data, filename = read_policy_file(path, "deployment")
        return parse_deployment_text(data, filename)

    return _guarded(display_name(path), run)


__all__ = [
    "load_policy",
    "parse_policy_text",
    "load_deployment",
    "parse_deployment_text",
    "as_override",
    "expected_verdicts",
    "decode_policy_bytes",
    "TOP_KEYS",
    "ACCEPT_KEYS",
    "VERDICTS",
    "EXTENSIONS",
]
