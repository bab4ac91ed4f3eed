"""`python -m prunecheck.checker`: the command line."""

from prunecheck.checker.cli import entry

entry()
