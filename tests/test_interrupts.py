"""SIGINT and SIGTERM at seeded random moments stop `check` (a file, a batch, the explicit recovery peak), `prove`,
`repair` and the MCP server: exit 130 with one line and no traceback, no verdict printed, no partial file, no worker
left; z3's interrupt is never read as a limit; --timeout and --memory stop a search inside a level."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import z3

from prunecheck.checker.check import check
from prunecheck.checker.engines.explicit import domains_for, explore
from prunecheck.checker.engines.peak import explicit_peak
from prunecheck.checker.language.loader import load_policy
from prunecheck.checker.options import Engine, options_with
from prunecheck.checker.outputs.paths import write_whole
from prunecheck.checker.outputs.reason_doc import reason_from_json, reason_json
from prunecheck.checker.outputs.reasons import reason_text
from prunecheck.checker.result import Found, Verdict
from prunecheck.spec.errors import Interrupted
from prunecheck.symbolic import interrupts
from prunecheck.symbolic.solver import Status, new_solver, query

from conftest import EXAMPLES, HANG_GUARD, HOUR, ROOT

PRUNECHECK = [sys.executable, "-c", "from prunecheck.cli import entry; entry()"]
FRAMEWORKS = ROOT / "examples" / "frameworks"
SEED = EXAMPLES / "seed_flawed.yaml"
MARK = "PRUNECHECK_INTERRUPT_TEST"  # in the environment of the command and of every worker it starts
SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM}
GONE_GUARD = 30.0  # seconds a killed worker may take to disappear (it takes milliseconds)
START_GUARD = 60.0  # seconds the interpreter may take to start on a loaded machine (it takes a fraction of one)


# --------------------------------------------------------------------------- in this process


def test_a_signal_makes_every_query_raise_interrupted_never_answer():
    solver = new_solver(HOUR * 1000)
    with interrupts.handling_signals():
        assert query(solver).status is Status.SAT
        interrupts.interrupt(signal.SIGTERM)
        with pytest.raises(Interrupted):
            query(solver)
    assert not interrupts.interrupted() and query(solver).status is Status.SAT  # the next run starts afresh


def test_z3_simplifies_again_after_a_run_it_was_interrupted_in():
    # An interrupt z3's context gets while idle stays pending, and its simplifier then silently returns terms as they
    # are (a `by construction` label rests on it): the run's end clears it.
    x = z3.Int("x")
    with interrupts.handling_signals():
        with interrupts.asking():
            interrupts.interrupt(signal.SIGINT)
    assert z3.eq(z3.simplify(x + 1 - 1), x)


def test_z3s_words_for_an_interrupt_are_never_a_limit():
    for words in ("interrupted from keyboard", "interrupted"):
        with pytest.raises(Interrupted):
            interrupts.stop_if_said(words)
    interrupts.stop_if_said("canceled")  # z3's word for a limit too: a limit, unless a signal has arrived
    with interrupts.handling_signals():
        interrupts.interrupt(signal.SIGINT)
        with pytest.raises(Interrupted):
            interrupts.stop_if_said("canceled")


def test_nothing_is_written_once_the_run_is_interrupted(tmp_path):
    write_whole(tmp_path / "before.json", "{}\n")
    with interrupts.handling_signals():
        interrupts.interrupt(signal.SIGINT)
        with pytest.raises(Interrupted):
            write_whole(tmp_path / "after.json", "{}\n")
    assert [p.name for p in tmp_path.iterdir()] == ["before.json"]


def test_the_explicit_peak_stops_inside_a_level_and_says_so():
    # Before, the limit was looked at only between levels: the first level was always searched whole.
    policy = load_policy(SEED)
    peak = explicit_peak(policy, 6, 6, domains_for(policy), 0.0)
    assert not peak.complete and (peak.depth, peak.records, peak.witness) == (0, 0, ())


def test_the_explicit_check_finds_verdicts_and_peak_within_one_time_limit():
    # A limit of 1 ns has passed before the first state on any machine, loaded or not: no outcome depends on speed.
    options = options_with(engine=Engine.EXPLICIT, recovery_peak=True, timeout=1e-9, depth=6)
    report = check(load_policy(SEED), options)
    assert not report.recovery_peak.complete and report.recovery_peak.depth == 0
    stopped = [r for r in report.results if r.verdict == Verdict.UNKNOWN]
    assert stopped and all(r.reason.clauses[0].found is Found.LIMIT for r in stopped)


def test_the_explicit_search_stops_at_its_memory_limit():
    policy = load_policy(SEED)
    results = explore(policy, 8, 6, ("C3",), domains_for(policy), HOUR, memory_mb=1)
    (result,) = results
    clause = result.reason.clauses[0]
    assert (result.verdict, clause.found, clause.megabytes) == (Verdict.UNKNOWN, Found.LIMIT, 1)
    assert "(memory limit 1 MB)" in reason_text(result.reason)
    assert reason_from_json(json.loads(json.dumps(reason_json(result.reason)))) == result.reason


# --------------------------------------------------------------------------- signals sent to the command line


def _handles_sigterm(pid: int) -> bool:
    """Whether the process catches SIGTERM (the console script's handlers are installed): /proc's SigCgt mask."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    return False


def _start(argv: list, token: str, stdin=subprocess.DEVNULL) -> subprocess.Popen:
    process = subprocess.Popen(PRUNECHECK + [str(a) for a in argv], cwd=ROOT, stdin=stdin, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env={**os.environ, MARK: token})
    deadline = time.monotonic() + START_GUARD
    while not _handles_sigterm(process.pid):  # the console script installs its handlers before anything else
        assert process.poll() is None and time.monotonic() < deadline, "the command never handled SIGTERM"
        time.sleep(0.01)
    return process


def _signal(process: subprocess.Popen, signum: int, delay: float) -> tuple:
    """(whether it had ended before the signal, exit code, stdout, stderr), the signal sent `delay` s from now."""
    time.sleep(delay)
    ended = process.poll() is not None
    if not ended:
        process.send_signal(signum)
    out, err = process.communicate(timeout=HANG_GUARD)
    return ended, process.returncode, out, err


def _survivors(token: str) -> list:
    """The processes (workers included) still running with this test's mark in their environment."""
    mark, found = f"{MARK}={token}".encode(), []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and mark in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass
    return found


def _assert_gone(token: str) -> None:
    deadline = time.monotonic() + GONE_GUARD
    while _survivors(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _survivors(token), "a worker outlived the interrupted command"


def _assert_interrupted(ended: bool, code: int, err: str) -> bool:
    """True for an interrupted run (exit 130, one line), False for one that had ended first; never a traceback."""
    assert "Traceback" not in err, err[-3000:]
    if ended:
        assert "interrupted" not in err
        return False
    assert code == 130, (code, err[-3000:])
    assert err.endswith("prunecheck: interrupted\n") and err.count("prunecheck: interrupted") == 1, err[-3000:]
    return True


def _assert_whole_files(directory: Path) -> None:
    """Every file below directory is a whole JSON document, and none is a temporary one."""
    for path in directory.rglob("*") if directory.exists() else ():
        if path.is_file():
            assert not path.name.startswith("."), path
            json.loads(path.read_text(encoding="utf-8"))


def _delay(case: str, name: str) -> float:
    return random.Random(f"issue 28 {case} {name}").uniform(0.1, 2.5)  # seeded: the same moments every run


def _run_interrupted(case: str, name: str, argv: list, normal: set) -> tuple:
    token = f"{case}-{name}-{os.getpid()}"
    process = _start(argv, token)
    ended, code, out, err = _signal(process, SIGNALS[name], _delay(case, name))
    if _assert_interrupted(ended, code, err):
        assert out == "", out[:2000]  # no verdict, figure or table: they are printed only once every check ended
    else:
        assert code in normal and out, (code, err[-2000:])
    _assert_gone(token)
    return ended, out


@pytest.mark.parametrize("name", SIGNALS)
def test_an_interrupted_check_prints_no_verdict_and_writes_no_file(name, tmp_path):
    out_dir = tmp_path / "out"
    argv = ["check", FRAMEWORKS / "autogen_head_and_tail_context.yaml", "--spans", 12, "--no-cache", "--out", out_dir]
    ended, _out = _run_interrupted("check", name, argv, {0, 1, 3})
    if ended:
        _assert_whole_files(out_dir)
    else:
        assert not out_dir.exists() or not any(out_dir.iterdir())


@pytest.mark.parametrize("name", SIGNALS)
def test_an_interrupted_batch_stops_its_workers_and_leaves_whole_cache_entries(name, tmp_path):
    cache, out_dir = tmp_path / "cache", tmp_path / "out"
    argv = ["check", EXAMPLES, "--jobs", 2, "--cache", cache, "--out", out_dir]
    ended, _out = _run_interrupted("batch", name, argv, {1})
    _assert_whole_files(cache)  # the policies checked before the signal: whole entries, nothing half written
    if ended:
        _assert_whole_files(out_dir)
    else:
        assert not out_dir.exists() or not any(out_dir.iterdir())


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.parametrize("name", SIGNALS)
def test_an_interrupted_explicit_recovery_peak_prints_no_figure(name):
    argv = ["check", SEED, "--engine", "explicit", "--recovery-peak", "--timeout", 30, "--no-cache"]
    ended, out = _run_interrupted("peak", name, argv, {1})
    assert "recovery set: " in out if ended else out == ""


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.parametrize("name", SIGNALS)
def test_an_interrupted_prove_prints_no_table_and_no_markdown(name):
    for argv in (["prove"], ["prove", "--markdown"]):  # `prove --markdown > proofs/README.md` stays empty
        ended, out = _run_interrupted("prove" + "".join(argv[1:]), name, argv, {0, 1})
        assert ("theorems shown" in out or "# Theorems" in out) if ended else out == ""


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.parametrize("name", SIGNALS)
def test_an_interrupted_repair_writes_no_repaired_file(name, tmp_path):
    target = tmp_path / "repaired.yaml"
    argv = ["repair", FRAMEWORKS / "semantickernel_summarization_reducer.yaml", "--out", target]
    ended, _out = _run_interrupted("repair", name, argv, {0, 1, 3})
    if not ended:
        assert not target.exists() and not list(tmp_path.iterdir())


@pytest.mark.slow
@pytest.mark.ci
def test_an_interrupted_dask_batch_stops_its_cluster(tmp_path):
    argv = ["check", EXAMPLES, "--executor", "dask", "--jobs", 2, "--no-cache", "--out", tmp_path / "out"]
    ended, _out = _run_interrupted("dask", "SIGTERM", argv, {1})
    assert ended or not (tmp_path / "out").exists()


def _rpc(process, message: dict) -> None:
    process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    process.stdin.flush()


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.parametrize("name", SIGNALS)
def test_an_interrupted_mcp_server_stops_with_its_worker_mid_call(name):
    token = f"mcp-{name}-{os.getpid()}"
    process = _start(["mcp", "--workers", 1], token, stdin=subprocess.PIPE)
    _rpc(process, {"id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                                "clientInfo": {"name": "test", "version": "0"}}})
    assert json.loads(process.stdout.readline())["id"] == 1
    _rpc(process, {"method": "notifications/initialized"})
    policy = (FRAMEWORKS / "autogen_head_and_tail_context.yaml").read_text(encoding="utf-8")
    _rpc(process, {"id": 2, "method": "tools/call", "params": {"name": "check", "arguments": {"policy": policy,
                                                                                             "spans": 12}}})
    ended, code, out, err = _signal(process, SIGNALS[name], _delay("mcp", name))
    assert _assert_interrupted(ended, code, err)  # a server ends only when its client closes the connection
    answers = [json.loads(line) for line in out.splitlines()]  # whole messages only
    for answer in (a for a in answers if a.get("id") == 2):  # the call: unanswered, or told the server stopped
        assert answer["result"]["isError"] and "interrupted" in answer["result"]["content"][0]["text"], answer
    _assert_gone(token)
