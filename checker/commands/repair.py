"""`prunecheck repair`: the proved-safe change to a violated policy that keeps most of its intent, as a diff."""

from __future__ import annotations

import enum
import itertools
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Optional

from prunecheck.spec.conditions import CONDITIONS, applicable, evidence_on, violations
from prunecheck.spec.errors import PolicySyntaxError, PrunecheckError
from prunecheck.spec.policy import DEPLOYMENT_CHOICES, Policy
from prunecheck.spec.runtime import ActionRefused, Append, Compact, Edit, State, step

from prunecheck.checker.check import check, new_report
from prunecheck.checker.language.document import policy_document, policy_hash
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.engines.prove import prove_all
from prunecheck.checker.options import DEFAULTS, CheckOptions
from prunecheck.checker.progress import current
from prunecheck.spec.actions import action_text
from prunecheck.spec.state import host_truncates
from prunecheck.checker.commands.repair_output import describe_changes, result_json, result_text, verdict_line
from prunecheck.checker.commands.repair_text import (EXCLUSIONS, ENVIRONMENT_KEYS, EVIDENCE_KEYS, SAFE_DEPLOYMENT,
                                                     Change, form_of, repaired_policy, repaired_text, unified_diff)
from prunecheck.symbolic.interrupts import stop_if_interrupted
from prunecheck.symbolic.terms import one_stage
from prunecheck.checker.result import Report, Trace, Verdict
from prunecheck.checker.language.typecheck import check_policy

MAX_ALTERNATIVES = 0  # further proved repairs to name after the preferred one (each may cost full checks)
EXIT_REPAIRED, EXIT_NONE, EXIT_UNDECIDED = 0, 1, 3
# Runs that break every policy with records (C2: the schema of proofs/host_budget.py) or rationale (P1: two live
# rationale entries hold 2 tokens, over a host budget of 1) in the window under host_truncation: on. They seed the runs every candidate is
# replayed on; like any of them they refute only a candidate they really break on the runtime.
SCHEMAS = (Trace("C2", (Append("message", 1), Edit(0, "transform"), Edit(0, "transform"), Compact(1)), 6),
           Trace("P1", (Append("message", 1), Append("message", 1), Edit(0, "destroy"), Edit(1, "destroy"),
                        Compact(1)), 6))


class Outcome(enum.Enum):
    """What became of one candidate change set."""

    REPLAYED_OUT = "refuted by replaying a known counterexample"
    VIOLATED = "violated"  # the full checker found a (replayed) counterexample
    UNDECIDED = "unknown"  # nothing violated, something unknown within the bounds
    PROVED = "proved"


@dataclass(frozen=True)
class Undecided:
    """A change set preferred to the repair found (or no repair found) that the checker could not decide."""

    changes: tuple
    unknown: tuple  # the conditions left unknown


@dataclass(frozen=True)
class RepairResult:
    """A proved repair (changes, repaired policy and text, diff, the proving Report), or None and the reason."""

    original: Report
    changes: Optional[tuple]
    policy: Optional[Policy] = None
    text: Optional[str] = None
    diff: Optional[str] = None
    report: Optional[Report] = None
    reason: str = ""
    form: str = "yaml"
    reprinted: bool = False  # the minimal edit did not re-parse to the repair: the whole policy was re-printed
    alternatives: tuple = ()  # other proved change tuples, in preference order (none contains an earlier one)
    alternatives_missing: str = ""  # why fewer alternatives were found than asked for ("" when enough, or none asked)
    undecided: tuple = ()  # Undecided sets preferred to the repair, or all when there is none (none contains another)
    candidates: int = 0  # change sets considered
    replayed_out: int = 0  # refuted by replaying a known counterexample on the runtime
    checked: int = 0  # given to the full checker
    seconds: float = field(default=0.0, compare=False)

    @property
    def already_holds(self) -> bool:
        return self.original.verdict == Verdict.HOLDS and all(r.verdict == Verdict.HOLDS
                                                              for r in self.original.results)

    @property
    def repaired(self) -> bool:
        return self.report is not None and bool(self.changes)

    @property
    def status(self) -> str:
        """holds | repaired | unknown (no proved repair, some candidate undecided) | none."""
        if self.already_holds:
            return "holds"
        if self.repaired:
            return "repaired"
        return "unknown" if self.undecided else "none"


