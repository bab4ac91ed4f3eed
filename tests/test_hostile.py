"""Hostile policy text: mutation fuzzing, raw bytes, code-execution attempts, YAML bombs and the CLI's one-line error.

The promise under test: whatever the bytes, parse_policy_text ends, within a bound on its work, in a Policy or in a
PolicySyntaxError that points (line >= 1, col >= 1) into the text; nothing in the text is ever run; and the CLI
turns any refusal into exit code 2 with exactly one `prunecheck: error: FILE:LINE:COL: message` line.

Tests marked xfail(strict=True) pin down defects found while writing this file (see each reason); they flip to
XPASS, and so fail, once the parser is fixed: then remove the marker.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import prunecheck.checker.check  # noqa: F401  (the CLI imports it lazily: warm it so CLI call counts measure parsing)
from prunecheck.checker.language.loader import load_policy, parse_policy_text
from prunecheck.checker.language.typecheck import MAX_DEPTH, MAX_FILE_BYTES
from prunecheck.cli import main
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import Policy

from conftest import EXAMPLES, HANG_GUARD, PARSE_CALLS, counted_calls
from support import at
MASKED = "policy is nested too deeply or is too large"  # the loader's last-resort text for RecursionError
# Names that cannot exist on disk: CPython re-opens the filename of a Python SyntaxError to show the line.
NOWHERE = "<hostile>/policy"

YAML_SEED = """\
name: keep-recent
description: Evict stale tool output first.
evict: kind == 'tool_output' and idle > 10 and not pinned
rank: "-(recency) + min(age, 100, step, 0.5) / max(tokens, 1)"
budget: 8000
deployment:
  pins: host
  undo: versioned
expect:
  C1: holds
"""
YAML_BLOCK_SEED = (
    "name: t\nevict: |\n  tokens > 1\n  and kind in ['record', 'diff']\nrank: >-\n  reads /\n  (1 + age)\n"
)
JSON_SEED = """\
{
\t"name": "keep-recent",
\t"evict": "kind == 'tool_output' and idle > 10 and not pinned",
\t"rank": "reads / (1 + age)",
\t"budget": 8000,
\t"deployment": {"pins": "host", "undo": "versioned"},
\t"expect": {"C1": "holds"}
}
"""
PY_SEED = '''\
"""Evict stale tool output first."""
NAME = "keep-recent"
BUDGET = 8000
DEPLOYMENT = {"pins": "host", "undo": "versioned"}
EXPECT = {"C1": "holds"}


def evict(span, window):
    if span.pinned:
        return False
    elif span.kind in ("stack_trace", "diff"):
        return True
    return span.idle >= 2.5 * (1 + span.reads) and window.window_tokens > window.budget


def rank(span, window):
    return -span.recency + min(span.age, 100, window.step) / max(span.tokens, 1)
'''
SEEDS = [(".yaml", YAML_SEED), (".yaml", YAML_BLOCK_SEED), (".json", JSON_SEED), (".py", PY_SEED)]
SEEDS += [(p.suffix, p.read_text(encoding="utf-8")) for p in sorted(EXAMPLES.iterdir())
          if p.suffix in (".yaml", ".json", ".py")]
ALL_TEXT = "".join(text for _, text in SEEDS)

SPECIAL_CHARS = [
    "\x00", "\ufeff", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069",
    "\u200b", "\u200e", "\u200f", "\x85", "\u2028", "\u2029", "\ud800", "\udbff", "\udc00", "\udfff", "\r", "\t",
    "\x0b", "\x0c", "\x1b", "\x7f", "\xa0", "\u3000", "\uffff", "\ufffe", "\U0001f600", "\u0301", "\uff11",
    "\u0663", "\ufb01",
]
HOSTILE_TOKENS = [
    "&a ", "*a", "<<: *a", "!!python/object/apply:os.system ['true']", "!!python/name:os.system", "!foo ", "? ",
    "- ", "|\n  ", ">-\n  ", "---\n", "...\n", "%TAG ! tag:yaml.org,2002:python/\n", "{a: [b]}", "~", "yes",
    "NaN", "Infinity", "1e400", "0x1F", "9" * 31, ".5", "__import__", "__class__", "lambda", "import os\n",
    "@dec\n", "class X:\n", "yield ", "await ", "f'{span}'", "(x := 1)", "**", "//", "%", "~", ":=", "==", "=",
    " and ", " or ", " not ", " in ", " if ", " else ", "span.", "window.", "min(", "abs(", "(", ")", "[", "]", "{",
    "}", ",", ":", "'", '"', "\\", "#", "\r\n", "\n    ", "\n        ", "return ", "if span.pinned:\n", "else:\n",
    "pass",
]
TOKEN_RE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|[0-9]+(?:\.[0-9]+)?|\s+|.", re.S)


# --------------------------------------------------------------------------- the property, with a bound on work


class _Overtime(BaseException):
    """Raised by SIGALRM: a BaseException, so the loader's `except Exception` guard cannot swallow it."""


