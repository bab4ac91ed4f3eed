"""Candidate structural invariants of the model: templates over slots that an induction check may confirm."""

from __future__ import annotations

import z3

from prunecheck.spec.policy import name_code, reads_roles
from prunecheck.symbolic.evidence import live_entry
from prunecheck.symbolic.model import CONTENT, K, NS, R, Model, SymState


def lemma_key(model: Model) -> tuple:
    """What candidate_lemmas reads of a model besides its step template's key (symbolic/template.py template_key),
    so that lemmas remembered on a shared template are those this model would have proved."""
    return (reads_roles(model.policy),)


def candidate_lemmas(model: Model, s: SymState, keep=None) -> list:
    """(name, term) pairs, only those named in `keep` if given; each is a guess until an induction check keeps it."""
    n, dep, slots = model.n, model.dep, model.slots
    record_ns = NS["undo"] if dep.records == "undo_region" else NS["window"]
    rationale_ns = NS["log"] if dep.rationale == "decision_log" else NS["window"]
    out = [("clock_nonnegative", s.clock >= 0)] if keep is None or "clock_nonnegative" in keep else []
    (roles,), role = lemma_key(model), R[dep.record_role]
    written = [(attr, name_code(table, dep.record_tool if attr == "tool" else "")) for attr, table in model.names]

    for i in range(n):
        used, kind = s.used[i], s.kind[i]
        is_record = z3.And(used, kind == K["record"])
        is_rationale = z3.And(used, kind == K["rationale"])

        def add(name, make):
            if keep is None or f"{name}[{i}]" in keep:
                out.append((f"{name}[{i}]", make()))

        if i + 1 < n:
            add("prefix", lambda: z3.Implies(s.used[i + 1], used))
            add("rationale_follows_record", lambda: z3.Implies(is_record, z3.And(s.used[i + 1], s.kind[i + 1] == K["rationale"])))
        else:
            add("last_slot_not_record", lambda: z3.Not(is_record))
        if i > 0:
            add("record_precedes_rationale", lambda: z3.Implies(is_rationale, s.kind[i - 1] == K["record"]))
            older = z3.Or([s.target[i] == slots[j] for j in range(i)])
            add("target_older", lambda: z3.Implies(is_record, older))
        else:
            add("first_slot_not_rationale", lambda: z3.Not(is_rationale))
            add("first_slot_not_record", lambda: z3.Not(is_record))
        add("unused_absent", lambda: z3.Implies(z3.Not(used), z3.And(z3.Not(s.alive[i]), z3.Not(s.undone[i]),
                                                             kind != K["record"], kind != K["rationale"])))
        add("record_namespace", lambda: z3.Implies(is_record, s.ns[i] == record_ns))
        add("rationale_namespace", lambda: z3.Implies(is_rationale, s.ns[i] == rationale_ns))
        add("content_in_window", lambda: z3.Implies(z3.And(used, _content(kind)), s.ns[i] == NS["window"]))
        add("record_alive", lambda: z3.Implies(is_record, s.alive[i]))
        add("rationale_alive", lambda: z3.Implies(is_rationale, s.alive[i]))
        add("times_ordered", lambda: z3.Implies(used, z3.And(0 <= s.created[i], s.created[i] <= s.last_read[i],
                                                     s.last_read[i] <= s.clock)))
        add("reads_bounded", lambda: z3.Implies(used, z3.And(0 <= s.reads[i], s.reads[i] <= s.last_read[i] - s.created[i])))
        add("tokens_positive", lambda: z3.Implies(used, s.tokens[i] >= 1))
        add("version_nonnegative", lambda: z3.Implies(used, s.version[i] >= 0))
        add("host_pins_records", lambda: z3.Implies(z3.Or(is_record, is_rationale), s.pinned[i]))
        add("undone_only_records", lambda: z3.Implies(s.undone[i], is_record))
        add("record_prior_content", lambda: z3.Implies(is_record, _content(s.prior_kind[i])))
        if roles:
            add("records_have_record_role", lambda: z3.Implies(z3.Or(is_record, is_rationale), s.role[i] == role))
        for attr, code in written:
            add(f"records_have_record_{attr}", lambda: z3.Implies(z3.Or(is_record, is_rationale), s.fields[attr][i] == code))
        if model.masking:
            add("record_unmasked", lambda: z3.Implies(z3.Or(is_record, is_rationale), z3.Not(s.masked[i])))
        if model.evidence:
            _evidence_lemmas(s, i, add, is_record, is_rationale)
        for j in range(i):
            add(f"target_content_{j}", lambda: z3.Implies(z3.And(is_record, s.target[i] == slots[j]),
                                                  z3.And(s.used[j], _content(s.kind[j]),
                                                         1 <= s.rversion[i], s.rversion[i] <= s.version[j])))
    return out


def _content(kind):
    return z3.Or([kind == c for c in CONTENT])


def _evidence_lemmas(s: SymState, i: int, add, is_record, is_rationale) -> None:
    """Slot i's citation structure under `evidence: on`: unused slots cite nothing, only entries cite, and only
    older slots; a live entry's citations are present (J1, kept only where the deployment makes it inductive); a
    rationale follows its record unless it is a compaction's ledger entry."""
    n, used = s.n, s.used[i]
    if i > 0:
        add("record_or_ledger_precedes_rationale", lambda: z3.Implies(z3.And(is_rationale, z3.Not(s.ledger[i])),
                                                                      s.kind[i - 1] == K["record"]))
    cite = [s.fields[f"cite{j}"][i] for j in range(n)]
    add("unused_cites_nothing", lambda: z3.Implies(z3.Not(used), z3.And(z3.Not(s.ledger[i]), *map(z3.Not, cite))))
    add("ledger_is_rationale", lambda: z3.Implies(s.ledger[i], is_rationale))
    add("only_entries_cite", lambda: z3.Implies(z3.Or(cite), z3.Or(is_record, is_rationale)))
    add("cites_older", lambda: z3.And([z3.Not(c) for c in cite[i:]]))
    add("cited_present", lambda: z3.Implies(z3.Or([z3.And(live_entry(s, j), s.fields[f"cite{i}"][j])
                                                    for j in range(n)]), s.present(i)))
