"""Helpers the test modules share: the parse-error position check, runs of the z3 model pinned to the runtime, and
runs of the runtime projected onto the pair model."""

import dataclasses
import io

import z3

import itf_py  # in the test extra, not skipped when absent: the promise that itf-py reads our traces rests on it
from hypothesis import strategies as st

from prunecheck.checker.cli import main
from prunecheck.checker.engines.bmc import check_bounded
from prunecheck.checker.engines.certificate import Status, confirm_certificate
from prunecheck.checker.engines.explicit import DEFAULT_TOKENS, domains_for, explore
from prunecheck.checker.engines.invariants import inductive_lemmas, lemma_terms
from prunecheck.checker.result import Verdict
from prunecheck.checker.engines.replay import as_modelled, decode_state
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.spec.conditions import (STATE_CONDITIONS, STEP_CONDITIONS, applicable, lost_content,
                                       rewritten_log_entries, state_violations, transition_violations, violations)
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import DEPLOYMENT_CHOICES, ROLES, Deployment, masks, mentioned_names, name_code
from prunecheck.spec.runtime import (
    REVERSIBLE, Append, Audit, Compact, Edit, Pin, Read, State, Undo, Unpin, addressable, enabled, enabled_actions,
    is_candidate, is_pair, positions, present, status, step,
)
from prunecheck.spec.refusal import named
from prunecheck.spec.state import aggregate_values
from prunecheck.spec.actions import action_args
from prunecheck.strategies import CORE_CHOICES
from prunecheck.symbolic.conditions import pair_violation, violation_at
from prunecheck.symbolic.evidence_terms import TOMBSTONE_FIELD
from prunecheck.symbolic.model import ACT, Model
from prunecheck.symbolic.pair_evidence import EVIDENCE_FIELDS
from prunecheck.symbolic.parametric import DEFAULTS, FIELDS, GHOSTS, MASKED_FIELD, ROLE_FIELD, SUMMARY_FIELD, PairModel
from prunecheck.symbolic.terms import ENUM_CODES

from conftest import CLI_BOUNDS, HOUR, RLIMIT, ROOT


def project_sources() -> list:
    """The project's own Python files: the package's (root modules and spec, symbolic, checker, proofs) and the
    benchmarks; never a virtual environment or anything else that happens to sit in the clone."""
    return sorted(ROOT.glob("*.py")) + sorted(p for folder in ("spec", "symbolic", "checker", "proofs", "benchmarks")
                                              for p in (ROOT / folder).rglob("*.py"))


def at(err: PolicySyntaxError, line: int, col: int, *words: str) -> None:
    """The parse error is at line:col and its message names every word."""
    assert (err.line, err.col) == (line, col), str(err)
    for word in words:
        assert word in err.message, str(err)


N = 5

# Policies that read every positional attribute (spec/SPEC.md §1b), with and without rank and roles.
POSITIONAL = [
    "evict: from_end >= 2 and position >= 1 or turn >= 1 and from_end_in_role < 2 or tokens_after > window_spans + 2",
    "evict: role == 'tool_result' and from_end_in_role >= 1 or kind == 'record' and turn == 0\n"
    "rank: position - tokens_after\nbudget: 4",
    "evict: window_spans > 3 and from_end >= 1",
]

POLICIES = [
    "evict: not pinned and recency * frequency < 0.25",
    "evict: kind != 'record' and idle > 1\nbudget: 6",
    "evict: kind in ['tool_output', 'record', 'rationale'] or tokens >= 3\nrank: recency * frequency - tokens\nbudget: 5",
    "evict: namespace == 'window' and min(age, idle) >= 1 and max(reads, 1) / (1 + age) <= 0.5",
    "evict: edited or abs(tokens - 2) == 1\nrank: 0 - age\nbudget: 4",
    "evict: window_tokens > 4 and step >= 2 and reads == 0",
    "evict: kind == 'diff'\nbudget: 4",
    "evict: false\nrank: tokens\nbudget: 3",
    "evict: 1 / tokens >= 0.5 or tokens / tokens < 1",
    "evict: (kind if reads > 0 else 'message') in ['message', 'record'] and namespace == 'window'",
    "evict: role == 'tool_result' and age > 1",
    "evict: role in ['user', 'system'] or (role != 'assistant' and kind == 'record')\nrank: tokens\nbudget: 4",
    POSITIONAL[0],
    # effects: masking in place, a placeholder larger than some spans (the ranked walk is then not monotone)
    "evict: not masked and kind != 'message'\neffect: mask",
    "evict: kind in ['record', 'tool_output', 'summary'] or masked\nrank: 0 - tokens\nbudget: 4\neffect: mask\n"
    "placeholder_tokens: 3",
    "evict: role == 'tool_call' or tokens >= 3\npairs: together",
    "evict: kind != 'record'\nrank: 0 - tokens\nbudget: 3\npairs: together",
]

