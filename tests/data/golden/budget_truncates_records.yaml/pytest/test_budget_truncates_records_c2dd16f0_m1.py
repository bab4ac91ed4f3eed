"""prunecheck 0.1.0: M1 counterexample (2 steps) for policy 'budget-truncates-records'.

M1: monotone evidence: no step destroys a span's content without a tombstone or a place in the log.
Why: the compaction removes #0 (message; truncated to the policy's budget of 4000) and keeps no evidence of it: no tombstone, no place in the log.

test_recorded_policy_violates_m1 replays the steps on the policy as it was checked (embedded below) and asserts
the violation at the last step, so the finding stays reproducible. test_policy_file_keeps_m1 runs the same steps
against the policy file as it is now, under the deployment DEPLOYMENT_OVERRIDE it was judged under when it was
checked: it fails while the policy is unsafe and passes once it is fixed, and then guards against a regression (it
is skipped if the current policy refuses one of the steps).
"""

import pathlib

import pytest

from prunecheck import ActionRefused, DeploymentOverride, load_policy, parse_policy, replay
from prunecheck import Append, Compact

CONDITION = 'M1'
MAX_SPANS = 4
POLICY_FILE = pathlib.Path(__file__).resolve().parent / '../../../examples/policies/budget_truncates_records.yaml'
RECORDED_POLICY = '{\n "name": "budget-truncates-records",\n "evict": "kind not in [\'record\', \'rationale\'] and reads == 0 and age > 2",\n "budget": 4000,\n "deployment": {\n  "records": "window",\n  "rationale": "decision_log",\n  "pins": "host",\n  "audit": "independent",\n  "undo": "versioned",\n  "record_role": "tool_result"\n }\n}'
DEPLOYMENT_OVERRIDE = {'records': 'window', 'rationale': 'decision_log', 'pins': 'host', 'audit': 'independent', 'undo': 'versioned', 'record_role': 'tool_result', 'evicted': 'destroyed', 'evidence': 'on', 'justification': 'unchecked', 'refusal': 'silent', 'missing_record': 'refuse', 'host_truncation': 'off', 'tool_calls': 'on', 'destroy_record': 'id', 'safe_undo': 'off', 'record_tool': ''}


def steps():
    return [
        Append(kind='message', tokens=4001),  # span #0 (message, 4001 tokens) enters the window
        Compact(),  # compaction: truncated to the policy's budget of 4000: #0 (message)
    ]


def violated_at_each_step(policy):
    """The set of conditions each step violates on the reference runtime."""
    return replay(policy, steps(), spans=MAX_SPANS)


def test_recorded_policy_violates_m1():
    found = violated_at_each_step(parse_policy(RECORDED_POLICY, "recorded-policy.json", no_config=True,
                                               trust_policy_deployment=True))
    assert all(CONDITION not in f for f in found[:-1]), "the violation should come at the last step"
    assert CONDITION in found[-1]


@pytest.mark.skipif(POLICY_FILE is None or not POLICY_FILE.is_file(), reason="the policy file is not available")
def test_policy_file_keeps_m1():
    policy = load_policy(POLICY_FILE, DeploymentOverride.of(DEPLOYMENT_OVERRIDE), no_config=True)
    try:
        found = violated_at_each_step(policy)
    except ActionRefused as refused:
        pytest.skip(f"the current policy makes this run impossible: {refused}")
    assert not any(CONDITION in f for f in found), f"{CONDITION} is still violated by {POLICY_FILE}"