def available_changes(policy: Policy, allow_deployment: bool = True) -> tuple:
    """Every unit change that applies to policy, in preference order (text, deployment, budget). The deployment keys
    that describe the host rather than a choice (ENVIRONMENT_KEYS) are never changed: a repair cannot switch off a
    host's truncation or its tool calls."""
    changes = [Change("exclude", kinds=kinds) for kinds in EXCLUSIONS]
    if "T1" in applicable(policy) and policy.pairs != "together":
        changes.append(Change("pairs"))
    if allow_deployment:
        safe = SAFE_DEPLOYMENT.as_dict()
        changes += [Change("deployment", key=key, value=safe[key])
                    for key in DEPLOYMENT_CHOICES if key in safe and key not in ENVIRONMENT_KEYS
                    and getattr(policy.deployment, key) != safe[key] and key not in policy.overridden
                    and (key not in EVIDENCE_KEYS or evidence_on(policy))]
    if policy.budget is not None:
        changes.append(Change("drop_budget"))
    return tuple(changes)


def preference(changes: tuple, available: tuple) -> tuple:
    """The sort key of a change set: the less of the policy's intent it gives up, the earlier. Keeping the budget
    comes first (dropping it changes what the policy evicts and where it stops), then fewer deployment settings
    changed, then the narrower evict exclusion (none, one kind, both), then the order `available` lists them in."""
    kinds = Counter(c.kind for c in changes)
    width = sum(len(c.kinds) for c in changes if c.kind == "exclude") + kinds["pairs"]
    return (kinds["drop_budget"], kinds["deployment"], width, tuple(available.index(c) for c in changes))


def candidate_sets(changes: tuple) -> tuple:
    """Every change tuple with at most one evict exclusion (one conjunct covers both kinds), by preference."""
    combos = []
    for cost in range(1, len(changes) + 1):
        for combo in itertools.combinations(changes, cost):
            if sum(c.kind == "exclude" for c in combo) <= 1:
                combos.append(combo)
    return tuple(sorted(combos, key=lambda combo: preference(combo, changes)))


def run_violations(policy: Policy, actions, spans: Optional[int]) -> frozenset:
    """Every condition the actions violate at some step when run on the reference runtime under policy, up to the
    first action the runtime does not enable there."""
    stop_if_interrupted()  # each candidate is replayed on every known run
    state, bad = State(), set()
    for action in actions:
        try:
            transition = step(policy, state, action, spans)
        except ActionRefused:
            break
        bad |= violations(policy, transition)
        state = transition.after
    return frozenset(bad)


def _traces(report: Report) -> list:
    return [r.trace for r in report.results if r.verdict == Verdict.VIOLATED and r.trace is not None]


def _split(changes: tuple):
    kinds = next((set(c.kinds) for c in changes if c.kind == "exclude"), set())
    return kinds, {c for c in changes if c.kind != "exclude"}


def _contains(changes: tuple, repair_changes: tuple) -> bool:
    """changes makes every change of a proved repair (a wider exclusion counts): naming it would add nothing."""
    (kinds, rest), (needed, needed_rest) = _split(changes), _split(repair_changes)
    return rest >= needed_rest and kinds >= needed


def _proved(report: Report, policy: Policy) -> bool:
    return (all(r.verdict == Verdict.HOLDS for r in report.results)
            and tuple(r.condition for r in report.results) == applicable(policy))


def _outcome(report: Report, policy: Policy) -> Outcome:
    if _proved(report, policy):
        return Outcome.PROVED
    return Outcome.VIOLATED if report.verdict == Verdict.VIOLATED else Outcome.UNDECIDED


def check_candidate(candidate: Policy, options: CheckOptions) -> Report:
    """The report `check` gives the candidate, found proofs first: a candidate that survived the replays is usually
    safe, and a proof of every condition makes the bounded search superfluous. The conditions left open go on
    to the rest of the full checker (bounded search, Spacer), as `check --only` would take them."""
    digest = policy_hash(candidate)
    wanted = applicable(candidate)
    proofs = prove_all(candidate, wanted, policy_document(candidate), digest, options.timeout, options.rlimit)
    open_conditions = [c for c in wanted if proofs[c].verdict != Verdict.HOLDS]
    if open_conditions:
        rest = check(candidate, replace(options, only=tuple(open_conditions), prove=True),
                     proofs={c: proofs[c] for c in open_conditions})
        proofs.update((r.condition, r) for r in rest.results)
    return new_report(candidate, digest, options.depth, options.spans, tuple(proofs[c] for c in wanted))


