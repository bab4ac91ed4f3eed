"""Theorem (negative): pins the agent sets itself never exclude records — a uniform counterexample schema."""

from __future__ import annotations


from prunecheck.checker.engines.certificate_model import Encoding
from prunecheck.checker.engines.invariants import houdini
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.engines.replay import confirm
from prunecheck.spec.conditions import violations
from prunecheck.spec.evaluate import evaluate
from prunecheck.symbolic.pair_lemmas import pair_candidates
from prunecheck.spec.policy import Deployment
from prunecheck.spec.runtime import Append, Edit, State, span_env, step

from prunecheck.proofs.theorem import RLIMIT, TIMEOUT, Label, Shown, TheoremResult, any_policy, timed

NAME = "self-set pins never suffice"
STATEMENT = ("With records in the window and pins: self, 'records are pinned' is not an invariant (it is one under "
             "pins: host), and every record is written unpinned: after the uniform schema append(message, 1); "
             "edit(0, transform) the record is live, in the window, unpinned, unread, of age and idleness 0. So "
             "every policy that holds of that record, however it uses `pinned`, violates C1 at step 2; the schema is "
             "instantiated for each policy in a family and replayed on the runtime.")
SELF = Deployment(records="window", pins="self")
FAMILY = [
    "not pinned and recency * frequency < 0.25",
    "not pinned and reads == 0",
    "(pinned and tokens > 100) or (not pinned and frequency < 0.5)",
    "kind in ['record', 'tool_output'] and not pinned",
    "not pinned and idle >= 0",
    "pinned",
    "kind != 'record'",
]
SCHEMA = (Append("message", 1), Edit(0, "transform"))


def _pins_invariant(deployment: Deployment) -> bool:
    enc = Encoding(any_policy(deployment), "C1", True)
    before = {n: t for n, t in pair_candidates(enc.model, enc.pre) if not n.startswith("not ")}
    after = {n: t for n, t in pair_candidates(enc.model, enc.post) if not n.startswith("not ")}
    invariant = houdini(enc.init, before, enc.step.constraints, before, after, TIMEOUT, RLIMIT)
    return "host_pins_records[r]" in invariant.names


def label():
    """Houdini's inductiveness check (unbounded) and a counterexample schema for every policy that holds of a fresh
    record."""
    return Label(Shown.PROVED, "a counterexample schema for every policy")


def prove() -> TheoremResult:
    def run():
        pins_self, pins_host = _pins_invariant(SELF), _pins_invariant(Deployment(records="window", pins="host"))
        instantiated, consistent = 0, True
        for text in FAMILY:
            policy = parse_policy_text(f"name: p\nevict: \"{text}\"\n", "family.yaml", SELF)
            state = State()
            for action in SCHEMA:
                transition = step(policy, state, action)
                state = transition.after
            record = state.span(1)
            fresh = record.alive and not record.pinned and record.reads == 0 and record.created == state.step
            selects = bool(evaluate(policy.evict, span_env(policy, state, record)))
            violated = "C1" in violations(policy, transition)
            consistent &= fresh and selects == violated
            if selects:
                confirm(policy, SCHEMA, "C1", max_spans=3)
                instantiated += 1
        return pins_self, pins_host, instantiated, consistent
    (pins_self, pins_host, instantiated, consistent), seconds = timed(run)
    proved = (not pins_self) and pins_host and consistent and instantiated > 0
    detail = (f"'records pinned' inductive: self {pins_self}, host {pins_host}; schema replayed as a C1 violation "
              f"for {instantiated}/{len(FAMILY)} policies (exactly those that hold of the fresh record)")
    return TheoremResult(NAME, STATEMENT, proved, detail, seconds, "n/a (counterexamples replayed on the runtime)")


