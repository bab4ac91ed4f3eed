"""`python -m prunecheck`: the command line."""

from prunecheck.checker.cli import entry

entry()
