"""The checking entry point: a policy in, a Report out, with everything needed to reproduce it."""

from __future__ import annotations

import hashlib
from typing import Iterable

import z3

from prunecheck import __version__
from prunecheck.spec.conditions import CONDITIONS
from prunecheck.spec.policy import Policy

from .bmc import DEFAULT_DEPTH, DEFAULT_SPANS, DEFAULT_TIMEOUT, check_bounded
from .printer import to_text
from .result import Report


def policy_document(policy: Policy) -> dict:
    """The parsed policy as a canonical mapping; parsing it back (as JSON) gives an equal Policy."""
    doc = {"name": policy.name}
    if policy.description:
        doc["description"] = policy.description
    doc["evict"] = to_text(policy.evict)
    if policy.rank is not None:
        doc["rank"] = to_text(policy.rank)
    if policy.budget is not None:
        doc["budget"] = policy.budget
    doc["deployment"] = policy.deployment.as_dict()
    return doc


def policy_hash(policy: Policy) -> str:
    """sha256 of the parsed policy (not of its text: reformatting does not change it)."""
    return hashlib.sha256(repr(policy).encode()).hexdigest()


def versions() -> tuple:
    return (("prunecheck", __version__), ("z3", z3.get_version_string()))


def check(policy: Policy, depth: int = DEFAULT_DEPTH, spans: int = DEFAULT_SPANS,
          only: Iterable[str] = CONDITIONS, timeout: float = DEFAULT_TIMEOUT, memory_mb: int = 0) -> Report:
    """Check every selected condition; every `violated` carries a trace already replayed on the runtime."""
    results = check_bounded(policy, depth, spans, only, timeout, memory_mb)
    return Report(policy.name, policy_hash(policy), policy.source, depth, spans, results, versions())
