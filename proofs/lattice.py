"""Theorem: the implication lattice among C1, C2, C3, C4 and P1, per deployment, with a witness per non-implication."""

from __future__ import annotations

from dataclasses import replace

from prunecheck.checker.check import check
from prunecheck.checker.loader import parse_policy_text
from prunecheck.checker.result import Verdict
from prunecheck.spec.conditions import CONDITIONS
from prunecheck.spec.policy import Deployment

from .theorem import TheoremResult, any_policy, prove_invariant, timed

NAME = "implication lattice"
STATEMENT = ("For each deployment (the safe design, each single setting flipped, the seed's), and each ordered pair of "
             "conditions (a, b): either every policy satisfying a satisfies b (proved on the parametric model "
             "restricted to the runs where a holds), or a witness policy satisfies a (proved) and violates b "
             "(a replayed trace).")
SAFE = Deployment()
DEPLOYMENTS = [("safe design", SAFE)] + [
    (f"{key}: {value}", replace(SAFE, **{key: value}))
    for key, value in (("records", "window"), ("rationale", "window"), ("pins", "self"), ("audit", "policy"),
                       ("undo", "blind"))] + [
    ("the seed's deployment", Deployment(records="window", pins="self", audit="policy"))]
WITNESSES = [
    "evict: true",
    "evict: kind not in ['record', 'rationale']\nbudget: 3",
    "evict: kind == 'record'",
    "evict: kind == 'rationale'",
    "evict: kind not in ['record', 'rationale'] and not pinned",
]


def lattice():
    """{deployment label: {(a, b): 'implies' | 'witness: <policy>' | 'open'}} and the witness verdict tables."""
    table = {}
    for label, deployment in DEPLOYMENTS:
        verdicts = {}
        for text in WITNESSES:
            policy = parse_policy_text(f"name: w\n{text}\n", "witness.yaml", deployment)
            report = check(policy, depth=6, spans=5, timeout=10.0)
            verdicts[text] = {r.condition: r.verdict for r in report.results}
        cells = {}
        for a in CONDITIONS:
            for b in CONDITIONS:
                if a == b:
                    continue
                proved, _, _ = prove_invariant(any_policy(deployment), b, free_policy=True, assume=[a])
                if proved:
                    cells[(a, b)] = "implies"
                    continue
                witness = next((t for t, v in verdicts.items()
                                if v[a] == Verdict.HOLDS and v[b] == Verdict.VIOLATED), None)
                cells[(a, b)] = f"witness: {witness}" if witness else "open"
        table[label] = cells
    return table


def markdown(table) -> str:
    lines = []
    for label, cells in table.items():
        lines += [f"**{label}** (row a, column b: a ⇒ b)", "", "| a \\ b | " + " | ".join(CONDITIONS) + " |",
                  "|---|" + "---|" * len(CONDITIONS)]
        for a in CONDITIONS:
            row = []
            for b in CONDITIONS:
                cell = "—" if a == b else cells[(a, b)]
                row.append({"implies": "⇒"}.get(cell, "✗ " + cell[9:].replace("\n", "; ") if cell.startswith("witness")
                                                   else cell))
            lines.append(f"| {a} | " + " | ".join(row) + " |")
        lines.append("")
    return "\n".join(lines)


def prove() -> TheoremResult:
    table, seconds = timed(lattice)
    cells = [c for cells in table.values() for c in cells.values()]
    open_cells = sum(1 for c in cells if c == "open")
    implied = sum(1 for c in cells if c == "implies")
    detail = (f"{len(cells)} ordered pairs over {len(table)} deployments: {implied} implications proved, "
              f"{len(cells) - implied - open_cells} refuted by a witness, {open_cells} open")
    return TheoremResult(NAME, STATEMENT, open_cells == 0, detail, seconds,
                         "witness traces replayed; implications z3 only (restricted model)", extra=markdown(table))
