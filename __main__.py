"""`python -m prunecheck`: the command line."""

from prunecheck.cli import entry

entry()
