"""Accelerated steps: a repeated read or audit equals its expansion, the accelerated model agrees with the runtime."""

import io
import json
import runpy
import subprocess
import sys

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from prunecheck import cli
from prunecheck.checker.check import check
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.language.document import policy_document
from prunecheck.checker.findings.graph import edit_graph, graph_dot
from prunecheck.checker.findings.finding import findings_of
from prunecheck.checker.outputs.html_report import report_html
from prunecheck.checker.engines.invariants import inductive_lemmas, lemma_terms
from prunecheck.checker.outputs.itf import actions_of, first_difference, trace_document
from prunecheck.checker.language.loader import load_policy
from prunecheck.checker.engines.minimize import minimize
from prunecheck.checker.outputs.render import report_json, report_text
from prunecheck.checker.engines.replay import decode_state, first_violation, replay
from prunecheck.checker.result import Trace
from prunecheck.checker.outputs.sarif import sarif_log
from prunecheck.symbolic.solver import Status, new_solver, query
from prunecheck.spec.conditions import applicable, state_violations, violations
from prunecheck.symbolic.conditions import violation_at
from prunecheck.spec.errors import TraceFormatError
from prunecheck.symbolic.model import Model
from prunecheck.spec.policy import Deployment
from prunecheck.spec.runtime import (
    ActionRefused, Append, Audit, Compact, Edit, Read, State, enabled, enabled_actions, step,
)
from prunecheck.spec.actions import expand, real_steps, steps_of
from prunecheck.strategies import policies, traces

from support import POLICIES, deployments, model_policy, pin_action

N = 5
# Bounded by z3's resource count; the hour is a safety net a loaded machine never reaches.
RLIMIT, SAFETY_MS = 50_000_000, 3_600_000
# Policies whose verdicts turn on the clock, reads or idle time only after many steps.
CLOCKED = [
    "evict: age > 100",
    "evict: kind == 'record' and reads > 40",
    "evict: idle >= 40 and reads < 3",
    "evict: reads * 2 > age + 7",
    "evict: step == 60 or frequency >= 0.75",
    "evict: kind != 'record' and recency < 0.01\nbudget: 5",
    "evict: age > 30 and idle < 10\nrank: 0 - idle\nbudget: 3",
]
WINDOW = Deployment(records="window", pins="self")


def _policy(text, deployment=Deployment()):
    return model_policy(text, deployment)


@st.composite
def reachable(draw, max_times=60):
    """A policy (table, clocked or generated) and a trace with repeated reads and audits from the empty window."""
    if draw(st.booleans()):
        policy = _policy(draw(st.sampled_from(POLICIES + CLOCKED)), draw(deployments))
    else:
        policy = draw(policies(2))
    actions = draw(traces(policy, max_steps=8, max_spans=N, max_times=max_times))
    return policy, tuple(actions)


def _end(policy, actions):
    state = State()
    for action in actions:
        state = step(policy, state, action, N).after
    return state


def _expanded(policy, state, action):
    """The transitions of the single steps the repeated action stands for, from `state`."""
    out = []
    for single in expand(action):
        out.append(step(policy, state, single, N))
        state = out[-1].after
    return out


def assert_same_as_expansion(policy, state, action):
    macro = step(policy, state, action, N)
    singles = _expanded(policy, state, action)
    assert len(singles) == steps_of(action) == action.times
    assert macro.after == singles[-1].after
    assert {t.outcome for t in singles} == {macro.outcome}
    assert not macro.evicted and not macro.truncated and not any(t.evicted or t.truncated for t in singles)
    assert violations(policy, macro) == violations(policy, singles[-1])
    return macro


# --------------------------------------------------------------------------- the runtime