# Policies that summarise (spec/SPEC.md 4d): positions and roles, a ranked walk, order newest, pairs, folding.
SUMMARY_POLICIES = [
    "evict: from_end >= 2 and position >= 1 or turn >= 1 and from_end_in_role < 2 or tokens_after > window_spans + 2\n"
    "effect: summarise",
    "evict: kind == 'summary' or role == 'tool_result' and from_end_in_role >= 1\nrank: position - tokens_after\n"
    "budget: 4\neffect: summarise\nsummary_role: assistant\nplaceholder_tokens: 2",
    "evict: kind != 'record'\nuntil: window_spans <= 2\norder: newest\neffect: summarise\nplaceholder_tokens: 2",
    "evict: role == 'tool_call' or kind == 'summary'\npairs: together\neffect: summarise\nsummary_role: system",
    "evict: window_spans > 3 and from_end >= 1\neffect: summarise",
]

# Policies with the compaction stage's keys (keep, when, until, order; spec/SPEC.md 4b).
STAGE_POLICIES = [
    "evict: kind != 'record'\nwhen: window_spans > 2",
    "evict: kind != 'record'\nuntil: window_tokens <= 4",
    "evict: kind != 'record'\nuntil: window_spans <= 2\norder: newest",
    "evict: true\nkeep: kind == 'record' or tokens >= 3\nuntil: window_tokens <= 3",
    "evict: true\nrank: tokens\nbudget: 4\nwhen: window_tokens > 5",
    "evict: kind != 'record'\nrank: 0 - tokens\nwhen: step >= 3\nuntil: window_spans + window_tokens <= 6",
    "evict: true\nkeep: role == 'system'\norder: newest",
    "evict: true\nbudget: 5\nwhen: window_tokens > budget\nuntil: window_tokens * 2 <= budget",
    "evict: not masked\nuntil: window_tokens <= 4\neffect: mask\nplaceholder_tokens: 2",
    "evict: role == 'tool_result'\nkeep: from_end < 1\npairs: together\nuntil: window_spans <= 2",
    "evict: tokens >= 2 and not masked\nuntil: window_tokens <= 5\neffect: cut\nplaceholder_tokens: 1",
]

# Policies with role boundaries (start_on, spec/SPEC.md 4b): after a plain walk, a trigger, a target with pairs, a
# ranked masking walk, and a boundary that orphans results.
START_ON = [
    "evict: position < 1\nstart_on: user",
    "evict: kind == 'summary'\nkeep: role == 'system'\nwhen: window_spans > 2\nstart_on: user",
    "evict: true\nuntil: window_spans <= 3\npairs: together\nstart_on: assistant",
    "evict: tokens >= 2\nrank: 0 - tokens\nbudget: 3\neffect: mask\nstart_on: user",
    "evict: false\nstart_on: tool_result",
]

# Policies with aggregates (spec/SPEC.md §1e) and whole-number arithmetic (§1d): every aggregate, in evict, keep,
# rank and when, with positions, roles and masks beside them.
AGGREGATE_POLICIES = [
    "evict: count_newer(role == 'user') >= 1 and count_older(kind != 'record') % 2 == 0\npairs: together",
    "evict: role == 'tool_result' and tokens_newer(role == 'tool_result') >= 2\nwhen: tokens_of(role == 'tool_result') > 3",
    "evict: position < window_spans // 2 or tokens_older(not pinned) > tokens\nkeep: count(kind == 'record') >= 2",
    "evict: true\nrank: count_newer(edited) - tokens_older(true) // 2\nbudget: 4",
    "evict: not masked and count_older(masked) >= 1 or from_end % 3 == 2\neffect: mask\nplaceholder_tokens: 2",
    "evict: kind != 'record' and tokens_newer(true) >= 2\nwhen: count(role != 'user') >= 2\neffect: summarise",
]


# Policies whose compactions the host fires on events and reported usage (spec/SPEC.md §4g), with a target, a summary
# and a role boundary beside them.
TRIGGER_POLICIES = [
    "evict: from_end >= 1\npairs: together\nwhen: event == 'overflow' or reported_tokens > 3",
    "evict: kind != 'record'\nuntil: window_tokens <= 2\nwhen: event in ['run_end', 'overflow'] and window_spans > 1",
    "evict: position < 1\nstart_on: user\nwhen: event != '' and reported_tokens >= window_tokens",
    "evict: from_end >= 1\neffect: summarise\nwhen: count(role == 'user') >= 2 or event == 'overflow'",
]


def _deployments(choices) -> st.SearchStrategy:
    return st.builds(Deployment, **{key: st.sampled_from(values) for key, values in choices.items()})


# The default tier draws the core settings; issue 16's (strategies.EXTENDED_CHOICES) are drawn by their own tests.
deployments = _deployments(CORE_CHOICES)
extended_deployments = _deployments(DEPLOYMENT_CHOICES)

# Policies that read tool names and tags (spec/SPEC.md 1c); their runs also write names no policy mentions ("zz").
NAMED = [
    "evict: tool != 'edit' and tag not in ['agents_md']",
    "evict: role == 'tool_result' and tool == 'browse' or tag == ''\nrank: tokens\nbudget: 4",
    "evict: tool in ['browse', ''] and from_end >= 1\npairs: together",
    "evict: tag == 'agents_md'\nkeep: tool == 'edit'\nuntil: window_spans <= 2",
]
RUN_NAMES = ("", "browse", "edit", "agents_md", "zz")
named_deployments = st.builds(Deployment, **{key: st.sampled_from(v) for key, v in CORE_CHOICES.items()},
                              record_tool=st.sampled_from(RUN_NAMES))


