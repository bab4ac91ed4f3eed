"""An output path that cannot be written is the user's input error (exit 2, one line naming the option and path),
found before any work; an unwritable cache directory is one warning, and the check runs without the cache."""

import argparse
import errno
import io
import os
import re
import shutil
import tempfile

import pytest

from prunecheck import cli
from prunecheck.checker.outputs import files as outputs
from prunecheck.checker.cli import build_parser, builtin_commands
from prunecheck.checker.outputs.paths import OUTPUT_OPTIONS, output_problem, writing
from prunecheck.spec.errors import OutputPathError

from conftest import CLI_BOUNDS
from policy_table import EXAMPLES

SEED = str(EXAMPLES / "seed_flawed.yaml")
CHEAP = ["--only", "C1", "--depth", "2", "--no-prove", *CLI_BOUNDS]
# The rest of each command line: graph's trace need not exist, since the output path is checked first.
ARGV = {"check": ["check", SEED, *CHEAP], "graph": ["graph", "no-such-trace.itf.json"], "repair": ["repair", SEED]}
OPTIONS = [(command, option, kind) for (command, _), (option, kind) in OUTPUT_OPTIONS.items()]


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "a_file"
    path.write_text("keep me\n")
    return path


def assert_one_line_error(result, option, path, why):
    code, out, err = result
    assert (code, out) == (2, "")
    assert err == f"prunecheck: error: {option} {path}: {why}\n"


def test_every_out_option_of_every_command_is_checked_up_front():
    parser = build_parser({**builtin_commands(), **cli.COMMANDS})
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    writers = {(name, action.dest) for name, command in sub.choices.items() for action in command._actions
               if {"--out", "--emit-pytest", "--write-baseline", "--python"} & set(action.option_strings)}
    assert writers == set(OUTPUT_OPTIONS)
    assert set(ARGV) == {command for command, _ in OUTPUT_OPTIONS}


@pytest.mark.parametrize("command,option,kind", OPTIONS)
def test_a_path_under_a_regular_file_is_an_input_error(command, option, kind, a_file):
    target = a_file / "sub" / ("out" if kind == "directory" else "out.svg")
    assert_one_line_error(run(*ARGV[command], option, str(target)), option, target, f"{a_file} is not a directory")
    assert a_file.read_text() == "keep me\n"


@pytest.mark.parametrize("command,option,kind", [o for o in OPTIONS if o[2] == "directory"])
def test_a_directory_option_naming_a_regular_file_is_an_input_error(command, option, kind, a_file):
    assert_one_line_error(run(*ARGV[command], option, str(a_file)), option, a_file, "exists and is not a directory")
    assert a_file.read_text() == "keep me\n"


@pytest.mark.parametrize("command,option,kind", [o for o in OPTIONS if o[2] == "file"])
def test_a_file_option_naming_a_directory_or_a_missing_directory_is_an_input_error(command, option, kind, tmp_path):
    assert_one_line_error(run(*ARGV[command], option, str(tmp_path)), option, tmp_path, "is a directory")
    missing = tmp_path / "missing" / "out.svg"
    assert_one_line_error(run(*ARGV[command], option, str(missing)), option, missing,
                          f"its directory {missing.parent} does not exist")


def test_writable_places_pass_and_the_check_creates_nothing(tmp_path, a_file):
    assert output_problem(a_file, "file") is None  # a file output is overwritten
    assert output_problem(tmp_path / "new" / "deeper", "directory") is None  # created with its parents when written
    assert output_problem(tmp_path, "directory") is None
    assert not (tmp_path / "new").exists()
    assert output_problem(tmp_path / "x\0y", "directory") == "contains a NUL character"


def test_a_file_option_naming_a_fifo_is_refused_rather_than_waiting_for_a_reader(tmp_path):
    fifo = tmp_path / "pipe.svg"
    os.mkfifo(fifo)
    assert_one_line_error(run(*ARGV["graph"], "--out", str(fifo)), "--out", fifo, "exists and is not a regular file")


def test_a_write_that_fails_after_the_check_is_an_input_error(tmp_path, monkeypatch):
    def full_disk(*_args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(outputs, "write_out", full_disk)
    out_dir = tmp_path / "traces"
    code, _, err = run("check", SEED, *CHEAP, "--out", str(out_dir))
    assert code == 2 and err == f"prunecheck: error: --out {out_dir}: No space left on device\n"
    with pytest.raises(BrokenPipeError), writing("--out", out_dir):
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")  # the reader of stderr left: not the output path's fault
    with pytest.raises(OutputPathError):
        with writing("--out", out_dir):
            full_disk()


def batch_run(policies, *extra):
    """Exit code, the summary without its timings, and the warnings."""
    code, out, err = run("check", str(policies), *CHEAP, *extra)
    return code, re.sub(r"\d+\.\d+", "", out), [line for line in err.splitlines() if "warning" in line]


def test_an_unwritable_cache_is_one_warning_and_the_check_still_runs(tmp_path, a_file, monkeypatch):
    policies = tmp_path / "policies"
    policies.mkdir()
    shutil.copy(SEED, policies)
    code, out, warnings = batch_run(policies, "--no-cache")
    assert warnings == []
    cache = a_file / "cache"
    assert batch_run(policies, "--cache", str(cache)) == (code, out, [
        f"prunecheck: warning: --cache {cache}: {a_file} is not a directory; checking without the cache"])
    monkeypatch.setenv("XDG_CACHE_HOME", str(a_file))
    assert batch_run(policies) == (code, out, [
        f"prunecheck: warning: cache directory {a_file / 'prunecheck'}: {a_file} is not a directory; "
        "checking without the cache"])
    assert batch_run(policies, "--no-cache")[2] == []
    assert a_file.read_text() == "keep me\n"


def _refuses_writes(directory: str) -> bool:
    """Whether creating anything in directory fails although access() may say it is writable (root on sysfs)."""
    try:
        os.rmdir(tempfile.mkdtemp(dir=directory))
    except OSError:
        return True
    return False


@pytest.mark.skipif(not os.path.isdir("/sys/kernel") or not _refuses_writes("/sys/kernel"),
                    reason="needs /sys/kernel, a directory that refuses writes")
def test_a_directory_that_refuses_writes_is_an_input_error_before_any_solving(monkeypatch):
    def no_solving(*_args, **_kwargs):
        raise AssertionError("solved before the output path was checked")

    monkeypatch.setattr("prunecheck.checker.check.check", no_solving)
    code, out, err = run("check", SEED, *CHEAP, "--out", "/sys/kernel/nope")
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith("prunecheck: error: --out /sys/kernel/nope: /sys/kernel is not writable (")


def test_a_refused_probe_is_the_problem_whatever_access_says(tmp_path, monkeypatch):
    def refused(*_args, **_kwargs):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "access", lambda *_args: True)
    monkeypatch.setattr(tempfile, "mkdtemp", refused)
    monkeypatch.setattr(tempfile, "mkstemp", refused)
    why = f"{tmp_path} is not writable (Operation not permitted)"
    assert output_problem(tmp_path / "new", "directory") == why
    assert output_problem(tmp_path, "directory") == why
    assert output_problem(tmp_path / "out.svg", "file") == why
