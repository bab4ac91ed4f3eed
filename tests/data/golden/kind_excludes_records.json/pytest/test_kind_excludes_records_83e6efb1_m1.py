"""prunecheck 0.1.0: M1 counterexample (3 actions, 6 steps) for policy 'kind-excludes-records'.

M1: monotone evidence: no step destroys a span's content without a tombstone or a place in the log.
Why: the compaction removes #0 (message; evicted by the policy) and keeps no evidence of it: no tombstone, no place in the log.

test_recorded_policy_violates_m1 replays the steps on the policy as it was checked (embedded below) and asserts
the violation at the last step, so the finding stays reproducible. test_policy_file_keeps_m1 runs the same steps
against the policy file as it is now, under the deployment DEPLOYMENT_OVERRIDE it was judged under when it was
checked: it fails while the policy is unsafe and passes once it is fixed, and then guards against a regression (it
is skipped if the current policy refuses one of the steps).
"""

import pathlib

import pytest

from prunecheck import ActionRefused, DeploymentOverride, load_policy, parse_policy, replay
from prunecheck import Append, Audit, Compact

CONDITION = 'M1'
MAX_SPANS = 4
POLICY_FILE = pathlib.Path(__file__).resolve().parent / '../../../examples/policies/kind_excludes_records.json'
RECORDED_POLICY = '{\n "name": "kind-excludes-records",\n "description": "Evicts idle content; records and rationale are excluded by kind: the first seed\'s \'policy predicate that structurally excludes the undo region\'. Only a host truncating to a budget of its own (host_truncation: on, outside the seeds\' scope) would take them.",\n "evict": "kind not in [\'record\', \'rationale\'] and idle > 3",\n "pairs": "together",\n "deployment": {\n  "records": "window",\n  "rationale": "window",\n  "pins": "self",\n  "audit": "independent",\n  "undo": "versioned",\n  "record_role": "tool_result"\n }\n}'
DEPLOYMENT_OVERRIDE = {'records': 'window', 'rationale': 'window', 'pins': 'self', 'audit': 'independent', 'undo': 'versioned', 'record_role': 'tool_result', 'evicted': 'destroyed', 'evidence': 'on', 'justification': 'unchecked', 'refusal': 'silent', 'missing_record': 'refuse', 'host_truncation': 'off', 'tool_calls': 'on', 'destroy_record': 'id', 'safe_undo': 'off', 'record_tool': ''}


def steps():
    return [
        Append(kind='message', tokens=1),  # span #0 (message, role user, 1 token) enters the window
        Audit(times=4),  # 4 audits in a row (steps 2-5, the clock is now 5): status says 'reversible'
        Compact(),  # compaction: evicted by the policy: #0 (message); ledger entry: rationale #1 in the window namespace
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