@settings(max_examples=150)
@given(reachable(), st.integers(1, 300), st.data())
def test_a_repeated_action_reaches_the_state_of_its_expansion(run, times, data):
    policy, actions = run
    state = _end(policy, actions)
    alive = [s.id for s in state.spans if s.alive]
    action = Audit(times)
    if alive and data.draw(st.booleans()):
        action = Read(data.draw(st.sampled_from(alive)), times)
    assert enabled(policy, state, action, N) == enabled(policy, state, expand(action)[0], N)
    macro = assert_same_as_expansion(policy, state, action)
    assert macro.after.step == state.step + times


@settings(max_examples=60)
@given(reachable())
def test_a_trace_counts_its_real_steps(run):
    policy, actions = run
    transitions = replay(policy, actions, N)
    assert all(t.after.step - t.before.step == steps_of(t.action) for t in transitions)
    assert (transitions[-1].after.step if transitions else 0) == real_steps(actions)
    trace = Trace("C1", actions, N)
    assert trace.steps == real_steps(actions) and str(len(actions)) in trace.length()
    # Replaying every action's expansion gives the same run, state by state at the end of each action.
    state = State()
    for t in transitions:
        for single in expand(t.action):
            state = step(policy, state, single, N).after
        assert state == t.after


def test_read_of_a_dead_span_is_refused_however_often():
    policy = _policy("evict: kind == 'message'")
    state = _end(policy, (Append("message", 1), Compact()))
    for times in (1, 2, 1000):
        assert not enabled(policy, state, Read(0, times), N)


@pytest.mark.parametrize("times", [0, -1, True, 2.0, "3", None])
def test_a_repetition_count_is_an_integer_of_at_least_one(times):
    policy = _policy("evict: false")
    state = _end(policy, (Append("message", 1),))
    for action in (Read(0, times), Audit(times)):
        assert not enabled(policy, state, action, N)
        with pytest.raises(ActionRefused):
            step(policy, state, action, N)


def test_a_huge_repetition_is_applied_at_once():
    # A loop over the repetitions would never finish: the runtime adds the count to the clock and the reads.
    policy = _policy("evict: age > 1000")
    state = _end(policy, (Append("message", 1), Read(0, 10 ** 40), Audit(10 ** 40)))
    assert state.step == 1 + 2 * 10 ** 40 and state.span(0).reads == 10 ** 40


class AccelerationMachine(RuleBasedStateMachine):
    """Two copies of one run: one applies each repeated read or audit at once, the other its single steps."""

    @initialize(text=st.sampled_from(POLICIES + CLOCKED), deployment=deployments)
    def setup(self, text, deployment):
        self.policy = _policy(text, deployment)
        self.fast = self.slow = State()
        self.actions = []

    def _apply(self, action):
        macro = assert_same_as_expansion(self.policy, self.fast, action) if action.name in ("read", "audit") \
            else step(self.policy, self.fast, action, N)
        self.fast = macro.after
        for single in expand(action):
            self.slow = step(self.policy, self.slow, single, N).after
        self.actions.append(action)

    # Every rule takes one `data` argument, so that hypothesis does not favour one of them (see test_runtime).
    @rule(data=st.data())
    def single(self, data):
        options = enabled_actions(self.policy, self.fast, N, token_choices=(1, 2, 3))
        self._apply(data.draw(st.sampled_from(options)))

    @precondition(lambda self: any(s.alive for s in self.fast.spans))
    @rule(data=st.data())
    def repeated_read(self, data):
        span = data.draw(st.sampled_from([s.id for s in self.fast.spans if s.alive]))
        self._apply(Read(span, data.draw(st.integers(1, 120))))

    @rule(data=st.data())
    def repeated_audit(self, data):
        self._apply(Audit(data.draw(st.integers(1, 120))))

    @invariant()
    def both_copies_agree(self):
        assert self.fast == self.slow
        assert self.fast.step == real_steps(self.actions)
        assert state_violations(self.policy, self.fast) == state_violations(self.policy, self.slow)


AccelerationMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=15, deadline=None)
TestAccelerationMachine = AccelerationMachine.TestCase


# --------------------------------------------------------------------------- the accelerated model


