"""Benchmark: a family of threshold policies checked at the default bounds against verdicts derived by hand.

Run: python benchmarks/threshold_family.py [--jobs N] [--out DIR] [--only-generate] [--only NAME,...]
[--cold | --both] [--markdown FILE] [--results benchmarks/RESULTS.md]

The family (issue 12): thresholds 13, 20, 100, 1,000 and 10^6 on age, idle, step, reads, recency and frequency, alone
and combined (`age > 200 and reads < 3`), in YAML and in the Python form, with records and rationale in the window or
in their own namespaces, pins by the host or by the agent, a self-certified or an independent audit, versioned or
blind undo, with and without a budget and a rank, and safe policies that exclude records. Each policy is written to
DIR (default: a temporary directory) and checked in-process with `check()` at the defaults (depth 12, 6 spans,
30 s per condition). Its verdicts are compared with EXPECTED verdicts derived below from the semantics
(spec/SPEC.md), never from the tool, and so are the lengths of the counterexamples where they can be derived.

Expected verdicts, per condition (a record is created by `edit` at the earliest at step 2, after one `append`; a
record has kind `record`, `edited = false` for ever (edit targets content kinds only), `pinned = (pins = host)`
for ever under host pins (pin/unpin are enabled only on content kinds), any token count (a destroy record copies its
target's), and its age, idle time and reads grow as the agent waits (`audit(times=n)`) and reads it
(`read(r, times=n)`); `reads <= age` always):

- C1 violated iff records = window and some disjunct of `evict` can be true of a live record: its kind, pinned and
  edited tests admit a record, and its thresholds can all be met at once by reading the record n times and then
  waiting w steps (every family conjunct is upward closed in waiting, so the least n meeting the read thresholds and
  the least w after it decide; `frequency < x` only gets truer by waiting). Otherwise holds (records in their own
  namespace are never addressable; a filter that is false on every record excludes them).
  Length: shortest in actions, then in steps, over "wait w" (2 + [w > 0] actions, 2 + w steps), "read n, wait w"
  (2 + 1 + [w > 0], 2 + n + w) and "read n" (3, 2 + n); e.g. `age > c`: 3 actions, c + 3 steps; `step > c`: 3, c + 1;
  `reads > c`: 3, c + 3; `recency * c < 1` (idle >= c): 3, c + 2. A Python float literal means its double
  (`recency < 0.01` is idle >= 99 in Python, idle >= 100 in YAML).
- No host truncates (the default `host_truncation: off`, SPEC §2, ADR 0032): only the policy removes spans, by its
  selection or, with a `budget`, by truncating oldest-first to it. A compaction's predicate reads the state it starts
  from, so removing a span that is a candidate after a run of (a, s) takes (a + 1, s + 1).
- C2 violated iff records = window and the policy removes a record: with a budget B, append B + 1 tokens, destroy-edit
  it, compact: its own truncation reaches the record (3 steps, the least: a record and a compaction need 3); without
  one, iff C1 is violated, one action and step after C1's run. Otherwise holds.
- C3 violated iff undo = blind: append, edit it, edit it again, undo the first edit (4 steps, the least that has two
  edits of one target). Otherwise holds.
- C4 violated iff audit = policy and records = window and a gap with no rationale in the window is reachable. With
  rationale = decision_log the self-certified audit never sees the gap, so C4 is C2 (same length). With
  rationale = window and a budget, append a content span after the edit and make it survive the compaction (every
  family policy spares a fresh, a pinned or a read content span: each disjunct has a threshold that a fresh span
  fails, or `not pinned`, or a reads/frequency bound that reading it breaks); then the policy's truncation to its
  budget takes everything older, record and rationale included, and the audit sees neither (4 steps when a fresh
  span survives; 3 when the policy itself evicts a fresh rationale at step 2, then the record of a destroy edit of
  B + 1 tokens is truncated). With rationale = window and no budget, violated iff the policy removes both a record and
  a rationale (C2 and P1 below: the family's thresholds are per span and upward closed, so the record can go first and
  the rationale be read or left alone until it goes too); the length is derived only when both go fresh (3 steps).
  With audit = independent or records in their own namespace (no gap is reachable), holds.
- P1 violated iff rationale = window and the policy removes a rationale while its edit is live. With a budget:
  append, edit, append a span that survives, compact: the policy's truncation takes the rationale (4 steps; 3 when the
  policy evicts a fresh rationale at step 2). Without one, iff the rationale (kind `rationale`, 1 token, pinned under
  host pins, born with the record at step 2) becomes a candidate: C1's rule applied to it, plus the compaction (a
  group-8 member's hand-derived C1 stands for it: none reads kind or tokens). Otherwise holds.
- R1 (SPEC §6e) violated iff some disjunct selects a record or rationale by its kind (`kind == "record"`, or `in` a
  list holding a recovery kind), which a span of a kind the policy does not mention fails. No family member has such a
  test (their kind tests are `!=` a recovery kind or `in` content kinds), so R1 holds for every member; a member that
  had one would stop `expectations` with an error rather than get a verdict not derived here.
- T1 (SPEC §6c, ADR 0033) applies to every member (the default `tool_calls: on`): violated iff a compaction can
  remove one span of a tool call and its result (two adjacent content spans) and not the other: iff some
  disjunct can be true of one span and false of the other at once: every disjunct that reads a per-span value (age,
  idle, reads, recency, frequency, tokens, pinned, edited) and can be true of a content span at all is false of a
  fresh, unread, unpinned, unedited 1-token span or true of it and false after reading it (`reads < 3`), so the two
  spans can be told apart; a disjunct that reads only the window's `step` is true or false of both together, and
  one that no span ever meets (group 8's impossible ones) of neither. T1's lengths are not derived (a budget does
  not shorten them: the bounded engine's shortest split of budget-age-100 is by age, 4 actions and 103 steps).
Lengths are not derived for C4 and P1 of policies with both a rank and a budget (the ranked walk stops at the budget).
A few members (group 8 of `family()`) are outside these rules' C1 derivation (never true by arithmetic, not upward
closed, nonlinear): their C1 expectation is written by hand with its argument (`Spec.c1`, `Spec.note`).

Every `violated` is cross-checked: its trace is replayed on the runtime with each repeated action expanded into single
steps (when it has at most 20,000 steps), the condition must first fail at the last step; the same trace with the
last repeated action done once less must not violate (so the reported count is the least for that trace). Every
policy is also checked by the explicit engine at its default domains (tokens and repetitions derived from the
policy's constants), as deep as the symbolic engine's longest shortest trace: it must find every symbolic violation
with the same number of actions, and nothing the symbolic engine proved.
Prints a markdown table and the median and maximum time; timing is of `check()` alone, in worker processes that keep
the caches a batch worker keeps (`--cold` clears them before every policy; `--both` clears them, checks, and checks
the same policy again, timing both and requiring the same verdicts and traces).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Optional

CONDITIONS = ("C1", "C2", "C3", "C4", "P1")
CONTENT_KINDS = ("message", "tool_output", "file_body", "stack_trace", "summary", "diff")
THRESHOLDS = (13, 20, 100, 1000, 10**6)
HI = 1 << 24  # search bound for derived lengths: above every threshold in the family
EXPANDED_REPLAY_MAX = 20_000
EXPLICIT_DEPTH = 3  # the explicit engine's depth for a policy the symbolic engine finds no violation of
EXPLICIT_SECONDS = 600.0  # a hang guard for the explicit engine, never reached by the family
EXPLICIT_STATES = 1_500_000  # the explicit engine's deterministic bound here (about 1 GB of states at the limit)


# --------------------------------------------------------------------------- atoms and their meaning


@dataclass(frozen=True)
class Atom:
    """One comparison of the family: `attr [* mult] op const`, or a kind / pinned / edited test.

    `mult` is an integer or a second attribute (a product); `const` is a literal or, when it names an attribute,
    that attribute (`idle > age`)."""

    attr: str
    op: str
    const: object = None  # a literal text (numeric atoms), a tuple of kinds (kind atoms), or None (flags)
    mult: object = None

    def text(self, python: bool) -> str:
        span = ("window." if self.attr == "step" else "span.") if python else ""
        if self.attr == "kind":
            if isinstance(self.const, tuple):
                return f"{span}kind {self.op} [{', '.join(json.dumps(k) for k in self.const)}]"
            return f"{span}kind {self.op} {json.dumps(self.const)}"
        if self.attr in ("pinned", "edited"):
            return f"{'not ' if self.op == 'not' else ''}{span}{self.attr}"
        prefix = ("window." if python else "") if self.const == "step" else span
        rhs = f"{prefix}{self.const}" if self.const in NUMERIC_OVER_TIME else self.const
        scaled = f" * {span}{self.mult}" if isinstance(self.mult, str) else f" * {self.mult}" if self.mult else ""
        return f"{span}{self.attr}{scaled} {self.op} {rhs}"

    def holds(self, env: dict, python: bool) -> bool:
        if self.attr == "kind":
            inside = env["kind"] in (self.const if isinstance(self.const, tuple) else (self.const,))
            return inside if self.op in ("in", "==") else not inside
        if self.attr in ("pinned", "edited"):
            return (not env[self.attr]) if self.op == "not" else env[self.attr]
        scale = _attribute(env, self.mult) if isinstance(self.mult, str) else self.mult or 1
        rhs = _attribute(env, self.const) if self.const in NUMERIC_OVER_TIME else literal(self.const, python)
        return _compare(_attribute(env, self.attr) * scale, self.op, rhs)


def literal(text: str, python: bool) -> Fraction:
    """A YAML decimal is its exact rational; a Python float literal is its IEEE-754 double (spec/SPEC.md §1)."""
    if python and any(c in text for c in ".eE"):
        return Fraction(float(text))
    return Fraction(text)


def _attribute(env: dict, attr: str) -> Fraction:
    if attr == "recency":
        return Fraction(1, 1 + env["idle"])
    if attr == "frequency":
        return Fraction(env["reads"], 1 + env["age"])
    return Fraction(env[attr])


def _compare(a, op, b) -> bool:
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[op]


NUMERIC_OVER_TIME = ("age", "idle", "step", "recency", "frequency", "reads")


@dataclass(frozen=True)
class Spec:
    """One policy of the family: `evict` in disjunctive normal form, its deployment, budget, rank and form."""

    name: str
    dnf: tuple  # tuple of conjunctions, each a tuple of Atoms
    deployment: dict
    form: str = "yaml"  # or "py"
    budget: Optional[int] = None
    rank: Optional[str] = None  # an attribute name, ranked by its negation (`-age`: oldest evicted first)
    c1: object = None  # a hand-derived C1 expectation overriding c1_length: (actions, steps) or "holds"
    note: str = ""  # why, for the hand-derived ones

    @property
    def python(self) -> bool:
        return self.form == "py"

    def dep(self, key: str) -> str:
        defaults = {"records": "undo_region", "rationale": "decision_log", "pins": "host", "audit": "independent",
                    "undo": "versioned"}
        return self.deployment.get(key, defaults[key])

    def evict(self, env: dict) -> bool:
        return any(all(a.holds(env, self.python) for a in conj) for conj in self.dnf)

    def evict_text(self) -> str:
        def conj_text(conj):
            text = " and ".join(a.text(self.python) for a in conj)
            return f"({text})" if len(self.dnf) > 1 and len(conj) > 1 else text
        return " or ".join(conj_text(c) for c in self.dnf)


# --------------------------------------------------------------------------- rendering


# The family's verdicts and lengths are derived for the first seed's conditions, a destroy's record copying its
# target's tokens: every member states that deployment (no evidence ledger, verbatim records; ADR 0035).
FIRST_SEED = {"evidence": "off", "destroy_record": "verbatim"}


def render(spec: Spec) -> str:
    return _python_text(spec) if spec.python else _yaml_text(spec)


def _yaml_text(spec: Spec) -> str:
    lines = [f"name: {spec.name}", f"evict: {json.dumps(spec.evict_text())}"]
    if spec.rank:
        lines.append(f"rank: \"-{spec.rank}\"")
    if spec.budget:
        lines.append(f"budget: {spec.budget}")
    lines.append("deployment:")
    lines += [f"  {k}: {json.dumps(v)}" for k, v in {**spec.deployment, **FIRST_SEED}.items()]
    return "\n".join(lines) + "\n"


def _python_text(spec: Spec) -> str:
    lines = [f'"""Threshold family member {spec.name}."""', "", f"NAME = {json.dumps(spec.name)}"]
    lines.append(f"DEPLOYMENT = {json.dumps({**spec.deployment, **FIRST_SEED})}")
    if spec.budget:
        lines.append(f"BUDGET = {spec.budget}")
    lines += ["", "", "def evict(span, window):", f"    return {spec.evict_text()}"]
    if spec.rank:
        lines += ["", "", "def rank(span, window):", f"    return -span.{spec.rank}"]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the family


def _gt(attr, c, op=">"):
    return Atom(attr, op, str(c))


def _inverse(attr: str, c: int) -> Atom:
    """`attr < 1/c`, written as a decimal when 1/c is one (0.05, 0.01, 0.001, 0.000001), else as `attr * c < 1`."""
    decimals = {20: "0.05", 100: "0.01", 1000: "0.001", 10**6: "0.000001"}
    return Atom(attr, "<", decimals[c]) if c in decimals else Atom(attr, "<", "1", mult=c)


def single_atom(attr: str, c: int) -> tuple:
    """The conjunction a family member with one threshold `c` on `attr` evicts by."""
    if attr == "recency":
        return (_inverse("recency", c),)
    if attr == "frequency":
        # rarely read (read at least once): every unread span has frequency 0, whatever c is
        return (_gt("reads", 1, ">="), _inverse("frequency", c))
    return (_gt(attr, c),)


DEPLOYMENTS = {
    "W": {"records": "window"},
    "WR": {"records": "window", "rationale": "window"},
    "WA": {"records": "window", "audit": "policy"},
    "WRAS": {"records": "window", "rationale": "window", "audit": "policy", "pins": "self"},
    "WASB": {"records": "window", "audit": "policy", "pins": "self", "undo": "blind"},
    "ALL": {"records": "window", "rationale": "window", "pins": "self", "audit": "policy", "undo": "blind"},
    "R": {"rationale": "window"},
    "B": {"undo": "blind"},
    "SAFE": {},
}
CYCLE = ("W", "WR", "WA", "WRAS", "WASB", "ALL")
ATTRS = ("age", "idle", "step", "reads", "recency", "frequency")


def family() -> list:
    specs = []
    # 1. one threshold, YAML: every attribute at every threshold, deployments in rotation
    for i, (attr, c) in enumerate((a, c) for a in ATTRS for c in THRESHOLDS):
        dep = CYCLE[i % len(CYCLE)]
        specs.append(Spec(f"{attr}-{c}-{dep.lower()}", (single_atom(attr, c),), DEPLOYMENTS[dep]))
    # 2. one threshold, Python form (float literals are doubles)
    for i, (attr, c) in enumerate([("age", 20), ("idle", 1000), ("step", 10**6), ("reads", 100), ("recency", 100),
                                   ("recency", 1000), ("recency", 20), ("frequency", 100), ("age", 10**6),
                                   ("reads", 13)]):
        dep = CYCLE[(i + 3) % len(CYCLE)]
        specs.append(Spec(f"py-{attr}-{c}-{dep.lower()}", (single_atom(attr, c),), DEPLOYMENTS[dep], "py"))
    # 3. combinations
    combos = [
        ("age-200-and-reads-lt-3", ((_gt("age", 200), Atom("reads", "<", "3")),), "W", "yaml"),
        ("idle-1000-and-reads-le-2", ((_gt("idle", 1000), Atom("reads", "<=", "2")),), "WA", "yaml"),
        ("age-100-or-idle-13", (((_gt("age", 100),), (_gt("idle", 13),))), "WR", "yaml"),
        ("reads-20-and-idle-100", ((_gt("reads", 20), _gt("idle", 100)),), "ALL", "yaml"),
        ("reads-13-and-age-100", ((_gt("reads", 13), _gt("age", 100)),), "WASB", "yaml"),
        ("step-1000-and-tokens-50", ((_gt("step", 1000), _gt("tokens", 50)),), "WRAS", "yaml"),
        ("recency-0.01-and-reads-lt-3", ((_inverse("recency", 100), Atom("reads", "<", "3")),), "W", "yaml"),
        ("age-1e6-and-frequency-0.001", ((_gt("age", 10**6), _inverse("frequency", 1000)),), "WA", "yaml"),
        ("py-age-200-and-reads-lt-3", ((_gt("age", 200), Atom("reads", "<", "3")),), "WR", "py"),
        ("py-reads-20-and-idle-100", ((_gt("reads", 20), _gt("idle", 100)),), "WRAS", "py"),
        ("py-idle-13-or-reads-1000", (((_gt("idle", 13),), (_gt("reads", 1000),))), "W", "py"),
    ]
    specs += [Spec(n, d, DEPLOYMENTS[dep], form) for n, d, dep, form in combos]
    # 4. look safe, are not: a pinned carve-out under self pins, a kind filter that forgets records
    not_pinned = Atom("pinned", "not")
    specs += [
        Spec("not-pinned-age-100-self", ((not_pinned, _gt("age", 100)),), {"records": "window", "pins": "self"}),
        Spec("py-not-pinned-recency-0.01-self", ((not_pinned, _inverse("recency", 100)),),
             {"records": "window", "pins": "self", "audit": "policy"}, "py"),
        Spec("not-rationale-idle-20", ((Atom("kind", "!=", "rationale"), _gt("idle", 20)),), DEPLOYMENTS["WR"]),
    ]
    # 5. safe for C1 with records in the window: records excluded by kind, by the host's pin, by `edited`
    specs += [
        Spec("not-record-age-200", ((Atom("kind", "!=", "record"), _gt("age", 200)),), DEPLOYMENTS["W"]),
        Spec("not-record-reads-lt-3-ra", ((Atom("kind", "!=", "record"), Atom("reads", "<", "3")),),
             DEPLOYMENTS["WRAS"]),
        Spec("host-pinned-idle-100", ((not_pinned, _gt("idle", 100)),), DEPLOYMENTS["WR"]),
        Spec("edited-age-1000", ((Atom("edited", "is"), _gt("age", 1000)),), DEPLOYMENTS["ALL"]),
        Spec("content-kinds-age-20", ((Atom("kind", "in", ("tool_output", "message")), _gt("age", 20)),),
             DEPLOYMENTS["WA"]),
        Spec("py-not-record-age-1e6", ((Atom("kind", "!=", "record"), _gt("age", 10**6)),), DEPLOYMENTS["WR"], "py"),
        Spec("py-host-pinned-frequency-0.05", ((not_pinned,) + single_atom("frequency", 20),),
             DEPLOYMENTS["WA"], "py"),
    ]
    # 6. the seed's safe design, rationale in the window, blind undo: C1 holds whatever the threshold
    specs += [
        Spec("safe-age-100", ((_gt("age", 100),),), {}),
        Spec("safe-reads-lt-3-age-200", ((_gt("age", 200), Atom("reads", "<", "3")),), {}),
        Spec("py-safe-idle-13", ((_gt("idle", 13),),), {}, "py"),
        Spec("rationale-window-idle-1000", ((_gt("idle", 1000),),), DEPLOYMENTS["R"]),
        Spec("blind-step-20", ((_gt("step", 20),),), DEPLOYMENTS["B"]),
    ]
    # 7. a budget, and a budget with a rank
    specs += [
        Spec("budget-age-100", ((_gt("age", 100),),), DEPLOYMENTS["WR"], budget=500),
        Spec("ranked-age-1000", ((_gt("age", 1000),),), DEPLOYMENTS["W"], budget=4000, rank="age"),
        Spec("ranked-idle-13-wras", ((_gt("idle", 13),),), DEPLOYMENTS["WRAS"], budget=2000, rank="idle"),
        Spec("ranked-safe-not-record-idle-1000", ((Atom("kind", "!=", "record"), _gt("idle", 1000)),), {},
             budget=3000, rank="idle"),
        Spec("py-ranked-reads-lt-3-age-200", ((_gt("age", 200), Atom("reads", "<", "3")),), DEPLOYMENTS["WA"], "py",
             budget=4000, rank="age"),
        Spec("py-budget-safe-idle-100", ((_gt("idle", 100),),), {}, "py", budget=1000),
    ]
    # 7b. evicting pinned spans (host pins pin every record), a token threshold met by a destroy record
    specs += [
        Spec("host-pinned-evicted-age-100", ((Atom("pinned", "is"), _gt("age", 100)),), DEPLOYMENTS["W"]),
        Spec("tokens-1e6-and-age-13", ((_gt("tokens", 10**6), _gt("age", 13)),), DEPLOYMENTS["WA"]),
    ]
    # 8. hand-derived C1 (no rule above covers them): impossible by arithmetic, non-monotone, nonlinear
    specs += [
        Spec("frequency-ge-1", ((Atom("frequency", ">=", "1"),),), DEPLOYMENTS["W"], c1="holds",
             note="reads <= last_read - created <= age < 1 + age, so frequency < 1 on every span"),
        Spec("idle-gt-age", ((Atom("idle", ">", "age"),),), DEPLOYMENTS["WR"], c1="holds",
             note="last_read >= created, so idle <= age"),
        Spec("py-reads-gt-age", ((Atom("reads", ">", "age"),),), DEPLOYMENTS["WA"], "py", c1="holds",
             note="reads <= last_read - created <= age"),
        Spec("step-1e6-and-age-lt-13", ((_gt("step", 10**6), Atom("age", "<", "13")),), DEPLOYMENTS["W"],
             c1=(3, 10**6 + 1), note="wait 999,999 steps, then append and edit: the record is fresh in an old window"),
        Spec("age-100-and-idle-lt-13", ((_gt("age", 100), Atom("idle", "<", "13")),), DEPLOYMENTS["WA"],
             c1=(3, 103), note="read the record 101 times in a row: age 101, idle 0"),
        Spec("recency-0.001-and-frequency-0.5", ((_inverse("recency", 1000), Atom("frequency", ">", "0.5")),),
             DEPLOYMENTS["WRAS"], c1=(4, 2004),
             note="idle >= 1000 and 2 reads > 1 + age: read r times, wait w >= 1000, r > w + 1: r = 1002, w = 1000"),
        Spec("age-times-reads-1e6", ((Atom("age", ">", str(10**6), mult="reads"),),), DEPLOYMENTS["W"], c1=(3, 1003),
             note="nonlinear: reads * age > 10^6; r reads then w waits give r(r + w), best at w = 0: r = 1001"),
        Spec("self-pinned-reads-13-idle-100", ((Atom("pinned", "is"), _gt("reads", 13), _gt("idle", 100)),),
             {"records": "window", "pins": "self"}, c1=(5, 117),
             note="records are created unpinned under self pins: pin it, read it 14 times, and 101 idle steps, "
                  "the pin's own step among them when it comes last (every action advances the clock)"),
        Spec("late-record-5-actions", ((_gt("step", 1000), _gt("reads", 13), _gt("idle", 100), Atom("age", "<", "200")),),
             DEPLOYMENTS["W"], c1=(5, 1001),
             note="a young (age < 200), read (14), idle (101) record in an old window (step 1001): wait before the "
                  "edit (reads and waits after it cannot make step > 1000 while age < 200)"),
        Spec("late-pinned-record-6-actions",
             ((Atom("pinned", "is"), _gt("step", 1000), _gt("reads", 13), _gt("idle", 100), Atom("age", "<", "200")),),
             {"records": "window", "pins": "self"}, c1=(6, 1001),
             note="as late-record-5-actions, and the record pinned (self pins): the pin is a sixth action, its step "
                  "one of the idle ones"),
        Spec("py-age-times-reads-1e6", ((Atom("age", ">", str(10**6), mult="reads"),),), DEPLOYMENTS["WASB"], "py",
             c1=(3, 1003), note="as age-times-reads-1e6, in the Python form"),
    ]
    return specs


# --------------------------------------------------------------------------- expected verdicts and lengths


def _record_env(spec: Spec, n: int, w: int, tokens: int, kind: str = "record") -> dict:
    """A record (or its rationale) created at step 2, read n times at once, then left alone for w steps."""
    return {"kind": kind, "pinned": spec.dep("pins") == "host", "edited": False, "tokens": tokens,
            "age": n + w, "idle": w, "reads": n, "step": 2 + n + w}


def _least(pred, lo: int = 0) -> Optional[int]:
    """The least x in [lo, HI] with pred(x), for pred monotone (false then true); None if none."""
    if not pred(HI):
        return None
    hi = HI
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _tokens_for(spec: Spec, conj: tuple) -> Optional[int]:
    """A record token count meeting the conjunction's token tests (a destroy record copies any count), or None."""
    tests = [a for a in conj if a.attr == "tokens"]
    for t in sorted({1} | {int(literal(a.const, spec.python)) + 1 for a in tests}):
        if all(a.holds({"tokens": t}, spec.python) for a in tests):
            return t
    return None


