"""Step templates: one step of the model built once through z3py, then instantiated per step by substitution in z3."""

from __future__ import annotations

import z3
from z3.z3 import _to_expr_ref
from z3.z3core import Z3_substitute

from prunecheck.spec.refusal import refusal_key
from prunecheck.symbolic.terms import Frac

LABEL = "template"
CACHE_SIZE = 64
_templates: dict = {}


def _wrap(ast, like: z3.ExprRef, ctx) -> z3.ExprRef:
    # Same sort as the template term, so the same Python class, except that a variable may become a numeral.
    if isinstance(like, z3.ArithRef):
        return _to_expr_ref(ast, ctx)
    return like.__class__(ast, ctx)


def state_vars(s) -> list:
    """A state's clock and field terms, in a fixed order."""
    return [s.clock] + [v for values in s.fields.values() for v in values]


class Substitution:
    """A fixed map from constants to terms, applied inside z3 (one C call per term, no Python term walk)."""

    def __init__(self, sources: list, targets: list):
        self.ctx = z3.main_ctx()
        self.size = len(sources)
        self.sources = (z3.Ast * self.size)(*(x.as_ast() for x in sources))
        self.targets = (z3.Ast * self.size)(*(y.as_ast() for y in targets))
        self._alive = (sources, targets)

    def __call__(self, term):
        if term is None:
            return None
        ast = Z3_substitute(self.ctx.ref(), term.as_ast(), self.size, self.sources, self.targets)
        return _wrap(ast, term, self.ctx)


def template_key(model) -> tuple:
    """What a step's terms depend on besides the policy's per-slot terms and its budget's value."""
    policy = model.policy
    rank_has_den = policy.rank is not None and model.policy_terms(model.generic())[0][1].den is not None
    return (model.dep, model.n, model.tag, model.token_domain, policy.rank is not None, rank_has_den,
            policy.budget is not None, model.accelerate, model.repeat_domain, model.clock_targets,
            stage_key(policy), policy.effect, policy.placeholder_tokens, model.masking, policy.pairs,
            policy.keep if policy.pairs == "together" or policy.start_on is not None else None, policy.summary_role,
            policy.start_on, policy.summary_at) + ((model.names,) if model.names else ()) + refusal_key(policy) + (
        (model.triggers, model.events) if model.triggers else ())


def stage_key(policy) -> tuple:
    """What the compaction stage builds into a template: the trigger and target themselves (over the template's
    pre-state and budget placeholder; `until` sees the totals left after the candidates ahead), and the order.
    Empty for a policy without either, whose template is shared as before."""
    if policy.when is None and policy.until is None:
        return ()
    return (policy.when, policy.until, policy.order)


def clear_templates() -> None:
    """Forget every step template (and its lemmas) built in this process."""
    _templates.clear()


def step_template(model) -> "StepTemplate":
    """The shared template for models of this shape (process-wide: it does not depend on the policy)."""
    key = template_key(model)
    template = _templates.get(key)
    if template is None:
        if len(_templates) >= CACHE_SIZE:
            _templates.clear()
        template = _templates[key] = StepTemplate(model, key)
    return template


class StepTemplate:
    """Model.encode_step over a generic pre-state and action, with the policy's per-slot terms and budget left as
    placeholder constants; instantiating it costs one C call per output term instead of building every term."""

    def __init__(self, model, key: tuple):
        _, n, tag, _, ranked, rank_has_den, budgeted = key[:7]
        self.pre = model.generic_state(LABEL)
        self.act = model.action(LABEL)
        self.post = model.state(LABEL + "_post")
        self.evict = [z3.Bool(f"{tag}evict{i}@{LABEL}") for i in range(n)]
        self.rank_num = [z3.Int(f"{tag}rank_num{i}@{LABEL}") for i in range(n)] if ranked else []
        self.rank_den = [z3.Int(f"{tag}rank_den{i}@{LABEL}") for i in range(n)] if rank_has_den else []
        self.budget = z3.Int(f"{tag}budget@{LABEL}") if budgeted else None
        terms = [(self.evict[i], Frac(self.rank_num[i], self.rank_den[i] if rank_has_den else None) if ranked
                  else None) for i in range(n)]
        self.picks: list = []
        self.lemmas: dict = {}
        self.step = model.build_step(self.pre, self.act, self.post, self.picks, terms, self.budget)
        self.sources = (state_vars(self.pre) + self.act.variables() + self.picks + self.evict + self.rank_num + self.rank_den
                        + ([self.budget] if self.budget is not None else []))

    def instantiate(self, model, s, a, t):
        """Fills t's fields with the step's terms over s and a, and returns the step's StepTerms."""
        terms = model.policy_terms(s)
        targets = (state_vars(s) + a.variables()
                   + [z3.Const(f"{c.decl().name().rsplit('@', 1)[0]}@{s.k}", c.sort()) for c in self.picks]
                   + [evict for evict, _ in terms]
                   + ([rank.num for _, rank in terms] if self.rank_num else [])
                   + ([rank.den for _, rank in terms] if self.rank_den else [])
                   + ([z3.IntVal(model.policy.budget)] if self.budget is not None else []))
        sub = Substitution(self.sources, targets)
        if z3.is_int_value(s.clock) and not model.accelerate:
            t.clock = z3.IntVal(s.clock.as_long() + 1)
        else:
            t.clock = sub(self.post.clock)
        for name, values in self.post.fields.items():
            t.fields[name] = [sub(v) for v in values]
        step = self.step
        return step.__class__([sub(c) for c in step.constraints], sub(step.reverted), sub(step.fresh),
                              [sub(e) for e in step.evicted])
