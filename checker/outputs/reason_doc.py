"""Structured reasons as JSON values for the report cache, and back, every field checked as untrusted input."""

from __future__ import annotations

import enum
import re
from dataclasses import fields

from prunecheck.spec.errors import PrunecheckError
from prunecheck.spec.policy import CONTENT_KINDS, NAME_ATTRS, ROLES, name_problem

from prunecheck.checker.engines.certificate import Status
from prunecheck.checker.result import (Advice, Clause, Domains, Found, Method, Need, Note, Part, Reason, Report,
                                       Scope, SolverSaid, SolverStop, Stop, Tried)

DOMAIN_KEYS = ("tokens", "kinds", "repeats", "derived", "clock_targets", "roles")
OPTIONS = {"--timeout": Need.TIME, "--rlimit": Need.RESOURCES, "--spans": Need.SPANS, "--depth": Need.ACTIONS}
COUNTS = ("depth", "spans", "actions", "steps", "at", "states", "state_limit", "megabytes")
ENUMS = {"engine": Method, "found": Found, "scope": Scope, "tried": Tried}
SEARCHES = (Method.BMC, Method.EXPLICIT)
PRINTABLE = re.compile(r"[\x20-\x7e]*")


class ReasonFormatError(PrunecheckError):
    """A cached reason is not one that reason_json writes."""


def reasons_json(report: Report) -> dict:
    """{condition: its reason as a JSON value}, for a cache entry beside the report."""
    return {r.condition: reason_json(r.reason) for r in report.results}


def reason_json(reason: Reason) -> dict:
    return {"clauses": [_clause_json(c) for c in reason.clauses],
            "parts": [{"engine": p.engine.value, "stop": p.stop.value, "clauses": [_clause_json(c) for c in p.clauses]}
                      for p in reason.parts],
            "advice": [{"option": a.option, "value": a.value, "why": a.why.value} for a in reason.advice],
            "note": reason.note.value if reason.note is not None else None}


def _clause_json(clause: Clause) -> dict:
    out = {}
    for name in (f.name for f in fields(Clause)):
        value = getattr(clause, name)
        if isinstance(value, enum.Enum):
            value = value.value
        elif isinstance(value, SolverSaid):
            value = {"stop": value.stop.value, "words": value.words}
        elif isinstance(value, Domains):
            value = {**{key: list(getattr(value, key)) for key in DOMAIN_KEYS},
                     **({"names": {attr: list(names) for attr, names in value.names}} if value.names else {}),
                     **({"cites": True} if value.cites else {}),
                     **({"triggers": [list(t) for t in value.triggers]} if value.triggers else {})}
        if value is not None:
            out[name] = value
    return out


def _expect(ok: bool, what: str) -> None:
    if not ok:
        raise ReasonFormatError(f"bad reason: {what}")


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _enum(kind, value, what: str):
    _expect(value in {member.value for member in kind}, f"bad {what}")
    return kind(value)


def _list(value, ok, what: str) -> tuple:
    _expect(isinstance(value, list) and all(ok(v) for v in value), f"bad {what}")
    return tuple(value)


def reason_from_json(doc) -> Reason:
    """The Reason reason_json wrote; ReasonFormatError for anything else."""
    _expect(isinstance(doc, dict) and set(doc) == {"clauses", "parts", "advice", "note"}, "not a reason object")
    clauses = tuple(_clause(c) for c in _list(doc["clauses"], lambda c: True, "clauses"))
    parts = tuple(_part(p) for p in _list(doc["parts"], lambda p: isinstance(p, dict), "parts"))
    _expect(bool(clauses) != bool(parts), "a reason has either clauses or parts")
    advice = tuple(_advice(a) for a in _list(doc["advice"], lambda a: isinstance(a, dict), "advice"))
    note = None if doc["note"] is None else _enum(Note, doc["note"], "note")
    return Reason(clauses, parts, advice, note)


def _part(doc) -> Part:
    _expect(set(doc) == {"engine", "stop", "clauses"}, "bad part")
    engine = _enum(Method, doc["engine"], "part engine")
    _expect(engine in (Method.BMC, Method.INDUCTION, Method.SPACER), "bad part engine")
    clauses = tuple(_clause(c) for c in _list(doc["clauses"], lambda c: True, "part clauses"))
    _expect(bool(clauses), "a part without clauses")
    return Part(engine, _enum(Stop, doc["stop"], "part stop"), clauses)


