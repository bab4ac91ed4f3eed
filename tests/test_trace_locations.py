"""`explain TRACE` from any directory cites positions in the policy file the user can open, or says why it cannot."""

import io
import json
import re
import shutil
from pathlib import Path

from prunecheck import cli

from conftest import CLI_BOUNDS
from policy_table import EXAMPLES

SMALL = ["--only", "C1", "--depth", "3", "--spans", "3", "--no-prove"]
CITED = re.compile(r"^\s+(\S+?):(\d+):(\d+): `([^`]*)`", re.M)


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main([str(a) for a in argv], out, err)
    return code, out.getvalue(), err.getvalue()


def _trace(tmp_path, monkeypatch, *extra):
    """A C1 trace of the seed's flawed policy, checked from project/ as `policy.yaml`, written to project/out."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(EXAMPLES / "seed_flawed.yaml", project / "policy.yaml")
    monkeypatch.chdir(project)
    code, _, err = run("check", "policy.yaml", "--out", "out", *SMALL, *extra, *CLI_BOUNDS)
    assert code == 1, err
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    (trace,) = (project / "out").glob("policy-*.C1.itf.json")
    return project, trace


def test_explain_from_another_directory_cites_the_policy_file_at_its_positions(tmp_path, monkeypatch):
    project, trace = _trace(tmp_path, monkeypatch)
    code, out, _ = run("explain", trace)
    assert code == 0 and "#policy.json" not in out and "note:" not in out
    cited = CITED.findall(out)
    assert cited and {path for path, *_ in cited} == {str(project / "policy.yaml")}
    for path, line, col, text in cited:  # each position opens on the quoted text (a setting: on its value)
        source_line = Path(path).read_text().splitlines()[int(line) - 1]
        assert source_line[int(col) - 1:].startswith(text.split(": ")[-1]), (source_line, col, text)


def test_the_policy_file_is_found_relative_to_the_trace_when_both_move(tmp_path, monkeypatch):
    project, trace = _trace(tmp_path, monkeypatch)
    moved = tmp_path / "moved"
    shutil.move(project, moved)
    code, out, _ = run("explain", moved / "out" / trace.name)
    assert code == 0 and {p for p, *_ in CITED.findall(out)} == {str(moved / "policy.yaml")}


def test_a_changed_policy_file_is_named_and_no_position_is_given(tmp_path, monkeypatch):
    project, trace = _trace(tmp_path, monkeypatch)
    policy = project / "policy.yaml"
    policy.write_text(policy.read_text().replace("0.25", "0.3"))
    code, out, _ = run("explain", trace)
    assert code == 0 and f"note: {policy} no longer holds the policy this trace was checked against" in out
    assert not CITED.findall(out) and f"{trace}#meta.prunecheck.policy: `recency * frequency < 0.25`" in out
    code, out, _ = run("explain", trace, "--format", "json")
    doc = json.loads(out)
    assert doc["policy_file"] == str(policy) and doc["policy_file_status"] == "changed"
    assert {(p["line"], p["column"]) for p in doc["cause"]["points"]} == {(None, None)}


def test_a_missing_policy_file_is_said_to_be_missing(tmp_path, monkeypatch):
    project, trace = _trace(tmp_path, monkeypatch)
    (project / "policy.yaml").unlink()
    code, out, _ = run("explain", trace, "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["policy_file_status"] == "missing" and doc["policy_file"] == "../policy.yaml"
    code, out, _ = run("explain", trace)
    assert "found neither next to the trace nor from here" in out and not CITED.findall(out)


def test_an_older_trace_without_policy_file_is_resolved_next_to_the_trace(tmp_path, monkeypatch):
    project, trace = _trace(tmp_path, monkeypatch)
    document = json.loads(trace.read_text())
    del document["#meta"]["prunecheck"]["policy_file"]
    old = project / "old.C1.itf.json"  # as recorded then: "policy.yaml", relative to where check ran, here project/
    old.write_text(json.dumps(document))
    code, out, _ = run("explain", old)
    assert code == 0 and {p for p, *_ in CITED.findall(out)} == {str(project / "policy.yaml")}


def test_an_overridden_setting_is_marked_and_the_file_still_located(tmp_path, monkeypatch):
    (tmp_path / "deployment.yaml").write_text("records: window\n")
    project, trace = _trace(tmp_path, monkeypatch, "--deployment", tmp_path / "deployment.yaml")
    code, out, _ = run("explain", trace)
    assert code == 0 and "note:" not in out and CITED.findall(out)
    assert "(the operator's deployment; the policy file's claim agrees)" in out  # located: the file says the same
    assert json.loads(trace.read_text())["#meta"]["prunecheck"]["overridden"] == ["records"]


def test_odd_policy_file_records_in_a_trace_are_harmless(tmp_path, monkeypatch):
    _project, trace = _trace(tmp_path, monkeypatch)
    document = json.loads(trace.read_text())
    for policy_file, overridden in [("a" * 5000, None), ("x\0y", [[1]]), (5, {"a": 1}), ("/dev/null", ["records", 3]),
                                    (str(tmp_path), ["nokey"]), (str(trace), ["records"])]:
        document["#meta"]["prunecheck"].update(policy_file=policy_file, overridden=overridden)
        odd = tmp_path / "odd.itf.json"
        odd.write_text(json.dumps(document))
        code, out, err = run("explain", odd, "--format", "json")
        assert code == 0 and err == "" and json.loads(out)["policy_file_status"] in ("missing", "changed")
