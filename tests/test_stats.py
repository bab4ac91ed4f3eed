"""The report header's engine statistics and bounds: collected once as data, read by text, JSON, HTML and the cache."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from prunecheck.checker.outputs.cache import ReportFormatError, report_from_json
from prunecheck.checker.check import check, clear_caches
from prunecheck.checker.findings.finding import findings_of
from prunecheck.checker.options import CheckOptions, Engine
from prunecheck.checker.outputs.html_report import report_html
from prunecheck.checker.language.loader import load_policy
from prunecheck.checker.outputs.render import report_json, report_text, run_text
from prunecheck.checker.result import Method, Outcome, Verdict
from prunecheck.checker.outputs.reason_doc import reasons_json

from conftest import BOUNDS, EXAMPLES, RLIMIT

DEPTH, SPANS = 5, 3


@pytest.fixture(scope="module")
def seed():
    policy = load_policy(EXAMPLES / "seed_flawed.yaml")
    clear_caches()  # a proof shared from an earlier check in this process asks no queries
    return policy, check(policy, CheckOptions(depth=DEPTH, spans=SPANS, **BOUNDS))


@pytest.fixture(scope="module")
def explicit():
    policy = load_policy(EXAMPLES / "seed_flawed.yaml")
    return check(policy, CheckOptions(engine=Engine.EXPLICIT, depth=3, spans=SPANS, tokens=[1, 2], repeats=[1]))


def test_every_condition_has_plausible_engine_statistics(seed):
    _, report = seed
    for r in report.results:
        engines = [run.engine for run in r.stats.runs]
        assert engines and len(set(engines)) == len(engines), r.condition
        assert r.stats.queries >= 1, r.condition
        for run in r.stats.runs:
            assert run.queries >= 1 and run.seconds >= 0, (r.condition, run)
            if run.engine is Method.BMC:
                assert 0 <= run.depth <= DEPTH
        if r.verdict == Verdict.VIOLATED:
            (bmc,) = [run for run in r.stats.runs if run.engine is Method.BMC]
            assert bmc.outcome is Outcome.COUNTEREXAMPLE and bmc.depth == r.depth
        if r.verdict == Verdict.HOLDS:
            assert r.stats.runs[-1].outcome is Outcome.PROVED and r.stats.runs[-1].engine in (Method.INDUCTION, Method.SPACER)
    assert report.bounds.rlimit == RLIMIT and report.bounds.timeout == BOUNDS["timeout"]
    assert report.bounds.tokens is None and report.bounds.repeats is None


def test_explicit_engine_counts_states_within_its_depth(explicit):
    for r in explicit.results:
        (run,) = r.stats.runs
        assert run.engine is Method.EXPLICIT and run.states > 0 and run.depth <= 3
    assert explicit.bounds.tokens == (1, 2) and explicit.bounds.repeats == (1,)


def test_text_header_names_bounds_and_every_engine_run(seed, explicit):
    _, report = seed
    lines = report_text(report).splitlines()
    assert lines[2] == (f"  bounds depth {DEPTH}, {SPANS} spans, timeout {BOUNDS['timeout']:g} s per condition, "
                        f"rlimit {RLIMIT} per query")
    header = lines[3:3 + len(report.results)]
    for r in report.results:
        runs = "; ".join(run_text(run) for run in r.stats.runs)
        assert any(line.endswith(f"{r.condition}  {runs}") for line in header), r.condition
    text = report_text(explicit)
    assert "tokens {1, 2}, repetitions {1}" in text.splitlines()[2]
    assert all(f"{r.stats.runs[0].states} states" in text for r in explicit.results)


def test_json_stats_carry_the_same_figures(seed):
    _, report = seed
    doc = json.loads(json.dumps(report_json(report)))
    assert doc["stats"]["bounds"] == {"depth": DEPTH, "spans": SPANS, "timeout": BOUNDS["timeout"], "rlimit": RLIMIT,
                                      "memory_mb": 0, "tokens": None, "repeats": None}
    for r in report.results:
        runs = doc["stats"]["conditions"][r.condition]
        assert [(x["engine"], x["outcome"], x["depth"], x["queries"]) for x in runs] == \
            [(str(run.engine), run.outcome.value, run.depth, run.queries) for run in r.stats.runs]


def test_cache_reads_stats_back_and_refuses_malformed_ones(seed):
    _, report = seed
    doc = json.loads(json.dumps(report_json(report)))
    back = report_from_json(doc, reasons_json(report))
    assert back.bounds == report.bounds
    assert [r.stats.queries for r in back.results] == [r.stats.queries for r in report.results]
    for bad in ({"conditions": {"C1": [{"engine": "bmc"}]}}, {"conditions": []}, "x",
                {"conditions": {}, "bounds": {"timeout": "30", "rlimit": 0, "memory_mb": 0}}):
        with pytest.raises(ReportFormatError):
            report_from_json({**doc, "stats": bad}, reasons_json(report))


def test_html_header_shows_bounds_and_statistics(seed):
    policy, report = seed
    page = report_html(findings_of(policy, replace(report, results=report.results[:1])))
    assert f'<span class="bounds">bounds depth {DEPTH}, {SPANS} spans' in page
    assert f'<li data-condition="C1">C1: {run_text(report.results[0].stats.runs[0])}</li>' in page


def test_further_counterexamples_count_in_the_bmc_statistics(seed):
    policy, _ = seed
    runs = []
    for count in (1, 2):
        clear_caches()
        options = CheckOptions(depth=3, spans=SPANS, only=("C1",), counterexamples=count, **BOUNDS)
        (result,) = check(policy, options).results
        runs.append(result.stats.runs)
    assert [run.engine for run in runs[1]] == [Method.BMC] and runs[1][0].depth == runs[0][0].depth
    assert runs[1][0].queries > runs[0][0].queries
