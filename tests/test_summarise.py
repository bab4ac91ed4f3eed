"""effect: summarise (spec/SPEC.md 4d): the summary span, window order by place, in every layer."""

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings, strategies as st

from prunecheck.checker.check import check
from prunecheck.checker.commands.policydiff import diff_policies, equivalence
from prunecheck.checker.engines.certificate_model import free_shape
from prunecheck.checker.findings.explain import step_label
from prunecheck.checker.language.document import policy_document
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.language.printer import policy_python, policy_yaml
from prunecheck.checker.options import DIFF_DEFAULTS, CheckOptions, options_with
from prunecheck.checker.outputs.itf import itf_states
from prunecheck.checker.outputs.render import span_line
from prunecheck.checker.result import Method, Verdict
from prunecheck.spec.conditions import violations
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import Deployment
from prunecheck.spec.runtime import (
    ActionRefused, Append, Compact, Edit, State, Undo, enabled, positions, span_env, step, window_in_order,
)
from prunecheck.symbolic.model import Model
from prunecheck.symbolic.window_terms import before, place_term

from conftest import BOUNDS
from support import SUMMARY_POLICIES, agree, assert_confirmed, engines_agree, policy_error, runs

FOLD = "name: t\nevict: from_end >= 2\neffect: summarise\nplaceholder_tokens: 3\nsummary_role: system\n"
# The summary's mechanism (its id and place, its slot, a revert of a destroy) under the first seed's deployment: no
# ledger entry after each summary, a destroy's record verbatim; the random runs below draw every deployment.
FIRST_SEED = {"evidence": "off", "destroy_record": "verbatim"}


def _policy(text, **deployment):
    return parse_policy_text(text, "p.yaml", Deployment(**{**FIRST_SEED, **deployment}))


def _run(policy, actions, max_spans=None):
    state, transitions = State(), []
    for action in actions:
        transitions.append(step(policy, state, action, max_spans))
        state = transitions[-1].after
    return state, transitions


FOUR = tuple(Append("message", t) for t in (5, 6, 7, 8))


def test_the_summary_stands_at_the_oldest_taken_spans_place_and_folds_an_earlier_summary():
    policy = _policy(FOLD)
    state, transitions = _run(policy, FOUR + (Compact(),))
    summary = state.span(4)
    assert transitions[-1].evicted == {0, 1}
    assert (summary.kind, summary.role, summary.tokens, summary.place, summary.created) == ("summary", "system", 3, 0, 5)
    assert [s.id for s in state.spans if s.alive] == [2, 3, 4]
    assert positions(state, summary)["position"] == 0 and positions(state, state.span(3))["from_end"] == 0
    state, transitions = _run(policy, FOUR + (Compact(), Append("message", 2), Compact()))
    assert transitions[-1].evicted == {2, 4}  # the earlier summary, oldest in window order, is folded
    assert state.span(6).place == 0 and state.window_tokens() == 3 + 8 + 2
    assert [s.id for s in sorted((s for s in state.spans if s.alive), key=lambda s: s.place)] == [6, 3, 5]


def test_nothing_taken_writes_no_summary_and_a_full_window_refuses_only_a_compaction_that_would_write_one():
    policy = _policy(FOLD)
    state, transitions = _run(policy, FOUR[:2] + (Compact(),))
    assert not transitions[-1].evicted and len(state.spans) == 2
    full, _ = _run(policy, FOUR, max_spans=4)
    assert not enabled(policy, full, Compact(), 4) and enabled(policy, full, Compact(), 5)
    with pytest.raises(ActionRefused):
        step(policy, full, Compact(), 4)


def test_logged_and_destroyed_records_are_judged_as_for_evict():
    text = "name: t\nevict: kind == 'record'\neffect: summarise\n"
    actions = (Append("message", 3), Edit(0, "destroy"), Compact())
    destroyed, transitions = _run(_policy(text, records="window"), actions)
    assert not destroyed.span(1).alive and destroyed.span(3).kind == "summary" and destroyed.span(3).place == 1
    assert "C2" in violations(_policy(text, records="window"), transitions[-1])
    logged, transitions = _run(_policy(text, records="window", evicted="logged"), actions + (Undo(1),))
    assert logged.span(1).namespace == "log" and transitions[-1].outcome == "reverted"


