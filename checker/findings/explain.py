"""Explanations of counterexamples: what each step did to the edit/record graph, and why the last step violates."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, List, Optional, Sequence

from prunecheck.spec.conditions import DESCRIPTIONS, lost_content, rewritten_log_entries, split_pairs, stage_removed
from prunecheck.spec.evaluate import evaluate
from prunecheck.spec.compaction import blocking_spans, selecting_stage, taking_stage, trigger_env
from prunecheck.spec.policy import (NOWHERE, Attr, Binary, Cond, Expr, Loc, Policy, Unary, read_triggers,
                                    subexpressions, uses_pairs)
from prunecheck.spec.runtime import (
    REVERSIBLE, EditInfo, State, Transition, is_candidate, present, span_env, window_env,
)
from prunecheck.spec.actions import action_text
from prunecheck.spec.refusal import control_kinds, named_spans

from prunecheck.checker.language.locate import deployment_location, expression_start, key_locations
from prunecheck.checker.language.printer import to_text
from prunecheck.checker.engines.replay import replay
from prunecheck.checker.findings.step_text import (  # noqa: F401 (step_label: re-exported)
    absence_words, budget_words, edit_number, host_decides, span_words, taken_words, step_label)


@dataclass(frozen=True)
class Point:
    """One place in the policy's text that the violation rests on: a sub-expression and its value, or a setting."""

    text: str
    loc: Loc
    note: str


@dataclass(frozen=True)
class Cause:
    """Why the last step violates the condition: a one-line summary and the points of the policy it rests on."""

    condition: str
    step: int
    summary: str
    points: tuple

    @property
    def loc(self) -> Loc:
        return self.points[0].loc if self.points else Loc(1, 1)


@dataclass(frozen=True)
class Explanation:
    """A counterexample told step by step, ending with its cause."""

    condition: str
    actions: tuple
    steps: tuple
    cause: Cause


def number(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Fraction):
        if value.denominator == 1:
            return str(value.numerator)
        return f"{value.numerator}/{value.denominator} (~{float(value):.3g})"
    return repr(value) if isinstance(value, str) else str(value)


def _connective(expr: Expr) -> bool:
    return (isinstance(expr, Binary) and expr.op in ("and", "or")) or isinstance(expr, Cond) or (
        isinstance(expr, Unary) and expr.op == "not")


def deciding_atoms(expr: Expr, env: dict, want: bool) -> List[Expr]:
    """The atomic sub-formulas that make `expr` evaluate to `want`: all conjuncts of a true `and`, the first false
    one of a false `and` (dually for `or`), through `not` and conditionals."""
    if isinstance(expr, Unary) and expr.op == "not" and _connective(expr.arg):
        return deciding_atoms(expr.arg, env, not want)
    if isinstance(expr, Binary) and expr.op in ("and", "or"):
        parts = (expr.left, expr.right)
        if (expr.op == "and") == want:
            return [atom for part in parts for atom in deciding_atoms(part, env, want)]
        decisive = next(p for p in parts if bool(evaluate(p, env)) == want)
        return deciding_atoms(decisive, env, want)
    if isinstance(expr, Cond) and isinstance(evaluate(expr.then, env), bool):
        test = bool(evaluate(expr.test, env))
        return deciding_atoms(expr.test, env, test) + deciding_atoms(expr.then if test else expr.orelse, env, want)
    return [expr]


def _atom_point(atom: Expr, env: dict) -> Point:
    value = evaluate(atom, env)
    details = []
    if isinstance(atom, Binary) and atom.op not in ("and", "or"):
        for side in (atom.left, atom.right):
            if not isinstance(side, Attr) and any(isinstance(n, Attr) for n in subexpressions(side)):
                details.append(f"{to_text(side)} = {number(evaluate(side, env))}")
    names = sorted({n.name for n in subexpressions(atom) if isinstance(n, Attr)})
    details.extend(f"{name} = {number(env[name])}" for name in names if name in env)
    note = f"is {number(value)}" + (f" ({', '.join(details)})" if details else "")
    return Point(to_text(atom), expression_start(atom), note)


