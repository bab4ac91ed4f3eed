"""The vetting loop an agent runs over MCP: propose a policy, read the counterexample, revise, until one is proved.

This script plays the model's side with three fixed drafts (a real agent would write each revision from the
explanation it was fed back). It starts `prunecheck mcp` over stdio with the official MCP SDK's client, under the
operator's deployment beside it (deployment.yaml: the model cannot choose it, ADR 0037), checks each draft, feeds
the first counterexample's explanation back (printed), and stops at the first draft whose every condition holds with
certificates cvc5 confirms. Usage:

    python examples/agent_loop/agent_loop.py [SERVER OPTIONS...]     # e.g. --rlimit 100000000

Exit code 0 when a draft is accepted, 1 when none is.
"""

import asyncio
import sys
from pathlib import Path

from mcp import Client, StdioServerParameters

OPERATOR = Path(__file__).resolve().parent / "deployment.yaml"  # the operator's facts, not the model's
DRAFTS = [
    # 1: evicts idle spans, its own undo records included (they live in the window).
    ("draft1.yaml", "name: evict-idle\n"
                    "evict: idle > 3 and not pinned\n"
                    "deployment:\n  records: window\n  pins: self\n"),
    # 2: excludes records from eviction and keeps each tool call with its result (T1 was violated too), but keeps
    # records in the window under a budget (truncation takes them).
    ("draft2.yaml", "name: evict-idle-except-records\n"
                    "evict: kind not in ['record', 'rationale'] and idle > 3\n"
                    "pairs: together\n"
                    "budget: 4000\n"
                    "deployment:\n  records: window\n"),
    # 3: the same without the budget. Its claim of an undo region is not believed (the operator's deployment keeps
    # records in the window): the policy holds because its own predicate excludes them.
    ("draft3.yaml", "name: evict-idle-records-excluded\n"
                    "evict: kind not in ['record', 'rationale'] and idle > 3\n"
                    "pairs: together\n"
                    "deployment:\n  records: undo_region\n"),
]


def say(line: str = "") -> None:
    print(line, flush=True)


async def feedback(client, name: str, text: str, report: dict) -> None:
    """What the model is told: the first violated condition's counterexample, explained down to its text."""
    condition, entry = next((c, e) for c, e in report["conditions"].items() if e["verdict"] == "violated")
    explained = await client.call_tool("explain", {"policy": text, "name": name, "condition": condition,
                                                   "trace": entry["trace"]})
    say(f"  feedback to the model ({condition}):")
    for line in explained.content[0].text.splitlines():
        say(f"    {line}")


async def confirmed(client, name: str, text: str, report: dict) -> bool:
    certificates = [entry["certificate"] for entry in report["conditions"].values()]
    certified = await client.call_tool("certify", {"certificates": certificates, "policy": text, "name": name})
    verdicts = certified.structured_content["certificates"]
    say("  certify: " + ", ".join(f"{v['condition']} {v['status']}" for v in verdicts))
    return not certified.is_error and certified.structured_content["confirmed"]


async def vet(server_options: list) -> int:
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "prunecheck", "mcp", "--deployment", str(OPERATOR), *server_options])
    async with Client(params) as client:
        for round_number, (name, text) in enumerate(DRAFTS, start=1):
            say(f"round {round_number}: {name}")
            checked = await client.call_tool("check", {"policy": text, "name": name})
            say(f"  check: {checked.content[0].text}")
            if checked.is_error:
                continue
            (report,) = checked.structured_content["policies"]
            if report["verdict"] == "violated":
                await feedback(client, name, text, report)
            elif report["verdict"] == "holds" and await confirmed(client, name, text, report):
                say(f"accepted {name} after {round_number} rounds: every condition holds, "
                    f"{len(report['conditions'])} certificates confirmed by cvc5")
                return 0
    say("no draft was proved safe")
    return 1


if __name__ == "__main__":
    sys.exit(asyncio.run(vet(sys.argv[1:])))
