"""The `schema` command: the published JSON Schemas of the policy format and of `check --format json`."""

from __future__ import annotations

import json

from prunecheck.checker.language.policy_schema import policy_schema
from prunecheck.checker.outputs.report_schema import report_schema

SCHEMAS = {"policy": policy_schema, "report": report_schema}


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("schema", help="print a JSON Schema: of the policy format or of the JSON report")
    parser.add_argument("which", choices=tuple(SCHEMAS),
                        help="policy (what the loader accepts, for editors' YAML language servers and structured "
                             "output) or report (the document `check --format json` prints)")


def run(args, stdout, stderr) -> int:
    print(json.dumps(SCHEMAS[args.which](), indent=2), file=stdout)
    return 0
