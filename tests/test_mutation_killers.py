"""Focused fast tests for faults benchmarks/mutation.py plants that the broader tests reach only slowly or not at all."""

from dataclasses import replace
from fractions import Fraction
from types import SimpleNamespace

import pytest
import z3

from prunecheck.checker.engines import invariants
from prunecheck.checker.engines import prove as prove_module
from prunecheck.checker.engines.bmc import check_bounded
from prunecheck.checker.language.document import policy_document, policy_hash
from prunecheck.checker.findings.explain import deciding_atoms
from prunecheck.checker.engines.invariants import houdini
from prunecheck.checker.language.loader import load_policy, parse_policy_text
from prunecheck.checker.commands.policydiff import equivalence
from prunecheck.checker.language.printer import to_text
from prunecheck.checker.outputs.render import state_lines
from prunecheck.checker.commands.repair import available_changes, candidate_sets
from prunecheck.checker.commands.repair_text import Change
from prunecheck.checker.engines.replay import confirm
from prunecheck.checker.result import Verdict
from prunecheck.symbolic.solver import Status, new_solver, query
from prunecheck.checker.engines.certificate import Status as CertificateStatus
from prunecheck.checker.engines.spacer import prove_with_spacer
from prunecheck.checker.language.typecheck import MAX_NODES, check_bounds, check_expr
from prunecheck.spec.errors import PolicySyntaxError, ReplayMismatch
from prunecheck.spec.evaluate import evaluate
from prunecheck.symbolic.conditions import TERMS
from prunecheck.spec.policy import ATTRS, BOOL, KIND, NAMESPACE, Attr, Binary, BoolLit, Deployment, Num, Unary
from prunecheck.spec.runtime import Append, Audit, Compact, Edit, State, Undo, step
from prunecheck.symbolic.terms import ENUM_CODES, ExprEncoder, Frac
from prunecheck.checker.outputs.reasons import reason_text

from conftest import BOUNDS, EXAMPLES, HOUR, RLIMIT
from support import agree, model_policy  # the model-against-runtime check of every state and condition

EXPRESSIONS = [
    "abs(tokens - 5) > 2",
    "abs(2 - tokens) <= 1",
    "min(tokens, reads + 1) == 1",
    "max(tokens, 3) >= 4",
    "min(recency, 1/2) < 1/3",
    "(tokens if pinned else reads) > 2",
    "(1 if kind == 'message' else 5) < tokens",
    "kind != 'diff'",
    "namespace != 'window' or tokens != 3",
    "tokens / -2 < -1",
    "tokens / 2 > 1",
    "reads / 2 + 1/3 >= 1",
    "tokens / 4 == 1",
    "kind in ['message', 'diff']",
    "tokens in [1, 3]",
    "frequency * 2 < recency",
    "not (edited and tokens > 1)",
]
VALUATIONS = [
    {"tokens": 1, "reads": 0, "age": 0, "idle": 0, "pinned": False, "edited": False, "kind": "message"},
    {"tokens": 3, "reads": 2, "age": 4, "idle": 1, "pinned": True, "edited": True, "kind": "diff"},
    {"tokens": 6, "reads": 5, "age": 9, "idle": 3, "pinned": False, "edited": True, "kind": "tool_output"},
    {"tokens": 4, "reads": 1, "age": 2, "idle": 0, "pinned": True, "edited": False, "kind": "message"},
]


def _environments(v: dict):
    """The same span seen by the evaluator (Fractions, strings) and by the encoder (z3 constants)."""
    values = {name: Fraction(v[name]) for name in ("tokens", "reads", "age", "idle")}
    values.update(recency=Fraction(1, 1 + v["idle"]), frequency=Fraction(v["reads"], 1 + v["age"]),
                  window_tokens=Fraction(10), step=Fraction(9), pinned=v["pinned"], edited=v["edited"],
                  kind=v["kind"], namespace="window")
    terms = {}
    for name, value in values.items():
        kind = ATTRS[name][0]
        if kind in (KIND, NAMESPACE):
            terms[name] = ENUM_CODES[kind][value]
        elif kind == BOOL:
            terms[name] = z3.BoolVal(value)
        else:
            terms[name] = Frac(z3.IntVal(value.numerator), z3.IntVal(value.denominator))
    return values, terms


# The parsers write `-2` as a Unary; a policy built through the API may hold the negative literal itself.
CONSTRUCTED = [
    Binary("<", Binary("/", Attr("tokens"), Num(Fraction(-2))), Num(Fraction(-1))),
    Binary(">=", Binary("/", Attr("reads"), Num(Fraction(-3, 2))), Num(Fraction(-1))),
]


