"""The JSON Schema (draft 2020-12) of the YAML/JSON policy format, built from the loader's and the model's tables."""

from __future__ import annotations

from prunecheck.spec.conditions import CONDITIONS, DESCRIPTIONS
from prunecheck.spec.policy import (DEPLOYMENT_CHOICES, DEPLOYMENT_NAMES, EFFECTS, MAX_NAME_CHARS, ORDERS, PAIRS, ROLES,
                                    SIZED, STAGE_KEYS, SUMMARY_AT, SUMMARY_ROLES, Deployment)

from prunecheck.checker.language.loader import ACCEPT_KEYS, TOP_KEYS, VERDICTS
from prunecheck.checker.language.typecheck import MAX_DIGITS

SCHEMA_ID = "https://github.com/prunecheck/prunecheck/schemas/policy.schema.json"
NOT_BLANK = r"\S"

_EXPRESSION = "an expression of the policy language (README: The policy language), parsed, never evaluated"


def _deployment() -> dict:
    return {
        "type": "object",
        "description": "where records and rationale live, who pins, who audits, how undo checks, which role and tool name records "
                       "and rationale entries have; each key defaults to the seed's safe design",
        "properties": {**{key: {"enum": list(values), "default": getattr(Deployment(), key)}
                          for key, values in DEPLOYMENT_CHOICES.items()},
                       **{key: {"type": "string", "maxLength": MAX_NAME_CHARS, "default": default}
                          for key, default in DEPLOYMENT_NAMES.items()}},
        "additionalProperties": False,
    }


def _accept() -> dict:
    entry = {
        "type": "object",
        "properties": {
            "condition": {"enum": list(CONDITIONS), "description": "the condition whose finding is accepted"},
            "reason": {"type": "string", "pattern": NOT_BLANK, "description": "why it is accepted (not blank)"},
        },
        "required": list(ACCEPT_KEYS),
        "additionalProperties": False,
    }
    once = [{"contains": {"properties": {"condition": {"const": c}}, "required": ["condition"]},
             "minContains": 0, "maxContains": 1} for c in CONDITIONS]
    return {"type": "array", "items": entry, "allOf": once,
            "description": "accepted findings: still reported, marked accepted, they fail no run; each condition "
                           "at most once"}


def _properties() -> dict:
    return {**_properties_without_stages(), "compaction": _compaction()}


def _properties_without_stages() -> dict:
    return {
        "name": {"type": "string", "pattern": NOT_BLANK, "description": "the policy's name (not blank)"},
        "description": {"type": "string"},
        "evict": {"type": ["string", "boolean"],
                  "description": f"boolean: a span is a compaction candidate when it holds; {_EXPRESSION}"},
        "rank": {"type": ["string", "number"], "description": f"numeric, lower evicted first; {_EXPRESSION}"},
        "budget": {"type": "integer", "minimum": 1, "maximum": 10 ** MAX_DIGITS - 1,
                   "description": "the policy's own token budget, a whole number written without a fraction"},
        "keep": {"type": ["string", "boolean"],
                 "description": f"boolean: a span the compaction stage never takes; {_EXPRESSION}"},
        "when": {"type": ["string", "boolean"],
                 "description": f"boolean over window attributes only: the stage's trigger; {_EXPRESSION}"},
        "until": {"type": ["string", "boolean"],
                  "description": f"boolean over window attributes only: the stage's target, candidates are taken "
                                f"one at a time until it holds; {_EXPRESSION}"},
        "order": {"enum": list(ORDERS), "default": ORDERS[0],
                  "description": "the order candidates are taken in when there is no rank (not with rank)"},
        "effect": {"enum": list(EFFECTS), "default": "evict",
                   "description": "what a compaction does to the spans it takes: evict them, mask them in place, cut "
                                  "them to at most placeholder_tokens, or evict them and write one summary in "
                                  "their place"},
        "summary_role": {"enum": list(SUMMARY_ROLES), "default": "user",
                         "description": "the role of the summary a compaction writes (only with effect: summarise)"},
        "summary_at": {"enum": list(SUMMARY_AT), "default": SUMMARY_AT[0],
                       "description": "where the summary stands: where the oldest span it replaced stood (replaced), "
                                      "or after every span the compaction left (end); only with effect: summarise"},
        "placeholder_tokens": {"type": "integer", "minimum": 1, "maximum": 10 ** MAX_DIGITS - 1, "default": 1,
                               "description": "the tokens a masked span keeps, the most a cut span keeps, or a summary's "
                                              "tokens (only with effect: mask, cut or summarise)"},
        "pairs": {"enum": list(PAIRS), "default": PAIRS[0],
                  "description": "together: a compaction that takes one span of a tool call and its result takes both"},
        "start_on": {"enum": list(ROLES),
                     "description": "a role: the compaction also takes the leading spans it leaves before the first "
                                    "span of this role, so the window starts on it"},
        "deployment": _deployment(),
        "expect": {"type": "object", "propertyNames": {"enum": list(CONDITIONS)},
                   "additionalProperties": {"enum": list(VERDICTS)},
                   "description": "expected verdicts, per condition: a contract `check` holds its report to (a "
                                  "verdict that differs is a finding)"},
        "accept": _accept(),
    }


_STAGE_RULES = {
    "not": {"required": ["order", "rank"]},
    "dependentSchemas": {
        "placeholder_tokens": {"required": ["effect"], "properties": {"effect": {"enum": list(SIZED)}}},
        "summary_role": {"required": ["effect"], "properties": {"effect": {"const": "summarise"}}},
        "summary_at": {"required": ["effect"], "properties": {"effect": {"const": "summarise"}}}},
}


def _compaction() -> dict:
    """`compaction`: a list of stages (SPEC §4h), each with the stage keys, instead of the stage keys at the top."""
    properties = _properties_of_stage()
    stage = {"type": "object", "properties": {key: properties[key] for key in STAGE_KEYS}, "required": ["evict"],
             **_STAGE_RULES, "additionalProperties": False}
    return {"type": "array", "items": stage, "minItems": 1,
            "description": "the compaction's stages, in order, each run on the window the stage before it left (the "
                           "stage keys then stand in the stages, not at the top)"}


def _properties_of_stage() -> dict:
    return {key: value for key, value in _properties_without_stages().items() if key in STAGE_KEYS}


def policy_schema() -> dict:
    """The schema of a YAML or JSON policy: the keys the loader accepts, the deployment's enums, `expect` and
    `accept`; expressions are strings (evict may be a boolean, rank a number)."""
    properties = _properties()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "prunecheck policy",
        "description": "A context-pruning policy for prunecheck; conditions: "
                       + "; ".join(f"{c} {DESCRIPTIONS[c]}" for c in CONDITIONS),
        "type": "object",
        "properties": {key: properties[key] for key in TOP_KEYS},  # a key the loader does not know is a KeyError
        "required": ["name"],
        "oneOf": [{"required": ["evict"], **_STAGE_RULES},
                  {"required": ["compaction"], "not": {"anyOf": [{"required": [key]} for key in STAGE_KEYS]}}],
        "additionalProperties": False,
    }


__all__ = ["policy_schema", "SCHEMA_ID"]
