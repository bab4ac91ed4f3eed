"""prunecheck 0.1.0: T1 counterexample (4 actions, 7 steps) for policy 'blind-undo'.

T1: tool-call pairs: no compaction stage removes one span of a tool call and its result.
Why: the compaction removes tool call #0 out of the window but leaves its tool result #1 there: the model's API rejects the orphan (the policy cannot tell pairs apart: it reads no role and sets neither `pairs: together` nor `start_on`).

test_recorded_policy_violates_t1 replays the steps on the policy as it was checked (embedded below) and asserts
the violation at the last step, so the finding stays reproducible. test_policy_file_keeps_t1 runs the same steps
against the policy file as it is now, under the deployment DEPLOYMENT_OVERRIDE it was judged under when it was
checked: it fails while the policy is unsafe and passes once it is fixed, and then guards against a regression (it
is skipped if the current policy refuses one of the steps).
"""

import pathlib

import pytest

from prunecheck import ActionRefused, DeploymentOverride, load_policy, parse_policy, replay
from prunecheck import Append, Audit, Compact

CONDITION = 'T1'
MAX_SPANS = 4
POLICY_FILE = pathlib.Path(__file__).resolve().parent / '../../../examples/policies/blind_undo.yaml'
RECORDED_POLICY = '{\n "name": "blind-undo",\n "evict": "kind == \'tool_output\' and idle > 4",\n "deployment": {\n  "records": "undo_region",\n  "rationale": "decision_log",\n  "pins": "host",\n  "audit": "independent",\n  "undo": "blind",\n  "record_role": "tool_result"\n }\n}'
DEPLOYMENT_OVERRIDE = {'records': 'undo_region', 'rationale': 'decision_log', 'pins': 'host', 'audit': 'independent', 'undo': 'blind', 'record_role': 'tool_result', 'evicted': 'destroyed', 'evidence': 'on', 'justification': 'unchecked', 'refusal': 'silent', 'missing_record': 'refuse', 'host_truncation': 'off', 'tool_calls': 'on', 'destroy_record': 'id', 'safe_undo': 'off', 'record_tool': ''}


def steps():
    return [
        Append(kind='tool_output', tokens=1, role='tool_call'),  # span #0 (tool_output, role tool_call, 1 token) enters the window
        Append(kind='message', tokens=1, role='tool_result'),  # span #1 (message, role tool_result, 1 token) enters the window
        Audit(times=4),  # 4 audits in a row (steps 3-6, the clock is now 6): status says 'reversible'
        Compact(),  # compaction: evicted by the policy: #0 (tool_output); ledger entry: rationale #2 in the log namespace
    ]


def violated_at_each_step(policy):
    """The set of conditions each step violates on the reference runtime."""
    return replay(policy, steps(), spans=MAX_SPANS)


def test_recorded_policy_violates_t1():
    found = violated_at_each_step(parse_policy(RECORDED_POLICY, "recorded-policy.json", no_config=True,
                                               trust_policy_deployment=True))
    assert all(CONDITION not in f for f in found[:-1]), "the violation should come at the last step"
    assert CONDITION in found[-1]


@pytest.mark.skipif(POLICY_FILE is None or not POLICY_FILE.is_file(), reason="the policy file is not available")
def test_policy_file_keeps_t1():
    policy = load_policy(POLICY_FILE, DeploymentOverride.of(DEPLOYMENT_OVERRIDE), no_config=True)
    try:
        found = violated_at_each_step(policy)
    except ActionRefused as refused:
        pytest.skip(f"the current policy makes this run impossible: {refused}")
    assert not any(CONDITION in f for f in found), f"{CONDITION} is still violated by {POLICY_FILE}"
