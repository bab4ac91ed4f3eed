"""The unrolled model with runs: one slot may hold `count` equal spans appended in a row (design/vocabulary.md §5b).

Only for finding violations at real sizes: a compaction is a step of this model only when it treats every run as a
whole (each run's first and last member agree on the selection), and runs are appended whole, never read, pinned,
edited or split. So every run of this model is a run of the runtime, with Append(times=count); every trace it finds
is replayed on the runtime before it is reported, and it never contributes to `holds`. A run of n call/result pairs
(Append(times=n, result_tokens=m)) takes two slots, its calls and its results, interleaved (SPEC §7d).
"""

from __future__ import annotations

import functools

import z3

from prunecheck.spec.errors import EncodingError
from prunecheck.spec.policy import (AGGREGATES, ATTRS, BOOL, NUM, Attr, Binary, Num, Policy, children, is_aggregate,
                                    outer_subexpressions, read_attributes, stage_exprs, subexpressions)
from prunecheck.symbolic.model import NS, R, Model, SymAction, SymState
from prunecheck.symbolic.solver import Status, new_solver, query
from prunecheck.symbolic.terms import ENUM_CODES, ExprEncoder, Frac
from prunecheck.symbolic.window_terms import among, before

TIME_ATTRS = ("age", "idle", "recency", "frequency", "reads")  # members of a run differ in these: no runs then


def runs_apply(policy: Policy) -> bool:
    """Whether the run search can serve this policy: members of a run must look alike to it (no time attributes),
    its stage must take whole runs or none (no target, no rank, no budget), and its counts (aggregates that count
    spans too) must be compared in ways monotone along a run (inequalities, or equality with 0), so agreeing first
    and last members make it uniform."""
    return (not set(TIME_ATTRS) & read_attributes(policy) and policy.until is None and policy.rank is None
            and policy.budget is None and all(monotone(node) for node in counted(policy)))


COUNTS = ("position", "from_end", "from_end_in_role", "turn", "window_spans")  # attributes that count window spans
COUNTING = "count aggregates"  # in `names` below: the aggregates that count spans of a subset (SPEC §1e)


def is_count(x, names=COUNTS + (COUNTING,)) -> bool:
    """x is a count of window spans of one of `names`: a counting attribute, or (COUNTING) an aggregate that counts."""
    if isinstance(x, Attr):
        return x.name in names
    return COUNTING in names and is_aggregate(x) and AGGREGATES[x.fn][1] == "spans"


def counted(policy: Policy, names=COUNTS + (COUNTING,)):
    """The comparisons of the policy with a count of window spans (of one of `names`) on one side."""
    for node in (n for e in stage_exprs(policy) for n in subexpressions(e)):
        if isinstance(node, Binary) and node.op in ("<", "<=", ">", ">=", "==", "!="):
            if any(is_count(x, names) for x in (node.left, node.right)):
                yield node


def monotone(node: Binary) -> bool:
    """Whether a comparison of a count is monotone along a run: an inequality, or (counts being >= 0) `== 0`/`!= 0`."""
    return node.op not in ("==", "!=") or any(isinstance(x, Num) and x.value == 0 for x in (node.left, node.right))


def count_constants(policy: Policy, names=COUNTS + (COUNTING,)) -> tuple:
    """The constants the policy compares a count of window spans (of one of `names`) with, ascending."""
    return tuple(sorted({int(x.value) for node in counted(policy, names) for x in (node.left, node.right)
                         if isinstance(x, Num)}))


MOST_COUNT = 256  # how many window spans a threshold hidden in arithmetic is looked for within (checker's MAX_SPANS)
TURN_RLIMIT = 2_000_000  # z3's resource count for one query of `turning` (tiny linear queries need far less)
TURN_TIMEOUT_MS = 10_000  # a hang guard only: the rlimit binds first


