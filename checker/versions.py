"""What made a report: the versions of prunecheck, the interpreter and both solvers."""

from __future__ import annotations

import functools
import platform
from importlib import metadata

import z3

from prunecheck.version import __version__

from prunecheck.checker.result import VERSION_KEYS


@functools.lru_cache(maxsize=None)
def _cvc5_version() -> str:
    try:
        return metadata.version("cvc5")
    except metadata.PackageNotFoundError:  # a cvc5 built from source, not installed as a distribution
        import cvc5
        return cvc5.__version__


def versions() -> tuple:
    """What made a report: this package, the interpreter and both solvers, in VERSION_KEYS order."""
    found = {"prunecheck": __version__, "python": platform.python_version(), "z3": z3.get_version_string(),
             "cvc5": _cvc5_version()}
    return tuple((key, found[key]) for key in VERSION_KEYS)
