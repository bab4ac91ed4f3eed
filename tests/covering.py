"""A small deterministic t-wise covering-array generator (greedy, seeded) with constraints between columns.

Columns are (name, values); a constraint is a predicate over a partial row (a dict of some columns' values) that is
false when the values it sees cannot go together (it must accept any row missing a column it reads). A t-tuple of
values is *feasible* when some complete valid row holds it; `covering_array` returns valid rows that hold every
feasible t-tuple, and `missing_targets` lists what any list of rows leaves out.

`extra` asks for more: (columns, strength) groups whose every feasible tuple of that strength must be held too (a
mixed-strength array: 3-wise among the columns whose interactions matter most, pairwise elsewhere).

The greedy construction is AETG's in spirit: each new row starts from the first uncovered tuple, then fills the
remaining columns, in a seeded random order, with the value that covers most uncovered tuples together with the
columns already set (ties to the earlier value), keeping the row completable.
"""

from __future__ import annotations

import itertools
import random
from typing import Callable, Iterable, Sequence

Constraint = Callable[[dict], bool]


def _valid(row: dict, constraints: Sequence[Constraint]) -> bool:
    return all(c(row) for c in constraints)


def completable(columns: Sequence[tuple], constraints: Sequence[Constraint], row: dict) -> dict | None:
    """A complete valid row extending `row` (backtracking, values in column order), or None."""
    if not _valid(row, constraints):
        return None
    free = [(name, values) for name, values in columns if name not in row]
    if not free:
        return dict(row)
    name, values = free[0]
    for value in values:
        found = completable(columns, constraints, {**row, name: value})
        if found is not None:
            return found
    return None


def tuples_of(columns: Sequence[tuple], strength: int) -> Iterable[tuple]:
    """Every t-tuple of values, as ((column, value), ...) in column order."""
    for chosen in itertools.combinations(columns, strength):
        for values in itertools.product(*(vs for _, vs in chosen)):
            yield tuple(zip((name for name, _ in chosen), values))


def feasible_tuples(columns: Sequence[tuple], constraints: Sequence[Constraint], strength: int) -> list:
    """The t-tuples some complete valid row holds."""
    return [t for t in tuples_of(columns, strength) if completable(columns, constraints, dict(t)) is not None]


def targets(columns: Sequence[tuple], constraints: Sequence[Constraint], strength: int = 2, extra=()) -> list:
    """The tuples a covering array must hold: every feasible t-tuple, and each extra group's feasible tuples."""
    out = feasible_tuples(columns, constraints, strength)
    seen = set(out)
    for group, group_strength in extra:
        chosen = [(name, values) for name, values in columns if name in set(group)]
        for t in tuples_of(chosen, group_strength):
            if t not in seen and completable(columns, constraints, dict(t)) is not None:
                seen.add(t)
                out.append(t)
    return out


def missing_targets(columns: Sequence[tuple], constraints: Sequence[Constraint], rows: Sequence[dict],
                    strength: int = 2, extra=()) -> list:
    """The targets (see `targets`) no row holds."""
    return [t for t in targets(columns, constraints, strength, extra)
            if not any(all(row[n] == v for n, v in t) for row in rows)]


def covering_array(columns: Sequence[tuple], constraints: Sequence[Constraint] = (), strength: int = 2,
                   seed: int = 0, extra=()) -> list:
    """Valid rows (dicts over every column) together holding every feasible t-tuple (and each extra group's);
    deterministic for a seed."""
    rng = random.Random(seed)
    names = [name for name, _ in columns]
    values = dict(columns)
    todo = targets(columns, constraints, strength, extra)
    missing = set(todo)
    by_column = _by_column(missing)
    rows = []
    while missing:
        first = next(t for t in todo if t in missing)
        row = dict(first)
        rest = [n for n in names if n not in row]
        rng.shuffle(rest)
        for name in rest:
            best, best_gain = None, -1
            for value in values[name]:
                trial = {**row, name: value}
                if completable(columns, constraints, trial) is None:
                    continue
                gain = _gain(trial, name, by_column.get(name, ()))
                if gain > best_gain:
                    best, best_gain = value, gain
            row[name] = best
        missing -= {t for t in missing if all(row[n] == v for n, v in t)}
        by_column = _by_column(missing)
        rows.append({n: row[n] for n in names})
    return rows


def _by_column(missing: set) -> dict:
    out: dict = {}
    for t in missing:
        for name, _value in t:
            out.setdefault(name, []).append(t)
    return out


def _gain(row: dict, name: str, candidates: list) -> int:
    """The uncovered tuples through column `name` that `row` (with `name` set) now holds entirely."""
    return sum(1 for t in candidates if all(n in row and row[n] == v for n, v in t))
