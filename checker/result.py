"""Verdicts, per-condition results and whole-policy reports: the one shape every engine returns."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Optional

from prunecheck.spec.actions import real_steps
from prunecheck.spec.policy import NOWHERE, DeploymentBasis, Loc


class Verdict(enum.IntEnum):
    """Ordered so that the worst verdict of a report is its max."""

    HOLDS = 0
    UNKNOWN = 1
    VIOLATED = 2

    def __str__(self) -> str:
        return self.name.lower()


class Stop(enum.Enum):
    """How an engine ended without a verdict (an `unknown` result's cause; None on other results)."""

    BOUND = "bound"  # searched everything within its bounds
    LIMIT = "limit"  # a solver ran out of time or resources
    NO_PROOF = "no proof"  # finished without finding a proof


class Search(enum.Enum):
    """How the search for further counterexamples (--max-counterexamples) ended."""

    ENOUGH = "enough"  # found as many as asked
    EXHAUSTED = "exhausted"  # ran to its depth bound without finding enough
    QUERIES = "queries"  # its fixed number of solver queries was spent
    LIMIT = "limit"  # a solver ran out of time or resources, or answered unknown


@dataclass(frozen=True)
class Variants:
    """What the search for `asked` counterexamples established, up to `depth` actions over the report's spans.

    `contained` (its first pass ran to `depth`): every trace of at most `depth` actions that violates the condition
    first at its last action contains, in order, the action sequence of a counterexample shown. `search` is how the
    second pass ended; EXHAUSTED: every such trace begins with the action sequence of one shown, or of one of
    `reducible` traces found whose reduction is one shown. `reason`: why a LIMIT stop stopped, in plain words."""

    asked: int
    search: Search
    depth: int
    reducible: int = 0
    reason: str = ""
    contained: bool = False


@dataclass(frozen=True)
class Trace:
    """A counterexample: actions from the empty window, replayed on the runtime, ending in the violation."""

    condition: str
    actions: tuple
    spans: int

    @property
    def steps(self) -> int:
        """Real steps: a read or audit repeated n times counts n."""
        return real_steps(self.actions)

    def length(self) -> str:
        """"3 steps", or "3 actions, 503 steps" when some action is repeated."""
        return length_text(len(self.actions), self.steps)


def counted(n: int, noun: str, nouns: str = "") -> str:
    """`1 edit`, `2 edits` (`nouns`: the plural when it is not noun + s)."""
    return f"{n} {noun if n == 1 else nouns or noun + 's'}"


def length_text(actions: int, steps: int) -> str:
    if actions == steps:
        return counted(steps, "step")
    return f"{counted(actions, 'action')}, {counted(steps, 'step')}"


class Outcome(enum.Enum):
    """How one engine's attempt at one condition ended (a statistic, not a verdict)."""

    COUNTEREXAMPLE = "counterexample"
    BOUND = "bound reached"
    PROVED = "proved"
    NO_PROOF = "no proof"
    LIMIT = "solver limit"


@dataclass(frozen=True)
class EngineRun:
    """One engine's work on one condition: how it ended, the depth it searched completely (bmc, explicit), its solver
    queries (shared work such as lemma proofs or a joint query counted for every condition it served), the states it
    explored (explicit) and its time."""

    engine: Method  # BMC, EXPLICIT, INDUCTION or SPACER
    outcome: Outcome
    depth: Optional[int] = None
    queries: int = 0
    states: Optional[int] = None
    seconds: float = 0.0


@dataclass(frozen=True)
class Stats:
    """What the engines did for one condition, in the order they ran; every output reads it, none recomputes it."""

    runs: tuple = ()  # EngineRun, ...

    @property
    def queries(self) -> int:
        return sum(run.queries for run in self.runs)

    def then(self, *others: "Stats") -> "Stats":
        """These runs followed by the others'; an engine that ran twice (the quick bounded search, then the full one)
        is one run: the deeper depth, the sum of queries and time, the later outcome."""
        runs = {run.engine: run for run in self.runs}
        for run in (run for other in others for run in other.runs):
            first = runs.get(run.engine)
            if first is not None:
                depth = max((d for d in (first.depth, run.depth) if d is not None), default=None)
                run = EngineRun(run.engine, run.outcome, depth, first.queries + run.queries, run.states,
                                first.seconds + run.seconds)
            runs[run.engine] = run
        return Stats(tuple(runs.values()))


@dataclass(frozen=True)
class Bounds:
    """The limits a report was checked under besides depth and spans: seconds, z3 resources (0: none) and memory per
    condition, and the appends' token counts and repetitions when restricted (None: unrestricted)."""

    timeout: float = 0.0
    rlimit: int = 0
    memory_mb: int = 0
    tokens: Optional[tuple] = None
    repeats: Optional[tuple] = None


class Method(enum.Enum):
    """The engine that decided a result (Result.engine), and whether it abstracted the policy to a free predicate;
    its value is the text every output prints."""

    BMC = "bmc"
    EXPLICIT = "explicit"
    INDUCTION = "induction"
    INDUCTION_ABSTRACTED = "induction, policy abstracted to a free predicate"
    SPACER = "spacer"
    SPACER_ABSTRACTED = "spacer, policy abstracted to a free predicate"
    COMBINED = "bmc+induction+spacer"  # an unknown all three engines tried
    RUNS = "bmc with runs"  # the bounded search where one slot may hold a run of equal appended spans

    def __str__(self) -> str:
        return self.value

    @property
    def abstracted(self) -> bool:
        """Whether the proof held with the policy abstracted to a free predicate (for every policy of its shape)."""
        return self in (Method.INDUCTION_ABSTRACTED, Method.SPACER_ABSTRACTED)

class Found(enum.Enum):
    """What one engine's clause of a reason found."""

    VIOLATED = "violated"
    PROVED = "proved"
    BY_CONSTRUCTION = "by construction"  # proved, but the violation term is False under the deployment (no theorem)
    UNCONFIRMED = "proved, certificate not confirmed"
    FAULT = "checker fault"
    BOUND = "nothing within the bounds"
    LIMIT = "stopped at a limit"
    NO_PROOF = "no proof"
    MEMORY = "memory limit"


class Scope(enum.Enum):
    """Which attempt of a proof engine a clause is about."""

    ABSTRACTED = "policy abstracted"
    AS_WRITTEN = "policy as written"
    TIME = "time"  # no time was left for the attempt


class Tried(enum.Enum):
    """What part of a proof attempt a clause is about."""

    LEMMAS = "lemmas"  # induction's search for lemmas
    SAFETY = "safety"  # induction's safety check
    TEMPLATES = "templates"  # induction: no inductive invariant among the lemma templates
    ABSTRACTION = "abstraction"  # Spacer: the two-span abstraction reaches a violation


class SolverStop(enum.Enum):
    """Why a solver stopped without an answer; its value is the plain words every output prints (OTHER adds the
    solver's own)."""

    TIME_OR_RESOURCE = "its time or resource limit ran out"
    TIME = "its time limit ran out"
    RLIMIT = "its resource limit (rlimit) ran out"
    MEMORY = "its memory limit ran out"
    NONLINEAR = "the arithmetic is beyond its decision procedures (non-linear)"
    OTHER = "it answered unknown"


@dataclass(frozen=True)
class SolverSaid:
    """A solver's stop, with its own printable words when it is OTHER."""

    stop: SolverStop
    words: str = ""


@dataclass(frozen=True)
class Domains:
    """The finite choices the explorer tries: an append's token counts and content kinds, a read's or an audit's
    repetitions (a count, or up to a clock value), an append's roles; `derived` names the domains taken from the policy's constants
    rather than given."""

    tokens: tuple
    kinds: tuple
    repeats: tuple = (1,)
    derived: tuple = ()
    # Clock values a read or audit may also repeat up to (from `step` constants): times = target - the clock.
    clock_targets: tuple = ()
    roles: tuple = ("user",)  # an append's roles: those the policy names plus one unnamed
    # An append's tool names and tags, per attribute the policy reads: ((attribute, (name, ...)), ...); "" otherwise.
    names: tuple = ()
    # evidence: on (spec/SPEC.md §6d): an edit's or a compaction's citations are none or one present span.
    cites: bool = False
    # The (event, reported_tokens) pairs compactions are fired with (spec/SPEC.md §4g), for a policy that reads them.
    triggers: tuple = ()


@dataclass(frozen=True)
class Clause:
    """One engine's finding and its facts: depth and spans searched, a trace's actions and steps, whether reads
    repeat, where a search stopped (`at`), the solver's stop, the proof attempt and part, a certificate's status and
    the re-check's words, the states explored, the explicit search's limits and domains, a memory limit."""

    engine: Method
    found: Found
    depth: Optional[int] = None
    spans: Optional[int] = None
    actions: Optional[int] = None
    steps: Optional[int] = None
    repeats: Optional[bool] = None
    at: Optional[int] = None
    solver: Optional[SolverSaid] = None
    scope: Optional[Scope] = None
    tried: Optional[Tried] = None
    certificate: Optional[str] = None
    detail: Optional[str] = None
    states: Optional[int] = None
    time_limit: Optional[float] = None
    state_limit: Optional[int] = None
    domains: Optional[Domains] = None
    megabytes: Optional[int] = None


@dataclass(frozen=True)
class Part:
    """One engine's part of an unknown that several engines tried: how it stopped and its clauses."""

    engine: Method  # BMC, INDUCTION or SPACER
    stop: Stop
    clauses: tuple


class Need(enum.Enum):
    """Why an option would help decide a condition; its value is the words every output prints."""

    TIME = "more solver time"
    RESOURCES = "more solver resources"
    SPANS = "a violation may need more spans in the window at once"
    COUNT = "the policy counts spans of the window up to about this many: a violation may need that many at once"
    ACTIONS = "a violation may need more actions"


@dataclass(frozen=True)
class Advice:
    """An option that would help decide a condition: `option value` (value None: a larger one)."""

    option: str
    value: Optional[float]
    why: Need


class Note(enum.Enum):
    """A remark after a reason."""

    NO_PROVE = "no proof attempted (--no-prove: bounded search only)"
    STAGES = ("a list of compaction stages: searched by the explicit engine only, no proof attempted (the symbolic "
              "models encode one stage)")


@dataclass(frozen=True)
class Reason:
    """Why a result is what it is: one engine's clauses, or the parts of several engines, then advice and a note;
    checker/outputs/reasons.py renders it."""

    clauses: tuple = ()  # Clause, ...
    parts: tuple = ()  # Part, ...
    advice: tuple = ()  # Advice, ...
    note: Optional[Note] = None


@dataclass(frozen=True)
class Result:
    """One condition's verdict, with its evidence (trace or certificate) and why."""

    condition: str
    verdict: Verdict
    depth: Optional[int]
    reason: Reason
    engine: Method = Method.BMC
    trace: Optional[Trace] = None
    certificate: Optional[str] = None
    others: tuple = ()  # further counterexamples, different in their action sequence (--max-counterexamples)
    variants: Optional[Variants] = None  # how the search for the others ended (--max-counterexamples above 1)
    seconds: float = field(default=0.0, compare=False)
    stop: Optional[Stop] = field(default=None, compare=False)
    stats: Stats = field(default=Stats(), compare=False)


@dataclass(frozen=True)
class Expectation:
    """A verdict the policy's author expects for `condition` (its `expect:` table, or EXPECT), written at `loc` of
    `source`: a contract the check compares its verdicts with (Policy.expects)."""

    condition: str
    verdict: str
    source: str = "<policy>"
    loc: Loc = NOWHERE


VERSION_KEYS = ("prunecheck", "python", "z3", "cvc5")  # what a report's `versions` name


@dataclass(frozen=True)
class Report:
    """All results for one policy, with everything needed to reproduce them."""

    policy_name: str
    policy_hash: str
    source: str
    depth: int
    spans: int
    results: tuple
    versions: tuple = ()
    deployment: tuple = ()  # ((key, value), ...): the deployment checked, overrides applied
    overridden: tuple = ()  # the deployment keys the operator (configuration, --deployment, deployment=) set
    bounds: Optional[Bounds] = field(default=None, compare=False)
    recovery_peak: Optional["RecoveryPeak"] = field(default=None, compare=False)  # --recovery-peak only
    basis: DeploymentBasis = DeploymentBasis()  # whose deployment the verdicts rest on (ADR 0037)

    @property
    def verdict(self) -> Verdict:
        return max((r.verdict for r in self.results), default=Verdict.UNKNOWN)

    def result(self, condition: str) -> Result:
        for r in self.results:
            if r.condition == condition:
                return r
        raise KeyError(condition)


@dataclass(frozen=True)
class RecoveryPeak:
    """The most recovery records present at once over the runs explored, and the most tokens of the recovery set
    (records and their rationales present: the first seed's cost, "a token reservation for the recovery set"; None:
    not counted),
    within `depth` actions, `spans` slots and the appends' token counts `token_domain` (None: any): a bounded
    figure, not a proof. `complete`: the bounds were searched completely, so no run within them has more; otherwise
    the figures are what was reached. `witness`, `tokens_witness`: actions of runs that reach them (explicit engine)."""

    engine: Method  # EXPLICIT or BMC
    records: int
    tokens: Optional[int]
    depth: int
    spans: int
    token_domain: Optional[tuple]
    complete: bool = True
    witness: tuple = ()
    tokens_witness: tuple = ()
    queries: int = 0
    seconds: float = field(default=0.0, compare=False)

