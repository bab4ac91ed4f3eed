"""Theorem (negative): with records in the window and a host that truncates, no policy keeps C2: one schema breaks all."""

from __future__ import annotations

import z3

from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.engines.replay import confirm
from prunecheck.symbolic.conditions import violation_at
from prunecheck.symbolic.solver import Status, new_solver, query
from prunecheck.symbolic.model import ACT, Model
from prunecheck.spec.policy import BoolLit, Policy
from prunecheck.spec.runtime import Append, Compact, Edit
from prunecheck.symbolic.terms import ENUM_CODES, Frac

from prunecheck.proofs.theorem import RLIMIT, TIMEOUT, Label, Shown, TheoremResult, deployments, timed

NAME = "no budget-proof record in the window"
STATEMENT = ("With recovery records in the window and a host that truncates to a budget of its own (host_truncation: "
             "on, an opt-in outside the seeds' scope), C2 ('no compaction, at any budget, removes a recovery record') "
             "is violated by every policy the language can express (evict, rank and budget all free; every setting "
             "of the other deployment keys) by the uniform schema append(message, 2); edit(0, destroy); "
             "compact(budget=1): the record holds 2 tokens, more than the host's budget of 1, so the policy either "
             "evicts it or truncation, which ignores evict, rank and pins, reaches it. Proved on the z3 model with "
             "the policy's per-span verdicts, ranks and budget left free at every step; the schema is replayed on "
             "the runtime for a family of policies.")
SCHEMA = (Append("message", 2), Edit(0, "destroy"), Compact(1))
SLOTS = 3
FAMILY = [
    "evict: false",
    "evict: kind not in ['record', 'rationale']\nbudget: 4000",
    "evict: not pinned and recency * frequency < 0.25\nrank: tokens\nbudget: 2",
    "evict: kind == 'record'",
]


def _pin(model: Model, a, action) -> list:
    out = [a.act == ACT[action.name]]
    if isinstance(action, Append):
        out += [a.kind == ENUM_CODES["kind"][action.kind], a.tokens == action.tokens]
    if isinstance(action, Edit):
        out += [a.arg == model.slots[action.target], a.destroy == (action.mode == "destroy")]
    if isinstance(action, Compact):
        out += [a.hosted, a.host == action.budget]
    return out


def _every_policy_violates(deployment, ranked: bool, budgeted: bool) -> str:
    """'unsat' when no choice of per-step verdicts, ranks and budget keeps C2 on the schema (premises satisfiable)."""
    model = Model(Policy("any", BoolLit(True), deployment=deployment), SLOTS)
    budget = z3.Int("free_budget") if budgeted else None
    states, actions, steps, constraints = [model.state(0)], [], [], []
    constraints += model.encode_init(states[0]) + ([budget >= 1] if budgeted else [])
    for k, concrete in enumerate(SCHEMA):
        action, post = model.action(k), model.state(k + 1)
        terms = [(z3.Bool(f"free_evict{i}@{k}"), Frac(z3.Int(f"free_rank{i}@{k}")) if ranked and budgeted else None)
                 for i in range(SLOTS)]
        steps.append(model.build_step(states[-1], action, post, None, terms, budget))
        constraints += steps[-1].constraints + _pin(model, action, concrete)
        actions.append(action)
        states.append(post)
    solver = new_solver(TIMEOUT * 1000, RLIMIT)
    solver.add(constraints)
    if query(solver).status != Status.SAT:
        return "vacuous"
    solver.add(z3.Not(violation_at(model, "C2", states, actions, steps, len(SCHEMA))))
    return query(solver).status


def label():
    """Every policy violates C2 on one fixed schema, the policy's choices free at every step: an unbounded statement
    about policies shown by a counterexample schema (the schema needs SLOTS slots; no bound is assumed)."""
    return Label(Shown.PROVED, "a counterexample schema for every policy")


def prove() -> TheoremResult:
    def run():
        checked, failures = 0, []
        for deployment in deployments(records="window", host_truncation="on"):
            for ranked, budgeted in ((False, False), (False, True), (True, True)):
                checked += 1
                if _every_policy_violates(deployment, ranked, budgeted) != Status.UNSAT:
                    failures.append(f"{deployment.as_dict()} ranked={ranked} budgeted={budgeted}")
        replayed = 0
        for text in FAMILY:
            for deployment in deployments(records="window", host_truncation="on"):
                confirm(parse_policy_text(f"name: p\n{text}\n", "family.yaml", deployment), SCHEMA, "C2", SLOTS)
                replayed += 1
        return checked, failures, replayed
    (checked, failures, replayed), seconds = timed(run)
    detail = (f"{checked - len(failures)}/{checked} (deployment, policy shape) pairs proved; schema replayed as a C2 "
              f"violation for {replayed} (policy, deployment) pairs" + (f"; failed: {failures[0]}" if failures else ""))
    return TheoremResult(NAME, STATEMENT, not failures, detail, seconds, "z3 only (fixed schema, policy free)")