def count_thresholds(policy: Policy, names=COUNTS + (COUNTING,), most: int = MOST_COUNT) -> tuple:
    """The counts of window spans at which the policy's comparisons of a count (of one of `names`) turn, ascending:
    each constant a count is compared with (count_constants), and for every other comparison reading such a count
    (arithmetic around it, `//`, `%`, a count or position on the other side) the spans besides the compared one it
    needs, one fewer than `turning` gives (at most `most`)."""
    derived = set()
    for expr in stage_exprs(policy):
        for chain in conjunctions(expr):
            for index, node in enumerate(chain):
                if _hidden_count(node, names):
                    spans = turning(chain, index, most)
                    if spans is not None:
                        derived.add(spans - 1)
    return tuple(sorted(set(count_constants(policy, names)) | derived))


def run_lengths(policy: Policy, most: int = MOST_COUNT) -> tuple:
    """The lengths a run may have: around each count the policy's comparisons turn at (c-2 .. c+1, count_thresholds),
    so that a few runs and single spans can meet each threshold exactly or just past it."""
    return tuple(sorted({k for c in count_thresholds(policy, most=most) for k in range(c - 2, c + 2) if k >= 2}))


def _hidden_count(node, names) -> bool:
    """node compares something reading a count of `names`, but not a bare count with a constant (count_constants)."""
    if not (isinstance(node, Binary) and node.op in ("<", "<=", ">", ">=", "==", "!=")):
        return False
    if not any(is_count(x, names) for x in outer_subexpressions(node)):
        return False
    sides = (node.left, node.right)
    return not (any(is_count(x) for x in sides) and any(isinstance(x, Num) for x in sides))


def conjunctions(expr):
    """Each chain of `and` in expr, as the tuple of its conjuncts (a node under no `and` is a chain of one), outermost
    first; not inside an aggregate, whose condition reads no count."""
    chain = _conjuncts(expr)
    yield chain
    for node in chain:
        if not is_aggregate(node):
            for child in children(node):
                yield from conjunctions(child)


def _conjuncts(expr) -> tuple:
    if isinstance(expr, Binary) and expr.op == "and":
        return _conjuncts(expr.left) + _conjuncts(expr.right)
    return (expr,)


@functools.lru_cache(maxsize=512)
def turning(chain: tuple, index: int, most: int):
    """The fewest window spans at which conjunct `index` of `chain` can decide it: windows of that many spans or
    fewer where the other conjuncts hold, one with the conjunct true and one with it false; `most` if only larger
    windows have both, None if none has (or z3 could not say). Exact over what every window satisfies of its counts
    (count_facts); a conjunct z3 cannot encode here (one reading a tool name) counts as true. It only decides which
    search is asked for, never a verdict."""
    facts, env, spans = count_facts(chain)
    encoder = ExprEncoder(env)
    try:
        node = encoder.encode(chain[index])
    except EncodingError:
        return None
    others = []
    for i, other in enumerate(chain):
        if i != index:
            try:
                others.append(encoder.encode(other))
            except EncodingError:
                pass
    solver = new_solver(TURN_TIMEOUT_MS, TURN_RLIMIT)
    solver.add(*facts, *others)
    fewest = [_fewest(solver, spans, value, most) for value in (node, z3.Not(node))]
    return None if None in fewest else max(fewest)


def _fewest(solver, spans, claim, most: int):
    """The fewest window spans at which `claim` can hold with the solver's facts, by bisection (no window below `low`
    has it, one of `found` spans does): `most` if only larger windows have it, None if none has (or z3 could not
    say)."""
    solver.push()
    solver.add(claim)
    try:
        found, low = _window(solver, spans, most), 1
        if found is None:
            return most if _window(solver, spans, None) is not None else None
        while low < found:
            middle = (low + found - 1) // 2
            smaller = _window(solver, spans, middle)
            if smaller is None:
                low = middle + 1
            else:
                found = smaller
        return found
    finally:
        solver.pop()


def _window(solver, spans, bound):
    """The spans of a window of at most `bound` spans (None: any) the solver's facts allow (None: none, or
    unknown)."""
    solver.push()
    if bound is not None:
        solver.add(spans <= bound)
    try:
        if query(solver).status is not Status.SAT:
            return None
        return solver.model().eval(spans, model_completion=True).as_long()
    finally:
        solver.pop()


