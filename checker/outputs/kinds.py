"""Which of prunecheck's JSON documents a value is, so that a command given the wrong kind of file can say so."""

from __future__ import annotations

from prunecheck.spec.errors import PolicySyntaxError

CERTIFICATE = "a proof certificate (`certify` reads it)"
TRACE = "an ITF trace (`explain`, `replay` and `graph` read it)"


def document_kind(document) -> str:
    """What the document is by its keys (CERTIFICATE, TRACE, a JSON or SARIF report, a baseline, a policy), or ""
    when it is none of them."""
    if not isinstance(document, dict):
        return ""
    if isinstance(document.get("format"), str) and document["format"].startswith("prunecheck-certificate"):
        return CERTIFICATE
    if "#meta" in document and "states" in document:
        return TRACE
    if document.get("tool") == "prunecheck" and "policies" in document:
        return "a report (`check --format json`)"
    if "runs" in document and "version" in document:
        return "a SARIF log (`check --format sarif`)"
    if "accepted" in document and "version" in document:
        return "a baseline (`check --baseline` reads it)"
    if "evict" in document:
        return "a policy (`check` reads it)"
    return ""


def wrong_kind(document, wanted: str) -> str:
    """`not WANTED: it is KIND` for a document of another kind; `not WANTED` when it is none that prunecheck knows."""
    kind = document_kind(document)
    return f"not {wanted}: it is {kind}" if kind else f"not {wanted}"


def claimed_certificate(document, path):
    """The document, if it claims to be a certificate (an object with a `format`, which certify then checks: a forged
    one is rejected); otherwise the wrong file, a one-line PolicySyntaxError at path."""
    if not (isinstance(document, dict) and "format" in document):
        raise PolicySyntaxError(f"{wrong_kind(document, 'a proof certificate')}; certify reads the *.cert.json files "
                                "`check --out` writes", str(path), 1, 1)
    return document


__all__ = ["CERTIFICATE", "TRACE", "claimed_certificate", "document_kind", "wrong_kind"]