@pytest.mark.parametrize("expr", [parse_policy_text(f"name: t\nevict: \"{text}\"\n", "t.yaml").evict
                                  for text in EXPRESSIONS] + CONSTRUCTED, ids=EXPRESSIONS + ["neg-literal-divisor"] * 2)
def test_the_encoder_agrees_with_the_evaluator(expr):
    check_expr(expr, BOOL)
    text = to_text(expr)
    outcomes = set()
    for v in VALUATIONS:
        values, terms = _environments(v)
        expected = evaluate(expr, values)
        encoded = z3.simplify(ExprEncoder(terms).encode(expr))
        assert z3.is_true(encoded) == expected and (z3.is_true(encoded) or z3.is_false(encoded)), (text, v)
        outcomes.add(expected)
    assert outcomes == {True, False}, f"{text} does not separate the valuations"


def _limited(timeout_ms, rlimit=0):
    return new_solver(timeout_ms, rlimit=1)


def test_a_query_that_runs_out_of_resources_is_unknown():
    x, y, z = z3.Ints("x y z")
    solver = _limited(HOUR * 1000)
    solver.add(x > 0, y > 0, z > 0, x * x * x + y * y * y == z * z * z + 1)
    answer = query(solver)
    assert answer.status == Status.UNKNOWN and answer.reason


def test_houdini_that_gives_up_proves_nothing(monkeypatch):
    """`x >= 0` is not inductive under x' = x - 1; a run that cannot decide must not call it proved."""
    x, x1 = z3.Ints("x x1")
    assert houdini(None, None, [x1 == x - 1], {"nonneg": x >= 0}, {"nonneg": x1 >= 0}, HOUR, RLIMIT).names == ()
    monkeypatch.setattr(invariants, "new_solver", _limited)
    given_up = houdini(None, None, [x1 == x - 1], {"nonneg": x >= 0}, {"nonneg": x1 >= 0}, HOUR, RLIMIT)
    assert not given_up.complete and given_up.names == ()


def test_a_certificate_the_recheck_refutes_is_never_holds(monkeypatch):
    policy = load_policy(EXAMPLES / "host_pins_records.yaml")
    doc, digest = policy_document(policy), policy_hash(policy)
    assert prove_module.prove(policy, "C1", doc, digest, **BOUNDS).verdict == Verdict.HOLDS
    for status in (CertificateStatus.REFUTED, CertificateStatus.UNCHECKED, CertificateStatus.REJECTED):
        monkeypatch.setattr(prove_module, "recheck",
                            lambda *args, status=status, **kwargs: SimpleNamespace(status=status, reason="forced"))
        result = prove_module.prove(policy, "C1", doc, digest, **BOUNDS)
        assert result.verdict == Verdict.UNKNOWN and result.certificate is None


@pytest.mark.parametrize("name,condition", [("seed_safe_design.yaml", "C2"), ("host_pins_records.yaml", "C1")])
def test_spacer_proves_with_a_confirmed_certificate(name, condition):
    """C2 by a non-trivial invariant over the abstracted policy; C1 only with the policy's own expressions."""
    policy = load_policy(EXAMPLES / name)
    result = prove_with_spacer(policy, condition, policy_document(policy), policy_hash(policy), **BOUNDS)
    assert result.verdict == Verdict.HOLDS and result.certificate is not None, reason_text(result.reason)


def test_the_policy_hash_covers_every_field_that_changes_a_verdict():
    base = "name: p\nevict: kind == 'message'\n"
    variants = [base, base + "budget: 10\n", base + "budget: 11\n", base + "rank: tokens\nbudget: 10\n",
                base + "deployment:\n  records: window\n", base + "deployment:\n  undo: blind\n",
                "name: p\nevict: kind == 'diff'\n"]
    hashes = {policy_hash(parse_policy_text(text, "p.yaml")) for text in variants}
    assert len(hashes) == len(variants)
    assert policy_hash(parse_policy_text(base, "p.yaml")) == policy_hash(parse_policy_text(base + "\n", "q.yaml"))


def test_the_trace_printout_marks_evicted_spans():
    policy = parse_policy_text("name: p\nevict: kind == 'message'\n", "p.yaml")
    state = State()
    for action in (Append("message", 1), Append("diff", 1), Compact()):
        state = step(policy, state, action).after
    lines = state_lines(policy, state)
    assert "EVICTED" in lines[0] and "EVICTED" not in lines[1]


EXCLUDE_BOTH = Change("exclude", kinds=("record", "rationale"))