@st.composite
def runs(draw, max_steps=7):
    """Like support.runs, with reads and audits repeated once, a few times, or many times."""
    policy = _policy(draw(st.sampled_from(POLICIES + CLOCKED)), draw(deployments))
    state, actions = State(), []
    for _ in range(draw(st.integers(1, max_steps))):
        repeats = (1, draw(st.integers(2, 5)), draw(st.integers(6, 2000)))
        options = enabled_actions(policy, state, N, token_choices=(1, 2, 3), repeats=repeats) + (
            Compact(draw(st.integers(1, 12))),)
        name = draw(st.sampled_from(sorted({a.name for a in options})))
        action = draw(st.sampled_from([a for a in options if a.name == name]))
        actions.append(action)
        state = step(policy, state, action, N).after
    return policy, tuple(actions)


def _unrolled(policy, actions, with_lemmas, pin_times=True):
    """An accelerated model unrolled over len(actions) steps, each pinned to its action and repetition count."""
    model = Model(policy, N, accelerate=True)
    invariant = inductive_lemmas(model) if with_lemmas else None
    solver = new_solver(SAFETY_MS, RLIMIT)
    states, syms, steps = [model.state(0)], [], []
    solver.add(model.encode_init(states[0]))
    for k, action in enumerate(actions, start=1):
        syms.append(model.action(k - 1))
        states.append(model.state(k))
        steps.append(model.encode_step(states[k - 1], syms[-1], states[k]))
        solver.add(steps[-1].constraints)
        solver.add(pin_action(model, syms[-1], action) + ([syms[-1].times == steps_of(action)] if pin_times else []))
        if invariant is not None:
            solver.add(lemma_terms(model, states[k], invariant))
    return model, solver, states, syms, steps


def agree_accelerated(policy, actions, with_lemmas=False):
    model, solver, states, syms, steps = _unrolled(policy, actions, with_lemmas)
    answer = query(solver)
    assert answer.status == Status.SAT, f"the accelerated model refuses a run the runtime accepts ({answer.reason})"
    m = solver.model()
    state = State()
    assert decode_state(m, states[0]) == state
    for k, action in enumerate(actions, start=1):
        transition = step(policy, state, action, N)
        state = transition.after
        assert decode_state(m, states[k]) == state, f"state {k} after {action}"
        symbolic = {c: violation_at(model, c, states, syms, steps, k) for c in applicable(policy)}
        got = {c for c, term in symbolic.items() if z3.is_true(m.eval(term, model_completion=True))}
        expected = violations(policy, transition)
        assert got == set(expected), f"step {k} {action}: model says {sorted(got)}, runtime {sorted(expected)}"


@settings(max_examples=40)
@given(runs())
def test_accelerated_model_and_runtime_agree_on_every_state_and_condition(run):
    agree_accelerated(*run)


@settings(max_examples=10)
@given(runs())
def test_proved_lemmas_of_the_accelerated_model_exclude_no_reachable_state(run):
    agree_accelerated(*run, with_lemmas=True)


TARGETED = [
    ("evict: age > 100", WINDOW, (Append("message", 1), Edit(0, "transform"), Audit(101))),
    ("evict: kind == 'record' and reads > 40", WINDOW,
     (Append("message", 2), Edit(0, "destroy"), Read(1, 41), Compact(), Audit(3))),
    ("evict: idle >= 40 and reads < 3\nbudget: 3", Deployment(),
     (Append("message", 2), Read(0, 2), Audit(45), Append("diff", 2), Compact(), Read(1, 1000))),
    ("evict: step == 60", WINDOW, (Append("message", 1), Edit(0, "transform"), Audit(57), Audit(1))),
    ("evict: age > 30 and idle < 10\nrank: 0 - idle\nbudget: 3", WINDOW,
     (Append("message", 2), Append("file_body", 2), Audit(30), Read(1, 5), Compact(), Read(0, 999))),
]


