"""The JSON Schema (draft 2020-12) of `prunecheck check --format json`, built from the code's own tables."""

from __future__ import annotations

import dataclasses
import types
import typing

from prunecheck.spec.conditions import CONDITIONS
from prunecheck.spec.policy import BASES, DEPLOYMENT_CHOICES, DEPLOYMENT_KEYS, DEPLOYMENT_NAMES, UNLISTED_AT_DEFAULT
from prunecheck.spec.actions import ACTION_TYPES

from prunecheck.checker.result import VERSION_KEYS, Outcome, Search, Verdict

TOOL = "prunecheck"
ERROR = "error"  # the verdict of a file that could not be checked, and of a document that has one
HASH = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
TEXT = {"type": "string"}
COUNT = {"type": "integer", "minimum": 0}
STRINGS = {"type": "array", "items": TEXT}


def _closed(properties: dict, optional=()) -> dict:
    """An object with exactly these properties, all required but the optional ones."""
    return {"type": "object", "properties": properties, "required": [k for k in properties if k not in optional],
            "additionalProperties": False}


def _verdicts() -> list:
    return [str(v) for v in Verdict]


def _argument(hint) -> dict:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):  # Optional[int]: absent when None
        (hint,) = [h for h in typing.get_args(hint) if h is not type(None)]
    cites = {"type": "array", "items": {"type": "integer", "minimum": 0}, "uniqueItems": True}
    return {int: {"type": "integer"}, str: TEXT, tuple: cites}[hint]


def _action(cls) -> dict:
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    args = {f.name: _argument(hints[f.name]) for f in fields}
    optional = [f.name for f in fields if f.default is not dataclasses.MISSING]
    return _closed({"action": {"const": cls.name}, "args": _closed(args, optional)})


def _certificate() -> dict:
    from prunecheck.checker.engines.certificate import FORMAT, KEYS

    condition = {"enum": list(CONDITIONS)}
    fields = {"format": {"const": FORMAT}, "condition": condition, "engine": TEXT, "free_policy": {"type": "boolean"},
              "assume": {"type": "array", "items": condition, "uniqueItems": True}, "policy": {"type": "object"},
              "policy_hash": HASH, "invariant": STRINGS, "model_smt2": TEXT, "invariant_smt2": TEXT}
    return _closed({key: fields[key] for key in KEYS})


def _explanation() -> dict:
    point = _closed({"text": TEXT, "line": COUNT, "column": COUNT, "note": TEXT})
    cause = _closed({"step": COUNT, "summary": TEXT, "points": {"type": "array", "items": point}})
    return _closed({"steps": STRINGS, "cause": cause})


def _accepted() -> dict:
    """A finding accepted in the policy (`inSource`) or a baseline (`external`): accept.acceptance_json."""
    return _closed({"kind": {"enum": ["inSource", "external"]}, "reason": TEXT, "source": TEXT, "line": COUNT,
                    "column": COUNT})


def _counterexamples() -> dict:
    """render.variants_json: what the search for --max-counterexamples N established."""
    return _closed({"asked": COUNT, "found": COUNT, "search": {"enum": [s.value for s in Search]}, "depth": COUNT,
                    "spans": COUNT, "contained": {"type": "boolean"}, "reducible": COUNT, "reason": TEXT,
                    "summary": TEXT})


def _result() -> dict:
    trace = {"$ref": "#/$defs/trace"}
    entry = _closed({
        "verdict": {"enum": _verdicts()}, "depth": {"type": ["integer", "null"], "minimum": 0}, "reason": TEXT,
        "engine": TEXT, "seconds": {"type": "number", "minimum": 0}, "trace": trace,
        "length": _closed({"actions": COUNT, "steps": COUNT}), "other_traces": {"type": "array", "items": trace},
        "explanation": _explanation(), "certificate": {"$ref": "#/$defs/certificate"},
        "accepted": _accepted(), "counterexamples": _counterexamples(),
        "rests_on": {"enum": ["policy", "deployment"]},
    }, optional=("trace", "length", "other_traces", "explanation", "certificate", "accepted", "counterexamples",
                 "rests_on"))
    entry["dependentRequired"] = {"trace": ["length", "explanation"], "other_traces": ["trace"]}
    entry["allOf"] = [
        {"if": {"properties": {"verdict": {"const": str(Verdict.VIOLATED)}}}, "then": {"required": ["trace"]}},
        {"if": {"properties": {"verdict": {"const": str(Verdict.HOLDS)}}},
         "then": {"required": ["certificate", "rests_on"]}},
    ]
    return entry


def _stats() -> dict:
    """render.stats_json: the bounds and, per condition, each engine's run (statistics, not verdicts)."""
    domain = {"type": ["array", "null"], "items": COUNT}
    bounds = _closed({"depth": COUNT, "spans": COUNT, "timeout": {"type": "number", "minimum": 0}, "rlimit": COUNT,
                      "memory_mb": COUNT, "tokens": domain, "repeats": domain},
                     optional=("timeout", "rlimit", "memory_mb", "tokens", "repeats"))
    run = _closed({"engine": {"enum": ["bmc", "explicit", "induction", "spacer"]},
                   "outcome": {"enum": [o.value for o in Outcome]}, "depth": {"type": ["integer", "null"], "minimum": 0},
                   "queries": COUNT, "states": {"type": ["integer", "null"], "minimum": 0},
                   "seconds": {"type": "number", "minimum": 0}})
    conditions = {"type": "object", "propertyNames": {"enum": list(CONDITIONS)},
                  "additionalProperties": {"type": "array", "items": run}}
    return _closed({"bounds": bounds, "conditions": conditions})