def run_actions(policy, actions) -> tuple:
    """(the state, the transitions) of the runtime running actions from the empty window."""
    state, transitions = State(), []
    for action in actions:
        transitions.append(step(policy, state, action))
        state = transitions[-1].after
    return state, transitions


def assert_confirmed(policy, results) -> None:
    """cvc5 confirms each result's certificate for the policy (bounded by rlimit)."""
    for result in results:
        recheck = confirm_certificate(result.certificate, policy, result.condition, timeout_ms=int(HOUR * 1000),
                                      rlimit=RLIMIT)
        assert recheck.status is Status.CONFIRMED, recheck.reason


def run_cli(*argv):
    """The command line in-process; every `check` bounded by resources, not seconds."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv) + (CLI_BOUNDS if argv[:1] == ("check",) else []), out, err)
    return code, out.getvalue(), err.getvalue()


def cli_error(path, text: str, at: str) -> str:
    """The one line `check` writes for the bad policy text (written at path) with exit code 2, located at `at`."""
    path.write_text(text)
    err = io.StringIO()
    assert main(["check", str(path), *CLI_BOUNDS], io.StringIO(), err) == 2
    assert err.getvalue().count("\n") == 1 and f"{path}{at}" in err.getvalue(), err.getvalue()
    return err.getvalue()


def unroll(model, actions, pin) -> tuple:
    """(a solver, the states): the model unrolled from its initial state over one step per action, each step's action
    constrained by pin(model, a, action)."""
    states, solver = [model.state(0)], z3.Solver()
    solver.add(model.encode_init(states[0]))
    for k, action in enumerate(actions):
        a = model.action(k)
        states.append(model.state(k + 1))
        solver.add(model.encode_step(states[k], a, states[k + 1]).constraints + list(pin(model, a, action)))
    return solver, states


def fresh_check(constraints, rlimit=RLIMIT):
    """z3's answer on the constraints, asked in a new z3 context with the resource count bounded: the terms are
    numbered afresh, so neither the answer's cost nor whether it fits in rlimit depends on what this process solved
    before (on the shared context, one such check ran for minutes late in a test worker and in a second alone)."""
    ctx = z3.Context()
    solver = z3.Solver(ctx=ctx)
    solver.set("rlimit", rlimit)
    solver.add([c.translate(ctx) for c in constraints])
    return solver.check()


def model_policy(text, deployment):
    """A policy named t from the text of its other keys, under deployment."""
    return parse_policy_text(f"name: t\n{text}\n", "t.yaml", deployment)


@st.composite
def runs(draw, max_steps=8, policies=None):
    """A policy of `policies` (default POLICIES) under a drawn deployment and a run of enabled actions on it."""
    text = draw(st.sampled_from(policies or POLICIES))
    policy = model_policy(text, draw(named_deployments if text in NAMED else deployments))
    names = RUN_NAMES if mentioned_names(policy) else ("",)  # other policies' runs stay as they were
    state, actions = State(), []
    for _ in range(draw(st.integers(1, max_steps))):
        # Besides each distinct outcome's representative, any host budget at all.
        anyhow = Compact(draw(st.integers(1, 12)))  # refused only where a summary finds no free slot
        options = enabled_actions(policy, state, N, token_choices=(1, 2, 3, 4), roles=ROLES, tools=names,
                                  tags=names) + ((anyhow,) if enabled(policy, state, anyhow, N) else ())
        name = draw(st.sampled_from(sorted({a.name for a in options})))
        action = draw(st.sampled_from([a for a in options if a.name == name]))
        actions.append(action)
        state = step(policy, state, action, N).after
    return policy, tuple(actions)


def pin_action(model, a, action):
    """Constraints fixing the model's action a to the runtime action."""
    out = [a.act == ACT[action.name]]
    args = action_args(action)
    for key in ("target", "span", "edit"):
        if key in args:
            out.append(a.arg == model.slots[args[key]])
    if "kind" in args:
        out.append(a.kind == ENUM_CODES["kind"][args["kind"]])
    if "tokens" in args:
        out.append(a.tokens == args["tokens"])
    if isinstance(action, Append):
        out.append(a.role == ENUM_CODES["role"][action.role])
        out += [getattr(a, attr) == name_code(table, getattr(action, attr)) for attr, table in model.names]
    if "mode" in args:
        out.append(a.destroy == (args["mode"] == "destroy"))
    if isinstance(action, Compact):
        out.append(a.hosted == (action.budget is not None))
        out.extend([a.host == action.budget] if action.budget is not None else [])
    out += trigger_pins(a, action)
    # an edit's or compaction's citations (evidence: on; spec/SPEC.md §6d): none in a model without evidence
    out += [c == (j in getattr(action, "cites", ())) for j, c in enumerate(a.cites)]
    return out


def trigger_pins(a, action) -> list:
    """A model action's trigger arguments (spec/SPEC.md §4g) as the runtime action has them: the compaction's event and
    reported usage, 0 for any other action (either model's action: both name them alike)."""
    out = []
    if getattr(a, "event", None) is not None:
        out.append(a.event == (name_code(a.events, action.event) if isinstance(action, Compact) else 0))
    if getattr(a, "reported", None) is not None:
        out.append(a.reported == (action.reported_tokens if isinstance(action, Compact) else 0))
    return out


