"""Evidence edges on the pair model (spec/SPEC.md §6d): the ghost field `cited` and a compaction's ledger entry.

A citation joins an entry with an older span that need not be its neighbour, so each ghost carries `cited` ("some
live entry cites it"), projected from the runtime as exactly that. An edit or a compaction may cite a present ghost
(a free choice, `cite`); a compaction's citations stay only if it writes its entry (`wrote`, free unless the pair
shows the stage took something); an undo may clear `cited` (free, `uncite`: the undone edit may have been the
ghost's only citer); nothing else changes it. A compaction's ledger rationale is allocated like a summary
(`ledger_at`: r, q or elsewhere) and is marked `ledger` (for P1).
"""

from __future__ import annotations

import z3

from prunecheck.symbolic.model import K

K_RATIONALE = K["rationale"]
EVIDENCE_FIELDS = {"cited": z3.BoolSort(), "ledger": z3.BoolSort()}


def has_evidence(policy) -> bool:
    return policy.deployment.evidence == "on"


def action_choices(label: str, ghosts: tuple, ghost_sort) -> dict:
    """The free choices of a step under evidence."""
    c = lambda name, sort: z3.Const(f"{name}@{label}", sort)  # noqa: E731
    return {"cite": {g: c(f"cite_{g}", z3.BoolSort()) for g in ghosts},
            "uncite": {g: c(f"uncite_{g}", z3.BoolSort()) for g in ghosts},
            "wrote": c("wrote_entry", z3.BoolSort()), "ledger_at": c("ledger_at", ghost_sort)}


def choice_variables(choices: dict, ghosts: tuple) -> list:
    if not choices:
        return []
    return ([choices["cite"][g] for g in ghosts] + [choices["uncite"][g] for g in ghosts]
            + [choices["wrote"], choices["ledger_at"]])


def cited_now(model, s, g: str, a=None):
    """Ghost g counts as cited during the step: cited in s, or cited by the compaction a itself."""
    if not model.evidence:
        return z3.BoolVal(False)
    f = s.span[g]
    if a is None:
        return f["cited"]
    return z3.Or(f["cited"], z3.And(a.act == model.act_compact, a.evidence["cite"][g]))


def deferred(model, s, g: str, a=None):
    """`justification: defer` keeps a cited ghost out of the stage."""
    if not model.evidence or model.dep.justification != "defer":
        return z3.BoolVal(False)
    return cited_now(model, s, g, a)


def spared(model, s, g: str, a, term, keep: bool = False):
    """Under `justification: defer` a cited ghost is spared: kept (`keep`, term its keep) or no candidate (term the
    candidate's conjuncts); the same term as before without defer."""
    if not (model.evidence and model.dep.justification == "defer"):
        return term if keep else z3.And(*term)
    if keep:
        return z3.Or(term, deferred(model, s, g, a))
    return z3.And(*term, z3.Not(deferred(model, s, g, a)))


def downgraded(model, s, g: str, a):
    """`justification: downgrade` moves a cited ghost the compaction removes (or would mask) to the log."""
    if not model.evidence or model.dep.justification != "downgrade":
        return None
    return cited_now(model, s, g, a)


def guards(model, s, a, is_: dict, taken: dict, selected, blocked) -> list:
    """Citations name present ghosts, on an edit or a compaction; only an undo uncites; a ledger rationale at a
    ghost is allocated as a summary is (after the summary, if the policy summarises) by a compaction that wrote its
    entry, which it did if the pair saw the stage take a ghost (`taken`: after the refusal), and did not if the
    refusal `blocked` it (spec/SPEC.md §6d)."""
    if not model.evidence:
        return []
    e, sp = a.evidence, s.span
    citing = z3.Or(is_["edit"], is_["compact"])
    out = [z3.Implies(e["cite"][g], z3.And(citing, sp[g]["used"], s.present(g))) for g in ("r", "q")]
    out += [z3.Implies(e["uncite"][g], is_["undo"]) for g in ("r", "q")]
    out.append(z3.Implies(z3.Or(selected(e["ledger_at"], "r"), selected(e["ledger_at"], "q")),
                          z3.And(is_["compact"], e["wrote"])))
    out.append(z3.Implies(z3.And(is_["compact"], z3.Not(blocked), z3.Or(taken["r"], taken["q"])), e["wrote"]))
    out.append(z3.Implies(blocked, z3.Not(e["wrote"])))
    out.append(z3.Implies(e["wrote"], is_["compact"]))
    summary_at = {g: z3.And(is_["compact"], selected(a.ghost, g)) if model.summarising else z3.BoolVal(False)
                  for g in ("r", "q")}
    out.append(z3.Implies(selected(e["ledger_at"], "r"), z3.And(z3.Not(sp["r"]["used"]), z3.Not(summary_at["r"]),
                                                                z3.Not(summary_at["q"]))))
    out.append(z3.Implies(selected(e["ledger_at"], "q"), z3.And(z3.Not(sp["q"]["used"]), z3.Not(summary_at["q"]),
                                                                z3.Or(sp["r"]["used"], summary_at["r"]))))
    return out


def with_ledger(model, a, is_: dict, g: str, selected, rationale_here) -> tuple:
    """(a rationale is written at ghost g, the one written is a compaction's ledger rationale): a ledger rationale is
    written as an edit's rationale is (both false-free and unchanged without evidence)."""
    if not model.evidence:
        return rationale_here, z3.BoolVal(False)
    ledger = z3.And(is_["compact"], selected(a.evidence["ledger_at"], g))
    return z3.Or(rationale_here, ledger), ledger


def update(model, becomes, s, a, g: str, is_: dict, born, ledger) -> None:
    """Ghost g's `cited` and `ledger` after the step."""
    if not model.evidence:
        return
    e = a.evidence
    cites = z3.Or(z3.And(is_["edit"], e["cite"][g]), z3.And(is_["compact"], e["wrote"], e["cite"][g]))
    becomes("ledger", (ledger, True), (born, False))
    becomes("cited", (born, False), (cites, True), (z3.And(is_["undo"], e["uncite"][g]), False))


def removal(model, s, a, g: str, masked_now, gone) -> tuple:
    """(masked now, gone now, moved to the log now): see downgraded."""
    down = downgraded(model, s, g, a)
    if down is None:
        return masked_now, gone, None
    if model.dep.evicted == "logged":  # a removal goes to the log anyway: only a mask becomes a move
        return z3.And(masked_now, z3.Not(down)), gone, z3.And(masked_now, down)
    return z3.And(masked_now, z3.Not(down)), z3.And(gone, z3.Not(down)), z3.And(z3.Or(masked_now, gone), down)


def j1(model, s):
    """J1 at ghost r: cited and not present (r ranges over every span)."""
    if not model.evidence:
        return z3.BoolVal(False)
    return z3.And(s.span["r"]["used"], s.span["r"]["cited"], z3.Not(s.present("r")))


def ledger_lost(model, s):
    """P1's part for compactions at ghost r: a ledger rationale that is not present."""
    if not model.evidence:
        return z3.BoolVal(False)
    f = s.span["r"]
    return z3.And(f["used"], f["ledger"], z3.Not(s.present("r")))


def lemmas(model, s) -> list:
    """Candidate lemmas under evidence: a ledger rationale is a used rationale (Houdini keeps what is inductive)."""
    if not model.evidence:
        return []
    return [(f"ledger_is_rationale[{g}]", z3.Implies(s.span[g]["ledger"], z3.And(
        s.span[g]["used"], s.span[g]["kind"] == K_RATIONALE))) for g in ("r", "q")]