def c1_length(spec: Spec) -> Optional[tuple]:
    """(actions, steps) of the shortest C1 violation derived by hand, or None when no record is ever a candidate."""
    if spec.dep("records") != "window":
        return None
    return candidate_length(spec, "record")


def _rationale_tokens(spec: Spec, conj: tuple) -> Optional[int]:
    """A rationale holds 1 token: 1 if the conjunction's token tests admit it, else None."""
    return 1 if all(a.holds({"tokens": 1}, spec.python) for a in conj if a.attr == "tokens") else None


def candidate_length(spec: Spec, kind: str) -> Optional[tuple]:
    """(actions, steps) of the shortest run after which a `kind` span (a record or its rationale, both created by
    the edit at step 2, in the window) is a candidate of the policy, or None when it never is."""
    best = None
    for conj in spec.dnf:
        tokens = _tokens_for(spec, conj) if kind == "record" else _rationale_tokens(spec, conj)
        if tokens is None:
            continue

        def ok(n, w, conj=conj, tokens=tokens):
            return all(a.holds(_record_env(spec, n, w, tokens, kind), spec.python) for a in conj)

        reads_up = [a for a in conj if a.attr == "reads" and a.op in (">", ">=")]
        n_lo = _least(lambda n: all(a.holds({"reads": n}, spec.python) for a in reads_up), 1) if reads_up else None
        options = []
        if not reads_up:
            w = _least(lambda w: ok(0, w))
            options.append((0, w))
        if n_lo is not None:
            options.append((n_lo, _least(lambda w: ok(n_lo, w))))
        up = [a for a in conj if a.attr in ("age", "step") or a in reads_up]
        n_only = _least(lambda n: all(a.holds(_record_env(spec, n, 0, tokens, kind), spec.python) for a in up), 1)
        options.append((n_only, 0 if n_only is not None and ok(n_only, 0) else None))
        for n, w in options:
            if n is None or w is None or not ok(n, w):
                continue
            candidate = (2 + (n > 0) + (w > 0), 2 + n + w)
            best = candidate if best is None or candidate < best else best
    return best


