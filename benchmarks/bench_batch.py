"""Benchmark: batch vetting of generated policies in-process, on worker processes, and again from a warm cache.

Run: python benchmarks/bench_batch.py [--count 1000] [--seed 0] [--jobs 2] [--depth 12] [--spans 6]
         [--write benchmarks/BATCH.md]

The policies come from prunecheck.strategies.policies() under a seeded hypothesis @given (generate phase only, no
example database, so the same seed and hypothesis version give the same policies); duplicates are dropped and
further seeds drawn until --count distinct policies exist. Each is written as YAML into a temporary directory,
then the directory is vetted three times: jobs=1 (in-process, no cache), jobs=N (fresh cache), jobs=N again (warm
cache). Prints a Markdown table and writes it, with the machine, to --write.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import z3

from prunecheck.version import __version__
from prunecheck.checker.commands.batch import check_many, expand_policy_paths, verdict_label
from prunecheck.checker.options import CheckOptions
from prunecheck.checker.language.document import policy_hash
from prunecheck.checker.language.printer import policy_yaml

ROOT = Path(__file__).resolve().parent.parent


def generated_policies(count: int, seed: int, max_depth: int = 3) -> list:
    """count distinct policies (by policy_hash) from policies(max_depth), drawn under @seed(seed), @seed(seed+1)..."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as seeded

    from prunecheck.strategies import policies

    found, seen = [], set()
    for offset in range(100):
        if len(found) >= count:
            break

        @settings(max_examples=count, database=None, phases=[Phase.generate], deadline=None,
                  suppress_health_check=list(HealthCheck))
        @seeded(seed + offset)
        @given(policies(max_depth))
        def collect(policy):
            digest = policy_hash(policy)
            if digest not in seen and len(found) < count:
                seen.add(digest)
                found.append(policy)

        collect()
    return found


def machine() -> str:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = ", load average %.2f at start" % os.getloadavg()[0] if hasattr(os, "getloadavg") else ""
    return (f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores ({usable} usable), "
            f"{cpu or 'cpu unknown'}{load}; Python {platform.python_version()}, z3 {z3.get_version_string()}, "
            f"prunecheck {__version__}")


def _conditions(item) -> list:
    if item.report is None:
        return ["error"]
    return [str(r.verdict) for r in item.report.results]


