"""Fuzz the policy readers: structured mutations and raw bytes through parse_policy_text, for every form.

Run: python benchmarks/fuzz_parsers.py [--inputs N] [--seed S] [--limit SECONDS] [--write FILE]
     python benchmarks/fuzz_parsers.py --seed S --index I [--dump FILE]    (re-run, and save, one input)

Every input must end in a Policy or a PolicySyntaxError with line >= 1 and col >= 1 inside the text, within the
per-input time limit.  Anything else is counted and reproduced: a crash (any other exception, or a
PolicySyntaxError that the loader's last-resort guard made out of one: "internal error ..." or the 1:1 "nested too
deeply or too large"), a hang (the limit was hit; the input is interrupted by SIGALRM), or a bad error (position
outside the text, wrong file, more than one line, or a message of 1000 characters or more).
Input I of seed S is generated from random.Random(f"{S}:{I}") alone, so any reproducer is `--seed S --index I`.
"""

from __future__ import annotations

import argparse
import faulthandler
import hashlib
import platform
import random
import re
import resource
import signal
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

from prunecheck.version import __version__
from prunecheck.checker.language import loader
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.language.typecheck import MAX_FILE_BYTES
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import Policy

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "policies"
# Names that cannot exist: on a Python SyntaxError CPython re-opens the filename to quote the offending line.
FORMS = {"yaml": "<fuzz>/policy.yaml", "json": "<fuzz>/policy.json", "python": "<fuzz>/policy.py"}
MASKED_DEEP = "policy is nested too deeply or is too large"  # loader._guarded's RecursionError/MemoryError text

# --------------------------------------------------------------------------- seed corpus

INLINE_SEEDS = {
    "yaml": [
        "name: keep-recent\ndescription: Evict stale tool output first.\n"
        "evict: kind == 'tool_output' and idle > 10 and not pinned\nrank: reads / (1 + age)\nbudget: 8000\n"
        "deployment:\n  pins: host\n  undo: versioned\nexpect:\n  C1: holds\n",
        'name: tiered\nevict: "false if pinned else (true if kind in [\'stack_trace\', \'diff\'] '
        'else idle >= 2.5 * (1 + reads))"\nrank: "-(recency) + min(age, 100, step) / max(tokens, 1)"\n',
        "name: t\nevict: |\n  tokens > 1\n  and age > 2\nrank: >-\n  min(0.5, 0.25, recency,\n  1.5)\n",
        "name: f\ndeployment: {records: window, pins: self}\n"
        "evict: namespace not in ['undo', 'log'] and 1 < tokens <= 10\n",
        "name: b\nbudget: 100\nevict: window_tokens > budget and abs(step - 3) >= 0.125\n",
    ],
    "json": [
        '{\n\t"name": "keep-recent",\n\t"description": "Evict stale tool output first.",\n'
        '\t"evict": "kind == \'tool_output\' and idle > 10 and not pinned",\n\t"rank": "reads / (1 + age)",\n'
        '\t"budget": 8000,\n\t"deployment": {"pins": "host", "undo": "versioned"},\n\t"expect": {"C1": "holds"}\n}\n',
        '{"name": "j", "evict": true, "rank": "max(0.5, recency, 1 / recency)", "expect": {"C2": "violated"}}',
        '{"name": "k", "evict": "kind in [\'record\', \'diff\'] or edited", "deployment": {"audit": "policy"}}',
    ],
    "python": [
        '"""Evict stale tool output first."""\nNAME = "keep-recent"\nBUDGET = 8000\n'
        'DEPLOYMENT = {"pins": "host", "undo": "versioned"}\nEXPECT = {"C1": "holds"}\n\n\n'
        "def evict(span, window):\n    return span.kind == 'tool_output' and span.idle > 10 and not span.pinned\n\n\n"
        "def rank(span, window):\n    return span.reads / (1 + span.age)\n",
        'def evict(span, window):\n    """Docstrings inside functions are allowed."""\n    if span.pinned:\n'
        '        return False\n    elif span.kind in ("stack_trace", "diff"):\n        return True\n'
        "    return span.idle >= 2.5 * (1 + span.reads)\n\n\ndef rank(span, window):\n"
        "    return -span.recency + min(span.age, 100, window.step, 0.5, 0.25) / max(span.tokens, 1)\n",
        "def evict(span, window):\n    if span.pinned:\n        if span.edited:\n            return True\n"
        "    return 1 if span.tokens > 3 else 2 > window.step\n",
    ],
}

