"""The deployment is the operator's (ADR 0037): configuration, --deployment, trust opt-in, least-assuming default."""

import io
import json

import jsonschema
import pytest

import prunecheck
from prunecheck.checker import cli
from prunecheck.checker.commands.mcp_tools import Limits, check_tool
from prunecheck.checker.language.operator import find_config, operator_for
from prunecheck.checker.outputs.report_schema import report_schema
from prunecheck.spec.policy import LEAST_ASSUMING, Deployment

from conftest import CLI_BOUNDS

# The first seed's flawed predicate, in a file that claims the undo region for its records.
CLAIMS_UNDO_REGION = """name: claims-undo-region
evict: not pinned and recency * frequency < 0.25
deployment:
  records: undo_region
"""
FAST = ["--only", "C1", "--depth", "4", *CLI_BOUNDS]


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main([str(a) for a in argv], out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A directory with the claiming policy and no configuration at or above it (tmp_path's parents have none)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "policy.yaml").write_text(CLAIMS_UNDO_REGION)
    assert find_config(tmp_path) is None
    return tmp_path


def test_the_operators_deployment_wins_and_the_report_names_the_disagreement(project):
    (project / "operator.yaml").write_text("records: window\npins: self\n")
    code, out, err = run("check", "policy.yaml", "--deployment", "operator.yaml", *FAST)
    assert code == 1 and err == "", err
    assert "C1  violated" in out
    assert "rests on the operator's deployment (--deployment operator.yaml)" in out
    assert "policy.yaml:4:12: claims records: undo_region; not believed, records=window used instead" in out


def test_without_an_operator_deployment_the_least_assuming_default_decides(project):
    code, out, _ = run("check", "policy.yaml", *FAST)
    assert code == 1 and "C1  violated" in out
    assert "rests on the least-assuming default, the first seed's observed scenario" in out
    assert "claims records: undo_region; not believed, records=window used instead" in out


def test_trusting_the_policy_file_judges_it_by_its_own_section(project):
    code, out, _ = run("check", "policy.yaml", "--trust-policy-deployment", *FAST)
    assert code == 0 and "C1  holds" in out and "believed (--trust-policy-deployment)" in out
    assert "not believed" not in out


def test_a_configuration_is_found_above_the_policy_and_can_trust(project):
    sub = project / "policies"
    sub.mkdir()
    (sub / "policy.yaml").write_text(CLAIMS_UNDO_REGION)
    (project / "prunecheck.toml").write_text('[deployment]\nrecords = "undo_region"\n')
    code, out, _ = run("check", sub / "policy.yaml", *FAST)
    assert code == 0 and "rests on the operator's deployment (prunecheck.toml) over" in out
    assert "claims records: undo_region; not believed, and the deployment used agrees" in out
    (project / "prunecheck.toml").write_text("trust-policy-deployment = true\n")
    assert "believed (--trust-policy-deployment)" in run("check", sub / "policy.yaml", *FAST)[1]
    code, out, _ = run("check", sub / "policy.yaml", "--no-config", *FAST)
    assert code == 1 and "least-assuming default" in out


def test_pyproject_counts_only_with_a_tool_table_and_per_file_globs_apply(project):
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert find_config(project) is None
    (project / "pyproject.toml").write_text('[tool.prunecheck.deployment]\nrecords = "undo_region"\n'
                                            '[tool.prunecheck.per-file-deployment]\n"pol*.yaml" = {pins = "host"}\n')
    operator = operator_for(project / "policy.yaml")
    assert dict(operator.settings.settings) == {"records": "undo_region", "pins": "host"}
    assert dict(operator_for(project / "other.yaml").settings.settings) == {"records": "undo_region"}


@pytest.mark.parametrize("text, where, words", [
    ('[deployment]\nrecord = "window"\n', "2:1", 'unknown deployment key `record`; did you mean "records"?'),
    ('trust-policy-deployments = true\n', "1:1", 'did you mean "trust-policy-deployment"?'),
    ('[deployment]\nrecords = "attic"\n', "2:1", "deployment records must be one of undo_region, window"),
    ('[deployment\n', "1:12", "not valid TOML"),
    ('trust-policy-deployment = "yes"\n', "1:1", "must be true or false"),
])
def test_a_bad_configuration_is_one_located_line_and_exit_2(project, text, where, words):
    (project / "prunecheck.toml").write_text(text)
    code, out, err = run("check", "policy.yaml", *FAST)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"prunecheck.toml:{where}: " in err and words in err, err


def test_a_missing_deployment_file_is_named_as_one(project):
    code, _, err = run("check", "policy.yaml", "--deployment", "nope.yaml", *FAST)
    assert code == 2 and "nope.yaml:1:1: cannot read deployment: no such file" in err


def test_the_json_report_records_the_basis_and_validates(project):
    code, out, _ = run("check", "policy.yaml", "--format", "json", *FAST)
    document = json.loads(out)
    jsonschema.validate(document, report_schema())
    basis = document["policies"][0]["deployment_basis"]
    assert basis["basis"] == "default" and basis["claims"] == [
        {"key": "records", "claimed": "undo_region", "used": "window", "where": "policy.yaml:4:12"}]


def test_the_api_judges_as_the_command_line_does(project):
    policy = prunecheck.load_policy("policy.yaml")
    assert policy.deployment == LEAST_ASSUMING and policy.basis.basis == "default"
    trusted = prunecheck.parse_policy(CLAIMS_UNDO_REGION, "p.yaml", trust_policy_deployment=True)
    assert trusted.deployment == Deployment(records="undo_region")
    given = prunecheck.load_policy("policy.yaml", {"records": "undo_region"})
    assert given.deployment.records == "undo_region" and given.basis.basis == "operator"


def test_the_mcp_server_ignores_a_deployment_in_the_call(project):
    limits = Limits(depth=4, spans=3, rlimit=20_000_000)
    summary, document = check_tool(limits, CLAIMS_UNDO_REGION, deployment={"records": "undo_region", "pins": "host"},
                                   only=["C1"], depth=4, spans=3)
    report = document["policies"][0]
    assert report["conditions"]["C1"]["verdict"] == "violated", summary
    assert report["deployment"]["records"] == "window"
    assert {(c["key"], c["where"]) for c in report["deployment_basis"]["claims"]} == {
        ("records", "policy.yaml:4:12"), ("records", "<call>: deployment"), ("pins", "<call>: deployment")}


def test_repair_proposes_no_deployment_change_it_could_not_make(project):
    code, out, err = run("repair", "policy.yaml", "--depth", "3", "--spans", "3", "--rlimit", "50000000")
    assert "no deployment change is proposed: the deployment is the operator's" in err
    assert "deployment" not in "".join(line for line in out.splitlines(True) if line.startswith("+"))
