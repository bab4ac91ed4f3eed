"""The compaction stage (keep, when, until, order): forms, runtime walk, unrolled and pair models, engines."""

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prunecheck.checker.check import check
from prunecheck.checker.commands.policydiff import DIFFERENT, diff_policies, equivalence
from prunecheck.checker.engines.bmc import check_bounded
from prunecheck.checker.engines.certificate import Status, confirm_certificate
from prunecheck.checker.engines.explicit import domains_for, explore
from prunecheck.checker.engines.replay import confirm
from prunecheck.checker.findings.explain import explain
from prunecheck.checker.language.document import policy_document
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.language.printer import policy_python, policy_yaml
from prunecheck.checker.options import DIFF_DEFAULTS, CheckOptions, options_with
from prunecheck.checker.result import Verdict
from prunecheck.spec.conditions import applicable
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import Deployment
from prunecheck.spec.runtime import Append, Compact, Edit, State, host_budgets, step
from prunecheck.strategies import EXTENSION, policies, policy_texts

from conftest import BOUNDS, HOUR, RLIMIT
from support import STAGE_POLICIES, agree, at, model_policy, runs

# The first seed's deployment (no evidence, a destroy's record as large as its target), for the tests of the first
# seed's conditions on a stage and of a destroy's record truncated: a compaction's ledger entry would take the slot
# their bounds leave; the second seed's defaults are tested elsewhere.
FIRST_SEED = {"evidence": "off", "destroy_record": "verbatim"}


def _policy(text, **deployment):
    return parse_policy_text(f"name: t\n{text}\n", "t.yaml", Deployment(**deployment))


def _state(*tokens, roles=None):
    """A window of appended message spans with these token counts (and roles), oldest first."""
    state = State()
    for i, count in enumerate(tokens):
        state = step(_policy("evict: false"), state, Append("message", count, (roles or {}).get(i, "user"))).after
    return state


def _taken(text, state, host=None):
    """What a compaction evicts and truncates; with a host budget, under a host that truncates to it (SPEC §2)."""
    transition = step(_policy(text, **({} if host is None else {"host_truncation": "on"})), state, Compact(host))
    return sorted(transition.evicted), sorted(transition.truncated)


# --------------------------------------------------------------------------- runtime


def test_a_false_trigger_takes_nothing_but_the_host_still_truncates():
    state = _state(3, 3, 3)
    assert _taken("evict: true\nwhen: window_tokens > 9", state) == ([], [])
    assert _taken("evict: true\nwhen: window_tokens > 9", state, host=4) == ([], [0, 1])
    assert _taken("evict: true\nwhen: window_tokens > 8", state) == ([0, 1, 2], [])


def test_until_stops_the_walk_at_the_target():
    state = _state(3, 3, 3, 3)
    assert _taken("evict: true\nuntil: window_tokens <= 6", state) == ([0, 1], [])
    assert _taken("evict: true\nuntil: window_spans <= 3", state) == ([0], [])
    assert _taken("evict: true\nuntil: window_tokens <= 12", state) == ([], [])


def test_newest_order_walks_from_the_end():
    state = _state(1, 2, 3, 4)
    assert _taken("evict: true\nuntil: window_tokens <= 5\norder: newest", state) == ([2, 3], [])
    assert _taken("evict: true\nuntil: window_tokens <= 5", state) == ([0, 1, 2], [])


def test_keep_protects_spans_from_the_stage_but_not_from_the_host():
    state = _state(2, 2, 2, roles={0: "system"})
    text = "evict: true\nkeep: role == 'system'"
    assert _taken(text, state) == ([1, 2], [])
    assert _taken("evict: true\nkeep: role == 'system'\nuntil: window_tokens <= 1", state, host=1) == ([1, 2], [0])


def test_legacy_ranked_walk_is_the_target_window_tokens_within_budget():
    state = _state(1, 2, 3, 4)
    legacy = _taken("evict: true\nrank: 0 - tokens\nbudget: 4", state)
    explicit = _taken("evict: true\nrank: 0 - tokens\nbudget: 4\nuntil: window_tokens <= budget", state)
    assert legacy == explicit == ([2, 3], [])


