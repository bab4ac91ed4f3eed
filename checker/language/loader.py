"""Reading policy and deployment files (YAML, JSON or restricted Python) into checked Policies.

Policy text is untrusted: it is parsed (PyYAML's composer, json, ast.parse) and never evaluated.
Every problem with the input, whatever its bytes, surfaces as a PolicySyntaxError(message, file,
line, col) pointing into the file.
"""

from __future__ import annotations

import bisect
import json
import os
import stat
import re
from pathlib import PurePath
from typing import Dict, List, Optional, Tuple

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from prunecheck.spec.conditions import CONDITIONS
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import (DEPLOYMENT_CHOICES, Acceptance, BoolLit, Deployment, DeploymentOverride, Loc,
                                   Policy, with_override)

from prunecheck.checker.language.expr_parser import Builder, parse_expr
from prunecheck.checker.language.pyform import check_python_arithmetic, parse_python_policy, python_expect
from prunecheck.checker.options import override_of
from prunecheck.checker.language.typecheck import MAX_DEPTH, MAX_DIGITS, MAX_FILE_BYTES, check_policy, suggestion

TOP_KEYS = ("name", "description", "evict", "rank", "budget", "deployment", "expect", "accept")
ACCEPT_KEYS = ("condition", "reason")
EXTENSIONS = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".py": "python"}

_Y = "tag:yaml.org,2002:"
_ALLOWED_TAGS = {_Y + t for t in ("str", "int", "float", "bool", "null", "timestamp", "map", "seq")}
_BREAKS = {
    "yaml": re.compile("\r\n|[\r\n\x85\u2028\u2029]"),
    "json": re.compile("\r\n|[\r\n]"),
    "python": re.compile("\r\n|[\r\n]"),
}
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.S)
_INTEGER = re.compile(r"0|[1-9][0-9]*")


# --------------------------------------------------------------------------- positions


class _Text:
    """The decoded file with a line table; positions are 1-based (line, character column)."""

    def __init__(self, text: str, file: str, form: str):
        self.text = text
        self.file = file
        self.form = form
        self.starts = [0] + [m.end() for m in _BREAKS.get(form, _BREAKS["yaml"]).finditer(text)]

    def pos(self, index: int) -> Tuple[int, int]:
        index = max(0, min(index, len(self.text)))
        line = bisect.bisect_right(self.starts, index) - 1
        return line + 1, index - self.starts[line] + 1

    def fail(self, message: str, index: int):
        raise PolicySyntaxError(message, self.file, *self.pos(index))

    def fail_at(self, message: str, node):
        self.fail(message, node.start_mark.index)


def _position_in(prefix: str) -> Tuple[int, int]:
    """(line, col) just after prefix."""
    starts = [0] + [m.end() for m in _BREAKS["yaml"].finditer(prefix)]
    return len(starts), len(prefix) - starts[-1] + 1


# --------------------------------------------------------------------------- reading and decoding


def _form_of(filename: str) -> str:
    suffix = PurePath(filename).suffix.lower()
    form = EXTENSIONS.get(suffix)
    if form is None:
        shown = f"`{suffix}`" if suffix else "no extension"
        raise PolicySyntaxError(
            f"unsupported policy file type ({shown}): expected .yaml, .yml, .json or .py", filename, 1, 1
        )
    return form


