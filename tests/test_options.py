"""One options object, one entry point: every default is CheckOptions', and outcomes are enums, never strings."""

import ast
import inspect
import json
from pathlib import Path

import pytest

import prunecheck
from prunecheck.checker import check as check_module
from prunecheck.checker.check import check
from prunecheck.checker.cli import build_parser, builtin_commands
from prunecheck.checker.commands.batch import options_from_args
from prunecheck.checker.engines.spacer import Found, spacer_invariant
from prunecheck.checker.engines.certificate import Encoding
from prunecheck.checker.language.loader import load_policy
from prunecheck.checker.options import DEFAULTS, DIFF_DEFAULTS, CheckOptions, Engine, options_with
from prunecheck.checker.outputs.render import report_json
from prunecheck.checker.result import Method, Verdict
from prunecheck.spec.policy import Deployment
from prunecheck.symbolic.solver import Status, new_solver, query

from conftest import BOUNDS, EXAMPLES, HOUR, RLIMIT
from support import project_sources

ROOT = Path(prunecheck.__file__).resolve().parent
SEED = EXAMPLES / "seed_flawed.yaml"
SAFE = EXAMPLES / "seed_safe_design.yaml"


def _parsed(*argv):
    return build_parser(builtin_commands()).parse_args(list(argv))


def test_the_command_line_s_defaults_are_check_options_defaults():
    assert options_from_args(_parsed("check", str(SEED))) == CheckOptions()
    repair = _parsed("repair", str(SEED))
    assert (repair.depth, repair.spans, repair.timeout, repair.rlimit) == \
        (DEFAULTS.depth, DEFAULTS.spans, DEFAULTS.timeout, DEFAULTS.rlimit)
    diff = _parsed("diff", str(SEED), str(SAFE))
    assert (diff.depth, diff.spans, diff.timeout, diff.rlimit) == \
        (DIFF_DEFAULTS.depth, DIFF_DEFAULTS.spans, DIFF_DEFAULTS.timeout, DIFF_DEFAULTS.rlimit)


def test_the_api_builds_check_options_and_its_defaults_are_theirs(monkeypatch):
    asked = []
    monkeypatch.setattr(check_module, "check", lambda policy, options: asked.append(options))
    prunecheck.check(SEED)
    prunecheck.check(SEED, depth=3, max_counterexamples=2, tokens=[2, 1], **BOUNDS)
    prunecheck.check_explicit(SEED, time_limit=HOUR)
    assert asked[0] == CheckOptions()
    assert asked[1] == CheckOptions(depth=3, counterexamples=2, tokens=(2, 1), **BOUNDS)
    assert asked[2] == CheckOptions(engine=Engine.EXPLICIT, timeout=HOUR)
    defaults = [p.default for f in (prunecheck.check, prunecheck.check_explicit, prunecheck.repair, prunecheck.diff)
                for p in list(inspect.signature(f).parameters.values())[1:]
                if p.name not in ("new", "deployment", "allow_deployment", "report")]
    assert set(defaults) == {None}  # None: CheckOptions' default, written nowhere else


def test_options_are_normalised_and_refuse_what_is_no_option():
    # Nothing is solved here: the hang guard (an int, HOUR) is only normalised to a float.
    options = CheckOptions(only=["P1", "C1"], timeout=int(HOUR), tokens=[2], engine="explicit", deployment=Deployment())
    assert options.conditions == ["C1", "P1"] and options.timeout == float(HOUR) and options.tokens == (2,)
    assert options.engine is Engine.EXPLICIT and options.deployment.keys() == tuple(Deployment().all_keys())
    assert hash(options) == hash(CheckOptions(**{f: getattr(options, f) for f in options.__dataclass_fields__}))
    assert options_with(DIFF_DEFAULTS, depth=None, rlimit=5) == CheckOptions(depth=8, spans=5, rlimit=5)
    with pytest.raises(ValueError):
        CheckOptions(engine="quantum")


def test_the_engine_is_chosen_by_the_options():
    policy = load_policy(SEED)
    explicit = check(policy, CheckOptions(engine=Engine.EXPLICIT, depth=2, spans=3, only=("C1",), timeout=HOUR))
    symbolic = check(policy, CheckOptions(depth=2, spans=3, only=("C1",), prove=False, **BOUNDS))
    assert explicit.result("C1").engine is Method.EXPLICIT and symbolic.result("C1").engine is Method.BMC
    assert explicit.verdict is symbolic.verdict is Verdict.VIOLATED and explicit.bounds.tokens is not None


