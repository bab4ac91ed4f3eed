"""Python-form arithmetic: what is accepted means in CPython (under the host contract) what prunecheck checks."""

from __future__ import annotations

import io
import json
from fractions import Fraction
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prunecheck.checker import cli
from prunecheck.checker.language.document import policy_document
from prunecheck.checker.language.expr_parser import parse_expr
from prunecheck.checker.language.loader import load_policy, parse_policy_text
from prunecheck.checker.language.printer import policy_python, python_number_text, to_python, to_text
from prunecheck.checker.commands.repair_text import EXCLUSIONS, Change, printed_text, repaired_text
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.evaluate import evaluate
from prunecheck.spec.policy import KINDS, NAMESPACES, Binary, Num

from conftest import EXAMPLES

POINT_ONE = Fraction(3602879701896397, 36028797018963968)  # the double CPython reads `0.1` as
FLOAT_SUM = '''\
"""Evicts recovery records iff 0.1 + 0.2 != 0.3, which CPython says is True."""
NAME = "float-sum"
DEPLOYMENT = {"records": "window"}


def evict(span, window):
    if span.kind == "record":
        return 0.1 + 0.2 != 0.3
    return False
'''


def py(body: str, rank: str = None, budget: int = None) -> str:
    text = f"BUDGET = {budget}\n" if budget else ""
    text += f"def evict(span, window):\n    return {body}\n"
    return text + (f"def rank(span, window):\n    return {rank}\n" if rank else "")


def refused(text: str) -> PolicySyntaxError:
    with pytest.raises(PolicySyntaxError) as info:
        parse_policy_text(text, "p.py")
    return info.value


# --------------------------------------------------------------------------- the host contract, twice


def contract(tokens=1, age=0, idle=0, reads=0, window_tokens=0, budget=1, step=0, **flags):
    """(span, window) as the README's reference adapter builds them: ints, two Fractions, bools, strs."""
    span = SimpleNamespace(
        tokens=tokens, age=age, idle=idle, reads=reads,
        recency=Fraction(1, 1 + idle), frequency=Fraction(reads, 1 + age),
        pinned=flags.get("pinned", False), edited=flags.get("edited", False), masked=flags.get("masked", False),
        kind=flags.get("kind", "message"), namespace=flags.get("namespace", "window"), role=flags.get("role", "user"),
        tool=flags.get("tool", ""), tag=flags.get("tag", ""),
        **{name: flags.get(name, 0) for name in COUNTS},
    )
    return span, SimpleNamespace(window_tokens=window_tokens, budget=budget, step=step,
                                 window_spans=flags.get("window_spans", 1))


COUNTS = ("position", "from_end", "from_end_in_role", "turn", "tokens_after")  # the positional span attributes


def env_of(span, window) -> dict:
    """The same values as prunecheck's evaluator takes them (numbers as Fractions)."""
    env = {name: getattr(span, name) for name in ("pinned", "edited", "masked", "kind", "namespace", "role", "tool",
                                                  "tag")}
    for name in ("tokens", "age", "idle", "reads", "recency", "frequency") + COUNTS:
        env[name] = Fraction(getattr(span, name))
    for name in ("window_tokens", "budget", "step", "window_spans"):
        env[name] = Fraction(getattr(window, name))
    return env


def cpython(text: str, span, window):
    """CPython's value of an expression text that this test generated or wrote (never a policy file's text)."""
    return eval(text, {"__builtins__": {}, "min": min, "max": max, "abs": abs}, {"span": span, "window": window})


def same(checked, deployed) -> bool:
    return checked == deployed and isinstance(checked, bool) == isinstance(deployed, bool)


# --------------------------------------------------------------------------- the case


def test_float_sum_is_refused_at_its_plus_and_the_cli_exits_2(tmp_path):
    assert (0.1 + 0.2 != 0.3) is True  # what the deployed policy computes
    err = refused(FLOAT_SUM)
    assert (err.line, err.col) == (8, 20), str(err)
    assert "`+` with a float operand is a rounded float in Python" in err.message
    path = tmp_path / "float_sum.py"
    path.write_text(FLOAT_SUM)
    out, errs = io.StringIO(), io.StringIO()
    code = cli.main(["check", str(path)], out, errs)
    assert code == 2 and "holds" not in out.getvalue()
    assert errs.getvalue().count("\n") == 1 and f"{path}:8:20:" in errs.getvalue()


