"""Proof certificates: the document, its validation, and the re-check of its obligations by cvc5.

A certificate holds the policy, the condition, the model text (Init, Trans, Bad) and the invariant (Inv). Every field
is validated; the model text is regenerated from the embedded policy (`certificate_model`) and must be identical; Inv
is parsed by `smtlib` and reprinted; only cvc5's `unsat` on the three obligations (initiation, consecution, safety)
confirms. `confirm_certificate` serves the cache; `certificate_set` discharges assumptions within a set.
"""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import dataclass

import z3

from prunecheck.spec.conditions import CONDITIONS
from prunecheck.spec.errors import PrunecheckError

from prunecheck.checker.engines.certificate_model import Encoding, ModelFacts, clear_models, model_facts
from prunecheck.checker.engines.smtlib import SmtError, read_definition
from prunecheck.symbolic.interrupts import stop_if_interrupted
from prunecheck.symbolic.solver import new_solver, query

FORMAT = "prunecheck-certificate/1"


@dataclass(frozen=True)
class Obligation:
    """One obligation's verdict from each solver that was asked."""

    name: str
    cvc5: str
    z3: str


class Status(str, enum.Enum):
    """A certificate re-check's outcome. Only CONFIRMED (cvc5 proves every obligation) lets `holds` stand."""

    CONFIRMED = "confirmed"
    REFUTED = "refuted"
    REJECTED = "rejected"
    UNCHECKED = "unchecked"

    def __str__(self) -> str:  # enum.StrEnum is 3.11+; the project supports 3.10
        return self.value

    __format__ = str.__format__


DECISIVE = (Status.CONFIRMED, Status.REFUTED, Status.REJECTED)


@dataclass(frozen=True)
class Recheck:
    """The re-check of a certificate: confirmed by cvc5, refuted by a solver, rejected as malformed or for another
    model, or unchecked (no solver decided; z3 alone proving it is not a confirmation)."""

    status: Status
    obligations: tuple
    reason: str = ""


def certificate_document(policy_doc: dict, policy_hash: str, encoding: Encoding, invariant, readable: list,
                         engine: str) -> dict:
    return {
        "format": FORMAT,
        "condition": encoding.condition,
        "engine": engine,
        "free_policy": encoding.free_policy,
        "assume": list(encoding.assume),
        "policy": policy_doc,
        "policy_hash": policy_hash,
        "invariant": readable,
        "model_smt2": encoding.model_text(),
        "invariant_smt2": encoding.invariant_text(invariant),
    }


def dumps(document: dict) -> str:
    return json.dumps(document, indent=1) + "\n"


KEYS = ("format", "condition", "engine", "free_policy", "assume", "policy", "policy_hash", "invariant", "model_smt2",
        "invariant_smt2")


class CertificateError(PrunecheckError):
    """A certificate field that is not accepted; the message is the one-line reason."""


@dataclass(frozen=True)
class Certificate:
    """A certificate whose fields are all validated; `policy` is parsed from the document, `policy_hash` recomputed."""

    condition: str
    engine: str
    free_policy: bool
    assume: tuple
    policy: object
    policy_doc: dict
    policy_hash: str
    model_smt2: str
    invariant_smt2: str

    @property
    def label(self) -> str:
        return f"{self.condition} for policy {self.policy.name} sha256:{self.policy_hash[:12]}"


def _require(ok: bool, field: str, why: str) -> None:
    if not ok:
        raise CertificateError(f"{field}: {why}")


def certificate_json(text: str):
    """The JSON document of a certificate's text. CertificateError if an object repeats a key: json keeps the last
    one, while a reader (or another tool) may keep the first, so the checked certificate would not be the one read."""
    def unique(pairs: list) -> dict:
        document = dict(pairs)
        if len(document) != len(pairs):
            seen = set()
            repeated = next(key for key, _ in pairs if key in seen or seen.add(key))
            raise CertificateError(f"certificate: the key {repeated[:40]!r} appears twice in one object")
        return document

    return json.loads(text, object_pairs_hook=unique)


def read_certificate(document) -> Certificate:
    """Validate every field of an untrusted certificate document (CertificateError names the first bad one); a
    CertificateError in place of the document (from certificate_json) is raised as it is."""
    if isinstance(document, CertificateError):
        raise document
    _check_fields(document)
    condition, assume = document["condition"], document["assume"]
    _require(isinstance(assume, list) and all(isinstance(c, str) and c in CONDITIONS for c in assume), "assume",
             "not a list of condition ids")
    _require(len(set(assume)) == len(assume), "assume", "a condition is listed twice")
    _require(condition not in assume, "assume", f"the certificate for {condition} assumes {condition} itself")
    _require(isinstance(document["policy"], dict), "policy", "not a JSON object")
    policy, policy_doc, digest = _embedded_policy(json.dumps(document["policy"], sort_keys=True))
    _require(document["policy_hash"] == digest, "policy_hash",
             f"{document['policy_hash'][:16]!r} is not the hash of the embedded policy (sha256:{digest[:12]})")
    return Certificate(condition, document["engine"], document["free_policy"], tuple(assume), policy, policy_doc,
                       digest, document["model_smt2"], document["invariant_smt2"])


