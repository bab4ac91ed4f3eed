"""Findings computed once: the loader records where a policy's keys are, and every output reads one Finding per
counterexample instead of replaying, explaining or re-reading the policy file itself."""

from __future__ import annotations

import io
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from prunecheck.checker.check import check
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.cli import main
from prunecheck.checker.findings import explain as explain_module
from prunecheck.checker.engines.replay import first_violation
from prunecheck.checker.findings.finding import findings_of
from prunecheck.checker.language.document import policy_hash
from prunecheck.checker.language.loader import load_policy, parse_policy_text
from prunecheck.checker.language.locate import key_locations, source_lines
from prunecheck.checker.outputs.files import Checked, document, write_files
from prunecheck.checker.outputs.render import report_text
from prunecheck.checker.result import Trace
from prunecheck.spec.runtime import Append, Edit

from conftest import BOUNDS, CLI_BOUNDS, EXAMPLES

FORMS = ["seed_flawed.yaml", "seed_flawed.py", "kind_excludes_records.json"]


def _shift(path: Path) -> None:
    """Rewrite the file so that it still parses to the same policy, every line three lines further down."""
    path.write_text("\n\n\n" + path.read_text(encoding="utf-8"), encoding="utf-8")


@pytest.mark.parametrize("name", FORMS)
def test_the_loader_records_the_text_it_read_and_where_the_keys_sit_in_it(tmp_path, name):
    path = tmp_path / name
    shutil.copy(EXAMPLES / name, path)
    text = path.read_text(encoding="utf-8")
    policy = load_policy(path)
    where = key_locations(policy)
    _shift(path)
    assert load_policy(path) == policy  # the same policy, written three lines lower
    assert key_locations(policy) == where and "evict" in where and "deployment" in where
    assert source_lines(policy) == tuple(text.splitlines())
    for key, loc in where.items():
        line = text.splitlines()[loc.line - 1]
        assert not line[loc.col - 1].isspace(), (key, loc)
        if name.endswith(".yaml") and "." not in key and key != "budget":
            assert line[loc.col - 1:].startswith(key), (key, loc)


def test_where_the_text_is_written_takes_no_part_in_equality_or_the_policy_hash():
    text = (EXAMPLES / "seed_flawed.yaml").read_text(encoding="utf-8")
    first = parse_policy_text(text, "first.yaml")
    second = parse_policy_text("# moved down\n\n" + text, "second.yaml")
    assert first == second and hash(first) == hash(second) and repr(first) == repr(second)
    assert policy_hash(first) == policy_hash(second)
    assert key_locations(first)["evict"].line + 2 == key_locations(second)["evict"].line


def _outputs(checked: Checked, out: Path) -> dict:
    write_files(checked, "p", str(out / "files"), str(out / "pytest"), io.StringIO(), str(out / "python"))
    written = {f.relative_to(out).as_posix(): f.read_text(encoding="utf-8") for f in sorted(out.rglob("*.py*"))}
    written.update({"text": report_text(checked.report, checked.findings, None),
                    **{fmt: document(fmt, [checked]) for fmt in ("json", "sarif", "html")}})
    return written


def test_no_output_reads_the_policy_file_after_it_was_loaded(tmp_path):
    path = tmp_path / "p.yaml"
    shutil.copy(EXAMPLES / "seed_flawed.yaml", path)
    policy = load_policy(path)
    report = check(policy, CheckOptions(depth=3, spans=3, only=("C1", "C2"), prove=False, **BOUNDS))
    checked = Checked(str(path), policy, report)
    before = _outputs(checked, tmp_path / "before")
    _shift(path)
    after = _outputs(checked, tmp_path / "after")
    assert before.keys() == after.keys() and len(before) > 4
    for name in before:
        assert before[name] == after[name], name
    assert f"{path}:6:8: `not pinned` is true" in before["text"]


def test_every_output_of_a_check_reads_findings_explained_once(tmp_path, monkeypatch):
    labelled = []
    step_label = explain_module.step_label
    monkeypatch.setattr(explain_module, "step_label", lambda policy, t: labelled.append(t) or step_label(policy, t))
    out = io.StringIO()
    argv = ["check", str(EXAMPLES / "seed_flawed.yaml"), "--depth", "3", "--spans", "3", "--no-prove", "--format",
            "json", "--out", str(tmp_path / "o"), "--python", str(tmp_path / "s"), "--emit-pytest",
            str(tmp_path / "t"), *CLI_BOUNDS]
    assert main(argv, out, io.StringIO()) == 1
    traces = [c["trace"] for c in json.loads(out.getvalue())["policies"][0]["conditions"].values() if "trace" in c]
    assert len(traces) >= 2 and len(labelled) == sum(len(trace) for trace in traces)


def test_a_finding_per_counterexample_replayed_to_its_violation():
    policy = load_policy(EXAMPLES / "seed_flawed.yaml")
    checked = check(policy, CheckOptions(depth=3, spans=3, only=("C1",), prove=False, **BOUNDS))
    (result,) = checked.results
    other = Trace("C1", (Append("message", 2), Edit(0, "transform")), 3)  # a further one, as the search may give
    report = replace(checked, results=(replace(result, others=(other,)),))
    findings = findings_of(policy, report)
    traces = [result.trace, other]
    assert [(f.condition, f.number, f.trace) for f in findings.items] == [
        ("C1", n, t) for n, t in enumerate(traces, start=1)]
    assert len(traces) == 2 and findings.first("C1") is findings.items[0] and findings.of("C2") == ()
    for f in findings.items:
        assert tuple(t.action for t in f.transitions) == f.trace.actions
        assert first_violation(policy, f.transitions, "C1") == len(f.transitions)
        assert f.locations == tuple(p.loc for p in f.explanation.cause.points) and f.locations