def timed(label: str, paths, options, jobs: int, cache_dir) -> tuple:
    started = time.perf_counter()
    items = check_many(paths, options, jobs=jobs, cache_dir=cache_dir, progress=sys.stderr)
    return label, items, time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="number of generated policies (default 1000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-depth", type=int, default=3, help="expression depth of the generated policies")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes of the parallel runs (default 2)")
    parser.add_argument("--depth", type=int, default=12)
    parser.add_argument("--spans", type=int, default=6)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per condition (default 30)")
    parser.add_argument("--serial", action="store_true",
                        help="also time jobs=1 in-process (long: every policy on one core)")
    parser.add_argument("--cold-only", action="store_true", help="time only the cold run")
    parser.add_argument("--save-verdicts", metavar="FILE", help="write the cold run's verdicts per condition (JSON)")
    parser.add_argument("--compare-verdicts", metavar="FILE",
                        help="report how the cold run's verdicts compare with those saved in FILE by another run")
    parser.add_argument("--write", metavar="FILE", default=str(ROOT / "benchmarks" / "BATCH.md"),
                        help="Markdown output (default benchmarks/BATCH.md; '' for none)")
    args = parser.parse_args(argv)

    host = machine()
    started = time.perf_counter()
    policies = generated_policies(args.count, args.seed, args.max_depth)
    generation = time.perf_counter() - started
    options = CheckOptions(depth=args.depth, spans=args.spans, timeout=args.timeout)
    with tempfile.TemporaryDirectory(prefix="prunecheck-bench-") as tmp:
        folder = Path(tmp) / "policies"
        folder.mkdir()
        for index, policy in enumerate(policies):
            (folder / f"{index:05d}-{policy.name}.yaml").write_text(policy_yaml(policy), encoding="utf-8")
        paths = expand_policy_paths([str(folder)])
        cache = Path(tmp) / "cache"
        keep_unknown = replace(options, cache_unknown=True)
        runs = [timed("jobs=1, in-process, no cache", paths, options, 1, None)] if args.serial else []
        # The cold run also stores reports with an unknown result; only the --cache-unknown run reads them.
        runs += [timed(f"jobs={args.jobs}, cold cache", paths, keep_unknown, args.jobs, cache)]
        if not args.cold_only:
            runs += [timed(f"jobs={args.jobs}, warm cache", paths, options, args.jobs, cache),
                     timed(f"jobs={args.jobs}, warm cache, --cache-unknown", paths, keep_unknown, args.jobs, cache)]

    lines = ["| run | policies | seconds | policies/s | from cache |", "|---|---:|---:|---:|---:|"]
    for label, items, seconds in runs:
        lines.append(f"| {label} | {len(items)} | {seconds:.1f} | {len(items) / seconds:.2f} | "
                     f"{sum(i.cached for i in items)} |")
    table = "\n".join(lines)
    cold = runs[1 if args.serial else 0][1]
    warm, kept = (runs[-2][1], runs[-1][1]) if not args.cold_only else ([], [])
    first = runs[0][1] if args.serial else cold
    verdicts = Counter(verdict_label(i) for i in cold)
    same_verdicts = sum(len({verdict_label(i) for i in group}) == 1 for group in zip(*(r[1] for r in runs)))
    partly_unknown = [i for i in cold if i.report is not None
                      and any(r.verdict.name == "UNKNOWN" for r in i.report.results)]
    cached_equal = sum(b.report == c.report for b, c in zip(cold, warm) if c.cached)
    kept_equal = sum(b.report == c.report for b, c in zip(cold, kept) if c.cached)
    facts = [
        f"verdicts (cold run): {', '.join(f'{n} {k}' for k, n in sorted(verdicts.items()))}",
        f"policies with at least one unknown condition (cold run): {len(partly_unknown)}, their time "
        f"{sum(i.seconds for i in partly_unknown):.1f} s of worker time",
        f"same verdict in all {len(runs)} runs: {same_verdicts}/{len(cold)}",
    ]
    if not args.cold_only:
        facts.append(f"cached reports equal to the cold run's: {cached_equal}/{sum(c.cached for c in warm)} (warm "
                     f"run), {kept_equal}/{sum(c.cached for c in kept)} (--cache-unknown run)")
    mine = {Path(i.path).name: _conditions(i) for i in cold}
    if args.save_verdicts:
        Path(args.save_verdicts).write_text(json.dumps(mine, indent=0, sort_keys=True), encoding="utf-8")
    if args.compare_verdicts:
        other = json.loads(Path(args.compare_verdicts).read_text(encoding="utf-8"))
        shared = sorted(set(mine) & set(other))
        same = sum(mine[k] == other[k] for k in shared)
        decided_here = sum(1 for k in shared for a, b in zip(mine[k], other[k]) if b == "unknown" != a)
        lost_here = sum(1 for k in shared for a, b in zip(mine[k], other[k]) if a == "unknown" != b)
        clash = sum(1 for k in shared for a, b in zip(mine[k], other[k]) if {a, b} == {"holds", "violated"})
        facts.append(f"against {args.compare_verdicts}: same verdict on every condition for {same}/{len(shared)} "
                     f"policies; conditions decided here but unknown there {decided_here}, unknown here but "
                     f"decided there {lost_here}, holds against violated {clash}")
    if args.serial:
        same_reports = sum(a.report == b.report for a, b in zip(first, cold) if a.report is not None)
        facts.append(f"identical reports, in-process vs worker processes: {same_reports}/{len(first)} "
                     "(the same policy checked after different ones)")
    print(table)
    print("\n".join(facts))
    if args.write:
        command = "python benchmarks/bench_batch.py " + " ".join(sys.argv[1:] if argv is None else argv)
        text = "\n".join([
            "# Batch benchmark", "",
            f"Generated by `{command.strip()}` on {time.strftime('%Y-%m-%d')}.", "",
            f"Machine: {host}.", "",
            f"Policies: {len(policies)} distinct from `prunecheck.strategies.policies(max_depth={args.max_depth})` "
            f"under a seeded hypothesis `@given` (seed {args.seed}, generate phase only; {generation:.1f} s), "
            "written as YAML.", "",
            f"Options: depth {args.depth}, {args.spans} spans, all five conditions, timeout {args.timeout:g} s per "
            "condition. Parallel runs use `--jobs` worker processes (fresh interpreters, checker/commands/workers.py) that "
            "live for the whole batch.", "",
            table, "",
            *[f"- {fact}" for fact in facts], ""])
        Path(args.write).write_text(text, encoding="utf-8")
        print(f"wrote {args.write}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
