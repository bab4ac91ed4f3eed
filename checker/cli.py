"""The command line: `prunecheck check | explain | graph | repair | diff | replay | certify | reproduce`, as
main(argv, stdout, stderr) -> exit code.

Exit codes: 0 every condition holds (replay: the trace reproduces as recorded; certify: every certificate is
confirmed, assumptions included); 1 some condition is violated (replay: the trace does not reproduce; certify: a
certificate is rejected or refuted); 2 usage or input error (certify: an unreadable or non-JSON file); 3 nothing
violated but something unknown (certify: a solver gave up on some certificate); 4 internal error (a checker bug,
such as a counterexample that does not replay). frontdoor.EXIT_MEANINGS says what 0, 1 and 3 mean for each command;
every --help lists its command's codes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import unicodedata
from pathlib import Path
from typing import List, Optional, TextIO

from prunecheck import __version__
from prunecheck.spec.conditions import CONDITIONS
from prunecheck.spec.errors import PolicySyntaxError, PrunecheckError, ReplayMismatch, TraceFormatError

from .frontdoor import cache_warning, check_output_paths, command_list, exit_code_epilog, writing

EXIT_HOLDS, EXIT_VIOLATED, EXIT_INPUT, EXIT_UNKNOWN, EXIT_INTERNAL = 0, 1, 2, 3, 4


def terminal_safe(text: str) -> str:
    """Escape what could rewrite a reviewer's terminal: control characters other than newline, format characters
    (bidi overrides, zero-width) and line separators. Policy text reaches the output in names and error messages."""
    out = []
    for ch in text:
        category = unicodedata.category(ch)
        if ch != "\n" and (category in ("Cc", "Cf", "Zl", "Zp", "Cs") or category == "Co"):
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


class _SafeStream:
    """A text stream that escapes terminal-unsafe characters on the way out."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(terminal_safe(text))

    def flush(self) -> None:
        self.stream.flush()


class UsageError(Exception):
    """Bad command-line usage (exit code 2)."""


