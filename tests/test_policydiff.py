"""`prunecheck diff`: equivalence only when proved, witnesses replayed under both policies, honest unknowns."""

import io
import json

import pytest
from hypothesis import given, settings, strategies as st

from prunecheck.checker.commands import diff_witness, policydiff
from prunecheck.checker.cli import main
from prunecheck.checker.language.loader import load_policy, parse_policy_text
from prunecheck.checker.commands.policydiff import (
    DIFFERENT, EQUIVALENT, NEW_EVICTS, OLD_EVICTS, UNKNOWN, diff_policies, equivalence, replayed_witness,
)
from prunecheck.checker.language.printer import policy_python
from prunecheck.checker.options import DIFF_DEFAULTS, options_with
from prunecheck.spec.errors import ReplayMismatch
from prunecheck.spec.evaluate import evaluate
from prunecheck.spec.runtime import Compact, State, enabled_actions, span_env, step
from prunecheck.strategies import policies

from conftest import BOUNDS, CLI_BOUNDS
from policy_table import EXAMPLES

COMMANDS = {"diff": (policydiff.add_parser, policydiff.run)}


def policy(text: str, name: str = "p.yaml"):
    return parse_policy_text(text, name)


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(["diff", *CLI_BOUNDS, *argv], out, err, extra_commands=COMMANDS)
    return code, out.getvalue(), err.getvalue()


def runtime_difference(old, new, direction, witness, spans):
    """Re-run the witness on the runtime under both policies, independently of policydiff's own replay."""
    states = {"old": State(), "new": State()}
    last = {}
    for action in witness.actions:
        for label, p in (("old", old), ("new", new)):
            last[label] = step(p, states[label], action, spans)
            states[label] = last[label].after
    assert isinstance(witness.actions[-1], Compact)
    dropped, kept = ("new", "old") if direction == NEW_EVICTS else ("old", "new")
    i = witness.span
    assert last["old"].before.span(i).alive and last["new"].before.span(i).alive
    assert not last[dropped].after.span(i).alive and last[kept].after.span(i).alive
    # What the witness prints about each policy is what the runtime evaluates in that policy's own run.
    for label, p, view in (("old", old, witness.old), ("new", new, witness.new)):
        env = span_env(p, last[label].before, last[label].before.span(i))
        assert view.attributes == tuple(env.items())
        assert view.evict == evaluate(p.evict, env)
        assert view.rank == (None if p.rank is None else evaluate(p.rank, env))
    return last


def assert_directions(old, new, diff, expected: set, spans):
    """Witnesses exactly in `expected`, each one real on the runtime; the others have a reason and no witness."""
    for d in (NEW_EVICTS, OLD_EVICTS):
        answer = diff.direction(d)
        if d in expected:
            assert answer.witness is not None, answer.reason
            assert f"witness after {len(answer.witness.actions)} steps" in answer.reason
            runtime_difference(old, new, d, answer.witness, spans)
        else:
            assert answer.witness is None and answer.reason.startswith("none"), answer.reason
    assert diff.outcome == (DIFFERENT if expected else UNKNOWN)


# --------------------------------------------------------------------------- equivalent: proved only


def test_commuted_conjunction_is_proved_equivalent(tmp_path):
    old = write(tmp_path, "old.yaml", "name: old\nevict: not pinned and age > 2\n")
    new = write(tmp_path, "new.yaml", "name: new\nevict: age > 2 and not pinned\n")
    code, out, err = run(old, new)
    assert (code, err) == (0, "")
    assert "outcome: equivalent (proved:" in out and "witness" not in out


def test_yaml_and_python_forms_of_the_seed_are_proved_equivalent():
    old, new = load_policy(EXAMPLES / "seed_flawed.yaml"), load_policy(EXAMPLES / "seed_flawed.py")
    assert old.evict != new.evict  # different syntax trees: `not p and e` against `False if p else e`
    diff = diff_policies(old, new, options_with(DIFF_DEFAULTS, depth=4, spans=3, **BOUNDS))
    assert diff.outcome == EQUIVALENT and diff.equivalence.proved
    assert diff.new_evicts.witness is None and diff.old_evicts.witness is None and diff.deployment_keys == ()


def test_the_proof_agrees_with_the_search_on_equivalent_policies():
    old, new = load_policy(EXAMPLES / "seed_flawed.yaml"), load_policy(EXAMPLES / "seed_flawed.py")
    forward, backward = policydiff.lockstep_directions(old, new, depth=4, spans=3, **BOUNDS)
    assert forward.witness is None and backward.witness is None


def test_ranks_that_agree_on_every_candidate_are_equivalent_under_a_budget():
    old = policy("name: a\nevict: kind == 'tool_output'\nrank: tokens + 0\nbudget: 10\n")
    new = policy("name: b\nevict: kind in ['tool_output']\nrank: 2 * tokens - tokens\nbudget: 10\n")
    assert equivalence(old, new, **BOUNDS).proved


