"""The command line: exit codes, JSON and ITF output, replay, and one-line errors for bad input."""

import json
import re
import os
import subprocess
import sys

import pytest

from prunecheck.checker.language.loader import load_policy
from prunecheck.spec.conditions import applicable
from prunecheck.spec.errors import ReplayMismatch

from conftest import CLI_BOUNDS, HANG_GUARD
from support import run_cli as run
from policy_table import EXAMPLES

SEED = str(EXAMPLES / "seed_flawed.yaml")
SAFE = str(EXAMPLES / "seed_safe_design.yaml")


def test_violated_policy_exits_1_with_a_table_and_trace():
    code, out, err = run("check", SEED, "--depth", "6")
    assert code == 1
    assert "C1  violated" in out and "1. append(" in out and "verdict: violated" in out
    assert err == ""


def test_safe_policy_is_proved_and_exits_0():
    code, out, _ = run("check", SAFE, "--depth", "4")
    assert code == 0
    # ten rows: T1 is asked of every policy under the default tool_calls: on (ADR 0033); M1, A1, J1 (evidence: on)
    rows = re.findall(r"^  [A-Z]\d  holds ", out, re.MULTILINE)
    assert len(rows) == 10 and "certificate re-checked by cvc5" in out and "verdict: holds" in out


def test_without_proofs_a_safe_policy_is_unknown_and_exits_3():
    code, out, _ = run("check", SAFE, "--depth", "4", "--no-prove")
    assert code == 3
    # no row holds (Q3's answer now says "the edit ledger holds every edit", ADR 0031, so the word alone may appear);
    # ten rows, with T1 (ADR 0033) and M1, A1, J1
    assert "violated" not in out and "  holds " not in out and "verdict: holds" not in out
    assert out.count("bounded search only") == 10


def test_json_document_records_what_reproduces_the_verdict():
    code, out, _ = run("check", SEED, "--depth", "5", "--spans", "5", "--only", "C1,P1", "--format", "json")
    assert code == 1
    document = json.loads(out)
    assert document["tool"] == "prunecheck" and document["verdict"] == "violated"
    assert set(document["versions"]) == {"prunecheck", "python", "z3", "cvc5"}
    (doc,) = document["policies"]
    assert doc["policy"] == "seed-recency-frequency" and doc["verdict"] == "violated"
    assert set(doc["conditions"]) == {"C1", "P1"}
    c1 = doc["conditions"]["C1"]
    assert c1["verdict"] == "violated" and c1["depth"] == len(c1["trace"]) == 2
    assert c1["trace"][1]["action"] == "edit"
    assert doc["conditions"]["P1"]["verdict"] == "holds" and doc["conditions"]["P1"]["depth"] is None
    assert doc["conditions"]["P1"]["certificate"]["condition"] == "P1"
    assert doc["depth"] == 5 and doc["spans"] == 5 and len(doc["policy_hash"]) == 64
    assert doc["versions"] == document["versions"]


def test_several_policies_give_one_document_with_the_worst_verdict():
    code, out, _ = run("check", SEED, SAFE, "--depth", "3", "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["verdict"] == "violated" and len(doc["policies"]) == 2


def test_itf_traces_replay_and_tampering_is_detected(tmp_path):
    code, _, err = run("check", SEED, "--depth", "4", "--out", str(tmp_path))
    assert code == 1 and "wrote" in err
    files = sorted(tmp_path.glob("*.itf.json"))
    assert sorted(f.name.split(".")[1] for f in tmp_path.glob("*.cert.json")) == ["A1", "C3", "P1", "R1"]
    # T1: the role-blind seed policy splits a tool call from its result in 4 steps (ADR 0033); M1 and J1 (evidence on
    # by default, ADR 0035): a compaction destroys a span without a tombstone, and takes the span its ledger cites
    assert [f.name.split(".")[1] for f in files] == ["C1", "C2", "C4", "J1", "M1", "T1"]
    doc = json.loads(files[0].read_text())
    assert doc["#meta"]["format"] == "ITF" and doc["vars"] and doc["states"][0]["mbt::actionTaken"] == "init"
    assert doc["states"][1]["step"] == {"#bigint": "1"}
    assert doc["states"][-1]["violations"] == {"#set": ["C1"]}
    code, out, _ = run("replay", str(files[0]))
    assert code == 0 and "reproduces as recorded" in out and "step 2: edit(" in out
    doc["states"][1]["spans"][0]["tokens"] = {"#bigint": "999"}
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(doc))
    code, out, _ = run("replay", str(tampered))
    assert code == 1 and "state 1 differs" in out


