"""Batch vetting: many policy files checked in worker processes or on a Dask cluster, with a report cache."""

from __future__ import annotations

import argparse
import glob
import os
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

from prunecheck.spec.errors import Interrupted, PolicySyntaxError, PrunecheckError, ReplayMismatch
from prunecheck.spec.policy import DeploymentOverride

from prunecheck.checker.check import check
from prunecheck.checker.commands.frontdoor import progress_of
from prunecheck.checker.options import CheckOptions, options_with
from prunecheck.checker.outputs.cache import MISS, CacheStatus, ReportCache, default_cache_dir
from prunecheck.checker.result import Report, Verdict
from prunecheck.checker.commands.workers import POLL
from prunecheck.checker.commands.batch_summary import summary_table, summary_text, tally, verdict_label  # noqa: F401
from prunecheck.symbolic.interrupts import commit, stop_if_interrupted

POLICY_SUFFIXES = (".yaml", ".yml", ".json", ".py")
EXECUTORS = ("process", "dask")
EXIT_HOLDS, EXIT_VIOLATED, EXIT_INPUT, EXIT_UNKNOWN, EXIT_INTERNAL = 0, 1, 2, 3, 4


@dataclass(frozen=True)
class BatchItem:
    """One policy file's outcome: a report, or a one-line error (internal: a checker fault, not the input's)."""

    path: str
    report: Optional[Report]
    error: str = ""
    cache: CacheStatus = CacheStatus.MISS
    seconds: float = 0.0
    internal: bool = False
    rejection: str = ""  # why the cache entry was rejected (then the report was solved afresh)
    accepts: tuple = ()  # the policy's own `accept:` entries (Acceptances)
    accepted: tuple = ()  # the conditions whose finding is accepted (in the policy or a baseline): they fail nothing
    unexpected: tuple = ()  # the policy's expectations (findings.expect.Compared) its report contradicts

    @property
    def cached(self) -> bool:
        return self.cache is CacheStatus.HIT

    @property
    def rejected(self) -> bool:
        return self.cache is CacheStatus.REJECTED


def expand_policy_paths(args: Iterable[str]) -> tuple:
    """Files as given, directories as every policy file below them (sorted), globs (recursive `**`) as their sorted
    matches; first occurrence wins. A missing file, an empty directory or a glob without matches is an error."""
    out, seen = [], set()

    def add(path: Path) -> None:
        identity = os.path.realpath(path)
        if identity not in seen:
            seen.add(identity)
            out.append(path)

    def add_directory(directory: Path, arg: str) -> None:
        found = sorted(p for p in directory.rglob("*") if p.suffix in POLICY_SUFFIXES and p.is_file())
        if not found:
            raise PolicySyntaxError(f"no policy files ({', '.join(POLICY_SUFFIXES)}) in directory", arg, 1, 1)
        for p in found:
            add(p)

    for arg in args:
        arg = os.fspath(arg)
        path = Path(arg)
        if path.is_dir():
            add_directory(path, arg)
        elif os.path.lexists(arg):
            add(path)
        elif glob.has_magic(arg):
            matches = sorted(glob.glob(arg, recursive=True))
            if not matches:
                raise PolicySyntaxError("no file matches this pattern", arg, 1, 1)
            for match in matches:
                if os.path.isdir(match):
                    add_directory(Path(match), match)
                else:
                    add(Path(match))
        else:
            raise PolicySyntaxError("no such file or directory", arg, 1, 1)
    if not out:
        raise PolicySyntaxError("no policy files given", "<arguments>", 1, 1)
    return tuple(out)


def batch_item(path: str, options: CheckOptions, cache_dir: Optional[str] = None) -> BatchItem:
    """Load, parse and check one policy file (in a worker), through the cache; never raises. A cache entry is used
    only if it verifies against the policy; a rejected one is solved afresh and overwritten (or removed)."""
    from prunecheck.checker.language.document import policy_hash
    from prunecheck.checker.language.operator import load_judged

    started = time.perf_counter()
    read = MISS
    try:
        policy = load_judged(path, options)
        cache = ReportCache(cache_dir) if cache_dir is not None else None
        settings = options.settings(policy_hash(policy))
        read = cache.read(settings, policy, options.cache_unknown) if cache is not None else MISS
        if read.status is CacheStatus.HIT:
            # The hash covers the parsed policy, not where it was read from.
            return BatchItem(path, replace(read.report, source=policy.source), cache=CacheStatus.HIT,
                             seconds=time.perf_counter() - started, accepts=policy.accepts)
        report = check(policy, options)
        if cache is not None and not cache.store(settings, report, options.cache_unknown) \
                and read.status is CacheStatus.REJECTED:
            cache.discard(settings)
        return replace(_item(path, started, read, report), accepts=policy.accepts)
    except Interrupted:
        raise
    except ReplayMismatch as exc:
        return _item(path, started, read, error=f"checker bug: {exc.one_line()}", internal=True)
    except PrunecheckError as exc:
        return _item(path, started, read, error=exc.one_line())
    except Exception as exc:  # noqa: BLE001 - one bad policy must not end the batch
        return _item(path, started, read, error=f"{type(exc).__name__}: {' '.join(str(exc).split())}",
                     internal=True)


