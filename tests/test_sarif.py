"""SARIF 2.1.0 output: valid against the published schema, each finding at the policy text it rests on."""

import io
import json
from pathlib import Path

import jsonschema
import pytest

from prunecheck.checker.cli import main

from conftest import CLI_BOUNDS, EXAMPLES, ROOT

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0-rtm.5.json").read_text(encoding="utf-8"))


def _sarif(args, monkeypatch, cwd=ROOT):
    monkeypatch.chdir(cwd)
    out = io.StringIO()
    code = main(["check", *args, "--format", "sarif", *CLI_BOUNDS], out, io.StringIO())
    return code, json.loads(out.getvalue())


def test_a_violated_policy_gives_a_valid_log_with_located_errors(monkeypatch):
    code, log = _sarif(["examples/policies/seed_flawed.yaml", "--depth", "5"], monkeypatch)
    assert code == 1
    jsonschema.validate(log, SCHEMA)
    results = log["runs"][0]["results"]
    # T1: the role-blind policy splits a tool-call pair (every policy is asked T1 under tool_calls: on, ADR 0033); M1
    # and J1 (evidence: on, the default, ADR 0035): its compactions keep no tombstone, nor the spans their ledger cites
    assert sorted(r["ruleId"] for r in results) == ["C1", "C2", "C4", "J1", "M1", "T1"]
    lines = (EXAMPLES / "seed_flawed.yaml").read_text().splitlines()
    for r in results:
        assert r["level"] == "error"
        location = r["locations"][0]["physicalLocation"]
        assert location["artifactLocation"] == {"uri": "examples/policies/seed_flawed.yaml", "uriBaseId": "%SRCROOT%"}
        region = location["region"]
        assert lines[region["startLine"] - 1][region["startColumn"] - 1:].startswith(("not pinned", "window", "policy"))
        assert r["codeFlows"][0]["threadFlows"][0]["locations"]
    c1 = next(r for r in results if r["ruleId"] == "C1")
    assert "`recency * frequency < 0.25` is true" in c1["message"]["text"]
    assert {"startLine": 6, "startColumn": 23} in [x["physicalLocation"]["region"] for x in c1["relatedLocations"]]


def test_several_policies_and_formats_in_one_valid_log(monkeypatch):
    code, log = _sarif(["examples/policies/seed_flawed.py", "examples/policies/blind_undo.yaml",
                        "examples/policies/budget_truncates_records.yaml", "--depth", "5"], monkeypatch)
    assert code == 1
    jsonschema.validate(log, SCHEMA)
    by_file = {}
    for r in log["runs"][0]["results"]:
        by_file.setdefault(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], []).append(r)
    # T1: ADR 0033; M1, J1: evidence on by default, the evicted spans destroyed and their citations unchecked (ADR 0035)
    assert {r["ruleId"] for r in by_file["examples/policies/blind_undo.yaml"]} == {"C3", "T1", "M1", "J1"}
    (c3,) = [r for r in by_file["examples/policies/blind_undo.yaml"] if r["ruleId"] == "C3"]
    undo = c3["locations"][0]["physicalLocation"]["region"]
    assert undo == {"startLine": 6, "startColumn": 9}  # `undo: blind`, at its value
    budget = next(r for r in by_file["examples/policies/budget_truncates_records.yaml"] if r["ruleId"] != "T1")
    assert "budget" in budget["message"]["text"]


def test_a_safe_policy_gives_a_valid_log_without_findings(monkeypatch):
    code, log = _sarif(["examples/policies/seed_safe_design.yaml"], monkeypatch)
    assert code == 0
    jsonschema.validate(log, SCHEMA)
    assert log["runs"][0]["results"] == []
    assert log["runs"][0]["properties"]["policies"][0]["holds"] == ["C1", "C2", "C3", "C4", "P1", "T1", "R1",
                                                                     "M1", "A1", "J1"]  # T1: ADR 0033


def test_unknown_is_a_warning_not_an_error(monkeypatch, tmp_path):
    code, log = _sarif([str(EXAMPLES / "seed_safe_design.yaml"), "--no-prove", "--depth", "2", "--only", "C1"],
                       monkeypatch, tmp_path)
    assert code == 3
    jsonschema.validate(log, SCHEMA)
    results = {r["ruleId"]: r for r in log["runs"][0]["results"]}
    # The policy's expect table says C1 holds: an unknown differs from it, a warning as well (as --fail-on ranks it).
    assert set(results) == {"C1", "expect"} and results["expect"]["level"] == "warning"
    r = results["C1"]
    assert r["level"] == "warning" and r["kind"] == "open"
    assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].startswith("file://")


def test_the_schema_rejects_what_it_should(monkeypatch):
    _, log = _sarif(["examples/policies/seed_flawed.yaml", "--depth", "3", "--only", "C1"], monkeypatch)
    log["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(log, SCHEMA)