def _read(path) -> Tuple[bytes, str]:
    try:
        filename = os.fspath(path)
    except TypeError:
        raise PolicySyntaxError(f"not a file path: {type(path).__name__}", "<policy>", 1, 1) from None
    if isinstance(filename, bytes):
        filename = os.fsdecode(filename)
    try:
        # Opening a FIFO or a device can block forever: only regular files are policies.
        if os.path.exists(filename) and not os.path.isdir(filename) and not stat.S_ISREG(os.stat(filename).st_mode):
            raise PolicySyntaxError("cannot read policy: not a regular file", filename, 1, 1)
        with open(filename, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except IsADirectoryError:
        raise PolicySyntaxError("cannot read policy: it is a directory", filename, 1, 1) from None
    except FileNotFoundError:
        raise PolicySyntaxError("cannot read policy: no such file", filename, 1, 1) from None
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise PolicySyntaxError(f"cannot read policy: {reason}", filename, 1, 1) from None
    return data, filename


def decode_policy_bytes(data, filename: str) -> str:
    """UTF-8 text of a policy (BOM removed), refusing oversize, undecodable, NUL-holding or empty input."""
    if isinstance(data, str):
        try:
            size = len(data.encode("utf-8"))
        except UnicodeEncodeError as exc:
            line, col = _position_in(data[: exc.start])
            raise PolicySyntaxError("text is not valid Unicode (lone surrogate)", filename, line, col) from None
        if size > MAX_FILE_BYTES:
            raise PolicySyntaxError(
                f"policy file is too large: {size} bytes (at most {MAX_FILE_BYTES})", filename, 1, 1
            )
        text = data
    elif isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data)
        if len(data) > MAX_FILE_BYTES:
            raise PolicySyntaxError(
                f"policy file is too large: more than {MAX_FILE_BYTES} bytes", filename, 1, 1
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            nul = data.find(b"\x00", 0, exc.start)
            if nul < 0:
                line, col = _position_in(data[: exc.start].decode("utf-8"))
                raise PolicySyntaxError(
                    f"file is not valid UTF-8: byte 0x{data[exc.start]:02x} cannot be decoded", filename, line, col
                ) from None
            text = data[:nul].decode("utf-8") + "\x00"
    else:
        raise PolicySyntaxError(f"policy must be text or bytes, got {type(data).__name__}", filename, 1, 1)
    nul = text.find("\x00")
    if nul >= 0:
        line, col = _position_in(text[:nul])
        raise PolicySyntaxError("file contains a NUL byte", filename, line, col)
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise PolicySyntaxError("policy file is empty", filename, 1, 1)
    return text


# --------------------------------------------------------------------------- YAML / JSON composition


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


def _json_precheck(src: _Text) -> str:
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


def _compose(src: _Text):
    text = _json_precheck(src) if src.form == "json" else src.text
    loader = None
    try:
        loader = _Composer(text)  # the reader checks every character here
        node = loader.get_single_node()
    except _Refusal as exc:
        src.fail(exc.message, exc.index)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        message = exc.problem or exc.context or "malformed document"
        if exc.problem and exc.context:
            message = f"{message} ({exc.context})"
        if "found '<scalar>'" in message or "found unexpected end of stream" in message:
            message += "; an expression that starts with a quote must be quoted as a whole, e.g. \"'record' == kind\""
        src.fail(f"invalid {src.form.upper()}: {message}", mark.index if mark else 0)
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


def _kind_of(node) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    return "a scalar"


def _items(src: _Text, node, what: str) -> List[Tuple[str, ScalarNode, object]]:
    if not isinstance(node, MappingNode):
        src.fail_at(f"{what} must be a mapping, got {_kind_of(node)}", node)
    seen: Dict[str, int] = {}
    out = []
    for key, value in node.value:
        if not isinstance(key, ScalarNode) or key.tag == _Y + "null":
            src.fail_at(f"keys of {what} must be plain names", key)
        name = key.value
        if name in seen:
            src.fail_at(f"duplicate key `{name}` in {what} (first at line {seen[name]})", key)
        seen[name] = src.pos(key.start_mark.index)[0]
        out.append((name, key, value))
    return out


def _is_null(src: _Text, node) -> bool:
    if src.form == "json":
        return node.style is None and node.value == "null"
    return node.tag == _Y + "null"


def _string(src: _Text, node, what: str) -> str:
    if not isinstance(node, ScalarNode):
        src.fail_at(f"{what} must be a string, got {_kind_of(node)}", node)
    if _is_null(src, node):
        src.fail_at(f"{what} is empty", node)
    if src.form == "json" and node.style != '"':
        src.fail_at(f"{what} must be a string, got `{node.value[:40]}`", node)
    if src.form == "yaml" and node.tag == _Y + "bool":
        src.fail_at(f"{what} must be a string, got the boolean `{node.value}` (quote it)", node)
    return node.value


def _scalar_locator(src: _Text, node):
    """Map offsets in a scalar's value to file positions (exact for single-line scalars)."""
    text, value = src.text, node.value
    start, end = node.start_mark.index, node.end_mark.index
    if node.style in ("'", '"'):
        lo = start + 1
    elif node.style in ("|", ">"):
        brk = _BREAKS["yaml"].search(text, start, end)
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


def _expression(src: _Text, node, what: str, builder: Builder):
    if not isinstance(node, ScalarNode):
        src.fail_at(f"`{what}` must be an expression (a string, number or boolean), got {_kind_of(node)}", node)
    if _is_null(src, node):
        src.fail_at(f"`{what}` has no expression", node)
    plain_json_bool = src.form == "json" and node.style is None and node.value in ("true", "false")
    if plain_json_bool or (src.form == "yaml" and node.tag == _Y + "bool"):
        if node.value.lower() not in ("true", "false"):
            src.fail_at(f"`{node.value}` is a YAML 1.1 boolean: write true or false", node)
        loc = Loc(*src.pos(node.start_mark.index))
        return builder.make(BoolLit, node.value.lower() == "true", loc=loc)
    return parse_expr(node.value, src.file, _scalar_locator(src, node), builder=builder)


def _budget(src: _Text, node) -> int:
    if not isinstance(node, ScalarNode) or node.style is not None or not _INTEGER.fullmatch(node.value):
        shown = node.value[:40] if isinstance(node, ScalarNode) else _kind_of(node)
        src.fail_at(f"budget must be a whole number of tokens >= 1, got `{shown}`", node)
    if len(node.value) > MAX_DIGITS:
        src.fail_at(f"budget is too large: at most {MAX_DIGITS} digits", node)
    value = int(node.value)
    if value < 1:
        src.fail_at("budget must be at least 1", node)
    return value


def _deployment(src: _Text, node) -> Deployment:
    return Deployment(**_deployment_values(src, node))


def _deployment_values(src: _Text, node) -> Dict[str, str]:
    values = {}
    for key, knode, vnode in _items(src, node, "deployment"):
        if key not in DEPLOYMENT_CHOICES:
            src.fail_at(
                f"unknown deployment key `{key[:64]}`{suggestion(key, DEPLOYMENT_CHOICES)} "
                f"(keys: {', '.join(DEPLOYMENT_CHOICES)})",
                knode,
            )
        value = _string(src, vnode, f"deployment {key}")
        allowed = DEPLOYMENT_CHOICES[key]
        if value not in allowed:
            src.fail_at(
                f"deployment {key} must be one of {', '.join(allowed)}, got `{value[:64]}`{suggestion(value, allowed)}",
                vnode,
            )
        values[key] = value
    return values


def _expect(src: _Text, node) -> Dict[str, str]:
    out = {}
    for key, _knode, vnode in _items(src, node, "expect"):
        if not isinstance(vnode, ScalarNode) or _is_null(src, vnode):
            src.fail_at(f"expected verdict for `{key[:64]}` must be a string", vnode)
        out[key] = vnode.value
    return out


def _reason(src: _Text, node, what: str) -> str:
    reason = _string(src, node, what)
    if not reason.strip():
        src.fail_at(f"{what} must not be blank: say why the finding is accepted", node)
    return " ".join(reason.split())


def _acceptance(src: _Text, node, seen: Dict[str, int]) -> Acceptance:
    fields = {}
    for key, knode, vnode in _items(src, node, "an accept entry"):
        if key not in ACCEPT_KEYS:
            src.fail_at(f"unknown key `{key[:64]}` in an accept entry{suggestion(key, ACCEPT_KEYS)} "
                        f"(keys: {', '.join(ACCEPT_KEYS)})", knode)
        fields[key] = vnode
    for required in ACCEPT_KEYS:
        if required not in fields:
            src.fail_at(f"an accept entry needs `{required}` (keys: {', '.join(ACCEPT_KEYS)})", node)
    condition = _string(src, fields["condition"], "accept condition")
    if condition not in CONDITIONS:
        src.fail_at(f"accept names unknown condition `{condition[:64]}`{suggestion(condition, CONDITIONS)} "
                    f"(conditions: {', '.join(CONDITIONS)})", fields["condition"])
    if condition in seen:
        src.fail_at(f"{condition} is accepted twice (first at line {seen[condition]})", fields["condition"])
    seen[condition] = src.pos(fields["condition"].start_mark.index)[0]
    reason = _reason(src, fields["reason"], "accept reason")
    return Acceptance(condition, reason, "inSource", src.file, Loc(*src.pos(node.start_mark.index)))


def _accepts(src: _Text, node) -> tuple:
    """The `accept:` list: findings the policy's author accepts, each a condition with a non-blank reason."""
    if not isinstance(node, SequenceNode):
        src.fail_at(f"accept must be a list of {{condition, reason}} entries, got {_kind_of(node)}", node)
    seen: Dict[str, int] = {}
    return tuple(_acceptance(src, entry, seen) for entry in node.value)


def _yaml_policy(src: _Text) -> Tuple[Policy, Dict[str, str]]:
    root = _compose(src)
    if not isinstance(root, MappingNode):
        src.fail_at(f"a policy must be a mapping with keys {', '.join(TOP_KEYS)}; got {_kind_of(root)}", root)
    fields = {}
    for key, knode, vnode in _items(src, root, "the policy"):
        if key not in TOP_KEYS:
            src.fail_at(
                f"unknown key `{key[:64]}`{suggestion(key, TOP_KEYS)} (allowed keys: {', '.join(TOP_KEYS)})", knode
            )
        fields[key] = vnode
    for required in ("name", "evict"):
        if required not in fields:
            src.fail_at(f"missing required key `{required}`", root)
    name = _string(src, fields["name"], "name")
    if not name.strip():
        src.fail_at("name must not be blank", fields["name"])
    description = _string(src, fields["description"], "description") if "description" in fields else ""
    budget = _budget(src, fields["budget"]) if "budget" in fields else None
    deployment = _deployment(src, fields["deployment"]) if "deployment" in fields else Deployment()
    expect = _expect(src, fields["expect"]) if "expect" in fields else {}
    accepts = _accepts(src, fields["accept"]) if "accept" in fields else ()
    builder = Builder(src.file)  # one node budget for the whole policy
    evict = _expression(src, fields["evict"], "evict", builder)
    rank = _expression(src, fields["rank"], "rank", builder) if "rank" in fields else None
    policy = Policy(
        name=name,
        evict=evict,
        rank=rank,
        budget=budget,
        deployment=deployment,
        description=description,
        source=src.file,
        accepts=accepts,
    )
    return policy, expect


def _python_policy(src: _Text) -> Tuple[Policy, Dict[str, str], tuple]:
    parts = parse_python_policy(src.text, src.file)
    values = {}
    for key, value, key_loc, value_loc in parts.deployment or ():
        if key not in DEPLOYMENT_CHOICES:
            raise PolicySyntaxError(
                f"unknown deployment key `{key[:64]}`{suggestion(key, DEPLOYMENT_CHOICES)} "
                f"(keys: {', '.join(DEPLOYMENT_CHOICES)})",
                src.file,
                key_loc.line,
                key_loc.col,
            )
        allowed = DEPLOYMENT_CHOICES[key]
        if value not in allowed:
            raise PolicySyntaxError(
                f"deployment {key} must be one of {', '.join(allowed)}, got `{value[:64]}`{suggestion(value, allowed)}",
                src.file,
                value_loc.line,
                value_loc.col,
            )
        values[key] = value
    accepts = tuple(_python_acceptance(src, *entry) for entry in parts.accept)
    policy = Policy(
        name=parts.name or (PurePath(src.file).stem or "policy"),
        evict=parts.evict,
        rank=parts.rank,
        budget=parts.budget,
        deployment=Deployment(**values),
        description=parts.description,
        source=src.file,
        accepts=accepts,
    )
    return policy, parts.expect or {}, parts.floats


def _python_acceptance(src: _Text, condition: str, reason: str, key_loc: Loc, value_loc: Loc) -> Acceptance:
    """An ACCEPT = {"C2": "reason"} entry of a Python-form policy, checked as the YAML form's `accept:` is."""
    if condition not in CONDITIONS:
        raise PolicySyntaxError(f"ACCEPT names unknown condition `{condition[:64]}`{suggestion(condition, CONDITIONS)} "
                                f"(conditions: {', '.join(CONDITIONS)})", src.file, key_loc.line, key_loc.col)
    if not reason.strip():
        raise PolicySyntaxError("ACCEPT reason must not be blank: say why the finding is accepted", src.file,
                                value_loc.line, value_loc.col)
    return Acceptance(condition, " ".join(reason.split()), "inSource", src.file, key_loc)


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


def _parse(data, filename: str, deployment_override) -> Tuple[Policy, Dict[str, str]]:
    form = _form_of(filename)
    src = _Text(decode_policy_bytes(data, filename), filename, form)
    if form == "python":
        policy, expect, floats = _python_policy(src)
    else:
        (policy, expect), floats = _yaml_policy(src), None
    check_policy(policy, filename)
    if floats is not None:  # after the type check, whose messages are the more specific ones
        check_python_arithmetic((policy.evict, policy.rank), floats, filename)
    return with_override(policy, as_override(deployment_override, filename)), expect


def as_override(override, filename: str = "<deployment>") -> Optional[DeploymentOverride]:
    """None, a DeploymentOverride, or a complete Deployment (an override of every key) as a DeploymentOverride."""
    return override_of(override, filename)


# --------------------------------------------------------------------------- public API


def parse_policy_text(text_or_bytes, filename: str, deployment_override=None) -> Policy:
    """Parse and type-check policy text; the form is chosen by filename's extension (.yaml .yml .json .py)."""
    filename = str(filename)
    return _guarded(filename, lambda: _parse(text_or_bytes, filename, deployment_override)[0])


def load_policy(path, deployment_override=None) -> Policy:
    """Read, parse and type-check a policy file; deployment_override (a DeploymentOverride, or a Deployment: every
    key) sets its keys in the file's deployment, the others keep the file's values."""

    def run():
        data, filename = _read(path)
        return _parse(data, filename, deployment_override)[0]

    return _guarded(_display(path), run)


def expected_verdicts(path) -> Dict[str, str]:
    """The `expect` mapping (YAML/JSON) or module-level EXPECT literal (.py) of a policy file; {} if absent.

    Only the file's structure is read, so it also works for example policies that are meant to be refused.
    """

    def run():
        data, filename = _read(path)
        form = _form_of(filename)
        src = _Text(decode_policy_bytes(data, filename), filename, form)
        if form == "python":
            return python_expect(src.text, filename)
        root = _compose(src)
        if not isinstance(root, MappingNode):
            return {}
        for key, _knode, vnode in _items(src, root, "the policy"):
            if key == "expect":
                return _expect(src, vnode)
        return {}

    return _guarded(_display(path), run)


def parse_deployment_text(text_or_bytes, filename: str) -> DeploymentOverride:
    """A DeploymentOverride (only the keys given) from YAML/JSON text: a bare mapping of deployment keys, or a
    top-level `deployment:` mapping."""
    filename = str(filename)

    def run():
        form = _form_of(filename)
        if form == "python":
            raise PolicySyntaxError("a deployment file must be YAML or JSON", filename, 1, 1)
        src = _Text(decode_policy_bytes(text_or_bytes, filename), filename, form)
        root = _compose(src)
        if not isinstance(root, MappingNode):
            src.fail_at(f"a deployment file must be a mapping, got {_kind_of(root)}", root)
        items = _items(src, root, "the deployment file")
        for key, _knode, vnode in items:
            if key == "deployment":
                return DeploymentOverride.of(_deployment_values(src, vnode), filename)
        return DeploymentOverride.of(_deployment_values(src, root), filename)

    return _guarded(filename, run)


def load_deployment(path) -> DeploymentOverride:
    """Read a deployment file (see parse_deployment_text)."""

    def run():
        data, filename = _read(path)
        return parse_deployment_text(data, filename)

    return _guarded(_display(path), run)


def _display(path) -> str:
    try:
        return os.fsdecode(os.fspath(path))
    except Exception:
        return "<policy>"


__all__ = [
    "load_policy",
    "parse_policy_text",
    "load_deployment",
    "parse_deployment_text",
    "as_override",
    "expected_verdicts",
    "decode_policy_bytes",
    "TOP_KEYS",
    "EXTENSIONS",
]
