"""Repair changes to a policy, and the minimal edits that write them into the policy's own text (YAML, JSON, Python)."""

from __future__ import annotations

import ast
import difflib
import io
import json
import re
from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import List, Tuple

import yaml
from yaml.nodes import MappingNode, ScalarNode

from prunecheck.spec.errors import PrunecheckError
from prunecheck.spec.policy import Attr, Binary, BoolLit, Cond, Deployment, EnumLit, InSet, Policy, Unary

from prunecheck.checker.language.document import policy_document
from prunecheck.checker.language.loader import EXTENSIONS, parse_policy_text
from prunecheck.checker.language.printer import policy_python, policy_yaml
from prunecheck.checker.language.pyscan import PythonSource

# The safe design of both seeds (examples/policies/seed_safe_design.yaml): the defaults, with the tombstones and the
# downgrades the defaults do not assume (ADR 0035), so a repair may propose them for M1 and J1.
SAFE_DEPLOYMENT = Deployment(evicted="tombstone", justification="downgrade")
ENVIRONMENT_KEYS = ("tool_calls", "host_truncation")  # the host's facts: a repair never changes them
# The keys that serve only the second seed's conditions: a repair proposes them only where those are checked.
EVIDENCE_KEYS = ("evicted", "justification")
EXCLUSIONS = (("record",), ("rationale",), ("record", "rationale"))
_KIND_WORDS = {"record": "recovery records", "rationale": "rationale entries"}


@dataclass(frozen=True)
class Change:
    """One unit-cost change: exclude kinds from evict, keep tool-call pairs together (`pairs: together`, the one
    text change that answers T1), set a deployment key to its safe value, or drop the budget.

    Change sets are tried in the order of repair.preference: keeping the budget first, then fewer deployment
    settings, then the narrower exclusion."""

    kind: str  # "exclude" | "pairs" | "deployment" | "drop_budget"
    kinds: tuple = ()
    key: str = ""
    value: str = ""

    def describe(self, form: str = "yaml") -> str:
        if self.kind == "exclude":
            words = " and ".join(_KIND_WORDS[k] for k in self.kinds)
            test = exclusion_text(self.kinds, form)
            if form == "python":
                return f"exclude {words} from eviction: evict first returns False when `{test}`"
            return f"exclude {words} from eviction: add `and {test}` to evict"
        if self.kind == "pairs":
            return ("keep each tool call with its result: set PAIRS to \"together\"" if form == "python"
                    else "keep each tool call with its result: set pairs to together")
        if self.kind == "deployment":
            return f"deployment: set {self.key} to {self.value}"
        return "drop the token budget (truncation only to a host's budget)"

    def as_dict(self, form: str = "yaml") -> dict:
        doc = {"kind": self.kind, "description": self.describe(form)}
        if self.kind == "exclude":
            doc["kinds"] = list(self.kinds)
        elif self.kind == "deployment":
            doc["key"], doc["value"] = self.key, self.value
        return doc


class NoSurgery(PrunecheckError):
    """The file's shape is one the minimal text edits do not handle; the caller re-prints the whole policy."""


def form_of(source: str) -> str:
    form = EXTENSIONS.get(PurePath(source).suffix.lower())
    if form is None:
        raise NoSurgery(f"unsupported policy file type: {source}")
    return form


def exclusion_text(kinds: tuple, form: str, quote: str = '"') -> str:
    """The added test as text: a conjunct for YAML/JSON, the `if` test (evict returns False) for Python."""
    names = ", ".join(f"{quote}{k}{quote}" for k in kinds)
    if form == "python":
        return f"span.kind == {quote}{kinds[0]}{quote}" if len(kinds) == 1 else f"span.kind in [{names}]"
    return f"kind != {quote}{kinds[0]}{quote}" if len(kinds) == 1 else f"kind not in [{names}]"


def _exclusion_ast(evict, kinds: tuple, form: str):
    kind = Attr("kind")
    values = tuple(EnumLit(k) for k in kinds)
    if form == "python":
        test = Binary("==", kind, values[0]) if len(kinds) == 1 else InSet(kind, values)
        return Cond(test, BoolLit(False), evict)
    conjunct = Binary("!=", kind, values[0]) if len(kinds) == 1 else Unary("not", InSet(kind, values))
    return Binary("and", evict, conjunct)


