"""Undo's options in both models: a stale undo merged as a new edit, an undo without its record reconstructed (§4e)."""

from __future__ import annotations

from dataclasses import dataclass

import z3

from prunecheck.spec.policy import keeps_destroyed_content

def merges(dep) -> bool:
    return dep.undo == "merge"


def reconstructs(dep) -> bool:
    return dep.missing_record == "reconstruct"


def gated(dep) -> bool:
    """`safe_undo: on`: the deployment's closure check runs before every undo, which changes nothing unless the check
    says "reversible"."""
    return dep.safe_undo == "on"


@dataclass(frozen=True)
class UndoTerms:
    """One unrolled step's undo: `reverted` (what C3 reads), `undoes` (the edit is marked undone and its target
    written: a revert, merge or reconstruction), `merged`, and `entry` (a record and rationale are written: an edit,
    or a merge). Under the default options `undoes` is `reverted` and `entry` is the edit, the same terms as before."""

    reverted: z3.BoolRef
    undoes: z3.BoolRef
    merged: z3.BoolRef
    entry: z3.BoolRef


def pair_closed(dep, s, a) -> z3.BoolRef:
    """The pair model's safe_undo check passes: a free choice for what it cannot see, and under `audit: independent`
    the ghosts' live records are present (a self-certified check may miss a ghost's gap, so it stays free)."""
    if dep.audit != "independent":
        return a.closed
    return z3.And(a.closed, *(z3.Implies(s.live_edit(g), s.present(g)) for g in ("r", "q")))


def unrolled_undo(dep, is_: dict, sel: dict, fresh, room_for_two, out: list, closed=None) -> UndoTerms:
    """The undo's outcome terms in the unrolled model; a merge's guard (room for its entry) goes into out. Under
    `safe_undo: on`, `closed` (the deployment's closure check says "reversible") gates every outcome that writes."""
    if gated(dep):
        is_ = {**is_, "undo": z3.And(is_["undo"], closed)}
    checked = dep.undo in ("versioned", "merge")
    present = sel["present"] if keeps_destroyed_content(dep) else z3.And(sel["present"], z3.Not(sel["destroy"]))
    reverted = z3.And(is_["undo"], present, fresh if checked else z3.BoolVal(True))
    merged = z3.And(is_["undo"], present, z3.Not(fresh)) if merges(dep) else z3.BoolVal(False)
    changes = [reverted] + ([merged] if merges(dep) else [])
    changes += [z3.And(is_["undo"], z3.Not(sel["present"]))] if reconstructs(dep) else []
    if merges(dep):
        out.append(z3.Implies(merged, room_for_two))
    entry = z3.Or(is_["edit"], merged) if merges(dep) else is_["edit"]
    return UndoTerms(reverted, changes[0] if len(changes) == 1 else z3.Or(changes), merged, entry)


def selected_target(dep, pick, s, sel: dict) -> None:
    """Under merge: the kind and edited flag of the undone edit's target, which the merge's record keeps."""
    if merges(dep):
        sel["target_kind"] = pick(s.kind, sel["target"], "sel_tkind")
        sel["target_edited"] = pick(s.edited, sel["target"], "sel_tedited")


def restored_edited(dep, u: UndoTerms, sel: dict):
    """The restored target's edited flag: the record's prior flag, true after a merge (a merge is an edit)."""
    return z3.If(u.merged, z3.BoolVal(True), sel["prior_edited"]) if merges(dep) else sel["prior_edited"]


def entry_fields(dep, u: UndoTerms, a, sel: dict) -> dict:
    """What a new record holds: an edit's (of the slot `a` names) or, under merge, the merge's (of the undone edit's
    target, 1 token, not a destroy)."""
    fields = {"target": a.arg, "rversion": sel["version"] + 1, "prior_kind": sel["kind"],
              "prior_edited": sel["edited"], "destroy": a.destroy,
              "tokens": z3.If(a.destroy, sel["tokens"], 1) if keeps_destroyed_content(dep) else z3.IntVal(1)}
    if not merges(dep):
        return fields
    m = u.merged
    return {"target": z3.If(m, sel["target"], a.arg), "rversion": z3.If(m, sel["target_version"] + 1,
                                                                       sel["version"] + 1),
            "prior_kind": z3.If(m, sel["target_kind"], sel["kind"]),
            "prior_edited": z3.If(m, sel["target_edited"], sel["edited"]),
            "destroy": z3.And(a.destroy, z3.Not(m)),
            "tokens": z3.If(z3.And(a.destroy, z3.Not(m)), sel["tokens"], 1) if keeps_destroyed_content(dep) else z3.IntVal(1)}


# The pair model (symbolic/parametric.py): ghost g's record undone, and the merge's allocation.

def pair_undoes(dep, is_: dict, selected, present, fresh, restorable=None, closed=None):
    """(the C3 revert, the edit is undone and its target written) for an undo of ghost g's record; under
    `destroy_record: id` whether the ghost's edit destroyed its target is unseen, so `restorable` is a free choice
    (a present record that cannot restore changes nothing, spec.runtime.restorable). Under `safe_undo: on`, `closed`
    (the closure check passes: the ghosts' live records are present, the unseen ones freely) gates it."""
    if gated(dep):
        is_ = {**is_, "undo": z3.And(is_["undo"], closed)}
    checked = dep.undo in ("versioned", "merge")
    usable = present if keeps_destroyed_content(dep) else z3.And(present, restorable)
    reverted = z3.And(is_["undo"], selected, usable, fresh if checked else z3.BoolVal(True))
    changes = [reverted] + ([z3.And(is_["undo"], selected, usable, z3.Not(fresh))] if merges(dep) else [])
    changes += [z3.And(is_["undo"], selected, z3.Not(present))] if reconstructs(dep) else []
    return reverted, changes[0] if len(changes) == 1 else z3.Or(changes)


def pair_entry(dep, is_: dict, a, merges_here):
    """An entry is written: an edit, or under merge an undo that merges: of a ghost's present record (`merges_here`)
    or of another edit, whose record and staleness are unseen (a.fresh is then a free choice)."""
    if not merges(dep):
        return is_["edit"]
    return z3.Or(is_["edit"], z3.And(is_["undo"], z3.Not(a.fresh), merges_here))


def entry_destroys(dep, is_: dict, a):
    """The new record copies its target (a destroy edit's, kept verbatim); a merge's record is 1 token."""
    if not keeps_destroyed_content(dep):
        return z3.BoolVal(False)
    return z3.And(a.destroy, is_["edit"]) if merges(dep) else a.destroy
