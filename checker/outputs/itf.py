"""Counterexample traces in the Informal Trace Format (ITF) of Apalache and Quint, written and read back."""

from __future__ import annotations

import json
import stat
import time
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from prunecheck.spec.errors import PolicySyntaxError, TraceFormatError
from prunecheck.spec.runtime import Span, State, Transition, status
from prunecheck.spec.actions import ACTION_TYPES, OPTIONAL_ARGS, action_args
from prunecheck.spec.conditions import violations
from prunecheck.spec.policy import NAME_ATTRS, masks, name_problem

FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
VARS = ("step", "spans", "edits", "status", "outcome", "violations", "mbt::actionTaken", "mbt::nondetPicks")
# Arguments written only when set (a compaction's host budget, a read's or audit's repetitions other than 1, an
# append's role other than user, its tool name or tag other than "").
OPTIONAL_PICKS = OPTIONAL_ARGS
# mbt::nondetPicks is a record of the arguments the action took, each a plain ITF value; an argument it does not
# take is absent. Traces written before held every pick as a Quint Option ({"tag": "Some", "value": v} or this
# {"tag": "None", "value": {"#tup": []}}), which itf-py cannot read (a tag named None is a Python keyword; a Some
# around {"#bigint": ...} is taken for a record with a field "#bigint"): they are still read, never written.
# A repetition count read from a file has at most this many digits: far beyond any count a policy's constants call
# for, and small enough that every clock sum still prints (Python refuses to print integers of over 4300 digits).
MAX_TIMES_DIGITS = 1000
# The most spans a trace file may ask its replay to hold (#meta.prunecheck.spans, its default when absent): the
# runtime builds every span an Append(times=n) writes, so an untrusted count must be bounded. Run traces of a policy
# that counts c spans hold about c + 3.
MAX_TRACE_SPANS = 2048


def _int(value: int) -> dict:
    return {"#bigint": str(int(value))}


def _value(value):
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, int):
        return _int(value)
    if isinstance(value, tuple):  # a set of span ids (an entry's cites)
        return {"#set": [_int(v) for v in value]}
    raise TypeError(f"no ITF form for {value!r}")


def _entry(entry) -> dict:
    # An edit's cites only when it cites something, so that traces without evidence edges stay as they were.
    return {key: _value(getattr(entry, key)) for key in entry.__dataclass_fields__
            if key != "cites" or entry.cites != ()}


def _span(span: Span, masking: bool) -> dict:
    # `masked` only for a policy that masks or reads it, `place` only where it is not the id (a summary's), and a
    # tool name or tag only when set, a tombstone or `confabulated` only when true, so that other policies' traces
    # stay as they were.
    return {key: _value(getattr(span, key)) for key in span.__dataclass_fields__
            if (masking or key != "masked") and (key != "place" or span.place != span.id)
            and not (key in NAME_ATTRS and getattr(span, key) == "")
            and (key not in ("tombstone", "confabulated") or getattr(span, key))}


def _state(policy, state: State, action_name: str, args: dict, outcome: str, bad) -> dict:
    picks = {key: _value(value) for key, value in args.items()}
    return {
        "step": _int(state.step),
        "spans": [_span(s, masks(policy)) for s in state.spans],
        "edits": [_entry(e) for e in state.edits],
        **({"entries": [_entry(e) for e in state.entries]} if evidence(policy) else {}),
        "status": status(policy, state),
        "outcome": outcome,
        "violations": {"#set": sorted(bad)},
        "mbt::actionTaken": action_name,
        "mbt::nondetPicks": picks,
    }


def evidence(policy) -> bool:
    """Whether the policy's traces carry the compactions' ledger entries (evidence: on; spec/SPEC.md §6d)."""
    return policy.deployment.evidence == "on"


def itf_states(policy, transitions: Sequence[Transition]) -> list:
    """The ITF states of a run from the empty window, without #meta."""
    states = [_state(policy, State(), "init", {}, "ok", ())]
    for t in transitions:
        states.append(_state(policy, t.after, t.action.name, action_args(t.action), t.outcome,
                             violations(policy, t)))
    return states