def test_a_trace_cannot_ask_its_replay_for_unbounded_spans(tmp_path):
    # The runtime builds every span an Append(times=n) writes: a tampered count with a tampered (or missing) span
    # bound would exhaust memory. The bound is checked, and a missing one means the largest allowed.
    code, _, _ = run("check", SEED, "--depth", "4", "--no-prove", "--out", str(tmp_path))
    doc = json.loads(sorted(tmp_path.glob("*.itf.json"))[0].read_text())
    (first,) = [s for s in doc["states"][1:2] if s["mbt::actionTaken"] == "append"]
    first["mbt::nondetPicks"]["times"] = {"#bigint": str(10 ** 12)}
    for spans, expected in ((10 ** 12, 2), (0, 2), (True, 2), (None, 1)):
        meta = doc["#meta"]["prunecheck"]
        meta.pop("spans", None)
        if spans is not None:
            meta["spans"] = spans
        tampered = tmp_path / "tampered.json"
        tampered.write_text(json.dumps(doc))
        code, out, err = run("replay", str(tampered))
        assert code == expected, (spans, out, err)
        message = err if expected == 2 else out
        assert len(message.strip().splitlines()) == 1
        assert ("spans must be an integer from 1 to 2048" in err if expected == 2 else "no span slot left" in out)


def test_a_counterexample_names_the_host_budget_everywhere(tmp_path):
    policy = str(EXAMPLES / "kind_excludes_records.json")
    host = tmp_path / "host.yaml"  # the policy spares records: only a host that truncates takes one (SPEC §2)
    host.write_text('host_truncation: "on"\n')
    code, out, _ = run("check", policy, "--only", "C2", "--no-prove", "--out", str(tmp_path), "--deployment", str(host))
    assert code == 1 and "C2  violated" in out and "compact(budget=" in out
    code, out, _ = run("check", policy, "--only", "C2", "--no-prove", "--format", "json", "--deployment", str(host))
    trace = json.loads(out)["policies"][0]["conditions"]["C2"]["trace"]
    budget = trace[-1]["args"]["budget"]
    assert trace[-1]["action"] == "compact" and budget >= 1
    (written,) = tmp_path.glob("*.C2.itf.json")
    picks = json.loads(written.read_text())["states"][-1]["mbt::nondetPicks"]
    assert picks["budget"] == {"#bigint": str(budget)}
    code, out, _ = run("replay", str(written))
    assert code == 0 and f"compact(budget={budget})" in out
    code, out, _ = run("check", policy, "--only", "C2", "--no-prove", "--python", str(tmp_path / "scripts"),
                       "--deployment", str(host))
    (script,) = (tmp_path / "scripts").glob("*_c2.py")
    assert f"Compact(budget={budget})" in script.read_text()


def test_deployment_override_sets_the_keys_it_gives(tmp_path):
    deployment = tmp_path / "safe.yaml"
    # tool_calls off: the role-blind seed policy would split a tool-call pair (T1, ADR 0033), not this test's subject;
    # evidence off: the test is about the first seed's keys, the second seed's defaults (M1, J1) are tested elsewhere
    deployment.write_text("deployment:\n  records: undo_region\n  pins: host\n  audit: independent\n"
                          "  tool_calls: \"off\"\n  evidence: \"off\"\n")
    code, out, _ = run("check", SEED, "--depth", "4", "--deployment", str(deployment))
    # every condition holds; the seed's expect table (written for its own deployment) differs, and says so (exit 1)
    assert "  verdict: holds; differs from the policy's expect table: C1, C2, C4" in out and code == 1
    assert not [line for line in out.splitlines() if line.startswith("  C") and "violated" in line]