@dataclass
class _Search:
    """The state of one repair search: the runs every candidate is replayed on, and the tallies it reports."""

    policy: Policy
    form: str
    options: CheckOptions
    pool: list
    proved: list = field(default_factory=list)  # (changes, candidate, report), in preference order
    undecided: list = field(default_factory=list)  # Undecided sets preferred to the first proved one
    settled: list = field(default_factory=list)  # proved or undecided change sets, in the order found
    failed: Counter = field(default_factory=Counter)  # (condition, verdict) -> candidates it failed under
    after_repair: Counter = field(default_factory=Counter)  # what became of the sets after the first proved one
    considered: int = 0
    replayed_out: int = 0
    checked: int = 0

    def try_changes(self, changes: tuple) -> Optional[Outcome]:
        candidate = repaired_policy(self.policy, changes, self.form)
        if not _valid(candidate):
            return None
        self.considered += 1
        broken = next((bad for bad in (run_violations(candidate, t.actions, t.spans) for t in self.pool) if bad), None)
        if broken:
            self.replayed_out += 1
            self.failed[(min(broken, key=CONDITIONS.index), Verdict.VIOLATED)] += 1
            return Outcome.REPLAYED_OUT
        self.checked += 1
        report = check_candidate(candidate, self.options)
        self.pool += _traces(report)
        return self._record(changes, candidate, report)

    def _record(self, changes: tuple, candidate: Policy, report: Report) -> Outcome:
        outcome = _outcome(report, candidate)
        if outcome is not Outcome.VIOLATED:
            self.settled.append(changes)
        if outcome is Outcome.PROVED:
            self.proved.append((changes, candidate, report))
            return outcome
        first = next(r for r in report.results if r.verdict == report.verdict)
        self.failed[(first.condition, first.verdict)] += 1
        if outcome is Outcome.UNDECIDED and not self.proved:
            unknown = tuple(r.condition for r in report.results if r.verdict == Verdict.UNKNOWN)
            self.undecided.append(Undecided(changes, unknown))
        return outcome

    def covered(self, changes: tuple) -> bool:
        """changes contains a proved or an undecided set: it would name nothing new, or most likely be undecided
        for the same reason (the user is told to raise the bounds instead)."""
        return any(_contains(changes, settled) for settled in self.settled)

    def stats(self) -> dict:
        return dict(form=self.form, candidates=self.considered, replayed_out=self.replayed_out,
                    checked=self.checked, undecided=tuple(self.undecided))


def repair(policy: Policy, text: str, source: str, allow_deployment: bool = True, options: CheckOptions = DEFAULTS,
           alternatives: int = MAX_ALTERNATIVES, original: Optional[Report] = None, judge=None) -> RepairResult:
    """Search change sets in preference order (`preference`) for the first under which every condition is proved
    (HOLDS with a certificate); candidates a known counterexample still breaks on the runtime are dropped without
    a solver. Then up to `alternatives` more proved repairs are named, each not containing an earlier one. Every
    check is made with `options` (its bounds: depth, spans, `timeout` seconds and `rlimit` per condition), proofs
    on; `original`, when given, must be `check`'s report of policy at these bounds (it is what the result says of
    the policy); `judge`, when given, maps the text's parsed policy to the policy as judged (under the operator's
    deployment, checker/language/operator.py): the deployment keys the operator set are never changed."""
    started = time.perf_counter()
    form = form_of(source)
    parsed = parse_policy_text(text, source)
    if (judge(parsed) if judge is not None else parsed) != policy:
        raise PolicySyntaxError("the policy differs from its text (a deployment override?): repair edits the text",
                                source, 1, 1)
    one_stage(policy, "repair proves its changes, and the symbolic models encode one stage")  # SPEC §4h
    options = replace(options, only=CONDITIONS, prove=True)
    if original is not None:
        _require_own_report(original, policy, options)
    progress = current()
    if original is None:
        progress.item(f"{policy.name} as written")
        original = check(policy, options)
    if _proved(original, policy):
        return RepairResult(original, (), policy, text, "", original, "every condition already holds", form,
                            seconds=time.perf_counter() - started)
    search = _Search(policy, form, options, [*SCHEMAS, *_traces(original)])
    sets = candidate_sets(available_changes(policy, allow_deployment))
    progress.expect(len(sets))
    for changes in sets:
        if len(search.proved) > alternatives:
            break
        repaired = bool(search.proved)
        if search.covered(changes):
            outcome = "covered"
        else:
            progress.item(f"candidate: {describe_changes(changes, form)}")
            outcome = search.try_changes(changes)
        if repaired:
            search.after_repair[outcome] += 1
        progress.advance()
    if not search.proved:
        reason = _no_repair_reason(policy, original, form, allow_deployment, search)
        return RepairResult(original, None, reason=reason, seconds=time.perf_counter() - started, **search.stats())
    changes, candidate, report = search.proved[0]
    new_text, parsed, reprinted = repaired_text(text, source, policy, changes, judge)
    if parsed != candidate:
        raise PrunecheckError("internal: the repaired text does not hold the proved policy")
    found = tuple(changes for changes, _, _ in search.proved[1:])
    return RepairResult(original, changes, candidate, new_text, unified_diff(text, new_text, source), report,
                        reprinted=reprinted, alternatives=found,
                        alternatives_missing=_missing_alternatives(len(found), alternatives, search.after_repair),
                        seconds=time.perf_counter() - started, **search.stats())