def test_the_mini_language_keeps_exact_decimals():
    policy = parse_policy_text('name: d\nevict: "0.1 + 0.2 != 0.3"\n', "d.yaml")
    assert evaluate(policy.evict, {}) is False  # its deployed meaning is prunecheck's own semantics


# --------------------------------------------------------------------------- refusals, located

REFUSED = [
    # (evict body or None, rank body or None, column of the operator or literal, words)
    ("span.tokens * 0.5 < 3", None, 24, "`*` with a float operand"),
    ("span.tokens - 0.5 < 3", None, 24, "`-` with a float operand"),
    ("span.recency * 0.5 < 0.1", None, 25, "(`0.5` is a float)"),
    ("2.0 / span.recency > 1", None, 16, "(`2.0` is a float)"),
    ("span.recency / 2.0 < 1", None, 25, "`/` with a float operand"),
    ("span.tokens / (1 + span.idle) < 1", None, 24, "`/` between two integers"),
    ("1 / 3 < span.recency", None, 14, "(`1` and `3` are ints)"),
    ("span.tokens / min(span.recency, 2) > 1", None, 24, "can both be ints"),
    ("min(span.tokens, 0.5) + 1 > 2", None, 34, "`min(span.tokens, 0.5)` can be a float"),
    ("(0.5 if span.pinned else 1) * span.recency < 1", None, 40, "can be a float"),
    ("abs(-0.5) * span.recency < 1", None, 22, "`abs(-0.5)` is a float"),
    ("-0.5 + span.recency < 1", None, 17, "`-0.5` is a float"),
    ("1e400 > span.tokens", None, 12, "`1e400` is infinite"),
    ("1e-20 < span.recency", None, 12, "needs more than 30 digits"),
    ("1e30 < span.tokens", None, 12, "needs more than 30 digits"),
    ("1" * 400 + ".5 > span.tokens", None, 12, "is infinite"),
    ("True", "span.reads / (1 + span.age)", 23, "`/` between two integers"),
    ("True", "span.recency + 0.25", 25, "`+` with a float operand"),
]


@pytest.mark.parametrize("evict,rank,col,words", REFUSED)
def test_rounded_float_constructs_are_refused_where_they_are(evict, rank, col, words):
    err = refused(py(evict, rank))
    assert (err.line, err.col) == ((4, col) if rank else (2, col)), str(err)
    assert words in err.message, str(err)
    assert "\n" not in str(err)


def test_the_location_is_the_operator_even_across_lines():
    err = refused("def evict(span, window):\n    return (span.recency\n            * 0.5) < 1\n")
    assert (err.line, err.col) == (3, 13) and "`*`" in err.message


def test_type_errors_are_reported_before_float_arithmetic():
    assert "cannot apply + to kind" in refused(py("span.kind + 0.5 > 1")).message


# --------------------------------------------------------------------------- accepted constructs


ACCEPTED = [
    ("span.recency * span.frequency < 0.25", Fraction(1, 4)),  # seed_flawed.py: Fraction * Fraction vs 1/4
    ("span.recency < 0.1", POINT_ONE),
    ("span.recency <= 0.30000000000000004", Fraction(0.30000000000000004)),
    ("2.0 == span.tokens", Fraction(2)),
    ("1e22 < span.tokens", Fraction(10**22)),
    ("1e-400 < span.recency", Fraction(0)),  # underflows to 0.0 in CPython, so it means 0
    ("-0.5 < -span.recency", Fraction(1, 2)),
    ("abs(-0.75) > span.recency", Fraction(3, 4)),
    ("min(span.tokens, 0.5) < max(span.recency, 0.1)", Fraction(1, 2)),
    ("(0.5 if span.pinned else span.tokens) >= 1", Fraction(1, 2)),
    ("span.tokens in [0.5, 2, 0.1]", Fraction(1, 2)),
    ("span.tokens / (1 + span.frequency) < 1.5", Fraction(3, 2)),
    ("span.recency / 2 < 0.1", POINT_ONE),
    ("3 * span.recency - span.tokens / (1 + span.frequency) + span.frequency * span.age > 0.5", Fraction(1, 2)),
    ("span.tokens * 4 < 3 * span.age", Fraction(4)),
]
STATES = [
    contract(),
    contract(tokens=2, age=3, idle=9, reads=1, pinned=True),
    contract(tokens=10**20 + 1, age=7, idle=2, reads=10**17, window_tokens=5),
    contract(tokens=3, age=2, idle=1, reads=2),
]