def count_facts(exprs) -> tuple:
    """(facts, env, spans): free values for every attribute and aggregate `exprs` read, constrained only by what every
    window of `spans` >= 1 spans satisfies around one span of it (SPEC §1b, §1e): a position and its distance from
    the end add up to the spans besides it; a count within a role or of user turns is at most that distance; an
    aggregate of the window is what lies before the span, after it, and the span's own share (at most 1 span)."""
    spans, position, from_end = z3.Int("turning!window_spans"), z3.Int("turning!position"), z3.Int("turning!from_end")
    facts = [spans >= 1, position >= 0, from_end >= 0, position + from_end + 1 == spans]
    env = {"window_spans": Frac(spans), "position": Frac(position), "from_end": Frac(from_end)}
    for name, (kind, interval) in ATTRS.items():
        if name in env:
            continue
        if kind == NUM:
            value = z3.Int(f"turning!{name}")
            den = z3.Int(f"turning!{name}/") if name in ("recency", "frequency") else None  # rationals
            facts += [] if den is None else [den >= 1]
            if interval is not None and interval.lo is not None:
                facts.append(value >= int(interval.lo) * (1 if den is None else den))
            env[name] = Frac(value, den)
        elif kind == BOOL:
            env[name] = z3.Bool(f"turning!{name}")
        elif kind in ENUM_CODES:
            env[name] = z3.Const(f"turning!{name}", next(iter(ENUM_CODES[kind].values())).sort())
    facts += [env["from_end_in_role"].num <= from_end, env["turn"].num <= from_end,
              env["tokens_after"].num >= from_end]
    shares = {}
    for node in dict.fromkeys(n for e in exprs for n in outer_subexpressions(e) if is_aggregate(n)):
        side, measure = AGGREGATES[node.fn]
        key = (node.args, measure)
        if key not in shares:
            older, newer, own = (z3.Int(f"turning!{measure}{len(shares)}{part}") for part in ("<", ">", "="))
            shares[key] = {"older": older, "newer": newer, "window": older + newer + own}
            facts += [older >= 0, newer >= 0, own >= 0]
            facts += [older <= position, newer <= from_end, own <= 1] if measure == "spans" else []
        env[node] = Frac(shares[key][side])
    return facts, env, spans


class RunState(SymState):
    """A state whose slots also carry `count`, the number of equal spans each stands for (1 but for appended runs)."""

    def __init__(self, k, n: int, counts: tuple, tag: str = "", variables: bool = True, masking: bool = False,
                 placing: bool = False, names: tuple = (), tombstones: bool = False, cites: bool = False):
        super().__init__(k, n, tag, variables=variables, masking=masking, placing=placing, names=names,
                         tombstones=tombstones, cites=cites)
        self.counts = counts
        self.fields["count"] = [z3.Int(f"{tag}count{i}@{k}") if variables else None for i in range(n)]
        # Slot i is half of a run of pairs: its calls (the results in slot i+1) or its results (the calls in i-1).
        self.fields["paired"] = [z3.Bool(f"{tag}paired{i}@{k}") if variables else None for i in range(n)]

    def times(self, i: int, x):
        """count_i · x, linear: count ranges over the finite domain `counts`."""
        return z3.Sum([z3.IntVal(0)] + [z3.If(self.count[i] == c, c * x, 0) for c in self.counts])

    def window_tokens(self):
        return z3.Sum([z3.If(self.in_window(i), self.times(i, self.tokens[i]), 0) for i in range(self.n)])

    def window_spans(self):
        return z3.Sum([z3.If(self.in_window(i), self.count[i], 0) for i in range(self.n)])


class RunAction(SymAction):
    """An action of the model with runs: besides SymAction's, an append's `result` tokens (0: no pairs; m >= 1: a
    run of `pairs` calls each followed by its result of m tokens, `times` = 2·pairs real steps)."""

    def __init__(self, k, n: int, tag: str = "", names: tuple = (), cites: bool = False, triggers: tuple = (),
                 events: tuple = ()):
        super().__init__(k, n, tag, names, cites, triggers, events)
        self.result = z3.Int(f"{tag}aresult@{k}")
        self.pairs = z3.Int(f"{tag}apairs@{k}")


