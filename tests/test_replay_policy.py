"""`replay TRACE --policy FILE [--deployment FILE]`: does a written trace still violate its condition now?"""

import io
import json

import pytest

from prunecheck import cli
from prunecheck.checker.language.document import policy_document
from prunecheck.checker.outputs.itf import trace_document
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.engines.replay import replay
from prunecheck.spec.runtime import Append, Compact, Read

from conftest import CLI_BOUNDS
from policy_table import EXAMPLES

SEED = EXAMPLES / "seed_flawed.yaml"
SAFE = EXAMPLES / "seed_safe_design.yaml"


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main([str(a) for a in argv], out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def seed_traces(tmp_path_factory):
    out = tmp_path_factory.mktemp("traces")
    # 4 spans: the compaction of C2's and C4's traces writes a ledger entry (evidence: on, the default) beside the span
    # and its edit's record and rationale, and the safe design they are replayed against writes one too
    code, _, err = run("check", SEED, "--depth", "4", "--spans", "4", "--no-prove", "--out", out, *CLI_BOUNDS)
    assert code == 1, err
    traces = {path.name.split(".")[1]: path for path in out.glob("*.itf.json")}
    # T1: seed_flawed's predicate is role-blind (ADR 0033); M1, J1: its compactions keep no tombstone, nor what their
    # ledger entries cite (ADR 0035)
    assert sorted(traces) == ["C1", "C2", "C4", "J1", "M1", "T1"]
    return traces


@pytest.mark.parametrize("condition", ["C1", "C2", "C4"])
def test_a_trace_replayed_against_its_own_policy_still_violates(seed_traces, condition):
    code, out, err = run("replay", seed_traces[condition], "--policy", SEED)
    assert code == 1 and err == ""
    assert f"replays; still violates {condition}, at step" in out and f"({SEED})" in out


@pytest.mark.parametrize("condition", ["C1", "C2", "C4"])
def test_a_trace_replayed_against_the_fixed_policy_no_longer_violates(seed_traces, condition):
    code, out, _ = run("replay", seed_traces[condition], "--policy", SAFE)
    assert code == 0 and f"no longer violates {condition} along this trace" in out
    assert "deployment records=undo_region" in out


def test_a_deployment_override_applies_to_the_policy_replayed_against(seed_traces, tmp_path):
    fixed = tmp_path / "fixed.yaml"
    fixed.write_text("records: undo_region\npins: host\naudit: independent\n")
    code, out, _ = run("replay", seed_traces["C2"], "--policy", SEED, "--deployment", fixed)
    assert code == 0 and "no longer violates C2" in out and "records=undo_region (operator)" in out
    only_audit = tmp_path / "audit.yaml"
    only_audit.write_text("audit: independent\n")
    code, out, _ = run("replay", seed_traces["C2"], "--policy", SEED, "--deployment", only_audit)
    assert code == 1 and "still violates C2" in out and "audit=independent (operator)" in out


def test_a_trace_whose_steps_are_no_longer_enabled_no_longer_violates(tmp_path):
    keeps = parse_policy_text("name: keeps\nevict: tokens > 100\ndeployment: {records: window}\n", "keeps.yaml")
    actions = (Append("message", 1), Compact(), Read(0))
    document = trace_document(keeps, policy_document(keeps), replay(keeps, actions, 3),
                              {"condition": "C1", "depth": 3, "spans": 3})
    trace = tmp_path / "t.itf.json"
    trace.write_text(json.dumps(document))
    evicts = tmp_path / "evicts.yaml"
    evicts.write_text("name: evicts\nevict: tokens > 0\ndeployment: {records: window}\n")
    code, out, _ = run("replay", trace, "--policy", evicts)
    assert code == 0 and "no longer replays: step 3" in out and "no longer violates C1" in out


def test_bad_uses_are_one_line_errors(seed_traces, tmp_path):
    code, _, err = run("replay", seed_traces["C1"], "--deployment", SEED)
    assert code == 2 and err.strip() == "prunecheck: usage error: --deployment needs --policy"
    code, _, err = run("replay", seed_traces["C1"], "--policy", tmp_path / "absent.yaml")
    assert code == 2 and len(err.splitlines()) == 1 and "absent.yaml" in err
    document = json.loads(seed_traces["C1"].read_text())
    del document["#meta"]["prunecheck"]["condition"]
    nameless = tmp_path / "nameless.itf.json"
    nameless.write_text(json.dumps(document))
    code, _, err = run("replay", nameless, "--policy", SEED)
    assert code == 2 and len(err.splitlines()) == 1 and "names no condition" in err