def test_window_order_is_place_order_for_order_newest_and_for_truncation():
    policy = _policy("name: t\nevict: kind == 'diff'\neffect: summarise\nplaceholder_tokens: 4\n", host_truncation="on")
    actions = (Append("message", 1), Append("diff", 2), Append("message", 3), Compact(), Compact(4))
    state, transitions = _run(policy, actions)
    # the summary (#3, 4 tokens) stands at place 1, so the host truncates #0 then the summary, and keeps #2
    assert transitions[-2].evicted == {1} and state.span(3).place == 1
    assert transitions[-1].truncated == {0, 3} and state.span(2).alive
    newest = _policy("name: t\nevict: kind != 'diff'\nuntil: window_spans <= 3\norder: newest\neffect: summarise\n")
    state, transitions = _run(newest, (Append("diff", 1), Append("message", 1), Append("message", 1),
                                       Append("diff", 1), Compact()))
    assert transitions[-1].evicted == {2} and state.span(4).place == 2
    assert span_env(newest, state, state.span(4))["from_end"] == 1


def test_place_is_quiet_where_it_is_the_id():
    policy = _policy(FOLD)
    state, transitions = _run(policy, FOUR + (Compact(),))
    assert "place" not in repr(state.span(0)) and "place=0" in repr(state.span(4))
    spans = itf_states(policy, transitions)[-1]["spans"]
    assert "place" not in spans[0] and spans[4]["place"] == {"#bigint": "0"}


AGREE = [
    (FOLD, {}, FOUR[:3] + (Compact(), Compact(4))),
    (FOLD.replace(">= 2", ">= 1"), {}, FOUR[:2] + (Compact(), Append("message", 2), Compact(3))),
    ("name: t\nevict: kind == 'record'\neffect: summarise\n", {"records": "window"},
     (Append("message", 3), Edit(0, "destroy"), Compact(), Undo(1))),
    ("name: t\nevict: kind != 'diff'\nuntil: window_spans <= 2\norder: newest\neffect: summarise\n"
     "placeholder_tokens: 2", {"evicted": "logged"},
     (Append("diff", 1), Append("message", 1), Append("message", 2), Compact(), Compact(2))),
    ("name: t\nevict: true\nrank: 0\nbudget: 4\neffect: summarise\n", {},
     (Append("message", 2), Append("message", 2), Append("message", 2), Compact(), Compact(1))),
    ("name: t\nevict: role == 'tool_result' or kind == 'summary'\npairs: together\neffect: summarise\n"
     "summary_role: assistant", {},
     (Append("message", 1, "tool_call"), Append("message", 2, "tool_result"), Compact(), Compact())),
]


@pytest.mark.parametrize("text, deployment, actions", AGREE)
def test_the_model_agrees_with_the_runtime_on_summaries(text, deployment, actions):
    agree(_policy(text, **deployment), actions, with_lemmas=True)


@pytest.mark.parametrize("text, deployment", [
    ("name: t\nevict: kind == 'record' or from_end >= 2\neffect: summarise\n", {"records": "window"}),
    ("name: t\nevict: kind != 'summary' and position >= 1\nuntil: window_spans <= 2\neffect: summarise\n"
     "placeholder_tokens: 2", {"records": "window", "rationale": "window", "audit": "policy", "pins": "self"}),
    ("name: t\nevict: role == 'tool_result' or kind == 'summary'\nkeep: turn < 1\neffect: summarise\n"
     "summary_role: system", {}),
])
def test_the_engines_agree_on_summarising_policies(text, deployment):
    engines_agree(_policy(text, **deployment), depth=4, spans=4)


