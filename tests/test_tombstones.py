"""Tombstones, monotone evidence (M1) and the append-only decision log (A1): runtime, both models, checker, traces."""

import hashlib
import io
import json
from dataclasses import replace

import pytest

from prunecheck.checker.check import check
from prunecheck.checker.commands.batch import batch_item
from prunecheck.checker.cli import main
from prunecheck.checker.engines.explicit import domains_for, explore
from prunecheck.checker.engines.replay import replay
from prunecheck.checker.findings.explain import cause_of, explain
from prunecheck.checker.language.document import policy_document, policy_hash
from prunecheck.checker.language.loader import load_policy, parse_policy_text
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.outputs.cache import FORMAT, CacheStatus, cache_key
from prunecheck.checker.outputs.itf import itf_states, trace_document
from prunecheck.checker.outputs.render import span_line
from prunecheck.checker.result import Verdict
from prunecheck.spec.conditions import applicable, transition_violations, violations
from prunecheck.spec.policy import Deployment
from prunecheck.spec.runtime import Append, Compact, Edit, Pin, Read, Transition, Undo, with_span

from conftest import BOUNDS, CLI_BOUNDS, HOUR
from support import assert_confirmed, assert_itf_py_reads_our_states, run_actions

# The design's M1 schema (docs/design/seeds.md 2.2): a span the host's truncation destroys (under host_truncation: on,
# HOST below; by default a host budget changes nothing, SPEC §2).
DESTROY = (Append("message", 2), Compact(1))
HOST = {"host_truncation": "on"}
EVICT_SUMMARIES = "name: t\nevict: kind == 'summary'\n"
OPTIONS = CheckOptions(depth=4, spans=4, **BOUNDS)


def _policy(text=EVICT_SUMMARIES, effect=None, **deployment):
    text += f"effect: {effect}\n" if effect else ""
    return parse_policy_text(text, "p.yaml", Deployment(evidence="on", **deployment))


@pytest.mark.parametrize("effect", [None, "mask", "cut", "summarise"])
def test_under_tombstone_whatever_a_compaction_takes_or_truncates_keeps_a_tombstone(effect):
    policy = _policy(effect=effect, evicted="tombstone", **HOST)
    actions = (Append("message", 3), Append("message", 2), Edit(0, "transform"), Compact(), Compact(1))
    state, transitions = run_actions(policy, actions)
    taken = set().union(*(t.evicted | t.truncated for t in transitions))
    assert 0 in transitions[3].evicted and transitions[4].truncated
    assert all(state.span(i).tombstone for i in taken)
    assert not any(s.tombstone for s in state.spans if s.id not in taken)
    assert not any(transition_violations(t) & {"M1", "A1"} for t in transitions)


@pytest.mark.parametrize("evicted", ["destroyed", "logged"])
def test_other_deployments_write_no_tombstone(evicted):
    policy = _policy(evicted=evicted)
    state, _ = run_actions(policy, (Append("message", 3), Edit(0, "transform"), Compact(), Compact(1)))
    assert not any(s.tombstone for s in state.spans)


def test_a_tombstone_stays_when_undo_restores_its_span():
    policy = _policy(evicted="tombstone")
    state, transitions = run_actions(policy, (Append("message", 2), Edit(0, "transform"), Compact(), Undo(1)))
    assert transitions[-1].outcome == "reverted"
    assert (state.span(0).alive, state.span(0).tombstone) == (True, True)


def test_the_tombstone_is_quiet_at_false_in_repr_itf_and_text():
    policy = _policy(evicted="tombstone", **HOST)
    state, transitions = run_actions(policy, DESTROY)
    assert "tombstone" not in repr(replace(state.span(0), tombstone=False))
    assert "tombstone=True" in repr(state.span(0)) and span_line(state.span(0)).endswith("EVICTED tombstone]")
    assert itf_states(policy, transitions)[-1]["spans"][0]["tombstone"] is True
    plain = _policy(evicted="destroyed", **HOST)
    assert "tombstone" not in itf_states(plain, run_actions(plain, DESTROY)[1])[-1]["spans"][0]
    document = json.loads(json.dumps(trace_document(policy, policy_document(policy), transitions, {})))
    assert_itf_py_reads_our_states(policy, transitions, document)