def _item(path: str, started: float, read, report: Optional[Report] = None, error: str = "",
          internal: bool = False) -> BatchItem:
    """A freshly solved (or failed) item, carrying whether a cache entry was rejected for it."""
    return BatchItem(path, report, error, cache=read.status, seconds=time.perf_counter() - started,
                     internal=internal, rejection=read.reason)


def _died(path: str, why: str = "the checker process died (crash or out of memory)") -> BatchItem:
    return BatchItem(path, None, why, internal=True)


def _pooled(paths, worker, args, jobs, done, started=None) -> None:
    # Workers are fresh interpreters that import only prunecheck (checker/commands/workers.py), never the caller's __main__, and
    # live for the whole batch, so the step templates and the proofs that do not depend on the policy are built once
    # per worker, not once per policy; reports do not depend on what a worker checked before (counterexamples are
    # canonical, tests/test_batch.py). A dying worker loses only its own policy.
    from prunecheck.checker.commands.workers import run_jobs

    run_jobs(paths, worker, args, jobs, done, lambda path, why: done(_died(path, why)), started)


def _dasked(paths, worker, args, jobs, scheduler, done) -> None:
    from distributed import Client, LocalCluster, wait as dask_wait

    stop_if_interrupted()
    cluster = None if scheduler else LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                                                  dashboard_address=None)
    client = Client(scheduler or cluster)
    futures = []
    try:
        futures = client.map(worker, list(paths), *[[a] * len(paths) for a in args], pure=False)
        owner = {f.key: p for f, p in zip(futures, paths)}
        pending = set(futures)
        while pending:
            stop_if_interrupted()  # looked for every POLL seconds: the cluster's tasks are cancelled below
            try:
                finished, pending = dask_wait(pending, timeout=POLL, return_when="FIRST_COMPLETED")
            except TimeoutError:
                continue
            for future in finished:
                try:
                    done(future.result())
                except Exception as exc:  # noqa: BLE001 - a killed worker, a lost connection: that item fails, not the batch
                    why = f"the Dask task failed: {type(exc).__name__}: {' '.join(str(exc).split())}"
                    done(_died(owner[future.key], why))
    except BaseException:
        client.cancel(futures)
        raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def check_many(paths: Sequence, options: CheckOptions, jobs: int = 1, executor: str = "process",
               scheduler: Optional[str] = None, cache_dir=None, progress=None,
               worker: Callable = batch_item) -> tuple:
    """A BatchItem per path, in the order given. jobs=1 (process executor) checks in this process; otherwise in
    `jobs` worker processes that live for the whole batch, or on the Dask cluster at scheduler (a local one of `jobs` worker
    processes if None). progress: a Progress (checker/progress.py), or a text stream to show a progress bar on if it
    is a terminal; None shows nothing."""
    from prunecheck.checker.outputs.progress import as_progress

    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}")
    names = [os.fspath(p) for p in paths]
    args = (options, None if cache_dir is None else os.fspath(cache_dir))
    items = {}
    progress = as_progress(progress)
    running, lock = [], threading.Lock()  # the files worker processes are checking now

    def started(name: str) -> None:
        with lock:
            running.append(name)
            progress.item(", ".join(_short(n) for n in running))

    def done(item: BatchItem) -> None:
        items[item.path] = item
        with lock:
            if item.path in running:
                running.remove(item.path)
            progress.item(", ".join(_short(n) for n in running) or f"{_short(item.path)}: {verdict_label(item)}")
        progress.advance()

    with progress.task("checking", total=len(names)):
        if executor == "dask":
            _dasked(names, worker, args, max(1, jobs), scheduler, done)
        elif jobs <= 1:
            for name in names:
                progress.item(_short(name))
                done(worker(name, *args))
        else:
            _pooled(names, worker, args, jobs, done, started)
    return tuple(items[name] for name in names)


def _short(path: str) -> str:
    name = Path(path).name
    return name if len(name) <= 32 else name[:31] + "…"


