"""A list of compaction stages (spec/SPEC.md §4h): parsing, the runtime's chain of stages, the refusal, the
conditions, and the engines' honesty (the explicit engine searches it, the symbolic models refuse it, nothing is
proved)."""

import io
import json
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prunecheck.checker.check import check
from prunecheck.checker.cli import main
from prunecheck.checker.language.document import policy_document, policy_hash
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.language.printer import policy_python, policy_yaml
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.result import Note, Verdict
from prunecheck.spec.conditions import violations
from prunecheck.spec.errors import EncodingError
from prunecheck.spec.policy import BoolLit, Stage
from prunecheck.spec.runtime import (Append, Compact, Edit, State, enabled, enabled_actions, stage_steps, step,
                                     taking_stage)
from prunecheck.symbolic.model import Model
from prunecheck.symbolic.parametric import PairModel

from conftest import CLI_BOUNDS
from support import policy_error

SAFE_OFF = "deployment:\n  records: window\n  evidence: 'off'\n  host_truncation: 'off'\n"


def policy(body: str, deployment: str = SAFE_OFF):
    return parse_policy_text(f"name: staged\n{body}\n{deployment}", "staged.yaml")


MASK_THEN_SUMMARISE = """compaction:
  - evict: kind == 'tool_output'
    effect: mask
    placeholder_tokens: 1
  - when: window_tokens > 6
    evict: kind != 'summary' and kind != 'record' and kind != 'rationale'
    effect: summarise
    placeholder_tokens: 2"""


def run(p, actions, state=None):
    state = state or State()
    out = []
    for action in actions:
        assert enabled(p, state, action), action
        t = step(p, state, action)
        out.append(t)
        state = t.after
    return out


# ------------------------------------------------------------------------------------------------------- parsing

def test_a_list_of_one_stage_is_the_policy_written_at_the_top():
    flat = policy("evict: kind == 'tool_output'\neffect: mask\npairs: together")
    listed = policy("compaction:\n  - evict: kind == 'tool_output'\n    effect: mask\n    pairs: together")
    assert listed == flat and policy_hash(listed) == policy_hash(flat) and listed.stages == (listed,)


def test_each_stage_keeps_its_own_keys_and_the_whole_policys_deployment():
    p = policy(MASK_THEN_SUMMARISE)
    first, second = p.stages
    assert (first.effect, second.effect, second.placeholder_tokens) == ("mask", "summarise", 2)
    assert first.later == second.later == () and first.deployment == second.deployment == p.deployment
    assert policy_hash(p) != policy_hash(first)  # the later stages are part of what the policy is named by
    # key positions: each stage's own (explanations point into the stage that acted)
    assert first.origin.locations()["evict"].line == 3 and second.origin.locations()["evict"].line == 7
    assert second.origin.locations()["when"].line == 6


def test_the_document_and_the_yaml_writer_give_the_policy_back():
    p = policy(MASK_THEN_SUMMARISE)
    assert parse_policy_text(json.dumps(policy_document(p)), "doc.json") == p
    assert parse_policy_text(policy_yaml(p), "written.yaml") == p
    with pytest.raises(EncodingError):
        policy_python(p)


@pytest.mark.parametrize("text, line, col, words", [
    ("evict: true\ncompaction:\n  - evict: true", 2, 8, "`evict` is a stage key: with `compaction:`, it goes in a stage"),
    ("compaction: []", 2, 13, "compaction must be a list of stages"),
    ("compaction: true", 2, 13, "compaction must be a list of stages"),
    ("compaction:\n  - true", 3, 5, "stage 1 of compaction must be a mapping"),
    ("compaction:\n  - evict: true\n  - effect: mask", 4, 5, "stage 2 of compaction needs `evict`"),
    ("compaction:\n  - evict: true\n    budget: 3", 4, 5, "unknown stage key `budget`"),
    ("compaction:\n  - evict: true\n  - evict: true\n    effect: squash", 5, 13, "effect must be one of"),
    ("compaction:\n  - evict: true\n  - evict: age >\n", 4, 17, "an operand is missing"),
    ("compaction:\n  - evict: true\n  - evict: true\n    when: event == 'x'\n    keep: reported_tokens > 1", 6, 11,
     "`reported_tokens` is what the host tells a compaction it fires"),
])
def test_bad_stage_lists_are_one_line_errors_at_their_place(text, line, col, words):
    exc = policy_error(text)
    assert (exc.line, exc.col) == (line, col) and words in str(exc), str(exc)