BAD_INPUTS = {
    "unknown_name.yaml": ("name: x\nevict: tokenz > 3\n", 2, 8),
    "enum_typo.yaml": ("name: x\nevict: kind == 'recrod'\n", 2, 16),
    "type_error.yaml": ("name: x\nevict: kind + 1 > 2\n", 2, 13),
    "zero_division.yaml": ("name: x\nevict: reads / age > 1\n", 2, 14),
    "empty.yaml": ("", 1, 1),
    "huge.yaml": ("name: x\nevict: tokens " + "+ 1 " * 20000 + "> 3\n", 2, None),
    "deep.yaml": ("name: x\nevict: " + "(" * 10000 + "true" + ")" * 10000 + "\n", 2, None),
    "imports.py": ("import os\n\ndef evict(span, window):\n    return True\n", 1, 1),
    "dunder.py": ("def evict(span, window):\n    return span.__class__ == 1\n", 2, 17),
    "calls.py": ("def evict(span, window):\n    return open('x') == 1\n", 2, 12),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_with_file_line_column_and_exit_2(tmp_path, name):
    text, line, col = BAD_INPUTS[name]
    path = tmp_path / name
    path.write_text(text)
    code, out, err = run("check", str(path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{path}:{line}:" in err
    if col is not None:
        assert f"{path}:{line}:{col}:" in err


def test_wrong_encoding_names_the_byte(tmp_path):
    path = tmp_path / "latin.yaml"
    path.write_bytes("name: caf\xe9\nevict: true\n".encode("latin-1"))
    code, _, err = run("check", str(path))
    assert code == 2 and err.count("\n") == 1 and f"{path}:1:" in err


@pytest.mark.parametrize("argv", [
    ["check"], ["check", SEED, "--depth", "deep"], ["check", SEED, "--only", "C9"], ["frobnicate"],
    ["check", "/nonexistent/policy.yaml"], ["replay", "/nonexistent/trace.json"],
    ["check", SEED, "--repeats", "0"], ["check", SEED, "--repeats", "many"], ["check", SEED, "--tokens", "1,x"],
])
def test_usage_errors_exit_2_in_one_line(argv):
    code, out, err = run(*argv)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err


def test_a_counterexample_that_does_not_replay_is_an_internal_error(monkeypatch):
    def broken(*args, **kwargs):
        raise ReplayMismatch("C1 counterexample of 2 steps fails at step None on the runtime")
    monkeypatch.setattr("prunecheck.checker.check.check_bounded", broken)
    code, _, err = run("check", SEED)
    assert code == 4 and "checker bug" in err and err.count("\n") == 1


def test_same_policy_and_flags_give_the_same_traces_whatever_the_hash_seed():
    def traces(seed):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-m", "prunecheck", "check", SEED, "--depth", "4", "--format", "json",
                               *CLI_BOUNDS], capture_output=True, text=True, env=env, timeout=HANG_GUARD)
        doc = json.loads(done.stdout)
        return {c: v.get("trace") for c, v in doc["policies"][0]["conditions"].items()}
    first = traces("1")
    assert first["C1"] is not None and first == traces("2")


def test_a_memory_limit_is_honoured_and_reported_as_unknown():
    code, out, err = run("check", SEED, "--memory", "1", "--no-prove")
    conditions = len(applicable(load_policy(SEED)))  # with T1, and M1, A1, J1 under the default evidence: on
    assert code == 3 and err == "" and out.count("solver memory limit of 1 MB reached") == conditions
    code, out, _ = run("check", SEED, "--no-prove", "--depth", "3")
    assert code == 1 and "C1  violated" in out  # the limit was lifted after the first check


def test_the_explicit_engine_waits_as_long_as_the_policys_constant_asks_and_repeats_overrides_it(tmp_path):
    path = tmp_path / "old.yaml"
    path.write_text("name: old\nevict: age > 100\ndeployment: {records: window}\n")
    code, out, _ = run("check", str(path), "--engine", "explicit", "--depth", "3", "--spans", "4", "--only", "C1")
    assert code == 1 and "audit(times=101)" in out and "3 actions, 103 steps" in out
    assert "repetitions {1, 99, 100, 101}" in out
    code, out, _ = run("check", str(path), "--engine", "explicit", "--depth", "3", "--spans", "4", "--only", "C1",
                       "--repeats", "1,2")
    assert code == 3 and "repetitions {1, 2} (given)" in out
