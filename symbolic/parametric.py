"""The parametric model: one arbitrary span pair (r, r+1) tracked exactly, every other span abstracted away.

For any number of spans, any run of the runtime projects onto any pair of ids (r, r+1) as a run of this
system: the actions on other spans become nondeterministic choices, `window_tokens` is free, a ranked compaction
may evict the pair's candidates whenever the runtime could, any compaction with a truncation (the policy's own
budget, or a host's under `host_truncation: on`) may truncate the pair's live window spans, and the positions a
policy reads are free per-state counters, constrained only by what every run satisfies (spec/SPEC.md §1b). An
invariant of this system over the pair therefore holds for every pair, at every depth, in windows of every size.
"""

from __future__ import annotations

from dataclasses import replace
from typing import List

import z3

from prunecheck.spec.stage import stage_target
from prunecheck.spec.state import host_truncates
from prunecheck.symbolic.model import ACT, ACTIONS, CONTENT, K, NS, R
from prunecheck.symbolic import pair_evidence
from prunecheck.symbolic.span_terms import attribute_env, name_guards, trigger_env, trigger_guards, write_names
from prunecheck.symbolic.refusal import refusal_choices, refused_pair
from prunecheck.spec.policy import (AGGREGATES, IN_PLACE, Attr, BoolLit, Num, Policy, masks, mentioned_names,
                                    mentioned_events, read_positions, read_triggers, reads_attribute, reads_roles,
                                    summarises)
from prunecheck.symbolic.terms import ExprEncoder, Frac, left_tokens_term, one_stage, shortens_term
from prunecheck.symbolic.evidence_terms import has_tombstones, write_tombstone
from prunecheck.symbolic.undo_terms import entry_destroys, gated, pair_closed, pair_entry, pair_undoes
from prunecheck.symbolic.pair_state import (  # noqa: F401 (re-exported: the pair model's public names)
    A_OTHER, A_RAT_R, A_REC_Q, A_REC_R, DEFAULTS, FIELDS, G_OTHER, G_Q, G_R, GHOSTS, MASKED_FIELD, ROLE_FIELD,
    SPAN_POSITIONS, SUMMARY_FIELD, AllocSort, GhostSort, PairAction, PairState, PairStep)


def free_view(policy: Policy) -> Policy:
    """All of the policy that its pair model with the policy abstracted may read: the deployment and the stage's
    form (whether it walks ranked to a budget, has a budget, tracks masks; its effect, placeholder, pairs and summary
    role), every expression a fixed stand-in. That model is built from this view alone, so the view is a complete key
    for whatever is made from it (checker/engines/certificate_model.py free_shape)."""
    ranked = policy.rank is not None and policy.budget is not None
    reads_masked = policy.effect not in IN_PLACE and reads_attribute(policy, "masked")
    return replace(Policy("", Attr("masked") if reads_masked else BoolLit(True), deployment=policy.deployment),
                   rank=Num(0) if ranked else None, budget=None if policy.budget is None else 1,
                   effect=policy.effect, placeholder_tokens=policy.placeholder_tokens, pairs=policy.pairs,
                   summary_role=policy.summary_role)