def agree(policy, actions, with_lemmas, n=N):
    """The model, pinned to actions (with its proved lemmas), reaches the runtime's states and violations."""
    model = Model(policy, n)
    invariant = inductive_lemmas(model, HOUR, RLIMIT) if with_lemmas else None
    solver = z3.Solver()
    states, syms, steps = [model.state(0)], [], []
    solver.add(model.encode_init(states[0]))
    for k, action in enumerate(actions, start=1):
        a = model.action(k - 1)
        states.append(model.state(k))
        steps.append(model.encode_step(states[k - 1], a, states[k]))
        syms.append(a)
        solver.add(steps[-1].constraints)
        solver.add(pin_action(model, a, action))
        if invariant is not None:
            solver.add(lemma_terms(model, states[k], invariant))
    assert solver.check() == z3.sat, "the model refuses a run the runtime accepts"
    m = solver.model()
    state = State()
    assert decode_state(m, states[0]) == state
    assert not state_violations(policy, state)
    for k, action in enumerate(actions, start=1):
        transition = step(policy, state, action, n)
        state = transition.after
        assert decode_state(m, states[k]) == as_modelled(policy, state), f"state {k} after {action}"
        expected = violations(policy, transition)
        symbolic = {c: violation_at(model, c, states, syms, steps, k) for c in applicable(policy)}
        got = {c for c, term in symbolic.items() if z3.is_true(m.eval(term, model_completion=True))}
        assert got == set(expected), f"step {k} {action}: model says {sorted(got)}, runtime {sorted(expected)}"


WINDOW = Deployment(records="window", rationale="window", pins="self", audit="policy", undo="blind")
TARGETED = [
    # truncation is oldest-first, after the policy's own evictions
    ("evict: kind == 'diff'\nbudget: 4", Deployment(), (Append("message", 3), Append("message", 3), Compact())),
    ("evict: false\nbudget: 3", WINDOW, (Append("message", 1), Append("diff", 1), Edit(0, "destroy"), Compact())),
    # ranked eviction stops as soon as the window fits; ties go to the lower id
    ("evict: true\nrank: 0\nbudget: 4", Deployment(),
     (Append("message", 2), Append("message", 2), Append("message", 2), Compact())),
    ("evict: kind != 'record'\nrank: 0 - tokens\nbudget: 5", WINDOW,
     (Append("message", 1), Append("tool_output", 4), Append("diff", 2), Compact())),
    # undo restores an evicted target; stale undo is a merge (versioned) or a stale revert (blind)
    ("evict: kind == 'summary'", Deployment(), (Append("message", 1), Edit(0, "transform"), Compact(), Undo(1))),
    ("evict: false", Deployment(), (Append("message", 1), Edit(0, "transform"), Edit(0, "destroy"), Undo(1))),
    ("evict: false", WINDOW, (Append("message", 1), Edit(0, "transform"), Edit(0, "destroy"), Undo(1))),
    # the self-certified status misses an evicted record whose rationale is gone too
    ("evict: kind in ['record', 'rationale']", WINDOW, (Append("message", 1), Edit(0, "destroy"), Compact(), Audit())),
    # a host budget truncates without a policy budget, and below a policy budget (never above it)
    ("evict: false", WINDOW, (Append("message", 3), Edit(0, "destroy"), Compact(2))),
    ("evict: false\nbudget: 5", WINDOW, (Append("message", 3), Append("message", 2), Compact(9), Compact(1))),
    ("evict: true\nrank: tokens\nbudget: 4", WINDOW,
     (Append("message", 3), Append("message", 2), Append("message", 1), Compact(1))),
    # pins and reads
    ("evict: not pinned and reads == 0", WINDOW,
     (Append("message", 1), Edit(0, "transform"), Pin(1), Read(2), Unpin(1), Compact())),
    # records and rationale take the deployment's record_role; an edit and its undo keep the target's role
    ("evict: role == 'tool_result'", Deployment(records="window", rationale="window", record_role="tool_result"),
     (Append("message", 1, "tool_call"), Append("message", 1, "tool_result"), Edit(0, "transform"), Compact(),
      Undo(2))),
    ("evict: role == 'tool_result' or role == 'system'", Deployment(records="window", record_role="assistant"),
     (Append("message", 1, "assistant"), Edit(0, "destroy"), Undo(1), Compact())),
    # evicted: logged moves what a compaction removes to the log, alive; undo still finds the record there
    ("evict: kind == 'record'\nbudget: 1", Deployment(records="window", evicted="logged"),
     (Append("message", 2), Edit(0, "destroy"), Append("diff", 1), Compact(), Undo(1), Compact(1))),
    # effect: mask keeps the span in the window with its placeholder; a masked record makes undo irreversible
    ("evict: kind in ['record', 'summary']\neffect: mask\nplaceholder_tokens: 2", WINDOW,
     (Append("message", 3), Edit(0, "transform"), Compact(), Undo(1), Audit())),
    ("evict: kind == 'summary'\neffect: mask", Deployment(),
     (Append("message", 3), Edit(0, "transform"), Compact(), Undo(1), Compact(1))),
    # a ranked walk whose masks grow a span: it stops at the first point the window fits
    ("evict: true\nrank: tokens\nbudget: 4\neffect: mask\nplaceholder_tokens: 3", Deployment(),
     (Append("message", 1), Append("message", 4), Append("message", 2), Compact(), Compact(2))),
    # tool-call pairs: split apart (T1), taken together (the closure), the closure after a ranked walk
    ("evict: role == 'tool_result'", Deployment(),
     (Append("message", 1, "tool_call"), Append("message", 2, "tool_result"), Append("message", 1), Compact())),
    ("evict: role == 'tool_result'\npairs: together", WINDOW,
     (Append("message", 1, "tool_call"), Append("message", 2, "tool_result"), Edit(0, "transform"), Compact(1))),
    ("evict: true\nrank: 0 - tokens\nbudget: 3\npairs: together", Deployment(),
     (Append("message", 2, "tool_call"), Append("message", 2, "tool_result"), Append("message", 1), Compact())),
    # evicted: tombstone: evicted, masked, truncated and cut-short summaries keep a tombstone, which an undo leaves;
    # under destroyed a truncation loses content without evidence (M1)
    ("evict: kind == 'summary'", Deployment(evicted="tombstone", evidence="on"),
     (Append("message", 2), Edit(0, "transform"), Compact(), Undo(1), Compact(1))),
    ("evict: kind in ['record', 'summary']\neffect: mask", Deployment(records="window", evicted="tombstone",
                                                                   evidence="on"),
     (Append("message", 3), Edit(0, "transform"), Compact(), Undo(1), Compact(1))),
    ("evict: kind == 'tool_output'\neffect: summarise", Deployment(evicted="tombstone", evidence="on"),
     (Append("tool_output", 2), Compact(1))),
    ("evict: false", Deployment(evidence="on"), (Append("message", 2), Compact(1))),
    # a record evicted under tombstone is gone (C2), as under destroyed: a tombstone is no record
    ("evict: kind == 'record'", Deployment(records="window", evicted="tombstone"),
     (Append("message", 1), Edit(0, "transform"), Compact())),
]


