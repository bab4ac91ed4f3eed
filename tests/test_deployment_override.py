"""Deployment overrides (`deployment=` and `--deployment FILE`) set the keys they give and keep the policy's others:
a trusted file's section (`--trust-policy-deployment`, ADR 0037), with no configuration read, as before that ADR."""

import ast
import io
import json
import re
import subprocess
import sys

import pytest

import prunecheck
from prunecheck.checker.commands import batch
from prunecheck.checker import cli
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.outputs.cache import report_from_json
from prunecheck.checker.findings.finding import findings_of
from prunecheck.checker.outputs.html_report import report_html
from prunecheck.checker.language.loader import load_policy
from prunecheck.checker.outputs.render import report_json, report_text
from prunecheck.checker.outputs.sarif import sarif_log
from prunecheck.spec.policy import DEPLOYMENT_CHOICES, DEPLOYMENT_KEYS, NOWHERE, Deployment, DeploymentOverride
from prunecheck.checker.outputs.reason_doc import reasons_json

from conftest import BOUNDS, CLI_BOUNDS, EXAMPLES, HANG_GUARD, ROOT

SEED = EXAMPLES / "seed_flawed.yaml"
VIOLATED = prunecheck.Verdict.VIOLATED


def seed_deployment(**changes) -> dict:
    return {**load_policy(SEED).deployment.as_dict(), **changes}


