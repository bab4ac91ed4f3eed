"""The `repair` command: its arguments, the operator's deployment it judges under, and its outputs."""

from __future__ import annotations

import json

from prunecheck.spec.conditions import CONDITIONS

from prunecheck.checker.commands.repair import (EXIT_NONE, EXIT_REPAIRED, EXIT_UNDECIDED, MAX_ALTERNATIVES, repair,
                                                result_json, result_text)
from prunecheck.checker.language.loader import decode_policy_bytes, expected_verdicts, load_policy
from prunecheck.checker.options import DEFAULTS, MAX_SPANS, options_with
from prunecheck.checker.outputs.paths import write_whole, writing
from prunecheck.symbolic.interrupts import commit

ALTERNATIVES_HELP = ("after the preferred repair, keep searching in the same order and also list up to N other "
                     "proved repairs, none containing an earlier one (each may cost full checks; default "
                     f"{MAX_ALTERNATIVES}: stop at the first)")


def add_parser(subparsers) -> None:
    from prunecheck.checker.commands.frontdoor import (add_operator_arguments, add_quiet_argument, add_rlimit_argument,
                                                       bounded_int)

    parser = subparsers.add_parser(
        "repair", help="propose the proved-safe change that keeps most of a violated policy's intent",
        description="Search change sets (an evict conjunct excluding records or rationale, a deployment setting, "
                    "dropping the budget) in preference order: keeping the budget first, then fewer deployment "
                    "changes, then the narrower exclusion. The first one under which the full checker proves every "
                    "condition is printed as a unified diff of the file. A set the checker decides neither way is "
                    "listed as undecided, and the sets containing it are not tried.")
    parser.add_argument("policy", metavar="POLICY", help=".yaml, .yml, .json or .py policy file")
    parser.add_argument("--text-only", action="store_true",
                        help="change only the policy text, not the deployment section it states (which repair edits "
                             "only with --trust-policy-deployment)")
    parser.add_argument("--out", metavar="FILE", help="write the repaired policy text to FILE")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text (default: the change, its proof and the unified diff) or json (one document)")
    parser.add_argument("--alternatives", type=bounded_int(0, 64), default=MAX_ALTERNATIVES, metavar="N",
                        help=ALTERNATIVES_HELP)
    parser.add_argument("--timeout", type=bounded_int(1, 3600), default=int(DEFAULTS.timeout),
                        help=f"seconds per condition (default {DEFAULTS.timeout:g})")
    add_rlimit_argument(parser)
    add_quiet_argument(parser)
    parser.add_argument("--depth", type=bounded_int(1, 200), default=DEFAULTS.depth,
                        help=f"bounded search depth (default {DEFAULTS.depth})")
    parser.add_argument("--spans", type=bounded_int(2, MAX_SPANS), default=DEFAULTS.spans,
                        help=f"span slots (default {DEFAULTS.spans})")
    add_operator_arguments(parser)


DEPLOYMENT_NOT_REPAIRED = ("no deployment change is proposed: the deployment is the operator's (its configuration or "
                           "--deployment), not the policy file's; with --trust-policy-deployment repair may edit the "
                           "file's own deployment section")


def _read_text(path: str) -> str:
    with open(path, "rb") as handle:  # load_policy has already refused non-regular and oversized files
        data = handle.read()
    return decode_policy_bytes(data, path)


def run(args, stdout, stderr) -> int:
    from prunecheck.checker.commands.frontdoor import progress_of
    from prunecheck.checker.language.operator import judged, operator_for

    operator = operator_for(args.policy, config=args.config, no_config=args.no_config, deployment=args.deployment,
                            trust=args.trust_policy_deployment)
    policy = judged(load_policy(args.policy), operator)
    text = _read_text(args.policy)
    options = options_with(depth=args.depth, spans=args.spans, timeout=args.timeout, rlimit=args.rlimit)
    # The deployment is the operator's: repair edits a file's deployment section only where that section is believed.
    with progress_of(args, stderr).task("repairing"):
        result = repair(policy, text, args.policy, options=options, alternatives=args.alternatives,
                        allow_deployment=not args.text_only and operator.trust_policy_deployment,
                        judge=lambda parsed: judged(parsed, operator))
    commit()  # the repair is decided: its files and text are written whole
    if not args.text_only and not operator.trust_policy_deployment:
        print(f"prunecheck: note: {DEPLOYMENT_NOT_REPAIRED}", file=stderr)
    stale = ()
    if result.repaired:
        expect = expected_verdicts(args.policy)
        checked = {r.condition for r in result.report.results}  # the repair's deployment may drop some
        stale = tuple(c for c in CONDITIONS if expect.get(c) == "violated" and c in checked)
        if args.out:
            with writing("--out", args.out):  # a write that fails after the up-front check: one error line
                write_whole(args.out, ("\ufeff" if _has_bom(args.policy) else "") + result.text)
            print(f"wrote {args.out}", file=stderr)
    if args.format == "json":
        print(json.dumps(result_json(result), indent=2), file=stdout)
    else:
        print(result_text(result, stale if not result.reprinted else ()), file=stdout)
    return {"holds": EXIT_REPAIRED, "repaired": EXIT_REPAIRED, "unknown": EXIT_UNDECIDED}.get(result.status, EXIT_NONE)


def _has_bom(path: str) -> bool:
    with open(path, "rb") as handle:
        return handle.read(3) == b"\xef\xbb\xbf"


__all__ = ["add_parser", "run", "ALTERNATIVES_HELP", "DEPLOYMENT_NOT_REPAIRED"]
