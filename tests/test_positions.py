"""Positional attributes (spec/SPEC.md §1b) end to end: runtime, unrolled model, forms, domains and both engines."""

import pytest
import z3
from hypothesis import given, settings

from prunecheck.checker.check import check
from prunecheck.checker.commands.policydiff import equivalence
from prunecheck.checker.engines.explicit import domains_for
from prunecheck.checker.engines.replay import confirm, decode_state
from prunecheck.checker.findings.explain import predicate_points, step_label
from prunecheck.checker.language.intervals import interval_of
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.language.printer import policy_python, policy_yaml
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.result import Advice, Method, Need, Verdict
from prunecheck.checker.engines.unknowns import counted_spans
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import POSITION_ATTRS, ROLES, Attr, Deployment
from prunecheck.spec.runtime import Append, Compact, Edit, State, addressable, candidates, span_env, step
from prunecheck.symbolic.model import Model
from prunecheck.symbolic.window_terms import position_terms

from conftest import BOUNDS
from support import N, POSITIONAL, model_policy, pin_action, run_actions, runs, unroll
from support import agree as agree_with_runtime
from support import engines_agree as agree

# Positions are the first seed's mechanism: these deployments state it (no evidence ledger, whose entries would take
# the bound's slots, and verbatim records, which a host's truncation reaches within it; ADR 0035).
FIRST_SEED = {"evidence": "off", "destroy_record": "verbatim"}
WINDOW = Deployment(records="window", pins="self", **FIRST_SEED)
HOSTED = Deployment(records="window", pins="self", host_truncation="on", **FIRST_SEED)  # a host that truncates (SPEC §2)
BUILT = (Append("message", 2, "system"), Append("message", 3, "user"), Append("tool_output", 1, "assistant"),
         Append("message", 4, "user"), Edit(2, "destroy"), Append("message", 5, "assistant"), Compact())


def _run(policy, actions):
    return run_actions(policy, actions)[0]


def _positions(policy, state, span_id):
    env = span_env(policy, state, state.span(span_id))
    return tuple(int(env[name]) for name in POSITION_ATTRS)


def test_runtime_positions_count_live_window_spans_in_id_order():
    policy = model_policy("evict: kind == 'diff'", Deployment(records="window"))
    state = _run(policy, BUILT)
    # #2 was evicted, #4 is its record (window, role tool_result, 1 token), #5 its rationale (log): neither counts.
    assert [s.id for s in state.spans if addressable(s)] == [0, 1, 3, 4, 6]
    #            (position, from_end, from_end_in_role, turn, tokens_after, window_spans)
    assert _positions(policy, state, 0) == (0, 4, 0, 2, 13, 5)
    assert _positions(policy, state, 1) == (1, 3, 1, 1, 10, 5)
    assert _positions(policy, state, 3) == (2, 2, 0, 0, 6, 5)
    assert _positions(policy, state, 4) == (3, 1, 0, 0, 5, 5)
    assert _positions(policy, state, 6) == (4, 0, 0, 0, 0, 5)
    last_two = model_policy("evict: from_end >= 2", Deployment(records="window"))
    assert candidates(last_two, state) == (0, 1, 3)


def test_one_compaction_evaluates_every_position_in_the_state_it_starts_from():
    policy = model_policy("evict: from_end >= 1", Deployment())
    state = _run(policy, (Append("message", 1), Append("message", 1), Append("message", 1)))
    transition = step(policy, state, Compact())
    # Evaluated once, in the state the compaction starts from: #0 and #1 both have a newer span; the newest stays.
    assert transition.evicted == frozenset({0, 1})


@settings(max_examples=25)
@given(runs(policies=POSITIONAL))
def test_model_position_terms_equal_the_runtime_on_every_run(run):
    policy, actions = run
    model = Model(policy, N)
    (solver, states), state = unroll(model, actions, pin_action), State()
    assert solver.check() == z3.sat
    m = solver.model()
    for k, action in enumerate((None,) + actions):
        if action is not None:
            state = step(policy, state, action, N).after
        assert decode_state(m, states[k]) == state
        for span in state.spans:
            if addressable(span):
                terms = position_terms(states[k], span.id, POSITION_ATTRS)
                got = tuple(m.eval(terms[name], model_completion=True).as_long() for name in POSITION_ATTRS)
                assert got == _positions(policy, state, span.id), f"state {k}, span {span.id}"


@settings(max_examples=10)
@given(runs(policies=POSITIONAL))
def test_the_model_with_its_proved_lemmas_reaches_the_runtimes_states_and_violations(run):
    agree_with_runtime(*run, with_lemmas=True)


@pytest.mark.parametrize("text", ["evict: from_end >= 2", "evict: position < 1",
                                  "evict: turn >= 1 and role == 'tool_result'", "evict: window_spans > 3"])
@pytest.mark.parametrize("deployment", [Deployment(**FIRST_SEED), WINDOW, HOSTED],
                         ids=["undo_region", "window", "window-host"])
def test_explicit_and_symbolic_engines_agree(text, deployment):
    summary = agree(model_policy(text, deployment))
    violated = {c for c, (verdict, _) in summary.items() if verdict == Verdict.VIOLATED}
    # Under a host that truncates, records in the window are removed within the bound whatever the policy says (C1
    # too when the bound reaches it). Without one only the stage removes them, and only once they are candidates:
    # C2 at some depth needs C1 a step earlier (the positions some of these policies need are beyond 4 spans).
    if deployment == HOSTED:
        assert "C2" in violated
    elif deployment == WINDOW:
        assert "C2" not in violated or "C1" in violated, summary
    else:
        assert "C2" not in violated