def _fresh_rationale_evicted(spec: Spec) -> bool:
    env = {"kind": "rationale", "pinned": spec.dep("pins") == "host", "edited": False, "tokens": 1,
           "age": 0, "idle": 0, "reads": 0, "step": 2}
    return spec.evict(env)


def _fresh_content_spared(spec: Spec) -> bool:
    return any(not spec.evict({"kind": k, "pinned": False, "edited": False, "tokens": 1, "age": 0, "idle": 0,
                               "reads": 0, "step": 3}) for k in CONTENT_KINDS)


def _after(length: Optional[tuple]) -> Optional[tuple]:
    """The length of a run that ends with the compaction of a candidate found after `length`: one more action and
    step (the compaction's predicate reads the state it starts from)."""
    return None if length is None else (length[0] + 1, length[1] + 1)


def _rationale_candidate(spec: Spec) -> Optional[tuple]:
    """candidate_length for the rationale; a hand-derived C1 (group 8) stands for it when the policy reads neither
    kind nor tokens (the rationale is born with the record and read and left alone as it is)."""
    if spec.c1 is None:
        return candidate_length(spec, "rationale")
    if any(a.attr in ("kind", "tokens") for conj in spec.dnf for a in conj):
        raise ValueError(f"{spec.name}: P1 is not derived for a hand-derived C1 that reads kind or tokens")
    return None if spec.c1 == "holds" else spec.c1