class PairModel:
    """The abstract transition system for one policy; with free_policy the policy is any predicate at all, and the
    model reads only the policy's free_view."""

    def __init__(self, policy: Policy, free_policy: bool = False):
        policy = free_view(one_stage(policy)) if free_policy else one_stage(policy)
        self.policy, self.dep, self.free_policy = policy, policy.deployment, free_policy
        self.positions = not free_policy and bool(read_positions(policy) or policy.aggregates)
        self.together = policy.pairs == "together"
        # Roles tell tool-call pairs apart: present when the policy reads them or takes pairs together.
        self.roles = (not free_policy and reads_roles(policy)) or self.together
        self.masking = masks(policy)
        self.summarising = summarises(policy)
        self.summaries = self.summarising and self.positions  # ghosts know whether they are summaries
        # start_on's leading spans are a choice per ghost; with the policy abstracted the free selection covers them.
        self.leads = not free_policy and policy.start_on is not None
        self.names = () if free_policy else mentioned_names(policy)
        # What the host tells a compaction (§4g), for the trigger attributes the policy reads (none when abstracted).
        self.triggers = () if free_policy else read_triggers(policy)
        self.events = () if free_policy else mentioned_events(policy)
        # With a target (or the legacy ranked walk), whether each of the pair's candidates is taken is free (with
        # the policy abstracted the candidates are free anyway, and the model stays that of its free shape).
        ranked = policy.rank is not None and policy.budget is not None
        self.walked = ranked if free_policy else stage_target(policy) is not None
        self.evidence, self.act_compact = pair_evidence.has_evidence(policy), ACT["compact"]  # spec/SPEC.md §6d

    def state(self, label: str) -> PairState:
        """A state with this model's fields (roles, positions and masks only when the policy needs them)."""
        return PairState(label, self.roles, self.positions, self.masking, self.summaries, self.names,
                         has_tombstones(self.dep), self.evidence, self.policy.aggregates if self.positions else ())

    def action(self, label: str) -> PairAction:
        return refusal_choices(self.dep, PairAction(label, self.roles, self.together, self.leads, self.names,
                                                    self.evidence, gated(self.dep), self.triggers, self.events),
                               label)

    def encode_init(self, s: PairState) -> List:
        out = [s.clock == 0] + window_bounds(s)
        out += [v == DEFAULTS[v.sort()] for g in GHOSTS for v in s.span[g].values()]
        return out + self.position_facts(s)

    def evict(self, s: PairState, g: str, a: PairAction = None):
        """The policy's selection of ghost g in s (evict and not keep); a free choice (a.policy) when the policy is
        abstracted. With positions, the counters' facts are part of it, so that a state condition's Bad (no Trans)
        knows them too."""
        if self.free_policy:
            return a.policy[g]
        env = attribute_env(s.clock, s.span[g], Frac(s.window_tokens), self.policy.budget, s.window_spans,
                            s.positions(g), self.names)
        encoder = ExprEncoder(env)
        selected = encoder.encode(self.policy.evict)
        if self.policy.keep is not None:
            selected = z3.And(selected, z3.Not(encoder.encode(self.policy.keep)))
        return z3.And(self.position_facts(s) + [selected]) if self.positions else selected

    def triggered(self, s: PairState, a: PairAction):
        """The stage's trigger in s for the compaction a (exact: it reads only window attributes and what the host
        tells the compaction, §4g); true without one or when abstracted."""
        if self.free_policy or self.policy.when is None:
            return z3.BoolVal(True)
        trigger = ExprEncoder({**s.window(self.policy.budget), **trigger_env(a)}).encode(self.policy.when)
        return z3.And(self.position_facts(s) + [trigger]) if self.positions else trigger

    def position_facts(self, s: PairState) -> list:
        """What every concrete run's positional counters satisfy (spec/SPEC.md §1b); none without positions."""
        if not self.positions:
            return []
        c, sp, ws = s.counters, s.span, s.window_spans
        out = [ws >= 0] + [v >= 0 for g in GHOSTS for v in c[g].values()]
        out.append(ws >= z3.Sum([z3.If(s.in_window(g), 1, 0) for g in GHOSTS]))
        for g in GHOSTS:
            out.append(z3.Implies(s.in_window(g), z3.And(
                c[g]["position"] + c[g]["from_end"] + 1 == ws, c[g]["from_end_in_role"] <= c[g]["from_end"],
                c[g]["turn"] <= c[g]["from_end"], c[g]["tokens_after"] >= c[g]["from_end"],
                s.window_tokens >= c[g]["tokens_after"] + sp[g]["tokens"])))
        out += self.aggregate_facts(s)
        if self.summarising:
            # A summary stands at the place of the oldest span it replaced, and an undo brings a summarised span back
            # to its own place, beside the summary: two consecutive ids need not be adjacent in window order then.
            return out
        r, q = c["r"], c["q"]
        adjacent = [r["from_end"] == q["from_end"] + 1, q["position"] == r["position"] + 1,
                    r["tokens_after"] == q["tokens_after"] + sp["q"]["tokens"]]
        if self.roles:
            role_r, role_q = sp["r"]["role"], sp["q"]["role"]
            adjacent.append(r["turn"] == q["turn"] + z3.If(role_q == R["user"], 1, 0))
            # Only for equal roles: otherwise the two counts are over different roles.
            adjacent.append(z3.Implies(role_q == role_r, r["from_end_in_role"] == q["from_end_in_role"] + 1))
        out.append(z3.Implies(z3.And(s.in_window("r"), s.in_window("q")), z3.And(adjacent)))
        return out

    def aggregate_facts(self, s: PairState) -> list:
        """What every concrete run's aggregates satisfy (SPEC §1e): none is negative; the window's holds each ghost
        of the window its condition holds for, and splits into a ghost's newer and older ones and its own share; one
        counted from a ghost is at most the corresponding position; and, where r and q stand side by side (no
        summaries), r's newer ones are q's and q's share, q's older ones r's and r's share."""
        nodes = self.policy.aggregates
        c, sp = s.counters, s.span
        holds = {node: {g: ExprEncoder(attribute_env(s.clock, sp[g], Frac(s.window_tokens), None, None, None,
                                                     self.names)).encode(node.args[0]) for g in GHOSTS}
                 for node in nodes}

        def share(node, g):
            value = 1 if AGGREGATES[node.fn][1] == "spans" else sp[g]["tokens"]
            return z3.If(z3.And(s.in_window(g), holds[node][g]), value, 0)

        def sibling(node, side):
            measure = AGGREGATES[node.fn][1]
            return next((m for m in nodes if AGGREGATES[m.fn] == (side, measure) and m.args == node.args), None)

        out = []
        bounds = {("newer", "spans"): "from_end", ("older", "spans"): "position", ("newer", "tokens"): "tokens_after"}
        for node in nodes:
            side, measure = AGGREGATES[node.fn]
            if side == "window":
                v = s.window_aggregates[node]
                out += [v >= z3.Sum([share(node, g) for g in GHOSTS]),
                        v <= (s.window_spans if measure == "spans" else s.window_tokens)]
                newer, older = sibling(node, "newer"), sibling(node, "older")
                for g in GHOSTS:
                    parts = [c[g][m] for m in (newer, older) if m is not None]
                    if parts:
                        relation = (v == z3.Sum(parts) + share(node, g)) if len(parts) == 2 else \
                            (v >= parts[0] + share(node, g))
                        out.append(z3.Implies(s.in_window(g), relation))
                continue
            for g in GHOSTS:
                out.append(c[g][node] >= 0)
                if (side, measure) in bounds:
                    out.append(z3.Implies(s.in_window(g), c[g][node] <= c[g][bounds[side, measure]]))
            if not self.summarising:
                near, far = ("r", "q") if side == "newer" else ("q", "r")
                out.append(z3.Implies(z3.And(s.in_window("r"), s.in_window("q")),
                                      c[near][node] == c[far][node] + share(node, far)))
        return out

    def candidate(self, s: PairState, g: str, a: PairAction = None):
        return pair_evidence.spared(self, s, g, a, (s.in_window(g), self.evict(s, g, a)))

    def encode_step(self, s: PairState, a: PairAction, t: PairState) -> PairStep:
        now = s.clock + 1
        is_ = {name: a.act == ACT[name] for name in ACTIONS}
        sp = s.span
        merges_here = z3.Or(a.ghost == G_OTHER, *(z3.And(_selected(a.ghost, g), s.present(g)) for g in GHOSTS))
        is_["entry"] = pair_entry(self.dep, is_, a, merges_here)  # an edit's or a merge's record and rationale
        out = self._guards(s, a, t, is_, now)
        # Which undo reverts (C3) and which writes its target: the ghost's own record per the deployment's options
        # (spec/SPEC.md §4e); any other edit's freely.
        closed = pair_closed(self.dep, s, a) if gated(self.dep) else None
        undoes = {g: pair_undoes(self.dep, is_, _selected(a.ghost, g), s.present(g), a.fresh, a.restorable, closed)
                  for g in GHOSTS}
        reverted = {g: undoes[g][1] for g in GHOSTS}
        any_revert = z3.Or(reverted["r"], reverted["q"], z3.And(is_["undo"], a.ghost == G_OTHER))
        target_tokens = z3.If(a.target == G_R, sp["r"]["tokens"], z3.If(a.target == G_Q, sp["q"]["tokens"],
                                                                          a.other_tokens))
        taken, blocked = refused_pair(self, s, a, self.taken(s, a), out,
                                      (is_["compact"], {g: _selected(a.ghost, g) for g in GHOSTS}))
        out += pair_evidence.guards(self, s, a, is_, taken, _selected, blocked)
        removes = {g: self._ghost_update(s, a, t, g, is_, now, out, (reverted[g], any_revert, taken[g]),
                                         target_tokens) for g in GHOSTS}
        absent = z3.And(reverted["r"], z3.Not(s.present("r")))
        return PairStep(out, undoes["r"][0], a.fresh, removes["r"], (s, is_["compact"], taken), t, absent, blocked,
                        {g: self.stage_removes(s, a, g, taken[g]) for g in GHOSTS})

    def stage_removes(self, s: PairState, a: PairAction, g: str, taken):
        """Ghost g leaves the window by the stage: taken, unless the effect masks or cuts in place; under
        `justification: downgrade` a cited mask or cut is a move to the log (SPEC §6d), which does leave it."""
        if self.policy.effect not in IN_PLACE:
            return taken
        down = pair_evidence.downgraded(self, s, g, a)
        if down is None:
            return z3.BoolVal(False)
        return z3.And(taken, down, shortens_term(self.policy, s.span[g]["tokens"]))

    def is_pair(self, s: PairState):
        """r and q (= r+1) are a tool call and its result; without roles in the model, any two content spans may be."""
        r, q = s.span["r"], s.span["q"]
        both = [r["used"], q["used"], _content(r["kind"]), _content(q["kind"])]
        if self.roles:
            both += [r["role"] == R["tool_call"], q["role"] == R["tool_result"]]
        return z3.And(both)

    def taken(self, s: PairState, a: PairAction) -> dict:
        """Per ghost: taken by the stage (its trigger, selection and walk), then with `pairs: together` closed under
        pairs as the runtime's pair_closure: a taken span whose partner in the window is kept is not taken, and the
        partner of a taken span is taken unless kept. A partner outside the pair (r-1 of a result r, q+1 of a call
        q) is unseen, so what it does is a free choice."""
        chosen = {}
        for g in GHOSTS:
            candidate = z3.And(self.triggered(s, a), self.candidate(s, g, a)) if self.policy.when is not None \
                else self.candidate(s, g, a)
            chosen[g] = z3.And(candidate, a.chosen[g]) if self.walked else candidate
        chosen = self.start_on(s, a, chosen)
        if not self.together:
            return chosen
        pair, sp, other = self.is_pair(s), s.span, {"r": "q", "q": "r"}
        kept = {g: self.kept(s, g, a) for g in GHOSTS}
        unseen = {"r": z3.And(_content(sp["r"]["kind"]), sp["r"]["role"] == R["tool_result"]),
                  "q": z3.And(_content(sp["q"]["kind"]), sp["q"]["role"] == R["tool_call"])}
        stays = {g: z3.And(chosen[g], z3.Not(z3.And(pair, s.in_window(other[g]), kept[other[g]])),
                           z3.Not(z3.And(unseen[g], a.dropped[g]))) for g in GHOSTS}
        return {g: z3.Or(stays[g], z3.And(s.in_window(g), z3.Not(kept[g]), z3.Or(
            z3.And(pair, stays[other[g]]), z3.And(unseen[g], a.partner[g])))) for g in GHOSTS}

    def start_on(self, s: PairState, a: PairAction, chosen: dict) -> dict:
        """Per ghost: `chosen` or among start_on's leading spans (SPEC 4b): the trigger held, it is left (in the
        window, neither chosen nor kept), of another role, and no span left before it has start_on's role. For r that
        last is unseen, a free choice (a.lead[r]: "clear before r"); for q it is "clear before r, and r is not a left
        span of the role" when the spans before q are r and those before r, else free (a.lead[q])."""
        if not self.leads:
            return chosen
        role, sp = R[self.policy.start_on], s.span
        left = {g: z3.And(s.in_window(g), z3.Not(chosen[g]), z3.Not(self.kept(s, g, a))) for g in GHOSTS}
        after_r, follows = z3.And(a.lead["r"], z3.Not(z3.And(left["r"], sp["r"]["role"] == role))), self.follows(s)
        clear = {"r": a.lead["r"], "q": after_r if z3.is_true(follows) else z3.If(follows, after_r, a.lead["q"])}
        return {g: z3.Or(chosen[g], z3.And(self.triggered(s, a), left[g], sp[g]["role"] != role, clear[g]))
                for g in GHOSTS}

    def follows(self, s: PairState):
        """The spans before q in window order are r (when in the window) and the spans before r: ids are window
        order (SPEC 1b) unless the policy summarises; a summary may stand at a place r left (SPEC 4d), so then
        nothing is assumed."""
        return z3.BoolVal(not self.summarising)

    def kept(self, s: PairState, g: str, a: PairAction):
        """The stage's `keep` on ghost g: a free choice when the policy is abstracted, false without a keep; under
        `justification: defer` a cited ghost is kept too."""
        return pair_evidence.spared(self, s, g, a, self._kept(s, g, a), keep=True)

    def _kept(self, s: PairState, g: str, a: PairAction):
        if self.free_policy:
            return a.kept[g]
        if self.policy.keep is None:
            return z3.BoolVal(False)
        env = attribute_env(s.clock, s.span[g], Frac(s.window_tokens), self.policy.budget, s.window_spans,
                            s.positions(g), self.names)
        return ExprEncoder(env).encode(self.policy.keep)

    def _guards(self, s: PairState, a: PairAction, t: PairState, is_: dict, now) -> list:
        """The step's frame (clock, window tokens, argument domains) and the runtime's guards, restricted to what the
        pair can see."""
        sp = s.span
        out = [t.clock == now] + window_bounds(t) + [a.tokens >= 1, a.other_tokens >= 1,
               _content(a.kind), _content(a.prior_kind)] + self.position_facts(s)
        out += [z3.Implies(is_["append"], g) for g in name_guards(a, self.names)]
        out += trigger_guards(a, is_["compact"])
        if self.roles:  # a result appended at q answers r (naming its tool); one appended at r answers r-1, unseen
            same_tool = [a.tool == sp["r"]["tool"]] if "tool" in sp["r"] else []
            answers = z3.And(_content(sp["r"]["kind"]), sp["r"]["role"] == R["tool_call"], s.in_window("r"), *same_tool)
            out.append(z3.Implies(z3.And(is_["append"], a.ghost == G_Q, a.role == R["tool_result"]), answers))
        if self.policy.budget is None and not host_truncates(self.policy):
            # Nothing truncates: the policy declares no truncation and the host truncates nothing (SPEC §2).
            out += [z3.Not(a.truncate[g]) for g in GHOSTS]
        # An edit's target was appended at some step >= 1, so no edit happens from the empty window's clock 0.
        out.append(z3.Implies(is_["edit"], s.clock >= 1))
        # A summary is allocated as an append is; `ghost` names where (elsewhere: at neither ghost).
        allocates = z3.Or(is_["append"], is_["compact"]) if self.summarising else is_["append"]
        out.append(z3.Implies(z3.And(allocates, a.ghost == G_R), z3.Not(sp["r"]["used"])))
        out.append(z3.Implies(z3.And(allocates, a.ghost == G_Q),
                              z3.And(sp["r"]["used"], z3.Not(sp["q"]["used"]))))
        out.append(z3.Implies(z3.And(is_["entry"], z3.Or(a.alloc == A_REC_R, a.alloc == A_RAT_R)),
                              z3.Not(sp["r"]["used"])))
        out.append(z3.Implies(z3.And(is_["entry"], a.alloc == A_REC_Q), z3.And(sp["r"]["used"], z3.Not(sp["q"]["used"]))))
        for g in GHOSTS:
            f = sp[g]
            out.append(z3.Implies(z3.And(is_["edit"], _selected(a.target, g)),
                                  z3.And(f["used"], f["alive"], f["ns"] == NS["window"], _content(f["kind"]))))
            for name in ("read", "pin", "unpin"):
                guard = [f["used"], f["alive"]]
                if name != "read":
                    guard.append(f["pinned"] == (name == "unpin"))
                    if self.dep.pins == "host":
                        guard.append(_content(f["kind"]))
                out.append(z3.Implies(z3.And(is_[name], _selected(a.ghost, g)), z3.And(guard)))
            out.append(z3.Implies(z3.And(is_["undo"], _selected(a.ghost, g)),
                                  z3.And(self_is_record(f), z3.Not(f["undone"]))))
            out.append(z3.Implies(z3.And(is_["undo"], _selected(a.restore, g)), z3.And(f["used"], _content(f["kind"]))))
        return out

    def _ghost_update(self, s: PairState, a: PairAction, t: PairState, g: str, is_: dict, now, out: list,
                      undo: tuple, target_tokens):
        """Ghost g's fields after the step, as equations into out; returns the term "the compaction removes g's
        record" (used for r)."""
        dep, f, n = self.dep, s.span[g], t.span[g]
        reverted, any_revert, evicted = undo
        appended = z3.And(is_["append"], _selected(a.ghost, g))
        record_here = z3.And(is_["entry"], a.alloc == (A_REC_R if g == "r" else A_REC_Q))
        rationale_here = z3.And(is_["entry"], a.alloc == (A_REC_R if g == "q" else A_RAT_R))
        written = (z3.And(is_["compact"], _selected(a.ghost, g)),) if self.summarising else ()  # a summary at g
        rationale_here, ledger = pair_evidence.with_ledger(self, a, is_, g, _selected, rationale_here)
        born = z3.Or(appended, record_here, rationale_here, *written)
        edited_here, read_here = z3.And(is_["edit"], _selected(a.target, g)), z3.And(is_["read"], _selected(a.ghost, g))
        restored = z3.And(any_revert, _selected(a.restore, g))
        # Truncation (the policy's own to its budget, the host's under host_truncation: on, to any budget at any
        # compaction) is a free choice; _guards forbids it when neither exists.
        masking, logged = self.policy.effect in IN_PLACE, dep.evicted == "logged"
        # A span masked by the stage stays in the window, where the host's truncation may still remove it.
        truncated = z3.And(f["alive"], f["ns"] == NS["window"], *(() if masking else (z3.Not(evicted),)), a.truncate[g])
        masked_now = z3.And(is_["compact"], evicted, shortens_term(self.policy, f["tokens"])) if masking \
            else z3.BoolVal(False)
        gone = z3.And(is_["compact"], truncated if masking else z3.Or(evicted, truncated))
        masked_now, gone, moved = pair_evidence.removal(self, s, a, g, masked_now, gone)
        removes_record = self._removes(s, a, g, is_, (evicted, truncated), moved) if g == "r" else None
        becomes = _setter(f, n, out)
        summary = lambda value: tuple((c, value) for c in written)  # noqa: E731
        # A summary may be truncated by the host in the compaction that writes it (a.truncate of its ghost).
        becomes("used", (born, True))
        becomes("alive", *summary(z3.BoolVal(True) if logged else z3.Not(a.truncate[g])), (born, True),
                (restored, True), *(() if logged else ((gone, False),)))
        becomes("kind", (appended, a.kind), (record_here, K["record"]), (rationale_here, K["rationale"]),
                *summary(K["summary"]), (edited_here, z3.If(a.destroy, K["diff"], K["summary"])),
                (restored, a.prior_kind))
        becomes("ns", *summary(z3.If(a.truncate[g], NS["log"], NS["window"]) if logged else NS["window"]),
                (appended, NS["window"]),
                (record_here, NS["undo"] if dep.records == "undo_region" else NS["window"]),
                (rationale_here, NS["log"] if dep.rationale == "decision_log" else NS["window"]),
                *(((gone, NS["log"]),) if logged else ()), *(((moved, NS["log"]),) if moved is not None else ()))
        becomes("tokens", (appended, a.tokens), *summary(z3.IntVal(self.policy.placeholder_tokens)),
                (record_here, z3.If(entry_destroys(dep, is_, a), target_tokens, 1)),
                (rationale_here, 1), *(((masked_now, left_tokens_term(self.policy, f["tokens"])),) if masking else ()))
        becomes("created", (born, now))
        becomes("last_read", (born, now), (read_here, now))
        becomes("reads", (born, 0), (read_here, f["reads"] + 1))
        becomes("pinned", (appended, False), *summary(False),
                (z3.Or(record_here, rationale_here), z3.BoolVal(dep.pins == "host")),
                (z3.And(is_["pin"], _selected(a.ghost, g)), True), (z3.And(is_["unpin"], _selected(a.ghost, g)), False))
        becomes("edited", (born, False), (edited_here, True), (restored, a.prior_edited))
        becomes("version", (born, 0), (edited_here, f["version"] + 1), (restored, f["version"] + 1))
        becomes("undone", (born, False), (reverted, True))
        pair_evidence.update(self, becomes, s, a, g, is_, born, ledger)
        self._ghost_labels(becomes, f, a, g, (appended, z3.Or(record_here, rationale_here), born, restored),
                           written, summary, (gone, masked_now))
        return removes_record

    def _ghost_labels(self, becomes, f, a: PairAction, g: str, births: tuple, written: tuple, summary, removal: tuple):
        """Ghost g's role, mask, summary flag, names and tombstone after the step (part of _ghost_update)."""
        appended, entry_here, born, restored = births
        gone, masked_now = removal
        if self.roles:
            becomes("role", (appended, a.role), (entry_here, R[self.dep.record_role]),
                    *summary(R[self.policy.summary_role]))
        if self.masking:
            becomes("masked", (born, False), (masked_now, True), (restored, False))
        if self.summaries:
            # the flag is "a summary whose place is not its id" (SPEC 4d): one written at the end stands at its id
            becomes("summary", *summary(self.policy.summary_at == "replaced"), (born, False))
        write_names(becomes, self.names, self.dep.record_tool, a, appended, entry_here, summary)
        write_tombstone(becomes, f, tuple(z3.And(c, a.truncate[g]) for c in written), born, z3.Or(gone, masked_now))

    def _removes(self, s: PairState, a: PairAction, g: str, is_: dict, taken: tuple, moved=None):
        """The term "this compaction makes ghost g's present record not present" (killed, or masked in place; not
        when `moved` to the log by a downgrade)."""
        if moved is not None:
            return z3.And(self._removes(s, a, g, is_, taken), z3.Not(moved))
        evicted, truncated = taken
        f = s.span[g]
        in_place = self.policy.effect in IN_PLACE
        if not in_place and self.dep.evicted != "logged":
            return z3.And(is_["compact"], self_is_record(f), f["alive"], z3.Or(evicted, truncated))
        lost = ([z3.And(evicted, shortens_term(self.policy, f["tokens"]))] if in_place else []) + \
            ([truncated if in_place else z3.Or(evicted, truncated)]
             if self.dep.evicted != "logged" else [])
        if not lost:
            return z3.BoolVal(False)
        return z3.And(is_["compact"], self_is_record(f), s.present(g), z3.Or(lost))


def _content(kind):
    return z3.Or([kind == c for c in CONTENT])


def _setter(old: dict, new: dict, out: list):
    """becomes(name, *cases): the equation new[name] == an If chain over old[name], the first matching case winning."""
    def becomes(name, *cases):
        value = old[name]
        for cond, term in reversed(cases):
            value = z3.If(cond, term, value)
        out.append(new[name] == value)
    return becomes


def _selected(choice, g: str):
    return choice == {"r": G_R, "q": G_Q}[g]


def window_bounds(s: PairState) -> list:
    """What the pair's window totals are at least: the window holds the pair's own window spans."""
    out = [s.window_tokens >= covered_tokens(s)]
    if s.window_spans is not None:
        out.append(s.window_spans >= z3.Sum([z3.If(s.in_window(g), 1, 0) for g in GHOSTS]))
    return out


def covered_tokens(s: PairState):
    """The tokens of the pair's spans in the window: the window's total is never less (the pair are two spans of it)."""
    return z3.Sum([z3.If(s.in_window(g), s.span[g]["tokens"], 0) for g in GHOSTS])


def self_is_record(f: dict):
    return z3.And(f["used"], f["kind"] == K["record"])
