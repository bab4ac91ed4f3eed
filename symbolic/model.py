"""The runtime's transition system over N span slots as z3 constraints, and each condition's violation as a term."""

from __future__ import annotations

from typing import List

import z3

from prunecheck.spec.policy import (CONTENT_KINDS, IN_PLACE, KIND, NAMESPACE, ROLE, Policy, keeps_destroyed_content,
                                    masks, mentioned_events, mentioned_names, read_positions, read_triggers,
                                    summarises)
from prunecheck.symbolic.refusal import refusal_blocks, refused_step
from prunecheck.symbolic.compaction import stage_trigger, stage_walk, summary_written, truncation
from prunecheck.symbolic import evidence
from prunecheck.symbolic.terms import (ENUM_CODES, ExprEncoder, Frac, KindSort, NamespaceSort, RoleSort,
                                       left_tokens_term, one_stage, shortens_term)
from prunecheck.symbolic.span_terms import attribute_env, name_guards, trigger_guards, write_names
from prunecheck.symbolic.template import Substitution, state_vars, step_template
from prunecheck.symbolic.undo_terms import entry_fields, restored_edited, selected_target, unrolled_undo
from prunecheck.symbolic.window_terms import aggregate_terms, before, position_terms, stage_closures
from prunecheck.symbolic.evidence_terms import TOMBSTONE_FIELD, has_tombstones, write_tombstone
from prunecheck.symbolic.sym_action import (ACT, ACTION_CONSTS, ACTIONS, ActionSort, StepTerms,  # noqa: F401
                                            SymAction, slot_sort)

K = ENUM_CODES[KIND]
NS = ENUM_CODES[NAMESPACE]
R = ENUM_CODES[ROLE]
CONTENT = tuple(K[name] for name in CONTENT_KINDS)
# The fields of the slot an action names that a step reads, as (field, the name of its selector constant), in the
# order the selectors are declared.
SELECTED = (("used", "used"), ("alive", "alive"), ("kind", "kind"), ("ns", "ns"), ("tokens", "tokens"),
            ("version", "version"), ("edited", "edited"), ("pinned", "pinned"), ("target", "target"),
            ("rversion", "rversion"), ("undone", "undone"), ("prior_kind", "pkind"), ("prior_edited", "pedited"))


def span_fields(n: int, masking: bool = False, placing: bool = False, names: tuple = (),
                tombstones: bool = False, cites: bool = False) -> dict:
    """The slot fields; `masked` only in a model whose policy masks or reads it, `place` only in one whose policy
    summarises, and `tool`, `tag` (Int: a name's code, spec/SPEC.md 1c) only for those in `names`
    (mentioned_names), `tombstone` only under `evicted: tombstone`, so old models stay byte-identical."""
    slot = slot_sort(n)[0]
    fields = {
        "used": z3.BoolSort(), "alive": z3.BoolSort(), "kind": KindSort, "ns": NamespaceSort,
        "tokens": z3.IntSort(), "created": z3.IntSort(), "last_read": z3.IntSort(), "reads": z3.IntSort(),
        "pinned": z3.BoolSort(), "edited": z3.BoolSort(), "version": z3.IntSort(),
        # Meaningful only on record slots: what the record says about its edit.
        "target": slot, "rversion": z3.IntSort(), "prior_kind": KindSort, "prior_edited": z3.BoolSort(),
        "destroy": z3.BoolSort(), "undone": z3.BoolSort(), "role": RoleSort,
    }
    fields = {**fields, "masked": z3.BoolSort()} if masking else fields
    fields = {**fields, **{attr: z3.IntSort() for attr, _names in names}}
    fields = {**fields, **TOMBSTONE_FIELD} if tombstones else fields
    fields = {**fields, **evidence.evidence_fields(n)} if cites else fields
    return {**fields, "place": z3.IntSort()} if placing else fields


