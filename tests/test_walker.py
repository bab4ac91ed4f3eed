"""The expression walker: every walker handles every node type, dispatch follows the node's type, memo shares terms."""

import typing
from dataclasses import dataclass, fields
from fractions import Fraction

import pytest

import prunecheck.checker.language.intervals  # noqa: F401  (imported for its walker)
import prunecheck.checker.language.pyarith  # noqa: F401
import prunecheck.checker.language.typecheck  # noqa: F401
from prunecheck.checker.language.printer import to_python, to_text
from prunecheck.checker.language.typecheck import interval_of, type_of
from prunecheck.spec.errors import EncodingError, PolicySyntaxError
from prunecheck.spec.evaluate import evaluate
from prunecheck.spec.policy import NODE_TYPES, Attr, Binary, Expr, Num, children
from prunecheck.spec.walker import MemoWalker, Walker, handler_name
from prunecheck.symbolic.terms import ExprEncoder, Frac


def _walkers(cls=Walker):
    for sub in cls.__subclasses__():
        yield sub
        yield from _walkers(sub)


def test_node_types_are_the_expression_union():
    assert NODE_TYPES == typing.get_args(Expr)


def test_children_are_every_subexpression_field_of_every_node_type():
    for node_type in NODE_TYPES:
        values = {}
        for f in fields(node_type):
            if f.name == "loc":
                continue
            annotation = str(f.type).strip("'\"")
            if annotation == "Expr":
                values[f.name] = Num(Fraction(len(values)))
            elif annotation == "tuple":
                values[f.name] = (Num(Fraction(10)), Num(Fraction(11)))
            else:
                values[f.name] = "x"
        node = node_type(**values)
        expected = [v for value in values.values() for v in (value if isinstance(value, tuple) else (value,))
                    if isinstance(v, Num)]
        assert [id(c) for c in children(node)] == [id(v) for v in expected], node_type.__name__


def test_handler_names_follow_the_class_names():
    assert [handler_name(t) for t in NODE_TYPES] == [
        "num", "bool_lit", "enum_lit", "attr", "unary", "binary", "in_set", "call", "cond",
    ]


def test_every_walker_of_the_code_base_handles_every_node_type():
    walkers = [w for w in _walkers() if w is not MemoWalker and not w.__module__.startswith("test_")]
    modules = {w.__module__.rsplit(".", 1)[-1] for w in walkers}
    assert {"evaluate", "terms", "printer", "typecheck", "intervals", "pyarith"} <= modules
    for walker in walkers:
        assert set(walker.handlers) == set(NODE_TYPES), walker.__name__


def test_a_walker_without_a_handler_is_refused_when_defined():
    with pytest.raises(TypeError, match="has no handler .*cond"):
        type("Incomplete", (Walker,), {handler_name(t): lambda self, node: None for t in NODE_TYPES[:-1]})


def test_a_partial_base_may_leave_handlers_to_its_subclasses():
    base = type("Base", (Walker,), {"num": lambda self, node: node.value}, partial=True)
    assert list(base.handlers) == [Num]
    with pytest.raises(TypeError, match="has no handler bool_lit"):
        type("Still", (base,), {})


def test_a_subclass_of_a_node_type_is_handled_as_that_type():
    @dataclass(frozen=True)
    class Tokens(Attr):
        pass

    env = {"tokens": Fraction(3)}
    assert evaluate(Binary("+", Tokens("tokens"), Num(Fraction(1))), env) == 4
    assert to_text(Tokens("tokens")) == "tokens"


def test_each_walker_refuses_what_is_not_a_node_with_its_own_error():
    stray = Binary("+", Num(Fraction(1)), "tokens")
    with pytest.raises(ValueError, match="not an expression"):
        evaluate(stray, {})
    with pytest.raises(ValueError, match="not a policy expression: str"):
        to_text(stray)
    with pytest.raises(ValueError, match="not a policy expression: str"):
        to_python(stray)
    with pytest.raises(EncodingError, match="not an expression: str"):
        ExprEncoder({}).encode(stray)
    with pytest.raises(PolicySyntaxError, match="not a policy expression: str"):
        type_of(stray)
    with pytest.raises(PolicySyntaxError, match="not a policy expression: str"):
        interval_of(stray)


def test_the_encoder_gives_equal_subexpressions_one_term():
    import z3

    product = Binary("*", Attr("tokens"), Attr("age"))
    encoder = ExprEncoder({"tokens": Frac(z3.Int("t")), "age": Frac(z3.Int("a"))})
    total = encoder.encode(Binary("+", product, Binary("*", Attr("tokens"), Attr("age"))))
    assert encoder.encode(product) is encoder.memo[(product, None)]
    assert z3.eq(total.num, encoder.encode(product).num + encoder.encode(product).num)
    assert len({key for key in encoder.memo if key[0] == product}) == 1
