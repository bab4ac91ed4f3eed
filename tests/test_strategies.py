"""The hypothesis strategies: generated policies parse in every form, printers round-trip, traces replay, vocabulary is covered."""

from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prunecheck.checker.language.expr_parser import parse_expr
from prunecheck.checker.language.loader import load_policy, parse_policy_text
from prunecheck.checker.language.printer import policy_python, policy_yaml, to_python, to_text
from prunecheck.checker.language.pyform import check_python_arithmetic, parse_python_policy
from prunecheck.checker.language.typecheck import check_policy, count_nodes, type_of
from prunecheck.spec.policy import (
    ARITH_OPS,
    SUMMARY_AT,
    stage_exprs,
    ATTRS,
    BOOL,
    BOOL_OPS,
    COMPARE_OPS,
    DEPLOYMENT_CHOICES,
    EFFECTS,
    CALLABLE,
    KIND,
    NAMESPACE,
    NUM,
    Attr,
    Binary,
    BoolLit,
    Call,
    Cond,
    Deployment,
    EnumLit,
    InSet,
    Num,
    Unary,
    subexpressions,
    children,
)
from prunecheck.spec.runtime import State, enabled, step
from prunecheck.spec.actions import ACTION_TYPES, real_steps
from prunecheck.strategies import (
    EXTENSION,
    FORMS,
    NAME_POOL,
    deployments,
    expressions,
    policies,
    policy_json,
    policy_texts,
    traces,
)

from conftest import EXAMPLES

FAST = settings(max_examples=60, database=None)


def depth(expr) -> int:
    return 1 + max((depth(c) for c in children(expr)), default=0)


def python_module(expr) -> str:
    return f"def evict(span, window):\n    return {to_python(expr)}\n"


# --------------------------------------------------------------------------- (a) policies in every form


@FAST
@given(st.booleans().flatmap(lambda python: st.tuples(st.just(python), policies(python=python))))
def test_generated_policies_parse_and_check_in_every_form(drawn):
    python, policy = drawn  # the Python form only for policies(python=True): others may divide ints or say 0.1
    check_policy(policy)
    assert depth(policy.evict) <= 3 and (policy.rank is None or depth(policy.rank) <= 3)
    assert policy.budget is None or 2 <= policy.budget <= 12
    if policy.budget is None:
        exprs = [policy.evict] + ([policy.rank] if policy.rank is not None else [])
        assert not any(isinstance(n, Attr) and n.name == "budget" for e in exprs for n in subexpressions(e))
    from_yaml = parse_policy_text(policy_yaml(policy), "p.yaml")
    from_json = parse_policy_text(policy_json(policy), "p.json")
    from_python = parse_policy_text(policy_python(policy), "p.py") if python else policy
    for other in (from_yaml, from_python, from_json):
        assert (other.evict, other.rank, other.budget, other.deployment) == (
            policy.evict,
            policy.rank,
            policy.budget,
            policy.deployment,
        )
        assert other == policy


@pytest.mark.parametrize("form", FORMS)
def test_policy_texts_parse(form):
    @settings(max_examples=25, database=None)
    @given(policy_texts(form))
    def run(text):
        check_policy(parse_policy_text(text, "generated" + EXTENSION[form]))

    run()


def test_policy_texts_refuses_unknown_form():
    with pytest.raises(ValueError):
        policy_texts("toml")
    with pytest.raises(ValueError):
        expressions("string", 2)
    with pytest.raises(ValueError):
        expressions(BOOL, 0)


@pytest.mark.parametrize("path", sorted(p for p in EXAMPLES.iterdir() if p.suffix != ".toml"), ids=lambda p: p.name)
def test_example_policies_print_in_both_forms(path):
    policy = load_policy(path)
    assert parse_policy_text(policy_yaml(policy), "p.yaml") == policy
    assert parse_policy_text(policy_python(policy), "p.py") == policy


def test_python_printer_writes_top_level_conditionals_as_statements():
    evict = Cond(Attr("pinned"), BoolLit(False), Cond(Binary("<", Attr("age"), Num(3)), BoolLit(True), Attr("edited")))
    policy = parse_policy_text(f"name: c\nevict: {to_text(evict)}\n", "c.yaml")
    text = policy_python(policy)
    assert "    if span.pinned:\n        return False\n    if span.age < 3:" in text
    assert parse_policy_text(text, "c.py") == policy


def test_printers_quote_awkward_names_and_descriptions():
    base = parse_policy_text("name: x\nevict: \"'record' == kind\"\n", "x.yaml")
    for name in ("true", "a: b", "x #y", "  lead", "null", "ünï", "tab\there", "quote\"'s"):
        for description in ("", "one line", "two\nlines", "back\\slash"):
            policy = type(base)(name=name, evict=base.evict, description=description, deployment=Deployment())
            assert parse_policy_text(policy_yaml(policy), "p.yaml") == policy
            if description.strip() == description and "\n" not in description:  # Python docstrings are cleandoc'd
                assert parse_policy_text(policy_python(policy), "p.py") == policy


# --------------------------------------------------------------------------- (b) printer round trips