def repaired_policy(policy: Policy, changes: tuple, form: str) -> Policy:
    """The Policy the edited text parses to (the exclusion's shape depends on the file's form)."""
    for change in changes:
        if change.kind == "exclude":
            policy = replace(policy, evict=_exclusion_ast(policy.evict, change.kinds, form))
        elif change.kind == "pairs":
            policy = replace(policy, pairs="together")
        elif change.kind == "deployment":
            policy = replace(policy, deployment=replace(policy.deployment, **{change.key: change.value}))
        else:
            policy = replace(policy, budget=None)
    return policy


# --------------------------------------------------------------------------- YAML and JSON


def _needs_parens(evict) -> bool:
    """Whether `EVICT and X` would bind X inside evict's top operator (or / conditional)."""
    return isinstance(evict, Cond) or (isinstance(evict, Binary) and evict.op == "or")


def _deployment_value(node, value: str, text: str) -> str:
    """A deployment value (a plain name) in node's quoting style; a block scalar becomes double-quoted."""
    if node.style is None:
        return value
    if node.style in ("'", '"'):
        return f"{node.style}{value}{node.style}"
    return json.dumps(value) + ("\n" if text[node.end_mark.index - 1: node.end_mark.index] == "\n" else "")


def _evict_edits(text: str, root: MappingNode, node, evict, kinds: tuple) -> list:
    start, end = node.start_mark.index, node.end_mark.index
    value = node.value
    one_line = "\n" not in text[start:end] and "\r" not in text[start:end]
    quoted = node.style in ("'", '"') and text[start] == node.style and text[end - 1] == node.style
    if quoted:  # the other quote character needs no escaping inside this scalar
        inner = exclusion_text(kinds, "yaml", "'" if node.style == '"' else '"')
        start, end = start + 1, end - 1
    elif node.style is None and one_line and not root.flow_style:
        inner = exclusion_text(kinds, "yaml", "'" if "'" in value and '"' not in value else '"')
    else:  # block, flow or multi-line plain scalar: rewrite it double-quoted
        inner = exclusion_text(kinds, "yaml", "'")
        whole = f"({value}) and {inner}" if _needs_parens(evict) else f"{value} and {inner}"
        block_break = node.style in ("|", ">") and text[end - 1: end] == "\n"
        return [(start, end, json.dumps(whole) + ("\n" if block_break else ""))]
    if _needs_parens(evict):
        return [(start, start, "("), (end, end, f") and {inner}")]
    return [(end, end, f" and {inner}")]


def _entry_removal(text: str, mapping: MappingNode, index: int) -> Tuple[int, int, str]:
    """Delete the index-th key/value pair: its whole line in a block mapping, the pair and a comma in a flow one."""
    key, value = mapping.value[index]
    kstart, vend = key.start_mark.index, value.end_mark.index
    if not mapping.flow_style:
        line_start = max(text.rfind("\n", 0, kstart), text.rfind("\r", 0, kstart)) + 1
        line_end = len(text)
        for brk in ("\n", "\r"):
            found = text.find(brk, vend)
            if found >= 0:
                line_end = min(line_end, found + (2 if text.startswith("\r\n", found) else 1))
        rest = text[vend:line_end].strip()
        if text[line_start:kstart].strip() or (rest and not rest.startswith("#")):
            raise NoSurgery("the budget shares its line with other content")
        return (line_start, line_end, "")
    if index + 1 < len(mapping.value):
        return (kstart, mapping.value[index + 1][0].start_mark.index, "")
    if index > 0:
        return (mapping.value[index - 1][1].end_mark.index, vend, "")
    return (kstart, vend, "")


def _yaml_edits(text: str, form: str, policy: Policy, changes: tuple) -> list:
    root = yaml.compose(text.replace("\t", " ") if form == "json" else text, Loader=yaml.SafeLoader)
    if not isinstance(root, MappingNode):
        raise NoSurgery("the policy is not a mapping")
    keys = [k.value for k, _ in root.value]
    edits = []
    added = [c for c in changes if c.kind == "deployment" and not _deployment_has(root, keys, c.key)]
    if added:
        edits.append(_deployment_addition(text, form, root, keys, added))
    for change in changes:
        if change in added:
            continue
        if change.kind == "exclude":
            node = root.value[keys.index("evict")][1]
            if not isinstance(node, ScalarNode):
                raise NoSurgery("evict is not a scalar")
            edits += _evict_edits(text, root, node, policy.evict, change.kinds)
        elif change.kind == "pairs":
            edits.append(_pairs_edit(text, root, keys))
        elif change.kind == "deployment":
            section = root.value[keys.index("deployment")][1] if "deployment" in keys else None
            found = [v for k, v in section.value if k.value == change.key] if isinstance(section, MappingNode) else []
            if not found or not isinstance(found[0], ScalarNode):
                raise NoSurgery(f"no `{change.key}` value in the deployment section")
            node = found[0]
            edits.append((node.start_mark.index, node.end_mark.index, _deployment_value(node, change.value, text)))
        else:
            edits.append(_entry_removal(text, root, keys.index("budget")))
    return edits


