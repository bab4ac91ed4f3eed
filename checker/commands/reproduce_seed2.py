"""The second seed's observation (turn 112: its rationale pruned with the transcript that held it), as far as built."""

from __future__ import annotations

from prunecheck.spec.conditions import violations
from prunecheck.spec.runtime import Append, Audit, Compact, Edit

from prunecheck.checker.commands.reproduce import Kind, Row, Run, deployment_words
from prunecheck.checker.language.loader import parse_policy_text

RATIONALE_IN_WINDOW = """
name: seed2-rationale-in-window
evict: kind != "record" and not edited and age >= 3
deployment: {rationale: window}
"""


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
    # The turn-112 rows need the evidence slice (J1, `cites`; branch `just`, docs/design/seeds.md §2.2); until it
    # lands, only the related P1 failure is shown, and the claim table says turn 112 is not yet built.
    return "3. Second seed: the decision log as a pruning target (turn 112 itself: not yet built)", [
        rationale_entry_row()]