@pytest.mark.parametrize("body,literal", ACCEPTED)
def test_accepted_constructs_mean_what_cpython_computes(body, literal):
    policy = parse_policy_text(py(body), "p.py")
    assert literal in [n.value for n in _nums(policy.evict)]
    for span, window in STATES:
        assert same(evaluate(policy.evict, env_of(span, window)), cpython(body, span, window)), (body, span)


def test_point_one_is_its_double_where_the_difference_shows():
    span, window = contract(idle=9)  # recency is exactly 1/10, just below the double 0.1
    policy = parse_policy_text(py("span.recency < 0.1"), "p.py")
    assert evaluate(policy.evict, env_of(span, window)) is True is cpython("span.recency < 0.1", span, window)


def test_seed_flawed_py_still_means_a_quarter():
    policy = load_policy(EXAMPLES / "seed_flawed.py")
    assert Fraction(1, 4) in [n.value for n in _nums(policy.evict)]
    span, window = contract(idle=1, reads=1, age=1)  # recency * frequency = 1/2 * 1/2 = 0.25 exactly: kept
    assert evaluate(policy.evict, env_of(span, window)) is False
    assert evaluate(policy.evict, env_of(*contract(idle=1, reads=1, age=2))) is True


def _nums(expr):
    from prunecheck.spec.policy import subexpressions

    return [n for n in subexpressions(expr) if isinstance(n, Num)]


# --------------------------------------------------------------------------- printers round-trip doubles


def test_python_printer_spells_each_number_exactly_or_not_at_all():
    assert [python_number_text(v) for v in (Fraction(7), Fraction(1, 4), POINT_ONE, Fraction(-5, 2))] == [
        "7", "0.25", "0.1", "(-2.5)"
    ]
    for value in (Fraction(1, 10), Fraction(1, 3), Fraction(10**400 + 1, 2)):
        with pytest.raises(ValueError, match="not a double"):
            python_number_text(value)
    assert to_python(Binary("<", parse_expr("recency"), Num(POINT_ONE))) == "span.recency < 0.1"


def test_policy_document_and_printed_forms_of_a_py_policy_with_point_one_round_trip():
    policy = parse_policy_text(py("span.recency < 0.1 and span.kind != 'record'", "min(span.tokens, 1e-3)"), "p.py")
    doc = policy_document(policy)
    assert doc["evict"].startswith("recency < 0.1000000000000000055511151231257827021181583404541015625")
    assert parse_policy_text(json.dumps(doc), "doc.json") == policy
    assert parse_policy_text(f"name: p\nevict: {json.dumps(doc['evict'])}\nrank: {doc['rank']}\n", "d.yaml").evict == (
        policy.evict
    )
    text = policy_python(policy)
    assert "span.recency < 0.1 " in text and "min(span.tokens, 0.001)" in text
    assert parse_policy_text(text, "again.py") == policy
    assert parse_policy_text(printed_text(policy, "p.py"), "p.py") == policy


def test_repairing_a_py_policy_with_point_one_keeps_the_double():
    text = "DEPLOYMENT = {'records': 'window'}\n" + py("span.recency < 0.1")
    policy = parse_policy_text(text, "p.py")
    new, parsed, _ = repaired_text(text, "p.py", policy, (Change("exclude", EXCLUSIONS[0]),))
    assert "span.recency < 0.1\n" in new
    assert POINT_ONE in [n.value for n in _nums(parsed.evict)] and parse_policy_text(new, "p.py") == parsed