def test_targeted_accelerated_runs_agree():
    for text, deployment, actions in TARGETED:
        agree_accelerated(_policy(text, deployment), actions, with_lemmas=True)


@pytest.mark.parametrize("action, times", [(Append("message", 1), 2), (Audit(), 0), (Audit(), -4),
                                           (Compact(), 3), (Edit(0, "transform"), 2)])
def test_only_reads_and_audits_repeat_and_at_least_once(action, times):
    policy = _policy("evict: false")
    _, solver, _, syms, _ = _unrolled(policy, (Append("message", 1), action), with_lemmas=False, pin_times=False)
    assert query(solver).status == Status.SAT
    solver.add(syms[-1].times == times)
    assert query(solver).status == Status.UNSAT


# --------------------------------------------------------------------------- reduction


def test_a_large_repetition_is_reduced_to_the_least_that_violates():
    policy = _policy("evict: age > 1000", WINDOW)
    # the record is created at clock 2, so age > 1000 first holds at clock 1003: 1001 audits after the edit
    reduced = minimize(policy, (Append("message", 1), Edit(0, "transform"), Audit(123456)), "C1", N)
    assert reduced == (Append("message", 1), Edit(0, "transform"), Audit(1001))
    padded = (Append("message", 1), Read(0, 500), Edit(0, "transform"), Audit(5000))
    assert minimize(policy, padded, "C1", N) == reduced
    reads = _policy("evict: kind == 'record' and reads > 40", WINDOW)
    reduced = minimize(reads, (Append("message", 1), Edit(0, "destroy"), Read(1, 7), Read(1, 90000)), "C1", N)
    assert reduced == (Append("message", 1), Edit(0, "transform"), Read(1, 41))


@settings(max_examples=40)
@given(reachable(max_times=400))
def test_reduction_never_lengthens_in_actions_or_real_steps(run):
    policy, actions = run
    transitions = replay(policy, actions, N)
    for condition in ("C1", "C2", "C4", "P1"):
        where = first_violation(policy, transitions, condition)
        if not where:
            continue
        reduced = minimize(policy, actions, condition, N)
        assert len(reduced) <= where and real_steps(reduced) <= real_steps(actions[:where])
        assert first_violation(policy, replay(policy, reduced, N), condition) == len(reduced)


# --------------------------------------------------------------------------- ITF


def run_cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main([str(a) for a in argv], out, err)
    return code, out.getvalue(), err.getvalue()


def _document(policy, actions):
    meta = {"condition": "C1", "depth": len(actions), "spans": N}
    return json.loads(json.dumps(trace_document(policy, policy_document(policy), replay(policy, actions, N), meta)))


@settings(max_examples=40)
@given(reachable())
def test_itf_round_trips_repetitions(run):
    policy, actions = run
    document = _document(policy, actions)
    assert actions_of(document) == actions
    assert first_difference(document, policy, replay(policy, actions, N)) is None
    for state, action in zip(document["states"][1:], actions):
        picks = state["mbt::nondetPicks"]
        # a single read or audit is written exactly as before repetitions existed
        assert ("times" in picks) == (steps_of(action) != 1)


@pytest.mark.parametrize("value", [{"#bigint": "0"}, {"#bigint": "-3"}, "5", True, {"#bigint": "1" + "0" * 1000}])
@pytest.mark.parametrize("old_form", [False, True])
def test_a_bad_repetition_count_in_a_trace_file_is_refused(value, old_form):
    policy = _policy("evict: age > 10", WINDOW)
    document = _document(policy, (Append("message", 1), Audit(4)))
    document["states"][2]["mbt::nondetPicks"]["times"] = {"tag": "Some", "value": value} if old_form else value
    with pytest.raises(TraceFormatError):
        actions_of(document)


