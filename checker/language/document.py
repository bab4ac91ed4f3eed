"""A parsed policy's canonical document and its hash: what reports, traces, certificates and caches name it by."""

from __future__ import annotations

import hashlib

from prunecheck.spec.policy import Policy

from prunecheck.checker.language.printer import to_text


def policy_document(policy: Policy) -> dict:
    """The parsed policy as a canonical mapping; parsing it back (as JSON) gives an equal Policy. A list of stages
    (SPEC §4h) is `compaction`, each stage's keys in its entry."""
    doc = {"name": policy.name}
    if policy.description:
        doc["description"] = policy.description
    stage = {} if policy.later else stage_document(policy)
    doc.update((key, stage.pop(key)) for key in ("evict", "rank") if key in stage)
    if policy.budget is not None:
        doc["budget"] = policy.budget
    doc.update(stage)
    if policy.later:
        doc["compaction"] = [stage_document(st) for st in policy.stages]
    doc["deployment"] = policy.deployment.as_dict()
    return doc


def stage_document(stage) -> dict:
    """One stage's keys (a Policy's own, or a Stage's) that differ from their defaults, expressions as text."""
    doc = {"evict": to_text(stage.evict)}
    if stage.rank is not None:
        doc["rank"] = to_text(stage.rank)
    for key in ("keep", "when", "until"):
        if getattr(stage, key) is not None:
            doc[key] = to_text(getattr(stage, key))
    if stage.order != "oldest":
        doc["order"] = stage.order
    if stage.effect != "evict":
        doc["effect"] = stage.effect
    if stage.placeholder_tokens != 1:
        doc["placeholder_tokens"] = stage.placeholder_tokens
    if stage.summary_role != "user":
        doc["summary_role"] = stage.summary_role
    if stage.summary_at != "replaced":
        doc["summary_at"] = stage.summary_at
    if stage.pairs != "apart":
        doc["pairs"] = stage.pairs
    if stage.start_on is not None:
        doc["start_on"] = stage.start_on
    return doc


def policy_hash(policy: Policy) -> str:
    """sha256 of the parsed policy (not of its text: reformatting does not change it)."""
    return hashlib.sha256(repr(policy).encode()).hexdigest()
