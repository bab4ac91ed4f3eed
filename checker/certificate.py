"""Proof certificates: the parametric model and an inductive invariant in SMT-LIB 2, re-checked by cvc5.

A certificate holds the policy, the condition, the model text (Init, Trans, Bad) and the invariant (Inv).
`recheck` regenerates the model text from the policy and requires it to be identical, then builds the three
obligations itself (initiation, consecution, safety) and asks cvc5; only `unsat` is a pass.
"""

from __future__ import annotations

import copy

import json
from dataclasses import dataclass

import z3

from prunecheck.spec.model import ActionSort
from prunecheck.spec.parametric import AllocSort, GhostSort, PairAction, PairModel, PairState
from prunecheck.spec.symbolic import KindSort, NamespaceSort

from .solver import new_solver, query

FORMAT = "prunecheck-certificate/1"
STEP_CONDITIONS = ("C2", "C3")
OBLIGATIONS = ("initiation", "consecution", "safety")
DATATYPES = (KindSort, NamespaceSort, ActionSort, GhostSort, AllocSort)


@dataclass(frozen=True)
class Obligation:
    """One obligation's verdict from each solver that was asked."""

    name: str
    cvc5: str
    z3: str


@dataclass(frozen=True)
class Recheck:
    """The re-check of a certificate: confirmed by cvc5, by z3 alone (cvc5 gave up), or refuted."""

    status: str
    obligations: tuple
    reason: str = ""


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


_ANSWERS_SIZE = 128
_answers: dict = {}


def _cvc5(prefix: str, queries: list, timeout_ms: int) -> list:
    """cvc5's answer to each query (assertions) on top of `prefix`, in one incremental solver: the model is parsed
    once, each query between push and pop. Decisive answers are remembered per exact script for this process (a
    certificate whose policy is abstracted has the same text for every policy of a deployment)."""
    key = (prefix, tuple(queries), timeout_ms)
    if key in _answers:
        return list(_answers[key])
    answers = _ask_cvc5(prefix, queries, timeout_ms)
    if all(a in ("sat", "unsat") for a in answers):
        if len(_answers) >= _ANSWERS_SIZE:
            _answers.clear()
        _answers[key] = tuple(answers)
    return answers


def _ask_cvc5(prefix: str, queries: list, timeout_ms: int) -> list:
    try:
        import cvc5
    except ImportError:
        return ["unavailable"] * len(queries)
    tm = cvc5.TermManager()
    solver = cvc5.Solver(tm)
    solver.setOption("tlimit-per", str(timeout_ms))
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


def _z3(script: str, timeout_ms: int) -> str:
    solver = new_solver(timeout_ms)
    try:
        solver.from_string(script)
    except z3.Z3Exception as exc:
        return f"error: {exc}"
    return query(solver).status


def recheck(document: dict, encoding: Encoding, timeout_ms: int = 10000) -> Recheck:
    """Check the certificate against a freshly built encoding of its policy; cvc5 first, z3 only if cvc5 gives up."""
    if document.get("format") != FORMAT:
        return Recheck("refuted", (), f"not a {FORMAT} document")
    if document.get("model_smt2") != encoding.model_text():
        return Recheck("refuted", (), "the certificate's model is not the model of its policy and condition")
    invariant = document.get("invariant_smt2")
    if not isinstance(invariant, str) or not invariant.startswith("(define-fun Inv "):
        return Recheck("refuted", (), "no invariant definition")
    results = []
    prefix = document["model_smt2"] + invariant
    obligations = encoding.obligations()
    answers = _cvc5(prefix, ["\n".join(a) for a in obligations.values()], timeout_ms)
    for (name, asserts), by_cvc5 in zip(obligations.items(), answers):
        script = prefix + "\n".join(asserts) + "\n(check-sat)\n"
        by_z3 = _z3(script, timeout_ms) if by_cvc5 != "unsat" else "not asked"
        results.append(Obligation(name, by_cvc5, by_z3))
    if all(o.cvc5 == "unsat" for o in results):
        return Recheck("confirmed", tuple(results), "cvc5 proves every obligation")
    refuted = [o.name for o in results if "sat" == o.cvc5 or "sat" == o.z3 or o.cvc5.startswith("error")]
    if refuted:
        return Recheck("refuted", tuple(results), f"obligation {', '.join(refuted)} fails")
    if all(o.cvc5 == "unsat" or o.z3 == "unsat" for o in results):
        return Recheck("z3-only", tuple(results), "cvc5 gave up on some obligation; z3 proves them all")
    return Recheck("unchecked", tuple(results), "no solver proves every obligation")


def dumps(document: dict) -> str:
    return json.dumps(document, indent=1) + "\n"


# --- BEGIN stub of confirm_certificate (helper "cache", issue 11 item 4) -------------------------------------------
# A minimal stand-in so that the report cache can be built and tested on its own branch; at merge the lead keeps the
# version of the helper that rewrites this module (same signature and meaning), and drops this one.

_confirmed: dict = {}


def confirm_certificate(text: str, policy, condition: str, timeout_ms: int = 10000) -> Recheck:
    """The re-check of a certificate (JSON text) as a proof of `condition` for exactly `policy`; memoised by content."""
    import hashlib

    from .check import policy_hash

    key = (hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), policy_hash(policy), condition)
    if key not in _confirmed:
        outcome = _confirm(text, policy, condition, timeout_ms)
        if outcome.status in ("confirmed", "refuted"):
            _confirmed[key] = outcome
        return outcome
    return _confirmed[key]


def _confirm(text: str, policy, condition: str, timeout_ms: int) -> Recheck:
    from .check import policy_document

    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return Recheck("refuted", (), "not JSON")
    if not isinstance(document, dict):
        return Recheck("refuted", (), "not a JSON object")
    if document.get("policy") != policy_document(policy):
        return Recheck("refuted", (), "the certificate is for another policy")
    if document.get("condition") != condition:
        return Recheck("refuted", (), f"the certificate is for {document.get('condition')!r}, not {condition}")
    if document.get("assume") != [] or not isinstance(document.get("free_policy"), bool):
        return Recheck("refuted", (), "the certificate assumes other conditions or has no free_policy flag")
    outcome = recheck(document, Encoding(policy, condition, document["free_policy"]), timeout_ms)
    if outcome.status != "confirmed":
        return Recheck("refuted" if outcome.status == "refuted" else "unchecked", outcome.obligations, outcome.reason)
    return outcome
# --- END stub of confirm_certificate -------------------------------------------------------------------------------