# The differential comparison of the two engines (tests/test_differential.py), bounded by depth, span slots, explored
# states and z3's rlimit, never by the clock.
DIFF_DEPTH, DIFF_SPANS, DIFF_STATES, DIFF_RLIMIT = 4, 4, 30_000, 200_000_000


def verdict_summary(results):
    """Per condition: its verdict, and its depth where violated."""
    return {r.condition: (r.verdict, r.depth if r.verdict == Verdict.VIOLATED else None) for r in results}


def explore_within(policy, depth, domains, states=DIFF_STATES, spans=DIFF_SPANS):
    """The explicit search to `depth`, or to the deepest level it completes within `states` states."""
    results = explore(policy, depth, spans, domains=domains, time_limit=HOUR, max_states=states)
    stopped = [r.depth for r in results if r.reason.clauses[0].state_limit is not None]
    if stopped:
        depth = stopped[0]
        results = explore(policy, depth, spans, domains=domains, time_limit=HOUR, max_states=states)
    return depth, results


def engines_agree(policy, depth=DIFF_DEPTH, tokens=DEFAULT_TOKENS, spans=DIFF_SPANS):
    """Both engines over the explicit engine's domains (repetitions derived from the policy's constants, tokens too
    unless given): exactly equal. More token counts make the symbolic search of a ranked eviction much dearer."""
    domains = domains_for(policy, tokens)
    depth, explicit = explore_within(policy, depth, domains, spans=spans)
    symbolic = check_bounded(policy, depth, spans, timeout=HOUR, rlimit=DIFF_RLIMIT, token_domain=domains.tokens,
                             repeat_domain=domains.repeats, clock_targets=domains.clock_targets)
    found, expected = verdict_summary(symbolic), verdict_summary(explicit)
    assert expected == found, f"explicit {expected} symbolic {found}"
    return found


def policy_error(text: str) -> PolicySyntaxError:
    """The one-line PolicySyntaxError that parsing the policy `name: t` with the keys `text` raises."""
    try:
        parse_policy_text(f"name: t\n{text}\n", "p.yaml")
    except PolicySyntaxError as exc:
        assert "\n" not in str(exc), f"not one line: {exc}"
        return exc
    raise AssertionError(f"accepted: {text!r}")


def _itf_records(values) -> list:
    return [dict(record._asdict()) for record in values]


def assert_itf_py_reads_our_states(policy, transitions, document):
    """itf-py's reading of each state equals the runtime's state, its action and the action's arguments."""
    trace = itf_py.trace_from_json(document)
    assert trace.vars == document["vars"] and len(trace.states) == len(transitions) + 1
    runs = [(State(), "init", {}, "ok", frozenset())] + [
        (t.after, t.action.name, action_args(t.action), t.outcome, frozenset(violations(policy, t)))
        for t in transitions]
    for got, (state, action, args, outcome, bad) in zip(trace.states, runs):
        values = got.values
        assert values["step"] == state.step
        shown = [{k: v for k, v in dataclasses.asdict(s).items()
                  if (masks(policy) or k != "masked") and (k != "place" or s.place != s.id)
                  and not (k in ("tool", "tag") and v == "") and (k not in ("tombstone", "confabulated") or v)}
                 for s in state.spans]
        # `masked` only with masks, `place` only a summary's, names if set, a tombstone or `confabulated` if true
        assert _itf_records(values["spans"]) == shown
        # an edit's `cites` only when it cites something (spec/SPEC.md §6d), written as an ITF set
        assert _itf_records(values["edits"]) == [{k: (frozenset(v) if k == "cites" else v)
                                                  for k, v in dataclasses.asdict(e).items() if k != "cites" or v}
                                                 for e in state.edits]
        assert values["status"] == status(policy, state) and values["outcome"] == outcome
        assert values["violations"] == bad
        assert values["mbt::actionTaken"] == action
        picks = dict(values["mbt::nondetPicks"]._asdict())
        assert {k: (tuple(sorted(v)) if k == "cites" else v) for k, v in picks.items()} == args