# ------------------------------------------------------------------------------------------------------- runtime

def test_the_second_stage_reads_the_window_the_first_left():
    p = policy(MASK_THEN_SUMMARISE)
    appends = [Append("tool_output", 4), Append("message", 2), Append("message", 1)]
    *_, t = run(p, appends + [Compact()])
    # 7 tokens before; the mask leaves 4: the second stage's trigger (window_tokens > 6) is false, it takes nothing
    assert t.after.span(0).masked and t.after.span(0).tokens == 1 and t.evicted == {0}
    assert not any(s.kind == "summary" for s in t.after.spans)
    *_, t = run(p, [Append("tool_output", 4), Append("message", 5), Append("message", 1), Compact()])
    # 10 tokens; the mask leaves 7 > 6: the second stage summarises every message, and the masked output
    assert t.evicted == {0, 1, 2}
    summary = t.after.spans[-1]
    assert summary.kind == "summary" and summary.tokens == 2 and t.after.window_tokens() == 2
    steps = stage_steps(p, t.before, t.after.step, t.action)
    assert [taken for _st, _start, taken, _after, _tokens in steps] == [[0], [0, 1, 2]]
    assert taking_stage(p, t, 0)[0] is p.stages[1] and taking_stage(p, t, 1)[0] is p.stages[1]


def test_one_ledger_entry_and_one_truncation_for_the_whole_compaction():
    p = policy(MASK_THEN_SUMMARISE.replace("    placeholder_tokens: 2", "    placeholder_tokens: 3"),
               "deployment:\n  records: window\n  evidence: 'on'\n  host_truncation: 'on'\n")
    *_, t = run(p, [Append("tool_output", 4), Append("message", 5), Append("message", 1), Compact(budget=2)])
    written = t.after.spans[len(t.before.spans):]
    assert [s.kind for s in written] == ["summary", "rationale"]
    assert len(t.after.entries) == len(t.before.entries) + 1
    # the host's truncation ran once, on the state the last stage left: its summary (3 tokens; the rationale is in
    # the decision log) is over the host's 2, and goes
    assert t.truncated == {written[0].id}


@pytest.mark.parametrize("refusal", ["atomic", "sequential"])
def test_a_stage_that_names_a_recovery_span_where_it_starts_is_refused(refusal):
    p = policy("compaction:\n  - evict: kind == 'tool_output'\n    effect: mask\n  - evict: kind == 'record'",
               f"deployment:\n  records: window\n  evidence: 'off'\n  refusal: {refusal}\n")
    *_, t = run(p, [Append("tool_output", 3), Append("message", 2), Edit(1, "transform"), Compact()])
    assert t.outcome == "blocked"
    if refusal == "atomic":
        assert t.after == replace(t.before, step=t.after.step) and not t.evicted
    else:  # the first stage's mask stays; the refused stage took nothing before the named record
        assert t.after.span(0).masked and t.evicted == {0}
        assert all(s.alive for s in t.after.spans)


def test_a_record_any_stage_selects_is_a_candidate():
    p = policy("compaction:\n  - evict: kind == 'tool_output'\n  - when: window_tokens > 100\n    evict: kind == 'record'")
    ts = run(p, [Append("message", 2), Edit(0, "transform")])
    assert "C1" in violations(p, ts[-1])
    assert "C1" not in violations(p.stages[0], ts[-1])


