"""The command line: `prunecheck check | explain | graph | repair | diff | replay | certify | reproduce`, as
main(argv, stdout, stderr) -> exit code.

Exit codes: 0 every condition holds (replay: the trace reproduces as recorded; certify: every certificate is
confirmed, assumptions included; replay --policy: the policy no longer violates the trace's condition along it); 1
some condition is violated (replay: the trace does not reproduce; replay --policy: it still violates; certify: a
certificate is rejected or refuted); 2 usage or input error (certify, explain, replay, graph: an unreadable file or
one of the wrong kind); 3 nothing
violated but something unknown (certify: a solver gave up on some certificate); 4 internal error (a checker bug,
such as a counterexample that does not replay); 130 interrupted by SIGINT or SIGTERM (one line on stderr, no verdict
printed, no partial file written). frontdoor.EXIT_MEANINGS says what 0, 1 and 3 mean for each command; every --help
lists its command's codes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import List, Optional, TextIO

from prunecheck.version import __version__
from prunecheck.spec.conditions import CONDITIONS
from prunecheck.spec.errors import PolicySyntaxError, ReplayMismatch
from prunecheck.symbolic.interrupts import commit, handling_signals, install, interrupted

from prunecheck.checker.commands.frontdoor import (EXIT_HOLDS, EXIT_INPUT, EXIT_INTERRUPTED, EXIT_VIOLATED, UsageError, HelpShown, add_operator_arguments,
                                                   add_quiet_argument, add_rlimit_argument, bounded_int, command_list,
                                                   conditions_text, exit_code_epilog, failure_code, progress_of)
from prunecheck.checker.options import DEFAULTS, MAX_DEPTH, MAX_SPANS, Engine
from prunecheck.checker.outputs.paths import cache_warning, check_output_paths
from prunecheck.checker.outputs.terminal import SafeStream

FAIL_ON = ("unknown", "violated")


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)

    def exit(self, status=0, message=None):
        if status == 0:
            raise HelpShown()
        raise UsageError(message or "")


def _conditions(text: str) -> tuple:
    wanted = tuple(c.strip().upper() for c in text.split(",") if c.strip())
    unknown = [c for c in wanted if c not in CONDITIONS]
    if unknown or not wanted:
        raise argparse.ArgumentTypeError(f"unknown condition {', '.join(unknown) or text!r}; "
                                         f"choose from {','.join(CONDITIONS)}")
    return wanted


def _domain(what: str):
    def parse(text: str) -> tuple:
        try:
            values = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a list of integers") from None
        if not values or values[0] < 1 or values[-1] > 10**9 or len(values) > 16:
            raise argparse.ArgumentTypeError(f"{what} are 1 to 16 integers between 1 and 10**9")
        return values
    return parse


def build_parser(extra_commands=None) -> argparse.ArgumentParser:
    parser = _Parser(prog="prunecheck", description="Vet a model-authored context-pruning policy before deployment.",
                     epilog=exit_code_epilog(None))
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _add_check_parser(sub)
    _add_trace_parsers(sub)
    reproduce = sub.add_parser("reproduce", help="reproduce the seeds' observations, each next to its fix")
    reproduce.add_argument("--claims", action="store_true",
                           help="print the table of every claim of both seeds and where it is covered, then exit")
    for add_parser, _ in (extra_commands or {}).values():
        add_parser(sub)
    for name, command_parser in sub.choices.items():
        command_parser.epilog = command_parser.epilog or exit_code_epilog(name)
    return parser


def _add_check_parser(sub) -> None:
    """`check`: its bounds and engine (defaults: CheckOptions'), then its outputs, triage and batch arguments."""
    from prunecheck.checker.commands.batch import add_batch_arguments

    check = sub.add_parser("check", help=f"check policies against {conditions_text(CONDITIONS)}")
    check.add_argument("policies", nargs="+", metavar="POLICY",
                       help=".yaml, .yml, .json or .py policy files, directories (every policy file below them) or "
                            "globs such as 'policies/**/*.yaml'")
    check.add_argument("--depth", type=bounded_int(0, MAX_DEPTH), default=DEFAULTS.depth,
                       help=f"bounded search depth (default {DEFAULTS.depth})")
    check.add_argument("--spans", type=bounded_int(2, MAX_SPANS), default=DEFAULTS.spans,
                       help=f"span slots (default {DEFAULTS.spans})")
    check.add_argument("--only", type=_conditions, default=DEFAULTS.only, help="conditions to check, e.g. C1,P1")
    _add_output_arguments(check)
    check.add_argument("--timeout", type=bounded_int(1, 3600), default=int(DEFAULTS.timeout),
                       help=f"seconds per condition (default {DEFAULTS.timeout:g})")
    add_rlimit_argument(check)
    check.add_argument("--memory", type=bounded_int(0, 1 << 20), default=DEFAULTS.memory_mb, metavar="MB",
                       help="memory limit in MB (0: none): z3's, and this process's for the explicit engine's search")
    check.add_argument("--max-counterexamples", type=bounded_int(1, 100), default=DEFAULTS.counterexamples,
                       metavar="N", help="up to N counterexamples per violated condition, different in their action "
                                         "sequences")
    check.add_argument("--emit-pytest", metavar="DIR",
                       help="write each counterexample as a pytest module into DIR (a regression test once fixed)")
    check.add_argument("--python", metavar="DIR",
                       help="write each counterexample as a standalone Python script into DIR (the policy embedded, "
                            "only prunecheck's public API; exit 0 when it reproduces the violation)")
    _add_engine_arguments(check)
    add_batch_arguments(check)
    add_quiet_argument(check)


def _add_output_arguments(check) -> None:
    check.add_argument("--format", choices=("text", "json", "html", "sarif"), default="text",
                       help="text (default), json, html (one self-contained page) or sarif (SARIF 2.1.0)")
    check.add_argument("--out", metavar="DIR",
                       help="write each counterexample as an ITF trace and each proof as a certificate into DIR, "
                            "named after the policy file and hash: FILE-HASH8.CONDITION.itf.json / .cert.json")
    check.add_argument("--fail-on", dest="fail_on", choices=FAIL_ON, default="unknown",
                       help="the least outcome that fails the run: unknown (default: exit 1 on a violation, 3 on an "
                            "unknown) or violated (an unknown exits 0); an accepted finding fails nothing, and input "
                            "errors (2) and checker faults (4) always fail. A verdict unlike the policy's `expect:` "
                            "counts as violated (as unknown if it is unknown)")
    check.add_argument("--baseline", metavar="FILE",
                       help="accept the findings this baseline (JSON, from --write-baseline) lists, by fingerprint: "
                            "still reported, marked accepted, they fail nothing")
    check.add_argument("--write-baseline", dest="write_baseline", metavar="FILE",
                       help="write every violated or unknown finding the policies do not accept themselves to FILE "
                            "as a baseline (an entry of --baseline keeps its reason); the run then accepts them")
    add_operator_arguments(check)


def _add_engine_arguments(check) -> None:
    check.add_argument("--prove", dest="prove", action="store_true", default=DEFAULTS.prove,
                       help="try to prove each condition for every depth and window size (default)")
    check.add_argument("--no-prove", dest="prove", action="store_false", help="bounded search only")
    check.add_argument("--engine", choices=tuple(e.value for e in Engine), default=DEFAULTS.engine.value,
                       help="symbolic (z3: proofs and bounded search, default) or explicit (breadth-first search "
                            "over the reference runtime: an independent second opinion for small bounds)")
    check.add_argument("--tokens", type=_domain("token counts"), default=DEFAULTS.tokens, metavar="N,N,...",
                       help="token counts an append may carry, overriding the default (explicit engine: 1,2 and the "
                            "neighbours of the policy's token constants and budget; symbolic: any)")
    check.add_argument("--repeats", type=_domain("repetition counts"), default=DEFAULTS.repeats, metavar="N,N,...",
                       help="how many times in a row a read or audit may repeat as one action, overriding the "
                            "default (explicit engine: 1 and the neighbours of the policy's clock constants; "
                            "symbolic: any)")
    check.add_argument("--recovery-peak", dest="recovery_peak", action="store_true", default=DEFAULTS.recovery_peak,
                       help="also report the most recovery records present at once, and (explicit engine) their "
                            "tokens, over the runs within the bounds: a bounded figure, not a proof; costs time")


def _add_trace_parsers(sub) -> None:
    """`replay`, `explain` and `certify`: the commands that read the files a check wrote."""
    replay = sub.add_parser("replay", help="re-execute an ITF trace on the reference runtime")
    replay.add_argument("trace", metavar="TRACE.json")
    replay.add_argument("--policy", metavar="FILE",
                        help="run the trace's actions against this policy file as it is now, instead of the policy "
                             "embedded in the trace, and say whether they still violate the trace's condition")
    add_operator_arguments(replay, "with --policy: ")
    explain = sub.add_parser("explain", help="explain a counterexample step by step, down to the policy's text")
    explain.add_argument("trace", metavar="TRACE.itf.json")
    explain.add_argument("--format", choices=("text", "json"), default="text",
                         help="text (default: the steps and the located cause) or json (the same as one document)")
    certify = sub.add_parser("certify", help="re-check proof certificates with cvc5")
    certify.add_argument("certificates", nargs="+", metavar="CERT.json",
                         help="certificates, together with those for the conditions they assume")
    certify.add_argument("--policy", metavar="FILE", help="require every certificate to be for exactly this policy")
    add_operator_arguments(certify, "with --policy: ")
    certify.add_argument("--rlimit", type=bounded_int(0, 10**12), default=0, metavar="N",
                         help="solver resource limit per obligation (z3 rlimit, cvc5 rlimit-per; 0: none)")
    certify.add_argument("--timeout", type=bounded_int(1, 3600), default=30, help="seconds per obligation")


def builtin_commands() -> dict:
    """The subcommands that live in their own modules: {name: (add_parser, run)}."""
    from prunecheck.checker.commands import graph
    from prunecheck.checker.commands import mcp_server
    from prunecheck.checker.commands import policydiff
    from prunecheck.checker.commands import repair_cli as repair
    from prunecheck.checker.commands import schemas

    return {"graph": (graph.add_parser, graph.run), "repair": (repair.add_parser, repair.run),
            "diff": (policydiff.add_parser, policydiff.run), "schema": (schemas.add_parser, schemas.run),
            "mcp": (mcp_server.add_parser, mcp_server.run)}


def main(argv: Optional[List[str]] = None, stdout: TextIO = None, stderr: TextIO = None,
         extra_commands=None) -> int:
    """extra_commands: {name: (add_parser(subparsers), run(args, stdout, stderr) -> int)} from packages above.

    SIGINT and SIGTERM interrupt the command (symbolic/interrupts.py): exit 130 with `prunecheck: interrupted` on
    stderr, and nothing the interrupt could have shaped printed or written."""
    stdout = SafeStream(stdout or sys.stdout, gated=True)
    stderr = SafeStream(stderr or sys.stderr)
    extra_commands = {**builtin_commands(), **(extra_commands or {})}
    with handling_signals():
        try:
            parser = build_parser(extra_commands)
            with contextlib.redirect_stdout(stdout):  # where argparse prints --help
                args = parser.parse_args(sys.argv[1:] if argv is None else argv)
            code = _run(parser, args, extra_commands, stdout, stderr)
        except BaseException as exc:  # noqa: BLE001 - the promise is one line, never a traceback
            code = failure_code(exc, stderr)
        if interrupted():  # a signal after the command stopped computing, before its outcome was decided
            code = EXIT_INTERRUPTED
        if code == EXIT_INTERRUPTED:
            print("prunecheck: interrupted", file=stderr)
        return code


def _run(parser, args, extra_commands: dict, stdout, stderr) -> int:
    """The command the arguments name, run."""
    if args.version:
        print(f"prunecheck {__version__}", file=stdout)
        return EXIT_HOLDS
    if args.command is None:
        print(command_list(parser), file=stderr)
        return EXIT_INPUT
    check_output_paths(args)
    if args.command == "check":
        return _check_command(args, stdout, stderr)
    if args.command == "replay":
        return _replay(args, stdout)
    if args.command == "explain":
        return _explain(args, stdout)
    if args.command == "certify":
        from prunecheck.checker.commands.certify import run as certify

        if args.deployment and not args.policy:
            raise UsageError("--deployment needs --policy")
        return certify(args, stdout)
    if args.command in extra_commands:
        return extra_commands[args.command][1](args, stdout, stderr)
    if args.command == "reproduce":
        from prunecheck.checker.commands.reproduce import run_all
        if args.claims:
            from prunecheck.checker.commands.claims import claims_markdown
            print(claims_markdown(), end="", file=stdout)
            return 0
        return run_all(stdout)
    raise UsageError(f"unknown command {args.command}")


def _check_command(args, stdout, stderr) -> int:
    if args.engine == Engine.EXPLICIT.value and args.max_counterexamples > 1:
        raise UsageError("--max-counterexamples above 1 needs --engine symbolic (the explicit engine reports "
                         "one counterexample per condition)")
    if _batch_mode(args):
        from prunecheck.checker.commands.batch import run_batch_cli
        _without_unwritable_cache(args, stderr)
        return run_batch_cli(args, stdout, stderr)
    return _check(args, stdout, stderr)


def _without_unwritable_cache(args, stderr) -> None:
    from prunecheck.checker.outputs.cache import default_cache_dir

    warning = cache_warning(args, default_cache_dir())
    if warning:
        print(f"prunecheck: warning: {warning}", file=stderr)
        args.no_cache = True


def _batch_mode(args) -> bool:
    """Batch (summary table, worker processes, cache) for --jobs > 1, Dask, directories and globs; named files
    get the full per-policy report."""
    return args.jobs > 1 or args.executor == "dask" or any(not Path(p).is_file() for p in args.policies)


def _check(args, stdout, stderr) -> int:
    from prunecheck.checker.outputs.accept import load_baseline, settle
    from prunecheck.checker.check import check
    from prunecheck.checker.commands.batch import BatchItem, exit_code, options_from_args
    from prunecheck.checker.language.operator import load_judged
    from prunecheck.checker.outputs.files import Checked, document, file_stems, write_files
    from prunecheck.spec.conditions import not_applicable
    from prunecheck.checker.outputs.render import report_text
    from prunecheck.checker.result import Verdict

    options = options_from_args(args)
    policies = [load_judged(path, options) for path in args.policies]
    baseline = load_baseline(args.baseline) if args.baseline else None
    checked = []
    asked = options.only if tuple(options.only) != tuple(DEFAULTS.only) else ()  # --only named them
    for policy in policies:
        for condition, where in not_applicable(policy, asked):
            print(f"prunecheck: note: {policy.source}: {condition} not checked: it applies only {where}", file=stderr)
    with progress_of(args, stderr).task("checking", total=len(policies)) as progress:
        for policy in policies:
            progress.item(Path(policy.source).name)
            checked.append(Checked(policy.source, policy, check(policy, options)))
            progress.advance()
    commit()  # every policy is checked: the files, the baseline and the report are written whole
    for c, stem in zip(checked, file_stems(policies)):
        write_files(c, stem, args.out, args.emit_pytest, stderr, args.python)
    triages, warnings = settle([(c.report, c.policy.accepts) for c in checked], baseline, args.write_baseline)
    for line in warnings:
        print(f"prunecheck: warning: {line}", file=stderr)
    checked = [replace(c, triage=t) for c, t in zip(checked, triages)]
    if args.format == "text":
        for c in checked:
            print(report_text(c.report, c.findings, c.triage), file=stdout)
    if args.format != "text":
        print(document(args.format, checked), file=stdout)
    items = [BatchItem(c.path, c.report, accepted=tuple(cond for cond, _a in c.triage.accepted),
                       unexpected=c.findings.unexpected) for c in checked]
    return exit_code(items, Verdict[args.fail_on.upper()])


def _explain(args, stdout) -> int:
    from prunecheck.spec.actions import real_steps

    from prunecheck.checker.findings.explain import explanation_json, explanation_lines, explanation_of
    from prunecheck.checker.outputs.itf import read_trace
    from prunecheck.checker.engines.replay import first_violation, replay
    from prunecheck.checker.result import length_text
    from prunecheck.checker.language.tracepolicy import FileStatus

    _document, info, found, actions = read_trace(args.trace)
    policy = found.policy
    condition = info.get("condition")
    if condition not in CONDITIONS:
        raise PolicySyntaxError(f"the trace names no condition (one of {', '.join(CONDITIONS)})", args.trace, 1, 1)
    try:
        transitions = replay(policy, actions, info.get("spans"))
    except ReplayMismatch as exc:
        print(f"does not replay: {exc.one_line()}", file=stdout)
        return EXIT_VIOLATED
    where = first_violation(policy, transitions, condition)
    if where is None or where == 0:
        print(f"the trace does not violate {condition} on the runtime", file=stdout)
        return EXIT_VIOLATED
    explanation = explanation_of(policy, transitions[:where], condition)
    located = found.status == FileStatus.SAME
    if args.format == "json":
        doc = {"policy": policy.name, "condition": condition, "policy_file": found.path,
               "policy_file_status": str(found.status), **explanation_json(explanation)}
        for point in doc["cause"]["points"]:
            point["file"] = policy.source
            if not located:
                point["line"] = point["column"] = None
        print(json.dumps(doc, indent=2), file=stdout)
    else:
        steps = real_steps(actions[:where])
        length = f" ({length_text(where, steps)})" if steps != where else ""
        print(f"policy {policy.name}: {condition} violated at step {where} of {len(actions)}{length}", file=stdout)
        if not located:
            print(f"  note: {_unlocated_note(found)}", file=stdout)
        from prunecheck.checker.outputs.render import status_text
        statuses = [status_text(policy, t.after) for t in transitions[:where]]
        for line in explanation_lines(policy, explanation, indent="  ", located=located, statuses=statuses):
            print(line, file=stdout)
    return EXIT_HOLDS


def _unlocated_note(found) -> str:
    """Why an explanation cites the policy embedded in the trace, without positions."""
    from prunecheck.checker.language.tracepolicy import FileStatus

    if found.path is None:
        why = "the trace names no policy file"
    elif found.status == FileStatus.MISSING:
        why = f"the policy file the trace names, {found.path}, is found neither next to the trace nor from here"
    else:
        why = f"{found.path} no longer holds the policy this trace was checked against"
    return (f"{why}; the points below quote the policy as checked, embedded in the trace, and give no line or "
            "column (they would be in no file you can open)")


def _replay(args, stdout) -> int:
    from prunecheck.spec.conditions import violations
    from prunecheck.spec.actions import real_steps

    from prunecheck.checker.outputs.itf import first_difference, read_trace_file
    from prunecheck.checker.outputs.render import step_lines
    from prunecheck.checker.engines.replay import replay
    from prunecheck.checker.result import length_text

    if args.deployment and not args.policy:
        raise UsageError("--deployment needs --policy")
    document, info, policy, actions = read_trace_file(args.trace)
    if args.policy:
        return _replay_against(args, info, actions, stdout)
    try:
        transitions = replay(policy, actions, info.get("spans"))
    except ReplayMismatch as exc:
        print(f"does not replay: {exc.one_line()}", file=stdout)
        return EXIT_VIOLATED
    print(f"policy {policy.name}: {length_text(len(actions), real_steps(actions))}, condition "
          f"{info.get('condition', '?')}", file=stdout)
    for line in step_lines(policy, transitions):
        print(line, file=stdout)
    difference = first_difference(document, policy, transitions)
    if difference is not None:
        index = difference[0]
        print(f"does not reproduce: state {index} differs from the one recorded in the trace", file=stdout)
        return EXIT_VIOLATED
    found = sorted(violations(policy, transitions[-1])) if transitions else []
    print(f"reproduces as recorded; violated at the last step: {', '.join(found) or 'nothing'}", file=stdout)
    return EXIT_HOLDS


def _replay_against(args, info, actions, stdout) -> int:
    """Replay a trace's actions on another policy: exit 1 if its condition is still violated along them, else 0."""
    from prunecheck.spec.actions import real_steps

    from prunecheck.checker.language.operator import judged_from_args
    from prunecheck.checker.outputs.render import deployment_items_text, step_lines
    from prunecheck.checker.engines.replay import first_violation, replay
    from prunecheck.checker.result import length_text

    condition = info.get("condition")
    if condition not in CONDITIONS:
        raise PolicySyntaxError(f"the trace names no condition (one of {', '.join(CONDITIONS)})", args.trace, 1, 1)
    policy = judged_from_args(args.policy, args)
    deployment = deployment_items_text(policy.deployment.as_dict(policy.overridden).items(), policy.overridden)
    print(f"trace of {condition} ({length_text(len(actions), real_steps(actions))}) against policy {policy.name} "
          f"({policy.source}), deployment {deployment}", file=stdout)
    try:
        transitions = replay(policy, actions, info.get("spans"))
    except ReplayMismatch as exc:
        print(f"no longer replays: {exc.one_line()}", file=stdout)
        print(f"no longer violates {condition} along this trace", file=stdout)
        return EXIT_HOLDS
    for line in step_lines(policy, transitions):
        print(line, file=stdout)
    where = first_violation(policy, transitions, condition)
    if where is None:
        print(f"replays; no longer violates {condition} along this trace", file=stdout)
        return EXIT_HOLDS
    print(f"replays; still violates {condition}, at step {where} of {len(actions)}", file=stdout)
    return EXIT_VIOLATED


def entry() -> None:
    install()  # SIGINT and SIGTERM interrupt the run for the rest of the process (exit 130)
    sys.exit(main())
