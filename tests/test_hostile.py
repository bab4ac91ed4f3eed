"""Hostile policy text: mutation fuzzing, raw bytes, code-execution attempts, YAML bombs and the CLI's one-line error.

The promise under test: whatever the bytes, parse_policy_text ends, within a bound on its work, in a Policy or in a
PolicySyntaxError that points (line >= 1, col >= 1) into the text; nothing in the text is ever run; and the CLI
turns any refusal into exit code 2 with exactly one `prunecheck: error: FILE:LINE:COL: message` line.

Tests marked xfail(strict=True) pin down defects found while writing this file (see each reason); they flip to
XPASS, and so fail, once the parser is fixed: then remove the marker.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import prunecheck.checker.check  # noqa: F401  (the CLI imports it lazily: warm it so CLI call counts measure parsing)
from prunecheck.checker.language.typecheck import MAX_FILE_BYTES
from prunecheck.cli import main

from conftest import EXAMPLES, HANG_GUARD, PARSE_CALLS, counted_calls
from hostile import NOWHERE, billion_laughs, fn, refusal, verdict
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
    " and ", " or ", " not ", " in ", " if ", " else ", "span.", "window.", "min(", "abs(", "count_newer(", "tokens_of(", "(", ")", "[", "]", "{",
    "}", ",", ":", "'", '"', "\\", "#", "\r\n", "\n    ", "\n        ", "return ", "if span.pinned:\n", "else:\n",
    "pass",
]
TOKEN_RE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|[0-9]+(?:\.[0-9]+)?|\s+|.", re.S)


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


# --------------------------------------------------------------------------- time bounds (known defects)


def _many_floats(count: int, pad: int) -> str:
    return "#" + "x" * pad + "\n" + fn("min(" + ", ".join(["0.5"] * count) + ") > 0")


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
    verdict(fn("True") + "x = 1" + " " * 20000 + tail + "\n", NOWHERE + ".py")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_python_syntax_error_does_not_reopen_the_policy_file(tmp_path):
    pipe = tmp_path / "policy.py"
    os.mkfifo(pipe)
    refusal(fn("True True"), str(pipe))


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
    "crlf.py": fn("span.tokens > 1 and span.agee > 2").replace("\n", "\r\n").encode(),
    "alias.json": b'{"name": "x", "evict": *a}',
    "import.py": b"import os\nos.system('true')\n" + fn("True").encode(),
    "dunder.py": fn("span.__class__.__mro__ == 1").encode(),
    "lambda.py": fn("(lambda: 1)() == 1").encode(),
    "comprehension.py": fn("[x for x in (1,)] == 1").encode(),
    "kwargs.py": fn("max(1, 2, key=3) > 1").encode(),
    "method.py": fn("span.tokens.bit_length() > 1").encode(),
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
    ("esc-enum.py", fn("span.kind == '\\x1b[2J\\x1b[32mfine'")),
    ("bidi-enum.yaml", "name: x\nevict: kind == 'rec\u202eord'\n"),
])
def test_errors_do_not_carry_terminal_control_characters(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    err = io.StringIO()
    assert main(["check", str(path), "--no-prove", "--depth", "2"], io.StringIO(), err) == 2
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]", err.getvalue()), \
        repr(err.getvalue())

