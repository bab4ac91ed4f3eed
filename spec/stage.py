"""The compaction stage's walk over its ordered candidates: the target and what taking a span does (SPEC 4b)."""

from __future__ import annotations

from prunecheck.spec.evaluate import evaluate
from prunecheck.spec.policy import IN_PLACE, Attr, Binary, Policy, Unary, left_tokens


def stage_target(policy: Policy):
    """The stage's target: `until`, or for a ranked policy with a budget `window_tokens <= budget` (the legacy
    ranked walk); None when every candidate is taken."""
    if policy.until is not None:
        return policy.until
    if policy.rank is not None and policy.budget is not None:
        return Binary("<=", Attr("window_tokens"), Attr("budget"))
    return None


def window_order(span) -> tuple:
    """The one sort key of window order (SPEC 4d): by place, which is the id for every span but a summary; the id
    breaks ties: a span outside the window, or a summarised span an undo brought back beside its summary."""
    return span.place, span.id


def selection(policy: Policy):
    """The stage's selection as one expression: `evict and not keep` (evict alone without a keep)."""
    if policy.keep is None:
        return policy.evict
    return Binary("and", policy.evict, Unary("not", policy.keep))


def taken_effect(policy: Policy, span, tokens: int, spans: int) -> tuple:
    """The window's (tokens, spans) after the stage takes `span` from (tokens, spans): evicting it removes its tokens
    and one span; masking it leaves the span, with placeholder_tokens tokens (which may be more than it had). The one
    place the walk learns what taking a span does."""
    if policy.effect in IN_PLACE:  # a cut keeps at most placeholder_tokens of it
        return tokens - span.tokens + left_tokens(policy, span.tokens), spans
    return tokens - span.tokens, spans - 1


def walk(policy: Policy, ordered, tokens: int, spans: int, env_at) -> tuple:
    """The ids the stage takes from the candidates `ordered`, and the window's tokens after them: each is taken while
    the target is false in env_at(tokens, spans), the totals the ones taken before it leave."""
    target = stage_target(policy)
    taken = []
    for span in ordered:
        if target is not None and evaluate(target, env_at(tokens, spans)):
            break  # the totals no longer change, so no later candidate is taken either
        taken.append(span.id)
        tokens, spans = taken_effect(policy, span, tokens, spans)
    return taken, tokens


def start_on_taken(policy: Policy, window, taken, kept) -> list:
    """`start_on` (SPEC 4b): the ids the stage also takes. Of the spans of `window` (in window order) neither in
    `taken` nor kept (kept(span)), the leading ones whose role is not start_on, up to the first that has it (all of
    them if none has it); none without start_on."""
    if policy.start_on is None:
        return []
    out = []
    for span in window:
        if span.id in taken or kept(span):
            continue
        if span.role == policy.start_on:
            break
        out.append(span.id)
    return out
