"""Policy review: whether a NEW policy evicts, in some reachable state, a span an OLD one keeps (and the reverse)."""

from __future__ import annotations

import copy

import json
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Optional

import z3

from prunecheck.spec.errors import ReplayMismatch
from prunecheck.spec.evaluate import evaluate
from prunecheck.symbolic.lemmas import candidate_lemmas
from prunecheck.symbolic.model import ACT, Model, SymAction, SymState
from prunecheck.spec.policy import (ATTRS, DEPLOYMENT_KEYS, NAME_ATTRS, POSITION_ATTRS, TRIGGER_ATTRS, Attr, Policy,
                                    has_effects, mentioned_events, mentioned_names, read_positions, read_triggers,
                                    subexpressions)
from prunecheck.spec.stage import selection
from prunecheck.spec.actions import action_args
from prunecheck.symbolic.terms import ExprEncoder, frac_compare

from prunecheck.checker.language.document import policy_document, policy_hash
from prunecheck.checker.versions import versions
from prunecheck.checker.result import counted
from prunecheck.checker.engines.invariants import houdini
from prunecheck.checker.language.printer import number_text, to_text
from prunecheck.spec.actions import action_text
from prunecheck.checker.engines.replay import decode_action, decode_state
from prunecheck.symbolic.solver import Status, new_solver, query
from prunecheck.checker.engines.unknowns import solver_words
from prunecheck.checker.options import DIFF_DEFAULTS, MAX_SPANS, CheckOptions, options_with
from prunecheck.checker.progress import current
from prunecheck.checker.commands.diff_space import attribute_space, valuation
from prunecheck.checker.commands.diff_witness import (DIRECTION_TEXT, DIRECTIONS, NEW_EVICTS, OLD_EVICTS, View, Witness,
                                                     replayed_witness, simplest_witness)

EQUIVALENT, DIFFERENT, UNKNOWN = "equivalent", "different", "unknown"
EXIT_CODES = {EQUIVALENT: 0, DIFFERENT: 1, UNKNOWN: 3}


@dataclass(frozen=True)
class Direction:
    """One direction's answer: a shortest witness, or None and why there is none."""

    direction: str
    witness: Optional[Witness]
    reason: str
    seconds: float = field(default=0.0, compare=False)


@dataclass(frozen=True)
class Equivalence:
    """Whether every run under OLD is the same run under NEW (proved), and the reason either way."""

    proved: bool
    reason: str


@dataclass(frozen=True)
class PolicyDiff:
    """The review's answer: `different` (a replayed witness in at least one direction), `equivalent` (proved),
    or `unknown` (no difference found within the bounds); deployment_keys are the deployment options that differ."""

    outcome: str
    new_evicts: Direction
    old_evicts: Direction
    deployment_keys: tuple
    equivalence: Equivalence
    depth: int
    spans: int
    seconds: float = field(default=0.0, compare=False)

    def direction(self, name: str) -> Direction:
        return self.new_evicts if name == NEW_EVICTS else self.old_evicts


def differing_deployment_keys(old: Policy, new: Policy) -> tuple:
    return tuple(key for key in DEPLOYMENT_KEYS
                 if getattr(old.deployment, key) != getattr(new.deployment, key))


# --------------------------------------------------------------------------- equivalence proof


def _mentioned(*exprs) -> list:
    names = {node.name for e in exprs if e is not None for node in subexpressions(e) if isinstance(node, Attr)}
    return [name for name in ATTRS if name in names]


def _differ_somewhere(what: str, old_expr, new_expr, same, ints, env, constraints, budget, guard,
                      timeout: float, rlimit: int) -> Optional[str]:
    """None if `same` is valid (given the guard, under the constraints); otherwise why it was not proved."""
    solver = new_solver(timeout * 1000, rlimit)
    solver.add(constraints)
    solver.add(guard, z3.Not(same))
    answer = query(solver)
    if answer.status == Status.UNSAT:
        return None
    if answer.status == Status.UNKNOWN:
        return f"equality of the {what} expressions not decided ({solver_words(answer.reason)})"
    values = valuation(solver.model(), ints, env, budget)
    left, right = evaluate(old_expr, values), evaluate(new_expr, values)
    if left == right:
        raise ReplayMismatch(f"the solver's valuation separating the {what} expressions gives both "
                             f"{_value_text(left)} on the runtime evaluator")
    shown = " ".join(f"{n}={_value_text(values[n])}" for n in _mentioned(old_expr, new_expr)) or "any span"
    return f"{what} differs on some attribute valuation ({shown}: OLD {_value_text(left)}, NEW {_value_text(right)})"