class SymState:
    """One state: its clock (a numeral when unrolled from the empty window) and a z3 term per slot field."""

    def __init__(self, k, n: int, tag: str = "", clock=None, variables: bool = True, masking: bool = False,
                 placing: bool = False, names: tuple = (), tombstones: bool = False, cites: bool = False):
        """Without `variables` the fields are left empty, for encode_init or encode_step to fill."""
        self.k, self.n, self.names = k, n, names
        if clock is None:
            clock = z3.IntVal(k) if isinstance(k, int) else z3.Int(f"{tag}clock@{k}")
        self.clock = clock
        self.fields = {name: [z3.Const(f"{tag}{name}{i}@{k}", sort) if variables else None for i in range(n)]
                       for name, sort in span_fields(n, masking, placing, names, tombstones, cites).items()}

    def __getattr__(self, name):
        fields = self.__dict__.get("fields")
        if fields is not None and name in fields:
            return fields[name]
        raise AttributeError(name)

    def first_free(self, i: int):
        """Slot i is the next one to allocate (slots are used as a prefix)."""
        if i == 0:
            return z3.Not(self.used[0])
        return z3.And(self.used[i - 1], z3.Not(self.used[i]))

    def in_window(self, i: int):
        return z3.And(self.alive[i], self.ns[i] == NS["window"])

    def present(self, i: int):
        """Slot i is alive and not masked (just alive, the same term, in a model without masks)."""
        if "masked" not in self.fields:
            return self.alive[i]
        return z3.And(self.alive[i], z3.Not(self.masked[i]))

    def is_record(self, i: int):
        return z3.And(self.used[i], self.kind[i] == K["record"])

    def live_edit(self, i: int):
        """Slot i holds the record of a performed, not-undone edit."""
        return z3.And(self.is_record(i), z3.Not(self.undone[i]))

    def window_tokens(self):
        return z3.Sum([z3.If(self.in_window(i), self.tokens[i], 0) for i in range(self.n)])

    def window_spans(self):
        return z3.Sum([z3.If(self.in_window(i), 1, 0) for i in range(self.n)])

    def is_pair(self, i: int):
        """Slots i and i+1 hold a tool call and its result (spec/runtime.py is_pair)."""
        return z3.And(self.used[i], self.used[i + 1], content(self.kind[i]), self.role[i] == R["tool_call"],
                      content(self.kind[i + 1]), self.role[i + 1] == R["tool_result"])


def content(kind):
    return z3.Or([kind == c for c in CONTENT])


def _setter(s: SymState, t: SymState, i: int):
    """becomes(name, *cases): slot i's field `name` in t as an If chain over s, the first matching case winning."""
    def becomes(name, *cases):
        value = getattr(s, name)[i]
        for cond, new in reversed(cases):
            value = z3.If(cond, new, value)
        t.fields[name][i] = value
    return becomes