# Runs of the runtime projected onto the pair model (symbolic/parametric.py), the soundness of every proof: each state
# of a run, seen from a pair of ids (r, r + 1), is a state of the pair model, each step a step of it, and each
# violation of a condition at r a violation of the pair model's term (tests/test_parametric.py,
# tests/test_combinations.py).


def span_values(state: State, i: int, names: tuple = ()) -> dict:
    """The pair model's fields of ghost span i as the runtime's state gives them (None for each: no span i yet)."""
    if i >= len(state.spans):
        return {name: None for name in {**FIELDS, **ROLE_FIELD, **MASKED_FIELD, **SUMMARY_FIELD, **TOMBSTONE_FIELD,
                                        **dict(names), **EVIDENCE_FIELDS}}
    span = state.span(i)
    edit = state.edit(i)
    return {"used": True, "alive": span.alive, "kind": ENUM_CODES["kind"][span.kind],
            "ns": ENUM_CODES["namespace"][span.namespace], "tokens": span.tokens, "created": span.created,
            "last_read": span.last_read, "reads": span.reads, "pinned": span.pinned, "edited": span.edited,
            "version": span.version, "undone": bool(edit and edit.undone), "role": ENUM_CODES["role"][span.role],
            "masked": span.masked, "summary": span.place != span.id, "tombstone": span.tombstone,
            # evidence: on (spec/SPEC.md §6d): some live entry cites it; it is a compaction's ledger rationale
            "cited": i in state.cited_ids(), "ledger": any(e.rationale == i for e in state.entries),
            **{attr: name_code(table, getattr(span, attr)) for attr, table in names}}


def _pinned(pins: dict, var, value) -> z3.BoolRef:
    """var == value (a None value: the sort's default), made once per (var, value) while `pins` lives: the entry
    holds var and value, so no other object can take their ids."""
    key = (id(var), value.__class__, value if value.__class__ in (bool, int) else id(value))
    entry = pins.get(key)
    if entry is None:
        entry = pins[key] = (var, value, var == (DEFAULTS[var.sort()] if value is None else value))
    return entry[2]


def project(ps, state: State, r: int, pins: dict = None) -> list:
    """Constraints pinning the pair state ps to the runtime's state seen from the pair (r, r + 1). `pins` (a dict
    kept between calls) shares the equalities between calls, which the runs of a model repeat."""
    pins = {} if pins is None else pins
    out = [_pinned(pins, ps.clock, state.step), _pinned(pins, ps.window_tokens, state.window_tokens())]
    if ps.window_spans is not None:  # a model with positions: its counters take the runtime's values
        out.append(_pinned(pins, ps.window_spans, sum(1 for s in state.spans if addressable(s))))
        window = aggregate_values(tuple(ps.window_aggregates), state)  # and the aggregates (SPEC §1e)
        out += [_pinned(pins, var, int(window[node])) for node, var in ps.window_aggregates.items()]
        for g, i in zip(GHOSTS, (r, r + 1)):
            values = {**positions(state, state.span(i)),
                      **aggregate_values(tuple(k for k in ps.counters[g] if not isinstance(k, str)), state,
                                         state.span(i))} if i < len(state.spans) else {}
            out += [_pinned(pins, var, int(values[name])) for name, var in ps.counters[g].items() if name in values]
    for g, i in zip(GHOSTS, (r, r + 1)):
        for name, value in span_values(state, i, ps.names).items():
            if name not in ps.span[g]:  # a role, mask, summary flag or name, in a model whose policy has none
                continue
            out.append(_pinned(pins, ps.span[g][name], value))
    return out


def splits(t, r) -> bool:
    """The runtime's T1 at the pair (r, r + 1) (spec/conditions.py _t1): the step's compaction stage removes exactly
    one span of the tool-call pair from the window. Removed as T1 says: taken and not masked in the state after (a
    masked span stays in the window; a span moved to the log, e.g. a cited one under `justification: downgrade`,
    does not); the host's truncation is not the stage's."""
    before = t.before
    removed = {i for i in t.evicted if not t.after.span(i).masked}
    return (is_pair(before, r) and addressable(before.span(r)) and addressable(before.span(r + 1))
            and (r in removed) != (r + 1 in removed))


def changes(t, r) -> bool:
    """The step changes a span of the pair (r, r + 1), the clock aside."""
    return any(i < len(t.after.spans) and (i >= len(t.before.spans) or t.before.span(i) != t.after.span(i))
               for i in (r, r + 1))


def _record_removed(t, r) -> bool:
    return t.before.edit(r) is not None and present(t.before.span(r)) and not present(t.after.span(r))


def _edits_r(t, r) -> bool:
    return getattr(t.action, "edit", None) == r