def first_difference(document: dict, policy, transitions: Sequence[Transition]):
    """(index, what the file says, what the runtime does) for the first state that differs, or None."""
    recorded = [_with_new_picks(state) for state in document.get("states", [])]
    actual = itf_states(policy, transitions)
    for index, (want, got) in enumerate(zip(recorded, actual)):
        want = {k: v for k, v in want.items() if k != "#meta"} if isinstance(want, dict) else want
        if want != got:
            return index, want, got
    if len(recorded) != len(actual):
        return min(len(recorded), len(actual)), None, None
    return None


def _old_pick(pick) -> bool:
    return isinstance(pick, dict) and set(pick) == {"tag", "value"} and pick["tag"] in ("Some", "None")


def new_picks(picks):
    """A state's mbt::nondetPicks in the form written now: old Option-wrapped picks unwrapped, old Nones dropped."""
    if not isinstance(picks, dict):
        return picks
    return {key: pick["value"] if _old_pick(pick) else pick for key, pick in picks.items()
            if not (_old_pick(pick) and pick["tag"] == "None")}


def _with_new_picks(state):
    if not isinstance(state, dict) or "mbt::nondetPicks" not in state:
        return state
    return {**state, "mbt::nondetPicks": new_picks(state["mbt::nondetPicks"])}


def trace_document(policy, policy_doc: dict, transitions: Sequence[Transition], meta: dict) -> dict:
    """The ITF document for a replayed trace; meta goes under #meta.prunecheck (policy, condition, bounds, versions)."""
    states = itf_states(policy, transitions)
    for index, state in enumerate(states):
        state["#meta"] = {"index": index}
    return {
        "#meta": {
            "format": "ITF",
            "format-description": FORMAT_DESCRIPTION,
            "source": policy.source,
            "status": "violation",
            "description": f"prunecheck counterexample to {meta.get('condition', '?')} for policy {policy.name}",
            "timestamp": int(time.time() * 1000),
            "prunecheck": {**meta, "policy": policy_doc},
        },
        "vars": list(VARS[:3]) + ["entries"] + list(VARS[3:]) if evidence(policy) else list(VARS),
        "states": [{"#meta": s.pop("#meta"), **s} for s in states],
    }


def _read_int(value, where: str) -> int:
    if isinstance(value, dict) and set(value) == {"#bigint"} and isinstance(value["#bigint"], str):
        try:
            return int(value["#bigint"])
        except ValueError:
            pass
    elif isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TraceFormatError(f"{where}: expected an integer")


def read_times(value, where: str) -> int:
    """A repetition count from an untrusted file: an integer from 1 up to MAX_TIMES_DIGITS digits."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < 10 ** MAX_TIMES_DIGITS:
        raise TraceFormatError(f"{where}: times must be an integer from 1 to 10^{MAX_TIMES_DIGITS} - 1")
    return value


def read_cites(value, where: str) -> tuple:
    """An entry's citations from an untrusted file: an ITF set of distinct span ids, as an ascending tuple."""
    if not (isinstance(value, dict) and set(value) == {"#set"} and isinstance(value["#set"], list)):
        raise TraceFormatError(f"{where}: expected a set of span ids")
    ids = [_read_int(v, where) for v in value["#set"]]
    if len(set(ids)) != len(ids) or any(i < 0 or i >= MAX_TRACE_SPANS for i in ids):
        raise TraceFormatError(f"{where}: span ids must be distinct, from 0 to {MAX_TRACE_SPANS - 1}")
    return tuple(sorted(ids))


