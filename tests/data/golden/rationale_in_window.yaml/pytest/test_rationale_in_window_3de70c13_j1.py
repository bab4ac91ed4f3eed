"""prunecheck 0.1.0: J1 counterexample (3 actions, 5 steps) for policy 'stale-transcripts'.

J1: justification survives: no span a live edit or compaction cites is removed while it is live (moved to the log counts as kept).
Why: #0, cited by the compaction whose rationale is #1, is gone (evicted by the policy): the justification did not survive the edit.

test_recorded_policy_violates_j1 replays the steps on the policy as it was checked (embedded below) and asserts
the violation at the last step, so the finding stays reproducible. test_policy_file_keeps_j1 runs the same steps
against the policy file as it is now, under the deployment DEPLOYMENT_OVERRIDE it was judged under when it was
checked: it fails while the policy is unsafe and passes once it is fixed, and then guards against a regression (it
is skipped if the current policy refuses one of the steps).
"""

import pathlib

import pytest

from prunecheck import ActionRefused, DeploymentOverride, load_policy, parse_policy, replay
from prunecheck import Append, Audit, Compact

CONDITION = 'J1'
MAX_SPANS = 4
POLICY_FILE = pathlib.Path(__file__).resolve().parent / '../../../examples/policies/rationale_in_window.yaml'
RECORDED_POLICY = '{\n "name": "stale-transcripts",\n "evict": "kind != \'record\' and not edited and age >= 3",\n "deployment": {\n  "records": "undo_region",\n  "rationale": "window",\n  "pins": "host",\n  "audit": "independent",\n  "undo": "versioned",\n  "record_role": "tool_result"\n }\n}'
DEPLOYMENT_OVERRIDE = {'records': 'undo_region', 'rationale': 'window', 'pins': 'host', 'audit': 'independent', 'undo': 'versioned', 'record_role': 'tool_result', 'evicted': 'destroyed', 'evidence': 'on', 'justification': 'unchecked', 'refusal': 'silent', 'missing_record': 'refuse', 'host_truncation': 'off', 'tool_calls': 'on', 'destroy_record': 'id', 'safe_undo': 'off', 'record_tool': ''}


def steps():
    return [
        Append(kind='message', tokens=1),  # span #0 (message, 1 token) enters the window
        Audit(times=3),  # 3 audits in a row (steps 2-4, the clock is now 4): status says 'reversible'
        Compact(cites=(0,)),  # compaction: evicted by the policy: #0 (message); ledger entry: rationale #1 in the window namespace, cites #0
    ]


def violated_at_each_step(policy):
    """The set of conditions each step violates on the reference runtime."""
    return replay(policy, steps(), spans=MAX_SPANS)


def test_recorded_policy_violates_j1():
    found = violated_at_each_step(parse_policy(RECORDED_POLICY, "recorded-policy.json", no_config=True,
                                               trust_policy_deployment=True))
    assert all(CONDITION not in f for f in found[:-1]), "the violation should come at the last step"
    assert CONDITION in found[-1]


@pytest.mark.skipif(POLICY_FILE is None or not POLICY_FILE.is_file(), reason="the policy file is not available")
def test_policy_file_keeps_j1():
    policy = load_policy(POLICY_FILE, DeploymentOverride.of(DEPLOYMENT_OVERRIDE), no_config=True)
    try:
        found = violated_at_each_step(policy)
    except ActionRefused as refused:
        pytest.skip(f"the current policy makes this run impossible: {refused}")
    assert not any(CONDITION in f for f in found), f"{CONDITION} is still violated by {POLICY_FILE}"
