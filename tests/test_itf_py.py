"""ITF traces are read by itf-py, the Python reader of Apalache and Quint traces, into the states prunecheck runs."""

import io
import json

import pytest

from prunecheck import cli
from prunecheck.checker.language.document import policy_document
from prunecheck.checker.outputs.itf import read_trace_file, trace_document
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.engines.replay import replay
from prunecheck.spec.runtime import Append, Audit, Compact, Edit, Read, Undo

from conftest import CLI_BOUNDS
from policy_table import EXAMPLES
from support import assert_itf_py_reads_our_states

SMALL = ["--depth", "6", "--spans", "4", "--no-prove"]
# These traces are about the first seed's mechanism (a host's budget, a summary's place, a merge of a destroy): its
# deployment is stated; citations and ledger entries in ITF traces are tested in test_evidence.py.
FIRST_SEED = {"evidence": "off", "destroy_record": "verbatim"}


def _write_traces(policy_file, out_dir, *extra):
    code = cli.main(["check", str(policy_file), "--out", str(out_dir), *extra] + SMALL + CLI_BOUNDS,
                    io.StringIO(), io.StringIO())
    assert code in (0, 1, 3)
    return sorted(out_dir.glob("*.itf.json"))


def _check_file(path):
    document = json.loads(path.read_text())
    _document, info, policy, actions = read_trace_file(path)
    assert_itf_py_reads_our_states(policy, replay(policy, actions, info["spans"]), document)


def _hosted(tmp_path) -> list:
    """CLI arguments for a host that truncates (host_truncation: on, SPEC §2): kind_excludes_records holds every
    condition without one."""
    path = tmp_path / "host.yaml"
    path.write_text(json.dumps({"host_truncation": "on", **FIRST_SEED}))
    return ["--deployment", str(path)]


def test_a_written_trace_with_a_host_budget_is_read_by_itf_py(tmp_path):
    files = _write_traces(EXAMPLES / "kind_excludes_records.json", tmp_path / "out", *_hosted(tmp_path))
    assert files
    for path in files:
        _check_file(path)
    picks = [s["mbt::nondetPicks"] for s in json.loads(files[0].read_text())["states"]]
    assert picks[0] == {} and any("budget" in p for p in picks)


def test_a_written_trace_with_citations_is_read_by_itf_py(tmp_path):
    # The defaults keep evidence (ADR 0035): kind_excludes_records' J1 trace cites a span, written as an ITF set.
    files = _write_traces(EXAMPLES / "kind_excludes_records.json", tmp_path / "out")
    cited = [f for f in files if '"cites"' in f.read_text()]
    assert cited
    for path in cited:
        _check_file(path)


def test_repetitions_and_every_action_argument_are_read_by_itf_py():
    policy = parse_policy_text('{"name": "p", "evict": "age > 3", "budget": 5, '
                               '"deployment": {"records": "window"}}', "p.json")
    actions = (Append("message", 2), Edit(0, "destroy"), Read(1, 3), Audit(4), Compact(1), Compact())
    transitions = replay(policy, actions, 4)
    document = json.loads(json.dumps(trace_document(policy, policy_document(policy), transitions, {})))
    assert_itf_py_reads_our_states(policy, transitions, document)


def test_a_summary_and_its_place_are_read_by_itf_py():
    policy = parse_policy_text("name: p\nevict: from_end >= 1\neffect: summarise\nsummary_role: system\n"
                               f"deployment: {json.dumps(FIRST_SEED)}\n", "p.yaml")
    transitions = replay(policy, (Append("message", 2), Append("message", 1), Compact(), Compact(1)), 4)
    document = json.loads(json.dumps(trace_document(policy, policy_document(policy), transitions, {})))
    assert document["states"][3]["spans"][2]["place"] == {"#bigint": "0"}
    assert_itf_py_reads_our_states(policy, transitions, document)


@pytest.mark.slow
def test_every_trace_the_examples_produce_is_read_by_itf_py(tmp_path):
    files = []
    for index, policy_file in enumerate(sorted(p for p in EXAMPLES.iterdir() if p.is_file() and p.suffix != ".toml")):
        files += _write_traces(policy_file, tmp_path / str(index))
    assert len(files) >= 10
    for path in files:
        _check_file(path)


OLD_PICKS = ("kind", "tokens", "target", "mode", "span", "edit")


def _old_form(document):
    """The same trace as prunecheck wrote it before: every pick a Quint Option, optional ones only when Some."""
    none = {"tag": "None", "value": {"#tup": []}}
    for state in document["states"]:
        picks = state["mbt::nondetPicks"]
        old = {key: {"tag": "Some", "value": picks[key]} if key in picks else none for key in OLD_PICKS}
        old.update({key: {"tag": "Some", "value": value} for key, value in picks.items() if key not in OLD_PICKS})
        state["mbt::nondetPicks"] = old
    return document


def test_traces_in_the_old_option_form_still_replay_and_explain(tmp_path):
    written = _write_traces(EXAMPLES / "kind_excludes_records.json", tmp_path / "out", *_hosted(tmp_path))
    (path,) = [p for p in written if ".C2." in p.name]
    old = path.parent / "old.C2.itf.json"  # beside the original: the policy path it names resolves alike
    old.write_text(json.dumps(_old_form(json.loads(path.read_text())), indent=1))
    assert '"tag": "None"' in old.read_text() and '"budget": {\n' in old.read_text()
    for command in ("replay", "explain"):
        outputs = []
        for trace in (path, old):
            out = io.StringIO()
            assert cli.main([command, str(trace)], out, io.StringIO()) == 0
            outputs.append(out.getvalue())
        assert outputs[0] == outputs[1]
    assert "reproduces as recorded" in outputs[0] or "violated at step" in outputs[0]


def test_a_confabulated_span_and_a_merge_entry_are_read_by_itf_py():
    deployment = {"records": "window", "undo": "merge", "missing_record": "reconstruct", **FIRST_SEED}
    policy = parse_policy_text(f"name: p\nevict: kind == 'record'\ndeployment: {json.dumps(deployment)}\n", "p.yaml")
    actions = (Append("message", 2), Edit(0, "destroy"), Edit(0, "transform"), Undo(1), Compact(), Undo(5))
    transitions = replay(policy, actions, 8)
    document = json.loads(json.dumps(trace_document(policy, policy_document(policy), transitions, {})))
    assert document["states"][4]["edits"][2]["mode"] == "merge"
    assert document["states"][6]["spans"][0]["confabulated"] is True
    assert "confabulated" not in document["states"][5]["spans"][0]
    assert_itf_py_reads_our_states(policy, transitions, document)