def test_a_summarising_policy_that_spares_records_is_proved_with_certificates_cvc5_confirms():
    policy = _policy("name: t\nevict: kind != 'record' and from_end >= 1\neffect: summarise\n", records="window")
    results = check(policy, CheckOptions(depth=3, spans=4, only=("C1", "P1"), **BOUNDS)).results
    assert [r.verdict for r in results] == [Verdict.HOLDS, Verdict.HOLDS]
    assert_confirmed(policy, results)


def test_a_summarising_policy_that_catches_records_is_violated_with_a_replayed_trace():
    policy = _policy("name: t\nevict: kind == 'record'\neffect: summarise\n", records="window")
    (c2,) = check(policy, CheckOptions(depth=4, spans=4, only=("C2",), **BOUNDS)).results
    assert c2.verdict is Verdict.VIOLATED
    state, transitions = _run(policy, c2.trace.actions, 4)
    assert "C2" in violations(policy, transitions[-1])
    assert any(s.kind == "summary" and s.place != s.id for s in state.spans)  # the compaction wrote a summary


@pytest.mark.parametrize("printer, name", [(policy_yaml, "p.yaml"), (policy_python, "p.py"),
                                           (lambda p: json.dumps(policy_document(p)), "p.json")])
def test_summarise_keys_round_trip_through_every_printer(printer, name):
    policy = _policy(FOLD)
    again = parse_policy_text(printer(policy), name)
    assert again == policy and (again.effect, again.placeholder_tokens, again.summary_role) == ("summarise", 3, "system")


def test_summary_role_is_quiet_at_its_default():
    policy = _policy("name: t\nevict: true\neffect: summarise\n")
    assert "summary_role" not in repr(policy) and "summary_role" not in policy_document(policy)
    assert "SUMMARY_ROLE" not in policy_python(policy) and "summary_role='system'" in repr(_policy(FOLD))


@pytest.mark.parametrize("text, words", [
    ("evict: true\neffect: summary", "effect must be one of evict, mask, cut, summarise"),
    ("evict: true\nsummary_role: system", "only for `effect: summarise`"),
    ("evict: true\neffect: mask\nsummary_role: user", "only for `effect: summarise`"),
    ("evict: true\neffect: summarise\nsummary_role: tool_result", "summary_role must be one of user, assistant, system"),
    ("evict: true\neffect: summarise\nsummary_role: sytem", "did you mean"),
])
def test_bad_summary_keys_are_one_line_policy_errors(text, words):
    error = policy_error(text)
    assert words in str(error) and error.line >= 2


@pytest.mark.parametrize("source, words", [
    ('EFFECT = "summarise"\nSUMMARY_ROLE = "tool_call"\ndef evict(span, window):\n    return True\n',
     "SUMMARY_ROLE must be one of"),
    ('SUMMARY_ROLE = "system"\ndef evict(span, window):\n    return True\n', 'only for EFFECT = "summarise"'),
])
def test_bad_python_summary_role_is_a_one_line_policy_error(source, words):
    with pytest.raises(PolicySyntaxError) as caught:
        parse_policy_text(source, "p.py")
    assert words in str(caught.value) and "\n" not in str(caught.value)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(("message", "diff", "summary")), st.integers(1, 3)), min_size=1, max_size=6),
       st.sampled_from(("from_end >= 1", "kind == 'diff' or position == 0", "tokens >= 2")))
def test_live_window_places_are_distinct_and_positions_count_in_place_order(appends, evict):
    policy = _policy(f"name: t\nevict: {evict}\neffect: summarise\n")
    state = State()
    for kind, tokens in appends:
        state = step(policy, state, Append(kind, tokens)).after
        state = step(policy, state, Compact()).after
        live = sorted((s for s in state.spans if s.alive and s.namespace == "window"), key=lambda s: s.place)
        assert len({s.place for s in live}) == len(live)
        assert [int(positions(state, s)["position"]) for s in live] == list(range(len(live)))


