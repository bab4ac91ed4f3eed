"""The one renderer of reasons: a Result's structured Reason as the one line every output prints."""

from __future__ import annotations

from prunecheck.checker.result import (Advice, Clause, Domains, Found, Method, Reason, Scope, SolverSaid,
                                       SolverStop, Tried, counted, length_text)

RECHECKED = "certificate re-checked by cvc5"  # what stands behind every `holds`
LABELS = {Method.BMC: "bounded search", Method.INDUCTION: "induction", Method.SPACER: "Spacer"}


def reason_text(reason: Reason) -> str:
    """The reason as one line: each engine's clauses (labelled when several engines tried), the advice, the note."""
    if reason.parts:
        text = "; ".join(f"{LABELS[p.engine]}: {_scoped(p.clauses)}" for p in reason.parts)
    else:
        text = _scoped(reason.clauses)
    if reason.advice:
        text += "; to decide it, try " + " or ".join(_advice_text(a) for a in reason.advice)
    return f"{text}; {reason.note.value}" if reason.note is not None else text


def renders_as(reason: Reason, text: str) -> bool:
    """Whether the reason renders as exactly this text (a cached report's text against its structured reason)."""
    return reason_text(reason) == text


def solver_text(said: SolverSaid) -> str:
    """A solver's stop in plain words."""
    if said.stop is SolverStop.OTHER and said.words:
        return f"{said.stop.value} ({said.words})"
    return said.stop.value


def domains_text(domains: Domains) -> str:
    """The explicit search's domains, each marked `(given)` unless derived from the policy's constants."""
    def text(name, values):
        return f"{name} {{{', '.join(map(str, values))}}}{'' if name in domains.derived else ' (given)'}"
    derived = f"; {' and '.join(domains.derived)}: the defaults plus what the policy's constants ask for" \
        if domains.derived else ""
    targets = f" or up to clock {{{', '.join(map(str, domains.clock_targets))}}}" if domains.clock_targets else ""
    roles = f"roles {{{', '.join(domains.roles)}}}, " if domains.roles != ("user",) else ""
    roles += "".join(f"{attr}s {{{', '.join(map(repr, names))}}}, " for attr, names in domains.names)
    cites = "citations: none or one present span, " \
        if domains.cites else ""
    cites += "compactions fired on (event, reported usage) {" + ", ".join(
        f"({e!r}, {r})" for e, r in domains.triggers) + "}, " if domains.triggers else ""
    return (f"{text('tokens', domains.tokens)}, {text('repetitions', domains.repeats)}{targets}, "
            f"kinds {{{', '.join(domains.kinds)}}}, {roles}{cites}host budgets: one per distinct compaction{derived}")


def bound_text(depth: int, spans: int, repeats: bool) -> str:
    """A bounded search that found nothing within its bounds."""
    unit = "action" if repeats else "step"
    within = f"no violation within {depth} {unit}{'s' if depth != 1 else ''} over {spans} spans"
    return f"{within} (reads and waits repeated any number of times)" if repeats else within


def _advice_text(advice: Advice) -> str:
    if advice.value is None:
        return f"a larger {advice.option}"
    value = f"{advice.value:g}" if isinstance(advice.value, float) else str(advice.value)
    return f"{advice.option} {value} ({advice.why.value})"


def _scoped(clauses: tuple) -> str:
    """Each clause after its scope, the scopes said once when every clause says the same."""
    whys = [_clause_text(c) for c in clauses]
    if len(set(whys)) == 1 and len(clauses) > 1 and all(c.scope is not None for c in clauses):
        return f"{whys[0]} ({' or '.join(c.scope.value for c in clauses)})"
    return "; ".join(f"{c.scope.value}: {why}" if c.scope is not None else why for c, why in zip(clauses, whys))


def _clause_text(c: Clause) -> str:
    if c.found is Found.VIOLATED and c.engine is Method.RUNS:
        return (f"violated after {length_text(c.actions, c.steps)} over {c.spans} spans (found by the bounded search "
                f"with runs of equal appended spans in one slot, not claimed shortest; reduced); replayed on the runtime")
    if c.found is Found.VIOLATED:
        how = "reduced); replayed on the runtime" if c.engine is Method.BMC \
            else f"{domains_text(c.domains)}); explicit search"
        return f"violated after {length_text(c.actions, c.steps)} (shortest within {c.spans} spans, {how}"
    if c.found is Found.PROVED:
        return f"proved for every depth and window size ({c.engine}); {RECHECKED}"
    if c.found is Found.BY_CONSTRUCTION and not c.engine.abstracted:  # the policy as written: its own structure
        return ("holds by construction: its violation term is False for this policy's expressions under this "
                f"deployment; {RECHECKED}")
    if c.found is Found.BY_CONSTRUCTION:
        return ("holds by construction: its violation term is False under this deployment, whatever the policy; "
                f"{RECHECKED}")
    if c.found is Found.UNCONFIRMED:
        return f"proved ({c.engine}) but the certificate is not confirmed: {c.detail}"
    if c.found is Found.FAULT:
        return f"checker fault: {c.engine} certificate {c.certificate} on re-check ({c.detail})"
    if c.found is Found.MEMORY:
        return f"solver memory limit of {c.megabytes} MB reached"
    if c.engine is Method.EXPLICIT:
        return _explicit_text(c)
    if c.engine is Method.BMC:
        return _bounded_text(c)
    return _proof_text(c)


def _explicit_text(c: Clause) -> str:
    if c.found is Found.LIMIT:
        limit = (f"time limit {c.time_limit:g} s" if c.time_limit is not None else f"state limit {c.state_limit}"
                 if c.state_limit is not None else f"memory limit {c.megabytes} MB")
        return f"explicit search stopped in depth {c.at} after {counted(c.states, 'state')} ({limit})"
    return (f"no violation up to depth {c.depth} over {c.spans} spans, {domains_text(c.domains)} "
            f"(explicit search, {counted(c.states, 'state')})")


def _bounded_text(c: Clause) -> str:
    if c.found is Found.BOUND:
        return bound_text(c.depth, c.spans, c.repeats)
    searched = f"; {bound_text(c.at - 1, c.spans, c.repeats)}" if c.at else ""
    return f"stopped at depth {c.at}: {solver_text(c.solver)}{searched}"


def _proof_text(c: Clause) -> str:
    if c.found is Found.NO_PROOF:
        if c.tried is Tried.ABSTRACTION:
            return "the two-span abstraction reaches a violation, so no invariant exists there"
        return "no inductive invariant among its lemma templates"
    if c.solver is None or c.scope is Scope.TIME:
        return SolverStop.TIME.value
    stopped = f"stopped: {solver_text(c.solver)}"
    if c.tried is Tried.LEMMAS:
        return f"the search for lemmas {stopped}"
    return f"the safety check {stopped}" if c.tried is Tried.SAFETY else stopped


__all__ = ["LABELS", "RECHECKED", "bound_text", "domains_text", "reason_text", "renders_as",
           "solver_text"]
