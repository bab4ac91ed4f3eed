"""Helpers the test modules share: the parse-error position check and runs of the z3 model pinned to the runtime."""

import z3
from hypothesis import strategies as st

from prunecheck.checker.engines.invariants import inductive_lemmas, lemma_terms
from prunecheck.checker.engines.replay import decode_state
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.spec.conditions import applicable, state_violations, violations
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import DEPLOYMENT_CHOICES, ROLES, Deployment
from prunecheck.spec.runtime import (
    Append, Audit, Compact, Edit, Pin, Read, State, Undo, Unpin, action_args, enabled_actions, step,
)
from prunecheck.symbolic.conditions import violation_at
from prunecheck.symbolic.model import ACT, Model
from prunecheck.symbolic.terms import ENUM_CODES

from conftest import HOUR, RLIMIT, ROOT


def project_sources() -> list:
    """The project's own Python files: the package's (root modules and spec, symbolic, checker, proofs) and the
    benchmarks; never a virtual environment or anything else that happens to sit in the clone."""
    return sorted(ROOT.glob("*.py")) + sorted(p for folder in ("spec", "symbolic", "checker", "proofs", "benchmarks")
                                              for p in (ROOT / folder).rglob("*.py"))


def at(err: PolicySyntaxError, line: int, col: int, *words: str) -> None:
    """The parse error is at line:col and its message names every word."""
    assert (err.line, err.col) == (line, col), str(err)
    for word in words:
        assert word in err.message, str(err)


N = 5

POLICIES = [
    "evict: not pinned and recency * frequency < 0.25",
    "evict: kind != 'record' and idle > 1\nbudget: 6",
    "evict: kind in ['tool_output', 'record', 'rationale'] or tokens >= 3\nrank: recency * frequency - tokens\nbudget: 5",
    "evict: namespace == 'window' and min(age, idle) >= 1 and max(reads, 1) / (1 + age) <= 0.5",
    "evict: edited or abs(tokens - 2) == 1\nrank: 0 - age\nbudget: 4",
    "evict: window_tokens > 4 and step >= 2 and reads == 0",
    "evict: kind == 'diff'\nbudget: 4",
    "evict: false\nrank: tokens\nbudget: 3",
    "evict: 1 / tokens >= 0.5 or tokens / tokens < 1",
    "evict: (kind if reads > 0 else 'message') in ['message', 'record'] and namespace == 'window'",
    "evict: role == 'tool_result' and age > 1",
    "evict: role in ['user', 'system'] or (role != 'assistant' and kind == 'record')\nrank: tokens\nbudget: 4",
    "evict: role == 'tool_call' or tokens >= 3\npairs: together",
    "evict: kind != 'record'\nrank: 0 - tokens\nbudget: 3\npairs: together",
]

deployments = st.builds(Deployment, **{key: st.sampled_from(values) for key, values in DEPLOYMENT_CHOICES.items()})


def model_policy(text, deployment):
    """A policy named t from the text of its other keys, under deployment."""
    return parse_policy_text(f"name: t\n{text}\n", "t.yaml", deployment)


@st.composite
def runs(draw, max_steps=8):
    """A policy of POLICIES under a drawn deployment and a run of enabled actions on it."""
    policy = model_policy(draw(st.sampled_from(POLICIES)), draw(deployments))
    state, actions = State(), []
    for _ in range(draw(st.integers(1, max_steps))):
        # Besides each distinct outcome's representative, any host budget at all.
        options = enabled_actions(policy, state, N, token_choices=(1, 2, 3, 4), roles=ROLES) + (
            Compact(draw(st.integers(1, 12))),)
        name = draw(st.sampled_from(sorted({a.name for a in options})))
        action = draw(st.sampled_from([a for a in options if a.name == name]))
        actions.append(action)
        state = step(policy, state, action, N).after
    return policy, tuple(actions)


def pin_action(model, a, action):
    """Constraints fixing the model's action a to the runtime action."""
    out = [a.act == ACT[action.name]]
    args = action_args(action)
    for key in ("target", "span", "edit"):
        if key in args:
            out.append(a.arg == model.slots[args[key]])
    if "kind" in args:
        out.append(a.kind == ENUM_CODES["kind"][args["kind"]])
    if "tokens" in args:
        out.append(a.tokens == args["tokens"])
    if isinstance(action, Append):
        out.append(a.role == ENUM_CODES["role"][action.role])
    if "mode" in args:
        out.append(a.destroy == (args["mode"] == "destroy"))
    if isinstance(action, Compact):
        out.append(a.hosted == (action.budget is not None))
        out.extend([a.host == action.budget] if action.budget is not None else [])
    return out


