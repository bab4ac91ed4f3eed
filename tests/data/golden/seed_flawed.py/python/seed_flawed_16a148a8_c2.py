#!/usr/bin/env python3
"""prunecheck 0.1.0: a C2 counterexample (3 steps), replayed on the reference runtime.

C2: budget independence: no compaction, at any budget, removes a recovery record.
The policy is embedded as it was checked (POLICY, deployment included), so this script needs
only an installed prunecheck and runs from any directory. Exit code: 0 reproduced, 1 not.
"""

import sys

import prunecheck
from prunecheck import Append, Compact, Edit

CONDITION = 'C2'
SPANS = 4
POLICY_NAME = 'seed-recency-frequency-py'
CHECKED_FROM = '<ROOT>/examples/policies/seed_flawed.py'
POLICY = '{"name": "seed-recency-frequency-py", "description": "The first seed\'s observed policy, in the restricted Python form.", "evict": "false if pinned else recency * frequency < 0.25", "deployment": {"records": "window", "rationale": "decision_log", "pins": "self", "audit": "policy", "undo": "versioned", "record_role": "tool_result"}}'
WHY = 'the compaction removes record #1 of edit 1 (evicted by the policy)'
STEPS = [
    Append(kind='message', tokens=1),
    Edit(target=0, mode='transform'),
    Compact(),
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
