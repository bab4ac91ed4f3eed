"""Proof certificates: the parametric model and an inductive invariant in SMT-LIB 2, re-checked by cvc5.

A certificate holds the policy, the condition, the model text (Init, Trans, Bad) and the invariant (Inv). Every field
is validated; the model text is regenerated from the embedded policy and must be identical; Inv is parsed by
`smtlib` and reprinted; the three obligations (initiation, consecution, safety) are built here; only cvc5's `unsat`
confirms. `certify_set` discharges assumptions within a set of certificates; `confirm_certificate` serves the cache.
"""

from __future__ import annotations

import copy
import enum
import hashlib
import json
from dataclasses import dataclass

import z3

from prunecheck.spec.conditions import CONDITIONS
from prunecheck.spec.errors import PrunecheckError
from prunecheck.symbolic.model import ActionSort
from prunecheck.symbolic.parametric import AllocSort, GhostSort, PairAction, PairModel, PairState
from prunecheck.symbolic.terms import KindSort, NamespaceSort

from prunecheck.checker.engines.smtlib import Signature, SmtError, read_definition
from prunecheck.symbolic.solver import new_solver, query

FORMAT = "prunecheck-certificate/1"
STEP_CONDITIONS = ("C2", "C3")
OBLIGATIONS = ("initiation", "consecution", "safety")
DATATYPES = (KindSort, NamespaceSort, ActionSort, GhostSort, AllocSort)


def free_shape(policy, timeout: float, rlimit: int = 0) -> tuple:
    """What a proof with the policy abstracted depends on: the deployment, the policy's form and the bounds."""
    return (policy.deployment, policy.rank is not None and policy.budget is not None, policy.budget is not None,
            timeout, rlimit)


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


@dataclass(frozen=True)
class ModelFacts:
    """What a re-check needs of an encoding, as text only: cheap to keep for many models."""

    condition: str
    free_policy: bool
    assume: tuple
    text: str
    signature: Signature
    obligations: tuple


def _sort_name(sort) -> str:
    return sort.name()


def _declare(var) -> str:
    return f"(declare-fun {var.sexpr()} () {_sort_name(var.sort())})"


def _datatypes() -> list:
    out = []
    for sort in DATATYPES:
        ctors = " ".join(f"({sort.constructor(i).name()})" for i in range(sort.num_constructors()))
        out.append(f"(declare-datatypes (({sort.name()} 0)) (({ctors})))")
    return out


def _apply(name: str, variables) -> str:
    return f"({name} {' '.join(v.sexpr() for v in variables)})"


