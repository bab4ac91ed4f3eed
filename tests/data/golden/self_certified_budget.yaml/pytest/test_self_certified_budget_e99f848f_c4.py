"""prunecheck 0.1.0: C4 counterexample (4 steps) for policy 'self-certified-budget'.

C4: independent audit: status is never 'reversible' while a live edit lacks its record.
Why: status says 'reversible' while record #1 of edit 1 is gone (removed at step 4).

test_recorded_policy_violates_c4 replays the steps on the policy as it was checked (embedded below) and asserts
the violation at the last step, so the finding stays reproducible. test_policy_file_keeps_c4 runs the same steps
against the policy file as it is now, under the deployment DEPLOYMENT_OVERRIDE it was judged under when it was
checked: it fails while the policy is unsafe and passes once it is fixed, and then guards against a regression (it
is skipped if the current policy refuses one of the steps).
"""

import pathlib

import pytest

from prunecheck import ActionRefused, DeploymentOverride, load_policy, parse_policy, replay
from prunecheck import Append, Compact, Edit

CONDITION = 'C4'
MAX_SPANS = 4
POLICY_FILE = pathlib.Path(__file__).resolve().parent / '../../../examples/policies/self_certified_budget.yaml'
RECORDED_POLICY = '{\n "name": "self-certified-budget",\n "evict": "kind == \'tool_output\' and idle > 2",\n "rank": "recency",\n "budget": 2000,\n "deployment": {\n  "records": "window",\n  "rationale": "decision_log",\n  "pins": "host",\n  "audit": "policy",\n  "undo": "versioned",\n  "record_role": "tool_result"\n }\n}'
DEPLOYMENT_OVERRIDE = {'records': 'window', 'rationale': 'decision_log', 'pins': 'host', 'audit': 'policy', 'undo': 'versioned', 'record_role': 'tool_result', 'evicted': 'destroyed', 'evidence': 'on', 'justification': 'unchecked', 'refusal': 'silent', 'missing_record': 'refuse', 'host_truncation': 'off', 'tool_calls': 'on', 'destroy_record': 'id', 'safe_undo': 'off', 'record_tool': ''}


def steps():
    return [
        Append(kind='message', tokens=1),  # span #0 (message, 1 token) enters the window
        Edit(target=0, mode='transform'),  # edit 1: transform #0 (now summary); record #1 in the window namespace, pinned by the host; rationale #2 in the log namespace
        Append(kind='message', tokens=2000),  # span #3 (message, 2000 tokens) enters the window
        Compact(),  # compaction: truncated to the policy's budget of 2000: #0 (summary), #1 (record of edit 1)
    ]


def violated_at_each_step(policy):
    """The set of conditions each step violates on the reference runtime."""
    return replay(policy, steps(), spans=MAX_SPANS)


def test_recorded_policy_violates_c4():
    found = violated_at_each_step(parse_policy(RECORDED_POLICY, "recorded-policy.json", no_config=True,
                                               trust_policy_deployment=True))
    assert all(CONDITION not in f for f in found[:-1]), "the violation should come at the last step"
    assert CONDITION in found[-1]


@pytest.mark.skipif(POLICY_FILE is None or not POLICY_FILE.is_file(), reason="the policy file is not available")
def test_policy_file_keeps_c4():
    policy = load_policy(POLICY_FILE, DeploymentOverride.of(DEPLOYMENT_OVERRIDE), no_config=True)
    try:
        found = violated_at_each_step(policy)
    except ActionRefused as refused:
        pytest.skip(f"the current policy makes this run impossible: {refused}")
    assert not any(CONDITION in f for f in found), f"{CONDITION} is still violated by {POLICY_FILE}"
