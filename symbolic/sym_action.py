"""The action a step of the unrolled model takes (its variables), the slot sort they range over, and one encoded
step's terms."""

from __future__ import annotations

import z3

from prunecheck.symbolic import evidence
from prunecheck.symbolic.terms import KindSort, RoleSort

ACTIONS = ("append", "edit", "read", "pin", "unpin", "compact", "undo", "audit")
# Constructors are prefixed so that SMT-LIB text stays unambiguous (`undo` is also a namespace).
ActionSort, ACTION_CONSTS = z3.EnumSort("Action", [f"do_{name}" for name in ACTIONS])
ACT = dict(zip(ACTIONS, ACTION_CONSTS))

_slot_sorts: dict = {}


def slot_sort(n: int):
    """The finite sort of slot indices 0..n-1 (one per n, made once)."""
    if n not in _slot_sorts:
        _slot_sorts[n] = z3.EnumSort(f"Slot{n}", [f"s{i}of{n}" for i in range(n)])
    return _slot_sorts[n]


class SymAction:
    """The variables choosing the action taken from state k."""

    def __init__(self, k: int, n: int, tag: str = "", names: tuple = (), cites: bool = False, triggers: tuple = (),
                 events: tuple = ()):
        self.names = names  # mentioned_names: an append's tool and tag codes exist only for these attributes
        # What the host tells a compaction (spec/SPEC.md §4g), only for the trigger attributes the policy reads: the
        # event's code (0..len(events), as a tool name's) and the usage the last call reported.
        self.triggers, self.events = triggers, events
        self.event = z3.Int(f"{tag}aevent@{k}") if "event" in triggers else None
        self.reported = z3.Int(f"{tag}areported@{k}") if "reported_tokens" in triggers else None
        self.cites = evidence.action_cites(k, n, tag) if cites else []  # spec/SPEC.md §6d
        self.act = z3.Const(f"{tag}act@{k}", ActionSort)
        self.arg = z3.Const(f"{tag}arg@{k}", slot_sort(n)[0])
        self.kind = z3.Const(f"{tag}akind@{k}", KindSort)
        self.tokens = z3.Int(f"{tag}atokens@{k}")
        self.destroy = z3.Bool(f"{tag}adestroy@{k}")
        # A compaction's host budget: `hosted` says the host imposes one, `host` is its value (free per step).
        self.hosted = z3.Bool(f"{tag}ahosted@{k}")
        self.host = z3.Int(f"{tag}ahost@{k}")
        # How many times a read or audit is repeated (an accelerated step); 1 for every other action.
        self.times = z3.Int(f"{tag}atimes@{k}")
        self.role = z3.Const(f"{tag}arole@{k}", RoleSort)
        for attr, _table in names:
            setattr(self, attr, z3.Int(f"{tag}a{attr}@{k}"))

    def variables(self) -> list:
        """The action's variables, in the fixed order the step template substitutes them."""
        return ([self.act, self.arg, self.kind, self.tokens, self.destroy, self.hosted, self.host, self.times,
                 self.role] + [getattr(self, attr) for attr, _table in self.names] + self.cites
                + [v for v in (self.event, self.reported) if v is not None])


class StepTerms:
    """One encoded step: its constraints, and the terms that conditions on the step refer to."""

    def __init__(self, constraints, reverted, fresh, evicted=()):
        self.constraints = constraints
        self.reverted = reverted
        self.fresh = fresh
        self.evicted = list(evicted)  # per slot: taken by the compaction stage (not by the host's truncation)