def equivalence(old: Policy, new: Policy, timeout: float = DIFF_DEFAULTS.timeout, rlimit: int = 0) -> Equivalence:
    """Proved when deployment, budget, pairs and the stage's when, until, order and start_on are equal, the ranks
    agree on every candidate (or neither a budget nor a target makes the rank matter), and the selections (evict and
    not keep) agree on every valuation of the attribute vocabulary within its intervals: then every compaction has
    the same candidates, trigger, order and target, so every run is the same run under both."""
    keys = differing_deployment_keys(old, new)
    if keys:
        return Equivalence(False, f"deployments differ in {', '.join(keys)}")
    if old.later != new.later:  # equal later stages run on equal windows when the first stages are equivalent
        return Equivalence(False, "the compactions' later stages differ (SPEC §4h)")
    effects = ("effect", "placeholder_tokens", "summary_role", "summary_at")
    if tuple(getattr(old, k) for k in effects) != tuple(getattr(new, k) for k in effects):
        return Equivalence(False, f"effects differ ({old.effect} vs {new.effect}, placeholder tokens "
                                  f"{old.placeholder_tokens} vs {new.placeholder_tokens}"
                                  + (f", summary role {old.summary_role} vs {new.summary_role}"
                                     if old.summary_role != new.summary_role else "")
                                  + (f", summary at {old.summary_at} vs {new.summary_at}"
                                     if old.summary_at != new.summary_at else "") + ")")
    if old.budget != new.budget:
        return Equivalence(False, f"budgets differ ({old.budget or 'none'} vs {new.budget or 'none'})")
    if old.pairs != new.pairs:
        return Equivalence(False, f"pairs differ ({old.pairs} vs {new.pairs}): their compactions take different spans")
    if (old.pairs == "together" or old.start_on is not None) and old.keep != new.keep:
        return Equivalence(False, "the keeps differ and pairs are together or start_on is set: both read keep")
    stage = [key for key in ("when", "until", "order", "start_on") if getattr(old, key) != getattr(new, key)]
    if stage:  # not compared semantically: a witness search decides
        return Equivalence(False, f"the compaction stages differ in {', '.join(stage)}")
    if old.aggregates or new.aggregates:  # sums over other spans: not a function of one span's attributes
        return Equivalence(False, "the policies read aggregates (spec/SPEC.md §1e), which the one-span attribute "
                                  "space cannot say: a witness search decides")
    ints, env, constraints = attribute_space(old.budget, POSITION_ATTRS if read_positions(old) + read_positions(new)
                                              else (), shared_names(old, new))
    old_sel, new_sel = selection(old), selection(new)
    old_evict, new_evict = ExprEncoder(env).encode(old_sel), ExprEncoder(env).encode(new_sel)
    what = "evict" if old.keep is None and new.keep is None else "evict-and-not-keep"
    why = _differ_somewhere(what, old_sel, new_sel, old_evict == new_evict, ints, env, constraints,
                            old.budget, z3.BoolVal(True), timeout, rlimit)
    if why is not None:
        return Equivalence(False, why)
    if old.budget is None and old.until is None:
        return Equivalence(True, "same deployment and stage, no budget or target (rank unused), evict predicates "
                                 "agree on every attribute valuation")
    if (old.rank is None) != (new.rank is None):
        return Equivalence(False, f"only {'OLD' if new.rank is None else 'NEW'} ranks its candidates")
    if old.rank is not None:
        old_rank, new_rank = ExprEncoder(env).encode(old.rank), ExprEncoder(env).encode(new.rank)
        why = _differ_somewhere("rank", old.rank, new.rank, frac_compare("==", old_rank, new_rank), ints, env,
                                constraints, old.budget, old_evict, timeout, rlimit)
        if why is not None:
            return Equivalence(False, f"{why} on a candidate")
    return Equivalence(True, "same deployment and budget, ranks agree on every candidate, evict predicates agree "
                             "on every attribute valuation")


# --------------------------------------------------------------------------- lockstep search


def _kept(plain: bool, s: SymState, i: int):
    """Slot i is in the window, unmasked (just alive when neither policy has effects: the terms of before them)."""
    return s.alive[i] if plain else z3.And(s.in_window(i), s.present(i))


