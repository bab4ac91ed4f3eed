"""A batch's summary: the table (rich on a terminal, aligned text otherwise) and the tally line, from its items."""

from __future__ import annotations

from typing import Sequence

from prunecheck.spec.conditions import CONDITIONS

from prunecheck.checker.result import counted


def verdict_label(item) -> str:
    """A batch item's verdict as the summary prints it, or why it has none."""
    if item.report is None:
        return "internal error" if item.internal else "error"
    return str(item.report.verdict)


def _columns(items) -> list:
    """The conditions some item has a verdict for, in CONDITIONS order."""
    present = {r.condition for item in items if item.report is not None for r in item.report.results}
    return [c for c in CONDITIONS if c in present]


def _rows(items) -> list:
    conditions = _columns(items)
    rows = []
    for item in items:
        verdicts = {r.condition: str(r.verdict) for r in item.report.results} if item.report is not None else {}
        rows.append([item.path, verdict_label(item)] + [verdicts.get(c, "-") for c in conditions]
                    + [f"{item.seconds:.2f}", "yes" if item.cached else "no"])
    return rows


def summary_table(items: Sequence):
    """A rich Table: policy, verdict, one column per checked condition (✓ holds, ✗ violated, ? unknown), seconds,
    cached."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from prunecheck.checker.outputs.terminal import terminal_safe

    styles = {"holds": "green", "violated": "bold red", "unknown": "yellow", "error": "magenta",
              "internal error": "bold magenta"}
    marks = {"holds": "✓", "violated": "✗", "unknown": "?"}
    conditions = _columns(items)
    table = Table(title=counted(len(items), "policy", "policies"), caption="✓ holds  ✗ violated  ? unknown",
                  box=box.SIMPLE_HEAD)
    table.add_column("policy", overflow="fold", ratio=1)
    for name in ["verdict"] + conditions + ["seconds", "cached"]:
        table.add_column(name, justify="right" if name == "seconds" else "left", no_wrap=True)
    for row in _rows(items):
        cells = [Text(terminal_safe(row[0])), Text(row[1], style=styles.get(row[1], ""))]
        cells += [Text(marks.get(cell, cell), style=styles.get(cell, "")) for cell in row[2:2 + len(conditions)]]
        cells += [Text(cell) for cell in row[2 + len(conditions):]]
        table.add_row(*cells)
    return table


def summary_text(items: Sequence) -> str:
    """The summary table as aligned plain text (for non-terminals), then a tally line."""
    header = ["policy", "verdict"] + _columns(items) + ["seconds", "cached"]
    rows = [header] + _rows(items)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.rjust(w) if i == len(header) - 2 else cell.ljust(w)
                       for i, (cell, w) in enumerate(zip(row, widths))).rstrip() for row in rows]
    return "\n".join(lines + [tally(items)])


def tally(items: Sequence) -> str:
    counts = {}
    for item in items:
        counts[verdict_label(item)] = counts.get(verdict_label(item), 0) + 1
    order = ["violated", "unknown", "holds", "error", "internal error"]
    parts = [f"{counts[k]} {k}" for k in order if k in counts]
    cached = sum(item.cached for item in items)
    rejected = sum(item.rejected for item in items)
    line = f"{counted(len(items), 'policy', 'policies')}: {', '.join(parts)}; {cached} from the cache"
    if rejected:
        line += f"; {rejected} cache {'entry' if rejected == 1 else 'entries'} rejected and re-solved"
    accepted = sum(len(item.accepted) for item in items)
    if accepted:
        line += f"; {accepted} finding{'s' if accepted != 1 else ''} accepted"
    unexpected = sum(len(item.unexpected) for item in items)
    if unexpected:
        line += f"; {counted(unexpected, 'verdict')} not as the policy's expect table says"
    return line


__all__ = ["summary_table", "summary_text", "tally", "verdict_label"]
