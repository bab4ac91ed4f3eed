"""The second seed's evidence terms (SPEC 6f): the tombstone field and conditions M1 and A1 on both models."""

from __future__ import annotations

import z3

from prunecheck.spec.policy import KIND, NAMESPACE
from prunecheck.symbolic.terms import ENUM_CODES

K, NS = ENUM_CODES[KIND], ENUM_CODES[NAMESPACE]

TOMBSTONE_FIELD = {"tombstone": z3.BoolSort()}


def has_tombstones(deployment) -> bool:
    """Slots and ghosts carry a tombstone only where the deployment can set one (old encodings stay byte-identical)."""
    return deployment.evicted == "tombstone"


def write_tombstone(becomes, fields, cut_short, born, lost) -> None:
    """The tombstone after a step, under `evicted: tombstone`: a span the compaction removes, masks or cuts (`lost`)
    gets one, as does a summary truncated in the step that writes it (`cut_short`); a new span has none; a tombstone,
    once written, stays (an undo that restores the span leaves it)."""
    if "tombstone" in fields:
        becomes("tombstone", *((c, z3.BoolVal(True)) for c in cut_short), (born, z3.BoolVal(False)),
                (lost, z3.BoolVal(True)))


def _had_content(used, present):
    return z3.And(used, present)


def _lost_without_evidence(fields, present_after, i=None):
    """After the step: no content, no tombstone, not in the log (`fields` a state's field dict, per slot by i)."""
    at = (lambda name: fields[name][i]) if i is not None else (lambda name: fields[name])
    kept = [z3.Not(at("tombstone"))] if "tombstone" in fields else []
    return z3.And(z3.Not(present_after), at("ns") != NS["log"], *kept)


_LOG_CONTENT = ("kind", "tokens", "alive", "masked", "ns", "version")


def _rewritten(before, after, i=None):
    """A decision-log entry (a rationale in the log) in `before` whose content differs in `after`."""
    at = (lambda f, name: f[name][i]) if i is not None else (lambda f, name: f[name])
    entry = z3.And(at(before, "used"), at(before, "kind") == K["rationale"], at(before, "ns") == NS["log"])
    changed = [at(before, name) != at(after, name) for name in _LOG_CONTENT if name in before]
    return z3.And(entry, z3.Or(changed))


def m1_unrolled(model, s, a, t, step):
    return z3.Or([z3.And(_had_content(s.used[i], s.present(i)), _lost_without_evidence(t.fields, t.present(i), i))
                  for i in range(model.n)])


def a1_unrolled(model, s, a, t, step):
    return z3.Or([_rewritten(s.fields, t.fields, i) for i in range(model.n)])


def m1_pair(model, step):
    """Either ghost: as an assumption (the lattice's "M1 at every step") r alone would leave q free to be lost."""
    s, t = step.pre, step.post
    return z3.Or([z3.And(_had_content(s.span[g]["used"], s.present(g)), _lost_without_evidence(t.span[g], t.present(g)))
                  for g in ("r", "q")])


def a1_pair(model, step):
    return _rewritten(step.pre.span["r"], step.post.span["r"])
