"""Decoding solver models into runtime actions and states, and replaying traces on the reference runtime."""

from __future__ import annotations

from dataclasses import replace
from typing import List, Optional, Sequence

import z3

from prunecheck.spec.conditions import state_violations, violations
from prunecheck.spec.errors import ReplayMismatch
from prunecheck.symbolic.interrupts import stop_if_interrupted
from prunecheck.symbolic.model import SymAction, SymState
from prunecheck.symbolic.runs import RunAction
from prunecheck.spec.policy import NAME_ATTRS, Policy, mentioned_names, name_code, name_of
from prunecheck.symbolic.terms import ENUM_NAMES
from prunecheck.spec.runtime import (
    ActionRefused, Append, Audit, Compact, Edit, EditInfo, LedgerEntry, Pin, Read, Span, State, Transition, Undo, Unpin,
    step,
)

from prunecheck.checker.result import counted


def _int(model: z3.ModelRef, term) -> int:
    return model.eval(term, model_completion=True).as_long()


def _name(model: z3.ModelRef, term) -> str:
    """The name of an enumeration-sort value: an action, kind, namespace or role name."""
    return ENUM_NAMES.get(model.eval(term, model_completion=True).decl().name(), "")


def _slot(model: z3.ModelRef, term) -> int:
    text = model.eval(term, model_completion=True).decl().name()
    return int(text[1:text.index("of")])


def _value(model: z3.ModelRef, term):
    sort = term.sort()
    if sort == z3.BoolSort():
        return _bool(model, term)
    if sort == z3.IntSort():
        return _int(model, term)
    if sort.name().startswith("Slot"):
        return _slot(model, term)
    return _name(model, term)


def _bool(model: z3.ModelRef, term) -> bool:
    return z3.is_true(model.eval(term, model_completion=True))


def decode_action(model: z3.ModelRef, a: SymAction):
    name = model.eval(a.act, model_completion=True).decl().name().removeprefix("do_")
    arg = _slot(model, a.arg)
    if name == "append" and isinstance(a, RunAction) and _int(model, a.result) > 0:  # a run of pairs
        return Append(_name(model, a.kind), _int(model, a.tokens), "tool_call", _int(model, a.pairs),
                      _int(model, a.result))
    if name == "append":
        names = {attr: name_of(table, _int(model, getattr(a, attr))) for attr, table in a.names}
        return Append(_name(model, a.kind), _int(model, a.tokens), _name(model, a.role), _int(model, a.times), **names)
    if name == "edit":
        return Edit(arg, "destroy" if _bool(model, a.destroy) else "transform", _cites(model, a))
    if name == "undo":
        return Undo(arg)
    if name == "read":
        return Read(arg, _int(model, a.times))
    simple = {"pin": Pin, "unpin": Unpin}
    if name in simple:
        return simple[name](arg)
    if name == "compact":
        return Compact(_int(model, a.host) if _bool(model, a.hosted) else None, _cites(model, a),
                       name_of(a.events, _int(model, a.event)) if a.event is not None else "",
                       _int(model, a.reported) if a.reported is not None else 0)
    return Audit(_int(model, a.times))


def _cites(model: z3.ModelRef, a: SymAction) -> tuple:
    """The slots an action cites (none in a model without evidence)."""
    return tuple(j for j, c in enumerate(a.cites) if _bool(model, c))


def decode_state(model: z3.ModelRef, s: SymState) -> State:
    """The runtime State that a symbolic state denotes in `model`."""
    spans, edits, entries = [], [], []
    for i in range(s.n):
        f = {name: _value(model, values[i]) for name, values in s.fields.items()}
        if not f["used"]:
            break
        names = {attr: name_of(table, f[attr]) for attr, table in s.names}
        spans.append(Span(i, f["kind"], f["ns"], f["tokens"], f["created"], f["last_read"],
                          f["reads"], f["pinned"], f["edited"], f["version"], f["alive"], f["role"],
                          masked=f.get("masked", False), place=f.get("place", i),
                          tombstone=f.get("tombstone", False), **names))
        cites = tuple(j for j in range(s.n) if f.get(f"cite{j}", False))
        if f["kind"] == "record":
            edits.append(EditInfo(i, i + 1, f["target"], "destroy" if f["destroy"] else "transform",
                                  f["rversion"], f["prior_kind"], f["prior_edited"], f["undone"], cites))
        if f.get("ledger", False):
            entries.append(LedgerEntry(i, cites))
    return State(_int(model, s.clock), tuple(spans), tuple(edits), tuple(entries))


def replay(policy: Policy, actions: Sequence, max_spans: Optional[int] = None) -> List[Transition]:
    """Run actions from the empty window; an action whose guard fails raises ReplayMismatch."""
    stop_if_interrupted()  # replays run in long loops (minimising, repair): each one is a point to stop at
    state, out = State(), []
    for index, action in enumerate(actions):
        try:
            transition = step(policy, state, action, max_spans)
        except ActionRefused as exc:
            raise ReplayMismatch(f"step {index + 1} {action!r} is not enabled on the runtime: {exc}") from None
        out.append(transition)
        state = transition.after
    return out


def first_violation(policy: Policy, transitions: Sequence[Transition], condition: str) -> Optional[int]:
    """The 1-based step at which `condition` first fails on this run, or None."""
    if condition in state_violations(policy, State()):
        return 0
    for index, transition in enumerate(transitions):
        if condition in violations(policy, transition):
            return index + 1
    return None


def tracked_names(policy: Policy, state: State) -> State:
    """The state with tool names and tags as the models track them (spec/SPEC.md 1c): a name the policy mentions
    as itself, any other as unmentioned_name, and "" for an attribute the policy does not read (its models have no
    such field; records may still carry the deployment's record_tool)."""
    tables = dict(mentioned_names(policy))

    def seen(attr: str, name: str) -> str:
        return name_of(tables[attr], name_code(tables[attr], name)) if attr in tables else ""

    spans = tuple(replace(s, **{attr: seen(attr, getattr(s, attr)) for attr in NAME_ATTRS}) for s in state.spans)
    return state if spans == state.spans else replace(state, spans=spans)


def as_modelled(policy: Policy, state: State) -> State:
    """The state as the models track it: names as tracked_names; no `confabulated` flag and a merge's entry as a
    transform's (a 1-token record): no condition reads either (spec/SPEC.md §4e)."""
    state = tracked_names(policy, state)
    spans = tuple(replace(s, confabulated=False) if s.confabulated else s for s in state.spans)
    edits = tuple(replace(e, mode="transform") if e.mode == "merge" else e for e in state.edits)
    return state if (spans, edits) == (state.spans, state.edits) else replace(state, spans=spans, edits=edits)


def confirm(policy: Policy, actions: Sequence, condition: str, max_spans: int,
            symbolic_states: Optional[Sequence[State]] = None) -> List[Transition]:
    """Replay a symbolic counterexample; it must violate `condition` exactly at its last step, else ReplayMismatch."""
    transitions = replay(policy, actions, max_spans)
    if symbolic_states is not None:
        runtime_states = [as_modelled(policy, s) for s in [State()] + [t.after for t in transitions]]
        for index, (sym, real) in enumerate(zip(symbolic_states, runtime_states)):
            if sym != real:
                raise ReplayMismatch(f"state {index} differs between the z3 model and the runtime: "
                                     f"model {sym!r} runtime {real!r}")
    where = first_violation(policy, transitions, condition)
    if where != len(actions):
        raise ReplayMismatch(f"{condition} counterexample of {counted(len(actions), 'step')} fails at step {where} on "
                             "the runtime")
    return transitions
