"""--max-counterexamples: fewer found than asked says what the search established (true on the runtime) or why not."""

import io
import json

import jsonschema
import pytest

from prunecheck import cli
from prunecheck.checker.engines import variants as variants_module
from prunecheck.checker.commands.batch import batch_item
from prunecheck.checker.outputs.cache import report_from_json
from prunecheck.checker.check import check
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.engines.explicit import action_choices, domains_for
from prunecheck.checker.language.loader import load_policy
from prunecheck.checker.outputs.render import report_json, report_text
from prunecheck.checker.outputs.report_schema import report_schema
from prunecheck.checker.result import Search
from prunecheck.spec.conditions import violations
from prunecheck.spec.policy import DeploymentOverride
from prunecheck.spec.runtime import State, step
from prunecheck.checker.outputs.reason_doc import reasons_json

from conftest import BOUNDS, CLI_BOUNDS, EXAMPLES

SEED = str(EXAMPLES / "seed_flawed.yaml")
SMALL = ["--max-counterexamples", "3", "--depth", "3", "--spans", "3", "--no-prove"]
# The search is the subject, not the second seed (its defaults are tested elsewhere): without evidence C2's shortest
# violation fits in 3 spans, of which a compaction's ledger entry would take one.
EVIDENCE_OFF = DeploymentOverride.of({"evidence": "off"})


@pytest.fixture(scope="module")
def evidence_off(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("deployment") / "evidence_off.yaml"
    path.write_text('evidence: "off"\n')
    return str(path)


def _run(deployment: str, *argv) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["check", SEED, *SMALL, "--deployment", deployment, *argv, *CLI_BOUNDS], out, err) == 1, \
        err.getvalue()
    return out.getvalue()


def _counterexamples(policy, condition: str, depth: int, spans: int) -> list:
    """The action names of every trace over the explicit engine's domains of at most `depth` actions that violates
    `condition` first at its last action."""
    domains, found = domains_for(policy), []

    def walk(state, names):
        if len(names) == depth:
            return
        for action in action_choices(policy, state, spans, domains):
            transition = step(policy, state, action, spans)
            if condition in violations(policy, transition):
                found.append(names + (action.name,))
            else:
                walk(transition.after, names + (action.name,))

    walk(State(), ())
    return found


def _contains(long: tuple, short: tuple) -> bool:
    rest = iter(long)
    return all(name in rest for name in short)


@pytest.mark.parametrize("condition", ["C1", "C2"])
def test_fewer_than_asked_says_what_the_search_established_and_it_is_true(evidence_off, condition):
    doc = json.loads(_run(evidence_off, "--only", condition, "--format", "json"))
    jsonschema.validate(doc, report_schema())
    entry = doc["policies"][0]["conditions"][condition]
    shown = [tuple(step["action"] for step in trace) for trace in [entry["trace"], *entry.get("other_traces", [])]]
    search = entry["counterexamples"]
    assert search["asked"] == 3 and search["found"] == len(shown) < 3 and search["spans"] == 3
    begins = search["search"] == "exhausted" and search["reducible"] == 0
    assert begins or search["contained"], search  # what this test checks: a claim of "no other" was made
    assert search["summary"].startswith(f"{len(shown)} of 3 counterexamples asked: no other within depth "
                                        f"{search['depth']} and 3 spans")
    everyone = _counterexamples(load_policy(SEED, EVIDENCE_OFF), condition, search["depth"], 3)
    assert everyone
    for names in everyone:
        if begins:
            assert any(names[:len(s)] == s for s in shown), names
        if search["contained"]:
            assert any(_contains(names, s) for s in shown), names
    assert search["summary"] in _run(evidence_off, "--only", condition)


def test_a_search_that_stopped_says_why_and_claims_nothing(monkeypatch):
    monkeypatch.setattr(variants_module, "MAX_QUERIES_PER_TRACE", 0)
    policy = load_policy(SEED, EVIDENCE_OFF)
    report = check(policy, CheckOptions(depth=3, spans=3, only=("C2",), prove=False, counterexamples=3, **BOUNDS))
    variants = report.result("C2").variants
    assert variants.search is Search.QUERIES and not variants.contained
    text = report_text(report)
    assert "1 of 3 counterexamples asked: the search stopped (its fixed budget of 0 solver queries was spent); " \
           "others may exist within depth 3 and 3 spans" in text
    assert "no other" not in text
    assert report_from_json(json.loads(json.dumps(report_json(report))), reasons_json(report)) == report


def test_the_search_outcome_survives_the_cache(tmp_path):
    options = CheckOptions(depth=3, spans=3, only=("C2",), prove=False, counterexamples=3, deployment=EVIDENCE_OFF,
                           **BOUNDS)
    cold = batch_item(SEED, options, str(tmp_path))
    warm = batch_item(SEED, options, str(tmp_path))
    assert cold.report.result("C2").variants.asked == 3
    assert warm.cached and warm.report == cold.report


def test_the_explicit_engine_refuses_more_than_one_counterexample():
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["check", SEED, "--engine", "explicit", "--max-counterexamples", "2", *CLI_BOUNDS], out, err)
    assert (code, out.getvalue()) == (2, "") and err.getvalue().count("\n") == 1
    assert "--max-counterexamples above 1 needs --engine symbolic" in err.getvalue()