def readme_check_call() -> dict:
    """The keyword arguments of the README's `prunecheck.check("policy.yaml", ...)` line, read as literals."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (line,) = re.findall(r"^(?:>>> )?report = (prunecheck\.check\(\"policy\.yaml\".*\))$", readme, re.M)
    call = ast.parse(line, mode="eval").body
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords}


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv) + ["--no-config", "--trust-policy-deployment"] + CLI_BOUNDS, out, err)
    return code, out.getvalue(), err.getvalue()


def test_the_readme_snippet_keeps_the_seeds_other_keys_and_stays_violated():
    kwargs = readme_check_call()
    assert kwargs["deployment"] == {"records": "window"}
    report = prunecheck.check(SEED, **kwargs, **BOUNDS)
    assert report.verdict is VIOLATED
    # The example's configuration states the seed's four keys (examples/policies/prunecheck.toml); `deployment=` too.
    operator = ("records", "rationale", "pins", "audit")
    assert dict(report.deployment) == seed_deployment(records="window") and report.overridden == operator
    # The seed already keeps its records in the window: setting that key again changes no verdict.
    plain = prunecheck.check(SEED, depth=kwargs["depth"], spans=kwargs["spans"], **BOUNDS)
    assert [(r.condition, r.verdict) for r in report.results] == [(r.condition, r.verdict) for r in plain.results]
    assert plain.overridden == operator and plain.deployment == report.deployment


def test_an_override_of_a_policy_object_keeps_its_other_keys():
    policy = load_policy(SEED)
    overridden = prunecheck.check(policy, {"pins": "host"}, depth=4, only=["C1"], prove=False, **BOUNDS)
    assert dict(overridden.deployment) == seed_deployment(pins="host") and overridden.overridden == ("pins",)
    whole = prunecheck.check(policy, Deployment(), depth=4, only=["C1"], **BOUNDS)  # a Deployment sets every key
    # every key set, every key named, the defaults included
    assert dict(whole.deployment) == Deployment().all_keys() and whole.overridden == tuple(DEPLOYMENT_KEYS)


def test_a_deployment_file_with_one_key_overrides_only_that_key(tmp_path):
    override = tmp_path / "host-pins.yaml"
    override.write_text("pins: host\n")
    code, out, err = run("check", str(SEED), "--depth", "4", "--only", "C2", "--format", "json",
                         "--deployment", str(override))
    (doc,) = json.loads(out)["policies"]
    assert err == "" and doc["deployment"] == seed_deployment(pins="host") and doc["deployment_overridden"] == ["pins"]
    # Records stay in the window (the seed's own setting, in doc["deployment"] above), where the seed's `not pinned`
    # now spares them and no host truncates (host_truncation: off, SPEC §2): C2 holds.
    # The seed's expect table says C2 violated (under its own deployment): the difference is a finding (exit 1).
    assert code == 1 and doc["conditions"]["C2"]["verdict"] == "holds"
    assert [e["outcome"] for e in doc["expect"] if e["condition"] == "C2"] == ["differs"]
    code, out, _ = run("check", str(SEED), "--depth", "4", "--only", "C2", "--deployment", str(override))
    assert "  deployment records=window, rationale=decision_log, pins=host (operator), audit=policy" in out


def test_an_override_back_to_a_default_is_named_in_the_report(tmp_path):
    # A key left out of reports at its default (tool_calls: on) is still named when an override set it: the report
    # says what it was told to check.
    policy, override = tmp_path / "p.yaml", tmp_path / "on.yaml"
    policy.write_text('name: p\nevict: kind == "message"\ndeployment: {tool_calls: "off"}\n')
    override.write_text('tool_calls: "on"\n')
    code, out, _ = run("check", str(policy), "--depth", "2", "--only", "T1", "--no-prove", "--deployment", str(override))
    assert code in (1, 3) and "tool_calls=on (operator)" in out
    code, out, _ = run("check", str(policy), "--depth", "2", "--only", "C1", "--no-prove", "--format", "json",
                       "--deployment", str(override))
    (doc,) = json.loads(out)["policies"]
    assert doc["deployment"]["tool_calls"] == "on" and doc["deployment_overridden"] == ["tool_calls"]


@pytest.mark.parametrize("text,line,col,message", [
    ("pins: hots\n", 1, 7, 'deployment pins must be one of host, self, got `hots`; did you mean "host"?'),
    ("deployment:\n  recrods: window\n", 2, 3, 'unknown deployment key `recrods`; did you mean "records"?'),
    ("- records\n", 1, 1, "a deployment file must be a mapping"),
])
def test_a_bad_override_file_is_one_located_line_and_exit_2(tmp_path, text, line, col, message):
    override = tmp_path / "bad.yaml"
    override.write_text(text)
    code, out, err = run("check", str(SEED), "--depth", "2", "--deployment", str(override))
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert f"{override}:{line}:{col}: {message}" in err


@pytest.mark.parametrize("mapping", [{"records": "attic"}, {"recrods": "window"}, {"records": 1}])
def test_a_bad_override_dict_is_a_policy_syntax_error(mapping):
    with pytest.raises(prunecheck.PolicySyntaxError, match="bad deployment"):
        prunecheck.check(SEED, mapping)


def test_the_batch_cache_keys_on_the_override_and_reports_survive_it(tmp_path):
    trusted = dict(no_config=True, trust_policy_deployment=True)
    options = CheckOptions(depth=4, only=("C1",), prove=False, **trusted, **BOUNDS)
    with_override = CheckOptions(depth=4, only=("C1",), prove=False,
                                 deployment=DeploymentOverride.of({"records": "window"}), **trusted, **BOUNDS)
    digest = "0" * 64
    assert options.settings(digest) != with_override.settings(digest)
    (first,) = batch.check_many([SEED], options, cache_dir=tmp_path)
    # Same effective deployment (the seed's records are in the window): only the key tells the entries apart.
    (second,) = batch.check_many([SEED], with_override, cache_dir=tmp_path)
    (third,) = batch.check_many([SEED], with_override, cache_dir=tmp_path)
    assert first.cache is second.cache is batch.CacheStatus.MISS and third.cached
    assert second.report.overridden == third.report.overridden == ("records",) and first.report.overridden == ()
    assert report_from_json(json.loads(json.dumps(report_json(third.report))), reasons_json(third.report)) == \
        third.report


def test_every_report_format_names_the_deployment_checked():
    policy = load_policy(SEED, DeploymentOverride.of({"audit": "independent"}))
    report = prunecheck.check(policy, depth=4, only=["C3"], **BOUNDS)
    line = ("deployment records=window, rationale=decision_log, pins=self, audit=independent (operator), "
            "undo=versioned")
    assert line in report_text(report)
    assert line in report_html(findings_of(policy, report))
    properties = sarif_log([findings_of(policy, report)])["runs"][0]["properties"]["policies"][0]
    assert properties["deployment"] == seed_deployment(audit="independent")
    assert properties["deployment_overridden"] == ["audit"]


def test_a_cause_does_not_locate_an_overridden_setting_in_the_policys_file():
    policy = load_policy(SEED, DeploymentOverride.of({"records": "window"}))
    report = prunecheck.check(policy, depth=4, only=["C2"], prove=False, **BOUNDS)
    points = {p.text: p.loc for p in prunecheck.explain(policy, report.result("C2")).cause.points}
    assert points["records: window (the operator's deployment)"] == NOWHERE
    plain = load_policy(SEED)
    points = {p.text: p.loc for p in prunecheck.explain(plain, report.result("C2")).cause.points}
    assert points["records: window"] != NOWHERE


def test_an_emitted_regression_test_keeps_the_override_it_was_checked_under(tmp_path):
    from prunecheck.checker.outputs.emit import write_pytest_files

    policy_file = tmp_path / "p.yaml"
    policy_file.write_text(SEED.read_text().replace("records: window", "records: undo_region"))
    policy = load_policy(policy_file, DeploymentOverride.of({"records": "window"}))
    report = prunecheck.check(policy, depth=4, only=["C2"], prove=False, **BOUNDS)
    (path,) = write_pytest_files(findings_of(policy, report), tmp_path / "regress")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
                          capture_output=True, text=True, timeout=HANG_GUARD, cwd=tmp_path)
    # The file alone keeps its records out of the window; under the override it checked, C2 is still violated.
    assert "1 failed, 1 passed" in done.stdout


def test_a_batch_summary_names_the_override(tmp_path):
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "seed.yaml").write_bytes(SEED.read_bytes())
    override = tmp_path / "d.yaml"
    override.write_text("deployment: {audit: independent}\n")
    code, out, err = run("check", str(policies), "--deployment", str(override), "--no-cache", "--only", "C1",
                         "--no-prove", "--depth", "2")
    assert code == 1 and err.count("error") == 0
    assert out.splitlines()[-1] == ("deployment override on every policy: audit=independent "
                                    "(their other deployment keys are their own)")
