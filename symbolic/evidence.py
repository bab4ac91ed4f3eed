"""Evidence edges on the unrolled model (spec/SPEC.md §6d): citations, compaction ledger entries, justification, J1."""

from __future__ import annotations

import z3

from prunecheck.spec.policy import Policy
from prunecheck.symbolic.terms import shortens_term


def has_evidence(policy: Policy) -> bool:
    """Whether the model carries citations and ledger entries: only under `evidence: on`, so old encodings stay
    byte-identical."""
    return policy.deployment.evidence == "on"


def evidence_fields(n: int) -> dict:
    """The slot fields of a model with evidence: `ledger` (the slot is a compaction's rationale) and `cite<j>` (the
    entry at this slot, an edit's record or a ledger rationale, cites slot j)."""
    return {"ledger": z3.BoolSort(), **{f"cite{j}": z3.BoolSort() for j in range(n)}}


def action_cites(k, n: int, tag: str) -> list:
    """An action's citations: one Boolean per slot (only edits and compactions cite)."""
    return [z3.Bool(f"{tag}acite{j}@{k}") for j in range(n)]


def cites_of(s, i: int) -> list:
    return [s.fields[f"cite{j}"][i] for j in range(s.n)]


def live_entry(s, i: int):
    """Slot i is a live entry: a not-undone edit's record, or a compaction's rationale (never undone)."""
    return z3.Or(s.live_edit(i), z3.And(s.used[i], s.ledger[i]))


def cited(s) -> list:
    """Per slot j: some live entry cites it."""
    return [z3.Or([z3.And(live_entry(s, i), s.fields[f"cite{j}"][i]) for i in range(s.n)]) for j in range(s.n)]


def cited_by_step(model, s, a) -> list:
    """Per slot: cited in s, or cited by the compaction a itself (its citations count while it runs)."""
    if not model.evidence:
        return [z3.BoolVal(False)] * model.n
    compacts = a.act == model.act_compact
    return [z3.Or(c, z3.And(compacts, a.cites[j])) for j, c in enumerate(cited(s))]


def deferred(model, s, a=None) -> list:
    """Per slot: `justification: defer` keeps it out of the stage (cited, by s or by the compaction a)."""
    if not model.evidence or model.dep.justification != "defer":
        return [z3.BoolVal(False)] * model.n
    return cited(s) if a is None else cited_by_step(model, s, a)


def moved(model, s, a, evicted: list) -> list:
    """Per slot: taken by the stage and, being cited under `justification: downgrade`, moved to the log (a cut that
    shortens nothing moves nothing either)."""
    if not model.evidence or model.dep.justification != "downgrade":
        return [z3.BoolVal(False)] * model.n
    return [z3.And(e, c, shortens_term(model.policy, s.tokens[i]))
            for i, (e, c) in enumerate(zip(evicted, cited_by_step(model, s, a)))]


def downgraded(model, s, a) -> list:
    """Per slot: a removal of it goes to the log (cited under `justification: downgrade`)."""
    if not model.evidence or model.dep.justification != "downgrade":
        return [z3.BoolVal(False)] * model.n
    return cited_by_step(model, s, a)


def ledger_written(model, s, a, evicted: list, blocked=None) -> list:
    """Per slot: the compaction's ledger rationale is written there (a stage that took a span writes one, after the
    summary if the policy summarises); a compaction the refusal `blocked` writes none."""
    if not model.evidence:
        return [z3.BoolVal(False)] * model.n
    took = z3.And(a.act == model.act_compact, z3.Or(evicted))
    took = took if blocked is None or z3.is_false(blocked) else z3.And(took, z3.Not(blocked))
    offset = 1 if model.placing else 0
    return [z3.And(took, s.first_free(i - offset)) if i >= offset else z3.BoolVal(False) for i in range(model.n)]