def test_rank_without_budget_is_unused_so_it_does_not_block_the_proof():
    old = policy("name: a\nevict: age > 1\nrank: tokens\n")
    new = policy("name: b\nevict: age >= 2\nrank: 0 - tokens\n")
    proof = equivalence(old, new, **BOUNDS)
    assert proof.proved and "rank unused" in proof.reason


@settings(max_examples=50)
@given(policies(max_depth=3, python=True))
def test_every_policy_is_proved_equivalent_to_its_python_form(p):
    again = parse_policy_text(policy_python(p), "again.py")
    proof = equivalence(p, again, **BOUNDS)
    assert proof.proved, proof.reason


# --------------------------------------------------------------------------- different: witnesses, replayed


def test_a_strictly_stronger_predicate_differs_in_exactly_one_direction():
    old = policy("name: a\nevict: not pinned and age > 2\n")
    new = policy("name: c\nevict: not pinned and age > 2 and reads == 0\n")
    diff = diff_policies(old, new, options_with(DIFF_DEFAULTS, depth=6, spans=4, **BOUNDS))
    # Nothing truncates by default (host_truncation: off, SPEC §2): NEW removes only what it evicts, a subset of OLD's.
    assert_directions(old, new, diff, {OLD_EVICTS}, 4)
    w = diff.old_evicts.witness
    assert (w.old.evict, w.new.evict, w.old.fate, w.new.fate) == (True, False, "evicted", "kept")
    assert dict(w.old.attributes)["reads"] >= 1 and dict(w.old.attributes)["age"] > 2
    # Under a host that truncates, NEW's fuller window is truncated at the same host budget where OLD keeps a span.
    old, new = (policy(p.replace("\n", '\ndeployment: {host_truncation: "on"}\n', 1)) for p in
                ("name: a\nevict: not pinned and age > 2\n", "name: c\nevict: not pinned and age > 2 and reads == 0\n"))
    diff = diff_policies(old, new, options_with(DIFF_DEFAULTS, depth=6, spans=4, **BOUNDS))
    assert_directions(old, new, diff, {OLD_EVICTS, NEW_EVICTS}, 4)
    w = diff.new_evicts.witness
    assert (w.new.fate, w.old.fate) == ("truncated", "kept") and w.actions[-1].budget is not None


def test_unrelated_predicates_differ_in_both_directions(tmp_path):
    old = write(tmp_path, "old.yaml", "name: old\nevict: not pinned and age > 2\n")
    new = write(tmp_path, "new.yaml", "name: new\nevict: kind == 'tool_output'\n")
    code, out, err = run(old, new, "--depth", "5", "--spans", "3")
    assert (code, err) == (1, "")
    assert out.count("replayed on the runtime") == 2 and "outcome: different" in out
    options = options_with(DIFF_DEFAULTS, depth=5, spans=3, **BOUNDS)
    diff = diff_policies(load_policy(old), load_policy(new), options)
    assert_directions(load_policy(old), load_policy(new), diff, {NEW_EVICTS, OLD_EVICTS}, 3)
    # Shortest: append a tool output and compact.
    assert len(diff.new_evicts.witness.actions) == 2


def test_adding_a_budget_truncates_what_the_old_policy_keeps():
    old = policy("name: d\nevict: kind == 'tool_output'\n")
    new = policy("name: e\nevict: kind == 'tool_output'\nbudget: 10\n")
    diff = diff_policies(old, new, options_with(DIFF_DEFAULTS, depth=5, spans=3, **BOUNDS))
    assert_directions(old, new, diff, {NEW_EVICTS}, 3)
    w = diff.new_evicts.witness
    assert (w.new.evict, w.new.fate, w.old.fate) == (False, "truncated", "kept")
    assert "budgets differ" in diff.equivalence.reason


