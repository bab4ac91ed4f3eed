"""The policy AST, the span vocabulary it ranges over, and the deployment it runs under."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from fractions import Fraction
from typing import Optional, Union

from prunecheck.spec.names import MAX_NAME_CHARS, name_code, name_of, name_problem, unmentioned_name  # noqa: F401
from prunecheck.spec.provenance import BASES, Claim, DeploymentBasis, Origin  # noqa: F401

KINDS = ("message", "tool_output", "file_body", "stack_trace", "summary", "diff", "record", "rationale")
CONTENT_KINDS = KINDS[:6]
NAMESPACES = ("window", "undo", "log")
ROLES = ("user", "assistant", "system", "tool_call", "tool_result")  # `user` first: the least, the default

BOOL, NUM, KIND, NAMESPACE, ROLE = "bool", "num", "kind", "namespace", "role"
ENUM_VALUES = {KIND: KINDS, NAMESPACE: NAMESPACES, ROLE: ROLES}
# Open enumerations (spec/SPEC.md §1c): any name the host writes; a policy compares them with string literals only.
TOOL, TAG = "tool", "tag"
NAME_ATTRS = (TOOL, TAG)  # each attribute is its own type, named as the attribute
EVENT = "event"  # the event the host fires a compaction on (spec/SPEC.md §4g): a name too, of the compaction
NAME_TYPED = NAME_ATTRS + (EVENT,)  # the attributes compared with string literals only


@dataclass(frozen=True)
class Interval:
    """Rational bounds [lo, hi]; None means unbounded on that side; lo_open/hi_open make a bound strict."""

    lo: Optional[Fraction]
    hi: Optional[Fraction]
    lo_open: bool = False
    hi_open: bool = False


def _iv(lo, hi=None, lo_open=False, hi_open=False) -> Interval:
    return Interval(None if lo is None else Fraction(lo), None if hi is None else Fraction(hi), lo_open, hi_open)


# name -> (type, interval of values in every reachable state; None for non-numeric)
SPAN_ATTRS = {
    "tokens": (NUM, _iv(1)),
    "age": (NUM, _iv(0)),
    "idle": (NUM, _iv(0)),
    "reads": (NUM, _iv(0)),
    "recency": (NUM, _iv(0, 1, lo_open=True)),
    "frequency": (NUM, _iv(0)),
    "pinned": (BOOL, None),
    "edited": (BOOL, None),
    "kind": (KIND, None),
    "namespace": (NAMESPACE, None),
    "role": (ROLE, None),
    "tool": (TOOL, None),
    "tag": (TAG, None),
    # Positions (spec/SPEC.md §1b): counts over the live spans of the window, in id order.
    "position": (NUM, _iv(0)),
    "from_end": (NUM, _iv(0)),
    "from_end_in_role": (NUM, _iv(0)),
    "turn": (NUM, _iv(0)),
    "tokens_after": (NUM, _iv(0)),
    "masked": (BOOL, None),
}
WINDOW_ATTRS = {
    "window_tokens": (NUM, _iv(0)),
    "budget": (NUM, _iv(1)),
    "step": (NUM, _iv(0)),
    "window_spans": (NUM, _iv(0)),
}
# What the host tells a compaction when it fires one (spec/SPEC.md §4g): why (an event name, "" for none) and the
# token usage the previous model call reported. Read only in `when`: they are the trigger's, not the spans'.
TRIGGER_ATTRS = {
    EVENT: (EVENT, None),
    "reported_tokens": (NUM, _iv(0)),
}
POSITION_ATTRS = ("position", "from_end", "from_end_in_role", "turn", "tokens_after", "window_spans")
ATTRS = {**SPAN_ATTRS, **WINDOW_ATTRS, **TRIGGER_ATTRS}
OWN_ATTRS = tuple(name for name in SPAN_ATTRS if name not in POSITION_ATTRS)  # what an aggregate's condition reads

from prunecheck.spec.expr import (  # noqa: F401 (the AST is part of the policy's vocabulary)
    AGGREGATES, ARITH_OPS, BOOL_OPS, CALLABLE, COMPARE_OPS, FUNCTIONS, NODE_TYPES, NOWHERE, WHOLE_OPS, Attr, Binary,
    BoolLit, Call, Cond, EnumLit, Expr, InSet, Loc, Num, Unary, children, is_aggregate, outer_subexpressions,
    subexpressions, window_aggregate)

DEPLOYMENT_CHOICES = {
    "records": ("undo_region", "window"),
    "rationale": ("decision_log", "window"),
    "pins": ("host", "self"),
    "audit": ("independent", "policy"),
    "undo": ("versioned", "blind", "merge"),
    "record_role": ROLES,
    "evicted": ("destroyed", "logged", "tombstone"),
    "evidence": ("off", "on"),
    "justification": ("unchecked", "downgrade", "defer"),
    "refusal": ("silent", "atomic", "sequential"),
    "missing_record": ("refuse", "reconstruct"),
    "host_truncation": ("off", "on"),
    "tool_calls": ("on", "off"),
    "destroy_record": ("verbatim", "id"),
    "safe_undo": ("off", "on"),
}
# Deployment keys whose value is a name (spec/SPEC.md §1c), not one of a few choices, and their defaults.
DEPLOYMENT_NAMES = {"record_tool": ""}
DEPLOYMENT_KEYS = (*DEPLOYMENT_CHOICES, *DEPLOYMENT_NAMES)
# Deployment keys left out of Deployment.as_dict() (documents, reports) at their default, so old outputs stay the same.
UNLISTED_AT_DEFAULT = {"evicted": "destroyed", "evidence": "on", "justification": "unchecked", "refusal": "silent",
                       "missing_record": "refuse", "host_truncation": "off", "tool_calls": "on", "destroy_record": "id",
                       "safe_undo": "off", **DEPLOYMENT_NAMES}
# The values a policy's hash (its repr) leaves out: each key's default when it came in (`evidence`, `destroy_record`
# changed theirs, ADR 0035: a report cached under the old meaning hashes differently and is never read back).
UNHASHED = {"record_role": "tool_result", **UNLISTED_AT_DEFAULT, "evidence": "off", "destroy_record": "verbatim"}
EFFECTS = ("evict", "mask", "cut", "summarise")
IN_PLACE = ("mask", "cut")  # effects that leave a taken span in the window, its content replaced or cut short
SIZED = IN_PLACE + ("summarise",)  # effects that read placeholder_tokens (a summary's tokens for summarise)
SUMMARY_ROLES = ("user", "assistant", "system")  # a summary is a message, never half of a tool-call pair (SPEC 4d)
# Where a summary stands (SPEC 4d): where the oldest span it replaced stood, or at the end of the window (after every
# span the stage left, as an appended span).
SUMMARY_AT = ("replaced", "end")


@dataclass(frozen=True, repr=False)
class Deployment:
    """Where records and rationale live, who pins, who audits, how undo checks, what evidence is kept; the defaults are
    the first seed's safe design with the second seed's conditions checked (ADR 0035): what a host does with an
    evicted span or a cited one is not assumed (destroyed, unchecked) until the deployment says so."""

    records: str = "undo_region"
    rationale: str = "decision_log"
    pins: str = "host"
    audit: str = "independent"
    undo: str = "versioned"
    record_role: str = "tool_result"  # the role of the records and rationale entries an edit creates
    evicted: str = "destroyed"  # what a compaction does with the spans it removes: kill them, or move them to the log
    record_tool: str = ""  # the tool name of the records and rationale entries an edit creates ("" = unnamed)
    evidence: str = "on"  # the second seed's evidence conditions apply, compactions write ledger entries (SPEC §6d)
    justification: str = "unchecked"  # what a removal does to a span a live entry cites (SPEC §6d)
    refusal: str = "silent"  # what a compaction whose selection names a recovery span does (SPEC §6e)
    missing_record: str = "refuse"  # undo without a present record: irreversible, or the seed's confabulation (§4)
    host_truncation: str = "off"  # a host truncating to its own budget: out of the seeds' scope (SPEC §2, ADR 0032)
    tool_calls: str = "on"  # the agent calls tools: T1 applies to every policy (SPEC §6c, ADR 0033)
    destroy_record: str = "id"  # what a destroy's record keeps: its content verbatim, or its id (SPEC §4)
    safe_undo: str = "off"  # the first seed's `safe_undo`: the closure check runs before every undo (SPEC §4)

    def __post_init__(self):
        for key in DEPLOYMENT_KEYS:
            problem = deployment_value_problem(key, getattr(self, key))
            if problem:
                raise ValueError(problem)

    def as_dict(self, also: tuple = ()) -> dict:
        """Every key, except those of UNLISTED_AT_DEFAULT at their default and not in `also` (the keys an override
        set: a report names what it was told to check, a default included)."""
        return {key: getattr(self, key) for key in DEPLOYMENT_KEYS
                if key in also or UNLISTED_AT_DEFAULT.get(key) != getattr(self, key)}

    def all_keys(self) -> dict:
        return {key: getattr(self, key) for key in DEPLOYMENT_KEYS}

    def __repr__(self) -> str:
        # The keys at their UNHASHED values are left out, so that a policy's hash (its repr) stays what it was before
        # they came in.
        keys = [k for k in DEPLOYMENT_KEYS if UNHASHED.get(k) != getattr(self, k)]
        return f"Deployment({', '.join(f'{k}={getattr(self, k)!r}' for k in keys)})"


def deployment_value_problem(key: str, value) -> str:
    """Why `value` is not a value of deployment key `key` (one of its choices, or a name), or ""."""
    if key in DEPLOYMENT_NAMES:
        problem = name_problem(value)
        return f"deployment {key}: {problem}" if problem else ""
    if value not in DEPLOYMENT_CHOICES[key]:
        return f"deployment {key} must be one of {', '.join(DEPLOYMENT_CHOICES[key])}"
    return ""


@dataclass(frozen=True)
class DeploymentOverride:
    """Deployment settings that replace the same keys of a policy's own deployment; the other keys stay the policy's."""

    settings: tuple = ()  # ((key, value), ...), in DEPLOYMENT_CHOICES order, each key at most once
    source: str = field(default="<deployment>", compare=False)

    def __post_init__(self):
        keys = [key for key, _value in self.settings]
        if len(set(keys)) != len(keys):
            raise ValueError("a deployment override gives each key at most once")
        for key, value in self.settings:
            if key not in DEPLOYMENT_KEYS:
                raise ValueError(f"unknown deployment key {key!r} (keys: {', '.join(DEPLOYMENT_KEYS)})")
            problem = deployment_value_problem(key, value)
            if problem:
                raise ValueError(problem)
        order = list(DEPLOYMENT_KEYS)
        object.__setattr__(self, "settings", tuple(sorted(self.settings, key=lambda kv: order.index(kv[0]))))

    @classmethod
    def of(cls, mapping: dict, source: str = "<deployment>") -> "DeploymentOverride":
        return cls(tuple(mapping.items()), source)

    @classmethod
    def whole(cls, deployment: Deployment, source: str = "<deployment>") -> "DeploymentOverride":
        """An override of every key: what a complete Deployment given as an override means."""
        return cls(tuple(deployment.all_keys().items()), source)

    def keys(self) -> tuple:
        return tuple(key for key, _value in self.settings)

    def as_dict(self) -> dict:
        return dict(self.settings)

    def apply(self, deployment: Deployment) -> Deployment:
        return replace(deployment, **self.as_dict())


# The first seed's observed scenario (ADR 0037): records and rationale in the window, pins set by the agent, the
# closure status reported by the pruning pass. It assumes nothing a policy's author could have arranged, so it is the
# deployment a policy is judged under when the operator states none.
LEAST_ASSUMING = Deployment(records="window", rationale="window", pins="self", audit="policy")


@dataclass(frozen=True)
class Acceptance:
    """An accepted finding: `condition` may be violated or unknown, for `reason`; `kind` is SARIF's suppression kind
    (inSource: the policy's `accept` key; external: a baseline file), `loc` where it is written in `source`."""

    condition: str
    reason: str
    kind: str = "inSource"
    source: str = "<policy>"
    loc: Loc = NOWHERE
    verdict: str = "violated"  # the worst verdict it accepts (a baseline entry records what it saw)


ORDERS = ("oldest", "newest")  # the compaction stage's candidate order without a rank; the default first
PAIRS = ("apart", "together")  # the `pairs` key: whether a compaction takes a tool call and its result together
QUIET_POLICY_DEFAULTS = {"keep": None, "when": None, "until": None, "order": "oldest", "effect": "evict",
                         "placeholder_tokens": 1, "pairs": "apart", "summary_role": "user", "start_on": None,
                         "later": (), "summary_at": "replaced"}
# A stage's own keys (SPEC §4h): the first stage is the policy's top-level keys, each later one a Stage.
STAGE_KEYS = ("evict", "rank", "keep", "when", "until", "order", "effect", "placeholder_tokens", "pairs",
              "summary_role", "start_on", "summary_at")


def stage_problem(effect, placeholder_tokens, summary_role, order, pairs, start_on, summary_at="replaced") -> str:
    """What is wrong with a stage's settings ("" if nothing): the one check of Policy and Stage."""
    if effect not in EFFECTS:
        return f"effect must be one of {', '.join(EFFECTS)}"
    if type(placeholder_tokens) is not int or placeholder_tokens < 1:
        return "placeholder_tokens is an integer >= 1"
    if effect not in SIZED and placeholder_tokens != 1:
        return "placeholder_tokens is only for effect: mask, cut or summarise"
    if summary_role not in SUMMARY_ROLES:
        return f"summary_role must be one of {', '.join(SUMMARY_ROLES)}"
    if effect != "summarise" and summary_role != "user":
        return "summary_role is only for effect: summarise"
    if order not in ORDERS:
        return f"order must be one of {', '.join(ORDERS)}"
    if pairs not in PAIRS:
        return f"pairs must be one of {', '.join(PAIRS)}"
    if start_on is not None and start_on not in ROLES:
        return f"start_on must be one of {', '.join(ROLES)}"
    if summary_at not in SUMMARY_AT:
        return f"summary_at must be one of {', '.join(SUMMARY_AT)}"
    if effect != "summarise" and summary_at != "replaced":
        return "summary_at is only for effect: summarise"
    return ""


@dataclass(frozen=True)
class Stage:
    """A later stage of a compaction (SPEC §4h): the keys of the policy's own stage, run on the window the stage
    before it left."""

    evict: Expr
    rank: Optional[Expr] = None
    keep: Optional[Expr] = None
    when: Optional[Expr] = None
    until: Optional[Expr] = None
    order: str = "oldest"
    effect: str = "evict"
    placeholder_tokens: int = 1
    pairs: str = "apart"
    summary_role: str = "user"
    start_on: Optional[str] = None
    summary_at: str = "replaced"

    def __post_init__(self):
        problem = stage_problem(self.effect, self.placeholder_tokens, self.summary_role, self.order, self.pairs,
                                self.start_on, self.summary_at)
        if problem:
            raise ValueError(problem)


@dataclass(frozen=True, repr=False)
class Policy:
    """A parsed, type-checked pruning policy; `evict` selects candidates, `rank` orders them (lower first); `keep`,
    `when`, `until` and `order` are the rest of the compaction stage (spec/SPEC.md 4b); `effect` says what happens to
    the spans the stage takes (evicted, or masked to `placeholder_tokens` tokens; spec/SPEC.md 4c); `pairs` whether
    it takes tool-call pairs together (spec/SPEC.md 6c); `start_on` the role the window left must start on (4b)."""

    name: str
    evict: Expr
    rank: Optional[Expr] = None
    budget: Optional[int] = None
    deployment: Deployment = Deployment()
    description: str = ""
    source: str = field(default="<policy>", compare=False, repr=False)
    overridden: tuple = field(default=(), compare=False, repr=False)  # deployment keys set by an override
    accepts: tuple = field(default=(), compare=False, repr=False)  # Acceptances; not hashed (docs/decisions/0007)
    expects: tuple = field(default=(), compare=False, repr=False)  # checker.result.Expectations; not hashed either
    origin: Optional[Origin] = field(default=None, compare=False, repr=False)  # None: not parsed from text
    basis: DeploymentBasis = field(default=DeploymentBasis(), compare=False, repr=False)  # whose deployment (ADR 0037)
    # Left out of the repr at their defaults (QUIET_POLICY_DEFAULTS), so that old policies' hashes (reprs') stay.
    keep: Optional[Expr] = None  # spans the stage never takes
    when: Optional[Expr] = None  # the trigger (a window expression); None: always
    until: Optional[Expr] = None  # the target (a window expression); None: the legacy rule
    order: str = "oldest"  # the candidates' order when there is no rank
    effect: str = "evict"
    placeholder_tokens: int = 1
    pairs: str = "apart"
    summary_role: str = "user"  # the role of the summary a summarising stage writes (SPEC 4d)
    start_on: Optional[str] = None  # a role: the stage also takes the leading spans it leaves up to one of that role
    later: tuple = ()  # the compaction's later stages (Stage, ...), each run on the window the one before left (§4h)
    summary_at: str = "replaced"  # where a summary stands: where the oldest span it replaced stood, or at the end (4d)

    def __post_init__(self):
        problem = stage_problem(self.effect, self.placeholder_tokens, self.summary_role, self.order, self.pairs,
                                self.start_on, self.summary_at)
        if problem:
            raise ValueError(problem)
        if not isinstance(self.later, tuple) or not all(isinstance(st, Stage) for st in self.later):
            raise ValueError("later is a tuple of Stages")
        object.__setattr__(self, "aggregates", read_aggregates(self))  # read on every span's every evaluation
        # Each stage as a policy of one stage (the deployment and budget are the whole policy's), in order.
        object.__setattr__(self, "stages", (self,) if not self.later else (
            replace(self, later=(), origin=stage_origin(self.origin, 0)),) + tuple(
            replace(self, later=(), origin=stage_origin(self.origin, k), **{key: getattr(st, key) for key in STAGE_KEYS})
            for k, st in enumerate(self.later, 1)))

    def __repr__(self) -> str:
        shown = [f for f in fields(self) if f.repr and not (
            f.name in QUIET_POLICY_DEFAULTS and QUIET_POLICY_DEFAULTS[f.name] == getattr(self, f.name))]
        return f"Policy({', '.join(f'{f.name}={getattr(self, f.name)!r}' for f in shown)})"


def stage_origin(origin: Optional[Origin], k: int) -> Optional[Origin]:
    """The origin of stage k (0: the first) of a list of stages: its own keys as a policy's, `compaction[k].KEY`
    read as `KEY`, with the whole policy's keys (name, budget, deployment) kept."""
    if origin is None:
        return None
    prefix, keys = f"compaction[{k}].", []
    for key, loc in origin.keys:
        if key.startswith("compaction["):
            if k and key.startswith(prefix):
                keys.append((key[len(prefix):], loc))
        elif k == 0 or key not in STAGE_KEYS:
            keys.append((key, loc))
    return replace(origin, keys=tuple(keys))


def stage_exprs(policy: Policy) -> tuple:
    """Every expression of the policy, evict first: evict, rank, keep, when, until (those that are set), stage by
    stage."""
    return tuple(e for st in (policy, *policy.later) for e in (st.evict, st.rank, st.keep, st.when, st.until)
                 if e is not None)


def staged(policy: Policy) -> bool:
    """Whether the compaction has more than one stage (SPEC §4h)."""
    return bool(policy.later)


def with_override(policy: Policy, override: Optional[DeploymentOverride]) -> Policy:
    """The policy with override's keys set in its deployment (and recorded in `overridden`); None changes nothing."""
    if override is None:
        return policy
    keys = tuple(k for k in DEPLOYMENT_KEYS if k in set(policy.overridden) | set(override.keys()))
    return replace(policy, deployment=override.apply(policy.deployment), overridden=keys)


def read_attributes(policy: Policy) -> frozenset:
    """The attributes the policy's expressions (evict, rank, keep, when, until) read."""
    return frozenset(node.name for e in stage_exprs(policy) for node in subexpressions(e) if isinstance(node, Attr))


def read_aggregates(policy: Policy) -> tuple:
    """The distinct aggregates the policy's expressions read, in the order they are first written (SPEC §1e)."""
    found: dict = {}
    for expr in stage_exprs(policy):
        for node in subexpressions(expr):
            if is_aggregate(node):
                found.setdefault(node, None)
    return tuple(found)


def uses_pairs(policy: Policy) -> bool:
    """Whether the policy can tell tool-call pairs apart: it reads `role`, sets `pairs` or `start_on`."""
    return any(st.pairs != "apart" or st.start_on is not None for st in policy.stages) or \
        reads_attribute(policy, "role")


def calls_tools(policy: Policy) -> bool:
    """Whether the deployment's agent calls tools (`tool_calls: on`, the default): then any compaction, role-blind or
    not, may split a call from its result, and condition T1 applies (SPEC §6c)."""
    return policy.deployment.tool_calls == "on"


def reads_attribute(policy: Policy, name: str) -> bool:
    """Whether any of the policy's expressions (evict, rank, keep, when, until) reads the attribute `name`."""
    return name in read_attributes(policy)


ROLE_READERS = ("role", "turn", "from_end_in_role")  # attributes whose values depend on spans' roles


def reads_roles(policy: Policy) -> bool:
    """Whether the policy can tell roles apart: it reads `role` or a position that counts by role, or sets
    `start_on`."""
    return any(st.start_on is not None for st in policy.stages) or bool(read_attributes(policy) & set(ROLE_READERS))


def mentioned_names(policy: Policy) -> tuple:
    """Per name attribute the policy reads (NAME_ATTRS order), the names it compares it with, and for `tool` the
    deployment's record_tool (records carry it), sorted: ((attribute, (name, ...)), ...). The one place the models and
    the explicit engine take the names from (spec/SPEC.md §1c)."""
    found = compared_names(stage_exprs(policy), NAME_ATTRS)
    if TOOL in found:
        found[TOOL].add(policy.deployment.record_tool)
    return tuple((name, tuple(sorted(found[name]))) for name in NAME_ATTRS if name in found)


def mentioned_events(policy: Policy) -> tuple:
    """The event names the policy's `when` compares `event` with, sorted (spec/SPEC.md §4g): with one unmentioned
    name standing for every other (spec.names.unmentioned_name), the events a compaction can be told apart by."""
    whens = tuple(st.when for st in policy.stages if st.when is not None)
    return tuple(sorted(compared_names(whens, (EVENT,)).get(EVENT, ())))


def compared_names(exprs, attrs: tuple) -> dict:
    """Per attribute of `attrs` compared with string literals in `exprs` (==, != or in), the set of those literals."""
    found: dict = {}
    for expr in exprs:
        for node in subexpressions(expr):
            if isinstance(node, InSet) and isinstance(node.arg, Attr) and node.arg.name in attrs:
                found.setdefault(node.arg.name, set()).update(v.value for v in node.values)
            elif isinstance(node, Binary) and node.op in ("==", "!="):
                for attr, lit in ((node.left, node.right), (node.right, node.left)):
                    if isinstance(attr, Attr) and attr.name in attrs and isinstance(lit, EnumLit):
                        found.setdefault(attr.name, set()).add(lit.value)
    return found


def read_triggers(policy: Policy) -> tuple:
    """The trigger attributes (TRIGGER_ATTRS) the policy reads, in that order: what a compaction action carries."""
    names = read_attributes(policy)
    return tuple(name for name in TRIGGER_ATTRS if name in names)


def read_positions(policy: Policy) -> tuple:
    """The positional attributes (POSITION_ATTRS) the policy reads, in POSITION_ATTRS order."""
    names = read_attributes(policy)
    return tuple(name for name in POSITION_ATTRS if name in names)


def keeps_destroyed_content(deployment: Deployment) -> bool:
    """A destroy edit's record keeps the destroyed content verbatim (`destroy_record: verbatim`): then every present
    record can restore its target; under `id` a destroy's record is its target's id and cannot (SPEC §4)."""
    return deployment.destroy_record == "verbatim"


def shortens(policy: Policy, tokens) -> bool:
    """Whether taking a span of `tokens` in place changes it: a mask always does; a cut only a span longer than its
    placeholder (a cut that shortens nothing removes nothing, SPEC §4c)."""
    return policy.effect != "cut" or tokens > policy.placeholder_tokens


def left_tokens(policy: Policy, tokens):
    """A span's tokens once the stage has taken it in place: the placeholder's (mask), or at most that many (cut)."""
    return policy.placeholder_tokens if policy.effect == "mask" else min(tokens, policy.placeholder_tokens)


def summarises(policy: Policy) -> bool:
    """Whether the policy's stage writes summaries: only then do spans have places other than their ids (SPEC 4d)."""
    return any(st.effect == "summarise" for st in policy.stages)


def masks(policy: Policy) -> bool:
    """Whether spans of this policy's runs can be masked, or the policy reads `masked`: only then do models track it."""
    return any(st.effect in IN_PLACE for st in policy.stages) or reads_attribute(policy, "masked")


def has_effects(policy: Policy) -> bool:
    """Whether anything a compaction takes may stay alive (masked, or logged): "removed" is then more than dead."""
    return masks(policy) or policy.deployment.evicted == "logged"
