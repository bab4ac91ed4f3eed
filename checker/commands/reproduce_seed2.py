"""The second seed's observation: a compaction whose selection rationale lived in a transcript it pruned (turn 112)."""

from __future__ import annotations

from prunecheck.spec.conditions import violations
from prunecheck.spec.runtime import Append, Audit, Compact, Edit, present

from prunecheck.checker.commands.observation import (Kind, Row, Run, checker_pair, deployment_words, scripted,
                                                   with_keys)
from prunecheck.checker.language.loader import parse_policy_text

# Compact at 80% of the budget; summarise the tool transcripts three steps old or older.
TURN_112_POLICY = """
name: seed2-turn-112
evict: kind == "tool_output" and age >= 3
effect: summarise
placeholder_tokens: 50
budget: 1000
when: 5 * window_tokens > 4 * budget
deployment: {evidence: "on"}
"""

RATIONALE_IN_WINDOW = """
name: seed2-rationale-in-window
evict: kind != "record" and not edited and age >= 3
deployment: {rationale: window}
"""

WORDS = ("the selection rationale ('ingest/v3 was superseded at turn 112') existed only inside the transcript of "
         "turn 112, which was among the pruned spans")
# The checker's rows are its own shortest traces on the same policy, not the turn-112 script: their words say so.
CHECKER_WORDS = "on the turn-112 policy, a compaction's cited evidence can be among the spans its stage takes"


def turn_112_run(policy) -> tuple:
    """Three transcripts (the last is turn 112), a message, then the compaction citing turn 112."""
    run = Run(policy)
    for _ in range(2):
        run.do(Append("tool_output", 300))
    turn = run.do(Append("tool_output", 300)).after.spans[-1].id
    run.do(Append("message", 100))
    run.do(Audit(2))
    return run, turn, run.do(Compact(cites=(turn,)))


def runtime_rows(policy) -> list:
    rows = []
    for row_id, kind, how in (("3a", Kind.FAILURE, "unchecked"), ("3b", Kind.PREVENTED, "downgrade")):
        variant = with_keys(policy, justification=how)
        run, turn, compaction = turn_112_run(variant)
        span = compaction.after.span(turn)
        lost = "J1" in violations(variant, compaction)
        where = "destroyed" if not span.alive else f"kept in the '{span.namespace}' namespace"
        rows.append(Row(row_id, kind, WORDS,
                        f"the 80% compaction cites span #{turn} and summarises {sorted(compaction.evicted)}; span "
                        f"#{turn} is {where}; J1 {'violated' if lost else 'holds'} on the runtime",
                        deployment_words(variant, "evidence", "justification"),
                        lost if kind is Kind.FAILURE else not lost and present(span),
                        scripted(a.action for a in run.transitions)))
    return rows


def rationale_entry_row() -> Row:
    """A related failure, not the seed's: the rationale entry itself stored in the window and evicted (P1)."""
    policy = parse_policy_text(RATIONALE_IN_WINDOW, "seed2-rationale-in-window.yaml")
    run = Run(policy)
    run.do(Append("tool_output", 300))
    transcripts = run.do(Append("tool_output", 300)).after.spans[-1].id
    edit = run.do(Edit(transcripts, "transform")).after.edits[-1]
    run.do(Audit(3))
    compaction = run.do(Compact())
    gone = edit.rationale in compaction.evicted and "P1" in violations(policy, compaction)
    return Row("3e", Kind.FAILURE, "related (not the seed's observation): the decision log itself is a pruning target",
               f"the compaction evicted rationale #{edit.rationale} of a live edit; P1 violated on the runtime",
               deployment_words(policy, "rationale"), gone)


def turn_112() -> tuple:
    policy = parse_policy_text(TURN_112_POLICY, "seed2-turn-112.yaml")
    rows = runtime_rows(policy)
    rows += checker_pair("3c", "3d", CHECKER_WORDS, "J1", policy, ("evidence", "justification"),
                         {"justification": "downgrade"})
    rows.append(rationale_entry_row())
    return "3. Second seed: the rationale for a compaction lived in a span the compaction removed", rows
