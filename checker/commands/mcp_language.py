"""The policy language as the MCP server publishes it: the policy JSON Schema and the vocabulary, one example each."""

from __future__ import annotations

from prunecheck.spec.conditions import CONDITIONS, DESCRIPTIONS
from prunecheck.spec.policy import (AGGREGATES, TRIGGER_ATTRS, BOOL, DEPLOYMENT_CHOICES, DEPLOYMENT_NAMES, ENUM_VALUES, FUNCTIONS, NUM,
                                    SPAN_ATTRS, WINDOW_ATTRS, Deployment)

from prunecheck.checker.language.loader import TOP_KEYS
from prunecheck.checker.language.policy_schema import policy_schema

# One fragment per top-level key, each a valid policy once merged over {"name": ..., "evict": ...} (`compaction`'s
# over {"name": ...}: its stages hold the stage keys, evict among them).
KEY_EXAMPLES = {
    "name": {"name": "keep-recent"},
    "description": {"description": "Evict old tool output."},
    "evict": {"evict": "kind == 'tool_output' and age > 5"},
    "rank": {"rank": "recency * frequency"},
    "budget": {"budget": 4000},
    "keep": {"keep": "role == 'system'"},
    "when": {"when": "window_tokens > 100000"},
    "until": {"until": "window_tokens <= 50000"},
    "order": {"order": "newest"},
    "effect": {"effect": "mask"},
    "placeholder_tokens": {"effect": "cut", "placeholder_tokens": 200},
    "summary_role": {"effect": "summarise", "summary_role": "assistant"},
    "summary_at": {"effect": "summarise", "summary_at": "end"},
    "pairs": {"pairs": "together"},
    "start_on": {"start_on": "user"},
    "compaction": {"compaction": [{"evict": "kind == 'tool_output' and age > 5", "effect": "mask"},
                                  {"when": "window_tokens > 100000", "evict": "kind != 'summary'",
                                   "effect": "summarise", "placeholder_tokens": 500}]},
    "deployment": {"deployment": {"records": "undo_region", "pins": "host"}},
    "expect": {"expect": {"C1": "holds"}},
    "accept": {"accept": [{"condition": "C2", "reason": "the host never imposes a budget"}]},
}
OPERATOR_EXAMPLES = {
    "+ - * /": "tokens + age * 2 - idle / 2 > 10",
    "// %": "position < window_spans // 2 and from_end % 2 == 0",
    "< <= > >= == !=": "age >= 3 and reads != 0",
    "and or not": "not pinned and (idle > 3 or reads == 0)",
    "in [...]": "kind in ['tool_output', 'diff']",
    "a if c else b": "(tokens if edited else 0) > 100",
    **{f"{name}(...)": f"{name}(tokens, 500) > 100" if name != "abs" else "abs(age - idle) > 2"
       for name in FUNCTIONS},
}
# The aggregates (SPEC §1e): a condition on each counted span's own attributes, summed over the window's spans.
AGGREGATE_EXAMPLES = {
    "count": ("count(role == 'user') > 20", "live window spans for which the condition holds"),
    "count_newer": ("count_newer(role == 'user') >= 3", "such spans newer than this span (window order)"),
    "count_older": ("count_older(kind == 'summary') >= 1", "such spans older than this span"),
    "tokens_of": ("tokens_of(role == 'tool_result') > 40000", "the tokens of such spans in the window"),
    "tokens_newer": ("tokens_newer(role == 'tool_result') > 40000", "the tokens of such spans newer than this span"),
    "tokens_older": ("tokens_older(true) > 1000", "the tokens of such spans older than this span"),
}


# What the host tells a compaction it fires (spec/SPEC.md §4g), readable in `when` only.
TRIGGER_EXAMPLES = {
    "event": ("event == 'overflow'", "the event the host fired the compaction on ('' for none), compared with strings"),
    "reported_tokens": ("reported_tokens > 115200", "the token usage the previous model call reported"),
}


def attribute_example(name: str, kind: str) -> dict:
    """A policy fragment whose `evict` uses the attribute (`budget` needs the policy's own budget set)."""
    if kind == BOOL:
        return {"evict": f"not {name}"}
    if kind in ENUM_VALUES:
        return {"evict": f"{name} == '{ENUM_VALUES[kind][-1]}'"}
    if kind != NUM:
        return {"evict": f"{name} == 'edit'"}
    if name == "budget":
        return {"evict": "window_tokens > budget", "budget": 4000}
    return {"evict": f"{name} < 0.5" if name in ("recency", "frequency") else f"{name} > 2"}


def vocabulary() -> dict:
    """Every key, attribute, operator, deployment key and condition of the language, each with one example: a
    policy fragment, valid once merged over a policy's `name` and `evict`."""
    schema = policy_schema()["properties"]
    return {
        "keys": {k: {"description": schema[k].get("description", ""), "example": KEY_EXAMPLES[k]} for k in TOP_KEYS},
        "span_attributes": {name: {"type": kind, "example": attribute_example(name, kind),
                                   **({"values": list(ENUM_VALUES[kind])} if kind in ENUM_VALUES else {})}
                            for name, (kind, _) in SPAN_ATTRS.items()},
        "window_attributes": {name: {"type": kind, "example": attribute_example(name, kind)}
                              for name, (kind, _) in WINDOW_ATTRS.items()},
        "trigger_attributes": {name: {"type": kind, "value": what, "example": {"when": text}}
                               for name, (kind, _) in TRIGGER_ATTRS.items() for text, what in [TRIGGER_EXAMPLES[name]]},
        "operators": {op: {"example": {"evict": text}} for op, text in OPERATOR_EXAMPLES.items()},
        "aggregates": {name: {"type": NUM, "value": what, "scope": AGGREGATES[name][0], "example": {"evict": text}}
                       for name, (text, what) in AGGREGATE_EXAMPLES.items()},
        "deployment": {**{key: {"values": list(values), "default": getattr(Deployment(), key),
                                "example": {"deployment": {key: values[-1]}}}
                          for key, values in DEPLOYMENT_CHOICES.items()},
                       **{key: {"values": "any name", "default": default, "example": {"deployment": {key: "edit"}}}
                          for key, default in DEPLOYMENT_NAMES.items()}},
        "conditions": {c: DESCRIPTIONS[c] for c in CONDITIONS},
    }


def language_document() -> dict:
    """The `prunecheck://policy-language` resource: the schema `prunecheck schema policy` prints and the vocabulary."""
    return {"schema": policy_schema(), "vocabulary": vocabulary(),
            "forms": {".yaml/.yml": "YAML", ".json": "JSON", ".py": "restricted Python: parsed, never run"}}


__all__ = ["KEY_EXAMPLES", "OPERATOR_EXAMPLES", "vocabulary", "language_document", "attribute_example"]