class RunModel(Model):
    """Model over `n` slots where an append may add a run of `c` equal spans, c in `counts` (1 always included)."""

    def __init__(self, policy: Policy, n: int, counts, **kwargs):
        super().__init__(policy, n, accelerate=True, **kwargs)
        self.counts = tuple(sorted(set(counts) | {1}))
        self.run_appends = True

    def state(self, k) -> RunState:
        return RunState(k, self.n, self.counts, self.tag, variables=False, masking=self.masking, placing=self.placing,
                        names=self.names, tombstones=self.tombstones, cites=self.evidence)

    def generic_state(self, label: str) -> RunState:
        return RunState(label, self.n, self.counts, self.tag, masking=self.masking, placing=self.placing,
                        names=self.names, tombstones=self.tombstones, cites=self.evidence)

    def action(self, k) -> RunAction:
        return RunAction(k, self.n, self.tag, self.names, self.evidence, self.triggers, self.events)

    def encode_init(self, s: RunState) -> list:
        out = super().encode_init(s)
        s.fields["count"] = [z3.IntVal(0)] * self.n
        s.fields["paired"] = [z3.BoolVal(False)] * self.n
        return out

    def encode_step(self, s, a, t):
        return self.build_step(s, a, t)  # no shared template: the run fields are not in it

    def slot_envs(self, s: RunState, budget, member: str = "first") -> list:
        """Per slot: the vocabulary of its run's first (or last) member."""
        envs = super().slot_envs(s, budget)
        holds = self.aggregate_conditions(s) if self.policy.aggregates else {}
        window = member_aggregates(s, None, member, self.policy.aggregates, holds)  # runs' members, not slots
        for i, env in enumerate(envs):
            env.update(member_positions(s, i, member))
            env.update(window)
            env.update(member_aggregates(s, i, member, self.policy.aggregates, holds))
        return envs

    def window_aggregates(self, s: RunState) -> dict:
        if not self.policy.aggregates:
            return {}
        return member_aggregates(s, None, "first", self.policy.aggregates, self.aggregate_conditions(s))

    def uniform(self, s: RunState):
        """Every run of the window is selected whole: its first and last member agree on evict and keep."""
        out = []
        for i, (first, last) in enumerate(zip(self.slot_envs(s, self.policy.budget, "first"),
                                              self.slot_envs(s, self.policy.budget, "last"))):
            agree = [ExprEncoder(first).encode(e) == ExprEncoder(last).encode(e)
                     for e in (self.policy.evict, self.policy.keep) if e is not None]
            out.append(z3.Implies(z3.And(s.in_window(i), s.count[i] > 1), z3.And(agree)))
        return z3.And(out)

    def taken_effect(self, s: RunState, i: int) -> tuple:
        tokens, spans = super().taken_effect(s, i)
        return s.times(i, tokens), s.times(i, spans)

    def _selected(self, s, a, picks, out) -> dict:
        sel = super()._selected(s, a, picks, out)
        count = z3.Int(f"{self.tag}sel_count@{s.k}")
        out.extend(z3.Implies(a.arg == self.slots[i], count == s.count[i]) for i in range(self.n))
        sel["count"] = count
        return sel

    def _guards(self, s, a, sel, is_, now, out) -> None:
        super()._guards(s, a, sel, is_, now, out)
        pairs = z3.Or(a.role == R["tool_call"], a.role == R["tool_result"])
        paired = a.result >= 1
        out.append(z3.Implies(z3.And(is_["append"], z3.Not(paired)),
                              z3.And(z3.Or([a.times == c for c in self.counts]), z3.Implies(pairs, a.times == 1))))
        out.extend(self._pair_guards(s, a, is_["append"]))
        out.append(z3.Implies(z3.Or(is_["edit"], is_["read"], is_["pin"], is_["unpin"]), sel["count"] == 1))
        out.append(z3.Implies(is_["compact"], z3.And(z3.Not(a.hosted), self.uniform(s))))

    def _pair_guards(self, s: RunState, a: RunAction, append) -> list:
        """A run of pairs: appended calls (its `pairs` in the run lengths, two steps each) with room for both halves;
        `result` and `pairs` are 0 for every other action, and always for a summarising policy (a summary's place
        could stand between a run's halves, which the interleaving shift below does not count)."""
        if self.placing:
            return [a.result == 0, a.pairs == 0]
        paired = a.result >= 1
        room = z3.Not(s.used[self.n - 2]) if self.n >= 2 else z3.BoolVal(False)
        results = [z3.Or([a.result == v for v in self.token_domain])] if self.token_domain is not None else []
        return [a.result >= 0, z3.Implies(z3.Not(paired), a.pairs == 0),
                z3.Implies(paired, z3.And([append, a.role == R["tool_call"], a.times == 2 * a.pairs, room,
                                           z3.Or([a.pairs == c for c in self.counts])] + results))]

    def _slot_update(self, s, a, t, i, sel, is_, now, undo, new_kind, removed, written=(None, None),
                     ledger=(None, None)) -> None:
        super()._slot_update(s, a, t, i, sel, is_, now, undo, new_kind, removed, written, ledger)
        # An entry's record and rationale (an edit's or, under undo: merge, a merge's) stand for one span each.
        edit_here = z3.And(undo.entry, z3.Or(s.first_free(i), s.first_free(i - 1) if i > 0 else z3.BoolVal(False)))
        one = edit_here if written[0] is None or not self.placing else z3.Or(edit_here, written[0])  # a summary: 1
        one = z3.Or(one, ledger[0]) if self.evidence else one  # a compaction's ledger rationale: 1 (SPEC §6d)
        first = z3.And(is_["append"], s.first_free(i))
        second = z3.And(is_["append"], a.result >= 1, s.first_free(i - 1)) if i > 0 else z3.BoolVal(False)
        t.fields["count"][i] = z3.If(first, z3.If(a.result >= 1, a.pairs, a.times),
                                     z3.If(second, a.pairs, z3.If(one, 1, s.count[i])))
        t.fields["paired"][i] = z3.If(first, a.result >= 1, z3.Or(second, s.paired[i]))
        results = {"used": True, "alive": True, "kind": a.kind, "ns": NS["window"],
                   "tokens": a.result, "created": now, "last_read": now, "reads": 0, "pinned": False,
                   "edited": False, "version": 0, "role": R["tool_result"], "masked": False, "tombstone": False,
                   "ledger": False, **{f"cite{j}": False for j in range(self.n)},
                   **{attr: getattr(a, attr) for attr, _table in self.names}}  # a result names its call's tool
        for name, value in results.items():
            if name in t.fields:
                t.fields[name][i] = z3.If(second, value, t.fields[name][i])


