"""Tests for batch vetting: path expansion, the report cache, worker processes, Dask, the summary and the CLI wiring."""

import io
import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from prunecheck.checker.commands.batch import (BatchItem, batch_item, check_many, error_line,
                                      exit_code, expand_policy_paths, options_from_args, run_batch_cli, summary_table,
                                      summary_text)
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.outputs.cache import ReportCache, ReportFormatError, cache_key, cacheable, report_from_json
from prunecheck.checker.language.document import policy_hash
from prunecheck.checker.cli import UsageError, build_parser
from prunecheck.checker.language.operator import load_judged
from prunecheck.checker.outputs.render import report_json
from prunecheck.checker.result import Verdict
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.checker.outputs.reason_doc import reasons_json

from conftest import BOUNDS, CLI_BOUNDS, EXAMPLES, RLIMIT

# rationale_in_window's P1 counterexample at depth 6 once depended on what the process had checked before.
NAMES = ("seed_flawed.yaml", "seed_safe_design.yaml", "blind_undo.yaml", "rationale_in_window.yaml")
OPTIONS = CheckOptions(depth=6, spans=4, trust_policy_deployment=True, **BOUNDS)  # human-authored test files


def _copies(directory: Path) -> list:
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for name in NAMES:
        (directory / name).write_bytes((EXAMPLES / name).read_bytes())
        out.append(directory / name)
    return out


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """The four policies checked cold (jobs=2, fresh cache), then warm from the same cache."""
    root = tmp_path_factory.mktemp("batch")
    paths = _copies(root / "policies")
    cache = root / "cache"
    cold = check_many(paths, OPTIONS, jobs=2, cache_dir=cache)
    warm = check_many(paths, OPTIONS, jobs=2, cache_dir=cache)
    return paths, cache, cold, warm