HOSTILE = {
    "any": [
        "\x00", "\ufeff", "\u202e", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069", "\u200b", "\u200f", "\x85",
        "\u2028", "\u2029", "\x0b", "\x0c", "\x1b", "\x7f", "\uffff", "\ufffe", "\U0001f600", "\u0301", "\ud800",
        "\udfff", "\r", "\r\n", "\t", "\n", " ", "\\", "'", '"', "#", "(", ")", "[", "]", "{", "}", ",", ":",
        "1e400", "0x1F", "9" * 31, "1" + "0" * 5000, ".5", "1.", "１２", "٣", "ｓｐａｎ", "ﬁ", "__import__",
        "__class__", "__mro__", "lambda", "not ", " and ", " or ", " in ", " if ", " else ", "==", "!=", "<=",
        "**", "//", "%", "@", "~", "=", ":=", "*", "/", "-", "+",
    ],
    "yaml": [
        "&a ", "*a", "<<: *a\n", "!!python/object/apply:os.system ['id']", "!!python/name:os.system", "!!binary ",
        "!foo ", "%TAG ! tag:yaml.org,2002:python/\n---\n", "---\n", "...\n", "? ", "- ", "|\n  ", ">-\n  ",
        "{a: [b, {c: d}]}", "!!set {a}", "!!str ", "~", "yes", "2001-12-14", "0o17", ".inf", "- - - - ",
    ],
    "json": ['{"a": [1, {"b": null}]}', "NaN", "Infinity", "-0", "1e5", "\\u0000", "\\ud800", '"\\', "true",
             "null", ", ", "[[[["],
    "python": [
        "import os\n", "from os import system\n", "@dec\n", "class X:\n    pass\n", "global x\n", "yield ",
        "await ", "async ", "(lambda: 1)()", "[x for x in (1,)]", "{k: 1 for k in ()}", "(x for x in ())",
        "f'{span}'", "(x := 1)", "eval('1')", "exec('1')", "open('x')", "getattr(span, 'tokens')",
        "span.tokens.bit_length()", "max(*span)", "max(1, key=2)", "span[0]", "\n    ", "\n        ", "return ",
        "if span.pinned:\n", "else:\n", "pass\n", "0.5, ", "b'x'", "1j", "...", "None", "is not ",
    ],
}


def seed_corpus():
    """{form: [text, ...]}: the inline seeds plus every example policy."""
    corpus = {form: list(texts) for form, texts in INLINE_SEEDS.items()}
    by_suffix = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".py": "python"}
    if EXAMPLES.is_dir():
        for path in sorted(EXAMPLES.iterdir()):
            form = by_suffix.get(path.suffix)
            if form:
                corpus[form].append(path.read_text(encoding="utf-8"))
    return corpus


# --------------------------------------------------------------------------- mutations

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|[0-9]+(?:\.[0-9]+)?|\s+|.", re.S)
STRUCTURAL = b"[]{}():,'\"#&*!|>-?%@\\\t\n\r =.<>+/_0123456789abcdefghijklmnopqrstuvwxyz"


def _span(rng, n, longest=64):
    i = rng.randint(0, n)
    return i, min(n, i + rng.randint(0, longest))


def _payload(rng, form, corpus):
    roll = rng.random()
    if roll < 0.45:
        return rng.choice(HOSTILE["any"] + HOSTILE[form])
    if roll < 0.7:  # splice a fragment of another policy, of any form
        other = rng.choice(rng.choice(list(corpus.values())))
        i, j = _span(rng, len(other), 80)
        return other[i:j]
    if roll < 0.9:
        return "".join(chr(rng.choice((rng.randint(32, 126), rng.randint(0, 0x2FFF), rng.randint(0, 0x10FFFF))))
                       for _ in range(rng.randint(1, 8)))
    return rng.choice(["tokens", "span.tokens", "window.step", "kind", "'record'", "true", "False", "min(", "abs("])