def _deployment_has(root: MappingNode, keys: list, key: str) -> bool:
    section = root.value[keys.index("deployment")][1] if "deployment" in keys else None
    return isinstance(section, MappingNode) and any(k.value == key for k, _ in section.value)


def _deployment_addition(text: str, form: str, root: MappingNode, keys: list, changes: list) -> Tuple[int, int, str]:
    """Deployment keys the policy does not set (a default the safe design changes, as `evicted`), added as entries
    of its deployment section: after its last entry (block style), before its closing brace (flow style, JSON), or
    as a new section before `expect` or at the end."""
    entries = [(c.key, c.value) for c in changes]
    if "\r" in text:
        raise NoSurgery("carriage returns")
    if "deployment" not in keys:
        if root.flow_style:
            last = root.value[-1][1]
            body = ", ".join(f'"{k}": "{v}"' for k, v in entries)
            return last.end_mark.index, last.end_mark.index, f', "deployment": {{{body}}}'
        lines = "".join(f"  {k}: {v}\n" for k, v in entries)
        if "expect" in keys:
            start = text.rfind("\n", 0, root.value[keys.index("expect")][0].start_mark.index) + 1
            return start, start, f"deployment:\n{lines}"
        ending = "" if text.endswith("\n") else "\n"
        return len(text), len(text), f"{ending}deployment:\n{lines}"
    section = root.value[keys.index("deployment")][1]
    if not isinstance(section, MappingNode):
        raise NoSurgery("the deployment section is not a mapping")
    if section.flow_style:
        close = section.end_mark.index - 1
        if text[close] != "}":
            raise NoSurgery("the deployment section does not end in a brace")
        quoted = form == "json" or any(isinstance(v, ScalarNode) and v.style == '"' for _, v in section.value)
        body = ", ".join((f'"{k}": "{v}"' if quoted else f"{k}: {v}") for k, v in entries)
        before = text[:close].rstrip()
        return close, close, (body if before.endswith("{") else f", {body}")
    if not section.value:
        raise NoSurgery("an empty deployment section")
    first = section.value[0][0]
    indent = text[text.rfind("\n", 0, first.start_mark.index) + 1: first.start_mark.index]
    if indent.strip():
        raise NoSurgery("the deployment's first key does not start its line")
    end = section.value[-1][1].end_mark.index
    line_end = text.find("\n", end)
    lines = "".join(f"{indent}{k}: {v}\n" for k, v in entries)
    if line_end < 0:
        return len(text), len(text), "\n" + lines
    return line_end + 1, line_end + 1, lines


def _pairs_edit(text: str, root: MappingNode, keys: list) -> Tuple[int, int, str]:
    """`pairs: together`: the value replaced if the key is there, else a line after evict's entry (block style)."""
    if "pairs" in keys:
        node = root.value[keys.index("pairs")][1]
        if not isinstance(node, ScalarNode):
            raise NoSurgery("pairs is not a scalar")
        return node.start_mark.index, node.end_mark.index, _deployment_value(node, "together", text)
    if "evict" not in keys:
        raise NoSurgery("no evict entry to add pairs after")
    if root.flow_style:  # JSON, or a YAML flow mapping: `, "pairs": "together"` after evict's value, spaced alike
        key, value = root.value[keys.index("evict")]
        lead = max(text.rfind(",", 0, key.start_mark.index), text.rfind("{", 0, key.start_mark.index)) + 1
        spacing = text[lead: key.start_mark.index]
        if spacing.strip() or value.end_mark.index <= key.start_mark.index:
            raise NoSurgery("evict's key is not preceded by blanks only")
        return value.end_mark.index, value.end_mark.index, f',{spacing or " "}"pairs": "together"'
    if "\r" in text:
        raise NoSurgery("carriage returns")
    after = keys.index("evict") + 1
    if after < len(keys):
        key = root.value[after][0]
        line_start = text.rfind("\n", 0, key.start_mark.index) + 1
        indent = text[line_start: key.start_mark.index]
        if indent.strip():
            raise NoSurgery("the key after evict does not start its line")
        return line_start, line_start, f"{indent}pairs: together\n"
    ending = "" if text.endswith("\n") else "\n"
    return len(text), len(text), f"{ending}pairs: together\n"