# Per step condition: the runtime violates it at the pair (r, r + 1) on the transition t, so the pair must.
STEP_AT_PAIR = {
    "C2": _record_removed,
    "C3": _edits_r,
    "U1": _edits_r,
    "T1": splits,
    "M1": lambda t, r: r in lost_content(t.before, t.after),  # the pair's M1 term must be true at ghost r
    "A1": lambda t, r: r in rewritten_log_entries(t.before, t.after),
    "X1": changes,
}

# Per state condition: the runtime violates it at record r (and its rationale r + 1), so the pair (r, r + 1) must.
AT_RECORD = {
    "C1": lambda policy, state, r: state.span(r).alive and is_candidate(policy, state, state.span(r)),
    "C4": lambda policy, state, r: not present(state.span(r)) and status(policy, state) == REVERSIBLE,
    "P1": lambda policy, state, r: not present(state.span(r + 1)),
    "R1": lambda policy, state, r: r < len(state.spans) and named(policy, state, state.span(r)),  # any recovery span
}

# Per state condition violated at span r itself, not at a record: J1 at a cited span that is not present, P1 at a
# compaction's ledger rationale that is not present (spec/SPEC.md §6d).
AT_GHOST = {
    "J1": lambda state, r: r in state.cited_ids() and not present(state.span(r)),
    "P1": lambda state, r: any(e.rationale == r for e in state.entries) and not present(state.span(r)),
}


def state_violated_at(condition: str, policy, state: State, r: int) -> bool:
    """The runtime's state, which violates the state condition, violates it at the pair (r, r + 1)."""
    edit = state.edit(r)
    live_r = edit is not None and not edit.undone
    at_record = condition in AT_RECORD and (live_r or condition == "R1") and AT_RECORD[condition](policy, state, r)
    return at_record or (condition in AT_GHOST and AT_GHOST[condition](state, r))


def conjunction(terms) -> z3.BoolRef:
    """The conjunction of boolean terms, made by z3's C API at once (z3.And re-checks every argument's sort in
    Python, the bulk of a projection's cost)."""
    terms = [t if isinstance(t, z3.BoolRef) else z3.BoolVal(t) for t in terms]
    if not terms:
        return z3.BoolVal(True)
    ctx = terms[0].ctx
    args = (z3.Ast * len(terms))(*[t.as_ast() for t in terms])
    return z3.BoolRef(z3.Z3_mk_and(ctx.ref(), len(terms), args), ctx)


class Questions:
    """Questions asked in one fresh z3 context (not the process's, whose history can make a query slow), each of a new
    solver bounded by rlimit, the constraints carried over as one conjunction: one translation instead of one per
    constraint. `shared`, conjoined first to every question, is carried over once. Making a context costs more than
    most questions: a run's questions share one."""

    def __init__(self, shared=None):
        self.ctx = z3.Context()
        self.shared = None if shared is None else shared.translate(self.ctx)

    def ask(self, constraints, rlimit=RLIMIT):
        solver = z3.Solver(ctx=self.ctx)
        solver.set("rlimit", rlimit)
        if self.shared is not None:
            solver.add(self.shared)
        solver.add(conjunction(constraints).translate(self.ctx))
        return solver.check()


def ask(constraints, rlimit=RLIMIT, questions: Questions = None):
    """fresh_check's answer: in a new z3 context, or in `questions`' (without its shared term)."""
    if questions is None or questions.shared is not None:
        questions = Questions()
    return questions.ask(constraints, rlimit)


@dataclasses.dataclass
class Obligation:
    """What must be satisfiable on the pair model: `base` (a state or a step, pinned to the runtime's), each term of
    `violated` (the pair model's violation of a condition the runtime violates there) together with it."""

    what: str
    base: list
    violated: dict

    def constraints(self) -> list:
        return self.base + list(self.violated.values())

    def failure(self, rlimit=RLIMIT, questions: Questions = None) -> str:
        """Why the obligation fails: the step does not project, or which conditions' terms are false ("" if it
        holds). `questions`: the context to ask in (default: a new one per question)."""
        if ask(self.constraints(), rlimit, questions) == z3.sat:
            return ""
        answer = ask(self.base, rlimit, questions)
        if answer != z3.sat:
            return f"{self.what} does not project onto the pair model ({answer})"
        missed = [c for c, term in self.violated.items() if ask(self.base + [term], rlimit, questions) != z3.sat]
        return (f"{self.what}: the runtime violates {', '.join(missed or sorted(self.violated))} at this pair, the "
                f"pair model's violation term is false there")


class PairEncoding:
    """A pair model with its states s0, s1, ... and the encoding of each step k (s_k, a_k, s_k+1), made once: the
    encoding of step k does not depend on the run, so every run of the policy shares it."""

    def __init__(self, policy, free_policy: bool = False):
        self.model = PairModel(policy, free_policy=free_policy)
        self.free_policy = free_policy
        self.states, self.steps = [self.model.state("s0")], []
        self.init = self.model.encode_init(self.states[0])
        self.pins = {}  # the projections' equalities (project's `pins`), shared by every run of the model

    def step(self, k: int) -> tuple:
        """(its constraints, its action, each condition's violation term) of step k."""
        while len(self.steps) <= k:
            j = len(self.steps)
            pre, post, act = self.states[j], self.model.state(f"s{j + 1}"), self.model.action(f"a{j}")
            self.states.append(post)
            pair_step = self.model.encode_step(pre, act, post)
            terms = {c: pair_violation(self.model, c, post, pair_step) for c in STEP_CONDITIONS + STATE_CONDITIONS}
            self.steps.append((list(pair_step.constraints), act, terms))
        return self.steps[k]


