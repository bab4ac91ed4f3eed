"""The `prunecheck` console script: the checker's commands plus `prove`, which lives in prunecheck.proofs."""

from __future__ import annotations

import sys


def _commands() -> dict:
    from prunecheck.proofs import run as proofs_run

    return {"prove": (proofs_run.add_parser, proofs_run.command)}


def __getattr__(name):
    if name == "COMMANDS":  # imported on demand: the console script handles signals before the checker loads
        return _commands()
    raise AttributeError(f"module 'prunecheck.cli' has no attribute {name!r}")


def main(argv=None, stdout=None, stderr=None) -> int:
    from prunecheck.checker import cli as checker_cli

    return checker_cli.main(argv, stdout, stderr, extra_commands=_commands())


def entry() -> None:
    from prunecheck.symbolic.interrupts import install

    install()  # SIGINT and SIGTERM interrupt the run from here on (exit 130), even while the checker loads
    sys.exit(main())