def predicate_points(policy: Policy, state: State, span_id: int) -> tuple:
    """Why `evict` is true on a span: its deciding atoms, each with its value and the attributes it reads (and that
    `keep` is false on it, when the policy has one); for a span that was no candidate, the start_on that took it."""
    if policy.start_on is not None and not is_candidate(policy, state, state.span(span_id)):
        return (start_on_point(policy, state.span(span_id).role),)
    env = span_env(policy, state, state.span(span_id))
    points = tuple(_atom_point(atom, env) for atom in deciding_atoms(policy.evict, env, True))
    if policy.keep is not None:
        loc = key_locations(policy).get("keep", expression_start(policy.keep))
        points += (Point(f"keep: {to_text(policy.keep)}", loc, "is false on it, so nothing protects it"),)
    return points


def start_on_point(policy: Policy, role: str) -> Point:
    """start_on took a span the selection did not (SPEC 4b): it led the spans left, before any of start_on's role."""
    return Point(f"start_on: {policy.start_on}", key_locations(policy).get("start_on", NOWHERE),
                 f"the stage also takes this {role} span: it comes before the first {policy.start_on} span the walk "
                 "left in the window")


def _setting(policy: Policy, key: str, where: Dict[str, Loc], why: str) -> Point:
    value = getattr(policy.deployment, key)
    if policy.basis.basis in ("operator", "default"):  # the file's own section, if any, is a claim (ADR 0037)
        claim = next((c for c in policy.basis.claims if c.key == key), None)
        whose = "the operator's deployment" if key in policy.overridden else "the least-assuming default"
        if claim is not None and claim.claimed == value and f"deployment.{key}" in where:
            return Point(f"{key}: {value}", deployment_location(policy, key, where),
                         f"{why} ({whose}; the policy file's claim agrees)")
        if key in policy.overridden or claim is not None:
            return Point(f"{key}: {value} ({whose})", NOWHERE, why)
        return Point(f"{key}: {value}", NOWHERE, why)
    if key in policy.overridden:  # not written in the policy's file: no position there shows this value
        return Point(f"{key}: {value} (the operator's deployment)", NOWHERE, why)
    if policy.origin is not None and f"deployment.{key}" not in where:  # a default the file does not write
        return Point(f"{key}: {value}", NOWHERE, why)
    return Point(f"{key}: {value}", deployment_location(policy, key, where), why)


def _budget_point(policy: Policy, where: Dict[str, Loc], before: State) -> Point:
    return Point(f"budget: {policy.budget}", where.get("budget", Loc(1, 1)),
                 f"the window held {before.window_tokens()} tokens, over the budget; truncation removes the oldest "
                 "spans in the window first")


def _truncation_words(policy: Policy, t: Transition) -> str:
    """How a span was truncated; a host budget is named here, since it is nowhere in the policy's file."""
    if host_decides(policy, t.action):
        return (f"truncated to the host budget of {t.action.budget}: a host may impose any budget at any "
                f"compaction, and the window held {t.before.window_tokens()} tokens")
    return f"truncated to {budget_words(policy, t.action)}"


def _removal(transitions: Sequence[Transition], span_id: int) -> Optional[int]:
    """0-based index of the step that removed a span (made it not present: dead or masked)."""
    for index, t in enumerate(transitions):
        if present(t.before.span(span_id)) if span_id < len(t.before.spans) else False:
            if not present(t.after.span(span_id)):
                return index
    return None


def _window_words(policy: Policy, state: State, action=None) -> str:
    env = window_env(policy, state)
    words = [f"{name} = {number(env[name])}" for name in ("window_tokens", "window_spans", "step") if name in env]
    fired = trigger_env(action)  # what the host told the compaction (SPEC §4g), for the trigger attributes read
    words += [f"{name} = {fired[name]!r}" if name == "event" else f"{name} = {number(fired[name])}"
              for name in read_triggers(policy)]
    return ", ".join(words)


def stage_points(policy: Policy, before: State, action=None) -> tuple:
    """Where the stage took a span: its trigger held in the state the compaction `action` started from, and its
    target had not been reached when the span's turn came (SPEC 4b); nothing for a policy with neither."""
    where, out = key_locations(policy), []
    if policy.when is not None:
        out.append(Point(f"when: {to_text(policy.when)}", where.get("when", expression_start(policy.when)),
                         f"the trigger held ({_window_words(policy, before, action)})"))
    if policy.until is not None:
        order = "rank" if policy.rank is not None else policy.order
        out.append(Point(f"until: {to_text(policy.until)}", where.get("until", expression_start(policy.until)),
                         f"the target was not yet reached when this span's turn came ({order} first; from "
                         f"{_window_words(policy, before)})"))
    return tuple(out)