def test_keep_the_last_three_with_records_in_the_window_is_violated_and_in_the_undo_region_proved():
    policy = model_policy("evict: from_end >= 3", WINDOW)
    leaky = check(policy, CheckOptions(**BOUNDS)).result("C1")
    assert leaky.verdict == Verdict.VIOLATED
    confirm(policy, leaky.trace.actions, "C1", leaky.trace.spans)
    policy = model_policy("evict: from_end >= 3", Deployment(**FIRST_SEED))
    safe = {r.condition: r for r in check(policy, CheckOptions(**BOUNDS)).results}
    # T1 applies to this role-blind policy (tool_calls: on, ADR 0033): it keeps the last three spans whatever their
    # roles, so a call can go while its result stays.
    split = safe.pop("T1")
    assert split.verdict == Verdict.VIOLATED
    confirm(policy, split.trace.actions, "T1", split.trace.spans)
    assert all(r.verdict == Verdict.HOLDS and r.certificate for r in safe.values())


def test_a_proof_as_written_uses_the_pair_models_counters():
    # C1 holds only because the policy spares records: the free-predicate proof fails, the one as written succeeds.
    policy = model_policy("evict: from_end_in_role >= 1 and kind != 'record'", WINDOW)
    result = check(policy, CheckOptions(**BOUNDS)).result("C1")
    assert result.verdict == Verdict.HOLDS and result.certificate
    assert result.engine in (Method.INDUCTION, Method.SPACER)


def test_intervals_and_divisions():
    for name in POSITION_ATTRS:
        assert (interval_of(Attr(name)).lo, interval_of(Attr(name)).hi) == (0, None)
    with pytest.raises(PolicySyntaxError, match="p.yaml:2"):
        parse_policy_text("name: t\nevict: 1 / from_end < 1\n", "p.yaml")
    parse_policy_text("name: t\nevict: 1 / (1 + from_end) < 1\n", "p.yaml")


def test_python_form_and_printers_round_trip():
    text = ("NAME = 't'\n\ndef evict(span, window):\n"
            "    return span.from_end >= 20 and window.window_spans > span.turn + span.position\n\n"
            "def rank(span, window):\n    return span.tokens_after - span.from_end_in_role\n\nBUDGET = 9\n")
    policy = parse_policy_text(text, "p.py")
    assert parse_policy_text(policy_yaml(policy), "p.yaml") == policy
    assert parse_policy_text(policy_python(policy), "p.py") == policy
    with pytest.raises(PolicySyntaxError, match="p.py:4"):
        parse_policy_text(text.replace("window.window_spans", "span.window_spans"), "p.py")


def test_explicit_domains_for_positions():
    assert domains_for(model_policy("evict: from_end_in_role >= 1", Deployment())).roles == ROLES
    no_tools = Deployment(tool_calls="off")
    assert set(domains_for(model_policy("evict: turn >= 1", no_tools)).roles) == {"user", "assistant"}
    turn = ("user", "assistant", "tool_call", "tool_result")  # T1 asks for the tool roles (ADR 0033)
    assert domains_for(model_policy("evict: turn >= 1", Deployment())).roles == turn
    assert domains_for(model_policy("evict: from_end >= 1", no_tools)).roles == ("user",)
    assert domains_for(model_policy("evict: from_end >= 1", Deployment())).roles == ("user", "tool_call", "tool_result")
    assert 50 in domains_for(model_policy("evict: tokens_after > 50", Deployment())).tokens


def test_explanations_show_the_positions_read():
    policy = model_policy("evict: from_end >= 2 and window_spans > 1", Deployment(records="window"))
    state = _run(policy, BUILT[:4])
    notes = " ".join(p.note for p in predicate_points(policy, state, 0))
    assert "from_end = 3" in notes and "window_spans = 4" in notes
    # `turn` counts user spans, so a trace of a policy reading it names every span's role.
    turn = model_policy("evict: turn >= 1", Deployment())
    assert "role assistant" in step_label(turn, step(turn, State(), Append("message", 1, "assistant")))


def test_diff_proves_equivalences_that_only_the_position_facts_give():
    last3 = model_policy("evict: from_end >= 3", Deployment())
    assert equivalence(last3, model_policy("evict: position + 3 < window_spans", Deployment()), **BOUNDS).proved
    assert not equivalence(last3, model_policy("evict: from_end >= 2", Deployment()), **BOUNDS).proved


def test_an_unknown_names_the_span_bound_a_count_asks_for():
    # "keep the last 20 after a while": a record needs 20 newer spans (and its rationale and its edit's target) to be
    # a candidate; `age` tells a run's members apart, so the search with runs does not serve it (tests/test_runs.py).
    policy = model_policy("evict: from_end >= 20 and age > 1", WINDOW)
    (c1,) = check(policy, CheckOptions(depth=3, spans=4, only=("C1",), **BOUNDS)).results
    assert c1.verdict is Verdict.UNKNOWN
    assert c1.reason.advice[0] == Advice("--spans", 23, Need.COUNT)
    assert counted_spans(model_policy("evict: true\nwhen: window_spans > 100", WINDOW)) == 103
    assert counted_spans(model_policy("evict: tokens > 100", WINDOW)) == 0