def _check_fields(document) -> None:
    """Exactly the known fields, each of its type (assume and policy are read by the caller)."""
    _require(isinstance(document, dict), "certificate", "not a JSON object")
    unknown = sorted(set(document) - set(KEYS))
    _require(not unknown, "certificate", f"unknown field {', '.join(map(str, unknown))[:80]}")
    missing = [k for k in KEYS if k not in document]
    _require(not missing, "certificate", f"missing field {', '.join(missing)}")
    _require(document["format"] == FORMAT, "format", f"not {FORMAT}")
    condition = document["condition"]
    _require(isinstance(condition, str) and condition in CONDITIONS, "condition", "not one of " + ", ".join(CONDITIONS))
    _require(isinstance(document["engine"], str) and len(document["engine"]) <= 200, "engine", "not a short string")
    _require(type(document["free_policy"]) is bool, "free_policy", "not true or false")
    readable = document["invariant"]
    _require(isinstance(readable, list) and len(readable) <= 10000 and all(isinstance(x, str) for x in readable),
             "invariant", "not a list of strings")
    for field in ("model_smt2", "invariant_smt2", "policy_hash"):
        _require(isinstance(document[field], str), field, "not a string")


_POLICIES_SIZE = 4096
_policies: dict = {}


def _embedded_policy(text: str) -> tuple:
    """(policy, canonical document, hash) of a certificate's policy, parsed by the normal loader; remembered."""
    from prunecheck.checker.language.document import policy_document, policy_hash
    from prunecheck.checker.language.loader import parse_policy_text

    if text not in _policies:
        try:
            policy = parse_policy_text(text, "certificate#policy.json")
        except PrunecheckError as exc:
            raise CertificateError(f"policy: {exc.one_line()}") from None
        if len(_policies) >= _POLICIES_SIZE:
            _policies.clear()
        _policies[text] = (policy, policy_document(policy), policy_hash(policy))
    return _policies[text]


_ANSWERS_SIZE = 65536
_answers: dict = {}


def _cvc5(prefix: str, queries: list, timeout_ms: int, rlimit: int = 0) -> list:
    """cvc5's answer to each query (assertions) on top of `prefix`, in one incremental solver: the model is parsed
    once, each query between push and pop. Decisive answers are remembered per exact script for this process (a
    certificate whose policy is abstracted has the same text for every policy of a deployment), whatever the limits
    they were found under: limits decide whether an answer comes, not which."""
    key = hashlib.sha256("\0".join([prefix, *queries]).encode()).hexdigest()
    if key in _answers:
        return list(_answers[key])
    answers = _ask_cvc5(prefix, queries, timeout_ms, rlimit)
    if all(a in ("sat", "unsat") for a in answers):
        if len(_answers) >= _ANSWERS_SIZE:
            _answers.clear()
        _answers[key] = tuple(answers)
    return answers


def _ask_cvc5(prefix: str, queries: list, timeout_ms: int, rlimit: int) -> list:
    try:
        import cvc5
    except ImportError:
        return ["unavailable"] * len(queries)
    tm = cvc5.TermManager()
    solver = cvc5.Solver(tm)
    solver.setOption("tlimit-per", str(timeout_ms))
    if rlimit:
        solver.setOption("rlimit-per", str(rlimit))
    solver.setOption("incremental", "true")
    symbols = cvc5.SymbolManager(tm)
    parser = cvc5.InputParser(solver, symbols)
    script = prefix + "".join(f"(push 1)\n{q}\n(check-sat)\n(pop 1)\n" for q in queries)
    parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, script, "certificate")
    answers = []
    try:
        while True:
            stop_if_interrupted()  # cvc5 cannot be interrupted inside a query: between its commands, then
            command = parser.nextCommand()
            if command.isNull():
                break
            out = command.invoke(solver, symbols).strip()
            if out:
                answers.append(out)
    except RuntimeError as exc:
        return [f"error: {' '.join(str(exc).split())[:200]}"] * len(queries)
    return (answers + ["no answer"] * len(queries))[: len(queries)]


def _z3(script: str, timeout_ms: int, rlimit: int = 0) -> str:
    solver = new_solver(timeout_ms)
    if rlimit:
        solver.set("rlimit", rlimit)
    try:
        solver.from_string(script)
    except z3.Z3Exception as exc:
        return f"error: {' '.join(str(exc).split())[:200]}"
    return str(query(solver).status)  # an obligation's z3 column: its answer, an error or "not asked"