def test_result_engines_are_enums_printed_as_before():
    policy = load_policy(SAFE)
    report = check(policy, CheckOptions(depth=2, spans=3, only=("C1", "C3"), **BOUNDS))
    engines = {r.condition: r.engine for r in report.results}
    assert set(engines.values()) <= {Method.INDUCTION_ABSTRACTED, Method.INDUCTION}, engines
    printed = json.loads(json.dumps(report_json(report)))
    assert {c: e["engine"] for c, e in printed["conditions"].items()} == {c: e.value for c, e in engines.items()}
    assert Method.INDUCTION_ABSTRACTED.value == "induction, policy abstracted to a free predicate"
    assert all(json.loads(r.certificate)["engine"] == str(r.engine) for r in report.results)
    assert {run.engine for r in report.results for run in r.stats.runs} <= {Method.BMC, Method.INDUCTION}


def test_solver_and_spacer_answers_are_enums():
    solver = new_solver(HOUR * 1000, RLIMIT)
    assert query(solver).status is Status.SAT
    solver.add(False)
    assert query(solver).status is Status.UNSAT
    found, invariant, _ = spacer_invariant(Encoding(load_policy(SAFE), "C1", True), HOUR, RLIMIT)
    assert found is Found.PROVED and invariant is not None


def _string_compared_statuses(path: Path) -> list:
    """`x.status == "sat"`- or `x.engine == "spacer"`-like comparisons: an outcome or an engine read as text."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    words = {"sat", "unsat", "unknown", "proved", "refuted", "confirmed", "rejected", "unchecked", "bmc", "explicit",
             "induction", "spacer", "symbolic"}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            texts = [s.value for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)]
            statuses = [s for s in sides if isinstance(s, ast.Attribute) and s.attr in ("status", "engine")]
            if statuses and any(t in words for t in texts):
                found.append(node.lineno)
    return found


def test_no_code_compares_an_outcome_with_text():
    sources = project_sources()
    found = {str(p.relative_to(ROOT)): _string_compared_statuses(p) for p in sources}
    assert {path: lines for path, lines in found.items() if lines} == {}


def test_check_takes_only_the_policy_and_its_options():
    assert list(inspect.signature(check).parameters) == ["policy", "options", "proofs"]
    assert not hasattr(check_module, "check_explicit")


TEXT_METHODS = {"count", "startswith", "endswith", "find", "index", "split", "splitlines", "lower", "upper", "strip",
                "replace", "format"}


def _is_text(node) -> bool:
    """A node that builds text: a string, an f-string, `%` or `+` on text, a .format() or a reason_text() call."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        return _is_text(node.left) or _is_text(node.right)
    return isinstance(node, ast.Call) and _called(node) in ("format", "reason_text")


def _called(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _reason_text_handled(tree) -> list:
    """Lines that give a Result (or replace()) its reason as text, or read text out of a reason: a comparison, a
    string method or a subscript on reason_text(...) or on a `.reason`, or `"..." in x.reason`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node) in ("Result", "replace"):
            given = [k.value for k in node.keywords if k.arg == "reason"]
            given += node.args[3:4] if _called(node) == "Result" else []
            found += [node.lineno for g in given if _is_text(g)]
        rendered = [n for n in ast.iter_child_nodes(node) if isinstance(n, ast.Call) and _called(n) == "reason_text"]
        if rendered and isinstance(node, (ast.Compare, ast.Subscript)) or \
                rendered and isinstance(node, ast.Attribute) and node.attr in TEXT_METHODS:
            found.append(node.lineno)
        if isinstance(node, ast.Attribute) and node.attr in TEXT_METHODS and isinstance(node.value, ast.Attribute) \
                and node.value.attr == "reason":
            found.append(node.lineno)
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and \
                any(isinstance(s, ast.Attribute) and s.attr == "reason" for s in node.comparators):
            found.append(node.lineno)
    return found


def test_no_code_outside_the_renderer_formats_or_inspects_reason_text():
    renderer = ROOT / "checker" / "outputs" / "reasons.py"
    sources = [p for p in project_sources() if p != renderer]
    found = {str(p.relative_to(ROOT)): _reason_text_handled(ast.parse(p.read_text(encoding="utf-8")))
             for p in sources}
    assert {path: lines for path, lines in found.items() if lines} == {}
    planted = ast.parse('Result("C1", v, 1, f"violated after {n}")\nreplace(r, reason=reason_text(r.reason) + "!")\n'
                        '"limit" in r.reason\nreason_text(r.reason).startswith("x")\nr.reason.count("x")')
    assert _reason_text_handled(planted) == [1, 2, 3, 4, 5]