class ProjectedRun:
    """A runtime run and its encoding on one pair model: each step's constraints and violation terms do not depend
    on the pair (r, r + 1) the run is seen from, only the projections do."""

    def __init__(self, policy, actions, free_policy: bool = False, encoding: PairEncoding = None, conditions=None):
        """conditions: those whose violations must map onto the pair model's (default: every condition, whether or
        not it applies to the policy)."""
        self.policy, self.free_policy = policy, free_policy
        self.conditions = frozenset(STEP_CONDITIONS + STATE_CONDITIONS if conditions is None else conditions)
        encoding = encoding or PairEncoding(policy, free_policy)
        assert encoding.free_policy == free_policy
        self.model = encoding.model
        self.transitions = run_actions(policy, actions)[1]
        self.runtime_states = [State()] + [t.after for t in self.transitions]
        self.width = len(self.runtime_states[-1].spans) + 1
        self.steps, self.violated = [], []
        for k, t in enumerate(self.transitions):
            constraints, act, terms = encoding.step(k)
            self.steps.append((constraints + [act.act == ACT[t.action.name]] + trigger_pins(act, t.action), terms))
            self.violated.append((transition_violations(t), state_violations(policy, t.after)))
        self.states = encoding.states[:len(self.runtime_states)]
        self.init = encoding.init
        self.pins = encoding.pins
        # what every pair's batched query shares: the initial state and every step, as one term
        self.chain = conjunction(self.init + [c for base, _ in self.steps for c in base])

    def projected(self, r: int) -> list:
        """Per state of the run, the constraints pinning the model's state to it, seen from the pair (r, r + 1)."""
        return [project(ps, state, r, self.pins) for ps, state in zip(self.states, self.runtime_states)]

    def obligations(self, r: int, projected=None) -> list:
        """Everything that must be satisfiable for the run to project onto the pair (r, r + 1): the initial state,
        each step (with the violation terms of the step conditions the runtime violates there), and each state
        after a step in which the runtime violates a state condition at the pair (with those terms)."""
        projected = projected or self.projected(r)
        out = [Obligation("the initial state", self.init + projected[0], {})]
        for k, (t, (base, terms), (on_step, on_state)) in enumerate(zip(self.transitions, self.steps, self.violated)):
            on_step, on_state = on_step & self.conditions, on_state & self.conditions
            step_bad = {c: terms[c] for c in STEP_CONDITIONS if c in on_step and STEP_AT_PAIR[c](t, r)}
            out.append(Obligation(f"step {k + 1} {t.action}", base + projected[k] + projected[k + 1], step_bad))
            state_bad = {c: terms[c] for c in STATE_CONDITIONS
                         if c in on_state and state_violated_at(c, self.policy, t.after, r)}
            if state_bad:
                out.append(Obligation(f"the state after step {k + 1} {t.action}", projected[k + 1], state_bad))
        return out

    def failures(self, batched: bool = True, rlimit=RLIMIT) -> list:
        """(r, why) for each pair the run does not project onto. Batched: one query per pair, the conjunction of its
        obligations (their variables are the states' and steps' own, a state shared by two steps pinned alike in
        both), each obligation asked alone only where that conjunction fails; otherwise one query per obligation.
        The run's questions share a fresh z3 context (the batched ones another, with the steps carried over once)."""
        out = []
        chained, single = Questions(self.chain) if batched else None, None
        for r in range(self.width):
            projected = self.projected(r)
            obligations = self.obligations(r, projected)
            if batched:
                terms = [c for state in projected for c in state]
                terms += [t for o in obligations for t in o.violated.values()]
                if chained.ask(terms, rlimit) == z3.sat:
                    continue
            single = single or Questions()
            whys = [why for why in (o.failure(rlimit, single) for o in obligations) if why]
            out += [(r, why) for why in whys[:1]]
            if batched and not whys:  # never expected: each obligation holds alone but not all together
                out.append((r, "the obligations hold one by one but not together"))
        return out


def check_projection(policy, actions, free_policy: bool = False, batched: bool = False, context: str = "") -> int:
    """Assert that the run of actions projects onto every pair of the pair model (of the policy's own terms, or with
    the policy abstracted); the failure names the context, the model, the pair, the step and the condition. Returns
    the number of pairs checked."""
    run = ProjectedRun(policy, actions, free_policy)
    failures = run.failures(batched)
    model = "free-policy model" if free_policy else "pair model"
    assert not failures, "\n".join(f"{context}{model}, pair ({r}, {r + 1}): {why}" for r, why in failures) + \
        f"\n  run: {tuple(t.action for t in run.transitions)}"
    return run.width


def enabled_prefix(policy, actions) -> tuple:
    """The actions, those the runtime refuses (in the state the earlier ones reach) left out."""
    state, out = State(), []
    for action in actions:
        if enabled(policy, state, action):
            out.append(action)
            state = step(policy, state, action).after
    return tuple(out)