def test_explanations_name_the_summary_and_a_summary_truncated_at_once():
    policy = _policy("name: t\nevict: kind == 'diff'\neffect: summarise\nplaceholder_tokens: 4\n", host_truncation="on")
    _, transitions = _run(policy, (Append("message", 1), Append("diff", 2), Compact(1)))
    label = step_label(policy, transitions[-1])
    assert label.startswith("compaction: summarised by the policy: #1 (diff); summary #2 (user, 4 tokens) written")
    assert "#2 (summary)" in label.split("truncated")[1]  # the new summary is truncated by the host at once
    other = _policy("name: t\nevict: kind == 'diff'\neffect: summarise\nsummary_role: system\n", host_truncation="on")
    assert "summary role user vs system" in equivalence(replace(policy, placeholder_tokens=1), other).reason


@settings(max_examples=25, deadline=None)
@given(runs(policies=SUMMARY_POLICIES, max_steps=7))
def test_the_model_agrees_with_the_runtime_on_random_summarising_runs(run):
    agree(*run, with_lemmas=False)


def test_free_policy_proofs_are_not_shared_across_summary_roles():
    # with pairs together the free pair model has roles, so the summary's role is part of it
    user = _policy("name: t\nevict: true\npairs: together\neffect: summarise\n")
    system = replace(user, summary_role="system")
    assert free_shape(user, 1.0) != free_shape(system, 1.0)


def test_a_summary_line_names_its_place():
    policy = _policy(FOLD)
    state, _ = _run(policy, FOUR + (Compact(),))
    assert span_line(state.span(4)).endswith("[window alive at place 0]") and "place" not in span_line(state.span(3))


def test_the_search_with_runs_finds_a_summarising_policy_that_splits_a_pair_only_past_the_span_bound():
    # the 9th newest span is summarised away: a tool call there loses its result's company only in a window of more
    # spans than the 6 slots; under the default deployment, with the compaction's ledger entry after the summary
    policy = parse_policy_text("name: t\nevict: from_end >= 8 and role != 'system'\neffect: summarise\n", "p.yaml")
    (t1,) = check(policy, CheckOptions(depth=4, spans=6, only=("T1",), **BOUNDS)).results
    assert t1.verdict is Verdict.VIOLATED and t1.engine is Method.RUNS
    state, transitions = _run(policy, t1.trace.actions)
    assert "T1" in violations(policy, transitions[-1]) and len(state.spans) > 6
    summary, ledger = state.spans[-2:]
    assert summary.kind == "summary" and summary.place < summary.id
    assert ledger.kind == "rationale" and ledger.namespace == "log" and state.entries[-1].rationale == ledger.id


def test_diff_against_a_summarising_policy_finds_a_replayed_witness():
    # the summary takes tokens in the window, so a host budget truncates a span there that it spares without it
    old = _policy("name: t\nevict: kind == 'diff'\n", host_truncation="on")
    new = _policy("name: t\nevict: kind == 'diff'\neffect: summarise\nplaceholder_tokens: 2\n", host_truncation="on")
    diff = diff_policies(old, new, options_with(DIFF_DEFAULTS, depth=4, spans=4, **BOUNDS))
    assert diff.outcome == "different" and not diff.equivalence.proved
    witness = diff.new_evicts.witness
    assert witness is not None and witness.new.fate == "truncated" and witness.old.fate == "kept"


def test_only_a_summarising_policy_gets_place_terms():
    plain = Model(_policy("name: t\nevict: from_end >= 2\n"), 3)
    summarising = Model(_policy(FOLD), 3)
    s, t = plain.generic_state("g"), summarising.generic_state("g")
    assert "place" not in s.fields and before(s, 0, 1) is True and place_term(s, 2).as_long() == 2
    assert "place" in t.fields and not isinstance(before(t, 0, 1), bool) and place_term(t, 2) is t.place[2]


# `summary_at: end` (SPEC 4d): the summary stands after every span the compaction left, as CrewAI puts it after the
# system messages it keeps.
AT_END = "name: t\nevict: role != 'system'\neffect: summarise\nsummary_at: end\nplaceholder_tokens: 2\n"
INTERLEAVED = (Append("message", 1, "system"), Append("message", 3), Append("message", 1, "system"),
               Append("message", 2, "assistant"))