def member_positions(s: RunState, i: int, member: str) -> dict:
    """The positional attributes of the first or last member of slot i's run (the others lie between them), in window
    order (window_terms.before: slot order unless the policy summarises)."""
    n, inw, cnt = s.n, [s.in_window(j) for j in range(s.n)], s.count
    newer = [(j, before(s, i, j)) for j in range(n) if j != i]
    older = [(j, before(s, j, i)) for j in range(n) if j != i]

    def total(cond, value=None):
        return z3.Sum([z3.IntVal(0)] + [z3.If(among(inw[j], order, cond(j)), cnt[j] if value is None else value(j), 0)
                                        for j, order in newer if order is not False])
    rest = cnt[i] - 1 if member == "first" else z3.IntVal(0)
    user = s.role[i] == R["user"]
    shift, tokens_shift = pair_shift(s, i, member)
    return {
        "position": Frac(z3.Sum([z3.IntVal(0)] + [z3.If(among(inw[j], order), cnt[j], 0) for j, order in older
                                                  if order is not False])
                         + (cnt[i] - 1 if member == "last" else 0) + shift),
        "from_end": Frac(total(lambda j: True) + rest - shift),
        "from_end_in_role": Frac(total(lambda j: s.role[j] == s.role[i]) + rest),
        "turn": Frac(total(lambda j: s.role[j] == R["user"]) + z3.If(user, rest, 0)),
        "tokens_after": Frac(total(lambda j: True, lambda j: s.times(j, s.tokens[j]))
                             + (s.times(i, s.tokens[i]) - s.tokens[i] if member == "first" else 0) - tokens_shift),
    }


