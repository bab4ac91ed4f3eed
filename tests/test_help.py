"""Every --help exits 0 with its text on stdout and names its command's exit codes; no command lists every command."""

import argparse
import io
import re
import subprocess
import sys

import pytest

from prunecheck import cli
from prunecheck.checker.cli import build_parser, builtin_commands
from prunecheck.spec.conditions import CONDITIONS

from conftest import HANG_GUARD


def registered_commands() -> list:
    """The subcommands the `prunecheck` console script's parser knows, in the order they were added."""
    parser = build_parser({**builtin_commands(), **cli.COMMANDS})
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(sub.choices)


COMMANDS = registered_commands()


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def named_exit_codes(help_text: str) -> set:
    """The codes listed after `exit codes:` (`0 meaning; 1 meaning; ...`), whatever the line wrapping."""
    flat = " ".join(help_text.split())
    assert flat.count("exit codes: ") == 1
    listed = flat.split("exit codes: ", 1)[1]
    return {int(code) for code in re.findall(r"(?:^|; )(\d+) ", listed)}


def test_the_parser_knows_every_command_of_the_readme():
    assert {"check", "replay", "explain", "certify", "reproduce", "graph", "repair", "diff", "prove"} <= set(COMMANDS)


@pytest.mark.parametrize("command", [None] + COMMANDS)
def test_help_exits_0_on_stdout_and_names_the_exit_codes(command):
    argv = [command] if command else []
    code, out, err = run(*argv, "--help")
    assert (code, err) == (0, "")
    assert out.startswith(" ".join(["usage: prunecheck", *argv]))
    assert {0, 2, 4, 130} <= named_exit_codes(out) <= {0, 1, 2, 3, 4, 130}


@pytest.mark.parametrize("command", ["check", "certify", "diff"])
def test_commands_that_can_answer_unknown_name_all_six_codes(command):
    _, out, _ = run(command, "--help")
    assert named_exit_codes(out) == {0, 1, 2, 3, 4, 130}


def test_help_of_the_console_script_goes_to_stdout_with_exit_0():
    done = subprocess.run([sys.executable, "-c", "from prunecheck.cli import entry; entry()", "check", "--help"],
                          capture_output=True, text=True, timeout=HANG_GUARD)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("usage: prunecheck check") and "exit codes:" in done.stdout


def test_no_command_lists_every_command_with_its_help_and_exits_2():
    code, out, err = run()
    assert (code, out) == (2, "")
    lines = err.splitlines()
    assert lines[0].startswith("usage: prunecheck ") and lines[1] == "prunecheck: usage error: choose a command:"
    listed = [line.split(maxsplit=1) for line in lines[2:]]
    assert [name for name, _ in listed] == COMMANDS
    assert all(len(help_text) > 10 for _, help_text in listed)


def test_the_command_list_names_every_condition_check_checks():
    _, out, _ = run("--help")
    flat = " ".join(out.split())
    listed = flat.split("check policies against ", 1)[1].split(" replay ", 1)[0]
    named = []
    for part in listed.split(", "):
        first, _, last = part.partition("-")
        letter = first[0]
        named += [f"{letter}{n}" for n in range(int(first[1:]), int((last or first)[1:]) + 1)]
    assert named == list(CONDITIONS)