def _pair_lemmas(m_old: Model, m_new: Model, s_old: SymState, s_new: SymState, keep=None) -> list:
    """(name, term) candidates about a pair of states of the two runs: each model's own structural lemmas, and,
    per slot, that a field is equal in both runs or that a span alive in one run is alive in the other."""
    out = [(f"old:{name}", term) for name, term in candidate_lemmas(m_old, s_old)]
    out += [(f"new:{name}", term) for name, term in candidate_lemmas(m_new, s_new)]
    for i in range(m_old.n):
        out += [(f"same_{name}[{i}]", s_old.fields[name][i] == s_new.fields[name][i])
                for name in s_old.fields if name != "alive" and name in s_new.fields]
        out.append((f"old_alive_in_new[{i}]", z3.Implies(s_old.alive[i], s_new.alive[i])))
        out.append((f"new_alive_in_old[{i}]", z3.Implies(s_new.alive[i], s_old.alive[i])))
    return [(name, term) for name, term in out if keep is None or name in keep]


def _witness(plain: bool, a: SymAction, before_old: SymState, before_new: SymState, after_old: SymState,
             after_new: SymState, direction: str, slot: int):
    """The step is a compaction that removes `slot`, kept in both runs, from one run only (per direction); removed
    is dead (or, with effects, out of the window or masked)."""
    dropped, kept = (after_new, after_old) if direction == NEW_EVICTS else (after_old, after_new)
    return z3.And(a.act == ACT["compact"], _kept(plain, before_old, slot), _kept(plain, before_new, slot),
                  z3.Not(_kept(plain, dropped, slot)), _kept(plain, kept, slot))


def _pair_invariant(m_old: Model, m_new: Model, plain: bool, timeout: float, rlimit: int) -> tuple:
    """(names of the pair lemmas that hold in every reachable pair of states, by Houdini over the product step;
    the directions that no step from a state satisfying them can witness: none at any depth within n slots)."""
    n = m_old.n
    init_old, init_new = m_old.state(0), m_new.state(0)
    m_old.encode_init(init_old)
    m_new.encode_init(init_new)
    at_init = {name for name, term in _pair_lemmas(m_old, m_new, init_old, init_new) if z3.is_true(z3.simplify(term))}
    clock = z3.Int("pair_clock@pre")
    pre_old = SymState("pre", n, "old_", clock, masking=m_old.masking, placing=m_old.placing, names=m_old.names,
                       tombstones=m_old.tombstones, cites=m_old.evidence)
    pre_new = SymState("pre", n, "new_", clock, masking=m_new.masking, placing=m_new.placing, names=m_new.names,
                       tombstones=m_new.tombstones, cites=m_new.evidence)
    post_old, post_new = m_old.state("post"), m_new.state("post")
    a = shared_action("pre", m_old, m_new)
    step = (m_old.encode_step(pre_old, seen_by(a, m_old), post_old).constraints
            + m_new.encode_step(pre_new, seen_by(a, m_new), post_new).constraints + uncited(a, m_old, m_new))
    before = dict(_pair_lemmas(m_old, m_new, pre_old, pre_new, at_init))
    after = dict(_pair_lemmas(m_old, m_new, post_old, post_new, at_init))
    invariant = houdini(None, None, step, before, after, timeout, rlimit)
    impossible = []
    for d in DIRECTIONS:
        solver = new_solver(timeout * 1000, rlimit)
        solver.add(step + [before[name] for name in invariant.names])
        solver.add(z3.Or([_witness(plain, a, pre_old, pre_new, post_old, post_new, d, i) for i in range(n)]))
        if query(solver).status == Status.UNSAT:
            impossible.append(d)
    return frozenset(invariant.names), tuple(impossible)


def shared_action(k, m_old: Model, m_new: Model) -> SymAction:
    """The one action that drives both runs: with citations when either model has evidence (SPEC §6d)."""
    return SymAction(k, m_old.n, tag="pair_", names=m_old.names, cites=m_old.evidence or m_new.evidence,
                     triggers=m_old.triggers, events=m_old.events)


def seen_by(a: SymAction, model: Model) -> SymAction:
    """The shared action as a model without evidence sees it: the same variables, no citations."""
    if model.evidence or not a.cites:
        return a
    view = copy.copy(a)
    view.cites = []
    return view


