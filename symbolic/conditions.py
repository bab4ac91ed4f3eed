"""Each condition's violation term, keyed by its id in spec/conditions.py: on the unrolled and on the pair model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import z3

from prunecheck.spec.conditions import BY_ID, Scope
from prunecheck.spec.policy import IN_PLACE
from prunecheck.symbolic import evidence, pair_evidence
from prunecheck.symbolic.model import ACT
from prunecheck.symbolic.evidence_terms import a1_pair, a1_unrolled, m1_pair, m1_unrolled
from prunecheck.symbolic.undo_terms import gated, reconstructs
from prunecheck.symbolic.refusal import changed, names_any, pair_changed, pair_named


@dataclass(frozen=True)
class ConditionTerms:
    """A condition's two violation terms. State conditions: `unrolled(model, state)`, `pair(pair_model, state)`.
    Step conditions: `unrolled(model, before, action, after, step_terms)`, `pair(pair_model, pair_step)`."""

    unrolled: Callable[..., z3.BoolRef]
    pair: Callable[..., z3.BoolRef]


# The unrolled model over N slots (symbolic/model.py): a term per state (built once on the generic state) or per step.


def _c1(model, t):
    return model.at(t, "C1", lambda g: z3.Or([z3.And(g.live_edit(i), model.candidate(g, i)) for i in range(model.n)]))


def _c2(model, s, a, t, step):
    return z3.And(a.act == ACT["compact"],
                  z3.Or([z3.And(s.is_record(i), s.present(i), z3.Not(t.present(i))) for i in range(model.n)]))


def _c3(model, s, a, t, step):
    return z3.And(step.reverted, z3.Not(step.fresh))


def _c4(model, t):
    return model.at(t, "C4", lambda g: z3.And(model.says_reversible(g), model.gap(g)))


def _p1(model, t):
    return model.at(t, "P1", lambda g: z3.Or([z3.And(g.live_edit(i), z3.Not(g.present(i + 1)))
                                              for i in range(model.n - 1)] + _ledger_p1(model, g)))


def _ledger_p1(model, g) -> list:
    return [evidence.ledger_rationale_lost(model, g)] if model.evidence else []


def _downgrades(model) -> bool:
    return model.evidence and model.dep.justification == "downgrade"


def _t1(model, s, a, t, step):
    removed = step.evicted
    if model.policy.effect in IN_PLACE:
        if not _downgrades(model):
            return z3.BoolVal(False)  # a masked or cut span stays in the window: it splits no pair
        removed = evidence.moved(model, s, a, step.evicted)  # a downgraded mask or cut moves the span to the log
    split = [z3.And(s.is_pair(i), s.in_window(i), s.in_window(i + 1), z3.Xor(removed[i], removed[i + 1]))
             for i in range(model.n - 1)]
    return z3.And(a.act == ACT["compact"], z3.Or(split))


def _u1(model, s, a, t, step):
    if not reconstructs(model.dep):
        return z3.BoolVal(False)  # without a present record the undo is irreversible: it changes nothing
    if gated(model.dep) and model.dep.audit == "independent":
        return z3.BoolVal(False)  # the independent closure check refuses an undo whose own (live) record is absent
    absent = [z3.And(a.arg == model.slots[i], z3.Not(s.present(i))) for i in range(model.n)]
    checked = [model.says_reversible(s)] if gated(model.dep) else []  # a self-certified check may miss the gap
    return z3.And(a.act == ACT["undo"], z3.Or(absent), *checked)


def _j1(model, t):
    if not model.evidence:
        return z3.BoolVal(False)  # nothing cites without evidence: on (J1 does not apply there)
    return model.at(t, "J1", lambda g: evidence.j1_violated(model, g))


# The pair model (symbolic/parametric.py): r ranges over every span id, so checking r alone covers every span.


def _pair_c1(model, s):
    if model.free_policy:
        # With the policy abstracted, some predicate selects any span, so a live record in the window is enough.
        return z3.And(s.live_edit("r"), s.in_window("r"))
    return z3.And(s.live_edit("r"), model.candidate(s, "r"))


def _pair_c2(model, step):
    return step.compact_removes_record_r


def _pair_c3(model, step):
    return z3.And(step.reverted_r, z3.Not(step.fresh))


def _pair_c4(model, s):
    gap_r = z3.And(s.live_edit("r"), z3.Not(s.present("r")))
    if model.dep.audit == "independent":
        # The independent status is "reversible" only without any gap, and r's gap is one.
        return z3.BoolVal(False)
    # The self-certified audit misses r's gap only if nothing of r is visible: r is dead, so q must be.
    return z3.And(gap_r, z3.Not(s.in_window("q")))


def _pair_p1(model, s):
    if model.evidence:  # a compaction's ledger rationale at r is held to P1 too (spec/SPEC.md §6d)
        return z3.Or(z3.And(s.live_edit("r"), z3.Not(s.present("q"))), pair_evidence.ledger_lost(model, s))
    return z3.And(s.live_edit("r"), z3.Not(s.present("q")))


def _pair_t1(model, step):
    if model.policy.effect in IN_PLACE and not (model.evidence and model.dep.justification == "downgrade"):
        return z3.BoolVal(False)  # a masked or cut span stays in the window: it splits no pair
    s, removed = step.pre, step.removed
    return z3.And(step.compacts, model.is_pair(s), s.in_window("r"), s.in_window("q"),
                  z3.Xor(removed["r"], removed["q"]))


def _pair_u1(model, step):
    return step.absent_undo_r if reconstructs(model.dep) else z3.BoolVal(False)


def _r1(model, t):
    return names_any(model, t)


def _pair_r1(model, s):
    # r ranges over every span id; with the policy abstracted this is any present recovery span (unprovable).
    return pair_named(model, s, "r")


def _x1(model, s, a, t, step):
    if model.dep.refusal == "silent":
        return z3.BoolVal(False)  # a compaction is never blocked
    return z3.And(a.act == ACT["compact"], names_any(model, s), changed(s, t))


def _pair_x1(model, step):
    if model.dep.refusal == "silent":
        return z3.BoolVal(False)  # a compaction is never blocked
    return z3.And(step.blocked, pair_changed(step.pre, step.post))


def _pair_j1(model, s):
    return pair_evidence.j1(model, s)


TERMS = {
    "C1": ConditionTerms(_c1, _pair_c1),
    "C2": ConditionTerms(_c2, _pair_c2),
    "C3": ConditionTerms(_c3, _pair_c3),
    "C4": ConditionTerms(_c4, _pair_c4),
    "P1": ConditionTerms(_p1, _pair_p1),
    "T1": ConditionTerms(_t1, _pair_t1),
    "R1": ConditionTerms(_r1, _pair_r1),
    "X1": ConditionTerms(_x1, _pair_x1),
    "M1": ConditionTerms(m1_unrolled, m1_pair),
    "A1": ConditionTerms(a1_unrolled, a1_pair),
    "U1": ConditionTerms(_u1, _pair_u1),
    "J1": ConditionTerms(_j1, _pair_j1),
}


def violation_at(model, condition: str, states, actions, steps, k: int) -> Optional[z3.BoolRef]:
    """The condition's violation in state k of an unrolling, or on the step into it (None at k = 0: no step)."""
    terms = TERMS[condition]
    if BY_ID[condition].scope is Scope.STATE:
        return terms.unrolled(model, states[k])
    if k == 0:
        return None
    return terms.unrolled(model, states[k - 1], actions[k - 1], states[k], steps[k - 1])


def pair_violation(model, condition: str, state, step):
    """The condition's violation on the pair model: in `state` for a state condition, on `step` otherwise."""
    terms = TERMS[condition]
    if BY_ID[condition].scope is Scope.STATE:
        return terms.pair(model, state)
    return terms.pair(model, step)