def agree(policy, actions, with_lemmas):
    """The model, pinned to actions (with its proved lemmas), reaches the runtime's states and violations."""
    model = Model(policy, N)
    invariant = inductive_lemmas(model, HOUR, RLIMIT) if with_lemmas else None
    solver = z3.Solver()
    states, syms, steps = [model.state(0)], [], []
    solver.add(model.encode_init(states[0]))
    for k, action in enumerate(actions, start=1):
        a = model.action(k - 1)
        states.append(model.state(k))
        steps.append(model.encode_step(states[k - 1], a, states[k]))
        syms.append(a)
        solver.add(steps[-1].constraints)
        solver.add(pin_action(model, a, action))
        if invariant is not None:
            solver.add(lemma_terms(model, states[k], invariant))
    assert solver.check() == z3.sat, "the model refuses a run the runtime accepts"
    m = solver.model()
    state = State()
    assert decode_state(m, states[0]) == state
    assert not state_violations(policy, state)
    for k, action in enumerate(actions, start=1):
        transition = step(policy, state, action, N)
        state = transition.after
        assert decode_state(m, states[k]) == state, f"state {k} after {action}"
        expected = violations(policy, transition)
        symbolic = {c: violation_at(model, c, states, syms, steps, k) for c in applicable(policy)}
        got = {c for c, term in symbolic.items() if z3.is_true(m.eval(term, model_completion=True))}
        assert got == set(expected), f"step {k} {action}: model says {sorted(got)}, runtime {sorted(expected)}"


WINDOW = Deployment(records="window", rationale="window", pins="self", audit="policy", undo="blind")
TARGETED = [
    # truncation is oldest-first, after the policy's own evictions
    ("evict: kind == 'diff'\nbudget: 4", Deployment(), (Append("message", 3), Append("message", 3), Compact())),
    ("evict: false\nbudget: 3", WINDOW, (Append("message", 1), Append("diff", 1), Edit(0, "destroy"), Compact())),
    # ranked eviction stops as soon as the window fits; ties go to the lower id
    ("evict: true\nrank: 0\nbudget: 4", Deployment(),
     (Append("message", 2), Append("message", 2), Append("message", 2), Compact())),
    ("evict: kind != 'record'\nrank: 0 - tokens\nbudget: 5", WINDOW,
     (Append("message", 1), Append("tool_output", 4), Append("diff", 2), Compact())),
    # undo restores an evicted target; stale undo is a merge (versioned) or a stale revert (blind)
    ("evict: kind == 'summary'", Deployment(), (Append("message", 1), Edit(0, "transform"), Compact(), Undo(1))),
    ("evict: false", Deployment(), (Append("message", 1), Edit(0, "transform"), Edit(0, "destroy"), Undo(1))),
    ("evict: false", WINDOW, (Append("message", 1), Edit(0, "transform"), Edit(0, "destroy"), Undo(1))),
    # the self-certified status misses an evicted record whose rationale is gone too
    ("evict: kind in ['record', 'rationale']", WINDOW, (Append("message", 1), Edit(0, "destroy"), Compact(), Audit())),
    # a host budget truncates without a policy budget, and below a policy budget (never above it)
    ("evict: false", WINDOW, (Append("message", 3), Edit(0, "destroy"), Compact(2))),
    ("evict: false\nbudget: 5", WINDOW, (Append("message", 3), Append("message", 2), Compact(9), Compact(1))),
    ("evict: true\nrank: tokens\nbudget: 4", WINDOW,
     (Append("message", 3), Append("message", 2), Append("message", 1), Compact(1))),
    # pins and reads
    ("evict: not pinned and reads == 0", WINDOW,
     (Append("message", 1), Edit(0, "transform"), Pin(1), Read(2), Unpin(1), Compact())),
    # records and rationale take the deployment's record_role; an edit and its undo keep the target's role
    ("evict: role == 'tool_result'", Deployment(records="window", rationale="window", record_role="tool_result"),
     (Append("message", 1, "tool_call"), Append("message", 1, "tool_result"), Edit(0, "transform"), Compact(),
      Undo(2))),
    ("evict: role == 'tool_result' or role == 'system'", Deployment(records="window", record_role="assistant"),
     (Append("message", 1, "assistant"), Edit(0, "destroy"), Undo(1), Compact())),
    # tool-call pairs: split apart (T1), taken together (the closure), the closure after a ranked walk
    ("evict: role == 'tool_result'", Deployment(),
     (Append("message", 1, "tool_call"), Append("message", 2, "tool_result"), Append("message", 1), Compact())),
    ("evict: role == 'tool_result'\npairs: together", WINDOW,
     (Append("message", 1, "tool_call"), Append("message", 2, "tool_result"), Edit(0, "transform"), Compact(1))),
    ("evict: true\nrank: 0 - tokens\nbudget: 3\npairs: together", Deployment(),
     (Append("message", 2, "tool_call"), Append("message", 2, "tool_result"), Append("message", 1), Compact())),
]