MUTATIONS = {  # name -> weight
    "insert": 3, "delete": 3, "duplicate": 2, "swap": 2, "replace": 3, "token-insert": 3, "token-delete": 3,
    "token-duplicate": 2, "token-swap": 2, "splice": 2, "repeat": 2, "repeat-line": 1, "pad": 1,
}


def mutate_text(rng, text, form, corpus):
    """One structured mutation of text (characters, tokens or lines); returns (text, label)."""
    op = rng.choices(tuple(MUTATIONS), weights=tuple(MUTATIONS.values()))[0]
    if op.startswith("token-"):
        toks = _TOKEN.findall(text)
        if len(toks) < 2:
            return text, op
        i, j = rng.randrange(len(toks)), rng.randrange(len(toks))
        if op == "token-insert":
            toks.insert(i, rng.choice(HOSTILE["any"] + HOSTILE[form] + toks))
        elif op == "token-delete":
            del toks[i]
        elif op == "token-duplicate":
            toks.insert(i, toks[i])
        else:
            toks[i], toks[j] = toks[j], toks[i]
        return "".join(toks), op
    n = len(text)
    i, j = _span(rng, n)
    if op == "insert":
        return text[:i] + _payload(rng, form, corpus) + text[i:], op
    if op == "delete":
        return text[:i] + text[j:], op
    if op == "duplicate":
        return text[:j] + text[i:j] + text[j:], op
    if op == "swap":
        k, m = _span(rng, n)
        if k < i:
            i, j, k, m = k, m, i, j
        if k < j:
            return text, op
        return text[:i] + text[k:m] + text[j:k] + text[i:j] + text[m:], op
    if op == "replace":
        return text[:i] + _payload(rng, form, corpus) + text[j:], op
    if op == "splice":
        other = rng.choice(corpus[form] if rng.random() < 0.7 else rng.choice(list(corpus.values())))
        k, m = _span(rng, len(other), 200)
        return text[:i] + other[k:m] + text[j:], op
    if op == "pad":  # a big comment, blank lines or spaces: file size without structure
        unit = rng.choice(("#" + "x" * 60 + "\n", "\n", " ", "# \u00e9\u202e\u0301" * 10 + "\n"))
        room = max(0, MAX_FILE_BYTES - len(text.encode("utf-8", "surrogatepass"))) // len(unit.encode())
        times = rng.randint(1, room + 2)  # sometimes one or two units past the limit
        where = 0 if rng.random() < 0.5 else n
        return text[:where] + unit * times + text[where:], f"pad x{times}"
    # repeat: amplify a fragment (characters, whole tokens or whole lines) up to and past the file-size limit
    if op == "repeat-line":
        lines = text.splitlines(keepends=True) or [text]
        k = rng.randrange(len(lines))
        i = sum(len(line) for line in lines[:k])
        j = i + sum(len(line) for line in lines[k:k + rng.randint(1, 3)])
    elif rng.random() < 0.5:
        toks = _TOKEN.findall(text)
        k = rng.randrange(len(toks)) if toks else 0
        i = sum(len(t) for t in toks[:k])
        j = i + sum(len(t) for t in toks[k:k + rng.randint(1, 16)])
    else:
        j = min(n, i + rng.randint(1, 12))
    unit = text[i:j] or _payload(rng, form, corpus) or "x"
    times = rng.choice((2, 10, 100, 1000, 10000, 100000))
    times = min(times, (MAX_FILE_BYTES + 64) // max(1, len(unit.encode("utf-8", "surrogatepass"))))
    return text[:j] + unit * times + text[j:], f"{op} x{times}"


# A small generator of (mostly) well-formed expressions, so that inputs also reach the type checker.
NUM_NAMES = ("tokens", "age", "idle", "reads", "recency", "frequency", "window_tokens", "step", "budget", "position",
             "from_end", "from_end_in_role", "turn", "tokens_after", "window_spans")
BOOL_NAMES = ("pinned", "edited")
WINDOW_NAMES = ("window_tokens", "step", "budget", "window_spans")


def gen_number(rng, depth, width):
    roll = rng.random()
    if depth <= 0 or roll < 0.3:
        return rng.choice((str(rng.randint(0, 10**rng.randint(1, 6))), f"{rng.randint(0, 99)}.{rng.randint(0, 999)}",
                           rng.choice(NUM_NAMES)))
    if roll < 0.6:
        op = rng.choice("+-*/")
        return f"({gen_number(rng, depth - 1, width)} {op} {gen_number(rng, depth - 1, width)})"
    if roll < 0.8:
        fn = rng.choice(("min", "max"))
        return f"{fn}({', '.join(gen_number(rng, depth - 1, 2) for _ in range(rng.randint(2, width)))})"
    if roll < 0.9:
        return f"abs({gen_number(rng, depth - 1, width)})"
    return f"-{gen_number(rng, depth - 1, width)}"


def gen_bool(rng, depth, width):
    roll = rng.random()
    if depth <= 0 or roll < 0.2:
        return rng.choice(BOOL_NAMES + ("true", "false"))
    if roll < 0.45:
        return f"{gen_number(rng, depth - 1, width)} {rng.choice(('<', '<=', '>', '>=', '==', '!='))} " \
               f"{gen_number(rng, depth - 1, width)}"
    if roll < 0.65:
        return f"({gen_bool(rng, depth - 1, width)} {rng.choice(('and', 'or'))} {gen_bool(rng, depth - 1, width)})"
    if roll < 0.75:
        return f"not {gen_bool(rng, depth - 1, width)}"
    if roll < 0.85:
        kinds = ("message", "tool_output", "record", "rationale", "diff", "recrod")
        values = ", ".join(repr(rng.choice(kinds)) for _ in range(rng.randint(1, width)))
        return f"kind {rng.choice(('in', 'not in'))} [{values}]"
    return f"({gen_bool(rng, depth - 1, width)} if {gen_bool(rng, depth - 1, width)} else " \
           f"{gen_bool(rng, depth - 1, width)})"


_ATTR_WORD = re.compile(r"(?<![\w'])(" + "|".join(NUM_NAMES + BOOL_NAMES + ("kind", "namespace")) + r")\b")


def as_python(expr: str) -> str:
    expr = _ATTR_WORD.sub(lambda m: ("window." if m.group(1) in WINDOW_NAMES else "span.") + m.group(1), expr)
    expr = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", expr))
    return expr


def generated_policy(rng, form):
    """A fresh policy around generated expressions (often well typed, sometimes wide or deep)."""
    depth, width = rng.choice(((2, 3), (4, 3), (6, 2), (3, 50), (1, 1000), (1, 4000)))
    evict, rank = gen_bool(rng, depth, width), gen_number(rng, depth, width)
    budget = rng.random() < 0.5
    if form == "yaml":
        return f"name: g\n{'budget: 100' + chr(10) if budget else ''}evict: \"{evict}\"\nrank: \"{rank}\"\n"
    if form == "json":
        budget_item = '"budget": 100, ' if budget else ""
        return f'{{"name": "g", {budget_item}"evict": "{evict}", "rank": "{rank}"}}'
    return (f"{'BUDGET = 100' + chr(10) if budget else ''}def evict(span, window):\n    return {as_python(evict)}\n\n"
            f"def rank(span, window):\n    return {as_python(rank)}\n")


def mutate_bytes(rng, data: bytes):
    op = rng.choice(("flip", "insert-invalid", "truncate", "bom", "surrogate", "overlong"))
    n = len(data)
    i = rng.randint(0, n)
    if op == "flip" and n:
        i = min(i, n - 1)
        return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:], op
    if op == "insert-invalid":
        return data[:i] + bytes([rng.choice((0x80, 0xBF, 0xC0, 0xC1, 0xF5, 0xFE, 0xFF, 0x00))]) + data[i:], op
    if op == "truncate":
        return data[:i], op
    if op == "bom":
        bom = rng.choice((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff", b"\xef\xbb\xbf" * 2))
        return bom + data, op
    if op == "surrogate":
        return data[:i] + rng.choice((b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xed\xa0\xbd\xed\xb8\x80")) + data[i:], op
    overlong = rng.choice((b"\xc0\xaf", b"\xe0\x80\xaf", b"\xf0\x80\x80\xaf", b"\xf4\x90\x80\x80"))
    return data[:i] + overlong + data[i:], op


def raw_bytes(rng):
    size = rng.choice((0, 1, 2, 8, 32, 128, 512, 4096))
    size = rng.randint(0, size)
    style = rng.random()
    if style < 0.4:
        return bytes(rng.randrange(256) for _ in range(size)), "raw random"
    if style < 0.8:
        return bytes(rng.choice(STRUCTURAL) for _ in range(size)), "raw structural"
    return "".join(chr(rng.randint(0, 0x10FFFF)) for _ in range(size // 4 + 1)).encode("utf-8", "surrogatepass"), \
        "raw unicode"


def make_input(seed: int, index: int, corpus):
    """(filename, data as str or bytes, description) of input `index` for `seed`: a pure function of both."""
    rng = random.Random(f"{seed}:{index}")
    form = rng.choice(tuple(FORMS))
    filename = FORMS[form]
    if rng.random() < 0.2:
        data, label = raw_bytes(rng)
        return filename, data, label
    if rng.random() < 0.2:
        text, labels = generated_policy(rng, form), ["generated"]
        rounds = rng.choice((0, 0, 1, 1, 2))
    else:
        text, labels = rng.choice(corpus[form]), []
        rounds = rng.choice((1, 1, 1, 2, 3, 5, 8))
    for _ in range(rounds):
        text, label = mutate_text(rng, text, form, corpus)
        labels.append(label)
    if rng.random() < 0.25:
        data = text.encode("utf-8", "surrogatepass")
        data, label = mutate_bytes(rng, data)
        labels.append(label)
        return filename, data, " + ".join(labels)
    if rng.random() < 0.5:
        try:
            return filename, text.encode("utf-8"), " + ".join(labels) + " (bytes)"
        except UnicodeEncodeError:
            pass
    return filename, text, " + ".join(labels)


# --------------------------------------------------------------------------- running


class Hang(BaseException):
    """Raised by SIGALRM; a BaseException so that the loader's `except Exception` guard cannot swallow it."""


def _alarm(signum, frame):
    raise Hang()


def error_class(message: str) -> str:
    """The first words of a refusal, e.g. "unknown name", "division by", "invalid YAML"; quoted parts become …"""
    words = []
    for word in message.split():
        core = word.rstrip(":,;.")
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_+-]*", core):
            if not words:
                words.append("…")
                continue
            break
        words.append(core)
        if len(words) == 5 or core != word:
            break
    return " ".join(words) or "…"


def _error_problem(err: PolicySyntaxError, data, filename: str) -> str:
    """What is wrong with a refusal (empty string if nothing): it must point into the text, in one short line."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    if err.file != filename:
        return f"names file {err.file!r}"
    if not (isinstance(err.line, int) and isinstance(err.col, int)) or err.line < 1 or err.col < 1:
        return f"position {err.line!r}:{err.col!r} is not 1-based"
    if err.line > len(text.splitlines()) + 1 or err.col > len(text) + 1:
        return f"position {err.line}:{err.col} is outside a text of {len(text.splitlines())} lines"
    if "\n" in str(err) or not err.message:
        return "not one line"
    if len(err.message) >= 1000:
        return f"message of {len(err.message)} characters"
    return ""


def run_one(filename, data, limit: float):
    """Returns (outcome, seconds, detail): outcome in accepted, refused, crash, hang, bad-error."""
    signal.setitimer(signal.ITIMER_REAL, limit)
    started = time.perf_counter()
    try:
        result = parse_policy_text(data, filename)
    except Hang:
        return "hang", time.perf_counter() - started, f"no answer within {limit:g} s"
    except PolicySyntaxError as err:
        elapsed = time.perf_counter() - started
        signal.setitimer(signal.ITIMER_REAL, 0)
        if err.message.startswith("internal error") or err.message == MASKED_DEEP:
            return "crash", elapsed, f"masked by the loader's guard: {err}\n{_unguarded(filename, data, limit)}"
        problem = _error_problem(err, data, filename)
        if problem:
            return "bad-error", elapsed, f"{problem}: {err}"
        return "refused", elapsed, err.message
    except Exception:  # noqa: BLE001 - the point is to catch them all
        elapsed = time.perf_counter() - started
        signal.setitimer(signal.ITIMER_REAL, 0)
        return "crash", elapsed, traceback.format_exc(limit=-6)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    elapsed = time.perf_counter() - started
    if not isinstance(result, Policy):
        return "crash", elapsed, f"returned {type(result).__name__}, not a Policy"
    return "accepted", elapsed, ""


def _unguarded(filename, data, limit):
    """The exception behind a masked crash: the same parse without the loader's last-resort guard."""
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        loader._parse(data, filename, None)
    except Hang:
        return "(the unguarded re-run did not finish in time)"
    except PolicySyntaxError as err:
        return f"(the unguarded re-run raised PolicySyntaxError: {err})"
    except BaseException:  # noqa: BLE001
        return traceback.format_exc(limit=-6, chain=False)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return "(the unguarded re-run succeeded)"


def _shown(data, limit=300) -> str:
    text = repr(data)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(data)} {'bytes' if isinstance(data, bytes) else 'characters'})"


def fuzz(inputs: int, seed: int, limit: float, start: int = 0, progress=None):
    corpus = seed_corpus()
    stats = {
        "tried": 0, "by_form": Counter(), "accepted_by_form": Counter(), "outcomes": Counter(), "classes": Counter(),
        "slowest_by_form": Counter(), "problems_by_form": Counter(),
        "slowest": (0.0, None), "problems": [], "total_seconds": 0.0, "limit": limit, "seed": seed, "start": start,
    }
    signal.signal(signal.SIGALRM, _alarm)
    faulthandler.dump_traceback_later(max(60.0, 20 * limit), repeat=True, exit=True)  # a hang in C code
    began = time.perf_counter()
    try:
        for index in range(start, start + inputs):
            filename, data, label = make_input(seed, index, corpus)
            faulthandler.dump_traceback_later(max(60.0, 20 * limit), repeat=True, exit=True)
            outcome, seconds, detail = run_one(filename, data, limit)
            form = loader.EXTENSIONS[Path(filename).suffix]
            stats["tried"] += 1
            stats["by_form"][form] += 1
            stats["outcomes"][outcome] += 1
            stats["slowest_by_form"][form] = max(stats["slowest_by_form"][form], seconds)
            if outcome == "accepted":
                stats["accepted_by_form"][form] += 1
            elif outcome == "refused":
                stats["classes"][error_class(detail)] += 1
            else:
                stats["problems_by_form"][form] += 1
                stats["problems"].append((outcome, index, filename, data, label, seconds, detail))
            if seconds > stats["slowest"][0]:
                stats["slowest"] = (seconds, (index, filename, label, len(_as_bytes(data))))
            if progress and (index - start + 1) % 1000 == 0:
                progress(f"{index - start + 1}/{inputs} inputs, {time.perf_counter() - began:.0f} s, "
                         f"problems so far: {len(stats['problems'])}")
    finally:
        faulthandler.cancel_dump_traceback_later()
    stats["total_seconds"] = time.perf_counter() - began
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    stats["max_rss_mb"] = rss / (1024 * 1024 if sys.platform == "darwin" else 1024)  # bytes on macOS, KiB on Linux
    return stats


def _as_bytes(data) -> bytes:
    return data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------- report


def report(stats, shown_problems: int = 5) -> str:
    tried, outcomes = stats["tried"], stats["outcomes"]
    crashes = outcomes["crash"]
    start = f" --start {stats['start']}" if stats["start"] else ""
    lines = [
        "# Parser fuzzing",
        "",
        f"`python benchmarks/fuzz_parsers.py --inputs {tried} --seed {stats['seed']}{start}"
        f" --limit {stats['limit']:g}`; Python {platform.python_version()}, prunecheck {__version__}.",
        "",
        "| figure | value |",
        "|---|---:|",
        f"| inputs tried | {tried} |",
        f"| accepted (a Policy) | {outcomes['accepted']} |",
        f"| refused (PolicySyntaxError, position inside the text) | {outcomes['refused']} |",
        f"| **crashes** (any other exception, or one masked by the loader's guard) | **{crashes}** |",
        f"| **hangs** (over {stats['limit']:g} s) | **{outcomes['hang']}** |",
        f"| **bad errors** (position outside the text, not one line, or 1000+ characters) | "
        f"**{outcomes['bad-error']}** |",
        f"| slowest input | {stats['slowest'][0]:.3f} s |",
        f"| total time | {stats['total_seconds']:.1f} s |",
        f"| maximum RSS | {stats['max_rss_mb']:.0f} MB |",
        "",
        "| form | inputs | accepted | problems | slowest (s) |",
        "|---|---:|---:|---:|---:|",
    ]
    for form in FORMS:
        lines.append(f"| {form} | {stats['by_form'][form]} | {stats['accepted_by_form'][form]} | "
                     f"{stats['problems_by_form'][form]} | {stats['slowest_by_form'][form]:.3f} |")
    if stats["slowest"][1]:
        index, filename, label, size = stats["slowest"][1]
        lines += ["", f"Slowest input: index {index}, {filename}, {size} bytes, mutations: {label}."]
    lines += ["", "Refusals by error class (first words of the message):", "", "| error class | count |", "|---|---:|"]
    for cls, count in stats["classes"].most_common():
        lines.append(f"| {cls.replace('|', chr(92) + '|')} | {count} |")
    problems = stats["problems"]
    lines += ["", f"Problems: {len(problems)}" + (" (none)" if not problems else "")]
    for outcome, index, filename, data, label, seconds, detail in problems[:shown_problems]:
        digest = hashlib.sha256(_as_bytes(data)).hexdigest()[:16]
        lines += [
            "",
            f"- {outcome} after {seconds:.3f} s: input {index} (`--seed {stats['seed']} --index {index}`), "
            f"`{filename}`, {len(_as_bytes(data))} bytes, sha256 {digest}…, mutations: {label}",
            f"  - data: `{_shown(data)}`",
            "  - detail:",
            "",
            "```",
            detail.rstrip(),
            "```",
        ]
    if len(problems) > shown_problems:
        lines.append(f"\n... and {len(problems) - shown_problems} more.")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=20000, help="number of inputs (default 20000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--start", type=int, default=0, help="index of the first input (default 0)")
    parser.add_argument("--limit", type=float, default=2.0, help="seconds allowed per input (default 2)")
    parser.add_argument("--write", metavar="FILE", help="also write the Markdown report to FILE")
    parser.add_argument("--index", type=int, help="run only input INDEX of --seed, and show it")
    parser.add_argument("--dump", metavar="FILE", help="with --index: write the input's exact bytes to FILE")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args(argv)
    if args.index is not None:
        filename, data, label = make_input(args.seed, args.index, seed_corpus())
        signal.signal(signal.SIGALRM, _alarm)
        outcome, seconds, detail = run_one(filename, data, args.limit)
        print(f"input {args.index} of seed {args.seed}: {filename}, {len(_as_bytes(data))} bytes, mutations: {label}")
        print(f"data: {_shown(data, 2000)}")
        print(f"{outcome} in {seconds:.3f} s{': ' + detail if detail else ''}")
        if args.dump:
            Path(args.dump).write_bytes(_as_bytes(data))
            print(f"wrote {args.dump} (parse it as {filename})")
        return 0 if outcome in ("accepted", "refused") else 1
    progress = None if args.quiet else (lambda message: print(message, file=sys.stderr, flush=True))
    stats = fuzz(args.inputs, args.seed, args.limit, args.start, progress)
    text = report(stats)
    print(text, end="")
    if args.write:
        Path(args.write).write_text(text, encoding="utf-8")
    bad = stats["outcomes"]["crash"] + stats["outcomes"]["hang"] + stats["outcomes"]["bad-error"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