def _removal_points(policy, transitions, index, span_id, where, placement: str) -> tuple:
    t = transitions[index]
    if span_id in t.evicted:
        st, start = taking_stage(policy, t, span_id)  # of a list of stages (SPEC §4h), the one that took it
        at = key_locations(st) if st is not policy else where
        masks = (Point(f"effect: {st.effect}", at.get("effect", Loc(1, 1)), "replaces what the policy takes "
                       "(or cuts it short): a masked or cut record or rationale is no longer present"),) \
            if st.effect in ("mask", "cut") else ()
        return tuple(predicate_points(st, start, span_id)) + stage_points(st, start, t.action) + masks + (
            _setting(policy, placement, where, f"puts the {span_words(t.before, span_id).split()[0]} in the policy's reach"),)
    placed = _setting(policy, placement, where, "puts it among the spans truncation may remove")
    if host_decides(policy, t.action):
        return (placed,)
    return (_budget_point(policy, where, t.before), placed)


def _c1_cause(policy: Policy, transitions: Sequence[Transition], where: Dict[str, Loc]) -> tuple:
    after = transitions[-1].after
    info = next(e for e in after.live_edits()
                if after.span(e.record).alive and is_candidate(policy, after, after.span(e.record)))
    points = predicate_points(selecting_stage(policy, after, after.span(info.record)), after, info.record) + (
        _setting(policy, "records", where, "keeps recovery records inside the policy's address space"),)
    return (f"record #{info.record} of edit {edit_number(after, info.record)} (of #{info.target}) is a compaction "
            "candidate: `evict` is true on it", points)


def _c2_cause(policy: Policy, transitions: Sequence[Transition], where: Dict[str, Loc]) -> tuple:
    t = transitions[-1]
    gone = sorted(e.record for e in t.before.edits
                  if present(t.before.span(e.record)) and not present(t.after.span(e.record)))
    record = gone[0]
    st = taking_stage(policy, t, record)[0]
    how = taken_words(st) if record in t.evicted else _truncation_words(policy, t)
    points = _removal_points(policy, transitions, len(transitions) - 1, record, where, "records")
    verb = {"mask": "masks", "cut": "cuts"}.get(st.effect, "removes") if record in t.evicted else "removes"
    return f"the compaction {verb} record #{record} of edit {edit_number(t.before, record)} ({how})", points


def _c3_cause(policy: Policy, transitions: Sequence[Transition], where: Dict[str, Loc]) -> tuple:
    t = transitions[-1]
    info = t.before.edit(t.action.edit)
    now = t.before.span(info.target).version
    return (f"undo of edit {edit_number(t.before, info.record)} reverts #{info.target} at version {now}, but the "
            f"record was taken at version {info.version}: the later edit is silently lost",
            (_setting(policy, "undo", where, "reverts without checking the target's version"),))


def _c4_cause(policy: Policy, transitions: Sequence[Transition], where: Dict[str, Loc]) -> tuple:
    after = transitions[-1].after
    info = next(e for e in after.live_edits() if not present(after.span(e.record)))
    index = _removal(transitions, info.record)
    points = (_setting(policy, "audit", where, "the pruning pass only counts edits whose record or rationale it can "
                       "still see"),)
    if index is not None:
        points += _removal_points(policy, transitions, index, info.record, where, "records")
    removed = f" (removed at step {index + 1})" if index is not None else ""
    return (f"status says '{REVERSIBLE}' while record #{info.record} of edit {edit_number(after, info.record)} is "
            f"{absence_words(after, info.record)}{removed}", points)