class _HelpShown(Exception):
    """--help printed its text (exit code 0)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)

    def exit(self, status=0, message=None):
        if status == 0:
            raise _HelpShown()
        raise UsageError(message or "")


def _bounded_int(low: int, high: int):
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
    parser.add_argument("--rlimit", type=_bounded_int(0, 10**12), default=0, metavar="N",
                        help="also bound every solver query by N resource units (z3 rlimit, cvc5 rlimit-per), which "
                             "unlike --timeout a loaded machine cannot change (0: none)")


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
    check = sub.add_parser("check", help="check policies against C1-C4 and P1")
    check.add_argument("policies", nargs="+", metavar="POLICY", help=".yaml, .yml, .json or .py policy files")
    check.add_argument("--depth", type=_bounded_int(0, 200), default=12, help="bounded search depth (default 12)")
    check.add_argument("--spans", type=_bounded_int(2, 32), default=6, help="span slots (default 6)")
    check.add_argument("--only", type=_conditions, default=CONDITIONS, help="conditions to check, e.g. C1,P1")
    check.add_argument("--format", choices=("text", "json", "html", "sarif"), default="text",
                       help="text (default), json, html (one self-contained page) or sarif (SARIF 2.1.0)")
    check.add_argument("--out", metavar="DIR", help="write each counterexample as an ITF trace file into DIR")
    check.add_argument("--deployment", metavar="FILE",
                       help="set the deployment keys this YAML/JSON file gives (e.g. `records: window`) in each "
                            "policy's deployment; the other keys keep the policy's values")
    check.add_argument("--timeout", type=_bounded_int(1, 3600), default=30, help="seconds per condition (default 30)")
    add_rlimit_argument(check)
    check.add_argument("--memory", type=_bounded_int(0, 1 << 20), default=0, metavar="MB",
                       help="solver memory limit in MB (0: none)")
    check.add_argument("--max-counterexamples", type=_bounded_int(1, 100), default=1, metavar="N",
                       help="up to N counterexamples per violated condition, different in their action sequences")
    check.add_argument("--emit-pytest", metavar="DIR",
                       help="write each counterexample as a pytest module into DIR (a regression test once fixed)")
    check.add_argument("--python", metavar="DIR",
                       help="write each counterexample as a standalone Python script into DIR (the policy embedded, "
                            "only prunecheck's public API; exit 0 when it reproduces the violation)")
    check.add_argument("--prove", dest="prove", action="store_true", default=True,
                       help="try to prove each condition for every depth and window size (default)")
    check.add_argument("--no-prove", dest="prove", action="store_false", help="bounded search only")
    check.add_argument("--engine", choices=("symbolic", "explicit"), default="symbolic",
                       help="symbolic (z3: proofs and bounded search, default) or explicit (breadth-first search "
                            "over the reference runtime: an independent second opinion for small bounds)")
    check.add_argument("--tokens", type=_domain("token counts"), default=None, metavar="N,N,...",
                       help="token counts an append may carry, overriding the default (explicit engine: 1,2 and the "
                            "neighbours of the policy's token constants and budget; symbolic: any)")
    check.add_argument("--repeats", type=_domain("repetition counts"), default=None, metavar="N,N,...",
                       help="how many times in a row a read or audit may repeat as one action, overriding the "
                            "default (explicit engine: 1 and the neighbours of the policy's clock constants; "
                            "symbolic: any)")
    from .batch import add_batch_arguments
    add_batch_arguments(check)
    replay = sub.add_parser("replay", help="re-execute an ITF trace on the reference runtime")
    replay.add_argument("trace", metavar="TRACE.json")
    explain = sub.add_parser("explain", help="explain a counterexample step by step, down to the policy's text")
    explain.add_argument("trace", metavar="TRACE.itf.json")
    explain.add_argument("--format", choices=("text", "json"), default="text")
    certify = sub.add_parser("certify", help="re-check proof certificates with cvc5")
    certify.add_argument("certificates", nargs="+", metavar="CERT.json",
                         help="certificates, together with those for the conditions they assume")
    certify.add_argument("--policy", metavar="FILE", help="require every certificate to be for exactly this policy")
    certify.add_argument("--deployment", metavar="FILE",
                         help="with --policy: set the deployment keys this file gives in the policy's deployment (the "
                              "others keep the policy's values)")
    certify.add_argument("--rlimit", type=_bounded_int(0, 10**12), default=0, metavar="N",
                         help="solver resource limit per obligation (z3 rlimit, cvc5 rlimit-per; 0: none)")
    certify.add_argument("--timeout", type=_bounded_int(1, 3600), default=30, help="seconds per obligation")
    sub.add_parser("reproduce", help="reproduce the seeds' observations")
    for add_parser, _ in (extra_commands or {}).values():
        add_parser(sub)
    for name, command_parser in sub.choices.items():
        command_parser.epilog = command_parser.epilog or exit_code_epilog(name)
    return parser


def builtin_commands() -> dict:
    """The subcommands that live in their own modules: {name: (add_parser, run)}."""
    from . import graph, policydiff, repair

    return {"graph": (graph.add_parser, graph.run), "repair": (repair.add_parser, repair.run),
            "diff": (policydiff.add_parser, policydiff.run)}


def main(argv: Optional[List[str]] = None, stdout: TextIO = None, stderr: TextIO = None,
         extra_commands=None) -> int:
    """extra_commands: {name: (add_parser(subparsers), run(args, stdout, stderr) -> int)} from packages above."""
    stdout = _SafeStream(stdout or sys.stdout)
    stderr = _SafeStream(stderr or sys.stderr)
    extra_commands = {**builtin_commands(), **(extra_commands or {})}
    try:
        parser = build_parser(extra_commands)
        with contextlib.redirect_stdout(stdout):  # where argparse prints --help
            args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        if args.version:
            print(f"prunecheck {__version__}", file=stdout)
            return EXIT_HOLDS
        if args.command is None:
            print(command_list(parser), file=stderr)
            return EXIT_INPUT
        check_output_paths(args)
        if args.command == "check":
            if args.engine == "explicit" and args.max_counterexamples > 1:
                raise UsageError("--max-counterexamples above 1 needs --engine symbolic (the explicit engine reports "
                                 "one counterexample per condition)")
            if _batch_mode(args):
                from .batch import run_batch_cli
                _without_unwritable_cache(args, stderr)
                return run_batch_cli(args, stdout, stderr)
            return _check(args, stdout, stderr)
        if args.command == "replay":
            return _replay(args, stdout)
        if args.command == "explain":
            return _explain(args, stdout)
        if args.command == "certify":
            return _certify(args, stdout)
        if args.command in extra_commands:
            return extra_commands[args.command][1](args, stdout, stderr)
        if args.command == "reproduce":
            from .reproduce import run_all
            return run_all(stdout)
        raise UsageError(f"unknown command {args.command}")
    except _HelpShown:
        return EXIT_HOLDS
    except UsageError as exc:
        print(f"prunecheck: usage error: {' '.join(str(exc).split())}", file=stderr)
        return EXIT_INPUT
    except (PolicySyntaxError, TraceFormatError) as exc:
        print(f"prunecheck: error: {exc.one_line()}", file=stderr)
        return EXIT_INPUT
    except ReplayMismatch as exc:
        print(f"prunecheck: internal error (checker bug, please report): {exc.one_line()}", file=stderr)
        return EXIT_INTERNAL
    except PrunecheckError as exc:
        print(f"prunecheck: error: {exc.one_line()}", file=stderr)
        return EXIT_INPUT
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep Python from complaining at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_VIOLATED
    except KeyboardInterrupt:
        print("prunecheck: interrupted", file=stderr)
        return EXIT_INTERNAL
    except Exception as exc:  # noqa: BLE001 - the promise is one line, never a traceback
        if os.environ.get("PRUNECHECK_DEBUG"):
            raise
        print(f"prunecheck: internal error: {type(exc).__name__}: {' '.join(str(exc).split())} "
              "(set PRUNECHECK_DEBUG=1 for a traceback)", file=stderr)
        return EXIT_INTERNAL


def _without_unwritable_cache(args, stderr) -> None:
    from .cache import default_cache_dir

    warning = cache_warning(args, default_cache_dir())
    if warning:
        print(f"prunecheck: warning: {warning}", file=stderr)
        args.no_cache = True


def _batch_mode(args) -> bool:
    """Batch (summary table, worker processes, cache) for --jobs > 1, Dask, directories and globs; named files
    get the full per-policy report."""
    if args.format in ("html", "sarif") or args.emit_pytest:
        return False
    return args.jobs > 1 or args.executor == "dask" or any(not Path(p).is_file() for p in args.policies)


def _check(args, stdout, stderr) -> int:
    from .check import check, check_explicit, policy_document
    from .loader import load_deployment, load_policy
    from .render import report_json, report_text
    from .result import Verdict

    override = load_deployment(args.deployment) if args.deployment else None
    policies = [load_policy(path, override) for path in args.policies]
    reports = []
    for policy in policies:
        if args.engine == "explicit":
            report = check_explicit(policy, args.depth, args.spans, args.only, float(args.timeout),
                                    args.tokens, args.repeats)
        else:
            report = check(policy, args.depth, args.spans, args.only, float(args.timeout), args.memory, args.prove,
                           token_domain=args.tokens, counterexamples=args.max_counterexamples,
                           repeat_domain=args.repeats, rlimit=args.rlimit)
        reports.append(report)
        if args.out:
            with writing("--out", args.out):
                _write_traces(policy, policy_document(policy), report, Path(args.out), stderr)
        if args.emit_pytest:
            from .emit import write_pytest_files
            with writing("--emit-pytest", args.emit_pytest):
                for path in write_pytest_files(policy, report, Path(args.emit_pytest)):
                    print(f"wrote {path}", file=stderr)
        if args.python:
            from .scripts import write_scripts
            with writing("--python", args.python):
                for path in write_scripts(policy, report, Path(args.python)):
                    print(f"wrote {path}", file=stderr)
        if args.format == "text":
            print(report_text(report, policy), file=stdout)
    if args.format == "html":
        from .html_report import report_html
        labels = {(p.name, r.condition): _labels(p, r) for p, rep in zip(policies, reports) for r in rep.results
                  if r.trace is not None}
        print(report_html(reports, {p.name: p for p in policies}, labels), file=stdout)
    if args.format == "sarif":
        from .sarif import sarif_log
        print(json.dumps(sarif_log(list(zip(policies, reports))), indent=2), file=stdout)
    if args.format == "json":
        docs = [report_json(r, p) for r, p in zip(reports, policies)]
        if len(docs) == 1:
            print(json.dumps(docs[0], indent=2), file=stdout)
        else:
            worst = max(r.verdict for r in reports)
            print(json.dumps({"verdict": str(worst), "policies": docs}, indent=2), file=stdout)
    worst = max(r.verdict for r in reports)
    if worst == Verdict.VIOLATED:
        return EXIT_VIOLATED
    return EXIT_UNKNOWN if worst == Verdict.UNKNOWN else EXIT_HOLDS


def _labels(policy, result) -> list:
    """Per step of a counterexample: what it changed; the last step also says why it violates, and where."""
    from .explain import explain

    explanation = explain(policy, result.trace.actions, result.condition, result.trace.spans)
    cause = explanation.cause
    where = "; ".join(f"{p.loc.line}:{p.loc.col} `{p.text}` {p.note}" for p in cause.points)
    return list(explanation.steps[:-1]) + [f"{explanation.steps[-1]} -- why: {cause.summary}; {where}"]


def _write_traces(policy, policy_doc, report, out: Path, stderr) -> None:
    from .itf import trace_document
    from .replay import replay

    out.mkdir(parents=True, exist_ok=True)
    stem = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in policy.name) or "policy"
    for r in report.results:
        if r.certificate is not None:
            path = out / f"{stem}.{r.condition}.cert.json"
            path.write_text(r.certificate, encoding="utf-8")
            print(f"wrote {path}", file=stderr)
        if r.trace is None:
            continue
        transitions = replay(policy, r.trace.actions, r.trace.spans)
        meta = {"condition": r.condition, "depth": report.depth, "spans": report.spans, "source": policy.source,
                "policy_hash": report.policy_hash, "versions": dict(report.versions)}
        doc = trace_document(policy, policy_doc, transitions, meta)
        path = out / f"{stem}.{r.condition}.itf.json"
        path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path}", file=stderr)


def _explain(args, stdout) -> int:
    from prunecheck.spec.runtime import real_steps

    from .explain import explain, explanation_json, explanation_lines
    from .itf import read_trace_file
    from .replay import first_violation, replay
    from .result import length_text

    _document, info, policy, actions = read_trace_file(args.trace)
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
    explanation = explain(policy, actions[:where], condition, info.get("spans"))
    if args.format == "json":
        doc = {"policy": policy.name, "condition": condition, **explanation_json(explanation)}
        print(json.dumps(doc, indent=2), file=stdout)
    else:
        steps = real_steps(actions[:where])
        length = f" ({length_text(where, steps)})" if steps != where else ""
        print(f"policy {policy.name}: {condition} violated at step {where} of {len(actions)}{length}", file=stdout)
        for line in explanation_lines(policy, explanation, indent="  "):
            print(line, file=stdout)
    return EXIT_HOLDS


def _replay(args, stdout) -> int:
    from prunecheck.spec.conditions import violations
    from prunecheck.spec.runtime import real_steps

    from .itf import first_difference, read_trace_file
    from .render import step_lines
    from .replay import replay
    from .result import length_text

    document, info, policy, actions = read_trace_file(args.trace)
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


def _certify(args, stdout) -> int:
    from .certificate import CertificateError, Status, certificate_json, certify_set
    from .itf import regular_file
    from .loader import load_deployment, load_policy

    documents = []
    for name in args.certificates:
        path = Path(name)
        regular_file(path)
        try:
            documents.append((str(path), certificate_json(path.read_text(encoding="utf-8"))))
        except CertificateError as exc:  # readable, but tampered: rejected like any other forged field
            documents.append((str(path), exc))
        except (OSError, UnicodeDecodeError) as exc:
            raise PolicySyntaxError(f"cannot read certificate: {exc}", str(path), 1, 1) from None
        except json.JSONDecodeError as exc:
            raise PolicySyntaxError(f"certificate is not JSON: {exc.msg}", str(path), exc.lineno, exc.colno) from None
        except RecursionError:
            raise PolicySyntaxError("certificate is not JSON: nested too deeply", str(path), 1, 1) from None
    if args.deployment and not args.policy:
        raise UsageError("--deployment needs --policy")
    policy = None
    if args.policy:
        policy = load_policy(args.policy, load_deployment(args.deployment) if args.deployment else None)
    verdicts = certify_set(documents, policy, args.timeout * 1000, args.rlimit)
    for v in verdicts:
        about = f"{v.label}: " if v.label else ""
        print(f"{v.name}: {about}{v.status} ({v.reason})", file=stdout)
        for o in v.obligations:
            print(f"  {o.name:<12} cvc5: {o.cvc5:<8} z3: {o.z3}", file=stdout)
        for condition, by in v.discharged:
            print(f"  assumes {condition}: discharged by {by}", file=stdout)
        if v.label and not v.discharged and v.status == Status.CONFIRMED:
            print("  assumes nothing", file=stdout)
    statuses = {v.status for v in verdicts}
    if statuses & {Status.REJECTED, Status.REFUTED}:
        return EXIT_VIOLATED
    return EXIT_UNKNOWN if Status.UNCHECKED in statuses else EXIT_HOLDS


def entry() -> None:
    sys.exit(main())