def test_expand_policy_paths_orders_dedups_and_recurses(tmp_path):
    for rel in ("b/z.yaml", "b/deep/a.json", "b/c.py", "b/notes.txt", "a.yml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    got = expand_policy_paths([str(tmp_path / "b"), str(tmp_path / "**" / "*.y*ml"), str(tmp_path / "b" / "c.py")])
    assert [p.relative_to(tmp_path).as_posix() for p in got] == ["b/c.py", "b/deep/a.json", "b/z.yaml", "a.yml"]
    assert expand_policy_paths([str(tmp_path / "b" / "notes.txt")]) == (tmp_path / "b" / "notes.txt",)


@pytest.mark.parametrize("arg", ["missing.yaml", "nowhere/*.yaml", "empty"])
def test_expand_policy_paths_refuses_what_names_no_policy(tmp_path, arg):
    (tmp_path / "empty").mkdir()
    with pytest.raises(PolicySyntaxError) as info:
        expand_policy_paths([str(tmp_path / arg)])
    assert info.value.file == str(tmp_path / arg) and (info.value.line, info.value.col) == (1, 1)


def test_batch_finds_the_examples_expected_verdicts(batch):
    _, _, cold, _ = batch
    verdicts = {Path(item.path).name: item.report.verdict for item in cold}
    assert verdicts == {"seed_flawed.yaml": Verdict.VIOLATED, "seed_safe_design.yaml": Verdict.HOLDS,
                        # blind_undo: C3 unknown at this depth, T1 violated (a role-blind policy, ADR 0033)
                        "blind_undo.yaml": Verdict.VIOLATED, "rationale_in_window.yaml": Verdict.VIOLATED}
    assert not any(item.cached or item.error for item in cold)


def test_warm_run_reads_equal_reports_and_never_unknown_ones(batch):
    _, cache, cold, warm = batch
    for before, after in zip(cold, warm):
        assert after.report == before.report
        # a report with an unknown row (blind_undo's C3) is not cached, whatever its verdict
        assert after.cached == all(r.verdict != Verdict.UNKNOWN for r in before.report.results)
    assert [after.cached for after in warm] == [True, True, False, True]
    assert len(list(cache.rglob("*.json"))) == 3


def test_report_from_json_inverts_report_json(batch):
    _, _, cold, _ = batch
    for item in cold:
        back = report_from_json(json.loads(json.dumps(report_json(item.report))), reasons_json(item.report))
        assert back == item.report
    traced = [r for item in cold for r in item.report.results if r.trace is not None]
    proved = [r for item in cold for r in item.report.results if r.certificate is not None]
    assert traced and proved
    doc = report_json(cold[0].report)
    doc["conditions"]["C1"]["trace"][0]["args"]["tokens"] = True
    with pytest.raises(ReportFormatError):
        report_from_json(doc, reasons_json(cold[0].report))


def test_reports_do_not_depend_on_worker_history(batch):
    paths, _, cold, _ = batch
    # In the cold batch it was the fourth of four policies on two workers, after others; here it is alone.
    (alone,) = check_many([paths[3]], OPTIONS, jobs=2)
    assert alone.report == cold[3].report and alone.report.result("P1").trace is not None


def test_cache_ignores_corrupt_entries_and_keys_every_option(batch, tmp_path):
    paths, _, cold, _ = batch
    cache = ReportCache(tmp_path)
    policy = load_judged(paths[1], OPTIONS)
    settings = OPTIONS.settings(policy_hash(policy))
    report = cold[1].report
    assert cache.store(settings, report) and cache.report(settings, policy) == report
    for changed in (replace(OPTIONS, depth=5), replace(OPTIONS, prove=False), replace(OPTIONS, tokens=(1, 2)),
                    replace(OPTIONS, repeats=(1, 9)), replace(OPTIONS, engine="explicit"),
                    replace(OPTIONS, timeout=OPTIONS.timeout + 1), replace(OPTIONS, only=("C1",)),
                    replace(OPTIONS, counterexamples=2), replace(OPTIONS, memory_mb=512),
                    replace(OPTIONS, rlimit=RLIMIT + 1)):
        assert cache.report(changed.settings(policy_hash(policy)), policy) is None
    (entry,) = tmp_path.rglob("*.json")
    text = entry.read_text()
    for corrupt in (text[: len(text) // 2].encode(), text.replace('"holds"', '"violated"', 1).encode(), b"\x00\xff"):
        entry.write_bytes(corrupt)
        assert cache.report(settings, policy) is None
    (item,) = check_many([paths[1]], OPTIONS, jobs=2, cache_dir=tmp_path)
    assert not item.cached and item.report == report
    assert cache.report(settings, policy) == report  # recomputed and rewritten
    unknown = cold[2].report
    assert not cacheable(unknown)
    assert not cache.store(OPTIONS.settings(unknown.policy_hash), unknown)
    assert cache_key(settings) != cache_key({**settings, "versions": {"prunecheck": "0", "z3": "0"}})


def test_unknown_reports_are_cached_only_when_asked(batch, tmp_path):
    paths, _, cold, _ = batch
    unknown = cold[2].report
    assert any(r.verdict == Verdict.UNKNOWN for r in unknown.results)
    cache, settings = ReportCache(tmp_path), OPTIONS.settings(unknown.policy_hash)
    policy = load_judged(paths[2], OPTIONS)
    assert cacheable(unknown, unknown=True) and cache.store(settings, unknown, unknown=True)
    assert cache.report(settings, policy) is None and cache.report(settings, policy, unknown=True) == unknown
    asked = replace(OPTIONS, cache_unknown=True)
    (item,) = check_many([paths[2]], asked, jobs=1, cache_dir=tmp_path)
    assert item.cached and item.report == unknown
    # The time budget is part of an unknown's key: a different one must not read it (a key, not a limit).
    shorter = replace(asked, timeout=asked.timeout / 2)
    assert cache.report(shorter.settings(unknown.policy_hash), policy, unknown=True) is None
    args = build_parser().parse_args(["check", "x.yaml", "--cache-unknown"])
    assert options_from_args(args).cache_unknown


def test_cached_report_takes_the_path_it_was_read_from(batch, tmp_path):
    paths, cache, cold, _ = batch
    twin = tmp_path / "twin.yaml"
    twin.write_text("# same policy, other file\n" + paths[0].read_text())
    item = batch_item(str(twin), OPTIONS, str(cache))
    assert item.cached and item.report == replace(cold[0].report, source=str(twin))


def test_a_bad_policy_is_an_item_not_a_crash(batch, tmp_path):
    cache = batch[1]
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nevict: recency <\n")
    good = _copies(tmp_path / "p")[1]
    items = check_many([bad, good], OPTIONS, jobs=2, cache_dir=cache)
    assert items[0].report is None and items[0].error.startswith(f"{bad}:2:") and not items[0].internal
    assert items[1].report.verdict == Verdict.HOLDS
    assert exit_code(items) == 2


def test_an_error_names_its_file_once(tmp_path):
    (tmp_path / "binary.yaml").write_bytes(b"\x00\x01\x02")
    out, err = io.StringIO(), io.StringIO()
    assert run_batch_cli(_check_args([str(tmp_path), "--no-cache"]), out, err) == 2
    assert err.getvalue().count(str(tmp_path / "binary.yaml")) == 1, err.getvalue()
    assert f"prunecheck: error: {tmp_path / 'binary.yaml'}:1:1: " in err.getvalue()
    assert error_line(BatchItem("a.yaml", None, "the checker process died")) == "a.yaml: the checker process died"


def dying_worker(path, options, cache_dir):
    if path.endswith("die.yaml"):
        os._exit(9)
    return BatchItem(path, None, "not checked")


def test_a_dying_worker_loses_only_its_own_policy(tmp_path):
    paths = [str(tmp_path / name) for name in ("a.yaml", "die.yaml", "b.yaml", "c.yaml")]
    items = check_many(paths, OPTIONS, jobs=2, worker=dying_worker)
    assert [item.path for item in items] == paths
    assert [item.internal for item in items] == [False, True, False, False]
    assert "died" in items[1].error and exit_code(items) == 4


def test_progress_and_summaries(batch, monkeypatch):
    from rich.console import Console

    from prunecheck.checker.outputs import progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(progress, "DELAY", 0)
    paths, cache, _, items = batch
    piped, terminal = io.StringIO(), Terminal()
    check_many([paths[0], paths[1], paths[3]], OPTIONS, jobs=1, cache_dir=cache, progress=piped)
    check_many([paths[0], paths[1], paths[3]], OPTIONS, jobs=2, cache_dir=cache, progress=terminal)
    assert piped.getvalue() == "" and "3/3" in terminal.getvalue()  # a bar on a terminal only
    text = summary_text(items)
    lines = text.splitlines()
    # T1: ADR 0033; M1, A1, J1: the safe design keeps evidence (the second seed's conditions)
    assert lines[0].split() == ["policy", "verdict", "C1", "C2", "C3", "C4", "P1", "T1", "R1", "M1", "A1", "J1",
                                 "seconds", "cached"]
    assert lines[1].split()[:7] == [str(paths[0]), "violated", "violated", "violated", "holds", "violated", "holds"]
    assert lines[-1] == "4 policies: 3 violated, 1 holds; 3 from the cache"  # blind_undo: T1 violated
    console = Console(file=io.StringIO(), width=200)
    console.print(summary_table(items))
    rendered = console.file.getvalue()
    assert all(str(p) in rendered for p in paths) and "unknown" in rendered


def _check_args(argv):
    return build_parser().parse_args(["check"] + argv)


def test_cli_text_json_and_exit_codes(batch, tmp_path):
    paths, cache, cold, _ = batch
    common = ["--depth", "6", "--spans", "4", "--trust-policy-deployment", *CLI_BOUNDS, "--cache", str(cache)]
    out, err = io.StringIO(), io.StringIO()
    assert run_batch_cli(_check_args([str(paths[0].parent / "seed_*.yaml"), str(paths[3])] + common), out, err) == 1
    assert out.getvalue().splitlines()[-1] == "3 policies: 2 violated, 1 holds; 3 from the cache"
    out = io.StringIO()
    assert run_batch_cli(_check_args([str(p) for p in paths[:2]] + common + ["--format", "json"]), out, err) == 1
    doc = json.loads(out.getvalue())
    assert doc["verdict"] == "violated" and doc["tool"] == "prunecheck"
    assert [report_from_json(d, reasons_json(item.report)) for d, item in zip(doc["policies"], cold)] == \
        [item.report for item in cold[:2]]
    out, err = io.StringIO(), io.StringIO()
    assert run_batch_cli(_check_args([str(paths[1]), str(tmp_path / "*.none")] + common), out, err) == 2
    assert out.getvalue() == "" and err.getvalue().count("\n") == 1 and "no file matches" in err.getvalue()
    err = io.StringIO()
    assert run_batch_cli(_check_args([str(paths[1]), "--scheduler", "tcp://x:1"] + common), io.StringIO(), err) == 2
    assert "--executor dask" in err.getvalue()
    assert _check_args([str(paths[1]), "--no-cache", "-j", "3"]).no_cache
    with pytest.raises(UsageError):
        _check_args([str(paths[1]), "--jobs", "0"])


def test_dask_cluster_reads_the_cache_and_checks_the_rest(batch):
    distributed = pytest.importorskip("distributed")
    paths, cache, cold, warm = batch
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        items = check_many(paths, OPTIONS, executor="dask", scheduler=cluster.scheduler_address, cache_dir=cache)
    assert [item.path for item in items] == [str(p) for p in paths]
    assert [item.cached for item in items] == [item.cached for item in warm] == [True, True, False, True]
    for got, want in zip(items, cold):
        # Dask reuses its worker processes, so a recomputed counterexample could differ; verdicts and depths cannot.
        assert [(r.condition, r.verdict, r.depth) for r in got.report.results] == \
               [(r.condition, r.verdict, r.depth) for r in want.report.results]
        assert got.report == want.report or not got.cached
