"""A parsed policy's canonical document and its hash: what reports, traces, certificates and caches name it by."""

from __future__ import annotations

import hashlib

from prunecheck.spec.policy import Policy

from prunecheck.checker.language.printer import to_text


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
    for key in ("keep", "when", "until"):
        if getattr(policy, key) is not None:
            doc[key] = to_text(getattr(policy, key))
    if policy.order != "oldest":
        doc["order"] = policy.order
    if policy.effect != "evict":
        doc["effect"] = policy.effect
    if policy.placeholder_tokens != 1:
        doc["placeholder_tokens"] = policy.placeholder_tokens
    if policy.summary_role != "user":
        doc["summary_role"] = policy.summary_role
    if policy.pairs != "apart":
        doc["pairs"] = policy.pairs
    if policy.start_on is not None:
        doc["start_on"] = policy.start_on
    doc["deployment"] = policy.deployment.as_dict()
    return doc


def policy_hash(policy: Policy) -> str:
    """sha256 of the parsed policy (not of its text: reformatting does not change it)."""
    return hashlib.sha256(repr(policy).encode()).hexdigest()
