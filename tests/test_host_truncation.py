"""A host that truncates is the opt-in `host_truncation: on` (SPEC §2, ADR 0032): off, only the policy removes spans."""

from dataclasses import replace

import pytest

from prunecheck.checker.check import check
from prunecheck.checker.engines.bmc import check_bounded
from prunecheck.checker.engines.replay import confirm
from prunecheck.checker.language.loader import load_policy, parse_policy_text
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.result import Verdict
from prunecheck.spec.policy import DeploymentOverride
from prunecheck.spec.runtime import Append, Compact, Edit, State, host_budgets, step

from conftest import BOUNDS, EXAMPLES
from support import run_cli

HOST = DeploymentOverride((("host_truncation", "on"),))
EXCLUDES = EXAMPLES / "kind_excludes_records.json"
PINS = EXAMPLES / "host_pins_records.yaml"
SCHEMA = (Append("message", 2), Edit(0, "destroy"), Compact(1))


def _after(policy, actions):
    state = State()
    for action in actions:
        state = step(policy, state, action).after
    return state


def test_off_by_default_and_quiet_in_the_repr():
    policy = load_policy(EXCLUDES)
    assert policy.deployment.host_truncation == "off"
    assert "host_truncation" not in repr(policy.deployment) and "host_truncation" not in policy.deployment.as_dict()
    assert "host_truncation='on'" in repr(load_policy(EXCLUDES, HOST).deployment)


def test_a_host_budget_changes_nothing_unless_the_host_truncates():
    off, on = load_policy(EXCLUDES), load_policy(EXCLUDES, HOST)
    assert _after(off, SCHEMA).span(1).alive  # the record: the policy's predicate excludes it, nothing truncates
    assert not _after(on, SCHEMA).span(1).alive  # the host truncates it, the oldest span first
    before = _after(off, SCHEMA[:2])
    assert host_budgets(off, before) == () and host_budgets(on, before) != ()


def test_a_policy_budget_still_truncates_as_its_own_declared_truncation():
    # the first seed's deployment: the destroy's record is as large as its target, so it does not fit in the budget
    policy = parse_policy_text("name: p\nevict: kind not in ['record', 'rationale'] and age > 50\nbudget: 1\n"
                               "deployment: {records: window, evidence: \"off\", destroy_record: verbatim}\n", "p.yaml")
    state = _after(policy, (Append("message", 2), Edit(0, "destroy"), Compact()))
    assert not state.span(1).alive  # the record, truncated to the policy's own budget of 1 token


@pytest.mark.parametrize("path", [EXCLUDES, PINS], ids=lambda p: p.name)
def test_structural_exclusion_holds_c1_and_c2_off_and_a_truncating_host_breaks_c2(path):
    report = check(load_policy(path), CheckOptions(**BOUNDS))
    verdicts = {r.condition: r.verdict for r in report.results}
    assert verdicts["C1"] == verdicts["C2"] == Verdict.HOLDS, verdicts
    on = load_policy(path, HOST)
    (c2,) = check_bounded(on, conditions=["C2"], **BOUNDS)
    assert c2.verdict == Verdict.VIOLATED and len(c2.trace.actions) == 3, c2
    assert any(isinstance(a, Compact) and a.budget is not None for a in c2.trace.actions), c2.trace.actions
    confirm(on, c2.trace.actions, "C2", c2.trace.spans)


def test_the_deployment_flag_switches_the_host_on_from_the_command_line(tmp_path):
    deployment = tmp_path / "host.yaml"
    deployment.write_text("host_truncation: \"on\"\n")
    code, out, err = run_cli("check", str(EXCLUDES), "--only", "C2")
    assert (code, err) == (0, "") and "C2  holds" in out, out
    code, out, err = run_cli("check", str(EXCLUDES), "--only", "C2", "--deployment", str(deployment))
    assert (code, err) == (1, "") and "C2  violated" in out and "compact(budget=" in out, out