class Model:
    """The policy's transition system unrolled over `n` slots; encode_* functions return constraints."""

    def __init__(self, policy: Policy, n: int, tag: str = "", token_domain=None, accelerate: bool = False,
                 repeat_domain=None, clock_targets=(), names=None, triggers=None):
        """token_domain: if given, appends carry only these token counts (to compare with the explicit engine);
        repeat_domain likewise restricts an accelerated read's or audit's `times` to these counts, or to those that
        end at one of clock_targets.
        accelerate: a read or audit step may stand for any number of repetitions (its `times`), so the clock of an
        unrolled state is a term, not the numeral k; the reachable states are the same (spec/SPEC.md §7).
        names: the tool/tag tables (default mentioned_names(policy)); two models driven by one action share theirs.
        triggers: (the trigger attributes, the event names) a compaction carries (default the policy's; §4g), shared
        likewise."""
        self.policy, self.n, self.tag = one_stage(policy), n, tag
        self.accelerate = accelerate
        self.token_domain = None if token_domain is None else tuple(token_domain)
        self.repeat_domain = None if repeat_domain is None or not accelerate else tuple(repeat_domain)
        self.clock_targets = tuple(clock_targets) if self.repeat_domain is not None else ()
        self.dep = policy.deployment
        self.masking = masks(policy)
        self.placing = summarises(policy)  # slots carry a window-order place (SPEC 4d)
        self.names = mentioned_names(policy) if names is None else names
        self.triggers, self.events = (read_triggers(policy), mentioned_events(policy)) if triggers is None \
            else triggers  # spec/SPEC.md §4g
        self.tombstones = has_tombstones(self.dep)
        self.evidence = evidence.has_evidence(policy)  # citations and ledger entries (spec/SPEC.md §6d)
        self.act_edit, self.act_compact = ACT["edit"], ACT["compact"]
        self.run_appends = False  # an append may add several spans (symbolic/runs.py)
        self.slots = slot_sort(n)[1]
        self._policy_terms: dict = {}
        self._at: dict = {}
        self._generic_terms: dict = {}
        self._generic = None

    def state(self, k: int) -> SymState:
        """State k of an unrolling, its fields to be filled by encode_init or encode_step."""
        return SymState(k, self.n, self.tag, variables=False, masking=self.masking, placing=self.placing,
                        names=self.names, tombstones=self.tombstones, cites=self.evidence)

    def action(self, k) -> SymAction:
        return SymAction(k, self.n, self.tag, self.names, self.evidence, self.triggers, self.events)

    def generic_state(self, label: str) -> SymState:
        """A state with every field, and the clock, a free variable: the pre-state of an induction step."""
        return SymState(label, self.n, self.tag, masking=self.masking, placing=self.placing, names=self.names,
                        tombstones=self.tombstones, cites=self.evidence)

    def encode_init(self, s: SymState) -> List:
        """The empty window: every field of every slot is its default value (no variables)."""
        defaults = {z3.BoolSort(): z3.BoolVal(False), z3.IntSort(): z3.IntVal(0), KindSort: K["message"],
                    NamespaceSort: NS["window"], RoleSort: R["user"], slot_sort(self.n)[0]: self.slots[0]}
        for name, sort in span_fields(self.n, self.masking, self.placing, self.names, self.tombstones,
                                      self.evidence).items():
            s.fields[name] = [defaults[sort]] * self.n
        return []

    def generic(self) -> SymState:
        """This model's own generic state, over which state terms are built once and then instantiated."""
        if self._generic is None:
            self._generic = self.generic_state("generic")
        return self._generic

    def at(self, s: SymState, key, build):
        """build(generic state), a term or a list of terms, instantiated at s; build runs once per key."""
        g = self.generic()
        if key not in self._generic_terms:
            self._generic_terms[key] = build(g)
        terms = self._generic_terms[key]
        if s is g:
            return terms
        sub = self.substitution(s)
        return [sub(x) for x in terms] if isinstance(terms, list) else sub(terms)

    def substitution(self, s: SymState) -> Substitution:
        """The generic state replaced by s (made once per state)."""
        key = id(s)
        if key not in self._at:
            self._at[key] = (s, Substitution(state_vars(self.generic()), state_vars(s)))
        return self._at[key][1]

    def policy_terms(self, s: SymState):
        """Per slot: (evict term, rank Frac or None) in state s; built once per state."""
        key = id(s)
        if key not in self._policy_terms:
            g = self.generic()
            if s is g:
                terms = self._build_policy_terms(g)
            else:
                sub = self.substitution(s)
                terms = [(sub(evict), None if rank is None else Frac(sub(rank.num), sub(rank.den)))
                         for evict, rank in self.policy_terms(g)]
            self._policy_terms[key] = (s, terms)
        return self._policy_terms[key][1]

    def _build_policy_terms(self, s: SymState) -> list:
        """Per slot: (selected: evict and not keep, rank or None)."""
        keep = self.policy.keep
        terms = []
        for i, env in enumerate(self.slot_envs(s, self.policy.budget)):
            encoder = ExprEncoder(env)
            rank = encoder.encode(self.policy.rank) if self.policy.rank is not None else None
            selected = encoder.encode(self.policy.evict)
            if keep is not None:
                selected = z3.And(selected, z3.Not(encoder.encode(keep)))
            terms.append((selected, rank))
        return terms

    def slot_envs(self, s: SymState, budget) -> list:
        """Per slot: the policy vocabulary as terms in s (positions only for those the policy reads)."""
        w, spans = Frac(s.window_tokens()), s.window_spans()
        read = tuple(name for name in read_positions(self.policy) if name != "window_spans")
        envs = [attribute_env(s.clock, {name: values[i] for name, values in s.fields.items()}, w, budget, spans,
                              position_terms(s, i, read), self.names) for i in range(self.n)]
        if self.policy.aggregates:
            holds = self.aggregate_conditions(s)
            window = aggregate_terms(s, None, self.policy.aggregates, holds)
            for i, env in enumerate(envs):
                env.update(window)
                env.update(aggregate_terms(s, i, self.policy.aggregates, holds))
        return envs

    def aggregate_conditions(self, s: SymState) -> dict:
        """Per aggregate the policy reads, per slot: its condition on the slot's own attributes (SPEC §1e)."""
        envs = [attribute_env(s.clock, {name: values[i] for name, values in s.fields.items()}, Frac(z3.IntVal(0)),
                              None, None, None, self.names) for i in range(self.n)]
        return {node: [ExprEncoder(env).encode(node.args[0]) for env in envs] for node in self.policy.aggregates}

    def window_aggregates(self, s: SymState) -> dict:
        """The window's aggregates the policy reads, as terms in s (for `when`)."""
        if not self.policy.aggregates:
            return {}
        return aggregate_terms(s, None, self.policy.aggregates, self.aggregate_conditions(s))

    def kept_terms(self, s: SymState, budget, a=None) -> list:
        """Per slot: the stage's `keep` in s (false without one), for the pair closure; under `justification: defer`
        a cited slot is kept too."""
        kept = [z3.BoolVal(False)] * self.n if self.policy.keep is None else \
            [ExprEncoder(env).encode(self.policy.keep) for env in self.slot_envs(s, budget)]
        return self.spared(s, a, kept, keep=True)

    def spared(self, s: SymState, a, terms: list, keep: bool = False) -> list:
        """terms per slot with `justification: defer` sparing cited slots: kept (keep) or no candidate; unchanged
        without it."""
        if not (self.evidence and self.dep.justification == "defer"):
            return terms
        deferred = evidence.deferred(self, s, a)
        return [z3.Or(t, d) if keep else z3.And(t, z3.Not(d)) for t, d in zip(terms, deferred)]

    def candidate(self, s: SymState, i: int):
        term = z3.And(s.in_window(i), self.policy_terms(s)[i][0])
        return self.spared(s, None, [term] * self.n)[i]

    def compaction(self, s: SymState, a: SymAction, terms=None, budget=None):
        """Per slot: (evicted by the policy, truncated to the effective budget), and the summary written (per slot:
        written there; its place), for a compaction from s by a.

        terms and budget default to the policy's; a step template passes placeholders for both. The ranked
        eviction stops at the policy's budget; truncation walks to the least of it and a's host budget, if any.
        """
        n = self.n
        terms = self.policy_terms(s) if terms is None else terms
        budget = self.policy.budget if budget is None else budget
        cand = self.spared(s, a, [z3.And(s.in_window(i), terms[i][0]) for i in range(n)])
        total = s.window_tokens()
        ranks = [t[1] for t in terms]

        def ahead(j, i):
            if ranks[0] is None:
                order = before(s, i, j) if self.policy.order == "newest" else before(s, j, i)
                return z3.BoolVal(order) if isinstance(order, bool) else order
            left, right = ranks[j].scaled_num(ranks[i].den), ranks[i].scaled_num(ranks[j].den)
            if self.placing:  # rank ties in window order
                return z3.Or(left < right, z3.And(left == right, before(s, j, i)))
            return left <= right if j < i else left < right

        if self.policy.when is not None or self.policy.until is not None or self.policy.effect in IN_PLACE:
            # A mask may grow a span (placeholder_tokens > tokens), so even the legacy ranked walk needs the general
            # closed form: its window tokens are no longer monotone.
            evicted = stage_walk(self, s, cand, ahead, budget, a)
        elif ranks[0] is not None and budget is not None:
            evicted = []
            for i in range(n):
                ahead_tokens = z3.Sum([z3.IntVal(0)] + [z3.If(z3.And(cand[j], ahead(j, i)), s.tokens[j], 0)
                                                        for j in range(n) if j != i])
                evicted.append(z3.And(cand[i], total - ahead_tokens > budget))
        else:
            evicted = cand
        if self.policy.pairs == "together" or self.policy.start_on is not None:
            evicted = stage_closures(s, self.policy, evicted, self.kept_terms(s, budget, a),
                                     stage_trigger(self, s, budget, a))
        summary = summary_written(self, s, evicted)
        return evicted, truncation(self, s, a, evicted, summary, budget), summary

    def taken_effect(self, s: SymState, i: int) -> tuple:
        """What the stage taking slot i removes from the window's (tokens, spans): evicting removes its tokens and
        one span, masking its tokens less the placeholder's and no span. The one place the encoded walk learns what
        taking a span does (spec.stage.taken_effect in the runtime)."""
        if self.policy.effect in IN_PLACE:
            return s.tokens[i] - left_tokens_term(self.policy, s.tokens[i]), z3.IntVal(0)
        return s.tokens[i], z3.IntVal(1)

    def encode_step(self, s: SymState, a: SymAction, t: SymState) -> StepTerms:
        """Fills t's fields with terms over s and a; returns the step's guards and named sub-terms."""
        return step_template(self).instantiate(self, s, a, t)

    def build_step(self, s: SymState, a: SymAction, t: SymState, picks=None, terms=None, budget=None) -> StepTerms:
        """encode_step built term by term through z3py (a template's one-time construction): the constants chosen
        by `pick` are appended to picks; terms and budget are the policy's, or placeholders."""
        now = s.clock + a.times if self.accelerate else z3.simplify(s.clock + 1)
        t.clock = now
        out: list = []
        sel = self._selected(s, a, picks, out)
        is_ = {name: a.act == ACT[name] for name in ACTIONS}
        self._guards(s, a, sel, is_, now, out)
        fresh = sel["target_version"] == sel["rversion"]
        room = z3.Not(s.used[self.n - 2]) if self.n >= 2 else z3.BoolVal(False)
        undo = unrolled_undo(self.dep, is_, sel, fresh, room, out, self.says_reversible(s))
        evicted, truncated, (written, place) = self.compaction(s, a, terms, budget)
        if self.placing:  # the summary needs a free slot, as an append does
            out.append(z3.Implies(z3.And(is_["compact"], z3.Or(evicted)), z3.Not(s.used[self.n - 1])))
        out.extend(evidence.guards(self, s, a, evicted))  # the runtime's guard sees the stage before the refusal
        evicted, truncated, written = refused_step(self, s, evicted, truncated, written)
        new_kind = z3.If(a.destroy, K["diff"], K["summary"])
        ledger = evidence.ledger_written(self, s, a, evicted, refusal_blocks(self, s))
        down = evidence.downgraded(self, s, a)
        for i in range(self.n):
            self._slot_update(s, a, t, i, sel, is_, now, undo, new_kind, (evicted[i], truncated[i]),
                              (z3.And(is_["compact"], written[i]), place), (ledger[i], down[i]))
        return StepTerms(out, undo.reverted, fresh, evicted)

    def _selected(self, s: SymState, a: SymAction, picks, out: list) -> dict:
        """The fields of the slot the action names (and of its record's target), one constant each, constrained by
        `arg = slot_i -> constant = field[i]` (in out); the constants are appended to picks."""
        n, slots, arg = self.n, self.slots, a.arg

        def pick(values, index, name):
            chosen = z3.Const(f"{self.tag}{name}@{s.k}", values[0].sort())
            if picks is not None:
                picks.append(chosen)
            out.extend(z3.Implies(index == slots[i], chosen == values[i]) for i in range(n))
            return chosen

        sel = {field: pick(getattr(s, field), arg, f"sel_{name}") for field, name in SELECTED}
        sel["target_version"] = pick(s.version, sel["target"], "sel_tversion")
        sel["present"] = z3.And(sel["alive"], z3.Not(pick(s.masked, arg, "sel_masked"))) if self.masking \
            else sel["alive"]
        sel["content"] = z3.Or([sel["kind"] == c for c in CONTENT])
        selected_target(self.dep, pick, s, sel)
        if not keeps_destroyed_content(self.dep):  # an undo reads whether the edit destroyed its target (SPEC §4)
            sel["destroy"] = pick(s.destroy, arg, "sel_destroy")
        return sel

    def _guards(self, s: SymState, a: SymAction, sel: dict, is_: dict, now, out: list) -> None:
        """Each action's precondition (the runtime's refusals) and the domains of its arguments, into out."""
        n, dep = self.n, self.dep
        if self.accelerate:
            repeated = [is_["read"], is_["audit"]] + ([is_["append"]] if self.run_appends else [])
            out.append(z3.If(z3.Or(repeated), a.times >= 1, a.times == 1))
            if self.repeat_domain is not None:
                allowed = [a.times == v for v in self.repeat_domain] + [now == v for v in self.clock_targets]
                out.append(z3.Implies(z3.Or(is_["read"], is_["audit"]), z3.Or(allowed)))
        else:
            out.append(a.times == 1)
        out.append(z3.Implies(is_["append"], z3.And(z3.Not(s.used[n - 1]), a.tokens >= 1,
                                                    z3.Or([a.kind == c for c in CONTENT]))))
        tools = "tool" in s.fields  # a result names its call's tool
        answers = [z3.And(s.first_free(i), content(s.kind[i - 1]), s.role[i - 1] == R["tool_call"], s.in_window(i - 1),
                          *([a.tool == s.tool[i - 1]] if tools else [])) for i in range(1, n)]
        out.append(z3.Implies(z3.And(is_["append"], a.role == R["tool_result"]), z3.Or(answers)))
        if self.token_domain is not None:
            out.append(z3.Implies(is_["append"], z3.Or([a.tokens == v for v in self.token_domain])))
        out.extend(z3.Implies(is_["append"], g) for g in name_guards(a, self.names))
        room_for_two = z3.Not(s.used[n - 2]) if n >= 2 else z3.BoolVal(False)
        out.append(z3.Implies(is_["edit"], z3.And(sel["used"], sel["alive"], sel["ns"] == NS["window"],
                                                  sel["content"], room_for_two)))
        out.append(z3.Implies(is_["read"], z3.And(sel["used"], sel["alive"])))
        for name, want in (("pin", False), ("unpin", True)):
            guard = [sel["used"], sel["alive"], sel["pinned"] == want] + ([sel["content"]] if dep.pins == "host" else [])
            out.append(z3.Implies(is_[name], z3.And(guard)))
        out.append(z3.Implies(is_["undo"], z3.And(sel["used"], sel["kind"] == K["record"], z3.Not(sel["undone"]))))
        out.append(z3.Implies(z3.And(is_["compact"], a.hosted), a.host >= 1))
        out.extend(trigger_guards(a, is_["compact"]))

    def _slot_update(self, s: SymState, a: SymAction, t: SymState, i: int, sel: dict, is_: dict, now, undo,
                     new_kind, removed: tuple, written: tuple = (None, None), ledger: tuple = (None, None)) -> None:
        """Slot i's fields in t: an If chain over s per field, the first matching case winning; `undo` is the step's
        UndoTerms; `written` is (the summary is written at slot i, its place) for a summarising policy, `ledger` see
        evidence.with_ledger."""
        dep, here = self.dep, a.arg == self.slots[i]
        appended, record_here = z3.And(is_["append"], s.first_free(i)), z3.And(undo.entry, s.first_free(i))
        rationale_here = z3.And(undo.entry, s.first_free(i - 1)) if i > 0 else z3.BoolVal(False)
        rationale_here, ledger_here, down = evidence.with_ledger(self, rationale_here, ledger)
        edited_here = z3.And(is_["edit"], here)
        restored_here = z3.And(undo.undoes, sel["target"] == self.slots[i])
        entry = entry_fields(dep, undo, a, sel)
        read_here = z3.And(is_["read"], here)
        masking = self.policy.effect in IN_PLACE
        masked_now = z3.And(is_["compact"], removed[0], shortens_term(self.policy, s.tokens[i])) if masking \
            else z3.BoolVal(False)
        gone = z3.And(is_["compact"], removed[1] if masking else z3.Or(*removed))
        logged = dep.evicted == "logged"
        masked_now, gone, moved = evidence.downgrade_removal(self, masked_now, gone, down)
        summary_here, summary_place = written
        summaries = () if summary_here is None or not self.placing else (summary_here,)
        born = z3.Or(appended, record_here, rationale_here, *summaries)
        record_ns = NS["undo"] if dep.records == "undo_region" else NS["window"]
        rationale_ns = NS["log"] if dep.rationale == "decision_log" else NS["window"]
        once = a.times if self.accelerate else 1
        becomes = _setter(s, t, i)
        summary = lambda value: tuple((c, value) for c in summaries)  # noqa: E731
        # A summary the host truncates in the step that writes it is gone (dead, or in the log) at once.
        cut_short = tuple(z3.And(c, removed[1]) for c in summaries) + evidence.ledger_cut(self, ledger_here, removed[1])
        becomes("used", (born, True))
        becomes("alive", *(() if logged else tuple((c, False) for c in cut_short)), (born, True),
                (restored_here, True), *(() if logged else ((gone, False),)))
        evidence.update_slot(self, becomes, a, i, born, record_here, ledger_here)
        becomes("kind", (appended, a.kind), (record_here, K["record"]), (rationale_here, K["rationale"]),
                *summary(K["summary"]), (edited_here, new_kind), (restored_here, sel["prior_kind"]))
        becomes("ns", *(tuple((c, NS["log"]) for c in cut_short) if logged else ()), (appended, NS["window"]),
                (record_here, record_ns), (rationale_here, rationale_ns), *summary(NS["window"]),
                *(((gone, NS["log"]),) if logged else ()), *(((moved, NS["log"]),) if moved is not None else ()))
        becomes("tokens", (appended, a.tokens), (record_here, entry["tokens"]), (rationale_here, 1),
                *summary(z3.IntVal(self.policy.placeholder_tokens)),
                *(((masked_now, left_tokens_term(self.policy, s.tokens[i])),) if masking else ()))
        becomes("created", (born, now))
        becomes("last_read", (born, now), (read_here, now))
        becomes("reads", (born, 0), (read_here, s.reads[i] + once))
        becomes("pinned", (appended, False), *summary(False),
                (z3.Or(record_here, rationale_here), z3.BoolVal(dep.pins == "host")),
                (z3.And(is_["pin"], here), True), (z3.And(is_["unpin"], here), False))
        becomes("edited", (born, False), (edited_here, True), (restored_here, restored_edited(dep, undo, sel)))
        becomes("version", (born, 0), (edited_here, s.version[i] + 1), (restored_here, s.version[i] + 1))
        for name in ("target", "rversion", "prior_kind", "prior_edited", "destroy"):
            becomes(name, (record_here, entry[name]))
        becomes("undone", (z3.And(undo.undoes, here), True))
        becomes("role", (appended, a.role), (z3.Or(record_here, rationale_here), R[dep.record_role]),
                *summary(R[self.policy.summary_role]))
        if self.masking:
            becomes("masked", (born, False), (masked_now, True), (restored_here, False))
        if self.placing:
            becomes("place", *(summary(summary_place) if summary_place is not None else ()), (born, z3.IntVal(i)))
        write_names(becomes, self.names, dep.record_tool, a, appended, z3.Or(record_here, rationale_here), summary)
        write_tombstone(becomes, t.fields, cut_short, born, z3.Or(gone, masked_now))

    # The status's terms, for condition C4 (symbolic/conditions.py) and the theorems.

    def gap(self, t: SymState):
        return z3.Or([z3.And(t.live_edit(i), z3.Not(t.present(i))) for i in range(self.n)])

    def says_reversible(self, t: SymState):
        if self.dep.audit == "independent":
            return z3.Not(self.gap(t))
        known = []
        for i in range(self.n - 1):
            seen = z3.Or(t.in_window(i), t.in_window(i + 1))
            known.append(z3.Implies(z3.And(t.live_edit(i), seen), t.present(i)))
        return z3.And(known)
