#!/usr/bin/env python3
"""prunecheck 0.1.0: a J1 counterexample (3 actions, 7 steps), replayed on the reference runtime.

J1: justification survives: no span a live edit or compaction cites is removed while it is live (moved to the log counts as kept).
The policy is embedded as it was checked (POLICY, deployment included), so this script needs
only an installed prunecheck and runs from any directory. Exit code: 0 reproduced, 1 not.
"""

import sys

import prunecheck
from prunecheck import Append, Audit, Compact

CONDITION = 'J1'
SPANS = 4
POLICY_NAME = 'blind-undo'
CHECKED_FROM = '<ROOT>/examples/policies/blind_undo.yaml'
POLICY = '{"name": "blind-undo", "evict": "kind == \'tool_output\' and idle > 4", "deployment": {"records": "undo_region", "rationale": "decision_log", "pins": "host", "audit": "independent", "undo": "blind", "record_role": "tool_result"}}'
WHY = '#0, cited by the compaction whose rationale is #1, is gone (evicted by the policy): the justification did not survive the edit'
STEPS = [
    Append(kind='tool_output', tokens=1),
    Audit(times=5),
    Compact(cites=(0,)),
]


def main() -> int:
    policy = prunecheck.parse_policy(POLICY, "recorded-policy.json", no_config=True, trust_policy_deployment=True)
    violated = prunecheck.replay(policy, STEPS, spans=SPANS)
    for number, (action, conditions) in enumerate(zip(STEPS, violated), start=1):
        print(f"{number}. {action}: {', '.join(sorted(conditions)) or 'no violation'}")
    if CONDITION in violated[-1] and not any(CONDITION in found for found in violated[:-1]):
        print(f"{CONDITION} violated at the last step: reproduced ({WHY})")
        return 0
    print(f"{CONDITION} is not violated exactly at the last step: NOT reproduced")
    return 1


if __name__ == "__main__":
    sys.exit(main())
