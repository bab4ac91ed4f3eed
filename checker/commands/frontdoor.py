"""The command line's front door: exit codes (in every --help, and of whatever a command raises), the list of
commands, and the arguments commands share."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional

from prunecheck.spec.errors import (Interrupted, PolicySyntaxError, PrunecheckError, ReplayMismatch,
                                    TraceFormatError)
from prunecheck.symbolic.interrupts import interrupted

from prunecheck.checker.options import DEFAULTS

EXIT_HOLDS, EXIT_VIOLATED, EXIT_INPUT, EXIT_UNKNOWN, EXIT_INTERNAL = 0, 1, 2, 3, 4
EXIT_INTERRUPTED = 130  # as a shell reports a command stopped by SIGINT (128 + 2), for SIGTERM too


class UsageError(Exception):
    """Bad command-line usage (exit code 2)."""


class HelpShown(Exception):
    """--help printed its text (exit code 0)."""

COMMON_EXITS = {2: "usage or input error (one line, never a traceback)", 4: "internal error (a checker bug)",
                130: "interrupted by SIGINT or SIGTERM (nothing reported, no partial file written)"}
EXIT_MEANINGS = {
    None: {0: "success (check: every condition holds)", 1: "a violation, or the command's failure",
           3: "nothing violated but something unknown"},
    "check": {0: "every condition holds, or each finding is accepted or below --fail-on",
              1: "some condition is violated (not accepted), or a decided verdict differs from the policy's "
                 "expect table",
              3: "nothing violated but something unknown (not accepted, and --fail-on unknown, the default), or an "
                 "unknown where the expect table names another verdict"},
    "replay": {0: "the trace reproduces as recorded (with --policy: the policy no longer violates the trace's "
                  "condition along it, or the trace no longer replays)",
               1: "the trace does not reproduce (with --policy: the policy still violates the trace's condition)"},
    "explain": {0: "explained", 1: "the trace does not replay or does not violate its condition"},
    "certify": {0: "every certificate is confirmed, assumptions included", 1: "a certificate is rejected or refuted",
                3: "a solver gave up on some certificate"},
    "reproduce": {0: "every observation comes out as the seeds describe (each failure under its deployment, each "
                        "fix preventing it)", 1: "some observation does not"},
    "graph": {0: "the picture is written"},
    "repair": {0: "repaired, or already safe", 1: "no repair exists within the bounds",
               3: "no repair proved, but a preferred candidate is unknown within the bounds"},
    "diff": {0: "equivalent (proved)", 1: "different (replayed witnesses)", 3: "no difference found within the bounds"},
    "prove": {0: "every theorem is proved", 1: "some theorem is not proved"},
    "schema": {0: "the schema is printed"},
    "mcp": {0: "the server stopped: its client closed the connection (a bad call is a tool error, never an exit)"},
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


def conditions_text(ids) -> str:
    """Condition ids in their order, each run of one letter with consecutive numbers shortened: `C1-C4, P1, T1`."""
    runs = []
    for cid in ids:
        letter, number = cid[:1], int(cid[1:])
        if runs and runs[-1][0] == letter and runs[-1][2] == number - 1:
            runs[-1][2] = number
        else:
            runs.append([letter, number, number])
    return ", ".join(f"{a}{first}" + (f"-{a}{last}" if last > first + 1 else f", {a}{last}" if last > first else "")
                     for a, first, last in runs)


def bounded_int(low: int, high: int):
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is outside {low}..{high}")
        return value
    return convert


def add_rlimit_argument(parser) -> None:
    parser.add_argument("--rlimit", type=bounded_int(0, 10**12), default=DEFAULTS.rlimit, metavar="N",
                        help="also bound every solver query by N resource units (z3 rlimit, cvc5 rlimit-per), which "
                             "unlike --timeout a loaded machine cannot change (0: none)")


def add_operator_arguments(parser, needs: str = "") -> None:
    """The operator's deployment (ADR 0037): --deployment, --config, --no-config, --trust-policy-deployment; `needs`
    names the argument they go with, if any (e.g. "with --policy: ")."""
    parser.add_argument("--deployment", metavar="FILE",
                        help=f"{needs}the operator's deployment: the keys this YAML/JSON file gives (e.g. `records: "
                             "undo_region`) over the configuration's; keys neither gives take the least-assuming "
                             "default (the first seed's observed scenario)")
    parser.add_argument("--config", metavar="FILE",
                        help=f"{needs}the operator's configuration (prunecheck.toml, or pyproject.toml's "
                             "[tool.prunecheck]); default: the nearest one at or above each policy file")
    parser.add_argument("--no-config", dest="no_config", action="store_true",
                        help=f"{needs}read no configuration file")
    parser.add_argument("--trust-policy-deployment", dest="trust_policy_deployment", action="store_true",
                        help=f"{needs}believe a policy file's own `deployment:` section (for human-authored policy "
                             "files; the operator's keys still win); without it the section is a claim, ignored and "
                             "named in the report")


def add_quiet_argument(parser) -> None:
    """--quiet/-q: no progress display."""
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="show no progress on stderr (it shows only when stderr is a terminal, never on stdout)")


def progress_of(args, stderr):
    """The progress display of a command's run: on stderr if it is a terminal, unless --quiet (outputs/progress.py)."""
    from prunecheck.checker.outputs.progress import progress_for

    return progress_for(stderr, quiet=getattr(args, "quiet", False))


def failure_code(exc: BaseException, stderr) -> int:
    """The exit code of a command that raised exc, after its one line on stderr (an interrupt's is main's)."""
    if isinstance(exc, (Interrupted, KeyboardInterrupt)) or (interrupted() and not isinstance(exc, SystemExit)):
        return EXIT_INTERRUPTED  # whatever the interrupt made fail (a solver error, an event loop's exit)
    try:
        raise exc
    except HelpShown:
        return EXIT_HOLDS
    except UsageError as error:
        print(f"prunecheck: usage error: {' '.join(str(error).split())}", file=stderr)
        return EXIT_INPUT
    except (PolicySyntaxError, TraceFormatError) as error:
        print(f"prunecheck: error: {error.one_line()}", file=stderr)
        return EXIT_INPUT
    except ReplayMismatch as error:
        print(f"prunecheck: internal error (checker bug, please report): {error.one_line()}", file=stderr)
        return EXIT_INTERNAL
    except PrunecheckError as error:
        print(f"prunecheck: error: {error.one_line()}", file=stderr)
        return EXIT_INPUT
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep Python from complaining at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_VIOLATED
    except Exception as error:  # noqa: BLE001 - the promise is one line, never a traceback
        if os.environ.get("PRUNECHECK_DEBUG"):
            raise
        print(f"prunecheck: internal error: {type(error).__name__}: {' '.join(str(error).split())} "
              "(set PRUNECHECK_DEBUG=1 for a traceback)", file=stderr)
        return EXIT_INTERNAL
