"""The `prunecheck` console script: the checker's commands plus `prove`, which lives in prunecheck.proofs."""

from __future__ import annotations

import sys

from prunecheck.checker import cli as checker_cli
from prunecheck.proofs import run as proofs_run

COMMANDS = {"prove": (proofs_run.add_parser, proofs_run.command)}


def main(argv=None, stdout=None, stderr=None) -> int:
    return checker_cli.main(argv, stdout, stderr, extra_commands=COMMANDS)


def entry() -> None:
    sys.exit(main())
