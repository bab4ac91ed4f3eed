"""`prunecheck schema policy|report`: the published schemas, and that what prunecheck reads and writes obeys them."""

import io
import json

import jsonschema
import pytest
import yaml

from prunecheck.checker.cli import main
from prunecheck.checker.language.policy_schema import policy_schema
from prunecheck.checker.outputs.report_schema import report_schema

from conftest import CLI_BOUNDS, EXAMPLES


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue(), err.getvalue()


@pytest.mark.parametrize("which, build", [("policy", policy_schema), ("report", report_schema)])
def test_the_command_prints_the_schema_the_code_builds(which, build):
    code, out, err = run("schema", which)
    assert (code, err) == (0, "")
    schema = json.loads(out)
    assert schema == build()
    jsonschema.Draft202012Validator.check_schema(schema)


def test_example_policies_and_a_report_obey_the_printed_schemas():
    policy = json.loads(run("schema", "policy")[1])
    report = json.loads(run("schema", "report")[1])
    for path in sorted(EXAMPLES.glob("*.yaml")):
        jsonschema.validate(yaml.safe_load(path.read_text(encoding="utf-8")), policy)
    code, out, _ = run("check", str(EXAMPLES / "seed_flawed.yaml"), "--depth", "3", "--spans", "3", *CLI_BOUNDS,
                       "--format", "json")
    assert code == 1
    jsonschema.validate(json.loads(out), report)


def test_an_unknown_schema_is_a_usage_error():
    code, out, err = run("schema", "trace")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