def test_a_call_one_stage_takes_and_its_result_the_next_takes_is_no_split():
    p = policy("compaction:\n  - evict: role == 'tool_call'\n  - evict: role == 'tool_result'")
    *_, t = run(p, [Append("message", 1, "tool_call"), Append("message", 1, "tool_result"), Compact()])
    assert t.evicted == {0, 1} and "T1" not in violations(p, t)
    one = p.stages[0]
    *_, alone = run(one, [Append("message", 1, "tool_call"), Append("message", 1, "tool_result"), Compact()])
    assert "T1" in violations(one, alone)


# A policy reading no clock attribute, without evidence, truncation or summaries: its two stages in one compaction
# leave what two compactions, one per stage, leave (but for the clock).
CLOCKLESS = st.sampled_from([
    ("evict: kind == 'tool_output'\n    effect: mask", "evict: tokens >= 2 and not masked"),
    ("evict: role == 'tool_result'\n    effect: cut\n    placeholder_tokens: 2", "evict: role == 'tool_call'\n    pairs: together"),
    ("evict: tokens > 2\n    until: window_tokens <= 4", "when: window_tokens > 3\n    evict: kind == 'message'\n    order: newest"),
    ("evict: from_end >= 2\n    start_on: user", "evict: count(role == 'user') >= 2 and role != 'user'"),
])
APPENDS = st.lists(st.builds(Append, st.sampled_from(["message", "tool_output"]), st.integers(1, 4),
                             st.sampled_from(["user", "assistant", "tool_call", "tool_result"])), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(CLOCKLESS, APPENDS)
def test_two_stages_leave_what_two_compactions_leave(stages, appends):
    a, b = stages
    p = policy(f"compaction:\n  - {a}\n  - {b}")
    state = State()
    for action in appends:
        if enabled(p, state, action):
            state = step(p, state, action).after
    both = step(p, state, Compact())
    first = step(p.stages[0], state, Compact())
    second = step(p.stages[1], first.after, Compact())
    assert both.after == replace(second.after, step=both.after.step)
    assert both.evicted == first.evicted | second.evicted


@settings(max_examples=40, deadline=None, derandomize=True)
@given(APPENDS)
def test_a_second_stage_that_takes_nothing_changes_nothing(appends):
    one = policy("evict: kind == 'tool_output' or tokens > 3\neffect: summarise\nplaceholder_tokens: 2",
                 "deployment:\n  records: window\n  evidence: 'on'\n  host_truncation: 'on'\n")
    two = replace(one, later=(Stage(evict=BoolLit(False)),))
    state = State()
    for action in appends + [Edit(0, "transform")]:
        if enabled(one, state, action):
            state = step(one, state, action).after
    for fired in enabled_actions(one, state, 8, token_choices=(1, 3)):
        if isinstance(fired, Compact):
            assert enabled(two, state, fired)
            assert step(two, state, fired) == step(one, state, fired)


# ------------------------------------------------------------------------------------------------------- engines

def test_the_symbolic_models_refuse_a_list_of_stages_at_its_key():
    p = policy(MASK_THEN_SUMMARISE)
    for build in (lambda: Model(p, 4), lambda: PairModel(p), lambda: PairModel(p, free_policy=True)):
        with pytest.raises(EncodingError, match=r"^staged\.yaml:2:1: policy 'staged' has 2 compaction stages"):
            build()


def test_a_list_of_stages_is_searched_explicitly_and_never_proved():
    p = policy(MASK_THEN_SUMMARISE, "deployment:\n  records: undo_region\n  rationale: decision_log\n  pins: host\n"
               "  audit: independent\n")
    report = check(p, CheckOptions(depth=3, spans=5, timeout=3600, rlimit=10 ** 7))
    assert report.results and all(r.verdict != Verdict.HOLDS for r in report.results)
    assert all(r.reason.note is Note.STAGES for r in report.results)
    violated = {r.condition: r for r in report.results if r.verdict == Verdict.VIOLATED}
    assert "M1" in violated  # the summary destroys what it takes: no tombstone, no log
    for r in violated.values():  # each trace is a run of the runtime that violates its condition at its end
        state = State()
        for action in r.trace.actions:
            t = step(p, state, action)
            state = t.after
        assert r.condition in violations(p, t)


def test_the_explanation_points_into_the_stage_that_took_the_span():
    path = "staged.yaml"
    text = f"name: staged\n{MASK_THEN_SUMMARISE}\n{SAFE_OFF}"
    out = io.StringIO()
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / path
        file.write_text(text)
        code = main(["check", str(file), "--only", "M1", "--depth", "4", *CLI_BOUNDS], out, io.StringIO())
    shown = out.getvalue()
    assert code == 1, shown
    assert "stage 2: summarised by the policy" in shown
    assert f"{path}:7:12: `kind != 'summary'` is true" in shown, shown


def test_a_certificate_forged_for_a_list_of_stages_is_refused(tmp_path):
    # A proof of the first stage alone, presented as a proof of a policy that adds a second stage: certify rebuilds the
    # model from the embedded policy, which no model encodes, and refuses it in one line (exit 2).
    one = tmp_path / "one.yaml"
    one.write_text("name: one\nevict: kind == 'tool_output'\neffect: mask\n")
    assert main(["check", str(one), "--only", "C1", "--rlimit", "20000000", "--timeout", "3600", "--out",
                 str(tmp_path / "certs")], io.StringIO(), io.StringIO()) == 0
    (cert,) = (tmp_path / "certs").glob("*.cert.json")
    doc = json.loads(cert.read_text())
    stage = {key: doc["policy"].pop(key) for key in ("evict", "effect")}
    forged = parse_policy_text(json.dumps({**doc["policy"], "compaction": [stage, {"evict": "kind == 'record'"}]}),
                               "forged.json")
    doc.update(policy=policy_document(forged), policy_hash=policy_hash(forged))
    path = tmp_path / "forged.cert.json"
    path.write_text(json.dumps(doc))
    err = io.StringIO()
    assert main(["certify", str(path)], io.StringIO(), err) == 2
    assert "has 2 compaction stages" in err.getvalue() and err.getvalue().count("\n") == 1


def test_the_exact_forms_written_as_stage_lists_parse():
    # A framework file whose `# exact form` block says it is parsed holds a stage list the loader accepts, with the
    # file's own name and deployment (the file itself keeps its one-stage form until the models encode lists).
    root = Path(__file__).resolve().parents[1] / "examples" / "frameworks"
    checked = 0
    for path in sorted(root.glob("*.yaml")):
        lines = path.read_text(encoding="utf-8").splitlines()
        starts = [k for k, line in enumerate(lines) if line.startswith("# exact form (issue 29): parsed")]
        if not starts:
            continue
        block = []
        for line in lines[starts[0] + 1:]:
            if line.startswith("#   "):
                block.append(line[4:].split("  #")[0].rstrip())
            elif block:
                break
        own = [line for line in lines if line.startswith(("name:", "deployment:", "  "))]
        policy = parse_policy_text("\n".join(own[:1] + block + own[1:]) + "\n", path.name)
        assert len(policy.stages) >= 2, path.name
        checked += 1
    assert checked >= 1


def test_diff_never_calls_two_lists_of_stages_equivalent_by_their_first_stages():
    from prunecheck.checker.commands.policydiff import equivalence
    one = policy("compaction:\n  - evict: kind == 'tool_output'\n  - evict: kind == 'record'")
    other = policy("compaction:\n  - evict: kind == 'tool_output'\n  - evict: kind == 'message'")
    assert not equivalence(one, other).proved and "later stages differ" in equivalence(one, other).reason
    assert equivalence(one, policy("compaction:\n  - evict: \"kind == 'tool_output'\"\n  - evict: kind == 'record'")).proved
