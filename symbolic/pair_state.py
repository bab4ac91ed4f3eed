"""The pair model's state, action and step: the ghost spans r and q, their fields, and one abstract step's choices
(symbolic/parametric.py builds its transition relation over them)."""

from __future__ import annotations

import z3

from prunecheck.spec.policy import POSITION_ATTRS, window_aggregate
from prunecheck.symbolic import pair_evidence
from prunecheck.symbolic.model import ACT, K, NS, R
from prunecheck.symbolic.terms import Frac, KindSort, NamespaceSort, RoleSort, window_env
from prunecheck.symbolic.evidence_terms import TOMBSTONE_FIELD

GHOSTS = ("r", "q")
# Constructor names are unique across every enumeration sort, so that SMT-LIB text is unambiguous.
GhostSort, (G_R, G_Q, G_OTHER) = z3.EnumSort("Ghost", ("ghost_r", "ghost_q", "elsewhere"))
AllocSort, (A_REC_R, A_RAT_R, A_REC_Q, A_OTHER) = z3.EnumSort(
    "EditAlloc", ("record_at_r", "rationale_at_r", "record_at_q", "allocated_elsewhere"))
FIELDS = {
    "used": z3.BoolSort(), "alive": z3.BoolSort(), "kind": KindSort, "ns": NamespaceSort, "tokens": z3.IntSort(),
    "created": z3.IntSort(), "last_read": z3.IntSort(), "reads": z3.IntSort(), "pinned": z3.BoolSort(),
    "edited": z3.BoolSort(), "version": z3.IntSort(), "undone": z3.BoolSort(),
}
ROLE_FIELD = {"role": RoleSort}  # only in a model whose policy reads roles (PairModel.roles): nothing else can tell
# Positions are free per-state counters (spec/SPEC.md §1b), only in a model whose policy reads one
# (PairModel.positions).
SPAN_POSITIONS = tuple(name for name in POSITION_ATTRS if name != "window_spans")
MASKED_FIELD = {"masked": z3.BoolSort()}  # only in a model whose policy masks or reads `masked` (PairModel.masking)
# Only in a model whose policy summarises and reads positions (PairModel.summaries): the ghost is a summary, whose
# place is not its id (spec/SPEC.md 4d).
SUMMARY_FIELD = {"summary": z3.BoolSort()}
DEFAULTS = {z3.BoolSort(): z3.BoolVal(False), z3.IntSort(): z3.IntVal(0), KindSort: K["message"],
            NamespaceSort: NS["window"], RoleSort: R["user"]}


class PairState:
    """The clock, the window's token count as the policy sees it, and the fields of the ghost spans r and q."""

    def __init__(self, label: str, roles: bool = False, positions: bool = False, masked: bool = False,
                 summaries: bool = False, names: tuple = (), tombstones: bool = False, evidence: bool = False,
                 aggregates: tuple = ()):
        """roles, positions, masked: whether the state has the ghosts' roles, the positional counters with the
        window's span count, and the ghosts' masked flags; names: the tool/tag fields (codes, spec/SPEC.md 1c) with
        their mentioned names (only for a policy that needs them: the pair model of any other policy stays what it
        was)."""
        self.label, self.names = label, names
        self.clock = z3.Int(f"clock@{label}")
        self.window_tokens = z3.Int(f"window_tokens@{label}")
        fields = {**FIELDS, **(ROLE_FIELD if roles else {}), **(MASKED_FIELD if masked else {}),
                  **(SUMMARY_FIELD if summaries else {}), **{attr: z3.IntSort() for attr, _table in names},
                  **(TOMBSTONE_FIELD if tombstones else {}), **(pair_evidence.EVIDENCE_FIELDS if evidence else {})}
        self.span = {g: {name: z3.Const(f"{name}_{g}@{label}", sort) for name, sort in fields.items()}
                     for g in GHOSTS}
        self.window_spans = z3.Int(f"window_spans@{label}") if positions else None
        self.counters = {g: {name: z3.Int(f"{name}_{g}@{label}") for name in SPAN_POSITIONS} if positions else {}
                         for g in GHOSTS}
        # The aggregates the policy reads (SPEC §1e), free per-state counters too: the window's once, the others
        # per ghost; keyed by their nodes, as the environments that read them.
        self.window_aggregates = {node: z3.Int(f"agg{k}@{label}") for k, node in enumerate(aggregates)
                                  if window_aggregate(node)}
        for g in GHOSTS:
            self.counters[g].update({node: z3.Int(f"agg{k}_{g}@{label}") for k, node in enumerate(aggregates)
                                     if not window_aggregate(node)})

    def variables(self) -> list:
        counters = [v for g in GHOSTS for v in self.counters[g].values()]
        counters += [self.window_spans] if self.window_spans is not None else []
        counters += list(self.window_aggregates.values())
        return [self.clock, self.window_tokens] + [v for g in GHOSTS for v in self.span[g].values()] + counters

    def positions(self, g: str) -> dict:
        """Ghost g's positional span attributes and aggregates as terms, with the window's aggregates (empty in a
        model without positions)."""
        return {**self.counters[g], **self.window_aggregates}

    def window(self, budget) -> dict:
        """The window attributes the policy reads in this state, as z3 terms."""
        env = window_env(self.clock, Frac(self.window_tokens), budget, self.window_spans)
        return {**env, **{node: Frac(term) for node, term in self.window_aggregates.items()}}

    def is_record(self, g: str):
        return z3.And(self.span[g]["used"], self.span[g]["kind"] == K["record"])

    def live_edit(self, g: str):
        return z3.And(self.is_record(g), z3.Not(self.span[g]["undone"]))

    def present(self, g: str):
        """Ghost g is alive and not masked (just alive, the same term, in a model without masks)."""
        f = self.span[g]
        return z3.And(f["alive"], z3.Not(f["masked"])) if "masked" in f else f["alive"]

    def in_window(self, g: str):
        return z3.And(self.span[g]["alive"], self.span[g]["ns"] == NS["window"])


