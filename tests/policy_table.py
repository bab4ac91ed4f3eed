"""The table of example policies with expected verdicts that every engine is run against."""

from prunecheck.checker.language.loader import expected_verdicts

from conftest import EXAMPLES

HOLD = {"C1": "holds", "C2": "holds", "C3": "holds", "C4": "holds", "P1": "holds", "R1": "holds", "T1": "holds"}
# T1 applies to every policy under tool_calls: on (the default, ADR 0033): a role-blind policy that evicts by
# position splits a tool call from its result (measured: violated within 5 actions by the bounded engine; the prover
# finds no invariant); one that evicts only by the window's size or only records keeps pairs together (proved).
SPLITS = {"T1": "violated"}
WINDOW = "deployment: {records: window, pins: self}\n"
# M1, A1 and J1 apply under `evidence: on` (the default, ADR 0035). Under the default `evicted: destroyed` a compaction
# keeps no tombstone of what it evicts (M1), and under `justification: unchecked` it evicts a span its own ledger entry
# cites (J1); nothing rewrites the decision log (A1, proved). Measured with both engines.
EVIDENCE = {"M1": "violated", "A1": "holds", "J1": "violated"}
# keep_last_3_records_in_window is about positions, not evidence: its C2 violation (an edit, three appends, the
# compaction that evicts the record) fills the 6 span slots, and under `evidence: on` the compaction's ledger entry
# needs a 7th, so within the default bound C2 would be unknown. It states the first seed's `evidence: "off"`.
WINDOW_FIRST_SEED = 'deployment: {records: window, pins: self, evidence: "off"}\n'
INLINE = {
    # Positions (spec/SPEC.md §1b); verdicts measured with both engines (tests/test_positions.py compares them).
    "keep_last_3.yaml": ("name: keep-last-3\nevict: from_end >= 3\n", {**HOLD, **SPLITS, **EVIDENCE}),
    "keep_last_3_records_in_window.yaml": (
        "name: keep-last-3\nevict: from_end >= 3\n" + WINDOW_FIRST_SEED,
        {**HOLD, "C1": "violated", "C2": "violated", **SPLITS}),
    "older_same_role_spares_records.yaml": (
        # C2 holds: the predicate excludes records and nothing truncates (no budget, host_truncation: off, SPEC §2).
        "name: older-same-role\nevict: from_end_in_role >= 1 and kind != 'record'\n" + WINDOW,
        {**HOLD, **SPLITS, **EVIDENCE}),
    "long_window_rationale_in_window.yaml": (
        "name: long-window\nevict: window_spans > 3 and turn >= 1\ndeployment: {rationale: window}\n",
        {**HOLD, "P1": "violated", **EVIDENCE}),
    # A policy whose C1 violation lies beyond the default depth: it may never be reported `holds` (its C2 violation,
    # the compaction that evicts the record C1 finds, is found within 4 actions).
    "late_violation.yaml": (
        "name: late-violation\n"
        "evict: kind == 'record' and age > 20\n"
        "deployment: {records: window, pins: self}\n",
        {"C1": "violated", "C2": "violated", "C3": "holds", "C4": "holds", "P1": "holds", "R1": "violated",
         "T1": "holds", **EVIDENCE},
    ),
}


def example_table():
    """(id, path or None, source text or None, expected {condition: verdict})."""
    rows = [(path.name, path, None, expected_verdicts(path)) for path in sorted(EXAMPLES.iterdir())
            if path.suffix != ".toml"]
    rows += [(name, None, text, expected) for name, (text, expected) in INLINE.items()]
    return rows