@pytest.mark.parametrize("evicted, effect, lost", [
    ("destroyed", None, True), ("destroyed", "mask", True), ("tombstone", None, False), ("tombstone", "cut", False),
    ("logged", None, False), ("logged", "summarise", False), ("logged", "mask", True),
])
def test_m1_is_violated_exactly_where_content_is_lost_without_evidence(evicted, effect, lost):
    policy = _policy(effect=effect, evicted=evicted)
    _, transitions = run_actions(policy, (Append("message", 3), Edit(0, "transform"), Compact(), Compact(1)))
    assert any("M1" in violations(policy, t) for t in transitions) == lost


def test_m1_and_a1_apply_only_under_evidence_on():
    on = _policy(**HOST)
    off = parse_policy_text(EVICT_SUMMARIES, "p.yaml", Deployment(evidence="off", **HOST))
    assert {"M1", "A1"} <= set(applicable(on)) and not {"M1", "A1"} & set(applicable(off))
    default = parse_policy_text(EVICT_SUMMARIES, "p.yaml", Deployment(**HOST))
    assert applicable(default) == applicable(on)  # evidence: on is the default (ADR 0035)
    assert "M1" in violations(on, run_actions(on, DESTROY)[1][-1])
    assert "M1" not in violations(off, run_actions(off, DESTROY)[1][-1])


def test_a1_sees_a_rewrite_of_a_log_entry_and_not_its_metadata():
    policy = _policy(rationale="decision_log", pins="self")
    state, transitions = run_actions(policy, (Append("message", 1), Edit(0, "transform"), Pin(2), Read(2), Compact(1)))
    assert state.span(2).namespace == "log" and not any("A1" in violations(policy, t) for t in transitions)
    for change in ({"alive": False}, {"tokens": 5}, {"namespace": "window"}, {"version": 1}, {"kind": "message"}):
        forged = with_span(state, replace(state.span(2), **change))
        assert transition_violations(Transition(state, Compact(), forged, "ok")) == {"A1"}
    cause = cause_of(policy, [Transition(state, Compact(), forged, "ok")], "A1")
    assert "rewrites decision-log entry #2 (rationale of edit 1)" in cause.summary
    assert cause.points[0].text == "rationale: decision_log (the operator's deployment)"


def test_the_logged_archive_is_not_the_decision_log():
    # F5: under `evicted: logged` an undo rewrites an archived target in the log; it is no rationale, so no A1.
    policy = _policy(evicted="logged", rationale="decision_log")
    state, transitions = run_actions(policy, (Append("message", 1), Edit(0, "transform"), Compact(), Undo(1)))
    assert state.span(0).namespace == "log" and state.span(0).kind == "message"
    assert not any("A1" in violations(policy, t) for t in transitions)


def test_the_checker_finds_m1_under_destroyed_with_a_replayed_trace():
    policy = _policy()
    (m1,) = check(policy, replace(OPTIONS, only=("M1",))).results
    assert m1.verdict is Verdict.VIOLATED
    assert "M1" in violations(policy, replay(policy, m1.trace.actions)[-1])
    hosted = _policy(**HOST)
    assert "M1" in violations(hosted, run_actions(hosted, DESTROY)[1][-1])  # the design's run, on the runtime
    cause = explain(policy, m1.trace.actions, "M1").cause
    assert "no tombstone" in cause.summary and cause.points[-1].text.startswith("evicted: destroyed")


@pytest.mark.parametrize("effect", [None, "mask", "summarise"])
def test_tombstones_give_m1_holds_with_a_certificate_and_a1_holds(effect):
    policy = _policy(effect=effect, evicted="tombstone")
    results = check(policy, replace(OPTIONS, only=("M1", "A1"))).results
    assert [r.verdict for r in results] == [Verdict.HOLDS, Verdict.HOLDS]
    assert_confirmed(policy, results)