def expectations(spec: Spec) -> dict:
    """{condition: (verdict, (actions, steps) or None)} from the rules in this module's docstring."""
    ranked = spec.rank is not None and spec.budget is not None
    window_rec, window_rat = spec.dep("records") == "window", spec.dep("rationale") == "window"
    c1 = c1_length(spec) if spec.c1 is None else None if spec.c1 == "holds" or not window_rec else spec.c1
    # No host truncates (host_truncation: off, SPEC §2): only the policy removes a record, by its selection or by
    # truncating to its own budget.
    c2 = ((3, 3) if spec.budget else _after(c1)) if window_rec else None
    out = {"C1": ("violated", c1) if c1 is not None else ("holds", None),
           "C2": ("violated", c2) if c2 is not None else ("holds", None),
           "C3": ("violated", (4, 4)) if spec.dep("undo") == "blind" else ("holds", None)}
    quick = _fresh_rationale_evicted(spec) and not ranked
    rationale = _after(_rationale_candidate(spec)) if window_rat and not spec.budget else None
    if spec.dep("audit") == "policy" and window_rec:
        if not window_rat:
            out["C4"] = ("violated", c2) if c2 is not None else ("holds", None)
        elif ranked:
            out["C4"] = ("violated", None)
        elif spec.budget:
            out["C4"] = ("violated", (3, 3) if quick else (4, 4) if _fresh_content_spared(spec) else None)
        elif c2 is not None and rationale is not None:
            out["C4"] = ("violated", (3, 3) if c2 == rationale == (3, 3) else None)
        else:
            out["C4"] = ("holds", None)
    else:
        out["C4"] = ("holds", None)
    if not window_rat:
        out["P1"] = ("holds", None)
    elif spec.budget:
        out["P1"] = ("violated", None if ranked else (3, 3) if quick else (4, 4))
    else:
        out["P1"] = ("violated", rationale) if rationale is not None else ("holds", None)
    out["R1"] = _r1_expectation(spec)
    out["T1"] = _t1_expectation(spec)
    return out