def uncited(a: SymAction, m_old: Model, m_new: Model) -> list:
    """A policy without evidence refuses an action that cites, so a shared action cites only if both have it."""
    return [z3.Not(c) for c in a.cites] if m_old.evidence != m_new.evidence else []


def shared_names(old: Policy, new: Policy) -> tuple:
    """The tool/tag tables of both policies together (with both record_tools once `tool` is read): the models of a
    lockstep run, and the attribute space, code names alike for the two (spec/SPEC.md 1c)."""
    tables: dict = {}
    for policy in (old, new):
        for attr, names in mentioned_names(policy):
            tables.setdefault(attr, set()).update(names)
    if "tool" in tables:
        tables["tool"] |= {old.deployment.record_tool, new.deployment.record_tool}
    return tuple((attr, tuple(sorted(tables[attr]))) for attr in NAME_ATTRS if attr in tables)


def shared_triggers(old: Policy, new: Policy) -> tuple:
    """The trigger attributes and event names of both policies together (spec/SPEC.md §4g), for the shared action."""
    read = set(read_triggers(old)) | set(read_triggers(new))
    return (tuple(name for name in TRIGGER_ATTRS if name in read),
            tuple(sorted(set(mentioned_events(old)) | set(mentioned_events(new)))))


def lockstep_models(old: Policy, new: Policy, spans: int) -> tuple:
    """The two models one shared action drives: names and the compaction's trigger coded alike in both."""
    names, triggers = shared_names(old, new), shared_triggers(old, new)
    return (Model(old, spans, tag="old_", names=names, triggers=triggers),
            Model(new, spans, tag="new_", names=names, triggers=triggers))


def lockstep_directions(old: Policy, new: Policy, depth: int = DIFF_DEFAULTS.depth, spans: int = DIFF_DEFAULTS.spans,
                        timeout: float = DIFF_DEFAULTS.timeout, rlimit: int = 0) -> tuple:
    """(NEW evicts what OLD keeps, OLD evicts what NEW keeps): per direction a shortest replayed witness within
    `depth` steps and `spans` slots, or none and why. Both policies run on one shared action sequence; every step
    must be enabled in both runs. `timeout` is each direction's solver time; `rlimit` bounds each query by z3's
    resource count as well (0: none)."""
    current().step("inductive invariant of the two runs")
    m_old, m_new = lockstep_models(old, new, spans)
    plain = not (has_effects(old) or has_effects(new))
    lemmas, impossible = _pair_invariant(m_old, m_new, plain, timeout, rlimit)
    answers = {d: Direction(d, None, f"none at any depth within {spans} spans (proved by an inductive invariant "
                                     "of the two runs)") for d in impossible}
    pending = [d for d in DIRECTIONS if d not in impossible]
    solver = new_solver(timeout * 1000, rlimit)
    olds, news, actions = [m_old.state(0)], [m_new.state(0)], []
    m_old.encode_init(olds[0])
    m_new.encode_init(news[0])
    spent = {d: 0.0 for d in DIRECTIONS}
    for k in range(1, depth + 1):
        if not pending:
            break
        # One action drives both runs (the models' own actions would only be constrained equal field by field).
        a = shared_action(k - 1, m_old, m_new)
        actions.append(a)
        solver.add(uncited(a, m_old, m_new))
        olds.append(m_old.state(k))
        news.append(m_new.state(k))
        solver.add(m_old.encode_step(olds[k - 1], seen_by(a, m_old), olds[k]).constraints)
        solver.add(m_new.encode_step(news[k - 1], seen_by(a, m_new), news[k]).constraints)
        solver.add([term for _, term in _pair_lemmas(m_old, m_new, olds[k], news[k], lemmas)])
        for d in list(pending):
            current().step(f"depth {k} of {depth}, {DIRECTION_TEXT[d]}")
            per_slot = [_witness(plain, a, olds[k - 1], news[k - 1], olds[k], news[k], d, i)
                        for i in range(spans)]
            literal = z3.Bool(f"witness_{d}@{k}")
            solver.add(z3.Implies(literal, z3.Or(per_slot)))
            left = timeout - spent[d]
            answer = query(solver, [literal], int(left * 1000)) if left > 0 else None
            spent[d] += answer.seconds if answer is not None else 0.0
            if answer is not None and answer.status == Status.UNSAT:
                continue
            pending.remove(d)
            if answer is None or answer.status == Status.UNKNOWN:
                why = answer.reason if answer is not None else "timeout"
                answers[d] = Direction(d, None, f"the solver stopped at depth {k} ({solver_words(why)}); none up to "
                                                f"depth {k - 1}, {spans} spans", spent[d])
                continue
            zmodel = solver.model()
            slot = next(i for i in range(spans) if z3.is_true(zmodel.eval(per_slot[i], model_completion=True)))
            trace = tuple(decode_action(zmodel, x) for x in actions)
            decoded = ([decode_state(zmodel, s) for s in olds], [decode_state(zmodel, s) for s in news])
            replayed_witness(old, new, d, trace, slot, spans, *decoded)  # the solver's run is the runtime's
            witness = simplest_witness(old, new, d, trace, slot, spans)
            answers[d] = Direction(d, witness, f"witness after {counted(k, 'step')} (shortest within {spans} spans); "
                                              "replayed on the runtime", spent[d])
        current().advance()
    for d in pending:
        answers[d] = Direction(d, None, f"none within depth {depth}, {spans} spans (bounded search only)", spent[d])
    return answers[NEW_EVICTS], answers[OLD_EVICTS]


