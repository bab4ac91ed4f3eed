"""A row of `prunecheck reproduce` (a seed observation and what prunecheck found) and the helpers that produce rows."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from prunecheck.spec.actions import action_text
from prunecheck.spec.policy import DEPLOYMENT_CHOICES
from prunecheck.spec.runtime import State, step

from prunecheck.checker.check import check
from prunecheck.checker.engines.certificate_model import by_construction
from prunecheck.checker.options import options_with
from prunecheck.checker.outputs.reasons import reason_text
from prunecheck.checker.result import Verdict

# The seeds' observations are fixed: bounded by solver resources (per query) rather than seconds, they are re-found
# alike on every machine, however loaded; the time limit only cuts off a hang.
BOUNDS = options_with(timeout=600.0, rlimit=100_000_000)


class Kind(enum.Enum):
    """What a row shows: the seed's failure, its prevention, the seed demo's own behaviour, or the seed's refusal."""

    FAILURE = "failure reproduced"
    PREVENTED = "prevented"
    DEMO = "demo behaviour reproduced"
    REFUSED = "refused, as the seed asks"


class How(enum.Enum):
    """Where a row's outcome comes from: the modelled mechanism, a deployment setting whose definition is that
    outcome, or an input the scenario's script supplies."""

    MECHANISM = "mechanism"
    SETTING = "by setting"
    SCRIPTED = "scripted"


@dataclass(frozen=True)
class Shown:
    """How a row's outcome was shown: `how`, and the setting (`key=value`) or the scripted action it rests on."""

    how: How = How.MECHANISM
    what: str = ""


MECHANISM = Shown()


@dataclass(frozen=True)
class Row:
    """One observation: the seed's words, what prunecheck found, under which deployment, whether it came out as
    the seed describes (`ok`), and how it was shown (derived by the scenario: `by_setting`, `scripted`)."""

    id: str
    kind: Kind
    seed: str
    found: str
    under: str
    ok: bool
    shown: Shown = MECHANISM

    def label(self) -> str:
        if not self.ok:
            return "NOT AS THE SEED DESCRIBES"
        if self.kind is Kind.PREVENTED:
            return f"prevented by {self.under}"
        if self.shown.how is How.SETTING:
            return f"{self.kind.name.lower()} by setting {self.shown.what}"
        if self.shown.how is How.SCRIPTED:
            return f"{self.kind.name.lower()} scripted by `{self.shown.what}`, under {self.under}"
        return f"{self.kind.value}{',' if self.kind is Kind.REFUSED else ''} under {self.under}"

    def tally(self) -> str:
        """The row's kind, for the closing count: a failure or demo shown by a setting or a script is not counted
        as reproduced."""
        if self.shown.how is How.MECHANISM or self.kind is Kind.PREVENTED:
            return self.kind.value
        return f"{self.kind.name.lower()} {self.shown.how.value}"


def by_setting(policy, condition: str, key: str) -> Shown:
    """`by setting key=value` when the condition's violation term is False under every other value of the
    deployment key: the outcome is what the setting defines, not something the mechanism does; else mechanism."""
    value = getattr(policy.deployment, key)
    others = [v for v in DEPLOYMENT_CHOICES[key] if v != value]
    if others and all(by_construction(with_keys(policy, **{key: v}), condition) for v in others):
        return Shown(How.SETTING, f"{key}={value}")
    return MECHANISM


def scripted(actions) -> Shown:
    """`scripted` naming the first action that carries an input the scenario chose (a compaction's or an edit's
    citations: the model lets the agent cite anything, the script picked what makes the outcome); else mechanism."""
    for action in actions:
        if getattr(action, "cites", ()):
            return Shown(How.SCRIPTED, action_text(action, keywords=True))
    return MECHANISM


class Run:
    """A scripted run on the runtime that keeps each transition."""

    def __init__(self, policy):
        self.policy, self.state, self.transitions = policy, State(), []

    def do(self, action):
        transition = step(self.policy, self.state, action)
        self.transitions.append(transition)
        self.state = transition.after
        return transition


def deployment_words(policy, *keys) -> str:
    """`key=value` for each key of the policy's deployment named."""
    return ", ".join(f"{key}={getattr(policy.deployment, key)}" for key in keys)


def checker_words(report, condition: str) -> str:
    """The checker's result for one condition, in one line: the trace of a violation, the reason otherwise."""
    r = report.result(condition)
    if r.verdict == Verdict.VIOLATED:
        steps = "; ".join(action_text(a, keywords=True) for a in r.trace.actions)
        return f"checker: {condition} violated in {r.trace.length()} (replayed on the runtime): {steps}"
    how = "certificate re-checked" if r.verdict == Verdict.HOLDS else reason_text(r.reason)
    return f"checker: {condition} {r.verdict} ({how})"


def with_keys(policy, **keys):
    return replace(policy, deployment=replace(policy.deployment, **keys))


def checker_pair(failing_id, fixed_id, words, condition, policy, keys, fix, kind=Kind.FAILURE, defines=()) -> list:
    """The checker on `policy` (the condition violated, under its deployment `keys`) and on `policy` with the
    deployment keys `fix` (it holds). `defines`: keys whose setting is the failure the seed describes (the
    confabulating undo), as opposed to keys that only switch a condition on (evidence edges); the failing row is
    `by setting` such a key when its other values make the condition's violation term False."""
    failing = check(policy, BOUNDS)
    fixed_policy = with_keys(policy, **fix)
    fixed = check(fixed_policy, BOUNDS)
    shown = next((s for s in (by_setting(policy, condition, k) for k in defines) if s.how is How.SETTING), MECHANISM)
    return [Row(failing_id, kind, words, checker_words(failing, condition), deployment_words(policy, *keys),
                failing.result(condition).verdict == Verdict.VIOLATED, shown),
            Row(fixed_id, Kind.PREVENTED, words, checker_words(fixed, condition), deployment_words(fixed_policy, *fix),
                fixed.result(condition).verdict == Verdict.HOLDS)]
