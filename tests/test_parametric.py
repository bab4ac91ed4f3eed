"""The parametric model over-approximates the runtime: every run, projected on every pair (r, r+1), is a run of it."""

import z3
from hypothesis import given, settings

from prunecheck.spec.conditions import STATE_CONDITIONS, state_violations, transition_violations
from prunecheck.symbolic.conditions import pair_violation
from prunecheck.symbolic.model import ACT
from prunecheck.symbolic.parametric import DEFAULTS, FIELDS, GHOSTS, ROLE_FIELD, PairAction, PairModel, PairState
from prunecheck.spec.runtime import REVERSIBLE, State, addressable, is_candidate, is_pair, status, step
from prunecheck.symbolic.terms import ENUM_CODES

from support import TARGETED, model_policy, runs


def _span_values(state: State, i: int) -> dict:
    if i >= len(state.spans):
        return {name: None for name in {**FIELDS, **ROLE_FIELD}}
    span = state.span(i)
    edit = state.edit(i)
    return {"used": True, "alive": span.alive, "kind": ENUM_CODES["kind"][span.kind],
            "ns": ENUM_CODES["namespace"][span.namespace], "tokens": span.tokens, "created": span.created,
            "last_read": span.last_read, "reads": span.reads, "pinned": span.pinned, "edited": span.edited,
            "version": span.version, "undone": bool(edit and edit.undone), "role": ENUM_CODES["role"][span.role]}


def _project(ps: PairState, state: State, r: int) -> list:
    out = [ps.clock == state.step, ps.window_tokens == state.window_tokens()]
    for g, i in zip(GHOSTS, (r, r + 1)):
        for name, value in _span_values(state, i).items():
            if name not in ps.span[g]:  # a role, in a model whose policy reads none
                continue
            var = ps.span[g][name]
            out.append(var == (DEFAULTS[var.sort()] if value is None else value))
    return out


def _check_projection(policy, actions):
    model = PairModel(policy)
    state = State()
    transitions = []
    for action in actions:
        transitions.append(step(policy, state, action))
        state = transitions[-1].after
    width = len(state.spans) + 1
    for r in range(width):
        pre = PairState("pre", model.roles)
        solver = z3.Solver()
        solver.add(model.encode_init(pre))
        solver.add(_project(pre, State(), r))
        assert solver.check() == z3.sat, f"initial state does not project on pair {r}"
        for k, t in enumerate(transitions):
            pre, post = PairState(f"s{k}", model.roles), PairState(f"s{k + 1}", model.roles)
            act = PairAction(f"a{k}", model.roles, model.together)
            pair_step = model.encode_step(pre, act, post)
            solver = z3.Solver()
            solver.add(pair_step.constraints + _project(pre, t.before, r) + _project(post, t.after, r))
            solver.add(act.act == ACT[t.action.name])
            concrete = transition_violations(t)
            record_r = t.before.edit(r)
            if "C2" in concrete and record_r is not None and t.before.span(r).alive and not t.after.span(r).alive:
                solver.add(pair_violation(model, "C2", post, pair_step))
            if "C3" in concrete and getattr(t.action, "edit", None) == r:
                solver.add(pair_violation(model, "C3", post, pair_step))
            if "T1" in concrete and _splits(t, r):
                solver.add(pair_violation(model, "T1", post, pair_step))
            assert solver.check() == z3.sat, f"step {k + 1} {t.action} does not project on pair ({r}, {r + 1})"
            after = state_violations(policy, t.after)
            holds = z3.Solver()
            holds.add(_project(post, t.after, r))
            live_r = t.after.edit(r) is not None and not t.after.edit(r).undone
            for condition in STATE_CONDITIONS:
                bad = pair_violation(model, condition, post, pair_step)
                concrete_here = condition in after and live_r and _at_r(condition, policy, t.after, r)
                if concrete_here:
                    holds.push()
                    holds.add(bad)
                    assert holds.check() == z3.sat, f"{condition} at record {r} is not a violation of the pair model"
                    holds.pop()


def _splits(t, r) -> bool:
    """The step's compaction stage takes exactly one span of the tool-call pair (r, r + 1)."""
    before = t.before
    return (is_pair(before, r) and addressable(before.span(r)) and addressable(before.span(r + 1))
            and (r in t.evicted) != (r + 1 in t.evicted))


# Per state condition: the runtime violates it at record r (and its rationale r + 1), so the pair (r, r + 1) must.
AT_RECORD = {
    "C1": lambda policy, state, r: state.span(r).alive and is_candidate(policy, state, state.span(r)),
    "C4": lambda policy, state, r: not state.span(r).alive and status(policy, state) == REVERSIBLE,
    "P1": lambda policy, state, r: not state.span(r + 1).alive,
}


def _at_r(condition, policy, state, r):
    return AT_RECORD[condition](policy, state, r)


def test_every_state_condition_has_a_projection_witness():
    assert set(AT_RECORD) == set(STATE_CONDITIONS)


@settings(max_examples=30)
@given(runs())
def test_every_run_projects_onto_every_pair(run):
    _check_projection(*run)


def test_targeted_runs_project_onto_every_pair():
    for text, deployment, actions in TARGETED:
        _check_projection(model_policy(text, deployment), actions)
