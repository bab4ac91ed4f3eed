"""The stable Python API: `prunecheck.check` and friends return the same typed results the command line prints."""

import ast
import re
import subprocess
import sys

import pytest

import prunecheck
from prunecheck.checker.findings.finding import findings_of
from prunecheck.checker.outputs.render import report_json

from conftest import BOUNDS, CLI_BOUNDS, EXAMPLES, HANG_GUARD, ROOT

SEED = EXAMPLES / "seed_flawed.yaml"


def test_check_a_path_returns_a_typed_report():
    report = prunecheck.check(SEED, depth=4, only=["C1"], prove=False, **BOUNDS)
    assert isinstance(report, prunecheck.Report)
    assert report.verdict is prunecheck.Verdict.VIOLATED
    (result,) = report.results
    assert isinstance(result, prunecheck.Result) and isinstance(result.trace, prunecheck.Trace)


def test_a_deployment_dict_sets_its_keys_in_the_policys_own():
    safe = prunecheck.check(SEED, {"records": "undo_region"}, depth=4, only=["C1"], **BOUNDS)
    assert dict(safe.deployment)["pins"] == "self" and "records" in safe.overridden  # the configuration's too
    assert safe.verdict is prunecheck.Verdict.HOLDS and safe.results[0].certificate
    with pytest.raises(prunecheck.PolicySyntaxError):
        prunecheck.check(SEED, {"records": "attic"})


def test_parse_policy_and_explain():
    policy = prunecheck.parse_policy("name: p\nevict: idle > 2\ndeployment: {records: window}\n", "p.yaml")
    report = prunecheck.check(policy, depth=6, only=["C1"], prove=False, **BOUNDS)
    explanation = prunecheck.explain(policy, report.result("C1"))
    assert explanation.cause.points[0].text == "idle > 2"
    assert len(explanation.steps) == len(report.result("C1").trace.actions)


def test_the_command_line_prints_what_the_api_returns(tmp_path):
    import io
    import json

    from prunecheck.checker.cli import main
    out = io.StringIO()
    main(["check", str(SEED), "--depth", "4", "--only", "C1,C3", "--format", "json", *CLI_BOUNDS], out, io.StringIO())
    (printed,) = json.loads(out.getvalue())["policies"]
    report = prunecheck.check(SEED, depth=4, only=["C1", "C3"], **BOUNDS)
    policy = prunecheck.load_policy(SEED)
    expected = report_json(report, findings_of(policy, report))
    for doc in (printed, expected):
        doc.pop("stats")  # like seconds, what this run did: the second one reuses the first one's proofs
        for entry in doc["conditions"].values():
            entry.pop("seconds")
            entry.pop("certificate", None)
    assert printed == expected


def test_importing_the_spec_does_not_load_the_checker_or_z3():
    code = "import sys, prunecheck.spec.runtime; print('z3' in sys.modules, 'prunecheck.checker' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_GUARD)
    assert done.stdout.split() == ["False", "False"]


def test_unknown_names_are_attribute_errors():
    with pytest.raises(AttributeError):
        prunecheck.no_such_thing  # noqa: B018
    assert set(prunecheck.__all__) >= {"check", "Verdict", "Report", "explain", "repair", "diff", "check_many"}


STABLE_API = [
    "ActionRefused", "Append", "Audit", "CONDITIONS", "CheckOptions", "Compact", "Deployment", "DeploymentOverride",
    "Edit", "Engine", "Pin", "Policy", "PolicySyntaxError", "PrunecheckError", "Read", "Reason", "Report", "Result",
    "Trace", "Undo", "Unpin", "Verdict", "__version__", "check", "check_explicit", "check_many", "diff", "explain",
    "load_policy", "parse_policy", "reason_text", "repair", "replay",
]


def _readme_api_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("The Python API is stable and typed")
    return text[start:text.index("\n### ", start)]


def test_the_root_package_exports_exactly_the_stable_api_each_documented_in_the_readme():
    assert prunecheck.__all__ == STABLE_API
    section = _readme_api_section()
    for name in STABLE_API:
        assert getattr(prunecheck, name) is not None  # what `from prunecheck import NAME` resolves
        assert re.search(rf"`(prunecheck\.)?{re.escape(name)}[`(]", section), f"README API section lacks {name}"


def _prunecheck_imports(text: str) -> set:
    found = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_generated_pytest_modules_and_scripts_import_only_the_public_api(tmp_path):
    from prunecheck.checker.outputs.emit import write_pytest_files
    from prunecheck.checker.outputs.scripts import write_scripts

    # without evidence (the first seed's deployment): at 3 spans a compaction's ledger entry would leave no slot for
    # C2's violation; the generated files, not the second seed's defaults, are the subject
    policy = prunecheck.load_policy(SEED, prunecheck.DeploymentOverride.of({"evidence": "off"}))
    report = prunecheck.check(policy, depth=4, spans=3, only=["C2"], prove=False, **BOUNDS)
    findings = findings_of(policy, report)
    written = write_pytest_files(findings, tmp_path / "emitted") + write_scripts(findings, tmp_path / "py")
    assert len(written) == 2
    public = {"prunecheck", *(f"prunecheck.{name}" for name in STABLE_API)}
    for path in written:
        imports = _prunecheck_imports(path.read_text(encoding="utf-8"))
        assert {name for name in imports if name.split(".")[0] == "prunecheck"} <= public, path.name
        assert {name.split(".")[0] for name in imports} <= {"pathlib", "pytest", "sys", "prunecheck"}, path.name