IMPOSSIBLE = {"frequency-ge-1", "idle-gt-age", "py-reads-gt-age"}  # group 8: no span ever meets them


def _t1_expectation(spec: Spec) -> tuple:
    """T1 from the rule in this module's docstring."""
    per_span = any(any(a.attr != "step" for a in conj) for conj in spec.dnf)
    return ("violated", None) if per_span and spec.name not in IMPOSSIBLE else ("holds", None)


def _r1_expectation(spec: Spec) -> tuple:
    recovery = {"record", "rationale"}
    for conj in spec.dnf:
        for a in conj:
            values = set(a.const) if isinstance(a.const, tuple) else {a.const}
            if a.attr == "kind" and a.op in ("==", "in") and values & recovery:
                raise ValueError(f"{spec.name}: R1 is not derived for a kind test that selects a recovery kind")
    return ("holds", None)


# --------------------------------------------------------------------------- checking one policy


def _cross_check(policy, result) -> list:
    """Independent checks of a reported counterexample: (the problems found, the names of the checks made)."""
    from prunecheck.spec.conditions import violations
    from prunecheck.spec.runtime import REPEATABLE, State, step
    from prunecheck.spec.actions import expand

    trace, problems, made = result.trace, [], []
    c = result.condition
    if trace.steps <= EXPANDED_REPLAY_MAX:
        made.append("expanded")
        state, first = State(), None
        singles = [s for a in trace.actions for s in expand(a)]
        for index, action in enumerate(singles, 1):
            transition = step(policy, state, action, trace.spans)
            if first is None and c in violations(policy, transition):
                first = index
            state = transition.after
        if first != len(singles):
            problems.append(f"expanded replay: first violation at single step {first} of {len(singles)}")
    repeated = [i for i, a in enumerate(trace.actions) if isinstance(a, REPEATABLE) and a.times > 1]
    if repeated:
        i = repeated[-1]
        made.append("once-less")
        shorter = list(trace.actions)
        shorter[i] = replace(shorter[i], times=shorter[i].times - 1)
        state, hit = State(), False
        for action in shorter:
            transition = step(policy, state, action, trace.spans)
            hit = hit or c in violations(policy, transition)
            state = transition.after
        if hit:
            problems.append(f"the trace with action {i + 1} repeated once less still violates {c}")
    return problems, made