@pytest.mark.parametrize("deployment", [Deployment(), Deployment(records="window", undo="blind", pins="self")])
def test_repair_candidates_hold_at_most_one_exclusion(deployment):
    policy = parse_policy_text("name: p\nevict: true\nbudget: 5\n", "p.yaml", deployment)
    sets = list(candidate_sets(available_changes(policy)))
    assert all(sum(c.kind == "exclude" for c in changes) <= 1 for changes in sets)
    exclusions = [changes for changes in sets if any(c.kind == "exclude" for c in changes)]
    assert [len(changes) for changes in exclusions[:2]] == [1, 1]  # the third is `kind in [...]`, or with pairs
    assert next(changes for changes in exclusions if len(changes[0].kinds) == 2) == (EXCLUDE_BOTH,)


def _balanced(leaves: int):
    nodes = [BoolLit(True)] * leaves
    while len(nodes) > 1:
        nodes = [Binary("and", *nodes[i:i + 2]) if i + 1 < len(nodes) else nodes[i] for i in range(0, len(nodes), 2)]
    return nodes[0]


def test_the_node_bound_admits_exactly_max_nodes():
    exactly = Unary("not", _balanced(MAX_NODES // 2))  # 2k - 1 nodes of the tree, one more for `not`
    assert check_bounds([exactly]) == MAX_NODES
    with pytest.raises(PolicySyntaxError, match="too large"):
        check_bounds([Unary("not", exactly)])


WINDOW_RECORDS = Deployment(records="window", pins="self")


@pytest.mark.parametrize("evict,actions", [
    # the record of an undone edit is a candidate, then evicted, then a second compaction finds it gone
    ("kind == 'record'", (Append("message", 1), Edit(0, "destroy"), Undo(1), Compact(), Compact(), Audit())),
    # a record evicted while its edit is live, then compacted again
    ("kind == 'record'", (Append("message", 1), Edit(0, "transform"), Compact(), Append("diff", 1), Compact())),
    # record and rationale both gone: the independent audit still sees the gap
    ("kind in ['record', 'rationale']", (Append("message", 1), Edit(0, "destroy"), Compact(), Audit())),
])
def test_model_and_runtime_agree_after_records_die(evict, actions):
    agree(model_policy(f"evict: {evict}", WINDOW_RECORDS), actions, with_lemmas=False)


def test_a_witness_searched_under_assumptions_is_replayed_too(monkeypatch):
    """As tests/test_examples.py plants a model fault for the plain search, here for a search under `assume`."""
    planted = replace(TERMS["C1"], unrolled=lambda model, t: z3.Or([t.live_edit(i) for i in range(model.n)]))
    monkeypatch.setitem(TERMS, "C1", planted)
    policy = load_policy(EXAMPLES / "seed_safe_design.yaml")
    with pytest.raises(ReplayMismatch):
        check_bounded(policy, depth=3, spans=4, conditions=["C1"], assume=["C3"], **BOUNDS)


def test_a_counterexample_is_confirmed_only_if_it_violates_exactly_at_its_end():
    policy = model_policy("evict: kind == 'record'", WINDOW_RECORDS)
    violating = (Append("message", 1), Edit(0, "destroy"))
    assert len(confirm(policy, violating, "C1", 5)) == 2
    with pytest.raises(ReplayMismatch):
        confirm(policy, violating + (Append("message", 1),), "C1", 5)
    with pytest.raises(ReplayMismatch):
        confirm(policy, violating[:1], "C1", 5)


@pytest.mark.parametrize("text,want,expected", [
    ("kind == 'message' and tokens > 5", False, ["tokens > 5"]),
    ("kind == 'diff' or tokens < 5", True, ["tokens < 5"]),
    ("not (kind == 'message' and tokens > 5)", True, ["tokens > 5"]),
])
def test_the_deciding_atom_is_the_operand_that_decides(text, want, expected):
    expr = parse_policy_text(f"name: t\nevict: \"{text}\"\n", "t.yaml").evict
    env = {"kind": "message", "tokens": Fraction(1)}
    assert evaluate(expr, env) == want
    assert [to_text(atom) for atom in deciding_atoms(expr, env, want)] == expected


def test_ranks_that_differ_only_off_the_candidates_are_equivalent():
    old = parse_policy_text("name: a\nevict: kind == 'tool_output'\nrank: tokens\nbudget: 10\n", "a.yaml")
    new = parse_policy_text("name: b\nevict: kind == 'tool_output'\nrank: tokens if kind == 'tool_output' else 0\n"
                            "budget: 10\n", "b.yaml")
    assert equivalence(old, new, **BOUNDS).proved
    other = parse_policy_text("name: c\nevict: kind == 'tool_output'\nrank: 0 - tokens\nbudget: 10\n", "c.yaml")
    assert not equivalence(old, other, **BOUNDS).proved