def exit_code(items: Sequence[BatchItem], fail_on: Verdict = Verdict.UNKNOWN) -> int:
    """4 if any checker fault, else 2 if any input error, else the worst of the findings not accepted and of the
    verdicts that differ from the policy's `expect:` table (a decided one counts as violated, an unknown one as
    unknown; a report that checked nothing counts as unknown): 1 violated, 3 unknown, when it is at least fail_on
    (--fail-on); otherwise 0."""
    if any(item.internal for item in items):
        return EXIT_INTERNAL
    if any(item.report is None for item in items):
        return EXIT_INPUT
    worst = max([r.verdict for item in items for r in item.report.results if r.condition not in item.accepted]
                + [c.severity for item in items for c in item.unexpected], default=Verdict.HOLDS)
    if any(not item.report.results for item in items):  # nothing checked (no condition asked applies): not a pass
        worst = max(worst, Verdict.UNKNOWN)
    if worst < fail_on:
        return EXIT_HOLDS
    return {Verdict.VIOLATED: EXIT_VIOLATED, Verdict.UNKNOWN: EXIT_UNKNOWN}.get(worst, EXIT_HOLDS)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 1 <= value <= 1024:
        raise argparse.ArgumentTypeError(f"{value} is outside 1..1024")
    return value


def add_batch_arguments(check_parser) -> None:
    """--jobs, --executor, --scheduler, --cache, --no-cache on the `check` subparser."""
    check_parser.add_argument("--jobs", "-j", type=_positive, default=1, metavar="N",
                              help="check N policies at a time in N worker processes (default 1: in-process)")
    check_parser.add_argument("--executor", choices=EXECUTORS, default="process",
                              help="process (local worker processes, default) or dask (a Dask cluster)")
    check_parser.add_argument("--scheduler", metavar="ADDRESS",
                              help="Dask scheduler address, e.g. tcp://host:8786 (default with --executor dask: a "
                                   "local cluster of --jobs worker processes)")
    check_parser.add_argument("--cache", metavar="DIR", default=None,
                              help="report cache directory (default $XDG_CACHE_HOME/prunecheck or ~/.cache/prunecheck)")
    check_parser.add_argument("--no-cache", dest="no_cache", action="store_true",
                              help="neither read nor write the report cache")
    check_parser.add_argument("--cache-unknown", dest="cache_unknown", action="store_true",
                              help="also cache reports with an unknown result (keyed by --timeout, --rlimit and "
                                   "--memory), so a re-run does not spend the same budget again; without it they are "
                                   "re-solved")


def options_from_args(args) -> CheckOptions:
    """The options the `check` command's arguments give (an option the parser lacks keeps its default)."""
    from prunecheck.checker.language.loader import load_deployment

    deployment = getattr(args, "deployment", None)
    return options_with(depth=args.depth, spans=args.spans, only=args.only, timeout=args.timeout, prove=args.prove,
                        tokens=args.tokens, repeats=getattr(args, "repeats", None), engine=args.engine,
                        memory_mb=getattr(args, "memory", None), rlimit=getattr(args, "rlimit", None),
                        deployment=load_deployment(deployment) if deployment else None,
                        counterexamples=getattr(args, "max_counterexamples", None),
                        cache_unknown=getattr(args, "cache_unknown", None),
                        recovery_peak=getattr(args, "recovery_peak", None), config=getattr(args, "config", None),
                        no_config=getattr(args, "no_config", None),
                        trust_policy_deployment=getattr(args, "trust_policy_deployment", None))


def run_batch_cli(args, stdout, stderr) -> int:
    """`check` over many files: the summary table (text), or one json, sarif or html document, on stdout; --out and
    --emit-pytest files; errors on stderr, one line each; the exit code of exit_code() under --fail-on."""
    from prunecheck.checker.outputs.accept import load_baseline

    try:
        if args.scheduler and args.executor != "dask":
            raise PolicySyntaxError("--scheduler needs --executor dask", "<arguments>", 1, 1)
        paths = expand_policy_paths(args.policies)
        options = options_from_args(args)
        baseline = load_baseline(args.baseline) if getattr(args, "baseline", None) else None
    except PrunecheckError as exc:
        print(f"prunecheck: error: {exc.one_line()}", file=stderr)
        return EXIT_INPUT
    cache_dir = None if args.no_cache else (args.cache or default_cache_dir())
    items = check_many(paths, options, args.jobs, args.executor, args.scheduler, cache_dir,
                       progress=progress_of(args, stderr))
    commit()  # every policy is checked: the baseline, the files and the summary are written whole
    items, checked = with_policies(items, options)
    try:
        items, triages = _settled(items, baseline, getattr(args, "write_baseline", None), stderr)
    except PrunecheckError as exc:
        print(f"prunecheck: error: {exc.one_line()}", file=stderr)
        return EXIT_INPUT
    checked = tuple(replace(c, triage=triages.get(c.path)) for c in checked)
    for item in items:
        if item.rejected:
            print(f"prunecheck: warning: {item.path}: cache entry rejected and re-solved: {item.rejection}",
                  file=stderr)
        if item.report is None:
            kind = "internal error" if item.internal else "error"
            print(f"prunecheck: {kind}: {error_line(item)}", file=stderr)
    _write_files(args, checked, stderr)
    if args.format == "text":
        _print_summary(items, options, stdout)
        for line in accepted_lines(items, triages) + unexpected_lines(items):
            print(line, file=stdout)
    else:
        from prunecheck.checker.outputs.files import document
        print(document(args.format, checked), file=stdout)
    return exit_code(items, Verdict[getattr(args, "fail_on", "unknown").upper()])