def test_the_host_budget_truncates_what_the_walk_left():
    state = _state(3, 3, 3)
    assert _taken("evict: true\nuntil: window_tokens <= 6", state, host=2) == ([0], [1, 2])
    # Under the default host_truncation: off the host's budget changes nothing.
    off = step(_policy("evict: true\nuntil: window_tokens <= 6"), state, Compact(2))
    assert (sorted(off.evicted), sorted(off.truncated)) == ([0], [])


# --------------------------------------------------------------------------- the unrolled model against the runtime


@settings(max_examples=30, deadline=None)
@given(runs(max_steps=7, policies=STAGE_POLICIES))
def test_model_and_runtime_agree_on_stage_policies(run):
    agree(*run, with_lemmas=False)


@pytest.mark.parametrize("text", STAGE_POLICIES)
def test_model_agrees_on_a_full_window_compaction(text):
    actions = (Append("message", 2), Append("message", 3, "system"), Append("tool_output", 1),
               Append("message", 2), Compact())
    agree(model_policy(text, Deployment()), actions, with_lemmas=False)


# --------------------------------------------------------------------------- forms and errors


@pytest.mark.parametrize("text, line, col, words", [
    ("evict: true\nwhen: tokens > 3\n", 3, 7, ["`when` may only read window attributes", "`tokens`"]),
    ("evict: true\nuntil: window_tokens < 3 and age > 1\n", 3, 30, ["`until`", "`age`"]),
    ("evict: true\nrank: age\norder: newest\n", 4, 8, ["`order` cannot be combined with `rank`"]),
    ("evict: true\norder: latest\n", 3, 8, ["order must be one of oldest, newest"]),
    ("evict: true\nkeep: tokens\n", 3, 7, ["keep must be a bool"]),
    ("evict: true\nuntil: window_tokens <= budget\n", 3, 25, ["`budget` is referenced"]),
])
def test_yaml_stage_errors_point_at_the_key(text, line, col, words):
    with pytest.raises(PolicySyntaxError) as info:
        parse_policy_text(f"name: t\n{text}", "t.yaml")
    at(info.value, line, col, *words)


PY_HEAD = "NAME = 't'\n\ndef evict(span, window):\n    return True\n\n"


@pytest.mark.parametrize("text, line, col, words", [
    ("def when(window):\n    return span.tokens > 3\n", 7, 12, ["`when` may only read window attributes"]),
    ("def until(span, window):\n    return window.window_spans < 3\n", 6, 1, ["def until(window):"]),
    ("def keep(window):\n    return True\n", 6, 1, ["def keep(span, window):"]),
    ("ORDER = 'newest'\ndef rank(span, window):\n    return span.age\n", 6, 9, ["cannot be combined with `rank`"]),
    ("ORDER = 'last'\n", 6, 9, ["ORDER must be one of"]),
])
def test_python_stage_errors_point_at_the_construct(text, line, col, words):
    with pytest.raises(PolicySyntaxError) as info:
        parse_policy_text(PY_HEAD + text, "t.py")
    at(info.value, line, col, *words)


def test_the_cli_refuses_a_span_attribute_in_a_trigger_with_exit_2(tmp_path, capsys):
    from prunecheck.checker.cli import main

    path = tmp_path / "p.yaml"
    path.write_text("name: t\nevict: true\nwhen: tokens > 3\n")
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "p.yaml:3:7:" in err and len(err.splitlines()) == 1


