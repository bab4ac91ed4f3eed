"""`python -m prunecheck.checker`: the command line."""

from .cli import entry

entry()