@pytest.mark.parametrize("evicted, effect", [("destroyed", None), ("tombstone", "mask"), ("logged", "mask"),
                                             ("tombstone", "summarise")])
def test_the_engines_agree_on_evidence_policies(evicted, effect):
    policy = _policy("name: t\nevict: kind != 'record'\n", effect=effect, evicted=evicted, records="window")
    domains = domains_for(policy)
    explicit = {r.condition: (r.verdict, r.depth) for r in explore(policy, 3, 3, domains=domains, time_limit=HOUR)
                if r.verdict is Verdict.VIOLATED}
    options = CheckOptions(depth=3, spans=3, prove=False, tokens=domains.tokens, **BOUNDS)
    symbolic = {r.condition: (r.verdict, r.depth) for r in check(policy, options).results
                if r.verdict is Verdict.VIOLATED}
    assert explicit == symbolic and ("M1" in explicit) == (evicted == "destroyed" or (evicted, effect) == ("logged", "mask"))


@pytest.mark.parametrize("value", [False, "yes", {"#bigint": "1"}])
def test_a_tampered_tombstone_in_an_itf_trace_does_not_reproduce(tmp_path, value):
    # evidence: off, so the compaction needs no slot for a ledger entry: C2's 3-step run fits in 3 spans.
    path = tmp_path / "p.yaml"
    path.write_text("name: t\nevict: kind == 'record'\ndeployment:\n  records: window\n  evicted: tombstone\n"
                    "  evidence: 'off'\n")
    out, err = io.StringIO(), io.StringIO()
    assert main(["check", str(path), "--depth", "3", "--spans", "3", "--only", "C2", "--out", str(tmp_path),
                 "--trust-policy-deployment", *CLI_BOUNDS], out, err) == 1  # a human-authored test file
    (trace,) = tmp_path.glob("*.C2.itf.json")
    doc = json.loads(trace.read_text())
    last = doc["states"][-1]
    marked = [i for i, span in enumerate(last["spans"]) if span.get("tombstone") is True]
    assert marked
    assert main(["replay", str(trace)], io.StringIO(), io.StringIO()) == 0
    last["spans"][marked[0]]["tombstone"] = value
    trace.write_text(json.dumps(doc))
    out, err = io.StringIO(), io.StringIO()
    assert main(["replay", str(trace)], out, err) == 1
    assert f"state {len(doc['states']) - 1} differs" in out.getvalue() and "Traceback" not in out.getvalue() + err.getvalue()


@pytest.mark.parametrize("tamper, words", [
    (lambda step: step["args"].update(tombstone=True), "wrong arguments"),
    (lambda step: step["args"].update(tokens="yes"), "does not replay"),
])
def test_a_forged_tombstone_or_bad_value_in_a_cached_trace_is_rejected_in_one_line(tmp_path, tamper, words):
    # The cache keeps a trace as its actions, never its states: a tombstone can only be forged as an argument.
    path = tmp_path / "p.yaml"
    path.write_text("name: t\nevict: kind == 'record'\ndeployment:\n  records: window\n  evicted: tombstone\n"
                    "  evidence: 'on'\n")
    options = replace(OPTIONS, only=("C2", "M1"), trust_policy_deployment=True)  # a human-authored test file
    cache = tmp_path / "cache"
    fresh = batch_item(str(path), options, str(cache))
    assert fresh.report.result("C2").verdict is Verdict.VIOLATED
    key = cache_key(options.settings(policy_hash(load_policy(path))))
    entry_path = cache / f"v{FORMAT}" / key[:2] / f"{key}.json"
    entry = json.loads(entry_path.read_text())
    tamper(next(s for s in entry["report"]["conditions"]["C2"]["trace"] if s["action"] == "append"))
    entry["sha256"] = hashlib.sha256(json.dumps(entry["report"], sort_keys=True,
                                                separators=(",", ":")).encode()).hexdigest()
    entry_path.write_text(json.dumps(entry, sort_keys=True))
    item = batch_item(str(path), options, str(cache))
    assert item.cache is CacheStatus.REJECTED and "\n" not in item.rejection and words in item.rejection
    assert item.report == fresh.report