# --------------------------------------------------------------------------- restricted Python


def _assignment(tree, name: str):
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and [getattr(t, "id", None) for t in stmt.targets] == [name]:
            return stmt
    return None


def _python_quote(text: str) -> str:
    return '"' if text.count('"') >= text.count("'") else "'"


def _python_edits(text: str, changes: tuple) -> list:
    tree = ast.parse(text, filename="<policy>", mode="exec")  # positions only: the module is never run
    lines = PythonSource(text)
    edits = []
    for change in changes:
        if change.kind == "exclude":
            fn = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "evict"), None)
            if fn is None or fn.col_offset != 0 or fn.body[0].lineno == fn.lineno:
                raise NoSurgery("evict's body does not start on its own line")
            first = fn.body[0]
            indent = lines.lines[first.lineno - 1][: first.col_offset]
            if indent.strip() or not indent:
                raise NoSurgery("evict's body is not indented by blanks")
            test = exclusion_text(change.kinds, "python", _python_quote(text))
            edits.append((lines.starts[first.lineno - 1], lines.starts[first.lineno - 1],
                          f"{indent}if {test}:\n{indent * 2}return False\n"))
        elif change.kind == "pairs":
            edits.append(_python_pairs_edit(text, tree, lines))
        elif change.kind == "deployment":
            stmt = _assignment(tree, "DEPLOYMENT")
            pairs = list(zip(stmt.value.keys, stmt.value.values)) if stmt and isinstance(stmt.value, ast.Dict) else []
            found = [v for k, v in pairs if isinstance(k, ast.Constant) and k.value == change.key]
            if not found:
                edits.append(_python_deployment_addition(text, tree, lines, stmt, change))
                continue
            node = found[0]
            start, end = lines.index(node.lineno, node.col_offset), lines.index(node.end_lineno, node.end_col_offset)
            old = text[start:end]
            plain_string = len(old) >= 2 and old[0] in "'\"" and old[-1] == old[0] and old[:3] != old[0] * 3
            quote = old[0] if plain_string else None
            edits.append((start, end, f"{quote}{change.value}{quote}" if quote else repr(change.value)))
        else:
            stmt = _assignment(tree, "BUDGET")
            if stmt is None:
                raise NoSurgery("no BUDGET assignment")
            start, end = lines.index(stmt.lineno, stmt.col_offset), lines.index(stmt.end_lineno, stmt.end_col_offset)
            line_start = lines.starts[stmt.lineno - 1]
            line_end = lines.starts[stmt.end_lineno] if stmt.end_lineno < len(lines.lines) else len(text)
            rest = text[end:line_end].strip()
            if text[line_start:start].strip() or (rest and not rest.startswith("#")):
                raise NoSurgery("BUDGET shares its line with other statements")
            edits.append((line_start, line_end, ""))
    return edits


def _python_deployment_addition(text: str, tree, lines: PythonSource, stmt, change) -> Tuple[int, int, str]:
    """A DEPLOYMENT entry the policy does not set: before the dict's closing brace, or a new DEPLOYMENT before the
    first top-level def."""
    quote = _python_quote(text)
    entry = f"{quote}{change.key}{quote}: {quote}{change.value}{quote}"
    if stmt is None:
        fn = next((s for s in tree.body if isinstance(s, ast.FunctionDef)), None)
        if fn is None or fn.col_offset != 0:
            raise NoSurgery("no top-level def to put DEPLOYMENT before")
        first = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
        return lines.starts[first - 1], lines.starts[first - 1], f"DEPLOYMENT = {{{entry}}}\n\n\n"
    if not isinstance(stmt.value, ast.Dict):
        raise NoSurgery("DEPLOYMENT is not a dict display")
    close = lines.index(stmt.value.end_lineno, stmt.value.end_col_offset) - 1
    if text[close] != "}":
        raise NoSurgery("DEPLOYMENT does not end in a brace")
    before = text[:close].rstrip()
    return close, close, (entry if before.endswith("{") or before.endswith(",") and not stmt.value.keys else
                          (f" {entry}" if before.endswith(",") else f", {entry}"))


