"""Policy readers: YAML, JSON and restricted-Python forms, the printer, the type checker and every refusal."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from prunecheck.checker.language.expr_parser import parse_expr
from prunecheck.checker.language.loader import (
    expected_verdicts,
    load_deployment,
    load_policy,
    parse_deployment_text,
    parse_policy_text,
)
from prunecheck.checker.language.printer import number_text, to_text
from prunecheck.checker.language.pyform import parse_python_policy
from prunecheck.checker.language.typecheck import check_bounds, interval_of, type_of
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import (
    ATTRS,
    BOOL,
    KINDS,
    NAMESPACES,
    NUM,
    TRIGGER_ATTRS,
    WINDOW_ATTRS,
    Attr,
    Binary,
    BoolLit,
    Call,
    Cond,
    Deployment,
    DeploymentOverride,
    EnumLit,
    InSet,
    Interval,
    Num,
    Unary,
)

from conftest import PARSE_CALLS, counted_calls
from support import at

YAML_POLICY = """\
name: keep-recent
description: Evict stale tool output first.
evict: kind == 'tool_output' and idle > 10 and not pinned
rank: reads / (1 + frequency)
budget: 8000
deployment:
  pins: host
  undo: versioned
expect:
  C1: holds
"""

JSON_POLICY = """\
{
\t"name": "keep-recent",
\t"description": "Evict stale tool output first.",
\t"evict": "kind == 'tool_output' and idle > 10 and not pinned",
\t"rank": "reads / (1 + frequency)",
\t"budget": 8000,
\t"deployment": {"pins": "host", "undo": "versioned"},
\t"expect": {"C1": "holds"}
}
"""

PY_POLICY = '''\
"""Evict stale tool output first."""
NAME = "keep-recent"
BUDGET = 8000
DEPLOYMENT = {"pins": "host", "undo": "versioned"}
EXPECT = {"C1": "holds"}


def evict(span, window):
    return span.kind == 'tool_output' and span.idle > 10 and not span.pinned


def rank(span, window):
    return span.reads / (1 + span.frequency)
'''

EXPECTED_EVICT = Binary(
    "and",
    Binary("and", Binary("==", Attr("kind"), EnumLit("tool_output")), Binary(">", Attr("idle"), Num(Fraction(10)))),
    Unary("not", Attr("pinned")),
)
EXPECTED_RANK = Binary("/", Attr("reads"), Binary("+", Num(Fraction(1)), Attr("frequency")))


def refused(text, filename="p.yaml") -> PolicySyntaxError:
    with pytest.raises(PolicySyntaxError) as info:
        parse_policy_text(text, filename)
    return info.value


def py(body: str) -> str:
    return f"def evict(span, window):\n    return {body}\n"


# --------------------------------------------------------------------------- good policies


@pytest.mark.parametrize("filename,text", [("p.yaml", YAML_POLICY), ("p.json", JSON_POLICY), ("keep.py", PY_POLICY)])
def test_good_policy_parses_to_expected_ast(filename, text):
    policy = parse_policy_text(text, filename)
    assert policy.name == "keep-recent"
    assert policy.description == "Evict stale tool output first."
    assert policy.evict == EXPECTED_EVICT
    assert policy.rank == EXPECTED_RANK
    assert policy.budget == 8000
    assert policy.deployment == Deployment(pins="host", undo="versioned")
    assert policy.source == filename


def test_three_forms_are_equal_and_positions_point_into_each_file():
    y = parse_policy_text(YAML_POLICY, "p.yaml")
    j = parse_policy_text(JSON_POLICY.encode(), "p.json")
    p = parse_policy_text(PY_POLICY, "p.py")
    assert y == j == p
    # the second `and`: YAML `evict: ` is 7 columns; JSON adds a tab and a quote; Python adds `    return span.`
    assert (y.evict.loc.line, y.evict.loc.col) == (3, 8 + 36)
    assert (j.evict.loc.line, j.evict.loc.col) == (4, 12 + 36)
    assert (p.evict.loc.line, p.evict.loc.col) == (9, 12 + 46)
    assert (y.evict.right.arg.loc.line, y.evict.right.arg.loc.col) == (3, 52)


def test_python_if_chain_equals_yaml_conditional():
    yaml_text = """\