def check_one(job) -> dict:
    """Load, check at the defaults (timed), cross-check every violation; a plain dict for the parent process."""
    path, mode = job
    try:
        return _check_one(path, mode)
    except Exception as exc:  # a crash is a finding about this policy, not the end of the run
        return {"path": str(path), "seconds": 0.0, "error": f"{type(exc).__name__}: {exc}", "results": {}}


def _timed_check(policy) -> tuple:
    from prunecheck.checker.check import check

    started, cpu = time.perf_counter(), time.process_time()
    report = check(policy)
    return report, time.perf_counter() - started, time.process_time() - cpu


def _check_one(path, mode: str) -> dict:
    from prunecheck.checker.check import clear_caches
    from prunecheck.checker.language.loader import load_policy
    from prunecheck.checker.outputs.reasons import reason_text
    from prunecheck.spec.actions import action_text

    policy = load_policy(path)
    if mode in ("cold", "both"):
        clear_caches()
    report, seconds, cpu = _timed_check(policy)
    out = {"path": str(path), "seconds": seconds, "cpu": cpu, "results": {}}
    if mode == "both":
        again, out["warm"], out["warm_cpu"] = _timed_check(policy)
        out["warm_same"] = [(r.verdict, r.trace) for r in again.results] == [(r.verdict, r.trace) for r in report.results]
    explicit = _explicit_agreement(policy, report)
    for r in report.results:
        entry = {"verdict": str(r.verdict), "reason": reason_text(r.reason), "engine": str(r.engine),
                 "seconds": r.seconds}
        if r.trace is not None:
            entry["length"] = (len(r.trace.actions), r.trace.steps)
            entry["trace"] = [action_text(a) for a in r.trace.actions]
            entry["problems"], entry["checked"] = _cross_check(policy, r)
        said = explicit.get(r.condition, [])
        entry.setdefault("problems", []).extend(p for p in said if p != "limit")
        if not said:
            entry.setdefault("checked", []).append("explicit")
        elif said == ["limit"]:
            entry.setdefault("checked", []).append("explicit-limit")
        out["results"][r.condition] = entry
    return out