def _python_pairs_edit(text: str, tree, lines: PythonSource) -> Tuple[int, int, str]:
    """`PAIRS = "together"`: the value replaced if assigned, else a line before the first top-level def."""
    quote = _python_quote(text)
    stmt = _assignment(tree, "PAIRS")
    if stmt is not None:
        node = stmt.value
        start, end = lines.index(node.lineno, node.col_offset), lines.index(node.end_lineno, node.end_col_offset)
        return start, end, f"{quote}together{quote}"
    fn = next((s for s in tree.body if isinstance(s, ast.FunctionDef)), None)
    if fn is None or fn.col_offset != 0:
        raise NoSurgery("no top-level def to put PAIRS before")
    first = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
    return lines.starts[first - 1], lines.starts[first - 1], f"PAIRS = {quote}together{quote}\n\n\n"


# --------------------------------------------------------------------------- applying and verifying


def _apply(text: str, edits: list) -> str:
    edits = sorted(edits, key=lambda e: (e[0], e[1]))
    for (s1, e1, _), (s2, _e2, _) in zip(edits, edits[1:]):
        if e1 > s2:
            raise NoSurgery("overlapping edits")
    for start, end, new in reversed(edits):
        text = text[:start] + new + text[end:]
    return text


def edited_text(text: str, source: str, policy: Policy, changes: tuple) -> str:
    """text with changes spliced in at their positions; raises NoSurgery for shapes it does not handle."""
    form = form_of(source)
    if form != "python":
        return _apply(text, _yaml_edits(text, form, policy, changes))
    if "\r" in text:
        if text.count("\r") != text.count("\r\n"):
            raise NoSurgery("mixed line endings")
        return edited_text(text.replace("\r\n", "\n"), source, policy, changes).replace("\n", "\r\n")
    return _apply(text, _python_edits(text, changes))


def printed_text(policy: Policy, source: str) -> str:
    """The whole policy printed in the form of source (its comments and expect table are not kept)."""
    form = form_of(source)
    if form == "python":
        return policy_python(policy)
    if form == "json":
        return json.dumps(policy_document(policy), indent=2) + "\n"
    return policy_yaml(policy)


def _parses_to(text: str, source: str, intended: Policy, judge=None) -> bool:
    try:
        parsed = parse_policy_text(text, source)
        return (judge(parsed) if judge is not None else parsed) == intended
    except PrunecheckError:
        return False


def repaired_text(text: str, source: str, policy: Policy, changes: tuple, judge=None) -> Tuple[str, Policy, bool]:
    """(new text, the Policy it parses to, reprinted): minimal edits when they re-parse to exactly the repaired
    Policy (judged by `judge`, when given, as the policy was: under the operator's deployment), else the whole
    policy printed in its form; raises PrunecheckError if neither re-parses to it."""
    intended = repaired_policy(policy, changes, form_of(source))
    try:
        candidate = edited_text(text, source, policy, changes)
    except (NoSurgery, yaml.YAMLError, SyntaxError, ValueError, IndexError):
        candidate = None
    if candidate is not None and _parses_to(candidate, source, intended, judge):
        return candidate, intended, False
    printed = printed_text(intended, source)
    if _parses_to(printed, source, intended, judge):
        return printed, intended, True
    raise PrunecheckError(f"{source}: neither the edited nor the re-printed text parses to the repaired policy")


def _lines(text: str) -> List[str]:
    return io.StringIO(text, newline="\n").readlines() if text else []


def unified_diff(old: str, new: str, path: str) -> str:
    """A git-style unified diff a/PATH -> b/PATH, marking a last line without a newline."""
    shown = re.sub(r"^(\./)+", "", path.replace("\\", "/")).lstrip("/")
    out = []
    for line in difflib.unified_diff(_lines(old), _lines(new), f"a/{shown}", f"b/{shown}"):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


__all__ = ["Change", "EXCLUSIONS", "NoSurgery", "exclusion_text", "repaired_policy", "edited_text", "printed_text",
           "repaired_text", "unified_diff", "form_of"]