@contextlib.contextmanager
def _deadline(seconds: float):
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield  # no alarm available: only the call count bounds the parse
        return

    def on_alarm(signum, frame):
        raise _Overtime()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _shown(data, limit: int = 200) -> str:
    text = repr(data)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(data)} long)"


def _as_text(data) -> str:
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


def verdict(data, filename: str):
    """parse_policy_text's answer (a Policy or the PolicySyntaxError), checked against the promise: within
    PARSE_CALLS function calls (a hang, e.g. reading from a pipe, is cut off by the HANG_GUARD alarm)."""
    try:
        with _deadline(HANG_GUARD), counted_calls() as calls:
            try:
                result = parse_policy_text(data, filename)
            except PolicySyntaxError as err:
                result = err
    except _Overtime:
        raise AssertionError(f"no verdict within {HANG_GUARD} s (hung) for {filename}: {_shown(data)}") from None
    assert calls.count < PARSE_CALLS, f"{calls.count} calls for {filename}: {_shown(data)}"
    if isinstance(result, PolicySyntaxError):
        check_error(result, data, filename)
    else:
        assert isinstance(result, Policy), type(result)
    return result


def check_error(err: PolicySyntaxError, data, filename: str) -> None:
    text = _as_text(data)
    assert err.file == filename
    assert isinstance(err.line, int) and isinstance(err.col, int)
    assert err.line >= 1 and err.col >= 1, str(err)
    assert err.line <= len(text.splitlines()) + 1, f"line beyond the text: {err}"
    assert err.col <= len(text) + 1, f"column beyond the text: {err}"
    assert err.message and "\n" not in str(err) and len(err.message) < 1000, str(err)
    assert not err.message.startswith("internal error"), f"a crash masked by the loader's guard: {err}"
    assert err.message != MASKED, f"a RecursionError/MemoryError masked by the loader's guard: {err}"


def refusal(data, filename: str) -> PolicySyntaxError:
    result = verdict(data, filename)
    assert isinstance(result, PolicySyntaxError), f"accepted: {_shown(data)}"
    return result


# --------------------------------------------------------------------------- structured mutation (hypothesis)

position = st.integers(0, 5000)  # taken modulo len(text) + 1
span_length = st.integers(0, 64)
hostile_char = st.one_of(st.characters(), st.sampled_from(SPECIAL_CHARS))
fragment = st.builds(lambda i, n: ALL_TEXT[i:i + n], st.integers(0, len(ALL_TEXT)), st.integers(1, 120))
payload = st.one_of(st.text(hostile_char, min_size=1, max_size=8), st.sampled_from(HOSTILE_TOKENS), fragment)
mutation = st.one_of(
    st.tuples(st.sampled_from(["insert", "replace", "token-insert"]), position, span_length, payload),
    st.tuples(st.sampled_from(["delete", "duplicate", "token-delete", "token-duplicate"]), position, span_length,
              st.just("")),
    st.tuples(st.sampled_from(["swap", "token-swap"]), position, span_length, position),
    st.tuples(st.just("repeat"), position, st.integers(1, 8), st.integers(2, 64)),
)


def mutate(text: str, op) -> str:
    kind, a, b, extra = op
    if kind.startswith("token-"):
        toks = TOKEN_RE.findall(text)
        if not toks:
            return text
        i = a % len(toks)
        if kind == "token-insert":
            toks.insert(i, extra)
        elif kind == "token-delete":
            del toks[i:i + 1 + b % 3]
        elif kind == "token-duplicate":
            toks[i:i] = toks[i:i + 1 + b % 3]
        else:
            j = extra % len(toks)
            toks[i], toks[j] = toks[j], toks[i]
        return "".join(toks)
    i = a % (len(text) + 1)
    j = min(len(text), i + b)
    if kind == "insert":
        return text[:i] + extra + text[i:]
    if kind == "replace":
        return text[:i] + extra + text[j:]
    if kind == "delete":
        return text[:i] + text[j:]
    if kind == "duplicate":
        return text[:j] + text[i:j] + text[j:]
    if kind == "swap":
        k = extra % (len(text) + 1)
        m = min(len(text), k + b)
        if k < i:
            i, j, k, m = k, m, i, j
        return text if k < j else text[:i] + text[k:m] + text[j:k] + text[i:j] + text[m:]
    return text[:j] + text[i:j] * extra + text[j:]  # repeat (bounded: at most 8 characters x 64)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.sampled_from(SEEDS),
    ops=st.lists(mutation, min_size=1, max_size=6),
    as_bytes=st.booleans(),
    other_extension=st.sampled_from([None, ".yaml", ".json", ".py", ".yml"]),
)
def test_mutated_policies_end_in_a_policy_or_a_positioned_error(seed, ops, as_bytes, other_extension):
    extension, text = seed
    for op in ops:
        text = mutate(text, op)
    data = text.encode("utf-8", "surrogatepass") if as_bytes else text  # lone surrogates: 3-byte WTF-8 forms
    verdict(data, NOWHERE + (other_extension or extension))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=st.sampled_from(SEEDS), second=st.sampled_from(SEEDS), cut=st.tuples(position, position, position))