def member_aggregates(s: RunState, i, member: str, nodes, holds: dict) -> dict:
    """The aggregates of `nodes` (SPEC §1e) of the first or last member of slot i's run, or with i None the window's:
    each slot of the window whose condition holds counts its run's members (count · 1, or count · tokens); the
    run's own members newer (first) or older (last) than the member count too, and a run of pairs moves its members
    as pair_shift says, for the partner's share only when the condition holds on it."""
    n, inw, cnt = s.n, [s.in_window(j) for j in range(s.n)], s.count
    out = {}
    for node in nodes:
        side, measure = AGGREGATES[node.fn]
        if (i is None) != (side == "window"):
            continue
        value = (lambda j: cnt[j]) if measure == "spans" else (lambda j: s.times(j, s.tokens[j]))
        unit = (lambda j: z3.IntVal(1)) if measure == "spans" else (lambda j: s.tokens[j])
        if side == "window":
            out[node] = Frac(z3.Sum([z3.IntVal(0)] + [z3.If(z3.And(inw[j], holds[node][j]), value(j), 0)
                                                      for j in range(n)]))
            continue
        sides = [(j, before(s, i, j) if side == "newer" else before(s, j, i)) for j in range(n) if j != i]
        total = z3.Sum([z3.IntVal(0)] + [z3.If(among(inw[j], order, holds[node][j]), value(j), 0)
                                         for j, order in sides if order is not False])
        own = member == ("first" if side == "newer" else "last")  # the run's other members lie on this side
        rest = z3.If(holds[node][i], s.times(i, unit(i)) - unit(i), 0) if own else z3.IntVal(0)
        out[node] = Frac(total + rest + aggregate_shift(s, i, member, side, holds[node], unit))
    return out


def aggregate_shift(s: RunState, i: int, member: str, side: str, holds: list, unit):
    """pair_shift for an aggregate: the partner run's members the sums above put on the wrong side of slot i's
    member, counted only when the condition holds on the partner (its members are alike)."""
    if member == "last" and i + 1 < s.n:
        half, partner, sign = s.role[i] == R["tool_call"], i + 1, 1
    elif member == "first" and i > 0:
        half, partner, sign = s.role[i] == R["tool_result"], i - 1, -1
    else:
        return z3.IntVal(0)
    moved = z3.And(s.paired[i], half, s.in_window(partner), holds[partner])
    shift = z3.If(moved, s.times(partner, unit(partner)) - unit(partner), 0)  # linear: times() over counts
    return shift * sign if side == "older" else -shift * sign


def pair_shift(s: RunState, i: int, member: str) -> tuple:
    """How far the interleaving of a run of pairs moves slot i's member towards the end, in spans and in tokens
    passed, against the sums above (which count the partner's slot wholly newer or wholly older): the last call
    has only its own result after it (n - 1 results fewer), the first result only the first call before it (n - 1
    calls fewer). Nothing moves for the first call, the last result, or a partner outside the window."""
    if member == "last" and i + 1 < s.n:
        half, partner = s.role[i] == R["tool_call"], i + 1
    elif member == "first" and i > 0:
        half, partner = s.role[i] == R["tool_result"], i - 1
    else:
        return z3.IntVal(0), z3.IntVal(0)
    moved = z3.And(s.paired[i], half, s.in_window(partner))
    spans = z3.If(moved, s.count[i] - 1, 0)
    tokens = z3.If(moved, s.times(partner, s.tokens[partner]) - s.tokens[partner], 0)
    return (spans, tokens) if member == "last" else (-spans, -tokens)