class PairAction:
    """The choices of one abstract step: the action, which ghost it touches, and the unobserved outcomes."""

    def __init__(self, label: str, roles: bool = False, together: bool = False, leads: bool = False,
                 names: tuple = (), evidence: bool = False, gated: bool = False, triggers: tuple = (),
                 events: tuple = ()):
        """together (`pairs: together`): also choose whether the partner outside the pair of r (its call r-1) and of
        q (its result q+1) was taken; leads (`start_on`): whether each ghost is among the leading spans it takes;
        names: an append's tool and tag codes, for these attributes only."""
        c = lambda name, sort: z3.Const(f"{name}@{label}", sort)  # noqa: E731
        self.act = c("act", ACT["append"].sort())
        self.ghost = c("ghost", GhostSort)
        self.alloc = c("alloc", AllocSort)
        self.target = c("target", GhostSort)
        self.restore = c("restore", GhostSort)
        self.kind = c("akind", KindSort)
        self.tokens = c("atokens", z3.IntSort())
        self.other_tokens = c("other_tokens", z3.IntSort())
        self.destroy = c("adestroy", z3.BoolSort())
        self.fresh = c("fresh", z3.BoolSort())
        self.restorable = c("restorable", z3.BoolSort())  # destroy_record: id: the undone edit was no destroy
        self.prior_kind = c("prior_kind", KindSort)
        self.prior_edited = c("prior_edited", z3.BoolSort())
        self.role = c("arole", RoleSort) if roles else None
        self.names = names
        for attr, _table in names:
            setattr(self, attr, c(f"a{attr}", z3.IntSort()))
        self.policy = {g: c(f"policy_{g}", z3.BoolSort()) for g in GHOSTS}
        self.chosen = {g: c(f"chosen_{g}", z3.BoolSort()) for g in GHOSTS}
        self.truncate = {g: c(f"truncate_{g}", z3.BoolSort()) for g in GHOSTS}
        self.partner = {g: c(f"partner_taken_{g}", z3.BoolSort()) for g in GHOSTS} if together else None
        # With pairs together: whether the unseen partner is kept (so the ghost is not taken), and the keep of each
        # ghost when the policy is abstracted.
        self.dropped = {g: c(f"partner_kept_{g}", z3.BoolSort()) for g in GHOSTS} if together else None
        self.kept = {g: c(f"kept_{g}", z3.BoolSort()) for g in GHOSTS} if together else None
        self.lead = {g: c(f"lead_{g}", z3.BoolSort()) for g in GHOSTS} if leads else None
        self.refusal: dict = {}  # the refusal's free choices (symbolic/refusal.py refusal_choices), if it has any
        self.evidence = pair_evidence.action_choices(label, GHOSTS, GhostSort) if evidence else {}
        # `safe_undo: on`: whether the unseen live edits all have their records (the closure check may pass).
        self.closed = c("closed_elsewhere", z3.BoolSort()) if gated else None
        # What the host tells a compaction (spec/SPEC.md §4g), as the unrolled model's SymAction has it.
        self.triggers, self.events = triggers, events
        self.event = c("aevent", z3.IntSort()) if "event" in triggers else None
        self.reported = c("areported", z3.IntSort()) if "reported_tokens" in triggers else None

    def variables(self) -> list:
        scalars = [self.act, self.ghost, self.alloc, self.target, self.restore, self.kind, self.tokens,
                   self.other_tokens, self.destroy, self.fresh, self.restorable, self.prior_kind, self.prior_edited]
        scalars += [self.role] if self.role is not None else []
        scalars += [getattr(self, attr) for attr, _table in self.names]
        choices = (self.policy, self.chosen, self.truncate) + (
            (self.partner, self.dropped, self.kept) if self.partner is not None else ())
        choices += (self.lead,) if self.lead is not None else ()
        return (scalars + [d[g] for d in choices for g in GHOSTS] + list(self.refusal.values())
                + pair_evidence.choice_variables(self.evidence, GHOSTS) + ([self.closed] if self.closed is not None
                                                                           else [])
                + [v for v in (self.event, self.reported) if v is not None])


class PairStep:
    """One encoded abstract step: constraints, and the terms the step conditions refer to."""

    def __init__(self, constraints, reverted_r, fresh, compact_removes_record_r, compaction=(None, None, None),
                 post=None, absent_undo_r=z3.BoolVal(False), blocked=None, removed=None):
        self.constraints = constraints
        self.reverted_r = reverted_r
        self.absent_undo_r = absent_undo_r  # the undo of r's record writes its target although it is not present
        self.fresh = fresh
        self.compact_removes_record_r = compact_removes_record_r
        # the pre-state, "the step compacts", and per ghost: taken by the stage (not by the host's truncation)
        self.pre, self.compacts, self.taken = compaction
        self.removed = removed  # per ghost: taken by the stage out of the window (not masked or cut in place)
        self.post = post  # the post-state, for the step conditions that compare fields (M1, A1, X1)
        self.blocked = blocked  # the compaction is blocked (SPEC §6e)
