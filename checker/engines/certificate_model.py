"""A certificate's model: the parametric model of one policy and condition as z3 terms and SMT-LIB 2 text (Init,
Trans, Bad), the Inv definition's signature and the three obligations; remembered per free-policy shape."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import z3

from prunecheck.spec.conditions import STEP_CONDITIONS
from prunecheck.symbolic.conditions import pair_violation
from prunecheck.symbolic.model import ActionSort
from prunecheck.symbolic.parametric import AllocSort, GhostSort, PairModel, free_view
from prunecheck.symbolic.terms import KindSort, NamespaceSort, RoleSort

from prunecheck.checker.engines.smtlib import Signature

DATATYPES = (KindSort, NamespaceSort, ActionSort, GhostSort, AllocSort)
ROLE_DATATYPES = (KindSort, NamespaceSort, RoleSort, ActionSort, GhostSort, AllocSort)  # a model with roles


def free_shape(policy, timeout: float, rlimit: int = 0) -> tuple:
    """What a proof with the policy abstracted depends on: the policy's free_view (all its free pair model can read,
    since that model is built from the view alone) and the bounds."""
    return free_view(policy), timeout, rlimit


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


def _datatypes(sorts) -> list:
    out = []
    for sort in sorts:
        ctors = " ".join(f"({sort.constructor(i).name()})" for i in range(sort.num_constructors()))
        out.append(f"(declare-datatypes (({sort.name()} 0)) (({ctors})))")
    return out


def _apply(name: str, variables) -> str:
    return f"({name} {' '.join(v.sexpr() for v in variables)})"


def by_construction(policy, condition: str) -> bool:
    """The condition's violation term on the pair model, with the policy free, simplifies to False under the
    policy's deployment: it holds for every policy by construction, not by a proof (z3.simplify, no solver)."""
    return z3.is_false(z3.simplify(Encoding(policy, condition, True).bad))


class Encoding:
    """The parametric model of one policy and condition, as z3 terms and as SMT-LIB text."""

    def __init__(self, policy, condition: str, free_policy: bool, assume=()):
        """With `assume`, the model is restricted to the runs along which those conditions hold at every step."""
        self.condition, self.free_policy, self.assume = condition, free_policy, tuple(assume)
        self.model = PairModel(policy, free_policy)
        model = self.model
        self.pre, self.act = model.state("pre"), model.action("a")
        self.post, self.param = model.state("post"), model.state("p")
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
        return pair_violation(self.model, condition, self.pre if state is None else state, self.step)

    def datatypes(self) -> tuple:
        """The enumeration sorts the model text declares: Role only in a model with roles."""
        return ROLE_DATATYPES if self.model.roles else DATATYPES

    def model_text(self) -> str:
        if getattr(self, "_text", None) is None:
            self._text = self._model_text()
        return self._text

    def _model_text(self) -> str:
        variables = self.pre.variables() + self.act.variables() + self.post.variables()
        lines = ["(set-logic ALL)"] + _datatypes(self.datatypes()) + [_declare(v) for v in variables]
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
        sorts = self.datatypes()
        ctors = {sort.constructor(i).name(): sort.name() for sort in sorts for i in range(sort.num_constructors())}
        model = self.pre.variables() + self.act.variables() + self.post.variables()
        names = frozenset([v.sexpr() for v in model] + ["Init", "Trans", "Bad"] + [s.name() for s in sorts])
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


def clear_models() -> None:
    _models.clear()
    _bases.clear()