def _settled(items, baseline, write_path, stderr) -> tuple:
    """The items with their accepted conditions set, and {path: Triage}; stale suppressions warned on stderr."""
    from prunecheck.checker.outputs.accept import settle

    solved = [item for item in items if item.report is not None]
    triages, warnings = settle([(item.report, item.accepts) for item in solved], baseline, write_path)
    for line in warnings:
        print(f"prunecheck: warning: {line}", file=stderr)
    by_path = {item.path: t for item, t in zip(solved, triages)}
    settled = [replace(item, accepted=tuple(c for c, _a in by_path[item.path].accepted)) if item.path in by_path
               else item for item in items]
    return tuple(settled), by_path


def accepted_lines(items, triages) -> list:
    """Below the summary: one line per accepted finding, with its reason."""
    from prunecheck.checker.outputs.accept import accepted_line

    return [f"{item.path} {c} {item.report.result(c).verdict}: {accepted_line(c, a)}"
            for item in items if item.path in triages for c, a in triages[item.path].accepted]


def unexpected_lines(items) -> list:
    """Below the summary: one line per verdict that differs from its policy's `expect:` table."""
    return [f"{item.path} {c.expectation.condition}: the expect table says {c.expectation.verdict} "
            f"({c.expectation.loc.line}:{c.expectation.loc.col}), the check says {c.verdict}"
            for item in items for c in item.unexpected]


def error_line(item: BatchItem) -> str:
    """The item's path and error, the path once: an input error already starts with its `file:line:col`."""
    from prunecheck.checker.outputs.render import file_error_text

    return file_error_text(item.path, item.error)


def with_policies(items: Sequence[BatchItem], options: CheckOptions) -> tuple:
    """(items, an outputs.Checked per item): each report with its policy, loaded again here (workers send reports
    only); an item whose file no longer loads as the policy of its report becomes an input error."""
    from prunecheck.checker.language.document import policy_hash
    from prunecheck.checker.language.operator import load_judged
    from prunecheck.checker.outputs.files import Checked

    out_items, checked = [], []
    for item in items:
        policy = None
        if item.report is not None:
            try:
                policy = load_judged(item.path, options)
                same = policy_hash(policy) == item.report.policy_hash
                problem = "" if same else "the file changed while it was checked"
            except PrunecheckError as exc:
                problem = exc.one_line()
            if problem:
                item, policy = replace(item, report=None, error=problem), None
        done = Checked(item.path, policy, item.report, item.error, item.internal)
        if done.findings is not None:
            item = replace(item, unexpected=done.findings.unexpected)
        out_items.append(item)
        checked.append(done)
    return tuple(out_items), tuple(checked)


def _write_files(args, checked, stderr) -> None:
    from prunecheck.checker.outputs.files import file_stems, write_files

    done = [c for c in checked if c.report is not None]
    for item, stem in zip(done, file_stems([c.policy for c in done])):
        write_files(item, stem, args.out, args.emit_pytest, stderr, args.python)


def _print_summary(items, options: CheckOptions, stdout) -> None:
    raw_out = getattr(stdout, "stream", stdout)
    if hasattr(raw_out, "isatty") and raw_out.isatty():
        from rich.console import Console
        console = Console(file=raw_out)
        console.print(summary_table(items))
        console.print(tally(items), markup=False, highlight=False)
    else:
        print(summary_text(items), file=stdout)
    if options.deployment is not None:
        print(override_line(options.deployment), file=stdout)


def override_line(override: DeploymentOverride) -> str:
    settings = ", ".join(f"{key}={value}" for key, value in override.settings) or "no keys"
    return f"deployment override on every policy: {settings} (their other deployment keys are their own)"


__all__ = ["BatchItem", "add_batch_arguments", "batch_item", "check_many", "exit_code",
           "expand_policy_paths", "options_from_args", "run_batch_cli", "summary_table", "summary_text", "tally",
           "with_policies"]