def test_the_three_forms_of_a_stage_policy_are_equal():
    yaml_text = ("name: t\nevict: kind != 'record'\nkeep: role == 'system'\nwhen: window_spans > 20\n"
                 "until: window_tokens <= 50000\norder: newest\n")
    py_text = ("NAME = 't'\nORDER = 'newest'\n\ndef evict(span, window):\n    return span.kind != 'record'\n\n"
               "def keep(span, window):\n    return span.role == 'system'\n\n"
               "def when(window):\n    return window.window_spans > 20\n\n"
               "def until(window):\n    return window.window_tokens <= 50000\n")
    policy = parse_policy_text(yaml_text, "t.yaml")
    assert parse_policy_text(py_text, "t.py") == policy
    assert policy.order == "newest" and policy.keep is not None


def test_stage_keys_at_their_defaults_leave_the_hash_alone():
    from prunecheck.checker.language.document import policy_hash

    plain = parse_policy_text("name: t\nevict: age > 2\n", "t.yaml")
    explicit = parse_policy_text("name: t\nevict: age > 2\norder: oldest\n", "t.yaml")
    staged = parse_policy_text("name: t\nevict: age > 2\nwhen: window_spans > 2\n", "t.yaml")
    assert "order" not in repr(plain) and "when" not in repr(plain)
    assert policy_hash(plain) == policy_hash(explicit) != policy_hash(staged)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(("yaml", "python", "json")).flatmap(lambda f: st.tuples(st.just(f), policy_texts(f, 2, True))))
def test_every_form_of_generated_stage_policies_round_trips(form_text):
    form, text = form_text
    policy = parse_policy_text(text, "g" + EXTENSION[form])
    printed = [(policy_yaml(policy), ".yaml"), (json.dumps(policy_document(policy)), ".json")]
    if form == "python":  # a YAML literal such as 0.1 has no Python literal: only Python policies print as Python
        printed.append((policy_python(policy), ".py"))
    for text_again, ext in printed:
        assert parse_policy_text(text_again, "r" + ext) == policy


# --------------------------------------------------------------------------- engines


@pytest.mark.parametrize("text", STAGE_POLICIES[:6])
@pytest.mark.parametrize("deployment", [Deployment(records="window"), Deployment(rationale="window", pins="self")])
def test_explicit_and_symbolic_engines_agree_on_stage_policies(text, deployment):
    policy = model_policy(text, deployment)
    domains = domains_for(policy)
    explicit = explore(policy, 3, 4, domains=domains, time_limit=HOUR, max_states=20_000)
    symbolic = check_bounded(policy, 3, 4, timeout=HOUR, rlimit=RLIMIT, token_domain=domains.tokens,
                             repeat_domain=domains.repeats, clock_targets=domains.clock_targets)
    assert _summary(explicit) == _summary(symbolic)


def _summary(results):
    return {r.condition: (r.verdict, r.depth if r.verdict == Verdict.VIOLATED else None) for r in results}


def test_a_safe_stage_policy_is_proved_with_records_in_the_undo_region():
    policy = _policy("evict: true\nkeep: role == 'system'\nwhen: window_spans > 3\nuntil: window_tokens <= 10",
                     **FIRST_SEED)
    results = check(policy, CheckOptions(depth=3, spans=4, **BOUNDS)).results
    verdicts = {r.condition: r.verdict for r in results}
    # It reads `role`, so T1 applies too, and is not proved: the walk may stop between a tool call and its result.
    assert verdicts.pop("T1") is not Verdict.HOLDS
    assert verdicts == {c: Verdict.HOLDS for c in applicable(policy) if c != "T1"}
    (c2,) = [r for r in results if r.condition == "C2"]
    assert confirm_certificate(c2.certificate, policy, "C2", timeout_ms=int(HOUR * 1000),
                               rlimit=RLIMIT).status is Status.CONFIRMED


def test_keep_proves_c1_for_records_in_the_window_on_the_pair_model():
    policy = _policy("evict: true\nkeep: kind in ['record', 'rationale']\nwhen: window_spans > 2\n"
                     "until: window_spans <= 2", records="window", rationale="window")
    (result,) = check(policy, CheckOptions(depth=3, spans=4, only=("C1",), **BOUNDS)).results
    assert result.verdict is Verdict.HOLDS
    assert confirm_certificate(result.certificate, policy, "C1", timeout_ms=int(HOUR * 1000),
                               rlimit=RLIMIT).status is Status.CONFIRMED