def _p1_cause(policy: Policy, transitions: Sequence[Transition], where: Dict[str, Loc]) -> tuple:
    t = transitions[-1]
    info = next(e for e in t.after.live_edits() + t.after.entries if not present(t.after.span(e.rationale)))
    st = taking_stage(policy, t, info.rationale)[0]
    how = taken_words(st) if info.rationale in t.evicted else _truncation_words(policy, t)
    points = _removal_points(policy, transitions, len(transitions) - 1, info.rationale, where, "rationale")
    verb = {"mask": "masks", "cut": "cuts"}.get(st.effect, "removes") if info.rationale in t.evicted \
        else "removes"
    whose = (f"live edit {edit_number(t.after, info.record)}" if isinstance(info, EditInfo)
             else "a compaction's ledger entry")
    return f"the compaction {verb} rationale #{info.rationale} of {whose} ({how})", points


def _t1_cause(policy: Policy, transitions: Sequence[Transition], where: Dict[str, Loc]) -> tuple:
    t = transitions[-1]
    k, removed = split_pairs(t)[0], stage_removed(t)
    taken, left = (k, k + 1) if k in removed else (k + 1, k)
    what = {k: "tool call", k + 1: "tool result"}
    st, start = taking_stage(policy, t, taken)
    points = predicate_points(st, start, taken) + (
        Point(f"pairs: {st.pairs}", key_locations(st).get("pairs", NOWHERE), "the stage does not take a tool call "
              "and its result together"),)
    verb = "moves" if t.after.span(taken).namespace == "log" else "removes"
    blind = "" if uses_pairs(policy) else (" (the policy cannot tell pairs apart: it reads no role and sets neither "
                                           "`pairs: together` nor `start_on`)")
    return (f"the compaction {verb} {what[taken]} #{taken} out of the window but leaves its {what[left]} #{left} "
            f"there: the model's API rejects the orphan{blind}", points)


def _m1_cause(policy: Policy, transitions: Sequence[Transition], where: Dict[str, Loc]) -> tuple:
    t = transitions[-1]
    span_id = lost_content(t.before, t.after)[0]
    taken = span_id in t.evicted
    st, start = taking_stage(policy, t, span_id)
    how = taken_words(st) if taken else _truncation_words(policy, t)
    verb = {"mask": "masks", "cut": "cuts"}.get(st.effect, "removes") if taken else "removes"
    points = (predicate_points(st, start, span_id) + stage_points(st, start, t.action) if taken
              else ()) + (
        _setting(policy, "evicted", where, "leaves no tombstone and no copy in the log of what a compaction destroys"),)
    return (f"the compaction {verb} #{span_id} ({span_words(t.before, span_id)}; {how}) and keeps no evidence of it: no "
            "tombstone, no place in the log", points)


def _a1_cause(policy: Policy, transitions: Sequence[Transition], where: Dict[str, Loc]) -> tuple:
    t = transitions[-1]
    span_id = rewritten_log_entries(t.before, t.after)[0]
    return (f"{step_label(policy, t)} rewrites decision-log entry #{span_id} ({span_words(t.before, span_id)})",
            (_setting(policy, "rationale", where, "keeps the decision log in the log namespace"),))


def _u1_cause(policy: Policy, transitions: Sequence[Transition], where: Dict[str, Loc]) -> tuple:
    t = transitions[-1]
    info = t.before.edit(t.action.edit)
    index = _removal(transitions, info.record)
    points = (_setting(policy, "missing_record", where, "an undo without its record restores from what is left"),)
    if index is not None:
        points += _removal_points(policy, transitions, index, info.record, where, "records")
    return (f"undo of edit {edit_number(t.before, info.record)} {t.outcome} #{info.target} although record "
            f"#{info.record} is {absence_words(t.before, info.record)}: the restored content is invented", points)


def _r1_cause(policy: Policy, transitions: Sequence[Transition], where: Dict[str, Loc]) -> tuple:
    after = transitions[-1].after
    span = after.span(named_spans(policy, after)[0])
    st = next(st for st in policy.stages if span.id in named_spans(st, after))
    env = span_env(st, after, span)
    points = tuple(_atom_point(atom, env) for atom in deciding_atoms(st.evict, env, True))
    kinds = " or ".join(control_kinds(st))
    return (f"`evict` names {span.kind} #{span.id} (in the {span.namespace} namespace): it is true on it, and false "
            f"on the same span in the window as a {kinds}, so it selects the recovery span for what it is", points)