def check_obligations(invariant_smt2: str, model: ModelFacts, timeout_ms: int = 10000, rlimit: int = 0) -> Recheck:
    """Read Inv from the untrusted text, then ask cvc5 (z3 only to explain a failure) about the trusted script: the
    regenerated model text, Inv printed from its parsed term, and the three obligations built here."""
    try:
        definition = read_definition(invariant_smt2, model.signature)
    except SmtError as exc:
        return Recheck(Status.REJECTED, (), f"invariant: {exc}")
    prefix = model.text + definition.text()
    answers = _cvc5(prefix, ["\n".join(a) for _, a in model.obligations], timeout_ms, rlimit)
    results = []
    for (name, asserts), by_cvc5 in zip(model.obligations, answers):
        script = prefix + "\n".join(asserts) + "\n(check-sat)\n"
        by_z3 = _z3(script, timeout_ms, rlimit) if by_cvc5 != "unsat" else "not asked"
        results.append(Obligation(name, by_cvc5, by_z3))
    if all(o.cvc5 == "unsat" for o in results):
        return Recheck(Status.CONFIRMED, tuple(results), "cvc5 proves every obligation")
    refuted = [o.name for o in results if "sat" in (o.cvc5, o.z3)]
    if refuted:
        return Recheck(Status.REFUTED, tuple(results), f"obligation {', '.join(refuted)} fails")
    open_ = [o.name for o in results if o.cvc5 != "unsat"]
    if all(o.cvc5 == "unsat" or o.z3 == "unsat" for o in results):
        return Recheck(Status.UNCHECKED, tuple(results), f"cvc5 gave up on {', '.join(open_)}; z3 alone proves "
                       "them, which is no second solver's confirmation")
    return Recheck(Status.UNCHECKED, tuple(results), f"no solver decides {', '.join(open_)}")


def _matches(cert: Certificate, model: ModelFacts) -> str:
    """Why the certificate is not about the regenerated model, or ''."""
    if (cert.condition, cert.free_policy, cert.assume) != (model.condition, model.free_policy, model.assume):
        return (f"the certificate is for {cert.condition} (free_policy {cert.free_policy}, assume "
                f"{list(cert.assume)}), not {model.condition} (free_policy {model.free_policy}, assume "
                f"{list(model.assume)})")
    if cert.model_smt2 != model.text:
        return "model_smt2: not the model regenerated from the embedded policy, condition and assumptions"
    return ""


def recheck(document: dict, encoding: Encoding, timeout_ms: int = 10000, rlimit: int = 0) -> Recheck:
    """Check a certificate document against `encoding`'s model, relative to the assumptions it names (whether those
    hold is `certify_set`'s business); only the regenerated model and the parsed Inv reach a solver."""
    try:
        cert = read_certificate(document)
    except CertificateError as exc:
        return Recheck(Status.REJECTED, (), exc.one_line())
    model = encoding.facts()
    why = _matches(cert, model)
    if why:
        return Recheck(Status.REJECTED, (), why)
    return check_obligations(cert.invariant_smt2, model, timeout_ms, rlimit)


def recheck_certificate(cert: Certificate, timeout_ms: int = 10000, rlimit: int = 0) -> Recheck:
    """Check a validated certificate against the model regenerated from its own embedded policy."""
    model = model_facts(cert.policy, cert.condition, cert.free_policy, cert.assume)
    why = _matches(cert, model)
    if why:
        return Recheck(Status.REJECTED, (), why)
    return check_obligations(cert.invariant_smt2, model, timeout_ms, rlimit)


_CONFIRMED_SIZE = 8192
_confirmed: dict = {}


def confirm_certificate(text: str, policy, condition: str, timeout_ms: int = 10000, rlimit: int = 0) -> Recheck:
    """Whether the certificate text (as in Result.certificate) proves `condition` for exactly `policy`, with no
    assumptions. Decisive answers are remembered per (text, policy, condition) for this process."""
    from prunecheck.checker.language.document import policy_document, policy_hash

    digest = policy_hash(policy)
    key = (hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), digest, condition)
    if key in _confirmed:
        return _confirmed[key]
    result = _confirm(text, policy, digest, policy_document(policy), condition, timeout_ms, rlimit)
    if result.status in DECISIVE:
        if len(_confirmed) >= _CONFIRMED_SIZE:
            _confirmed.clear()
        _confirmed[key] = result
    return result


def _confirm(text, policy, digest, policy_doc, condition, timeout_ms, rlimit) -> Recheck:
    try:
        cert = read_certificate(certificate_json(text))
    except (ValueError, RecursionError):
        return Recheck(Status.REJECTED, (), "certificate: not JSON")
    except CertificateError as exc:
        return Recheck(Status.REJECTED, (), exc.one_line())
    if cert.condition != condition:
        return Recheck(Status.REJECTED, (), f"condition: the certificate is for {cert.condition}, not {condition}")
    if cert.assume:
        return Recheck(Status.REJECTED, (), f"assume: the certificate assumes {', '.join(cert.assume)}")
    if cert.policy_hash != digest or cert.policy_doc != policy_doc:
        return Recheck(Status.REJECTED, (), f"policy: the certificate is for policy {cert.policy.name} "
                       f"sha256:{cert.policy_hash[:12]}, not {policy.name} sha256:{digest[:12]}")
    return recheck_certificate(cert, timeout_ms, rlimit)


def clear_memos() -> None:
    _policies.clear()
    _answers.clear()
    clear_models()
    _confirmed.clear()