def _explicit_agreement(policy, report) -> dict:
    """The explicit engine at its default domains (tokens and repetitions from the policy's constants, default spans),
    searched as deep as the symbolic engine's longest shortest trace (EXPLICIT_DEPTH when nothing is violated), within
    EXPLICIT_STATES states: per condition, a disagreement (a violation it misses or finds longer, or one it finds where
    the symbolic engine proved `holds`) or that it stopped at its state limit first. Agreed conditions get no entry."""
    from prunecheck.checker.engines.explicit import domains_for, explore
    from prunecheck.checker.outputs.reasons import reason_text

    lengths = [len(r.trace.actions) for r in report.results if r.trace is not None]
    depth = max(lengths, default=EXPLICIT_DEPTH)
    found = {r.condition: r for r in explore(policy, depth, report.spans, domains=domains_for(policy),
                                             time_limit=EXPLICIT_SECONDS, max_states=EXPLICIT_STATES)}
    out = {}
    for r in report.results:
        other = found[r.condition]
        if other.verdict.name == "UNKNOWN" and other.reason.clauses[0].state_limit is not None:
            out[r.condition] = ["limit"]
        elif r.verdict.name == "VIOLATED" and (other.verdict.name != "VIOLATED"
                                               or len(other.trace.actions) != len(r.trace.actions)):
            out[r.condition] = [f"explicit engine at its default domains: {other.verdict} at depth {other.depth} "
                                f"({reason_text(other.reason)})"]
        elif r.verdict.name == "HOLDS" and other.verdict.name == "VIOLATED":
            out[r.condition] = [f"explicit engine violates a proved condition: {reason_text(other.reason)}"]
    return out


# --------------------------------------------------------------------------- comparing and reporting


def compare(spec: Spec, got: dict) -> list:
    """Every difference between the expectation and the tool's result, one line each."""
    if "error" in got:
        return [f"{spec.name}: {got['error']}"]
    findings = [] if got.get("warm_same", True) else [f"{spec.name}: the second (warm) check reported otherwise"]
    for c, (verdict, length) in expectations(spec).items():
        r = got["results"][c]
        if r["verdict"] != verdict:
            what = f" after {'; '.join(r['trace'])}" if r.get("trace") else f": {r['reason']}"
            findings.append(f"{spec.name} {c}: expected {verdict}, got {r['verdict']}{what}")
            continue
        if verdict == "violated" and length is not None and tuple(r["length"]) != length:
            findings.append(f"{spec.name} {c}: expected a shortest trace of {length[0]} actions, {length[1]} steps, "
                            f"got {r['length'][0]} actions, {r['length'][1]} steps: {'; '.join(r['trace'])}")
        findings += [f"{spec.name} {c}: cross-check: {p}" for p in r.get("problems", ())]
    return findings


LEGEND = ("deployment: records W(indow)/u(ndo region), rationale W(indow)/l(og), pins S(elf)/h(ost), "
          "audit P(olicy)/i(ndependent), undo B(lind)/v(ersioned); capitals are the unsafe settings")


def dep_code(spec: Spec) -> str:
    return "".join(up if spec.dep(k) == bad else low for k, bad, up, low in (
        ("records", "window", "W", "u"), ("rationale", "window", "W", "l"), ("pins", "self", "S", "h"),
        ("audit", "policy", "P", "i"), ("undo", "blind", "B", "v")))


def _cell(spec: Spec, c: str, got: dict) -> str:
    verdict, _ = expectations(spec)[c]
    if c not in got["results"]:
        return "error"
    r = got["results"][c]
    mark = "" if r["verdict"] == verdict else " **≠**"
    if r["verdict"] == "violated":
        a, s = r["length"]
        return f"V {a}/{s}{mark}" if a != s else f"V {a}{mark}"
    return f"{'H' if r['verdict'] == 'holds' else '?'}{mark}"


def table(specs: list, outcomes: dict) -> str:
    warm = all("warm" in outcomes[s.name] for s in specs)
    head = "| policy | form | evict | budget/rank | dep | C1 | C2 | C3 | C4 | P1 | s | cpu s |" + (" warm s |" if warm else "")
    rows = [head, "|---|---|---|---|---|---|---|---|---|---|---:|---:|" + ("---:|" if warm else "")]
    for spec in specs:
        got = outcomes[spec.name]
        extra = "/".join(x for x in (str(spec.budget or ""), f"-{spec.rank}" if spec.rank else "") if x) or "-"
        cells = " | ".join(_cell(spec, c, got) for c in CONDITIONS)
        evict = spec.evict_text().replace("|", "\\|")
        rows.append(f"| {spec.name} | {spec.form} | `{evict}` | {extra} | {dep_code(spec)} | {cells} | "
                    f"{got['seconds']:.2f} | {got.get('cpu', 0.0):.2f} |" + (f" {got['warm']:.2f} |" if warm else ""))
    return "\n".join(rows)


