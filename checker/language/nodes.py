"""YAML and JSON documents composed into PyYAML nodes (never constructed into objects), and readers of those nodes.

Every refusal is a PolicySyntaxError located at the node (or character) it is about.
"""

from __future__ import annotations

import json
import re
from typing import Dict, List, Tuple

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from prunecheck.checker.language.source_text import BREAKS, SourceText
from prunecheck.checker.language.typecheck import MAX_DEPTH

YAML_TAG = "tag:yaml.org,2002:"
_ALLOWED_TAGS = {YAML_TAG + t for t in ("str", "int", "float", "bool", "null", "timestamp", "map", "seq")}
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.S)


class _Refusal(Exception):
    def __init__(self, message: str, index: int):
        super().__init__(message)
        self.message = message
        self.index = index


class _Composer(yaml.SafeLoader):
    """SafeLoader's composer, refusing anchors, aliases, unknown tags and deep nesting."""

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise _Refusal("YAML aliases (*name) are not allowed in a policy", event.start_mark.index)
        if getattr(event, "anchor", None) is not None:
            raise _Refusal("YAML anchors (&name) are not allowed in a policy", event.start_mark.index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _Refusal(f"too many nested collections (more than {MAX_DEPTH})", event.start_mark.index)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if node.tag not in _ALLOWED_TAGS:
            raise _Refusal(f"YAML tag `{node.tag[:80]}` is not allowed in a policy", node.start_mark.index)
        return node


def _json_precheck(src: SourceText) -> str:
    depth = 0
    for match in _JSON_TOKENS.finditer(src.text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > MAX_DEPTH:
                src.fail(f"too many nested collections (more than {MAX_DEPTH})", match.start())
        elif token in ("]", "}"):
            depth -= 1
    try:
        json.loads(src.text, parse_int=str, parse_float=str, parse_constant=str, object_pairs_hook=list)
    except json.JSONDecodeError as exc:
        src.fail(f"invalid JSON: {exc.msg}", exc.pos)
    except (ValueError, RecursionError) as exc:
        src.fail(f"invalid JSON: {exc}", 0)
    # Valid JSON has tabs only between tokens (never raw inside strings); PyYAML refuses them there.
    return src.text.replace("\t", " ")


def _yaml_failure(src: SourceText, exc: yaml.MarkedYAMLError):
    mark = exc.problem_mark or exc.context_mark
    message = exc.problem or exc.context or "malformed document"
    if exc.problem and exc.context:
        message = f"{message} ({exc.context})"
    if "found '<scalar>'" in message or "found unexpected end of stream" in message:
        message += "; an expression that starts with a quote must be quoted as a whole, e.g. \"'record' == kind\""
    src.fail(f"invalid {src.form.upper()}: {message}", mark.index if mark else 0)


def compose(src: SourceText):
    """The root node of a YAML or JSON document (JSON checked as JSON first)."""
    text = _json_precheck(src) if src.form == "json" else src.text
    loader = None
    try:
        loader = _Composer(text)  # the reader checks every character here
        node = loader.get_single_node()
    except _Refusal as exc:
        src.fail(exc.message, exc.index)
    except yaml.MarkedYAMLError as exc:
        _yaml_failure(src, exc)
    except yaml.reader.ReaderError as exc:
        src.fail(f"invalid character {chr(exc.character)!r} ({exc.reason})", exc.position)
    except yaml.YAMLError as exc:
        src.fail(f"invalid {src.form.upper()}: {' '.join(str(exc).split())[:200]}", 0)
    finally:
        if loader is not None:
            loader.dispose()
    if node is None:
        src.fail("policy file is empty (it holds only comments)", 0)
    return node


def kind_of(node) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    return "a scalar"


def items(src: SourceText, node, what: str) -> List[Tuple[str, ScalarNode, object]]:
    """(name, key node, value node) of a mapping whose keys are plain names, each given once."""
    if not isinstance(node, MappingNode):
        src.fail_at(f"{what} must be a mapping, got {kind_of(node)}", node)
    seen: Dict[str, int] = {}
    out = []
    for key, value in node.value:
        if not isinstance(key, ScalarNode) or key.tag == YAML_TAG + "null":
            src.fail_at(f"keys of {what} must be plain names", key)
        name = key.value
        if name in seen:
            src.fail_at(f"duplicate key `{name}` in {what} (first at line {seen[name]})", key)
        seen[name] = src.pos(key.start_mark.index)[0]
        out.append((name, key, value))
    return out


def is_null(src: SourceText, node) -> bool:
    if src.form == "json":
        return node.style is None and node.value == "null"
    return node.tag == YAML_TAG + "null"


def string(src: SourceText, node, what: str) -> str:
    """A scalar that is a string in its form (quoted in JSON; not a YAML boolean), not null."""
    if not isinstance(node, ScalarNode):
        src.fail_at(f"{what} must be a string, got {kind_of(node)}", node)
    if is_null(src, node):
        src.fail_at(f"{what} is empty", node)
    if src.form == "json" and node.style != '"':
        src.fail_at(f"{what} must be a string, got `{node.value[:40]}`", node)
    if src.form == "yaml" and node.tag == YAML_TAG + "bool":
        src.fail_at(f"{what} must be a string, got the boolean `{node.value}` (quote it)", node)
    return joined_surrogates(src, node, node.value)


def joined_surrogates(src: SourceText, node, value: str) -> str:
    """JSON (and YAML) escape a character beyond U+FFFF as two surrogates (`\\ud83d\\udd27`, as Python's json.dumps
    writes it): the parser leaves them apart, so join them; a lone one is refused."""
    if not any("\ud800" <= ch <= "\udfff" for ch in value):
        return value
    try:
        return value.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:
        src.fail_at("text is not valid Unicode (lone surrogate)", node)


def reason(src: SourceText, node, what: str) -> str:
    """A non-blank string, its whitespace runs collapsed to single spaces."""
    text = string(src, node, what)
    if not text.strip():
        src.fail_at(f"{what} must not be blank: say why the finding is accepted", node)
    return " ".join(text.split())


def scalar_locator(src: SourceText, node):
    """Map offsets in a scalar's value to file positions (exact for single-line scalars)."""
    text, value = src.text, node.value
    start, end = node.start_mark.index, node.end_mark.index
    if node.style in ("'", '"'):
        lo = start + 1
    elif node.style in ("|", ">"):
        brk = BREAKS["yaml"].search(text, start, end)
        lo = brk.end() if brk else start
    else:
        lo = start
    if text.startswith(value, lo):
        return lambda offset: src.pos(lo + max(0, min(offset, len(value))))
    index, p = [], lo
    for ch in value:
        limit = min(end, p + 512)
        q = text.find(ch, p, limit)
        if ch in " \n":  # folding turns line breaks into spaces and back
            for alt in ("\n", "\r", " "):
                r = text.find(alt, p, limit)
                if r >= 0 and (q < 0 or r < q):
                    q = r
        if q >= 0:
            index.append(q)
            p = q + 1
        else:
            index.append(min(p, max(end - 1, lo)))
    index.append(p)
    return lambda offset: src.pos(index[max(0, min(offset, len(index) - 1))])


__all__ = ["YAML_TAG", "compose", "is_null", "items", "kind_of", "reason", "scalar_locator", "string"]