def diff_policies(old: Policy, new: Policy, options: CheckOptions = DIFF_DEFAULTS) -> PolicyDiff:
    """`equivalent` only when proved (no search needed then); otherwise the lockstep search in both directions:
    `different` with a replayed witness in at least one, or `unknown` (no difference within depth and spans).
    Of the options, the bounds count: depth, spans, timeout (per direction) and rlimit."""
    started = time.perf_counter()
    depth, spans, timeout, rlimit = options.depth, options.spans, options.timeout, options.rlimit
    keys = differing_deployment_keys(old, new)
    progress = current()
    progress.item("equivalence proof")
    proof = equivalence(old, new, timeout, rlimit)
    if proof.proved:
        none = "none: the policies are equivalent"
        return PolicyDiff(EQUIVALENT, Direction(NEW_EVICTS, None, none), Direction(OLD_EVICTS, None, none), keys,
                          proof, depth, spans, time.perf_counter() - started)
    progress.item("lockstep search")
    progress.expect(depth)
    forward, backward = lockstep_directions(old, new, depth, spans, timeout, rlimit)
    found = forward.witness is not None or backward.witness is not None
    return PolicyDiff(DIFFERENT if found else UNKNOWN, forward, backward, keys, proof, depth, spans,
                      time.perf_counter() - started)


# --------------------------------------------------------------------------- output


def _value_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    value = Fraction(value)
    body = number_text(abs(value))
    if body.startswith("("):
        body = f"{abs(value).numerator}/{value.denominator}"
    return f"-{body}" if value < 0 else body


def outcome_text(diff: PolicyDiff) -> str:
    if diff.outcome == UNKNOWN:
        return f"no difference found within depth {diff.depth}, {diff.spans} spans"
    return diff.outcome


def _view_line(label: str, view: View) -> str:
    outside = " (outside the window: not a candidate)" if view.evict and not view.candidate else ""
    rank = "" if view.rank is None else f", rank {_value_text(view.rank)}"
    return f"    {label}: evict {_value_text(view.evict)}{outside}{rank} -> {view.fate}"


def _attribute_line(view: View) -> str:
    return " ".join(f"{name}={_value_text(value)}" for name, value in view.attributes)


def diff_text(diff: PolicyDiff, old: Policy, new: Policy) -> str:
    lines = []
    for label, p in (("OLD", old), ("NEW", new)):
        rank = f", rank: {to_text(p.rank)}" if p.rank is not None else ""
        budget = f", budget: {p.budget}" if p.budget is not None else ""
        lines.append(f"{label} {p.name} ({p.source}): evict: {to_text(p.evict)}{rank}{budget}")
    if diff.deployment_keys:
        changes = ", ".join(f"{key} {getattr(old.deployment, key)} -> {getattr(new.deployment, key)}"
                            for key in diff.deployment_keys)
        lines.append(f"deployment differs: {changes} (runs may diverge through it)")
    for name in DIRECTIONS:
        d = diff.direction(name)
        lines.append(f"{DIRECTION_TEXT[name]}: {d.reason}")
        w = d.witness
        if w is None:
            continue
        lines.extend(f"    {index}. {action_text(a, keywords=True)}" for index, a in enumerate(w.actions, start=1))
        lines.append(f"    span #{w.span} ({w.kind}) before step {len(w.actions)}:")
        if w.old.attributes == w.new.attributes:
            lines.append(f"      {_attribute_line(w.old)}")
        else:
            lines.append(f"      in OLD's run: {_attribute_line(w.old)}")
            lines.append(f"      in NEW's run: {_attribute_line(w.new)}")
        lines.append(_view_line("OLD", w.old))
        lines.append(_view_line("NEW", w.new))
    proof = ("proved: " if diff.equivalence.proved else "not proved equivalent: ") + diff.equivalence.reason
    lines.append(f"outcome: {outcome_text(diff)} ({proof})")
    return "\n".join(lines)