def summary(specs: list, outcomes: dict) -> tuple:
    times = [outcomes[s.name]["seconds"] for s in specs]
    cpus = [outcomes[s.name].get("cpu", 0.0) for s in specs]
    warms = [outcomes[s.name]["warm"] for s in specs if "warm" in outcomes[s.name]]
    warm_cpus = [outcomes[s.name]["warm_cpu"] for s in specs if "warm" in outcomes[s.name]]
    findings = [f for s in specs for f in compare(s, outcomes[s.name])]
    unknowns = [(s.name, c, r["reason"]) for s in specs for c, r in outcomes[s.name]["results"].items()
                if r["verdict"] == "unknown"]
    made = [r.get("checked", ()) for s in specs for r in outcomes[s.name]["results"].values()
            if r["verdict"] == "violated"]
    agreed = sum("explicit" in r.get("checked", ()) for s in specs for r in outcomes[s.name]["results"].values())
    limited = sum("explicit-limit" in r.get("checked", ()) for s in specs for r in outcomes[s.name]["results"].values())
    slow = sorted(((outcomes[s.name]["seconds"], s.name) for s in specs), reverse=True)
    lines = [f"{len(specs)} policies ({sum(s.python for s in specs)} in the Python form), {5 * len(specs)} verdicts.",
             f"Time per policy (check() at the defaults{', caches cleared' if warms else ''}): median {statistics.median(times):.2f} s, "
             f"max {max(times):.2f} s ({slow[0][1]}); over 1 s: {sum(t > 1 for t in times)}, "
             f"over 5 s: {sum(t > 5 for t in times)}; total {sum(times):.1f} s. CPU time of this process per policy: "
             f"median {statistics.median(cpus):.2f} s, max {max(cpus):.2f} s.",
             *([f"The same policy checked again at once (warm caches): median {statistics.median(warms):.2f} s, "
                f"max {max(warms):.2f} s; CPU median {statistics.median(warm_cpus):.2f} s, max {max(warm_cpus):.2f} s."]
               if warms else []),
             f"Cross-checks of the {len(made)} violations: " + ", ".join(
                 f"{sum(name in m for m in made)} {name}" for name in ("expanded", "once-less", "explicit"))
             + " (expanded: replayed step by step; once-less: last repeat shortened; explicit: the explicit engine at its default domains agrees).",
             f"The explicit engine at its default domains agrees on {agreed} of {5 * len(specs)} conditions "
             "(every violation found with as many actions, nothing proved found violated) and stopped at its limit "
             f"of {EXPLICIT_STATES} states on {limited}; it disagrees on none unless listed as a mismatch below.",
             f"Mismatches with the expectations (verdict, length or cross-check): {len(findings)}; "
             f"unknown verdicts: {len(unknowns)}."]
    return lines, findings, unknowns, slow


def write_family(specs: list, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for spec in specs:
        path = out / f"{spec.name}.{'py' if spec.python else 'yaml'}"
        path.write_text(render(spec))
        paths[spec.name] = path
    expected = {s.name: {c: {"verdict": v, "length": l} for c, (v, l) in expectations(s).items()} for s in specs}
    (out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    return paths


MARKER = "<!-- benchmarks/threshold_family.py writes from here to the end -->"


def write_results(path: Path, text: str, mode: str, jobs: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_check import machine

    old = path.read_text(encoding="utf-8") if path.exists() else ""
    kept = old.split(MARKER)[0].rstrip("\n")
    how = {"batch": "caches kept across policies, as in a batch worker", "cold": "caches cleared before each policy",
           "both": "caches cleared before each policy (s, cpu s), then the same policy at once again (warm s)"}[mode]
    section = [MARKER, "", "## 5. Issue 12: the threshold family at the default bounds", "",
               f"`python benchmarks/threshold_family.py --jobs {jobs}{' --' + mode if mode != 'batch' else ''} "
               "--results benchmarks/RESULTS.md`: every policy checked in-process with `check()` at depth 12, "
               f"6 spans, 30 s per condition ({how}); expected verdicts and shortest lengths derived by hand (the "
               "rules are in the script's docstring), never from the tool. s: wall seconds of `check()`; cpu s: CPU "
               "seconds of the process (z3 and cvc5 run in it), what the wall time would be on an idle core.", "",
               f"Machine: {machine()}.", "", text]
    path.write_text(kept + "\n\n" + "\n".join(section) + "\n", encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", type=Path, help="directory for the policies (default: a temporary one)")
    parser.add_argument("--only-generate", action="store_true", help="write the policies and expected.json, stop")
    parser.add_argument("--only", help="comma-separated policy names")
    parser.add_argument("--cold", action="store_true", help="clear the shared caches before every policy")
    parser.add_argument("--both", action="store_true", help="cold, then the same policy again (warm); times both")
    parser.add_argument("--results", type=Path, help="replace this script's section of a results file (RESULTS.md)")
    parser.add_argument("--markdown", type=Path, help="also write the table and figures to this file")
    args = parser.parse_args(argv)
    specs = family()
    assert len({s.name for s in specs}) == len(specs), "policy names must be unique"
    if args.only:
        wanted = set(args.only.split(","))
        specs = [s for s in specs if s.name in wanted]
    out = args.out or Path(tempfile.mkdtemp(prefix="threshold-family-"))
    paths = write_family(specs, out)
    print(f"{len(specs)} policies written to {out}", file=sys.stderr)
    if args.only_generate:
        return 0
    mode = "both" if args.both else "cold" if args.cold else "batch"
    jobs = [(paths[s.name], mode) for s in specs]
    started, load = time.perf_counter(), os.getloadavg()[0]
    if args.jobs > 1:
        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            done = pool.map(check_one, jobs, chunksize=1)
    else:
        done = [check_one(j) for j in jobs]
    wall = time.perf_counter() - started
    outcomes = {s.name: d for s, d in zip(specs, done)}
    (out / "outcomes.json").write_text(json.dumps(outcomes, indent=1) + "\n")
    lines, findings, unknowns, slow = summary(specs, outcomes)
    lines.append(f"Wall time {wall:.1f} s with {args.jobs} worker(s) (cross-checks included); load average "
                 f"{load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end (other jobs shared the 2 cores).")
    text = "\n".join([LEGEND + "; V a/s: violated after a actions, s steps; H holds; ? unknown; ≠ not as expected",
                      "", table(specs, outcomes), "", *lines, "",
                      *(f"- mismatch: {f}" for f in findings), *(f"- unknown: {n} {c}: {r}" for n, c, r in unknowns),
                      "", "Slowest: " + ", ".join(f"{n} {t:.2f} s" for t, n in slow[:5])])
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    if args.results:
        write_results(args.results, text, mode, args.jobs)
    return 1 if findings or unknowns else 0


if __name__ == "__main__":
    sys.exit(main())
