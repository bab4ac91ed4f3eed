"""A set of certificates: each confirmed only when cvc5 confirms it and every condition it assumes is proved by a
confirmed member of the set for the same policy, never through a cycle (a least fixpoint)."""

from __future__ import annotations

from dataclasses import dataclass

from prunecheck.checker.engines.certificate import (
    Certificate, CertificateError, Recheck, Status, read_certificate, recheck_certificate,
)


@dataclass(frozen=True)
class Certified:
    """One certificate's outcome within a set: its own re-check, then its assumptions and what discharged each."""

    name: str
    status: Status
    reason: str
    obligations: tuple = ()
    label: str = ""
    discharged: tuple = ()
    condition: str = ""
    policy_hash: str = ""


def certify_set(documents: list, policy=None, timeout_ms: int = 10000, rlimit: int = 0) -> list:
    """[Verdict] for [(name, document)] (a document may be the CertificateError certificate_json raised): a
    certificate is confirmed when cvc5 confirms it and each condition it assumes is proved by a confirmed certificate
    of the set for the same policy, without circularity (a least fixpoint: nothing confirms itself through a cycle).
    With `policy`, every certificate must be for exactly it."""
    names = [name for name, _ in documents]
    certs, own = {}, {}
    for i, (_, document) in enumerate(documents):
        try:
            certs[i] = read_certificate(document)
        except CertificateError as exc:
            own[i] = Recheck(Status.REJECTED, (), exc.one_line())
            continue
        own[i] = _for_policy(certs[i], policy) or recheck_certificate(certs[i], timeout_ms, rlimit)
    edges = {i: {x: [j for j in certs if _discharges(certs[j], c, x)] for x in c.assume} for i, c in certs.items()}
    confirmed = _fixpoint(own, edges, {}, (Status.CONFIRMED,))
    unchecked = _fixpoint(own, edges, confirmed, (Status.CONFIRMED, Status.UNCHECKED))
    out = []
    for i, name in enumerate(names):
        status, reason, picks = _outcome(i, own[i], confirmed, unchecked)
        if status is None:
            status, reason = Status.REJECTED, _undischarged(i, certs, edges, confirmed, unchecked, names)
        cert = certs.get(i)
        about = {"label": cert.label, "condition": cert.condition, "policy_hash": cert.policy_hash} if cert else {}
        out.append(Certified(name, status, reason, own[i].obligations, discharged=_named(picks, names), **about))
    return out


def _outcome(i: int, own: Recheck, confirmed: dict, unchecked: dict) -> tuple:
    """(status, reason, assumption picks) of certificate i, or (None, '', {}) if an assumption is not discharged."""
    if i in confirmed:
        return Status.CONFIRMED, own.reason, confirmed[i]
    if own.status not in (Status.CONFIRMED, Status.UNCHECKED):
        return own.status, own.reason, {}
    if i in unchecked:
        why = own.reason if own.status == Status.UNCHECKED else "an assumption rests on an unchecked certificate"
        return Status.UNCHECKED, why, unchecked[i]
    return None, "", {}


def _named(picks: dict, names: list) -> tuple:
    return tuple((condition, names[j]) for condition, j in picks.items())


def _for_policy(cert: Certificate, policy):
    """A rejection when `policy` is given and the certificate is for another policy, else None."""
    if policy is None:
        return None
    from prunecheck.checker.language.document import policy_document, policy_hash

    digest = policy_hash(policy)
    if cert.policy_hash == digest and cert.policy_doc == policy_document(policy):
        return None
    return Recheck(Status.REJECTED, (), f"policy: the certificate is for policy {cert.policy.name} "
                   f"sha256:{cert.policy_hash[:12]}, not the given {policy.name} sha256:{digest[:12]}")


def _discharges(other: Certificate, cert: Certificate, condition: str) -> bool:
    """`other` may discharge `cert`'s assumption of `condition`: same policy, and a free-policy proof covers both
    kinds of model, while a proof for the concrete policy covers only the concrete model."""
    return (other.condition == condition and other.policy_hash == cert.policy_hash
            and other.policy_doc == cert.policy_doc and (other.free_policy or not cert.free_policy))


def _fixpoint(own: dict, edges: dict, below: dict, allowed: tuple) -> dict:
    """{name: {condition: discharging name}}: the least set closed under 'own status allowed and every assumption
    discharged by a member (or by `below`)'."""
    done = {}
    changed = True
    while changed:
        changed = False
        for name, by_condition in edges.items():
            if name in done or name in below or own[name].status not in allowed:
                continue
            pick = {x: next((m for m in ms if m in below or m in done), None) for x, ms in by_condition.items()}
            if all(m is not None for m in pick.values()):
                done[name], changed = pick, True
    return done


def _undischarged(name: int, certs: dict, edges: dict, confirmed: dict, unchecked: dict, names: list) -> str:
    for condition, candidates in edges[name].items():
        if any(m in confirmed or m in unchecked for m in candidates):
            continue
        kind = "" if certs[name].free_policy else " (free-policy or concrete)"
        if not candidates:
            return (f"assume: {condition} is assumed, but no certificate for {condition} of the same policy"
                    f"{kind} is given")
        cycle = _cycle(name, edges)
        if cycle:
            return "assume: circular assumptions " + " -> ".join(f"{certs[n].condition} ({names[n]})" for n in cycle)
        return f"assume: {condition} rests on {names[candidates[0]]}, which is not confirmed"
    return "assume: not discharged"


def _cycle(start: int, edges: dict) -> list:
    """A path start -> ... -> start along the assumption edges, or []."""
    stack, seen = [(start, [start])], set()
    while stack:
        node, path = stack.pop()
        for ms in edges.get(node, {}).values():
            for m in ms:
                if m == start:
                    return path + [start]
                if m not in seen:
                    seen.add(m)
                    stack.append((m, path + [m]))
    return []