def _view_json(view: View) -> dict:
    attributes = {name: value if isinstance(value, (bool, str)) else _value_text(value)
                  for name, value in view.attributes}
    rank = None if view.rank is None else _value_text(view.rank)
    return {"attributes": attributes, "evict": view.evict, "candidate": view.candidate, "rank": rank,
            "fate": view.fate}


def diff_json(diff: PolicyDiff, old: Policy, new: Policy) -> dict:
    directions = {}
    for name in DIRECTIONS:
        d = diff.direction(name)
        entry = {"witness": None, "reason": d.reason, "seconds": round(d.seconds, 4)}
        if d.witness is not None:
            w = d.witness
            actions = [{"action": a.name, "args": action_args(a)} for a in w.actions]
            entry["witness"] = {"steps": len(w.actions), "actions": actions, "span": w.span, "kind": w.kind,
                                "old": _view_json(w.old), "new": _view_json(w.new)}
        directions[name] = entry
    return {
        "outcome": diff.outcome,
        "summary": outcome_text(diff),
        "equivalence": {"proved": diff.equivalence.proved, "reason": diff.equivalence.reason},
        "deployment_differs": {key: [getattr(old.deployment, key), getattr(new.deployment, key)]
                               for key in diff.deployment_keys},
        "directions": directions,
        "old": {"source": old.source, "policy": policy_document(old), "policy_hash": policy_hash(old)},
        "new": {"source": new.source, "policy": policy_document(new), "policy_hash": policy_hash(new)},
        "depth": diff.depth,
        "spans": diff.spans,
        "seconds": round(diff.seconds, 4),
        "versions": dict(versions()),
    }


# --------------------------------------------------------------------------- command line


def add_parser(subparsers) -> None:
    from prunecheck.checker.commands.frontdoor import (add_operator_arguments, add_quiet_argument, add_rlimit_argument,
                                                       bounded_int)

    p = subparsers.add_parser("diff", help="compare two policies: where does one evict what the other keeps")
    p.add_argument("old", metavar="OLD", help="the deployed policy (.yaml, .yml, .json or .py)")
    p.add_argument("new", metavar="NEW", help="the proposed policy")
    p.add_argument("--depth", type=bounded_int(0, 200), default=DIFF_DEFAULTS.depth,
                   help=f"bounded search depth (default {DIFF_DEFAULTS.depth})")
    p.add_argument("--spans", type=bounded_int(2, MAX_SPANS), default=DIFF_DEFAULTS.spans,
                   help=f"span slots (default {DIFF_DEFAULTS.spans})")
    p.add_argument("--timeout", type=bounded_int(1, 3600), default=int(DIFF_DEFAULTS.timeout),
                   help=f"solver seconds per direction (default {DIFF_DEFAULTS.timeout:g})")
    add_rlimit_argument(p)
    add_quiet_argument(p)
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text (default: each direction with its witness) or json (one document)")
    add_operator_arguments(p)


def run(args, stdout, stderr) -> int:
    """Exit 0 equivalent (proved), 1 different (replayed witness), 3 no difference found within the bounds."""
    from prunecheck.checker.commands.frontdoor import progress_of
    from prunecheck.checker.language.operator import judged_from_args
    from prunecheck.symbolic.interrupts import commit

    old, new = judged_from_args(args.old, args), judged_from_args(args.new, args)
    options = options_with(DIFF_DEFAULTS, depth=args.depth, spans=args.spans, timeout=args.timeout,
                           rlimit=args.rlimit)
    with progress_of(args, stderr).task("diffing"):
        diff = diff_policies(old, new, options)
    commit()  # the outcome is decided: printed whole
    if args.format == "json":
        print(json.dumps(diff_json(diff, old, new), indent=2), file=stdout)
    else:
        print(diff_text(diff, old, new), file=stdout)
    return EXIT_CODES[diff.outcome]