def _decision() -> dict:
    """decision_doc.decision_json: the first seed's four questions answered, and the consequence."""
    from prunecheck.checker.findings.decision import QUESTIONS, Answer, Consequence, Note

    basis = _closed({"condition": TEXT, "verdict": {"enum": _verdicts() + ["not checked"]}})
    question = _closed({"id": {"enum": [q.id for q in QUESTIONS]}, "question": {"enum": [q.words for q in QUESTIONS]},
                        "answer": {"enum": [a.value for a in Answer]}, "note": {"enum": [""] + [n.value for n in Note]},
                        "because": {"type": "array", "items": basis},
                        "settings": {"type": "object", "propertyNames": {"enum": list(DEPLOYMENT_KEYS)},
                                     "additionalProperties": TEXT}})
    return _closed({"questions": {"type": "array", "items": question, "minItems": len(QUESTIONS),
                                  "maxItems": len(QUESTIONS)},
                    "consequence": {"enum": [c.value for c in Consequence]}, "at": TEXT, "reason": TEXT})


def _recovery_peak() -> dict:
    """render.peak_json: the recovery set's peak size within bounds (--recovery-peak); `tokens` is the seed's cost,
    the token reservation for its records and their rationales (null: not counted)."""
    domain = {"type": ["array", "null"], "items": COUNT}
    return _closed({"records": COUNT, "tokens": {"type": ["integer", "null"], "minimum": 0},
                    "complete": {"type": "boolean"}, "engine": {"enum": ["bmc", "explicit"]},
                    "bounds": _closed({"depth": COUNT, "spans": COUNT, "tokens": domain}),
                    "witness": {"$ref": "#/$defs/trace"}, "summary": TEXT})


def _basis() -> dict:
    claim = _closed({"key": {"enum": list(DEPLOYMENT_KEYS)}, "claimed": TEXT, "used": TEXT, "where": TEXT})
    return _closed({"basis": {"enum": list(BASES)}, "source": TEXT, "claims": {"type": "array", "items": claim}})


def _expect() -> dict:
    """render.expectations_json: the policy's `expect:` table held against the verdicts (present when it has one)."""
    from prunecheck.checker.findings.expect import NotCompared, Outcome
    from prunecheck.checker.language.loader import VERDICTS

    entry = _closed({"condition": {"enum": list(CONDITIONS)}, "expected": {"enum": list(VERDICTS)},
                     "verdict": {"enum": _verdicts() + [None]}, "outcome": {"enum": [o.value for o in Outcome]},
                     "not_compared": {"enum": [n.value for n in NotCompared] + [None]}, "line": COUNT,
                     "column": COUNT})
    return {"type": "array", "items": entry, "minItems": 1}


def _report() -> dict:
    deployment = _closed({**{key: {"enum": list(values)} for key, values in DEPLOYMENT_CHOICES.items()},
                          **{key: {"type": "string"} for key in DEPLOYMENT_NAMES}},
                         optional=tuple(UNLISTED_AT_DEFAULT))
    conditions = {"type": "object", "propertyNames": {"enum": list(CONDITIONS)},
                  "additionalProperties": {"$ref": "#/$defs/result"}}
    return _closed({
        "policy": TEXT, "verdict": {"enum": _verdicts()}, "conditions": conditions, "source": TEXT,
        "policy_hash": HASH, "depth": COUNT, "spans": COUNT, "deployment": deployment,
        "deployment_overridden": {"type": "array", "items": {"enum": list(DEPLOYMENT_KEYS)}, "uniqueItems": True},
        "deployment_basis": _basis(),
        "versions": {"$ref": "#/$defs/versions"}, "stats": _stats(), "decision": _decision(),
        "recovery_peak": _recovery_peak(), "expect": _expect(),
    }, optional=("recovery_peak", "expect"))


def report_schema() -> dict:
    """The schema of the whole document: {tool, versions, verdict (the worst, or "error"), policies: one report per
    policy file, or an error entry for a file that could not be checked}; a single file gives a list of one."""
    error = _closed({"source": TEXT, "verdict": {"const": ERROR}, "error": TEXT, "internal": {"type": "boolean"}})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/prunecheck/prunecheck/schemas/report.schema.json",
        "title": "prunecheck check --format json",
        **_closed({
            "tool": {"const": TOOL}, "versions": {"$ref": "#/$defs/versions"},
            "verdict": {"enum": _verdicts() + [ERROR]},
            "policies": {"type": "array", "minItems": 1,
                         "items": {"oneOf": [{"$ref": "#/$defs/report"}, {"$ref": "#/$defs/error"}]}},
        }),
        "$defs": {
            "versions": _closed({key: TEXT for key in VERSION_KEYS}),
            "action": {"oneOf": [_action(cls) for cls in ACTION_TYPES.values()]},
            "trace": {"type": "array", "items": {"$ref": "#/$defs/action"}},
            "certificate": _certificate(),
            "result": _result(),
            "report": _report(),
            "error": error,
        },
    }


__all__ = ["ERROR", "TOOL", "report_schema"]
