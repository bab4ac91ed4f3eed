"""Candidate invariants of the parametric model, over the ghost pair (r, q = r+1), plus the conditions themselves."""

from __future__ import annotations

import z3

from prunecheck.spec.conditions import STATE_CONDITIONS
from prunecheck.symbolic import pair_evidence
from prunecheck.symbolic.conditions import pair_violation
from prunecheck.spec.policy import name_code
from prunecheck.symbolic.model import CONTENT, K, NS, R
from prunecheck.symbolic.parametric import GHOSTS, PairModel, PairState, covered_tokens


def pair_candidates(model: PairModel, s: PairState) -> list:
    """(name, term) pairs; guesses until an induction check keeps them."""
    dep = model.dep
    record_ns = NS["undo"] if dep.records == "undo_region" else NS["window"]
    rationale_ns = NS["log"] if dep.rationale == "decision_log" else NS["window"]
    sp = s.span
    out = [("clock_nonnegative", s.clock >= 0),
           ("window_covers_pair", s.window_tokens >= covered_tokens(s)),
           ("prefix", z3.Implies(sp["q"]["used"], sp["r"]["used"])),
           ("record_r_then_rationale_q", z3.Implies(s.is_record("r"), z3.And(sp["q"]["used"],
                                                                             sp["q"]["kind"] == K["rationale"]))),
           ("rationale_q_after_record_r", z3.Implies(z3.And(sp["q"]["used"], sp["q"]["kind"] == K["rationale"]),
                                                     s.is_record("r")))]
    for g in GHOSTS:
        f = sp[g]
        used, kind = f["used"], f["kind"]
        is_record = z3.And(used, kind == K["record"])
        is_rationale = z3.And(used, kind == K["rationale"])
        content = z3.And(used, z3.Or([kind == c for c in CONTENT]))
        out += [
            (f"unused_absent[{g}]", z3.Implies(z3.Not(used), z3.And(z3.Not(f["alive"]), z3.Not(f["undone"]),
                                                                    kind != K["record"], kind != K["rationale"]))),
            (f"record_namespace[{g}]", z3.Implies(is_record, f["ns"] == record_ns)),
            (f"rationale_namespace[{g}]", z3.Implies(is_rationale, f["ns"] == rationale_ns)),
            (f"content_in_window[{g}]", z3.Implies(content, f["ns"] == NS["window"])),
            (f"record_alive[{g}]", z3.Implies(is_record, f["alive"])),
            (f"rationale_alive[{g}]", z3.Implies(is_rationale, f["alive"])),
            (f"times_ordered[{g}]", z3.Implies(used, z3.And(0 <= f["created"], f["created"] <= f["last_read"],
                                                            f["last_read"] <= s.clock))),
            (f"reads_bounded[{g}]", z3.Implies(used, z3.And(0 <= f["reads"],
                                                            f["reads"] <= f["last_read"] - f["created"]))),
            (f"tokens_positive[{g}]", z3.Implies(used, f["tokens"] >= 1)),
            (f"created_after_start[{g}]", z3.Implies(used, f["created"] >= 1)),
            # A record is written by an edit of a span appended at an earlier step.
            (f"record_after_its_target[{g}]", z3.Implies(is_record, f["created"] >= 2)),
            (f"version_nonnegative[{g}]", z3.Implies(used, f["version"] >= 0)),
            (f"host_pins_records[{g}]", z3.Implies(z3.Or(is_record, is_rationale), f["pinned"])),
            (f"undone_only_records[{g}]", z3.Implies(f["undone"], is_record)),
            (f"records_never_edited[{g}]", z3.Implies(z3.Or(is_record, is_rationale),
                                                      z3.And(z3.Not(f["edited"]), f["version"] == 0))),
        ]
    if model.roles:
        out += [(f"records_have_record_role[{g}]", z3.Implies(z3.And(sp[g]["used"], z3.Or(
            sp[g]["kind"] == K["record"], sp[g]["kind"] == K["rationale"])), sp[g]["role"] == R[dep.record_role]))
            for g in GHOSTS]
    for attr, table in model.names:  # records and rationale carry the edit tool's name and no tag
        code = name_code(table, dep.record_tool if attr == "tool" else "")
        out += [(f"records_have_record_{attr}[{g}]", z3.Implies(z3.And(sp[g]["used"], z3.Or(
            sp[g]["kind"] == K["record"], sp[g]["kind"] == K["rationale"])), sp[g][attr] == code)) for g in GHOSTS]
    if model.masking:
        out += [(f"{name}_unmasked[{g}]", z3.Implies(z3.And(sp[g]["used"], sp[g]["kind"] == K[name]),
                                                      z3.Not(sp[g]["masked"])))
                for name in ("record", "rationale") for g in GHOSTS]
    # J1 has no terms without evidence: its lemma is left out there, so that those invariants stay as they were.
    out += [(f"not {c}", z3.Not(pair_violation(model, c, s, None))) for c in STATE_CONDITIONS
            if c != "J1" or model.evidence]
    out += pair_evidence.lemmas(model, s)
    return out
