"""Theorem: soundness of "reversible" — when the status says so, undo restores, and a failing undo changes nothing."""

from __future__ import annotations

import z3

from prunecheck.checker.engines.invariants import inductive_lemmas, lemma_terms
from prunecheck.symbolic.solver import Status, new_solver, query
from prunecheck.symbolic.model import ACT, Model
from prunecheck.spec.policy import BoolLit, Policy, keeps_destroyed_content

from prunecheck.proofs.theorem import RLIMIT, TIMEOUT, TheoremResult, bounded_label, deployments, timed

NAME = "soundness of 'reversible'"
STATEMENT = ("In every reachable state (over 6 span slots, relative to the proved structural invariant) of a "
             "deployment where C1-C4 hold by design (records in the undo region, host pins, independent audit, "
             "versioned undo; any rationale placement, either destroy_record, any policy), if the status says "
             "'reversible' then undo of any live edit whose target was not re-edited and whose record can restore it "
             "(a transform, or a destroy whose record keeps its content) restores the target's kind and edited flag "
             "as they were before that edit and makes it live; and in every deployment, an undo whose record is "
             "absent changes nothing (the runtime raises IrreversibleEditError) instead of reconstructing, and so "
             "does the undo of a destroy whose record keeps only its id (destroy_record: id; \"destruction is not\" "
             "reversible).")
SLOTS = 6


def label():
    """z3 alone on the model over SLOTS span slots, no induction: bounded."""
    return bounded_label(SLOTS)


def _undo_facts(deployment) -> tuple:
    model = Model(Policy("any", BoolLit(True), deployment=deployment), SLOTS)
    invariant = inductive_lemmas(model)
    s, a, t = model.generic_state("pre"), model.action("pre"), model.state("post")
    step = model.encode_step(s, a, t)
    base = step.constraints + lemma_terms(model, s, invariant) + [a.act == ACT["undo"]]
    restores, unchanged, restorable, kept = [], [], [], []
    for r, slot in enumerate(model.slots):
        chosen = a.arg == slot
        if not keeps_destroyed_content(deployment):  # a destroy's record keeps only its id: it cannot restore
            restorable.append(z3.Implies(chosen, z3.Not(s.destroy[r])))
            kept.append(z3.Implies(z3.And(chosen, s.destroy[r]),
                                   z3.And([t.fields[name][i] == s.fields[name][i]
                                           for name in s.fields if name != "clock" for i in range(SLOTS)])))
        for j, target in enumerate(model.slots):
            same = s.target[r] == target
            restores.append(z3.Implies(z3.And(chosen, same, step.reverted),
                                       z3.And(t.kind[j] == s.prior_kind[r], t.edited[j] == s.prior_edited[r],
                                              t.alive[j])))
        unchanged.append(z3.Implies(z3.And(chosen, z3.Not(s.alive[r])),
                                    z3.And([t.fields[name][i] == s.fields[name][i]
                                            for name in s.fields for i in range(SLOTS)])))
    return model, base, z3.And(restores), z3.And(unchanged), s, step, restorable, kept


def _valid(premises, claim) -> str:
    """'unsat' when the claim follows; premises that no state satisfies would make that vacuous, so they count
    as a failure."""
    solver = new_solver(TIMEOUT * 1000, RLIMIT)
    solver.add(premises)
    if query(solver).status != Status.SAT:
        return "vacuous"
    solver.add(z3.Not(claim))
    return query(solver).status


def prove() -> TheoremResult:
    def run():
        checked, failures = 0, []
        for deployment in deployments() + deployments(destroy_record="verbatim"):
            model, base, restores, unchanged, s, step, restorable, kept = _undo_facts(deployment)
            claims = [("a failing undo changes nothing", base, unchanged)]
            if kept:
                claims.append(("an undo of a destroy kept by id changes nothing", base, z3.And(kept)))
            safe = (deployment.records, deployment.pins, deployment.audit, deployment.undo) == \
                ("undo_region", "host", "independent", "versioned")
            if safe:
                premises = base + [model.says_reversible(s), step.fresh] + restorable
                claims.append(("undo restores", premises, z3.And(restores, step.reverted)))
            for label, premises, claim in claims:
                checked += 1
                if _valid(premises, claim) != Status.UNSAT:
                    failures.append(f"{label} under {deployment.as_dict()}")
        return checked, failures
    (checked, failures), seconds = timed(run)
    detail = f"{checked - len(failures)}/{checked} (deployment, claim) pairs proved" + \
        (f"; failed: {failures[0]}" if failures else "")
    return TheoremResult(NAME, STATEMENT, not failures, detail, seconds, "z3 only (bounded slots)")