def ledger_in_window(model, s, a, evicted: list, walk: tuple) -> tuple:
    """The truncation's (rest, remaining, left, places) with a ledger rationale written into the window (`rationale:
    window`): it is written before the host's truncation, as a summary is, which may take it (at its own place)."""
    if not model.evidence or model.dep.rationale != "window":
        return walk
    rest, remaining, left, places = walk
    ledger = ledger_written(model, s, a, evicted)
    rest = rest + z3.If(z3.Or(ledger), 1, 0)
    remaining = [z3.Or(r, w) for r, w in zip(remaining, ledger)]
    left = [z3.If(w, 1, t) for w, t in zip(ledger, left)]
    if places is not None:
        places = [z3.If(w, i, p) for i, (w, p) in enumerate(zip(ledger, places))]
    return rest, remaining, left, places


def ledger_cut(model, ledger_here, truncated) -> tuple:
    """The ledger rationale the host truncates in the step that writes it (as a summary can be)."""
    return (z3.And(ledger_here, truncated),) if model.evidence and model.dep.rationale == "window" else ()


def guards(model, s, a, evicted: list) -> list:
    """Citations name used, present slots, only on an edit or a compaction; a compaction writing its entry needs
    the slots for it (and for its summary)."""
    if not model.evidence:
        return []
    citing = z3.Or(a.act == model.act_edit, a.act == model.act_compact)
    out = [z3.Implies(a.cites[j], z3.And(citing, s.used[j], s.present(j))) for j in range(model.n)]
    if model.token_domain is not None:
        # A model restricted to the explicit engine's domains takes its citation domain too: none or one span.
        out.append(z3.Sum([z3.If(c, 1, 0) for c in a.cites]) <= 1)
    needed = 1 + (1 if model.placing else 0)
    free = z3.Not(s.used[model.n - needed]) if model.n >= needed else z3.BoolVal(False)
    out.append(z3.Implies(z3.And(a.act == model.act_compact, z3.Or(evicted)), free))
    return out


def with_ledger(model, rationale_here, ledger: tuple) -> tuple:
    """(rationale written here, ledger rationale written here, a removal here is downgraded): a ledger rationale is
    written as an edit's rationale is, so it joins `rationale_here`."""
    ledger_here, down = ledger
    if not model.evidence:
        return rationale_here, ledger_here, down
    return z3.Or(rationale_here, ledger_here), ledger_here, down


def downgrade_removal(model, masked_now, gone, down) -> tuple:
    """(masked now, gone now, moved to the log now) for one slot: under `justification: downgrade` a cited span the
    compaction removes (or would mask) goes to the log instead; moved is None when nothing is downgraded. Under
    `evicted: logged` a removal goes there anyway: only a mask becomes a move."""
    if not model.evidence or model.dep.justification != "downgrade":
        return masked_now, gone, None
    if model.dep.evicted == "logged":
        return z3.And(masked_now, z3.Not(down)), gone, z3.And(masked_now, down)
    moved = z3.Or(z3.And(gone, down), z3.And(masked_now, down))
    return z3.And(masked_now, z3.Not(down)), z3.And(gone, z3.Not(down)), moved


def update_slot(model, becomes, a, i: int, born, record_here, ledger_here) -> None:
    """Slot i's evidence fields in the next state: a new edit's record or ledger rationale takes the action's
    citations, any other new span cites nothing."""
    if not model.evidence:
        return
    becomes("ledger", (ledger_here, True), (born, False))
    for j in range(model.n):
        becomes(f"cite{j}", (z3.Or(record_here, ledger_here), a.cites[j]), (born, False))


def j1_violated(model, g):
    """J1 on a state: some live entry cites a slot that is not present."""
    return z3.Or([z3.And(c, z3.Not(g.present(j))) for j, c in enumerate(cited(g))])


def ledger_rationale_lost(model, g):
    """P1's part for compactions: a ledger rationale that is not present (false without evidence)."""
    if not model.evidence:
        return z3.BoolVal(False)
    return z3.Or([z3.And(g.used[i], g.ledger[i], z3.Not(g.present(i))) for i in range(model.n)])