def _advice(doc) -> Advice:
    _expect(set(doc) == {"option", "value", "why"} and OPTIONS.get(doc["option"]) is not None, "bad advice")
    why, value = _enum(Need, doc["why"], "advice"), doc["value"]
    _expect(why is OPTIONS[doc["option"]], "bad advice")
    if doc["option"] == "--timeout":
        _expect(isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0, "bad advice value")
        value = float(value)
    else:
        _expect(value is None if why is Need.RESOURCES else _count(value), "bad advice value")
    return Advice(doc["option"], value, why)


def _clause(doc) -> Clause:
    _expect(isinstance(doc, dict) and set(doc) <= {f.name for f in fields(Clause)}, "bad clause")
    values = {}
    for name, value in doc.items():
        values[name] = _field(name, value)
    _expect("engine" in values and "found" in values, "a clause without engine or finding")
    clause = Clause(**values)
    missing = [name for name in _required(clause) if getattr(clause, name) is None]
    _expect(not missing, f"{clause.found.value} without {', '.join(missing)}")
    return clause


def _field(name: str, value):
    if name in ENUMS:
        return _enum(ENUMS[name], value, name)
    if name in COUNTS:
        _expect(_count(value), f"bad {name}")
        return value
    if name == "repeats":
        _expect(isinstance(value, bool), "bad repeats")
        return value
    if name == "time_limit":
        _expect(isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0, "bad time limit")
        return float(value)
    if name == "solver":
        _expect(isinstance(value, dict) and set(value) == {"stop", "words"} and isinstance(value["words"], str)
                and PRINTABLE.fullmatch(value["words"]) is not None, "bad solver stop")
        return SolverSaid(_enum(SolverStop, value["stop"], "solver stop"), value["words"])
    if name == "certificate":
        return _enum(Status, value, "certificate status").value
    if name == "detail":
        _expect(isinstance(value, str) and "\n" not in value, "bad detail")
        return value
    return _domains(value)


def _domains(value) -> Domains:
    _expect(isinstance(value, dict) and set(value) - {"names", "cites", "triggers"} == set(DOMAIN_KEYS), "bad domains")
    _expect(value.get("cites", True) is True, "bad citation domain")
    ints = {key: _list(value[key], _count, "domains") for key in ("tokens", "repeats", "clock_targets")}
    kinds = _list(value["kinds"], lambda k: k in CONTENT_KINDS, "domain kinds")
    derived = _list(value["derived"], lambda d: d in ("tokens", "repetitions"), "derived domains")
    roles = _list(value["roles"], lambda r: r in ROLES, "domain roles")
    triggers = _list(value.get("triggers", []), lambda t: isinstance(t, list) and len(t) == 2 and isinstance(t[0], str)
                     and not name_problem(t[0]) and _count(t[1]), "domain triggers")
    return Domains(ints["tokens"], kinds, ints["repeats"], derived, ints["clock_targets"], roles,
                   _domain_names(value.get("names", {})), "cites" in value, tuple(tuple(t) for t in triggers))


def _domain_names(value) -> tuple:
    """The tool names and tags of a domains document: {attribute: [name, ...]} for attributes of NAME_ATTRS."""
    _expect(isinstance(value, dict) and set(value) <= set(NAME_ATTRS), "bad domain names")
    return tuple((attr, _list(value[attr], lambda n: not name_problem(n), "domain names"))
                 for attr in NAME_ATTRS if attr in value)


def _required(clause: Clause) -> tuple:
    """The facts the clause's text needs; ReasonFormatError when its engine never finds that."""
    found, search = clause.found, clause.engine in SEARCHES
    if found is Found.VIOLATED:
        _expect(search, "a proof engine's violation")
        return ("depth", "spans", "actions", "steps") + (("domains",) if clause.engine is Method.EXPLICIT else ())
    needs = {Found.PROVED: (), Found.BY_CONSTRUCTION: (), Found.UNCONFIRMED: ("detail",),
             Found.FAULT: ("certificate", "detail"), Found.MEMORY: ("megabytes",)}
    if found in needs:
        return needs[found]
    if not search:
        _expect(found in (Found.NO_PROOF, Found.LIMIT), "a proof engine's finding")
        return ("tried",) if found is Found.NO_PROOF else ()
    _expect(found in (Found.BOUND, Found.LIMIT), "a search's finding")
    if clause.engine is Method.EXPLICIT:
        if found is Found.LIMIT:
            limits = (clause.time_limit, clause.state_limit, clause.megabytes)
            _expect(sum(limit is not None for limit in limits) == 1, "an explicit stop without its one limit")
            return ("at", "states")
        return ("depth", "spans", "states", "domains")
    return ("depth", "spans", "repeats") + (("at", "solver") if found is Found.LIMIT else ())


__all__ = ["ReasonFormatError", "reason_from_json", "reason_json", "reasons_json"]