def test_reversing_the_rank_changes_which_candidate_goes_first(tmp_path):
    old = write(tmp_path, "f.yaml", "name: f\nevict: kind == 'tool_output'\nrank: tokens\nbudget: 10\n")
    new = write(tmp_path, "g.yaml", "name: g\nevict: kind == 'tool_output'\nrank: 0 - tokens\nbudget: 10\n")
    code, out, _ = run(old, new, "--depth", "3", "--spans", "3", "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert doc["outcome"] == "different" and doc["deployment_differs"] == {}
    for name in ("new_evicts", "old_evicts"):
        w = doc["directions"][name]["witness"]
        assert w["steps"] == 3 and w["actions"][-1] == {"action": "compact", "args": {}}
        assert w["old"]["attributes"]["kind"] == "tool_output" and w["old"]["attributes"]["pinned"] is False
        assert w["old"]["evict"] and w["new"]["evict"]  # both candidates: the rank alone decides
        assert int(w["old"]["rank"]) == -int(w["new"]["rank"])
    assert "rank differs" in doc["equivalence"]["reason"]
    options = options_with(DIFF_DEFAULTS, depth=3, spans=3, **BOUNDS)
    diff = diff_policies(load_policy(old), load_policy(new), options)
    assert_directions(load_policy(old), load_policy(new), diff, {NEW_EVICTS, OLD_EVICTS}, 3)


def test_a_deployment_change_is_named_and_its_divergence_witnessed(tmp_path):
    seed = str(EXAMPLES / "seed_flawed.yaml")
    moved = write(tmp_path, "moved.yaml", "name: moved\nevict: not pinned and recency * frequency < 0.25\n"
                                          "deployment: {records: undo_region, pins: self, audit: policy}\n")
    # human-authored files, their sections believed (ADR 0037); a compaction writes its ledger entry
    code, out, _ = run(seed, moved, "--depth", "3", "--spans", "4", "--no-config", "--trust-policy-deployment")
    assert code == 1
    assert "deployment differs: records window -> undo_region" in out
    options = options_with(DIFF_DEFAULTS, depth=3, spans=4, **BOUNDS)
    diff = diff_policies(load_policy(seed), load_policy(moved), options)
    assert diff.deployment_keys == ("records",)
    assert diff.old_evicts.witness is not None
    w = diff.old_evicts.witness
    assert w.kind == "record" and w.old.candidate and not w.new.candidate and w.new.fate == "kept"
    runtime_difference(load_policy(seed), load_policy(moved), OLD_EVICTS, w, 4)


# --------------------------------------------------------------------------- unknown: honest


def test_a_difference_beyond_the_depth_is_unknown_not_equivalent(tmp_path):
    old = write(tmp_path, "old.yaml", "name: old\nevict: false\n")
    new = write(tmp_path, "new.yaml", "name: new\nevict: age > 20\n")
    code, out, _ = run(old, new, "--depth", "3", "--spans", "3")
    assert code == 3
    assert "outcome: no difference found within depth 3, 3 spans (not proved equivalent: evict differs" in out
    assert "NEW evicts what OLD keeps: none within depth 3, 3 spans (bounded search only)" in out


def test_a_difference_only_on_unreachable_valuations_stays_unknown():
    # idle > age never holds in a reachable state, but only a proof over reachable states could say so.
    old, new = policy("name: a\nevict: false\n"), policy("name: b\nevict: idle > age\n")
    diff = diff_policies(old, new, options_with(DIFF_DEFAULTS, depth=2, spans=2, **BOUNDS))
    assert diff.outcome == UNKNOWN and not diff.equivalence.proved
    assert diff.new_evicts.witness is None and diff.old_evicts.witness is None


# --------------------------------------------------------------------------- replay is the gatekeeper


def test_a_witness_the_runtime_does_not_reproduce_is_rejected():
    old = policy("name: a\nevict: kind == 'tool_output'\n")
    new = policy("name: b\nevict: kind == 'message'\n")
    diff = diff_policies(old, new, options_with(DIFF_DEFAULTS, depth=2, spans=2, **BOUNDS))
    w = diff.new_evicts.witness
    with pytest.raises(ReplayMismatch):
        replayed_witness(old, new, OLD_EVICTS, w.actions, w.span, 2)  # wrong direction
    with pytest.raises(ReplayMismatch):
        replayed_witness(old, new, NEW_EVICTS, w.actions[:-1], w.span, 2)  # no compaction
    with pytest.raises(ReplayMismatch):
        replayed_witness(old, old, NEW_EVICTS, w.actions, w.span, 2)  # same policy twice: nothing differs


def test_an_unreproduced_witness_is_an_internal_error_never_a_verdict(tmp_path, monkeypatch):
    old = write(tmp_path, "old.yaml", "name: old\nevict: kind == 'tool_output'\n")
    new = write(tmp_path, "new.yaml", "name: new\nevict: kind == 'message'\n")
    real = diff_witness.replay
    monkeypatch.setattr(diff_witness, "replay", lambda p, actions, spans: real(load_policy(old), actions, spans))
    code, out, err = run(old, new, "--depth", "2", "--spans", "2")
    assert code == 4 and out == ""
    assert err.startswith("prunecheck: internal error") and err.count("\n") == 1


# --------------------------------------------------------------------------- input errors


@pytest.mark.parametrize("make_args", [
    lambda ok, bad: [ok, str(bad.parent / "missing.yaml")],
    lambda ok, bad: [str(bad), ok],
    lambda ok, bad: [ok, ok, "--depth", "-1"],
    lambda ok, bad: [ok],
])
def test_bad_input_exits_2_with_one_line(tmp_path, make_args):
    ok = write(tmp_path, "ok.yaml", "name: ok\nevict: age > 1\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nevict: age >\n", encoding="utf-8")
    code, out, err = run(*make_args(ok, bad))
    assert code == 2 and out == ""
    assert err.startswith("prunecheck: ") and err.count("\n") == 1


def test_a_bad_expression_is_reported_at_its_position(tmp_path):
    ok = write(tmp_path, "ok.yaml", "name: ok\nevict: age > 1\n")
    bad = write(tmp_path, "bad.yaml", "name: bad\nevict: budget > 1\n")
    code, _, err = run(ok, bad)
    assert code == 2 and f"{bad}:2:" in err


# --------------------------------------------------------------------------- slow: defaults, generated pairs


@pytest.mark.slow
def test_defaults_on_the_seed_against_a_safer_revision(tmp_path):
    seed = str(EXAMPLES / "seed_flawed.yaml")
    revised = write(tmp_path, "revised.yaml",
                    "name: revised\nevict: kind not in ['record', 'rationale'] and recency * frequency < 0.25\n"
                    "deployment: {records: window, pins: self, audit: policy}\n")
    diff = diff_policies(load_policy(seed), load_policy(revised), options_with(DIFF_DEFAULTS, **BOUNDS))
    assert diff.outcome == DIFFERENT and diff.old_evicts.witness is not None
    runtime_difference(load_policy(seed), load_policy(revised), OLD_EVICTS, diff.old_evicts.witness, 5)


def explicit_witness_lengths(old, new, depth, spans, tokens=(1, 2)) -> dict:
    """Per direction, the shortest witness by breadth-first search over both runtimes in lockstep (no z3)."""
    found, frontier = {}, {(State(), State())}
    seen = set(frontier)
    for k in range(1, depth + 1):
        following = set()
        for s_old, s_new in frontier:
            shared = set(enabled_actions(old, s_old, spans, tokens)) & set(enabled_actions(new, s_new, spans, tokens))
            for action in shared:
                t_old, t_new = step(old, s_old, action, spans), step(new, s_new, action, spans)
                for i in range(len(s_old.spans) if isinstance(action, Compact) else 0):
                    if s_old.spans[i].alive and s_new.spans[i].alive:
                        if t_old.after.spans[i].alive != t_new.after.spans[i].alive:
                            found.setdefault(OLD_EVICTS if t_new.after.spans[i].alive else NEW_EVICTS, k)
                pair = (t_old.after, t_new.after)
                if pair not in seen:
                    seen.add(pair)
                    following.add(pair)
        frontier = following
    return found


@pytest.mark.slow
@settings(max_examples=20)
@given(st.data())
def test_generated_pairs_never_blur_the_outcomes_and_agree_with_explicit_search(data):
    old = data.draw(policies(max_depth=2))
    same_deployment = data.draw(st.booleans())
    new = data.draw(policies(max_depth=2, deployment=old.deployment if same_deployment else None))
    diff = diff_policies(old, new, options_with(DIFF_DEFAULTS, depth=4, spans=3, **BOUNDS))
    witnesses = [d for d in (NEW_EVICTS, OLD_EVICTS) if diff.direction(d).witness is not None]
    if diff.outcome == EQUIVALENT:
        assert diff.equivalence.proved and not witnesses
    elif diff.outcome == DIFFERENT:
        for d in witnesses:
            runtime_difference(old, new, d, diff.direction(d).witness, 3)
    else:
        assert not witnesses and not diff.equivalence.proved
    # The explicit search draws tokens from {1, 2} only: whatever it finds, the symbolic search finds no later.
    for d, length in explicit_witness_lengths(old, new, 4, 3).items():
        witness = diff.direction(d).witness
        assert witness is not None and len(witness.actions) <= length, diff.direction(d).reason


def test_two_policies_that_keep_evidence_are_compared_without_a_crash(tmp_path):
    """The lockstep proof once built its pre-states without the citation fields (evidence: on), and z3 crashed in
    the template substitution; now the shared action cites only when both policies keep evidence."""
    old = write(tmp_path, "old.yaml", "name: old\nevict: kind == 'tool_output'\ndeployment: {evidence: 'on'}\n")
    new = write(tmp_path, "new.yaml", "name: new\nevict: kind == 'tool_output' and age > 1\n"
                                      "deployment: {evidence: 'on'}\n")
    plain = write(tmp_path, "plain.yaml", "name: plain\nevict: kind == 'tool_output'\n")
    for a, b in ((old, new), (old, plain)):
        code, out, err = run(a, b, "--depth", "3", "--spans", "4")
        assert code in (0, 1, 3) and err == "" and "outcome:" in out, (code, out, err)