@settings(max_examples=150, database=None)
@given(
    st.tuples(st.sampled_from((BOOL, NUM, KIND, NAMESPACE)), st.booleans()).flatmap(
        lambda tp: st.tuples(st.just(tp[0]), st.just(tp[1]), expressions(tp[0], 4, python=tp[1]))
    )
)
def test_printers_round_trip(typed):
    type_, python, expr = typed
    assert type_of(expr) == type_
    assert depth(expr) <= 4
    assert parse_expr(to_text(expr)) == expr
    if python:  # and CPython computes it exactly: the Python form accepts it
        parts = parse_python_policy(python_module(expr))
        assert parts.evict == expr
        check_python_arithmetic([parts.evict], parts.floats)


@FAST
@given(expressions(BOOL, 3, with_budget=False))
def test_expressions_without_budget_type_check_without_one(expr):
    assert type_of(expr, has_budget=False) == BOOL
    assert not any(isinstance(n, Attr) and n.name == "budget" for n in subexpressions(expr))


def test_to_python_spellings():
    expr = parse_expr("not pinned and kind not in ['diff'] or -tokens / (1 + idle) >= (1 / 3) and budget > 2")
    text = to_python(expr)
    assert text == (
        "(not span.pinned and span.kind not in ['diff']) or (-span.tokens / (1 + span.idle) >= 1 / 3 and window.budget > 2)"
    )
    assert parse_python_policy(python_module(expr)).evict == expr
    assert to_python(Num(Fraction(-5, 2))) == "(-2.5)"
    assert to_python(parse_expr("true if edited else false")) == "True if span.edited else False"
    with pytest.raises(ValueError):
        to_python(Attr("nonsense"))


# --------------------------------------------------------------------------- (c) traces replay


@FAST
@given(st.data())
def test_generated_traces_replay(data):
    policy = data.draw(policies(2))
    max_spans = data.draw(st.sampled_from((None, 4, 8)))
    trace = data.draw(traces(policy, max_steps=12, max_spans=max_spans))
    assert len(trace) <= 12
    state = State()
    for action in trace:
        assert enabled(policy, state, action, max_spans)
        state = step(policy, state, action, max_spans).after
    assert state.step == real_steps(trace) >= len(trace)
    assert max_spans is None or len(state.spans) <= max_spans


# --------------------------------------------------------------------------- (d) vocabulary coverage


def features(expr):
    for node in subexpressions(expr):
        if isinstance(node, Attr):
            yield node.name
        elif isinstance(node, Binary):
            yield node.op
        elif isinstance(node, Unary):
            yield "not in" if node.op == "not" and isinstance(node.arg, InSet) else node.op
        elif isinstance(node, Call):
            yield node.fn
        else:
            yield type(node).__name__


def test_strategies_cover_the_vocabulary():
    seen = Counter()

    @settings(max_examples=1000, derandomize=True, database=None)
    @given(policies(deployment=deployments(extended=True)), deployments(extended=True))
    def collect(policy, deployment):
        for expr in stage_exprs(policy):  # evict, rank, keep, when, until
            seen.update(features(expr))
        if policy.rank is not None:
            seen["rank"] += 1
        seen["budget set" if policy.budget is not None else "no budget"] += 1
        seen.update(f"{k}={v}" for k, v in deployment.all_keys().items())
        seen.update(f"{k}={v}" for k, v in policy.deployment.all_keys().items())
        seen[f"effect={policy.effect}"] += 1
        seen[f"summary_at={policy.summary_at}"] += 1

    collect()
    wanted = set(ATTRS) | set(ARITH_OPS) | set(COMPARE_OPS) | set(BOOL_OPS) | set(CALLABLE)
    wanted |= {"not", "-", "not in", "InSet", "Cond", "Num", "BoolLit", "EnumLit", "rank", "budget set", "no budget"}
    wanted |= {f"{k}={v}" for k, values in DEPLOYMENT_CHOICES.items() for v in values}
    wanted |= {f"effect={e}" for e in EFFECTS} | {f"summary_at={at}" for at in SUMMARY_AT}
    assert not wanted - set(seen), f"never generated: {sorted(wanted - set(seen))}"


def test_traces_cover_every_action():
    seen = Counter()

    @settings(max_examples=300, derandomize=True, database=None)
    @given(st.data())
    def collect(data):
        policy = data.draw(policies(2))
        trace = data.draw(traces(policy, max_steps=12, max_spans=8))
        seen.update(a.name for a in trace)
        seen.update(f"repeated {a.name}" for a in trace if getattr(a, "times", 1) > 1)

    collect()
    wanted = set(ACTION_TYPES) | {"repeated read", "repeated audit"}
    assert wanted <= set(seen), f"never generated: {sorted(wanted - set(seen))}"


def test_enum_names_are_valid():
    @settings(max_examples=100, database=None)
    @given(expressions(BOOL, 3))
    def run(expr):
        for node in subexpressions(expr):
            if isinstance(node, EnumLit):
                assert node.value in {"message", "tool_output", "file_body", "stack_trace", "summary", "diff",
                                      "record", "rationale", "window", "undo", "log",
                                      "user", "assistant", "system", "tool_call", "tool_result"} | set(NAME_POOL)
        assert count_nodes(expr) < 200

    run()
