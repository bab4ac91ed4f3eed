"""Theorem: the implication lattice among the conditions, per deployment, with a witness per non-implication."""

from __future__ import annotations

from dataclasses import replace

from prunecheck.checker.engines.bmc import check_bounded
from prunecheck.checker.engines.certificate import Status
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.spec.actions import action_text
from prunecheck.checker.result import Verdict
from prunecheck.spec.conditions import applicable
from prunecheck.spec.policy import Deployment

from prunecheck.proofs.theorem import (RLIMIT, TIMEOUT, TheoremResult, any_policy, induction_label, prove_invariant,
                                       timed)

NAME = "implication lattice"
STATEMENT = ("For each deployment (the safe design of both seeds, each single setting flipped, the first seed's, and "
             "records in the window with the confabulating undo), and each ordered pair of "
             "the conditions that apply there to every policy (C1-C4, P1 and T1; M1, A1 and J1 unless evidence: off, U1 "
             "with missing_record: reconstruct, X1 with refusal: sequential; not R1, which is about a policy's text) "
             "(a, b): either a implies b on every run of every policy (a run along which a holds at "
             "every step keeps b at every step; proved on the parametric model restricted to such runs, with the "
             "policy free), or a witness trace, replayed on the runtime, keeps a at every step and violates b.")
# The safe design of both seeds (examples/policies/seed_safe_design.yaml's deployment): the defaults, with tombstones
# and downgrades, which the defaults do not assume (ADR 0035).
SAFE = Deployment(evicted="tombstone", justification="downgrade")
# The first seed's: records in the window, self pins, a self-certified audit, no evidence ledger, verbatim records
# (as `reproduce` states it).
FIRST_SEED = Deployment(records="window", pins="self", audit="policy", evidence="off", destroy_record="verbatim")
# The seeds' conditions: those that apply to every policy (T1 too, under the default `tool_calls: on`). R1 is left
# out: it is about the policy's text, and with the policy free its pair term is "some recovery span is present", an
# over-approximation of its violation that is sound as Bad but not as an assumption (it would "prove" R1 => C1).
# Issue 16's gated conditions join in the deployments that switch them on (U1; X1); M1, A1 and J1 are on by default
# and leave under `evidence: off` (ADR 0035).
CONDITIONS = tuple(c for c in applicable(any_policy(SAFE)) if c != "R1")
DEPLOYMENTS = [("safe design", SAFE)] + [
    (f"{key}: {value}", replace(SAFE, **{key: value}))
    for key, value in (("records", "window"), ("rationale", "window"), ("pins", "self"), ("audit", "policy"),
                       ("undo", "blind"), ("evidence", "off"), ("missing_record", "reconstruct"),
                       ("refusal", "sequential"))] + [
    ("the seed's deployment", FIRST_SEED),
    ("records: window, missing_record: reconstruct", replace(SAFE, records="window", missing_record="reconstruct"))]


def conditions_of(deployment) -> tuple:
    """The conditions the lattice relates under `deployment`: those that apply to every policy there, but R1."""
    return tuple(c for c in applicable(any_policy(deployment)) if c != "R1")
WITNESSES = [
    "evict: true",
    "evict: kind not in ['record', 'rationale']\nbudget: 3",
    "evict: kind == 'record'",
    "evict: kind == 'rationale'",
    "evict: kind not in ['record', 'rationale'] and not pinned",
    "evict: kind == 'message' or namespace == 'undo'",
    # The policy's own truncation alone: with 1-token records (destroy_record: id) the budget witness above needs
    # more slots than the search has to take a record; this one takes the oldest spans, a record among them.
    "evict: false\nbudget: 1",
]


def _witness(deployment, a: str, b: str):
    """A replayed trace of some witness policy that keeps a at every step and ends violating b, as text."""
    for text in WITNESSES:
        policy = parse_policy_text(f"name: w\n{text}\n", "witness.yaml", deployment)
        (result,) = check_bounded(policy, depth=6, spans=5, conditions=[b], timeout=TIMEOUT, rlimit=RLIMIT,
                                  assume=[a])
        if result.verdict == Verdict.VIOLATED:
            steps = "; ".join(action_text(x, keywords=True) for x in result.trace.actions)
            return f"{text.replace(chr(10), '; ')} :: {steps}"
    return None


def lattice():
    """{deployment label: {(a, b): 'implies' | 'witness: <policy> :: <trace>' | 'open'}}."""
    table = {}
    for label, deployment in DEPLOYMENTS:
        cells = {}
        conditions = conditions_of(deployment)
        for a in conditions:
            for b in conditions:
                if a == b:
                    continue
                proved, rechecked, _ = prove_invariant(any_policy(deployment), b, free_policy=True, assume=[a])
                if proved:
                    cells[(a, b)] = "implies" if rechecked is Status.CONFIRMED else f"implies ({rechecked})"
                    continue
                witness = _witness(deployment, a, b)
                cells[(a, b)] = f"witness: {witness}" if witness else "open"
        table[label] = cells
    return table


def markdown(table) -> str:
    lines = []
    for label, cells in table.items():
        conditions = tuple(dict.fromkeys(a for a, _ in cells))
        lines += [f"**{label}** (row a, column b: a ⇒ b)", "", "| a \\ b | " + " | ".join(conditions) + " |",
                  "|---|" + "---|" * len(conditions)]
        for a in conditions:
            row = []
            for b in conditions:
                cell = "—" if a == b else cells[(a, b)]
                row.append("⇒" if cell == "implies" else "✗ " + cell[9:] if cell.startswith("witness") else
                           "⇒ " + cell[8:] if cell.startswith("implies") else cell)
            lines.append(f"| {a} | " + " | ".join(row) + " |")
        lines.append("")
    return "\n".join(lines)


def cases() -> list:
    """(policy, condition) pairs the lattice's implications are proved for: each column b of each deployment (the
    assumption a restricts the runs; a column whose violation term is False is implied by construction)."""
    return [(any_policy(deployment), b) for _label, deployment in DEPLOYMENTS
            for a in conditions_of(deployment) for b in conditions_of(deployment) if a != b]


def label():
    return induction_label(cases())


def prove() -> TheoremResult:
    return result_of(*timed(lattice))


def result_of(table, seconds: float) -> TheoremResult:
    """The theorem's result for a lattice table computed in `seconds`."""
    cells = [c for cells in table.values() for c in cells.values()]
    open_cells = sum(1 for c in cells if c == "open")
    implied = sum(1 for c in cells if c.startswith("implies"))
    confirmed = sum(1 for c in cells if c == "implies")
    detail = (f"{len(cells)} ordered pairs over {len(table)} deployments: {implied} implications proved, "
              f"{len(cells) - implied - open_cells} refuted by a witness, {open_cells} open")
    return TheoremResult(NAME, STATEMENT, open_cells == 0, detail, seconds,
                         f"cvc5 {confirmed}/{implied} implications; witness traces replayed", extra=markdown(table))