def _require_own_report(original: Report, policy: Policy, options: CheckOptions) -> None:
    same = (original.policy_hash == policy_hash(policy)
            and (original.depth, original.spans) == (options.depth, options.spans)
            and tuple(r.condition for r in original.results) == applicable(policy))
    if not same:
        raise ValueError("the report given is not check's report of this policy (every condition that applies) at "
                         "these bounds")


def _missing_alternatives(found: int, asked: int, after: Counter) -> str:
    """Why the search named fewer alternatives than asked for: how the change sets after the repair came out."""
    if found >= asked:
        return ""
    tried = sum(after.values())
    head = f"{found} of the {asked} alternative{'s' * (asked != 1)} asked for found"
    if not tried:
        return f"{head}: no change set comes after the repair in the order of preference"
    parts = [(after["covered"], "containing a set already proved or undecided (naming nothing new)"),
             (after[Outcome.REPLAYED_OUT], "refuted by replaying a known counterexample"),
             (after[Outcome.VIOLATED], "violated"), (after[Outcome.UNDECIDED], "undecided within the bounds"),
             (after[None], "not a valid policy")]
    why = ", ".join(f"{n} {words}" for n, words in parts if n)
    return f"{head}; the {tried} change set{'s' * (tried != 1)} after the repair: {why}"


def _failure_tally(failed: Counter) -> str:
    """"C2 violated under 5 candidates, C4 unknown under 1 candidate"."""
    parts = []
    for (condition, verdict), n in sorted(failed.items(), key=lambda item: (CONDITIONS.index(item[0][0]),
                                                                             -item[0][1])):
        parts.append(f"{condition} {verdict} under {n} candidate{'s' * (n != 1)}")
    return ", ".join(parts)


def _no_repair_reason(policy: Policy, original: Report, form: str, allow_deployment: bool, search: _Search) -> str:
    """Why the search found nothing; for --text-only, a condition no policy text can reach, checked by replay."""
    fails = _failure_tally(search.failed)
    if search.undecided:
        tried = "within the bounds (a change set containing an undecided one is not tried)"
    else:
        tried = "within every combination of the allowed changes" + ("" if allow_deployment else " to the policy text")
    lines = [f"no {'proved ' * bool(search.undecided)}repair {tried}" + (f": {fails}" if fails else "")]
    if allow_deployment:
        return lines[0]
    texts = [p for p in (repaired_policy(policy, changes, form)
                         for changes in candidate_sets(available_changes(policy, allow_deployment=False))) if _valid(p)]
    for r in original.results:
        if r.verdict != Verdict.VIOLATED or r.trace is None or r.condition == "C1":
            continue
        if r.condition == "C2" and policy.deployment.records == "window" and host_truncates(policy):
            lines.append("no text repair can exist for C2: with records in the window and host_truncation: on every "
                         "policy violates it at some host budget (proofs/host_budget.py: append(message, 1); two edits of "
                         "span 0; compact(budget=1) truncates or evicts a record whatever the policy's keys say). "
                         "The deployment decides it (records: window): run without --text-only.")
            continue
        if any(isinstance(a, Compact) for a in r.trace.actions):
            continue
        if all(r.condition in run_violations(p, r.trace.actions, r.trace.spans) for p in texts):
            unsafe = ", ".join(f"{k}: {v}" for k, v in policy.deployment.as_dict().items()
                               if v != SAFE_DEPLOYMENT.all_keys()[k])
            lines.append(
                f"no text repair can exist for {r.condition}: its counterexample "
                f"({', '.join(action_text(a, keywords=True) for a in r.trace.actions)}) has no compact step, and the policy's "
                f"keys are consulted only by compact (and {r.condition} is not C1, which reads evict and keep directly); "
                f"replayed on the runtime, the same run violates {r.condition} under all {len(texts)} text "
                f"candidates too. The deployment decides it ({unsafe or 'defaults'}): run without --text-only.")
    return "\n".join(lines)


def _valid(policy: Policy) -> bool:
    try:
        check_policy(policy, policy.source)
    except PolicySyntaxError:  # e.g. dropping a budget that evict reads
        return False
    return True


__all__ = ["RepairResult", "Change", "Outcome", "Undecided", "repair", "available_changes",
           "candidate_sets", "preference", "check_candidate", "run_violations", "verdict_line", "result_text",
           "result_json"]