name: tiered
evict: "false if pinned else (true if kind in ['stack_trace', 'diff'] else idle >= 2.5 and 2 * idle >= 5 * (1 + reads))"
rank: "-(recency) + min(age, 100, step) * recency / max(tokens, 1)"
"""
    py_text = '''\
def evict(span, window):
    """Docstrings inside functions are allowed."""
    if span.pinned:
        return False
    elif span.kind in ("stack_trace", "diff"):
        return True
    return span.idle >= 2.5 and 2 * span.idle >= 5 * (1 + span.reads)


def rank(span, window):
    return -span.recency + min(span.age, 100, window.step) * span.recency / max(span.tokens, 1)
'''
    y = parse_policy_text(yaml_text, "tiered.yaml")
    p = parse_policy_text(py_text, "tiered.py")
    assert y.evict == p.evict and y.rank == p.rank
    assert p.name == "tiered"  # default name: the file stem
    assert isinstance(p.evict, Cond) and isinstance(p.evict.orelse, Cond)
    assert p.evict.orelse.then == BoolLit(True)
    assert Num(Fraction(5, 2)) in list(_nodes(p.evict))


def test_yaml_literals_and_block_scalars():
    policy = parse_policy_text("name: t\nevict: true\nrank: 0.25\n", "t.yml")
    assert policy.evict == BoolLit(True) and policy.rank == Num(Fraction(1, 4))
    err = refused("name: t\nevict: |\n  tokens > 1\n  and agee > 2\n")
    at(err, 4, 7, "agee", 'did you mean `age`')
    err = refused("name: t\nevict: >-\n  tokens > 1\n  and agee > 2\n")
    at(err, 4, 7, "agee")
    err = refused("name: t\nevict: \"tokens > 1 and 'recrd' == kind\"\n")
    at(err, 2, 24, "'recrd'", 'did you mean "record"?')


def test_python_if_without_else_falls_through_like_python():
    source = (
        "def evict(span, window):\n"
        "    if span.pinned:\n"
        "        if span.edited:\n"
        "            return True\n"
        "    return span.tokens > 100\n"
    )
    yaml_text = 'name: f\nevict: "(true if edited else tokens > 100) if pinned else tokens > 100"\n'
    assert parse_policy_text(source, "f.py").evict == parse_policy_text(yaml_text, "f.yaml").evict


def test_chained_comparisons_mean_and_in_both_forms():
    y = parse_policy_text("name: c\nevict: 1 < tokens <= 10\n", "c.yaml")
    p = parse_policy_text(py("1 < span.tokens <= 10"), "c.py")
    expected = Binary(
        "and", Binary("<", Num(Fraction(1)), Attr("tokens")), Binary("<=", Attr("tokens"), Num(Fraction(10)))
    )
    assert y.evict == p.evict == expected
    at(refused("name: c\nevict: 1 < tokens in [1, 2]\n"), 2, 19, "cannot be chained")


def test_not_in_and_enum_sets():
    y = parse_policy_text("name: n\nevict: namespace not in ['undo', 'log']\n", "n.yaml")
    p = parse_policy_text(py("span.namespace not in ['undo', 'log']"), "n.py")
    assert y.evict == p.evict == Unary("not", InSet(Attr("namespace"), (EnumLit("undo"), EnumLit("log"))))


def test_deployment_override_expect_and_deployment_files(tmp_path):
    path = tmp_path / "keep.yaml"
    path.write_text(YAML_POLICY)
    override = Deployment(pins="self", audit="policy")
    assert load_policy(path, override).deployment == override
    assert load_policy(str(path)).deployment == Deployment(pins="host")
    assert expected_verdicts(path) == {"C1": "holds"}
    pyfile = tmp_path / "keep.py"
    pyfile.write_text(PY_POLICY)
    assert expected_verdicts(pyfile) == {"C1": "holds"}
    jsonfile = tmp_path / "keep.json"
    jsonfile.write_text(JSON_POLICY)
    assert expected_verdicts(jsonfile) == {"C1": "holds"}
    bare = tmp_path / "dep.yaml"
    bare.write_text("records: window\nrationale: window\n")
    assert load_deployment(bare) == DeploymentOverride.of({"records": "window", "rationale": "window"})
    wrapped = tmp_path / "dep.json"
    wrapped.write_text('{"deployment": {"undo": "blind"}}')
    assert load_deployment(wrapped) == DeploymentOverride.of({"undo": "blind"})
    assert load_policy(path, load_deployment(wrapped)).deployment == Deployment(pins="host", undo="blind")
    # a policy file works as a deployment file: the keys its section gives
    assert load_deployment(path) == DeploymentOverride.of({"pins": "host", "undo": "versioned"})
    at(_raises(parse_deployment_text, "pins: hots\n", "d.yaml"), 1, 7, 'did you mean "host"?')
    at(_raises(parse_deployment_text, "pin: host\n", "d.yaml"), 1, 1, 'did you mean "pins"?')


def test_intervals_and_divisions():
    assert interval_of(Attr("recency")) == Interval(Fraction(0), Fraction(1), lo_open=True)
    assert interval_of(parse_expr("reads / (1 + age)")) == Interval(Fraction(0), None)
    assert interval_of(parse_expr("1 / recency")) == Interval(Fraction(1), None)
    assert interval_of(parse_expr("-tokens * 2")) == Interval(None, Fraction(-2))
    assert interval_of(parse_expr("abs(age - 3)")) == Interval(Fraction(0), None)
    accepted = ("1 / recency", "reads / (1 + age)", "age / tokens", "1 / max(age, 1)", "1 / (recency * recency)")
    for ok in accepted + ("1 / -tokens",):
        assert type_of(parse_expr(ok)) == NUM
    for bad in ("reads / age", "1 / (recency - 1)", "1 / min(tokens, age)", "1 / (tokens - 1)", "1 / abs(age)"):
        with pytest.raises(PolicySyntaxError, match="which can be zero"):
            type_of(parse_expr(bad))


def test_printer_numbers():
    assert [number_text(Fraction(v)) for v in ("7", "0.25", "2.5", "1/3", "-3/2", "0")] == [
        "7",
        "0.25",
        "2.5",
        "(1 / 3)",
        "(-1.5)",
        "0",
    ]
    assert parse_expr("0.50") == Num(Fraction(1, 2))
    assert to_text(parse_expr("((tokens))")) == "tokens"
    e = parse_expr("not (kind == 'diff' or pinned) and -(-tokens) * (age - (reads - 1)) > 0.125")
    assert to_text(e) == "not (kind == 'diff' or pinned) and -(-tokens) * (age - (reads - 1)) > 0.125"
    e = parse_expr("namespace == 'undo' or not pinned and not kind in ['record'] or not edited == false")
    assert to_text(e) == "namespace == 'undo' or (not pinned and kind not in ['record']) or not (edited == false)"
    assert parse_expr(to_text(e)) == e
    for text in ("-tokens not in [0, -1]", "-(tokens) in [2]", "not not pinned", "1 if pinned else 2"):
        assert to_text(parse_expr(text)) == text.replace("-(tokens)", "-tokens")


# --------------------------------------------------------------------------- round trip (hypothesis)

NUM_ATTRS = sorted(n for n, (t, _) in ATTRS.items() if t == NUM)
BOOL_ATTRS = sorted(n for n, (t, _) in ATTRS.items() if t == BOOL)
decimals = st.one_of(
    st.integers(0, 10**6).map(Fraction),
    st.builds(lambda n, k: Fraction(n, 10**k), st.integers(0, 10**6), st.integers(0, 6)),
)
num_lit = decimals.map(Num)
num_expr = st.deferred(
    lambda: st.one_of(
        num_lit,
        st.sampled_from(NUM_ATTRS).map(Attr),
        st.sampled_from(NUM_ATTRS).map(Attr),
        num_expr.map(lambda a: Unary("-", a)),
        st.builds(Binary, st.sampled_from(["+", "-", "*", "/"]), num_expr, num_expr),
        st.builds(Call, st.sampled_from(["min", "max"]), st.lists(num_expr, min_size=2, max_size=3).map(tuple)),
        num_expr.map(lambda a: Call("abs", (a,))),
        st.builds(Cond, bool_expr, num_expr, num_expr),
    )
)
enum_test = st.one_of(
    st.builds(
        lambda op, v, flip: Binary(op, EnumLit(v), Attr("kind")) if flip else Binary(op, Attr("kind"), EnumLit(v)),
        st.sampled_from(["==", "!="]),
        st.sampled_from(KINDS),
        st.booleans(),
    ),
    st.builds(
        lambda vs: InSet(Attr("namespace"), tuple(EnumLit(v) for v in vs)),
        st.lists(st.sampled_from(NAMESPACES), min_size=1, max_size=3),
    ),
)
bool_expr = st.deferred(
    lambda: st.one_of(
        st.booleans().map(BoolLit),
        st.sampled_from(BOOL_ATTRS).map(Attr),
        enum_test,
        st.builds(Binary, st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), num_expr, num_expr),
        st.builds(Binary, st.sampled_from(["and", "or"]), bool_expr, bool_expr),
        st.builds(Binary, st.sampled_from(["==", "!="]), bool_expr, bool_expr),
        bool_expr.map(lambda a: Unary("not", a)),
        st.builds(Cond, bool_expr, bool_expr, bool_expr),
        st.builds(
            lambda a, vs: InSet(a, tuple(Num(v) if i % 2 == 0 else Unary("-", Num(v)) for i, v in enumerate(vs))),
            num_expr,
            st.lists(decimals, min_size=1, max_size=3),
        ),
    )
)


def _nodes(expr):
    from prunecheck.spec.policy import subexpressions

    return subexpressions(expr)


def _depth(expr) -> int:
    best, stack = 0, [(expr, 1)]
    while stack:
        node, d = stack.pop()
        best = max(best, d)
        if isinstance(node, Unary):
            kids = [node.arg]
        elif isinstance(node, Binary):
            kids = [node.left, node.right]
        elif isinstance(node, InSet):
            kids = [node.arg, *node.values]
        elif isinstance(node, Call):
            kids = list(node.args)
        elif isinstance(node, Cond):
            kids = [node.test, node.then, node.orelse]
        else:
            kids = []
        stack.extend((k, d + 1) for k in kids)
    return best


_ATTR_RE = re.compile(r"(?<!['\"\w])(" + "|".join(sorted(ATTRS, key=len, reverse=True)) + r")\b")


def _as_python(text: str) -> str:
    """Mini-language text -> the equivalent Python-form expression (enum names never collide with attributes)."""

    def attr(m):
        name = m.group(1)
        return ("window." if name in WINDOW_ATTRS or name in TRIGGER_ATTRS else "span.") + name

    text = _ATTR_RE.sub(attr, text)
    return re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", text))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(bool_expr, num_expr))
def test_to_text_round_trips(expr):
    assume(_depth(expr) <= 30)
    text = to_text(expr)
    again = parse_expr(text)
    assert again == expr
    assert to_text(again) == text
    try:  # the checker either accepts or refuses with a PolicySyntaxError, never anything else
        type_of(again)
    except PolicySyntaxError:
        pass


@settings(max_examples=75, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bool_expr)
def test_python_form_agrees_with_yaml_form(expr):
    assume(_depth(expr) <= 30)
    source = f"def evict(span, window):\n    return {_as_python(to_text(expr))}\n"
    assert parse_python_policy(source, "gen.py").evict == _as_doubles(expr)


def _as_doubles(expr):
    """expr with every decimal literal replaced by the double CPython reads it as (0.1 -> 3602879701896397/2**55)."""
    if isinstance(expr, Num):
        return expr if expr.value.denominator == 1 else Num(Fraction(float(expr.value)))
    if isinstance(expr, Unary):
        return Unary(expr.op, _as_doubles(expr.arg))
    if isinstance(expr, Binary):
        return Binary(expr.op, _as_doubles(expr.left), _as_doubles(expr.right))
    if isinstance(expr, InSet):
        return InSet(_as_doubles(expr.arg), tuple(_as_doubles(v) for v in expr.values))
    if isinstance(expr, Call):
        return Call(expr.fn, tuple(_as_doubles(a) for a in expr.args))
    if isinstance(expr, Cond):
        return Cond(_as_doubles(expr.test), _as_doubles(expr.then), _as_doubles(expr.orelse))
    return expr


def _evaluate(e, env):
    if isinstance(e, (Num, BoolLit)):
        return e.value
    if isinstance(e, Attr):
        return env[e.name]
    if isinstance(e, Unary):
        value = _evaluate(e.arg, env)
        return (not value) if e.op == "not" else -value
    if isinstance(e, Binary):
        a, b = _evaluate(e.left, env), _evaluate(e.right, env)
        return {
            "+": lambda: a + b,
            "-": lambda: a - b,
            "*": lambda: a * b,
            "/": lambda: a / b,
            "<": lambda: a < b,
            "<=": lambda: a <= b,
            ">": lambda: a > b,
            ">=": lambda: a >= b,
            "==": lambda: a == b,
            "!=": lambda: a != b,
            "and": lambda: a and b,
            "or": lambda: a or b,
        }[e.op]()
    if isinstance(e, InSet):
        return _evaluate(e.arg, env) in [_evaluate(v, env) for v in e.values]
    if isinstance(e, Call):
        values = [_evaluate(a, env) for a in e.args]
        return abs(values[0]) if e.fn == "abs" else {"min": min, "max": max}[e.fn](values)
    if isinstance(e, Cond):
        return _evaluate(e.then if _evaluate(e.test, env) else e.orelse, env)
    if isinstance(e, EnumLit):
        return e.value
    raise AssertionError(e)


def _inside(value, iv: Interval) -> bool:
    if iv.lo is not None and (value < iv.lo or (iv.lo_open and value == iv.lo)):
        return False
    return iv.hi is None or value < iv.hi or (value == iv.hi and not iv.hi_open)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(num_expr, st.randoms(use_true_random=False))
def test_intervals_are_sound_where_division_is_accepted(expr, rng):
    assume(_depth(expr) <= 12)
    try:
        type_of(expr)
    except PolicySyntaxError:
        return
    iv = interval_of(expr)
    for _ in range(10):
        env = {"pinned": rng.random() < 0.5, "edited": rng.random() < 0.5, "kind": rng.choice(KINDS)}
        env["namespace"] = rng.choice(NAMESPACES)
        for name in NUM_ATTRS:
            lo = ATTRS[name][1].lo  # every numeric attribute is [lo, inf) except recency in (0, 1]
            picks = [lo, lo + Fraction(1, 1000), lo + 1, lo + Fraction(rng.randint(0, 10**6), rng.randint(1, 1000))]
            if name == "recency":
                picks = [Fraction(1, 1000), Fraction(1), Fraction(rng.randint(1, 1000), 1000)]
            env[name] = rng.choice(picks)
        assert _inside(_evaluate(expr, env), iv)  # a ZeroDivisionError here would be an unsound division check


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200), st.sampled_from(["f.yaml", "f.json", "f.py"]))
def test_arbitrary_bytes_only_raise_policy_syntax_error(data, filename):
    try:
        parse_policy_text(data, filename)
    except PolicySyntaxError as err:
        assert err.line >= 1 and err.col >= 1 and "internal error" not in err.message


# --------------------------------------------------------------------------- bad inputs (YAML / JSON)


def test_unknown_name():
    at(refused("name: x\nevict: tokens > 1 and ages > 3\n"), 2, 23, "unknown name `ages`", "did you mean `age`?")


def test_enum_typo_suggests():
    at(refused("name: x\nevict: kind == 'recod'\n"), 2, 16, "'recod'", 'did you mean "record"?')
    at(refused("name: x\nevict: namespace in ['window', 'lg']\n"), 2, 32, 'did you mean "log"?')


def test_type_error():
    at(refused("name: x\nevict: kind + 1 > 2\n"), 2, 13, "cannot apply + to kind")
    at(refused("name: x\nevict: tokens\n"), 2, 8, "evict must be a bool")
    at(refused("name: x\nevict: \"'record' == 'diff'\"\n"), 2, 18, "two enum names")


def test_division_by_possibly_zero():
    at(refused("name: x\nevict: reads / age > 2\n"), 2, 14, "division by `age`, which can be zero")
    assert parse_policy_text("name: x\nevict: 1 / recency > 2\n", "x.yaml").evict.left.op == "/"


def test_empty_file():
    at(refused(""), 1, 1, "empty")
    at(refused("   \n\t\n"), 1, 1, "empty")
    at(refused("# just a comment\n"), 1, 1, "empty")
    at(refused(b"", "p.py"), 1, 1, "empty")


def test_wrong_encoding():
    data = "name: x\ndescription: café\nevict: true\n".encode("latin-1")
    at(refused(data), 2, 17, "not valid UTF-8", "0xe9")


def test_nul_byte():
    at(refused(b"name: x\nevict: tr\x00ue\n"), 2, 10, "NUL")


def test_huge_expression_is_bounded_quickly():
    with counted_calls() as calls:
        err = refused("name: x\nevict: tokens" + " + 1" * 20000 + " > 3\n")
    assert calls.count < PARSE_CALLS
    # the 64th `+` makes the 65th level; it sits at offset 6 + 4 * 63 + 1 after `evict: ` (7 columns)
    at(err, 2, 8 + 6 + 4 * 63 + 1, "nested too deeply")


def test_too_many_nodes_is_refused():
    balanced = "(" * 6 + "tokens" + ")" * 6
    for _ in range(11):  # 2**11 leaves at depth 12: under the depth bound, over the 4000-node bound
        balanced = f"({balanced} + {balanced})"
    with counted_calls() as calls:
        err = refused(f"name: x\nevict: {balanced} > 0\n")
    assert calls.count < PARSE_CALLS
    assert err.line == 2 and "more than 4000 expression nodes" in err.message


def test_deeply_nested_expression_is_bounded_quickly():
    with counted_calls() as calls:
        err = refused("name: x\nevict: " + "(" * 10000 + "pinned" + ")" * 10000 + "\n")
    assert calls.count < PARSE_CALLS
    at(err, 2, 8 + 64, "too many nested brackets")
    at(refused("name: x\nevict: " + "not " * 10000 + "pinned\n"), 2, 8 + 4 * 64, "nested too deeply")
    # the top-level mapping is the first YAML level, so the 64th `[` is one too many
    at(refused("name: x\nevict: " + "[" * 10000 + "]" * 10000 + "\n"), 2, 8 + 63, "too many nested collections")


def test_yaml_alias_and_anchor():
    at(refused("name: &n x\nevict: true\n"), 1, 7, "anchors")
    at(refused("name: x\ndescription: *n\nevict: true\n"), 2, 14, "aliases")


def test_duplicate_key():
    at(refused("name: x\nevict: true\nevict: false\n"), 3, 1, "duplicate key `evict`", "line 2")
    at(refused('{"name": "x", "evict": true, "name": "y"}', "p.json"), 1, 30, "duplicate key `name`")


def test_unknown_top_level_key():
    at(refused("name: x\nevcit: true\n"), 2, 1, "unknown key `evcit`", 'did you mean "evict"?')


def test_missing_evict():
    at(refused("name: x\nrank: tokens\n"), 1, 1, "missing required key `evict`")
    at(refused('{\n  "name": "x"\n}', "p.json"), 1, 1, "missing required key `evict`")


def test_budget_referenced_without_budget():
    at(refused("name: x\nevict: window_tokens > budget\n"), 2, 24, "`budget`", "no budget")
    assert parse_policy_text("name: x\nbudget: 10\nevict: window_tokens > budget\n", "x.yaml").budget == 10


def test_other_structural_errors():
    at(refused("- a\n"), 1, 1, "must be a mapping")
    at(refused("name: x\nevict: yes\n"), 2, 8, "write true or false")
    at(refused("name: x\nevict: [1]\n"), 2, 8, "got a list")
    at(refused("name: x\nevict: true\nbudget: 1.5\n"), 3, 9, "budget")
    at(refused("name: x\nevict: !!python/object:os.system true\n"), 2, 8, "tag")
    at(refused("name: x\nevict: true\n---\nname: y\n"), 3, 1, "single document")
    at(refused("name: x\nevict: 'record' == kind\n"), 2, 17, "quoted as a whole")
    at(refused('{"name": "x", "evict": "tokens > 1",}', "p.json"), 1, 37, "invalid JSON")
    at(refused('{"name": "x", "evict": 1e5}', "p.json"), 1, 24, "malformed number")
    at(refused("name: x\nevict: 1" + "0" * 40 + " > 2\n"), 2, 8, "too long")
    at(refused("name: x\nevict: " + "a" * 100 + " > 2\n"), 2, 8, "too long")
    at(refused("name: x\nevict: tokens = 3\n"), 2, 15, "write == to compare")
    at(refused("x", "p.txt"), 1, 1, "unsupported policy file type")


def test_file_errors(tmp_path):
    for path in (tmp_path / "missing.yaml", tmp_path):
        with pytest.raises(PolicySyntaxError) as info:
            load_policy(path)
        at(info.value, 1, 1, "cannot read policy")
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (300 * 1024))
    with pytest.raises(PolicySyntaxError) as info:
        load_policy(big)
    at(info.value, 1, 1, "too large")


# --------------------------------------------------------------------------- bad inputs (Python form)


@pytest.mark.parametrize(
    "source,line,col,words",
    [
        ("import os\n" + py("True"), 1, 1, ["import is not allowed"]),
        (py("(lambda: True)()"), 2, 13, ["lambda is not allowed"]),
        (py("[x for x in (1, 2)] == 1"), 2, 12, ["list comprehension is not allowed"]),
        (py("f'{span.tokens}' == 'x'"), 2, 12, ["f-string is not allowed"]),
        (py("(x := span.tokens) > 1"), 2, 13, ["walrus"]),
        (py("span.__class__ == 1"), 2, 17, ["dunder attribute `__class__`"]),
        (py("open('x') == 1"), 2, 12, ["call to `open` is not allowed"]),
        (py("__import__('os').system('ls') == 0"), 2, 12, ["call to `__import__` is not allowed"]),
        ("__import__('os')\n" + py("True"), 1, 1, ["call to `__import__` is not allowed"]),
        ("def evict(span, window):\n    for i in (1, 2):\n        return True\n", 2, 5, ["for loop is not allowed"]),
        ("def evict(span, window):\n    while True:\n        return True\n", 2, 5, ["while loop is not allowed"]),
        (py("span.tokenz > 1"), 2, 17, ["unknown span attribute `tokenz`", 'did you mean "tokens"?']),
        (py("span.kind == 'recod'"), 2, 25, ['did you mean "record"?']),
        (py("span.kind + 1 > 2"), 2, 22, ["cannot apply + to kind"]),
        (py("span.reads / span.age > 2"), 2, 23, ["division by `age`, which can be zero"]),
        (py("window.window_tokens > window.budget"), 2, 35, ["no budget"]),
        (py("span.budget > 1"), 2, 17, ["write window.budget"]),
        (py("span[0] > 1"), 2, 12, ["subscript is not allowed"]),
        (py("span.kind is 'x'"), 2, 12, ["`is` is not allowed"]),
        (py("span.tokens ** 2 > 1"), 2, 24, ["operator ** is not allowed"]),
        (py("tokens > 1"), 2, 12, ["write span.tokens"]),
        (py("x > 1"), 2, 12, ["unknown name `x`"]),
        ("def evict(span, window):\n    x = 1\n    return True\n", 2, 5, ["assignment is not allowed"]),
        ("def evict(span, window):\n    pass\n", 2, 5, ["pass is not allowed"]),
        ("def evict(span, window=1):\n    return True\n", 1, 24, ["default argument is not allowed"]),
        ("def evict(span, *args):\n    return True\n", 1, 18, ["*args is not allowed"]),
        ("@dec\ndef evict(span, window):\n    return True\n", 1, 2, ["decorator is not allowed"]),
        ("def helper(span, window):\n    return True\n", 1, 1, ["function `helper` is not allowed"]),
        ("class X:\n    pass\n", 1, 1, ["class definition is not allowed"]),
        ("X = 1\n" + py("True"), 1, 1, ["assignment to `X` is not allowed"]),
        ("def evict(span, window):\n    if span.pinned:\n        return True\n", 2, 5, ["does not return a value"]),
        ("def evict(span, window):\n    return True\n    return False\n", 3, 5, ["unreachable"]),
        (
            "def evict(span, window):\n    if span.pinned:\n        return True\n    else:\n        return False\n"
            "    return True\n",
            6,
            5,
            ["unreachable"],
        ),
        (
            "def evict(span, window):\n    if span.pinned:\n        if span.edited:\n            return True\n"
            "    else:\n        return False\n",
            3,
            9,
            ["when `span.edited` is false"],
        ),
        ("def rank(span, window):\n    return 1\n", 1, 1, ["no `def evict"]),
        (py("1"), 2, 12, ["evict must be a bool"]),
        (py("span.kind.upper() == 'X'"), 2, 12, ["method call"]),
        ("def evict(span, window):\n    return True\n  bad\n", 3, 6, ["invalid Python"]),
        (py("1.5e400 > span.tokens"), 2, 12, ["`1.5e400` is infinite"]),
    ],
)
def test_python_form_refusals(source, line, col, words):
    at(refused(source, "p.py"), line, col, *words)


def test_python_deep_and_huge_inputs_are_bounded_quickly():
    cases = [
        (py("(" * 10000 + "True" + ")" * 10000), 2, 12 + 64, "too many nested brackets"),
        # the 65th `+` of one chain; `span.tokens` starts at column 12
        (py("span.tokens" + " + 1" * 20000 + " > 0"), 2, 12 + 11 + 4 * 64 + 1, "nested too deeply"),
        (py("not " * 10000 + "True"), 2, 12 + 4 * 64, "consecutive unary operators"),
        (py("1 if span.pinned else " * 10000 + "2 > 1"), 2, 12 + 22 * 64 + 2, "conditional expressions"),
        ("".join("    " * i + "if span.pinned:\n" for i in range(100)), 66, 1, "indentation"),
        (py("span" + ".tokens" * 20000), 2, 12 + 4 + 7 * 64, "nested too deeply"),
    ]
    for source, line, col, words in cases:
        with counted_calls() as calls:
            err = refused(source, "p.py")
        assert calls.count < PARSE_CALLS
        at(err, line, col, words)


def test_python_non_utf8_and_nul():
    at(refused(b"def evict(span, window):\n    return 'caf\xe9' == span.kind\n", "p.py"), 2, 16, "not valid UTF-8")
    at(refused(b"def evict(span, window):\n    return\x00 True\n", "p.py"), 2, 11, "NUL")


def test_bounds_on_constructed_asts():
    deep = Attr("pinned")
    for _ in range(100):
        deep = Unary("not", deep)
    with pytest.raises(PolicySyntaxError, match="nested too deeply"):
        check_bounds([deep])
    with pytest.raises(PolicySyntaxError, match="too large"):
        check_bounds([Num(Fraction(10) ** 40)])


def _raises(fn, *args) -> PolicySyntaxError:
    with pytest.raises(PolicySyntaxError) as info:
        fn(*args)
    return info.value
