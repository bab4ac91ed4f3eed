"""Cross-examination of prunecheck's proofs: every `holds` attacked by concrete runs of the reference runtime.

For each policy, the prover (`checker.engines.prove.prove_all`: induction on the pair model, certificates re-checked
by cvc5, every query bounded by rlimit) gives the conditions it proves; each is then attacked by

  (a) the explicit engine (`checker.engines.explicit.explore`, the runtime breadth-first over its domains) with
      SPANS span slots, to depth DEPTH or the level at which it has seen STATES states, whichever comes first, and a
      beam search to depth DEPTH over the same domains: each level expands at most BEAM states (a seeded sample of
      the level), every enabled action of each;
  (b) RUNS seeded random runs (random.Random) of RUN_STEPS enabled actions each, with SPANS span slots.

A run that violates a proved condition is a contradiction: a false proof (or a runtime the proof does not model).
Everything is bounded by depth, span slots, states and rlimit, never by the clock.

Figures (measured on the shared 2-core development machine): the exhaustive breadth-first search cannot reach
depth 16 on any policy: the frontier grows some 15-fold per level, and 20,000 states are reached at depth 3 or 4, so
it is bounded at STATES states and the beam search is what reaches depth 16. Per policy the proofs take 0.1-0.4 s of
one core and the attacks 0.5-0.7 s. The whole slow test (338 policies: 38 examples, 300 generated; 2,304 proofs
attacked, 338,000 random runs) took 415 s of CPU, 8 min 55 s of wall-clock time in one process on the loaded machine
(each of the CHUNKS chunks about a minute of CPU): about 4-5 minutes on two cores.

Run as a script for the counts: `python tests/cross_examination.py [generated policies]`.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings

ROOT = Path(__file__).resolve().parent.parent
if __name__ == "__main__":  # the script: the tests' own imports
    sys.path.insert(0, str(ROOT.parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from prunecheck.checker.engines.explicit import action_choices, domains_for, explore  # noqa: E402
from prunecheck.checker.engines.prove import prove_all  # noqa: E402
from prunecheck.checker.language.document import policy_document, policy_hash  # noqa: E402
from prunecheck.checker.language.loader import load_policy  # noqa: E402
from prunecheck.checker.language.printer import policy_yaml  # noqa: E402
from prunecheck.checker.result import Verdict  # noqa: E402
from prunecheck.spec.actions import Append, Audit, Compact, Edit, Pin, Read, Undo, Unpin  # noqa: E402
from prunecheck.spec.conditions import BY_ID, Scope, applicable  # noqa: E402
from prunecheck.spec.runtime import State, enabled, present, step  # noqa: E402
from prunecheck.strategies import deployments, policies  # noqa: E402

DEPTH, SPANS, STATES, BEAM = 16, 4, 2_000, 8
# 600 runs a policy (1,000 until 2026-12-05): CI had no room left; the explicit search and the beam are unchanged.
RUNS, RUN_STEPS = 600, 16
GENERATED = 300
CHUNKS = 8  # the slow test's parts, so that pytest-xdist spreads them over the cores
RLIMIT, HOUR = 100_000_000, 3600.0  # tests/conftest.py's: the rlimit decides, the hour is a hang guard only
EXAMPLE_FILES = sorted(p for p in (ROOT / "examples" / "policies").iterdir() if p.suffix != ".toml") + sorted((ROOT / "examples" / "frameworks").glob("*.yaml"))


@dataclass
class Tally:
    """The counts the harness reports."""

    policies: int = 0
    proofs: int = 0
    runs: int = 0
    explored: int = 0
    contradictions: list = field(default_factory=list)

    def add(self, other: "Tally") -> None:
        self.policies += other.policies
        self.proofs += other.proofs
        self.runs += other.runs
        self.explored += other.explored
        self.contradictions += other.contradictions

    def line(self) -> str:
        return (f"cross-examination: {self.policies} policies, {self.proofs} proofs attacked, {self.runs} random runs, "
                f"{self.explored} explicit-search states, {len(self.contradictions)} contradictions")


def example_policies() -> list:
    """(name, policy) for every example policy and framework policy."""
    return [(path.name, load_policy(path)) for path in EXAMPLE_FILES]


def generated_policies(n: int = GENERATED) -> list:
    """(name, policy) for n distinct policies drawn by strategies.policies over every setting (deployments with
    extended=True), derandomized: the same policies on every run."""
    drawn = []

    @settings(max_examples=2 * n, derandomize=True, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(policies(deployment=deployments(extended=True)))
    def collect(policy):
        drawn.append(policy)

    collect()
    distinct = {}
    for policy in drawn:
        distinct.setdefault(repr(policy), policy)
    chosen = list(distinct.values())[:n]
    assert len(chosen) == n, f"only {len(chosen)} distinct policies drawn"
    return [(f"generated {k}", policy) for k, policy in enumerate(chosen)]


def proved(policy) -> list:
    """The conditions the prover proves for the policy, with cvc5-confirmed certificates."""
    results = prove_all(policy, applicable(policy), policy_document(policy), policy_hash(policy), HOUR, RLIMIT)
    return [c for c, r in results.items() if r.verdict == Verdict.HOLDS and r.certificate]


def _violated(policy, transition, conditions) -> list:
    out = []
    for c in conditions:
        cond = BY_ID[c]
        bad = cond.violated(transition) if cond.scope is Scope.STEP else cond.violated(policy, transition.after)
        if bad:
            out.append(c)
    return out


def _random_action(policy, state: State, rng: random.Random, domains, names: dict):
    """A random enabled action (a few tries, else an audit): its name first, then its arguments from the domains."""
    evidence = policy.deployment.evidence == "on"
    for _ in range(6):
        kind = rng.choice(("append", "append", "edit", "read", "pin", "unpin", "compact", "compact", "undo", "audit"))
        ids = len(state.spans)
        present_ids = [s.id for s in state.spans if present(s)]
        cites = (rng.choice(present_ids),) if evidence and present_ids and rng.random() < 0.5 else ()
        if kind == "append":
            role = rng.choice(domains.roles)
            tool = state.spans[-1].tool if role == "tool_result" and state.spans else rng.choice(names.get("tool", ("",)))
            action = Append(rng.choice(domains.kinds), rng.choice(domains.tokens), role, tool=tool,
                            tag=rng.choice(names.get("tag", ("",))))
        elif kind == "edit" and ids:
            action = Edit(rng.randrange(ids), rng.choice(("transform", "destroy")), cites)
        elif kind == "read" and ids:
            action = Read(rng.randrange(ids), rng.choice(domains.repeats))
        elif kind in ("pin", "unpin") and ids:
            action = (Pin if kind == "pin" else Unpin)(rng.randrange(ids))
        elif kind == "compact":
            host = None if rng.random() < 0.5 else rng.randint(1, state.window_tokens() + 1)
            action = Compact(host, cites)
        elif kind == "undo" and state.edits:
            action = Undo(rng.choice(state.edits).record)
        else:
            action = Audit(rng.choice(domains.repeats))
        if enabled(policy, state, action, SPANS):
            return action
    return Audit()


def _contradiction(name, policy, condition, actions, how) -> str:
    return (f"{name}: {condition} was proved, yet {how} violates it\n  run: {tuple(actions)}\n  policy:\n    "
            + policy_yaml(policy).rstrip().replace("\n", "\n    "))


def attack(name: str, policy, conditions, seed: int = 0, runs: int = RUNS, run_steps: int = RUN_STEPS,
           depth: int = DEPTH, beam: int = BEAM, states: int = STATES) -> Tally:
    """Every concrete attack on the proved conditions; the tally's contradictions name the policy, the condition and
    the run."""
    tally = Tally(policies=1, proofs=len(conditions))
    if not conditions:
        return tally
    domains = domains_for(policy)
    names = dict(domains.names)
    found = {}
    # (a) the explicit engine, breadth-first: every violation it reports is replayed on the runtime (confirm)
    for result in explore(policy, depth, SPANS, conditions, domains, time_limit=HOUR, max_states=states):
        tally.explored = max(tally.explored, result.stats.runs[0].states if result.stats.runs else 0)
        if result.verdict == Verdict.VIOLATED:
            found.setdefault(result.condition, _contradiction(name, policy, result.condition, result.trace.actions,
                                                              "the explicit search"))
    # (a') a beam to `depth`: a seeded sample of each level, every enabled action of each state in it
    rng = random.Random(seed)
    level = [(State(), ())]
    for _ in range(depth):
        following = {}
        for state, trace in level:
            for action in action_choices(policy, state, SPANS, domains):
                t = step(policy, state, action, SPANS)
                for c in _violated(policy, t, conditions):
                    found.setdefault(c, _contradiction(name, policy, c, trace + (action,), "the beam search"))
                following.setdefault(t.after, trace + (action,))
        items = list(following.items())
        level = rng.sample(items, min(beam, len(items)))
    # (b) seeded random runs
    for _ in range(runs):
        state, actions = State(), []
        for _ in range(run_steps):
            action = _random_action(policy, state, rng, domains, names)
            actions.append(action)
            t = step(policy, state, action, SPANS)
            for c in _violated(policy, t, conditions):
                found.setdefault(c, _contradiction(name, policy, c, actions, "a random run"))
            state = t.after
        tally.runs += 1
    tally.contradictions = list(found.values())
    return tally


def cross_examine(named_policies, first_seed: int = 0, **bounds) -> Tally:
    """Prove, then attack, each (name, policy)."""
    tally = Tally()
    for k, (name, policy) in enumerate(named_policies):
        tally.add(attack(name, policy, proved(policy), seed=first_seed + k, **bounds))
    return tally


def main(argv=None) -> int:
    n = int((argv or sys.argv[1:] or [GENERATED])[0])
    tally = cross_examine(example_policies() + generated_policies(n))
    for text in tally.contradictions:
        print(text)
    print(tally.line())
    return 1 if tally.contradictions else 0


if __name__ == "__main__":
    sys.exit(main())