def _x1_cause(policy: Policy, transitions: Sequence[Transition], where: Dict[str, Loc]) -> tuple:
    t = transitions[-1]
    gone = ", ".join(f"#{i}" for i in sorted(t.evicted)) or "spans"
    refused = blocking_spans(policy, t)
    return (f"the compaction is blocked on recovery span #{refused[0]}, but it has already taken {gone}: a blocked "
            "compaction is not atomic", (_setting(policy, "refusal", where, "walks the candidates and stops at the "
                                                   "first named recovery span, keeping what it took"),))


def _j1_cause(policy: Policy, transitions: Sequence[Transition], where: Dict[str, Loc]) -> tuple:
    t = transitions[-1]
    lost = min(c for c in t.after.cited_ids() if not present(t.after.span(c)))
    citer = next(e for e in t.after.live_edits() + t.after.entries if lost in e.cites)
    whose = f"live edit {edit_number(t.after, citer.record)}" if isinstance(citer, EditInfo) else \
        f"the compaction whose rationale is #{citer.rationale}"
    how = taken_words(policy) if lost in t.evicted else _truncation_words(policy, t)
    points = (predicate_points(policy, t.before, lost) + stage_points(policy, t.before, t.action) if lost in t.evicted
              else ()) + (_setting(policy, "justification", where, "lets a removal destroy a span a live entry "
                                   "cites (downgrade moves it to the log instead)"),)
    return f"#{lost}, cited by {whose}, is {absence_words(t.after, lost)} ({how}): the justification did not survive " \
           "the edit", points


# Per condition of spec/conditions.py: (policy, transitions ending in the violation, key locations) -> (summary,
# points), the summary and the places in the policy's text that cause_of puts in its Cause.
EXPLAINERS = {"C1": _c1_cause, "C2": _c2_cause, "C3": _c3_cause, "C4": _c4_cause, "P1": _p1_cause, "T1": _t1_cause,
              "R1": _r1_cause, "X1": _x1_cause, "M1": _m1_cause, "A1": _a1_cause, "U1": _u1_cause,
              "J1": _j1_cause}


def cause_of(policy: Policy, transitions: Sequence[Transition], condition: str) -> Cause:
    """Why the last transition violates `condition` (which it must: the trace was replayed to end there)."""
    summary, points = EXPLAINERS[condition](policy, transitions, key_locations(policy))
    return Cause(condition, len(transitions), summary, points)


def explanation_of(policy: Policy, transitions: Sequence[Transition], condition: str) -> Explanation:
    """Explain a replayed counterexample (its last transition violates condition)."""
    steps = tuple(step_label(policy, t) for t in transitions)
    return Explanation(condition, tuple(t.action for t in transitions), steps, cause_of(policy, transitions, condition))


def explain(policy: Policy, actions: Sequence, condition: str, max_spans: Optional[int] = None) -> Explanation:
    """Replay a counterexample and explain it; raises ReplayMismatch if it does not replay."""
    return explanation_of(policy, replay(policy, actions, max_spans), condition)


def explanation_lines(policy: Policy, explanation: Explanation, indent: str = "        ", located: bool = True,
                      statuses: Sequence[str] = ()) -> list:
    """The explanation as text: numbered steps with what they changed (and the status after each, where `statuses`
    gives them), then the cause with file positions (with located=False, the policy's source alone: its positions are
    in no file a user can open)."""

    lines = [f"{indent}{DESCRIPTIONS[explanation.condition]}; counterexample:"]
    for index, (action, label) in enumerate(zip(explanation.actions, explanation.steps), start=1):
        after = f"  [status: {statuses[index - 1]}]" if statuses else ""
        lines.append(f"{indent}{index}. {action_text(action, keywords=True)}  -- {label}{after}")
    cause = explanation.cause
    lines.append(f"{indent}why: {cause.summary}")
    for p in cause.points:
        at = f"{policy.source}:{p.loc.line}:{p.loc.col}" if located and p.loc != NOWHERE else policy.source
        lines.append(f"{indent}  {at}: `{p.text}` {p.note}")
    return lines


def explanation_json(explanation: Explanation) -> dict:
    cause = explanation.cause
    return {
        "steps": list(explanation.steps),
        "cause": {
            "step": cause.step,
            "summary": cause.summary,
            "points": [{"text": p.text, "line": p.loc.line, "column": p.loc.col, "note": p.note} for p in cause.points],
        },
    }
