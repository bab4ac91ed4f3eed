"""The policy vocabulary of one span, and of the window, as z3 terms (shared by the unrolled and the pair model)."""

from __future__ import annotations

import z3

from prunecheck.spec.policy import name_code
from prunecheck.symbolic.terms import Frac, window_env


class NameValue:
    """A tool name or tag in a model: its code (an Int term) and the mentioned names the codes index."""

    __slots__ = ("term", "names")

    def __init__(self, term, names: tuple):
        self.term, self.names = term, names


def name_guards(a, names: tuple) -> list:
    """An append's tool and tag codes range over 0..N (0: every unmentioned name)."""
    return [z3.And(getattr(a, attr) >= 0, getattr(a, attr) <= len(table)) for attr, table in names]


def write_names(becomes, names: tuple, record_tool: str, a, appended, edit_written, summary) -> None:
    """The tool and tag fields a step writes (SPEC 1c): an append's codes, the edit tool's name and no tag for a
    record or rationale, no name for a summary (`summary(value)`: its cases)."""
    for attr, table in names:
        edit_name = record_tool if attr == "tool" else ""
        becomes(attr, (appended, getattr(a, attr)), (edit_written, z3.IntVal(name_code(table, edit_name))),
                *summary(z3.IntVal(name_code(table, ""))))


def attribute_env(clock, span: dict, window_tokens: Frac, budget, window_spans=None, positions=None,
                  names: tuple = ()) -> dict:
    """The policy vocabulary as z3 terms for one span (a dict of its field terms) at `clock`; `positions` maps the
    positional span attributes the policy reads to their terms (spec/SPEC.md §1b), `names` is mentioned_names."""
    age, idle = clock - span["created"], clock - span["last_read"]
    env = {
        "tokens": Frac(span["tokens"]), "age": Frac(age), "idle": Frac(idle), "reads": Frac(span["reads"]),
        "recency": Frac(z3.IntVal(1), 1 + idle), "frequency": Frac(span["reads"], 1 + age),
        "pinned": span["pinned"], "edited": span["edited"], "kind": span["kind"], "namespace": span["ns"],
    }
    if "role" in span:  # the pair model has roles only for a policy that reads them
        env["role"] = span["role"]
    if "masked" in span:
        env["masked"] = span["masked"]
    env.update({attr: NameValue(span[attr], table) for attr, table in names if attr in span})
    env.update(window_env(clock, window_tokens, budget, window_spans))
    env.update({name: Frac(term) for name, term in (positions or {}).items()})
    return env


def trigger_env(a) -> dict:
    """What the host tells the compaction action `a` fires (spec/SPEC.md §4g) as z3 terms: its event (a name's code
    over the policy's mentioned events) and the usage the last call reported, for those the policy reads."""
    env = {}
    if getattr(a, "event", None) is not None:
        env["event"] = NameValue(a.event, a.events)
    if getattr(a, "reported", None) is not None:
        env["reported_tokens"] = Frac(a.reported)
    return env


def trigger_guards(a, is_compact) -> list:
    """The domains of a's trigger arguments: an event code in 0..N and a usage >= 0 for a compaction, both 0 for any
    other action (so that a step that is no compaction has one encoding)."""
    out = []
    if getattr(a, "event", None) is not None:
        out.append(z3.If(is_compact, z3.And(a.event >= 0, a.event <= len(a.events)), a.event == 0))
    if getattr(a, "reported", None) is not None:
        out.append(z3.If(is_compact, a.reported >= 0, a.reported == 0))
    return out