def test_splices_of_two_policies_end_in_a_verdict(first, second, cut):
    (extension, a), (_, b) = first, second
    i, j, k = cut[0] % (len(a) + 1), cut[1] % (len(a) + 1), cut[2] % (len(b) + 1)
    verdict(a[:min(i, j)] + b[k:] + a[max(i, j):], NOWHERE + extension)


STRUCTURAL_BYTES = list(b"[]{}():,'\"#&*!|>-?%@\\\t\n\r =.<>+/_0123456789aeinrst")
STRUCTURAL_BYTES += [0x00, 0x80, 0xC0, 0xED, 0xEF, 0xFF]
raw = st.one_of(
    st.binary(max_size=2000),
    st.lists(st.sampled_from(STRUCTURAL_BYTES), max_size=400).map(bytes),
    st.tuples(st.sampled_from([b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\xed\xa0\x80", b"\xc0\xaf"]),
              st.binary(max_size=200)).map(b"".join),
)


@pytest.mark.parametrize("extension", [".yaml", ".json", ".py"])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=raw)
def test_raw_bytes_end_in_a_verdict(extension, data):
    verdict(data, NOWHERE + extension)


# --------------------------------------------------------------------------- code execution: refused, nothing runs

_EVENTS: list = []
_ARMED = [False]
_WATCHED = ("exec", "os.", "subprocess.", "shutil.", "ctypes.", "socket.", "pickle.", "marshal.", "webbrowser.",
            "builtins.input", "code.__new__", "function.__new__", "import", "open")


def _audit(event, args, armed=_ARMED, events=_EVENTS, watched=_WATCHED):
    # default arguments, not globals: the hook outlives this module's globals at interpreter exit
    if armed[0] and event.startswith(watched):
        events.append((event, args))


_HOOK_INSTALLED = []


@contextlib.contextmanager
def watching():
    """Record audit events (exec, os.system, subprocess, import, open, ...) raised while the block runs."""
    if not _HOOK_INSTALLED:
        sys.addaudithook(_audit)  # process-wide and permanent; it records nothing unless armed
        _HOOK_INSTALLED.append(True)
    _EVENTS.clear()
    _ARMED[0] = True
    try:
        yield _EVENTS
    finally:
        _ARMED[0] = False


def _fn(body: str) -> str:
    return f"def evict(span, window):\n    return {body}\n"


# id -> (extension, source with {m} for the marker path, line, col, words, how it would run)
# "exec": import the module and call evict/rank; "eval": eval the evict string; "unsafe": yaml.unsafe_load.
PAYLOADS = {
    "os-system": (".py", _fn("__import__('os').system('touch {m}') == 0"), 2, 12, ["call to `__import__`"], "exec"),
    "mro": (".py", _fn("span.__class__.__mro__ == open('{m}', 'w')"), 2, 27, ["dunder attribute `__mro__`"], "exec"),
    "class-dunder": (".py", _fn("span.__class__ == open('{m}', 'w')"), 2, 17, ["dunder attribute `__class__`"], "exec"),
    "getattr": (".py", _fn("getattr(span, 'tokens', open('{m}', 'w')) > 1"), 2, 12, ["call to `getattr`"], "exec"),
    "lambda": (".py", _fn("(lambda: open('{m}', 'w'))() == 1"), 2, 13, ["lambda is not allowed"], "exec"),
    "list-comp": (".py", _fn("[x for x in open('{m}', 'w')] == 1"), 2, 12, ["list comprehension"], "exec"),
    "dict-comp": (".py", _fn("{{x: 1 for x in open('{m}', 'w')}} == 1"), 2, 12, ["dict comprehension"], "exec"),
    "set-comp": (".py", _fn("{{x for x in open('{m}', 'w')}} == 1"), 2, 12, ["set comprehension"], "exec"),
    # a generator expression that is a call's only argument starts at the call's parenthesis
    "generator": (".py", _fn("abs(x for x in open('{m}', 'w')) > 1"), 2, 15, ["generator expression"], "exec"),
    "f-string": (".py", _fn("f\"{{open('{m}', 'w')}}\" == 'x'"), 2, 12, ["f-string"], "exec"),
    "walrus": (".py", _fn("(f := open('{m}', 'w')) == 1"), 2, 13, ["walrus"], "exec"),
    "eval": (".py", _fn("eval(\"open('{m}', 'w')\") == 1"), 2, 12, ["call to `eval`"], "exec"),
    "exec": (".py", _fn("exec(\"open('{m}', 'w')\") == 1"), 2, 12, ["call to `exec`"], "exec"),
    "open": (".py", _fn("open('{m}', 'w') == 1"), 2, 12, ["call to `open`"], "exec"),
    "compile": (".py", _fn("compile('1', '{m}', 'eval') == 1"), 2, 12, ["call to `compile`"], None),
    "import": (".py", "import os\nos.system('touch {m}')\n" + _fn("True"), 1, 1, ["import is not allowed"], "exec"),
    "from-import": (".py", "from pathlib import Path\nPath('{m}').touch()\n" + _fn("True"), 1, 1, ["import"], "exec"),
    "import-in-function": (".py", "def evict(span, window):\n    import pathlib\n    pathlib.Path('{m}').touch()\n"
                           "    return True\n", 2, 5, ["import is not allowed"], "exec"),
    "from-import-in-function": (".py", "def evict(span, window):\n    from pathlib import Path\n"
                                "    return Path('{m}').touch()\n", 2, 5, ["import is not allowed"], "exec"),
    "decorator": (".py", "@lambda f: open('{m}', 'w')\ndef evict(span, window):\n    return True\n", 1, 2,
                  ["decorator is not allowed"], "exec"),
    "class": (".py", "class Evil:\n    open('{m}', 'w')\n\n\n" + _fn("True"), 1, 1, ["class definition"], "exec"),
    "class-in-function": (".py", "def evict(span, window):\n    class Evil:\n        open('{m}', 'w')\n"
                          "    return True\n", 2, 5, ["class definition"], "exec"),
    "global": (".py", "def evict(span, window):\n    global open\n    return open('{m}', 'w') == 1\n", 2, 5,
               ["global statement"], "exec"),
    "yield": (".py", _fn("(yield open('{m}', 'w'))"), 2, 13, ["yield is not allowed"], "exec"),
    "await": (".py", _fn("(await open('{m}', 'w')) == 1"), 2, 13, ["await is not allowed"], None),  # no compile
    "async-def": (".py", "async def evict(span, window):\n    return open('{m}', 'w')\n", 1, 1, ["async def"], "exec"),
    "star-args": (".py", _fn("max(*[open('{m}', 'w')], 1) > 1"), 2, 16, ["starred expression"], "exec"),
    "keyword-args": (".py", _fn("max(span.tokens, 1, key=open('{m}', 'w')) > 1"), 2, 32, ["keyword argument"], "exec"),
    "keyword-args-min": (".py", _fn("min(1, 2, default=open('{m}', 'w')) > 1"), 2, 22, ["keyword argument"], "exec"),
    "method-call": (".py", _fn("span.tokens.bit_length() > len(open('{m}', 'w').name)"), 2, 12,
                    ["method call `span.tokens.bit_length(...)`"], "exec"),
    "module-expression": (".py", "exec(\"open('{m}', 'w')\")\n" + _fn("True"), 1, 1, ["call to `exec`"], "exec"),
    "module-lambda": (".py", "evict = lambda span, window: open('{m}', 'w')\n", 1, 1,
                      ["module-level assignment to `evict`"], "exec"),
    "constant-call": (".py", "NAME = open('{m}', 'w').name\n" + _fn("True"), 1, 8, ["NAME must be"], "exec"),
    "budget-call": (".py", "BUDGET = __import__('os').system('touch {m}')\n" + _fn("True"), 1, 10, ["BUDGET must be"],
                    "exec"),
    "with": (".py", "def evict(span, window):\n    with open('{m}', 'w'):\n        return True\n", 2, 5,
             ["with statement"], "exec"),
    "default-argument": (".py", "def evict(span, window=open('{m}', 'w')):\n    return True\n", 1, 24,
                         ["default argument"], "exec"),
    "annotation": (".py", "def evict(span: open('{m}', 'w'), window):\n    return True\n", 1, 17, ["annotation"],
                   "exec"),
    "yaml-apply-system": (".yaml", "name: x\nevict: !!python/object/apply:os.system ['touch {m}']\n", 2, 8,
                          ["YAML tag", "python/object/apply:os.system"], "unsafe"),
    "yaml-apply-open": (".yaml", "name: !!python/object/apply:builtins.open ['{m}', 'w']\nevict: true\n", 1, 7,
                        ["YAML tag"], "unsafe"),
    "yaml-new": (".yaml", "name: x\nevict: true\ndescription: !!python/object/new:builtins.open ['{m}', 'w']\n", 3, 14,
                 ["YAML tag"], "unsafe"),
    "yaml-top-level-tag": (".yaml", "!!python/object/apply:builtins.open ['{m}', 'w']\n", 1, 1, ["YAML tag"], "unsafe"),
    "yaml-tag-directive": (".yaml", "%TAG !p! tag:yaml.org,2002:python/\n---\nname: !p!object/apply:builtins.open "
                           "['{m}', 'w']\nevict: true\n", 3, 7, ["YAML tag"], "unsafe"),
    "yaml-verbatim-tag": (".yaml", "name: !<tag:yaml.org,2002:python/object/apply:builtins.open> ['{m}', 'w']\n"
                          "evict: true\n", 1, 7, ["YAML tag"], "unsafe"),
    # the expression language has no `.` after a call: the tokenizer stops there, before any parsing
    "yaml-expression": (".yaml", "name: x\nevict: \"__import__('os').system('touch {m}') == 0\"\n", 2, 25,
                        ["unexpected character '.'"], "eval"),
    "json-expression": (".json", '{{"name": "x", "evict": "__import__(\'pathlib\').Path(\'{m}\').touch() == 1"}}',
                        1, 46, ["unexpected character '.'"], "eval"),
    "yaml-call": (".yaml", "name: x\nevict: \"getattr(kind, 'x') == 1\"\n", 2, 9, ["unknown function `getattr`"],
                  None),
    "json-call": (".json", '{{"name": "x", "evict": "eval(kind) == 1"}}', 1, 25, ["unknown function `eval`"], None),
}

_HARNESS = textwrap.dedent("""\
    import inspect, json, sys, types, yaml
    span = types.SimpleNamespace(tokens=1, age=0, idle=0, reads=0, recency=1, frequency=0, pinned=False,
                                 edited=False, kind='record', namespace='window')
    window = types.SimpleNamespace(window_tokens=0, budget=1, step=0)
    for path, how in json.loads(sys.argv[1]):
        text = open(path, encoding='utf-8').read()
        try:
            if how == 'unsafe':
                yaml.unsafe_load(text)
            elif how == 'eval':
                eval(yaml.safe_load(text)['evict'])
            else:
                ns = {}
                exec(compile(text, path, 'exec'), ns)
                for name in ('evict', 'rank'):
                    if callable(ns.get(name)):
                        result = ns[name](span, window)
                        if inspect.isgenerator(result):
                            next(result, None)
                        elif inspect.iscoroutine(result):
                            result.send(None)
        except BaseException:
            pass
""")


def _write_payloads(directory: Path, ids):
    directory.mkdir()
    out = {}
    for name in ids:
        extension, template, *_ = PAYLOADS[name]
        marker = directory / f"{name}.pwned"
        path = directory / f"{name}{extension}"
        path.write_text(template.format(m=marker), encoding="utf-8")
        out[name] = (path, marker)
    return out


def test_the_payloads_are_live_when_run_by_python_or_unsafe_yaml(tmp_path):
    """Sanity for the test below: executed by Python (or yaml.unsafe_load), each payload creates its marker file."""
    live = [name for name, row in PAYLOADS.items() if row[5] and not (name == "os-system" and os.name != "posix")]
    files = _write_payloads(tmp_path / "live", live)
    jobs = [(str(path), PAYLOADS[name][5]) for name, (path, _) in files.items()]
    done = subprocess.run([sys.executable, "-c", _HARNESS, json.dumps(jobs)], capture_output=True, text=True,
                          timeout=HANG_GUARD, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    dead = [name for name, (_, marker) in files.items() if not marker.exists()]
    assert not dead, f"payloads that did not fire even when executed: {dead}"


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_code_execution_is_refused_and_nothing_runs(tmp_path, name):
    extension, _, line, col, words, _how = PAYLOADS[name]
    (path, marker), = _write_payloads(tmp_path / "parsed", [name]).values()
    text = path.read_text(encoding="utf-8")
    with watching() as events:
        err = refusal(text, str(path))
        with pytest.raises(PolicySyntaxError) as from_file:
            load_policy(path)
    at(err, line, col, *words)
    assert (from_file.value.line, from_file.value.col, from_file.value.message) == (err.line, err.col, err.message)
    assert not marker.exists()
    ran = [(event, args) for event, args in events
           if not (event == "open" and args and os.fspath(args[0]) == str(path) and args[1] in ("r", "rb"))]
    assert not ran, f"audit events while parsing: {ran}"


@pytest.mark.xfail(strict=True, reason="a yield or await *statement* in a policy function is refused as "
                   "'expression statement', without naming the construct (module level names it)")
@pytest.mark.parametrize("statement", ["yield span.tokens", "await span.tokens"])
def test_yield_and_await_statements_name_the_construct(statement):
    err = refusal(f"def evict(span, window):\n    {statement}\n    return True\n", NOWHERE + ".py")
    at(err, 2, 5, statement.split()[0])


# --------------------------------------------------------------------------- YAML-specific hostility


def billion_laughs(levels: int = 9) -> str:
    rows = ['lol0: &lol0 "lol"']
    for i in range(1, levels + 1):
        rows.append(f"lol{i}: &lol{i} [" + ", ".join([f"*lol{i - 1}"] * 9) + "]")
    return "\n".join(rows) + f"\nname: x\nevict: true\ndescription: *lol{levels}\n"


def test_alias_bombs_are_refused_at_the_first_anchor_or_alias():
    at(refusal(billion_laughs(), NOWHERE + ".yaml"), 1, 7, "anchors")
    aliases_only = "name: x\nevict: true\ndescription: [" + ", ".join(["*a"] * 50000) + "]\n"
    at(refusal(aliases_only, NOWHERE + ".yaml"), 3, 15, "aliases")
    at(refusal("name: &a x\nevict: *a\n", NOWHERE + ".yaml"), 1, 7, "anchors")
    at(refusal("*a : 1\nname: x\nevict: true\n", NOWHERE + ".yaml"), 1, 1, "aliases")
    # JSON has no aliases: the same text is simply not JSON
    assert "invalid JSON" in refusal(billion_laughs(), NOWHERE + ".json").message


@pytest.mark.parametrize(
    "opening,closing",
    [("[", "]"), ("{a: ", "}"), ("[{a: ", "}]"), ("- ", "")],
)
def test_deeply_nested_yaml_collections_are_refused_quickly(opening, closing):
    count = (MAX_FILE_BYTES - 100) // (len(opening) + len(closing))
    if opening == "- ":  # block sequences nest by indentation: "- - - - ... x"
        text = "name: x\nevict: true\ndescription:\n  " + "- " * count + "x\n"
    else:
        text = "name: x\nevict: true\ndescription: " + opening * count + "1" + closing * count + "\n"
    err = refusal(text, NOWHERE + ".yaml")
    assert "too many nested collections" in err.message and err.line in (3, 4)


def test_deeply_nested_json_is_refused_quickly():
    count = (MAX_FILE_BYTES - 100) // 2
    text = '{"name": "x", "evict": true, "description": ' + "[" * count + "]" * count + "}"
    # the object is level 1, so the 64th `[` (column 45 + 63) is the 65th level
    at(refusal(text, NOWHERE + ".json"), 1, 45 + MAX_DEPTH - 1, "too many nested collections")


def test_huge_scalars_just_under_and_over_the_size_limit():
    head, tail = "name: x\nevict: true\ndescription: ", "\n"
    room = MAX_FILE_BYTES - len(head) - len(tail)
    assert verdict(head + "a" * room + tail, NOWHERE + ".yaml").description == "a" * room
    at(refusal(head + "a" * (room + 1) + tail, NOWHERE + ".yaml"), 1, 1, "too large")
    at(refusal((head + "a" * (room + 1) + tail).encode(), NOWHERE + ".yaml"), 1, 1, "too large")
    # the limit is in UTF-8 bytes, not characters
    wide = head + "\u00e9" * (room // 2) + tail
    assert verdict(wide, NOWHERE + ".yaml").description == "\u00e9" * (room // 2)
    at(refusal(wide + "\u00e9", NOWHERE + ".yaml"), 1, 1, "too large")
    # a huge quoted expression made of spaces around a tiny one, a huge key, a huge folded scalar
    assert verdict(f'name: x\nevict: "{" " * (room - 40)}pinned"\n', NOWHERE + ".yaml").evict is not None
    # a YAML simple key is at most 1024 characters: past that the colon is out of place
    at(refusal("k" * room + ": 1\nname: x\nevict: true\n", NOWHERE + ".yaml"), 1, room + 1, "invalid YAML")
    folded = "name: x\nevict: true\ndescription: >\n" + "  word word word\n" * ((room - 40) // 17)
    assert verdict(folded, NOWHERE + ".yaml").description.startswith("word word")
    # over the limit as a JSON string and as Python too
    at(refusal('{"name": "' + "a" * MAX_FILE_BYTES + '"}', NOWHERE + ".json"), 1, 1, "too large")
    at(refusal("#" * MAX_FILE_BYTES + "\n" + _fn("True"), NOWHERE + ".py"), 1, 1, "too large")


@pytest.mark.parametrize(
    "tag",
    [
        "!!python/object/apply:os.system ['true']",
        "!!python/object/new:os.system ['true']",
        "!!python/object:os.system {}",
        "!!python/name:os.system ''",
        "!!python/module:os ''",
        "!!binary aGVsbG8=",
        "!!set {a, b}",
        "!!omap [a: 1]",
        "!local x",
        "!<tag:example.com,2000:x> x",
    ],
)
def test_yaml_tags_outside_the_core_schema_are_refused(tag):
    at(refusal(f"name: x\nevict: true\ndescription: {tag}\n", NOWHERE + ".yaml"), 3, 14, "YAML tag")


def test_duplicate_keys_are_refused_whatever_their_spelling():
    cases = [
        ("name: x\nevict: true\n'name': y\n", 3, 1, "duplicate key `name`"),
        ('name: x\nevict: true\n"evict": false\n', 3, 1, "duplicate key `evict`"),
        ("{name: x, evict: true, name: x}", 1, 24, "duplicate key `name`"),
        ("name: x\nevict: true\ndeployment: {pins: host, pins: host}\n", 3, 26, "duplicate key `pins`"),
        ("name: x\nevict: true\nexpect:\n  C1: holds\n  C1: holds\n", 5, 3, "duplicate key `C1`"),
        ("name: x\nevict: true\nname: x\nname: x\n", 3, 1, "duplicate key `name`"),
    ]
    for text, line, col, words in cases:
        at(refusal(text, NOWHERE + ".yaml"), line, col, words)
    at(refusal('{"deployment": {"pins": "host", "pins": "self"}, "name": "x", "evict": true}', NOWHERE + ".json"),
       1, 33, "duplicate key `pins`")
    at(refusal('DEPLOYMENT = {"pins": "host", "pins": "self"}\n' + _fn("True"), NOWHERE + ".py"), 1, 31,
       "duplicate key `pins`")


def test_tabs_are_refused_with_a_position_or_accepted_where_yaml_allows_them():
    at(refusal("name: x\nevict: true\ndeployment:\n\tpins: host\n", NOWHERE + ".yaml"), 4, 1, "'\\t'")
    refusal("name:\tx\nevict:\ttrue\n", NOWHERE + ".yaml")
    assert verdict('name: "a\tb"\nevict: true\n', NOWHERE + ".yaml").name == "a\tb"
    assert verdict('{\t"name":\t"x",\t"evict":\t"tokens > 1"\t}', NOWHERE + ".json").evict is not None
    at(refusal('{"name": "x", "evict": "tokens\t> 1"}', NOWHERE + ".json"), 1, 31, "invalid JSON", "control character")
    at(refusal("def evict(span, window):\n\tif span.pinned:\n        return True\n\treturn False\n", NOWHERE + ".py"),
       3, 1, "inconsistent use of tabs")


@pytest.mark.parametrize("extension,text,line,col", [
    (".yaml", "name: x\nevict: tokens > 1 and agee > 2\n", 2, 23),
    (".json", '{"name": "x",\n "evict": "tokens > 1 and agee > 2"}', 2, 27),
    (".py", _fn("span.tokens > 1 and span.agee > 2"), 2, 37),
])
def test_boms_and_line_endings_do_not_move_positions(extension, text, line, col):
    name = NOWHERE + extension
    at(refusal(text, name), line, col, "agee")
    for variant in (
        "\ufeff" + text,
        ("\ufeff" + text).encode("utf-8"),
        text.replace("\n", "\r\n"),
        text.replace("\n", "\r\n").encode("utf-8"),
        "\ufeff" + text.replace("\n", "\r\n"),
        text.replace("\n", "\r"),
    ):
        at(refusal(variant, name), line, col, "agee")
    good = text.replace("agee", "age")
    expected = verdict(good, name)
    for variant in ("\ufeff" + good, good.replace("\n", "\r\n"), good.replace("\n", "\r"), good.encode("utf-8")):
        assert verdict(variant, name) == expected
    # other encodings' BOMs are refused cleanly at 1:1; a second UTF-8 BOM is accepted or refused, never a crash
    for bom in ("utf-16", "utf-32"):
        at(refusal(("\ufeff" + good).encode(bom)[2 if bom == "utf-16" else 4:], name), 1, 1, "not valid UTF-8")
        at(refusal(good.encode(bom), name), 1, 1, "not valid UTF-8")
    verdict("\ufeff\ufeff" + good, name)
    verdict(good.replace("\n", "\n\ufeff", 1), name)


def test_unicode_line_breaks_bidi_controls_and_surrogates():
    name = NOWHERE + ".yaml"
    # YAML counts NEL, LS and PS as line breaks, and positions follow it
    at(refusal("name: x\x85evict: agee > 1\u2028", name), 2, 8, "agee")
    at(refusal("name: x\u2029evict: agee > 1\n", name), 2, 8, "agee")
    # bidi controls and zero-width characters are not silently read as part of an expression
    at(refusal("name: x\nevict: \u202etokens > 1\n", name), 2, 8, "unexpected character")
    at(refusal("name: x\nevict: tokens\u2066 > 1\n", name), 2, 14, "unexpected character")
    at(refusal("name: x\nevict: tokens\u200b > 1\n", name), 2, 14, "unexpected character")
    at(refusal(_fn("span.tokens\u202e > 1"), NOWHERE + ".py"), 2, 23, "invalid Python")
    # lone surrogates, as str and as (CESU-8 style) bytes; NUL
    at(refusal("name: x\nevict: tr\ud800ue\n", name), 2, 10, "lone surrogate")
    at(refusal(b"name: x\nevict: tr\xed\xa0\x80ue\n", name), 2, 10, "not valid UTF-8")
    at(refusal(_fn("span.tokens > 1\udfff"), NOWHERE + ".py"), 2, 27, "lone surrogate")
    at(refusal('{"name": "x", "evict": "tr\x00ue"}', NOWHERE + ".json"), 1, 27, "NUL")


# --------------------------------------------------------------------------- time bounds (known defects)


def _many_floats(count: int, pad: int) -> str:
    return "#" + "x" * pad + "\n" + _fn("min(" + ", ".join(["0.5"] * count) + ") > 0")


def _ifs(count: int, pad: int) -> str:
    def function(name, value):
        body = "".join(f"    if span.tokens > {i}:\n        return {value}\n" for i in range(count))
        return f"def {name}(span, window):\n{body}    return {value}\n"

    return "#" + "x" * pad + "\n" + function("evict", "True") + function("rank", "1")


@pytest.mark.parametrize("source", [_many_floats(3990, 240000), _ifs(62, 240000)], ids=["float-literals", "ifs"])
def test_python_policies_with_many_floats_or_ifs_are_checked_in_bounded_time(source):
    assert len(source.encode()) <= MAX_FILE_BYTES
    verdict(source, NOWHERE + ".py")


@pytest.mark.parametrize("tail", ["$", "\u20ac", "'unterminated"])
def test_long_blank_runs_before_a_stray_character_are_checked_in_bounded_time(tail):
    verdict(_fn("True") + "x = 1" + " " * 20000 + tail + "\n", NOWHERE + ".py")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_python_syntax_error_does_not_reopen_the_policy_file(tmp_path):
    pipe = tmp_path / "policy.py"
    os.mkfifo(pipe)
    refusal(_fn("True True"), str(pipe))


@pytest.mark.xfail(strict=True, reason=(
    "CPython's parser gives up on thousands of juxtaposed names with a MemoryError (parser stack overflow); pyform "
    "reports it as 'nested too deeply or too large' at the logical line with the most operators, which here is "
    "not the line that holds the problem"))
def test_a_parser_stack_overflow_points_at_the_offending_line():
    source = "def evict(span, window):\n    if " + "sp " * 5000 + ":\n        return True\n    return False\n"
    assert refusal(source, NOWHERE + ".py").line == 2


# --------------------------------------------------------------------------- through the CLI

CLI_SAMPLE = {
    "laughs.yaml": billion_laughs().encode(),
    "deep.yaml": ("name: x\nevict: true\ndescription: " + "[" * 50000 + "]" * 50000 + "\n").encode(),
    "deep.json": ('{"name": "x", "evict": ' + "[" * 50000 + "]" * 50000 + "}").encode(),
    "tag.yaml": b"name: x\nevict: !!python/object/apply:os.system ['true']\n",
    "too_big.yaml": b"name: x\nevict: true\ndescription: " + b"a" * MAX_FILE_BYTES + b"\n",
    "binary.yaml": bytes(range(256)) * 4,
    "binary.json": bytes(range(255, -1, -1)) * 4,
    "binary.py": b"\x7fELF\x02\x01\x01" + bytes(range(256)),
    "nul.py": b"def evict(span, window):\n    return\x00 True\n",
    "cesu.yaml": b"name: x\nevict: tr\xed\xa0\x80ue\n",
    "utf16.json": '{"name": "x", "evict": true}'.encode("utf-16"),
    "bidi.yaml": "name: x\nevict: \u202etokens > 1\n".encode(),
    "crlf.py": _fn("span.tokens > 1 and span.agee > 2").replace("\n", "\r\n").encode(),
    "alias.json": b'{"name": "x", "evict": *a}',
    "import.py": b"import os\nos.system('true')\n" + _fn("True").encode(),
    "dunder.py": _fn("span.__class__.__mro__ == 1").encode(),
    "lambda.py": _fn("(lambda: 1)() == 1").encode(),
    "comprehension.py": _fn("[x for x in (1,)] == 1").encode(),
    "kwargs.py": _fn("max(1, 2, key=3) > 1").encode(),
    "method.py": _fn("span.tokens.bit_length() > 1").encode(),
    "decorator.py": b"@print\ndef evict(span, window):\n    return True\n",
    "empty.json": b"   \n",
    "bom-only.yaml": b"\xef\xbb\xbf",
}
ONE_ERROR_LINE = re.compile(r"prunecheck: error: (?P<file>.+):(?P<line>\d+):(?P<col>\d+): \S.*\n")


@pytest.mark.parametrize("name", sorted(CLI_SAMPLE))
def test_hostile_files_give_exit_2_and_one_error_line(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(CLI_SAMPLE[name])
    out, err = io.StringIO(), io.StringIO()
    with counted_calls() as calls:
        code = main(["check", str(path), "--no-prove", "--depth", "2"], out, err)
    assert calls.count < PARSE_CALLS
    assert code == 2 and out.getvalue() == ""
    stderr = err.getvalue()
    assert "Traceback" not in stderr and stderr.count("\n") == 1, stderr
    match = ONE_ERROR_LINE.fullmatch(stderr)
    assert match and match["file"] == str(path), stderr
    assert int(match["line"]) >= 1 and int(match["col"]) >= 1


def test_the_console_script_prints_one_line_for_a_hostile_file(tmp_path):
    path = tmp_path / "laughs.yaml"
    path.write_text(billion_laughs())
    done = subprocess.run([sys.executable, "-m", "prunecheck", "check", str(path), "--no-prove", "--depth", "2"],
                          capture_output=True, text=True, timeout=HANG_GUARD)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"prunecheck: error: {path}:1:7: YAML anchors (&name) are not allowed in a policy\n"


@pytest.mark.parametrize("name,text", [
    ("esc-key.json", '{"name": "x", "evict": true, "\\u001b[2J\\u001b[32mall good": 1}'),
    ("esc-key.yaml", 'name: x\nevict: true\n"\\e[2J\\e[32mall good": 1\n'),
    ("esc-enum.py", _fn("span.kind == '\\x1b[2J\\x1b[32mfine'")),
    ("bidi-enum.yaml", "name: x\nevict: kind == 'rec\u202eord'\n"),
])
def test_errors_do_not_carry_terminal_control_characters(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    err = io.StringIO()
    assert main(["check", str(path), "--no-prove", "--depth", "2"], io.StringIO(), err) == 2
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]", err.getvalue()), \
        repr(err.getvalue())