def actions_of(document) -> tuple:
    """The actions a trace document takes, in order, rebuilt from mbt::actionTaken and mbt::nondetPicks."""
    if not isinstance(document, dict) or not isinstance(document.get("states"), list):
        raise TraceFormatError("not an ITF trace: no states list")
    out = []
    for index, state in enumerate(document["states"][1:], start=1):
        where = f"state {index}"
        if not isinstance(state, dict):
            raise TraceFormatError(f"{where}: not an object")
        name = state.get("mbt::actionTaken")
        if name not in ACTION_TYPES:
            raise TraceFormatError(f"{where}: unknown action {name!r}")
        cls = ACTION_TYPES[name]
        picks = new_picks(state.get("mbt::nondetPicks") or {})
        if not isinstance(picks, dict):
            raise TraceFormatError(f"{where}: mbt::nondetPicks is not a record")
        kwargs = {}
        for field_name in cls.__dataclass_fields__:
            value = picks.get(field_name)
            if value is None and field_name in OPTIONAL_PICKS:
                continue
            if value is None or (isinstance(value, dict) and "tag" in value):
                raise TraceFormatError(f"{where}: action {name} needs argument {field_name}")
            if field_name == "cites":
                kwargs[field_name] = read_cites(value, f"{where} cites")
                continue
            kwargs[field_name] = value if isinstance(value, str) else _read_int(value, f"{where} {field_name}")
        if "times" in kwargs:
            kwargs["times"] = read_times(kwargs["times"], where)
        for attr in NAME_ATTRS:
            if attr in kwargs and name_problem(kwargs[attr]):
                raise TraceFormatError(f"{where} {attr}: {name_problem(kwargs[attr])}")
        out.append(cls(**kwargs))
    return tuple(out)


def meta_of(document) -> dict:
    meta = document.get("#meta", {}) if isinstance(document, dict) else {}
    info = meta.get("prunecheck") if isinstance(meta, dict) else None
    if not isinstance(info, dict) or not isinstance(info.get("policy"), dict):
        from prunecheck.checker.outputs.kinds import TRACE, document_kind, wrong_kind

        if document_kind(document) not in ("", TRACE):
            raise TraceFormatError(wrong_kind(document, "an ITF trace written by `prunecheck check --out`"))
        raise TraceFormatError("trace has no #meta.prunecheck.policy: not written by prunecheck check --out")
    spans = info.get("spans", MAX_TRACE_SPANS)
    if isinstance(spans, bool) or not isinstance(spans, int) or not 1 <= spans <= MAX_TRACE_SPANS:
        raise TraceFormatError(f"#meta.prunecheck.spans must be an integer from 1 to {MAX_TRACE_SPANS}")
    return {**info, "spans": spans}


def regular_file(path: Path) -> None:
    """Refuse FIFOs and devices before opening them: opening one can block forever."""
    if path.exists() and not path.is_dir() and not stat.S_ISREG(path.stat().st_mode):
        raise PolicySyntaxError("not a regular file", str(path), 1, 1)


def read_trace(name) -> tuple:
    """(document, meta, TracePolicy, actions) of an ITF trace file written by `check --out`; every defect is a
    one-line PolicySyntaxError at the file. The policy is the one loaded from the policy file the trace names when
    that file still holds the same policy, so positions point into the file its author edits; otherwise it is the
    copy embedded in the trace, whose positions point nowhere a user can open (the TracePolicy says which)."""
    from prunecheck.checker.language.loader import parse_policy_text
    from prunecheck.checker.language.tracepolicy import trace_policy

    path = Path(name)
    regular_file(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicySyntaxError(f"cannot read trace: {exc}", str(path), 1, 1) from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PolicySyntaxError(f"trace is not JSON: {exc.msg}", str(path), exc.lineno, exc.colno) from None
    try:
        info = meta_of(document)
        embedded = parse_policy_text(json.dumps(info["policy"]), f"{path}#policy.json")
        actions = actions_of(document)
    except TraceFormatError as exc:
        raise PolicySyntaxError(exc.one_line(), str(path), 1, 1) from None
    embedded = replace(embedded, source=f"{path}#meta.prunecheck.policy")
    return document, info, trace_policy(path, info, embedded), actions


def read_trace_file(name) -> tuple:
    """(document, meta, policy, actions): read_trace with the policy alone."""
    document, info, found, actions = read_trace(name)
    return document, info, found.policy, actions