@pytest.mark.parametrize("times, code", [("0", 2), ("12abc", 2), ("1" + "0" * 1000, 2), ("1" + "0" * 500, 1)])
def test_replay_of_a_forged_repetition_count_is_one_line_and_immediate(tmp_path, times, code):
    policy = _policy("evict: age > 10", WINDOW)
    document = _document(policy, (Append("message", 1), Edit(0, "transform"), Audit(10)))
    document["states"][3]["mbt::nondetPicks"]["times"] = {"#bigint": times}
    path = tmp_path / "forged.itf.json"
    path.write_text(json.dumps(document))
    got, out, err = run_cli("replay", path)
    assert got == code and len(err.splitlines()) == (1 if code == 2 else 0)
    assert code == 2 or "does not reproduce" in out  # a valid huge count replays at once, then differs


# --------------------------------------------------------------------------- a violation after 10^6 steps


def test_a_violation_after_a_million_steps_stays_small_and_readable(tmp_path):
    source = tmp_path / "late.yaml"
    source.write_text('name: late\nevict: "age > 1000000"\ndeployment: {records: window}\n')
    traces_dir, tests_dir, scripts_dir = tmp_path / "out", tmp_path / "emitted", tmp_path / "scripts"
    code, out, err = run_cli("check", source, "--only", "C1", "--no-prove", "--out", traces_dir, "--python",
                             scripts_dir, "--emit-pytest", tests_dir)
    assert code == 1, err
    assert "violated after 3 actions, 1000003 steps" in out and "audit(times=1000001)" in out
    (itf,) = traces_dir.glob("late-*.C1.itf.json")
    assert itf.stat().st_size < 16_000
    # the --python script runs from elsewhere and reproduces the violation
    (script,) = scripts_dir.glob("*_c1.py")
    assert script.stat().st_size < 16_000
    ran = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert ran.returncode == 0 and "C1" in ran.stdout, ran.stdout + ran.stderr
    # the emitted module asserts the violation (its other test fails until the policy is fixed: by design)
    (module,) = tests_dir.glob("test_*.py")
    assert module.stat().st_size < 16_000 and "Audit(times=1000001)" in module.read_text()
    runpy.run_path(str(module))["test_recorded_policy_violates_c1"]()
    # the policy fixed in its text (its deployment is the operator's, recorded in the module: ADR 0037)
    source.write_text(source.read_text().replace('"age > 1000000"', '"age > 1000000 and kind != \'record\'"'))
    runpy.run_path(str(module))["test_policy_file_keeps_c1"]()  # fixed: it guards against a regression
    source.write_text(source.read_text().replace('"age > 1000000 and kind != \'record\'"', '"age > 1000000"'))

    code, out, _ = run_cli("replay", itf)
    assert code == 0 and "3 actions, 1000003 steps" in out and "(steps 3-1000003)" in out
    code, out, _ = run_cli("explain", itf)
    assert code == 0 and "1000001 audits in a row (steps 3-1000003" in out and "age = 1000001" in out
    code, out, _ = run_cli("graph", itf, "--out", tmp_path / "late.dot")
    dot = (tmp_path / "late.dot").read_text()
    assert code == 0 and "3 actions, 1000003 steps" in out and "steps 3-1000003" in dot and len(dot) < 16_000

    policy = load_policy(source)
    report = check(policy, CheckOptions(only=("C1",), prove=False))
    assert report.result("C1").trace.steps == 1000003
    findings = findings_of(policy, report)
    assert "3 actions, 1000003 steps" in report_text(report, findings)
    assert report_json(report, findings)["conditions"]["C1"]["length"] == {"actions": 3, "steps": 1000003}
    (finding,) = sarif_log([findings])["runs"][0]["results"]
    assert finding["message"]["text"].startswith("C1 violated after 3 actions, 1000003 steps")
    page = report_html(findings)
    assert "C1 counterexample: 3 actions, 1000003 steps" in page and len(page) < 64_000
    graph = edit_graph(policy, replay(policy, report.result("C1").trace.actions, 6))
    assert "t1000003" not in graph_dot(graph)  # one column per step, not per clock value