def test_the_mini_language_reads_a_double_s_exact_decimal_and_bounds_it():
    assert parse_expr("recency < " + to_text(Num(POINT_ONE))).right == Num(POINT_ONE)
    tiny = Fraction(1, 2**99)  # the smallest power of two whose denominator has at most 30 digits
    assert parse_expr(to_text(Num(tiny))) == Num(tiny)
    for text in ("0." + "1" * 40, "1" + "0" * 40, "0." + "0" * 100 + "1", "0" * 5000 + "1", "1." + "0" * 5000):
        with pytest.raises(PolicySyntaxError, match="too long"):
            parse_expr(text)


# --------------------------------------------------------------------------- generated expressions

ANY, EXACT, FRACTION = "any", "exact", "fraction"
INT_LITERALS = ("0", "1", "2", "7", "12", "0x1F", "1_000", "10000000000000000000001")
FLOAT_LITERALS = ("0.1", "0.2", "0.3", "0.25", "2.0", "1e-3", "2.5e1", ".5", "1_0.5", "0.30000000000000004", "1e22")
INT_ATTRS = ("span.tokens", "span.age", "span.idle", "span.reads", "window.window_tokens", "window.budget",
             "window.step")
FRACTION_ATTRS = ("span.recency", "span.frequency")
INT_DIVISORS = ("span.tokens", "window.budget", "(1 + span.idle)", "(span.age + 3)", "7")
FRACTION_DIVISORS = ("span.recency", "(1 + span.frequency)", "(span.frequency + 2)")


@st.composite
def numeric(draw, depth: int, want: str, free: bool):
    """Python-form numeric text.  Unless free, CPython computes it exactly: a float only where want is ANY
    (never in arithmetic), `/` only with a Fraction operand.  When free, anything goes (the parser decides)."""
    shapes = ("leaf", "arith", "div", "neg", "abs", "minmax", "cond") + (("arith", "div") if free else ())
    shape = "leaf" if depth <= 1 else draw(st.sampled_from(shapes))
    sub = want if not free else ANY
    if shape == "leaf":
        if want == FRACTION and not free:
            return draw(st.sampled_from(FRACTION_ATTRS))
        literals = INT_LITERALS + (FLOAT_LITERALS if want == ANY else ())
        return draw(st.sampled_from(literals + INT_ATTRS + FRACTION_ATTRS))
    if shape == "arith":
        wants = (ANY, ANY) if free else draw(st.permutations((FRACTION, EXACT))) if want == FRACTION else (EXACT, EXACT)
        op = draw(st.sampled_from(("+", "-", "*")))
        return f"({draw(numeric(depth - 1, wants[0], free))} {op} {draw(numeric(depth - 1, wants[1], free))})"
    if shape == "div":
        if free:
            divisor = draw(st.sampled_from(INT_DIVISORS + FRACTION_DIVISORS + ("2.0", "0.5", "span.age")))
            return f"({draw(numeric(depth - 1, ANY, True))} / {divisor})"
        by_fraction = draw(st.booleans())
        left = draw(numeric(depth - 1, EXACT if by_fraction else FRACTION, False))
        return f"({left} / {draw(st.sampled_from(FRACTION_DIVISORS if by_fraction else INT_DIVISORS))})"
    if shape == "neg":
        return f"(-{draw(numeric(depth - 1, sub, free))})"
    if shape == "abs":
        return f"abs({draw(numeric(depth - 1, sub, free))})"
    if shape == "minmax":
        args = [draw(numeric(depth - 1, sub, free)) for _ in range(draw(st.integers(2, 3)))]
        return f"{draw(st.sampled_from(('min', 'max')))}({', '.join(args)})"
    then, orelse = draw(numeric(depth - 1, sub, free)), draw(numeric(depth - 1, sub, free))
    return f"({then} if {draw(boolean(depth - 1, free))} else {orelse})"


