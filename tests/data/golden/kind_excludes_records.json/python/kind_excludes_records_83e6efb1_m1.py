#!/usr/bin/env python3
"""prunecheck 0.1.0: a M1 counterexample (3 actions, 6 steps), replayed on the reference runtime.

M1: monotone evidence: no step destroys a span's content without a tombstone or a place in the log.
The policy is embedded as it was checked (POLICY, deployment included), so this script needs
only an installed prunecheck and runs from any directory. Exit code: 0 reproduced, 1 not.
"""

import sys

import prunecheck
from prunecheck import Append, Audit, Compact

CONDITION = 'M1'
SPANS = 4
POLICY_NAME = 'kind-excludes-records'
CHECKED_FROM = '<ROOT>/examples/policies/kind_excludes_records.json'
POLICY = '{"name": "kind-excludes-records", "description": "Evicts idle content; records and rationale are excluded by kind: the first seed\'s \'policy predicate that structurally excludes the undo region\'. Only a host truncating to a budget of its own (host_truncation: on, outside the seeds\' scope) would take them.", "evict": "kind not in [\'record\', \'rationale\'] and idle > 3", "pairs": "together", "deployment": {"records": "window", "rationale": "window", "pins": "self", "audit": "independent", "undo": "versioned", "record_role": "tool_result"}}'
WHY = 'the compaction removes #0 (message; evicted by the policy) and keeps no evidence of it: no tombstone, no place in the log'
STEPS = [
    Append(kind='message', tokens=1),
    Audit(times=4),
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
