"""The command line's front door: exit codes in every --help, the list of commands, output paths checked up front."""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path
from typing import Optional

from prunecheck.spec.errors import PrunecheckError

COMMON_EXITS = {2: "usage or input error (one line, never a traceback)", 4: "internal error (a checker bug)"}
EXIT_MEANINGS = {
    None: {0: "success (check: every condition holds)", 1: "a violation, or the command's failure",
           3: "nothing violated but something unknown"},
    "check": {0: "every condition holds, or each finding is accepted or below --fail-on",
              1: "some condition is violated (not accepted)",
              3: "nothing violated but something unknown (not accepted, and --fail-on unknown, the default)"},
    "replay": {0: "the trace reproduces as recorded (with --policy: the policy no longer violates the trace's "
                  "condition along it, or the trace no longer replays)",
               1: "the trace does not reproduce (with --policy: the policy still violates the trace's condition)"},
    "explain": {0: "explained", 1: "the trace does not replay or does not violate its condition"},
    "certify": {0: "every certificate is confirmed, assumptions included", 1: "a certificate is rejected or refuted",
                3: "a solver gave up on some certificate"},
    "reproduce": {0: "every observation of the seeds reproduces", 1: "some observation does not"},
    "graph": {0: "the picture is written"},
    "repair": {0: "repaired, or already safe", 1: "no repair exists within the bounds",
               3: "no repair proved, but a preferred candidate is unknown within the bounds"},
    "diff": {0: "equivalent (proved)", 1: "different (replayed witnesses)", 3: "no difference found within the bounds"},
    "prove": {0: "every theorem is proved", 1: "some theorem is not proved"},
    "schema": {0: "the schema is printed"},
}

# (command, argparse dest) -> (the option as typed, what it names). A directory is created with its parents if
# missing; a file is overwritten if it exists, and its directory must exist.
OUTPUT_OPTIONS = {
    ("check", "out"): ("--out", "directory"),
    ("check", "emit_pytest"): ("--emit-pytest", "directory"),
    ("check", "write_baseline"): ("--write-baseline", "file"),
    ("check", "python"): ("--python", "directory"),
    ("graph", "out"): ("--out", "file"),
    ("repair", "out"): ("--out", "file"),
}


def exit_code_epilog(command: Optional[str]) -> str:
    """The exit codes of a command (None: of prunecheck itself), as its --help ends."""
    meanings = {**COMMON_EXITS, **EXIT_MEANINGS.get(command, {0: "success", 1: "failure"})}
    text = "; ".join(f"{code} {meanings[code]}" for code in sorted(meanings))
    return f"exit codes: {text}" + (". Each command's --help says what they mean for it." if command is None else "")


def command_list(parser: argparse.ArgumentParser) -> str:
    """The usage line, then every subcommand registered in parser with its one-line help."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    width = max(len(choice.dest) for choice in sub._choices_actions)
    lines = [f"  {choice.dest:<{width}}  {' '.join((choice.help or '').split())}" for choice in sub._choices_actions]
    return parser.format_usage() + "prunecheck: usage error: choose a command:\n" + "\n".join(lines)


class OutputPathError(PrunecheckError):
    """An output option names a path that cannot be written (exit code 2)."""


def _nearest_existing(path: Path) -> Path:
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def _existing_problem(path: Path, kind: str) -> Optional[str]:
    if not path.exists():
        return "is a broken symbolic link"
    if kind == "directory" and not path.is_dir():
        return "exists and is not a directory"
    if kind == "file" and path.is_dir():
        return "is a directory"
    if kind == "file" and not path.is_file():  # writing into a FIFO would wait for a reader
        return "exists and is not a regular file"
    if not os.access(path, os.W_OK | (os.X_OK if kind == "directory" else 0)):
        return "is not writable"
    return None


def output_problem(path: Path, kind: str) -> Optional[str]:
    """Why `path` cannot be written as a `kind` ("directory" or "file", as in OUTPUT_OPTIONS), or None."""
    if "\x00" in str(path):
        return "contains a NUL character"
    try:
        if os.path.lexists(path):
            return _existing_problem(path, kind)
        anchor = _nearest_existing(path)
        if not anchor.is_dir():
            return f"{anchor} is not a directory"
        if kind == "file" and anchor != path.parent:
            return f"its directory {path.parent} does not exist"
        if not os.access(anchor, os.W_OK | os.X_OK):
            return f"{anchor} is not writable"
    except OSError as exc:  # a name too long, a directory we may not search
        return exc.strerror or str(exc)
    return None


def check_output_paths(args) -> None:
    """Raise OutputPathError for the first output option of args.command that names a path it cannot write."""
    for (command, dest), (option, kind) in OUTPUT_OPTIONS.items():
        value = getattr(args, dest, None) if args.command == command else None
        problem = None if value is None else output_problem(Path(value), kind)
        if problem:
            raise OutputPathError(f"{option} {value}: {problem}")


def cache_warning(args, default_dir: Path) -> Optional[str]:
    """Why the report cache directory cannot be written, as a warning (the check then runs without it), or None."""
    if args.no_cache:
        return None
    directory = args.cache if args.cache is not None else default_dir
    problem = output_problem(Path(directory), "directory")
    if problem is None:
        return None
    name = f"--cache {directory}" if args.cache is not None else f"cache directory {directory}"
    return f"{name}: {problem}; checking without the cache"


@contextlib.contextmanager
def writing(option: str, path):
    """Report a write that fails after the up-front check (a full disk, a race) as an OutputPathError."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputPathError(f"{option} {path}: {exc.strerror or exc}") from None