@st.composite
def boolean(draw, depth: int, free: bool):
    shape = "leaf" if depth <= 1 else draw(st.sampled_from(("leaf", "cmp", "chain", "in", "not", "andor", "kind")))
    if shape == "leaf":
        return draw(st.sampled_from(("True", "False", "span.pinned", "span.edited")))
    if shape in ("cmp", "chain"):
        ops = ("<", "<=", ">", ">=", "==", "!=")
        parts = [draw(numeric(depth - 1, ANY, free)) for _ in range(2 if shape == "cmp" else 3)]
        text = parts[0]
        for part in parts[1:]:
            text += f" {draw(st.sampled_from(ops))} {part}"
        return f"({text})"
    if shape == "in":
        values = draw(st.lists(st.sampled_from(INT_LITERALS[:5] + FLOAT_LITERALS[:5] + ("-0.5", "-2")), min_size=1,
                               max_size=3))
        keyword = draw(st.sampled_from(("in", "not in")))
        return f"({draw(numeric(depth - 1, ANY, free))} {keyword} [{', '.join(values)}])"
    if shape == "not":
        return f"(not {draw(boolean(depth - 1, free))})"
    if shape == "andor":
        op = draw(st.sampled_from(("and", "or")))
        return f"({draw(boolean(depth - 1, free))} {op} {draw(boolean(depth - 1, free))})"
    return f"(span.kind == {draw(st.sampled_from(KINDS))!r} or span.namespace != {draw(st.sampled_from(NAMESPACES))!r})"


@st.composite
def states(draw):
    ints = st.one_of(st.integers(0, 12), st.integers(0, 10**20))
    return contract(
        tokens=draw(ints) + 1, age=draw(ints), idle=draw(ints), reads=draw(ints), window_tokens=draw(ints),
        budget=draw(ints) + 1, step=draw(ints), pinned=draw(st.booleans()), edited=draw(st.booleans()),
        kind=draw(st.sampled_from(KINDS)), namespace=draw(st.sampled_from(NAMESPACES)),
    )


def _agree(evict: str, rank: str, samples) -> None:
    policy = parse_policy_text(py(evict, rank, budget=5), "gen.py")
    for span, window in samples:
        window.budget = 5
        env = env_of(span, window)
        assert same(evaluate(policy.evict, env), cpython(evict, span, window)), (evict, span, window)
        assert same(evaluate(policy.rank, env), cpython(rank, span, window)), (rank, span, window)
    assert parse_policy_text(policy_python(policy), "again.py") == policy
    assert parse_policy_text(json.dumps(policy_document(policy)), "doc.json") == policy


@settings(max_examples=150, deadline=None)
@given(boolean(4, False), numeric(4, ANY, False), st.lists(states(), min_size=1, max_size=4))
def test_accepted_generated_expressions_evaluate_as_cpython_does(evict, rank, samples):
    _agree(evict, rank, samples)


@settings(max_examples=300, deadline=None)
@given(boolean(3, True), numeric(3, ANY, True), st.lists(states(), min_size=1, max_size=4))
def test_any_generated_expression_is_refused_or_evaluates_as_cpython_does(evict, rank, samples):
    try:
        parse_policy_text(py(evict, rank, budget=5), "gen.py")
    except PolicySyntaxError as err:
        assert "\n" not in str(err) and err.line >= 1 and err.col >= 1
        return
    _agree(evict, rank, samples)


def test_the_readme_adapter_builds_the_contract_views():
    readme = (EXAMPLES.parent.parent / "README.md").read_text()
    start = readme.index("from fractions import Fraction\nfrom types import SimpleNamespace as View")
    adapter = readme[start: readme.index("```", start)]
    scope = {}
    exec(adapter, scope)  # the README's own reference code, not a policy
    counts = {"position": 1, "from_end": 2, "from_end_in_role": 0, "turn": 1, "tokens_after": 5}
    host_span = SimpleNamespace(tokens=3, age=4, idle=1, reads=2, pinned=False, edited=True, masked=True, kind="diff",
                                namespace="window", role="tool_call", tool="browse", tag="", **counts)
    span, window = scope["policy_views"](host_span, SimpleNamespace(window_tokens=9, budget=8, step=4, window_spans=4,
                                                                    event="overflow", reported_tokens=7))
    expected, _ = contract(tokens=3, age=4, idle=1, reads=2, edited=True, masked=True, kind="diff", role="tool_call",
                           tool="browse", window_tokens=9, budget=8, step=4, **counts)
    assert vars(span) == vars(expected)
    assert {k: type(v) for k, v in vars(span).items()} == {k: type(v) for k, v in vars(expected).items()}
    assert (window.window_tokens, window.budget, window.step, window.window_spans) == (9, 8, 4, 4)
    assert (window.event, window.reported_tokens) == ("overflow", 7)  # the compaction's trigger (SPEC §4g)