def test_a_stage_that_reaches_records_in_the_window_is_violated_and_replayed():
    policy = _policy("evict: true\nwhen: window_spans > 2\nuntil: window_spans <= 2\norder: newest", records="window",
                     **FIRST_SEED)
    results = {r.condition: r for r in check(policy, CheckOptions(depth=4, spans=4, only=("C1", "C2"),
                                                                   **BOUNDS)).results}
    for condition in ("C1", "C2"):
        assert results[condition].verdict is Verdict.VIOLATED
        confirm(policy, results[condition].trace.actions, condition, results[condition].trace.spans)


# --------------------------------------------------------------------------- explanations


def test_explanations_say_the_trigger_held_and_the_target_was_not_reached():
    policy = _policy("evict: true\nkeep: role == 'system'\nwhen: window_spans > 2\nuntil: window_spans <= 2\n"
                     "order: newest", records="window", **FIRST_SEED)
    taken = explain(policy, [Append("message", 1), Append("message", 1), Edit(0, "transform"), Compact()], "C2")
    points = {p.text.split(":")[0]: p for p in taken.cause.points}
    assert (points["when"].loc.line, points["until"].loc.line, points["keep"].loc.line) == (4, 5, 3)
    assert "the trigger held" in points["when"].note and "window_spans = 3" in points["when"].note
    assert "not yet reached" in points["until"].note and "newest first" in points["until"].note
    hosted = replace(policy, deployment=replace(policy.deployment, host_truncation="on"))  # the host truncates
    idle = explain(hosted, [Append("message", 2), Edit(0, "destroy"), Compact(1)], "C2")
    assert "the trigger `window_spans > 2` is false" in idle.steps[-1]


# --------------------------------------------------------------------------- prunecheck diff


def test_keep_is_part_of_the_selection_diff_compares():
    old = _policy("evict: kind != 'tool_output'")
    new = _policy("evict: true\nkeep: kind == 'tool_output'")
    proof = equivalence(old, new, **BOUNDS)
    assert proof.proved, proof.reason


def test_a_target_makes_policies_with_equal_selections_differ():
    old = _policy("evict: true")
    new = _policy("evict: true\nuntil: window_tokens <= 2")
    assert not equivalence(old, new, **BOUNDS).proved
    diff = diff_policies(old, new, options_with(DIFF_DEFAULTS, depth=3, spans=3, **BOUNDS))
    assert diff.outcome == DIFFERENT
    witness = diff.old_evicts.witness
    assert (witness.old.fate, witness.new.fate) == ("evicted", "kept")


@settings(max_examples=12, deadline=None)
@given(policies(2, stage=True))
def test_explicit_and_symbolic_engines_agree_on_generated_stage_policies(policy):
    domains = domains_for(policy, (1, 2))
    explicit = explore(policy, 3, 3, domains=domains, time_limit=HOUR, max_states=20_000)
    if any(r.reason.clauses[0].state_limit is not None for r in explicit):
        return  # the explicit search stopped early: nothing to compare at this depth
    symbolic = check_bounded(policy, 3, 3, timeout=HOUR, rlimit=RLIMIT, token_domain=domains.tokens,
                             repeat_domain=domains.repeats, clock_targets=domains.clock_targets)
    assert _summary(explicit) == _summary(symbolic)


@pytest.mark.parametrize("text", STAGE_POLICIES)
def test_host_budgets_stay_exhaustive_after_a_stage(text):
    policy = _policy(text)
    state = _state(2, 3, 1, 2, roles={0: "system"})
    listed = {frozenset(step(policy, state, Compact(h)).truncated) for h in host_budgets(policy, state)}
    listed.add(frozenset(step(policy, state, Compact()).truncated))
    for host in range(1, state.window_tokens() + 2):
        assert frozenset(step(policy, state, Compact(host)).truncated) in listed, host
