"""`prunecheck reproduce`: each seed observation re-run on the runtime and re-found by the checker, next to its fix."""

from __future__ import annotations

from typing import TextIO

from prunecheck.checker.commands.reproduce_seed1 import demonstration, observed_failure
from prunecheck.checker.commands.reproduce_seed2 import turn_112


def print_rows(out: TextIO, title: str, rows) -> None:
    print(title, file=out)
    for row in rows:
        print(f"  {row.id}. seed:  {row.seed}", file=out)
        print(f"      found: {row.found}  [{row.label()}]", file=out)


def run_all(out: TextIO) -> int:
    """Every scenario; exit 0 iff every row comes out as the seed describes."""
    rows = []
    for scenario in (observed_failure, demonstration, turn_112):
        title, found = scenario()
        print_rows(out, title, found)
        print(file=out)
        rows += found
    good = sum(row.ok for row in rows)
    tally = {}
    for row in rows:
        if row.ok:
            tally[row.tally()] = tally.get(row.tally(), 0) + 1
    print(f"{good} of {len(rows)} observations come out as the seeds describe: "
          + ", ".join(f"{n} {what}" for what, n in tally.items()), file=out)
    return 0 if good == len(rows) else 1