def test_a_summary_at_the_end_stands_after_every_span_left():
    for text, order in ((AT_END, [0, 2, 4]), (AT_END.replace("summary_at: end\n", ""), [0, 4, 2])):
        state, transitions = _run(_policy(text), INTERLEAVED + (Compact(),))
        assert [s.id for s in window_in_order(state)] == order
    state, transitions = _run(_policy(AT_END), INTERLEAVED + (Compact(),))
    assert state.span(4).place == 4 and "written at the end of the window" in step_label(_policy(AT_END), transitions[-1])


@pytest.mark.parametrize("text, deployment, actions", [
    (AT_END, {}, INTERLEAVED + (Compact(), Append("message", 1), Compact(2))),
    (AT_END.replace("role != 'system'", "from_end >= 1 and kind != 'summary'") + "pairs: together\n", {"records": "window"},
     (Append("message", 1, "tool_call"), Append("message", 2, "tool_result"), Append("message", 1), Compact(),
      Edit(2, "transform"), Compact(), Undo(4))),
])
def test_the_model_agrees_with_the_runtime_on_summaries_at_the_end(text, deployment, actions):
    agree(_policy(text, **deployment), actions, with_lemmas=True, n=7)


def test_the_host_truncates_a_summary_at_the_end_in_window_order():
    # The differential sweep's policy that the unrolled model could not build (its truncation read no place for a
    # summary at the end): the host's budget truncates oldest first, the summary last, in both engines.
    text = AT_END.replace("role != 'system'", "tag == 'edit'") + "pairs: together\nbudget: 12\n"
    policy = _policy(text, evicted="logged", host_truncation="on", records="window")
    actions = (Append("message", 3, tag="edit"), Append("message", 2), Append("message", 1, tag="edit"), Compact(3))
    agree(policy, actions, with_lemmas=False, n=6)
    state, transitions = _run(policy, actions)
    assert transitions[-1].truncated and [s.id for s in window_in_order(state)][-1:] == [3]
    engines_agree(policy, depth=3, spans=4)


def test_the_engines_agree_on_a_summary_at_the_end():
    engines_agree(_policy(AT_END.replace("role != 'system'", "role != 'system' and position >= 1"),
                          records="window"), depth=4, spans=4)


@pytest.mark.parametrize("printer, name", [(policy_yaml, "p.yaml"), (policy_python, "p.py"),
                                           (lambda p: json.dumps(policy_document(p)), "p.json")])
def test_summary_at_round_trips_through_every_printer_and_is_quiet_at_its_default(printer, name):
    policy = _policy(AT_END)
    assert parse_policy_text(printer(policy), name) == policy and policy.summary_at == "end"
    plain = _policy(AT_END.replace("summary_at: end\n", ""))
    assert "summary_at" not in repr(plain) and "summary_at" not in printer(plain).lower()
    assert not equivalence(plain, policy).proved and "summary at replaced vs end" in equivalence(plain, policy).reason


@pytest.mark.parametrize("text, words", [
    ("evict: true\nsummary_at: end", "summary_at is only for `effect: summarise`"),
    ("evict: true\neffect: summarise\nsummary_at: last", "summary_at must be one of replaced, end"),
])
def test_bad_summary_at_is_a_one_line_policy_error(text, words):
    assert words in str(policy_error(text))


def test_bad_python_summary_at_is_a_one_line_policy_error():
    for source, words in (('SUMMARY_AT = "end"\ndef evict(span, window):\n    return True\n', 'only for EFFECT'),
                          ('EFFECT = "summarise"\nSUMMARY_AT = "top"\ndef evict(span, window):\n    return True\n',
                           "SUMMARY_AT must be one of")):
        with pytest.raises(PolicySyntaxError) as caught:
            parse_policy_text(source, "p.py")
        assert words in str(caught.value) and "\n" not in str(caught.value)