class Encoding:
    """The parametric model of one policy and condition, as z3 terms and as SMT-LIB text."""

    def __init__(self, policy, condition: str, free_policy: bool, assume=()):
        """With `assume`, the model is restricted to the runs along which those conditions hold at every step."""
        self.condition, self.free_policy, self.assume = condition, free_policy, tuple(assume)
        self.model = PairModel(policy, free_policy)
        self.pre, self.act, self.post, self.param = PairState("pre"), PairAction("a"), PairState("post"), PairState("p")
        self.init = self.model.encode_init(self.pre)
        self.step = self.model.encode_step(self.pre, self.act, self.post)
        self.bad = self.violation(condition)
        self.trans = list(self.step.constraints)
        for other in self.assume:
            if other in STEP_CONDITIONS:
                self.trans.append(z3.Not(self.violation(other)))
            else:
                self.trans += [z3.Not(self.violation(other)), z3.Not(self.violation(other, self.post))]

    def for_condition(self, condition: str) -> "Encoding":
        """The same model with another condition's Bad: what a fresh Encoding for that condition would be."""
        other = copy.copy(self)
        other.condition, other.bad, other._text = condition, self.violation(condition), None
        return other

    def violation(self, condition: str, state=None):
        """The condition's violation term: on `state` (default pre) for state conditions, on the step otherwise."""
        state = self.pre if state is None else state
        return {"C1": lambda: self.model.bad_c1(state), "C4": lambda: self.model.bad_c4(state),
                "P1": lambda: self.model.bad_p1(state), "C2": lambda: self.model.bad_c2(self.step),
                "C3": lambda: self.model.bad_c3(self.step)}[condition]()

    def model_text(self) -> str:
        if getattr(self, "_text", None) is None:
            self._text = self._model_text()
        return self._text

    def _model_text(self) -> str:
        variables = self.pre.variables() + self.act.variables() + self.post.variables()
        lines = ["(set-logic ALL)"] + _datatypes() + [_declare(v) for v in variables]
        lines.append(f"(define-fun Init () Bool {z3.And(self.init).sexpr()})")
        lines.append(f"(define-fun Trans () Bool {z3.And(self.trans).sexpr()})")
        lines.append(f"(define-fun Bad () Bool {self.bad.sexpr()})")
        return "\n".join(lines) + "\n"

    def invariant_text(self, invariant) -> str:
        """`invariant` is a z3 term over the parameter state `p`."""
        texts = self.__dict__.setdefault("_invariant_texts", {})
        key = invariant.get_id()
        if key not in texts:
            params = " ".join(f"({v.sexpr()} {_sort_name(v.sort())})" for v in self.param.variables())
            texts[key] = (invariant, f"(define-fun Inv ({params}) Bool {invariant.sexpr()})\n")
        return texts[key][1]

    def signature(self) -> Signature:
        """What the certificate's Inv must be defined over, and the names it must not use."""
        if getattr(self, "_signature", None) is None:
            self._signature = self._make_signature()
        return self._signature

    def _make_signature(self) -> Signature:
        params = tuple((v.sexpr(), _sort_name(v.sort())) for v in self.param.variables())
        ctors = {sort.constructor(i).name(): sort.name() for sort in DATATYPES for i in range(sort.num_constructors())}
        model = self.pre.variables() + self.act.variables() + self.post.variables()
        names = frozenset([v.sexpr() for v in model] + ["Init", "Trans", "Bad"] + [s.name() for s in DATATYPES])
        return Signature(params, ctors, names)

    def facts(self) -> ModelFacts:
        return ModelFacts(self.condition, self.free_policy, self.assume, self.model_text(), self.signature(),
                          tuple(self.obligations().items()))

    def obligations(self) -> dict:
        inv_pre, inv_post = _apply("Inv", self.pre.variables()), _apply("Inv", self.post.variables())
        safety = [f"(assert {inv_pre})"] + (["(assert Trans)"] if self.condition in STEP_CONDITIONS else [])
        return {
            "initiation": ["(assert Init)", f"(assert (not {inv_pre}))"],
            "consecution": [f"(assert {inv_pre})", "(assert Trans)", f"(assert (not {inv_post}))"],
            "safety": safety + ["(assert Bad)"],
        }


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


_MODELS_SIZE = 4096
_models: dict = {}
_BASES_SIZE = 256
_bases: dict = {}


def model_facts(policy, condition: str, free_policy: bool, assume=()) -> ModelFacts:
    """The regenerated model's facts, remembered per free-policy shape: with the policy abstracted only its shape
    enters the model."""
    if not free_policy:
        return Encoding(policy, condition, free_policy, assume).facts()

    shape = (free_shape(policy, 0.0), tuple(assume))
    key = shape + (condition,)
    if key not in _models:
        if len(_models) >= _MODELS_SIZE:
            _models.clear()
        if len(_bases) >= _BASES_SIZE:
            _bases.clear()
        if shape not in _bases:
            # The step encoding is most of the cost, and it does not depend on the condition.
            _bases[shape] = Encoding(policy, condition, True, assume)
        _models[key] = _bases[shape].for_condition(condition).facts()
    return _models[key]


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
    _models.clear()
    _bases.clear()
    _confirmed.clear()


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
