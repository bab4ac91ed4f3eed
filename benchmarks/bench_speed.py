"""Benchmark for the speed targets: per-policy medians, symbolic vs explicit, growth in depth and spans, memory.

Run: python benchmarks/bench_speed.py [--runs 5] [--generated 40] [--write benchmarks/RESULTS.md] [--quick]

Sections (all in one run, on the same machine, printed and written as Markdown with the machine and versions):
1. `check` (all five conditions, depth 12, 6 spans, bounded search plus proof), median of --runs with the
   process's shared caches cleared (cold) and warm, for every example and for generated policies grouped by class,
   and `prunecheck check FILE` in a fresh interpreter for the examples; targets: median under 1 s for every policy
   and class, under 0.3 s where a counterexample exists within 4 steps.
2. The symbolic bounded search against the explicit-state engine on the same policies, bounds and token domain
   (depth 6, 5 spans, tokens 1,2): the ratio per policy (target 100x), and for two policies the depth at which the
   explicit engine stops finishing in 60 s while the symbolic one still answers.
3. Growth: time of the bounded search, caches cleared (no proof: the proof does not depend on the bounds) against depth 4..32 and
   spans 4..16, for a safe and an unsafe policy, as a table and a PNG plot (matplotlib); the fitted exponent of time
   against depth (target: no worse than quadratic).
4. Memory: peak resident memory of a fresh process checking each example at the defaults (target under 300 MB).
The batch figures (1,000 policies, --jobs 2, warm cache) come from benchmarks/bench_batch.py (BATCH.md).
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

from prunecheck.checker.engines.bmc import check_bounded
from prunecheck.checker.check import check, clear_caches
from prunecheck.checker.engines.explicit import domains_for, explore
from prunecheck.checker.language.loader import load_policy, parse_policy_text
from prunecheck.checker.result import Verdict

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_batch import generated_policies, machine  # noqa: E402
from bench_check import median_seconds as median_time  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "policies"
SAFE = "name: growth-safe\nevict: kind == 'tool_output' and idle > 3\nbudget: 50\n"
UNSAFE = ("name: growth-unsafe\nevict: not pinned and recency * frequency < 0.25\nbudget: 50\n"
          "deployment: {records: window, pins: self, audit: policy}\n")
EXPLICIT_LIMIT = 60.0
GROWTH_CAP = 60.0


def shortest(report) -> int:
    lengths = [r.depth for r in report.results if r.verdict == Verdict.VIOLATED]
    return min(lengths) if lengths else 0


def policy_class(policy, report) -> str:
    shape = ("ranked+budget" if policy.rank is not None and policy.budget is not None
             else "budget" if policy.budget is not None else "no budget")
    unsafe = policy.deployment.records == "window" or policy.deployment.rationale == "window"
    return f"{report.verdict}, {shape}, {'reachable' if unsafe else 'separated'} records/rationale"


def cold_check(policy):
    clear_caches()
    return check(policy)


def cli_seconds(path: Path, runs: int) -> float:
    """Wall time of `prunecheck check FILE` in a fresh interpreter (start-up and imports included)."""
    return median_time(lambda: subprocess.run([sys.executable, "-m", "prunecheck.checker", "check", str(path)],
                                              capture_output=True, timeout=600), runs)


def _verdict_of(seconds: float, limit: float) -> str:
    return "met" if seconds < limit else "MISSED"


def section_policies(runs: int, generated: int, lines: list) -> list:
    """Per policy: cold (the process's shared caches cleared before each run) and warm (after a run of the same
    policy, so the shape's step template, lemmas and abstracted proofs are built), median of `runs` each."""
    rows = []
    items = [(path.name, "example", load_policy(path), path) for path in sorted(EXAMPLES.iterdir())]
    items += [(policy.name, None, policy, None) for policy in generated_policies(generated, seed=0)]
    for name, cls, policy, path in items:
        report = cold_check(policy)
        cls = cls or policy_class(policy, report)
        cold = median_time(lambda: cold_check(policy), runs)
        check(policy)
        warm = median_time(lambda: check(policy), runs)
        fresh = cli_seconds(path, max(1, runs // 2)) if path is not None else None
        rows.append((name, cls, cold, warm, fresh, shortest(report), str(report.verdict)))
        print(f"{name[:45]:45s} cold {cold:6.3f} s  warm {warm:6.3f} s  {cls}", flush=True)
    lines += ["## 1. One policy, all five conditions, depth 12, 6 spans, bounded search plus proof", "",
              f"Median of {runs} in-process runs each way. Cold: the caches a process shares between checks (step "
              "templates with their lemmas, proofs with the policy abstracted, cvc5's answers) are cleared before "
              "every run. Warm: after one run of the same policy, as in a loop or batch worker once it has seen a "
              "policy of the same deployment and shape (expression-specific work is never cached). Fresh process: "
              "`python -m prunecheck.checker check FILE`, interpreter start-up and imports included (examples only).",
              "", "Target: under 1 s; under 0.3 s when a counterexample exists within 4 steps.", "",
              "| policy | class | cold s | warm s | fresh process s | shortest cex | verdict | target cold / warm |",
              "|---|---|---:|---:|---:|---:|---|---|"]
    for name, cls, cold, warm, fresh, short, verdict in rows:
        limit = 0.3 if 0 < short <= 4 else 1.0
        lines.append(f"| {name} | {cls} | {cold:.3f} | {warm:.3f} | {'-' if fresh is None else f'{fresh:.2f}'} | "
                     f"{short or '-'} | {verdict} | {_verdict_of(cold, limit)} / {_verdict_of(warm, limit)} "
                     f"(< {limit} s) |")
    classes = {}
    for name, cls, cold, warm, _, short, _ in rows:
        classes.setdefault(cls, []).append((cold, warm))
    lines += ["", "| class | policies | median cold s | median warm s | max cold s | max warm s | class median target "
              "(< 1 s) cold / warm |", "|---|---:|---:|---:|---:|---:|---|"]
    for cls, values in sorted(classes.items()):
        cold_median = statistics.median(c for c, _ in values)
        warm_median = statistics.median(w for _, w in values)
        lines.append(f"| {cls} | {len(values)} | {cold_median:.3f} | {warm_median:.3f} | "
                     f"{max(c for c, _ in values):.3f} | {max(w for _, w in values):.3f} | "
                     f"{_verdict_of(cold_median, 1.0)} / {_verdict_of(warm_median, 1.0)} |")
    for label, group, limit in (("Counterexample within 4 steps", [r for r in rows if 0 < r[5] <= 4], 0.3),
                                ("Others", [r for r in rows if not 0 < r[5] <= 4], 1.0)):
        cold, warm = [r[2] for r in group], [r[3] for r in group]
        lines.append(f"{label}: {len(group)} policies; cold median {statistics.median(cold):.3f} s, max "
                     f"{max(cold):.3f} s, {sum(s >= limit for s in cold)} at or over {limit} s; warm median "
                     f"{statistics.median(warm):.3f} s, max {max(warm):.3f} s, {sum(s >= limit for s in warm)} at or "
                     f"over {limit} s.")
        lines.append("")
    return rows


def same_domains(domains) -> dict:
    """check_bounded's arguments that restrict it to the explicit engine's domains."""
    return {"token_domain": domains.tokens, "repeat_domain": domains.repeats, "clock_targets": domains.clock_targets}


def section_explicit(lines: list, quick: bool) -> None:
    depth, spans, tokens = 6, 5, (1, 2)
    lines += ["## 2. Symbolic bounded search against the explicit-state engine", "",
              f"Same policy, depth {depth}, {spans} spans, append tokens {{1,2}} for both, all five conditions; "
              f"explicit time limit {EXPLICIT_LIMIT:.0f} s. Target: symbolic at least 100x faster.", "",
              "Symbolic cold: the process's shared caches cleared first; warm: a second run (the shape's step "
              "template and lemmas built).", "",
              "| policy | symbolic cold s | symbolic warm s | explicit s | ratio cold | ratio warm | same verdicts and "
              "lengths |", "|---|---:|---:|---:|---:|---:|---|"]
    ratios, warm_ratios = [], []
    for path in sorted(EXAMPLES.iterdir())[: 3 if quick else None]:
        policy = load_policy(path)
        domains = domains_for(policy, tokens)
        clear_caches()
        started = time.perf_counter()
        symbolic = check_bounded(policy, depth, spans, **same_domains(domains))
        sym = time.perf_counter() - started
        started = time.perf_counter()
        check_bounded(policy, depth, spans, **same_domains(domains))
        warm = time.perf_counter() - started
        started = time.perf_counter()
        explicit = explore(policy, depth, spans, domains=domains, time_limit=EXPLICIT_LIMIT)
        exp = time.perf_counter() - started
        finished = all(r.reason.clauses[0].time_limit is None for r in explicit)
        same = [(r.verdict, r.depth if r.verdict == Verdict.VIOLATED else None) for r in symbolic] == \
               [(r.verdict, r.depth if r.verdict == Verdict.VIOLATED else None) for r in explicit]
        ratio = exp / sym
        ratios.append(ratio)
        warm_ratios.append(exp / warm)
        lines.append(f"| {path.name} | {sym:.3f} | {warm:.3f} | {exp:.2f}{'' if finished else ' (limit)'} | "
                     f"{ratio:.0f}x | {exp / warm:.0f}x | "
                     f"{'yes' if same else 'no' if finished else 'n/a (explicit stopped)'} |")
        print(lines[-1], flush=True)
    lines += ["", f"Ratio cold: median {statistics.median(ratios):.0f}x, min {min(ratios):.0f}x; warm: median "
              f"{statistics.median(warm_ratios):.0f}x, min {min(warm_ratios):.0f}x. An explicit run stopped at its "
              "time limit makes its ratio a lower bound.", "",
              "Depth at which the explicit engine stops finishing in 60 s (5 spans), symbolic time at that depth:", "",
              "| policy | depth | explicit s | symbolic s |", "|---|---:|---:|---:|"]
    for text in (SAFE, UNSAFE):
        policy = parse_policy_text(text, "growth.yaml")
        for d in range(4, 13):
            started = time.perf_counter()
            domains = domains_for(policy, tokens)
            explicit = explore(policy, d, spans, domains=domains, time_limit=EXPLICIT_LIMIT)
            exp = time.perf_counter() - started
            clear_caches()
            started = time.perf_counter()
            check_bounded(policy, d, spans, **same_domains(domains))
            sym = time.perf_counter() - started
            print(f"  {policy.name} depth {d}: explicit {exp:.1f} s, symbolic {sym:.2f} s", flush=True)
            if any(r.reason.clauses[0].time_limit is not None for r in explicit):
                lines.append(f"| {policy.name} | {d} | > {EXPLICIT_LIMIT:.0f} (stopped) | {sym:.2f} |")
                break
        else:
            lines.append(f"| {policy.name} | > 12 | finished | - |")
    lines.append("")


def section_growth(lines: list, quick: bool, png: Path) -> None:
    depths = [4, 8, 12] if quick else [4, 8, 12, 16, 20, 24, 28, 32]
    widths = [4, 8] if quick else [4, 8, 12, 16]
    table = {}
    for text in (SAFE, UNSAFE):
        policy = parse_policy_text(text, "growth.yaml")
        for spans in widths:
            for depth in depths:
                if table.get((policy.name, spans, depth - 4), 0.0) > GROWTH_CAP:
                    table[(policy.name, spans, depth)] = math.nan
                    continue
                clear_caches()
                started = time.perf_counter()
                check_bounded(policy, depth, spans, timeout=600)
                table[(policy.name, spans, depth)] = time.perf_counter() - started
                print(f"  {policy.name} spans {spans} depth {depth}: {table[(policy.name, spans, depth)]:.2f} s",
                      flush=True)
    lines += ["## 3. Growth of the bounded search (all five conditions, no proof)", "",
              "| policy | spans | " + " | ".join(f"d={d}" for d in depths) + " | exponent in depth |",
              "|---|---:|" + "---:|" * len(depths) + "---:|"]
    for name in ("growth-safe", "growth-unsafe"):
        for spans in widths:
            values = [table[(name, spans, d)] for d in depths]
            measured = [(d, v) for d, v in zip(depths, values) if not math.isnan(v)]
            lines.append(f"| {name} | {spans} | " + " | ".join("skipped" if math.isnan(v) else f"{v:.2f}"
                                                             for v in values) +
                         f" | {exponent([d for d, _ in measured], [v for _, v in measured]):.2f} |")
    lines += ["", "The exponent is the slope of log(time) against log(depth) over the last half of the measured "
              f"depths (2 means quadratic). A point is skipped once the previous depth took over {GROWTH_CAP:.0f} s.",
              f"Plot: `{png.name}`.", ""]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        lines.append("(matplotlib is not installed: no plot; pip install 'prunecheck[bench]')")
        return
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for axis, name in zip(axes, ("growth-safe", "growth-unsafe")):
        for spans in widths:
            points = [(d, table[(name, spans, d)]) for d in depths if not math.isnan(table[(name, spans, d)])]
            axis.plot([d for d, _ in points], [v for _, v in points], marker="o", label=f"{spans} spans")
        axis.set_title(name)
        axis.set_xlabel("depth")
        axis.set_ylabel("seconds (bounded search)")
        axis.legend()
        axis.grid(True, alpha=0.3)
    figure.tight_layout()
    figure.savefig(png, dpi=110)


def exponent(depths, values) -> float:
    half = len(depths) // 2
    xs = [math.log(d) for d in depths[half:]]
    ys = [math.log(max(v, 1e-6)) for v in values[half:]]
    if len(xs) < 2:
        return float("nan")
    mx, my = statistics.mean(xs), statistics.mean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


# VmHWM, not ru_maxrss: Linux carries ru_maxrss over fork and exec, so a child reports at least its parent's peak.
MEMORY_PROBE = ("import sys; from prunecheck.checker.check import check; "
                "from prunecheck.checker.language.loader import load_policy; check(load_policy(sys.argv[1])); "
                "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])")


def section_memory(lines: list) -> None:
    lines += ["## 4. Peak resident memory per policy (fresh process, defaults)", "",
              "| policy | peak MB | target (< 300 MB) |", "|---|---:|---|"]
    for path in sorted(EXAMPLES.iterdir()):
        done = subprocess.run([sys.executable, "-c", MEMORY_PROBE, str(path)], capture_output=True, text=True,
                              timeout=600)
        mb = int(done.stdout.split()[-1]) / 1024
        lines.append(f"| {path.name} | {mb:.0f} | {'met' if mb < 300 else 'MISSED'} |")
        print(lines[-1], flush=True)
    lines.append("")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--generated", type=int, default=40, help="generated policies in section 1")
    parser.add_argument("--write", metavar="FILE", default=str(ROOT / "benchmarks" / "RESULTS.md"))
    parser.add_argument("--quick", action="store_true", help="small bounds, to try the script")
    parser.add_argument("--sections", default="1234")
    args = parser.parse_args(argv)
    lines = ["# Speed (generated by benchmarks/bench_speed.py)", "", f"Machine: {machine()}", ""]
    started = time.perf_counter()
    if "1" in args.sections:
        section_policies(args.runs, 4 if args.quick else args.generated, lines)
    if "2" in args.sections:
        section_explicit(lines, args.quick)
    if "3" in args.sections:
        section_growth(lines, args.quick, Path(args.write).with_name("growth.png"))
    if "4" in args.sections:
        section_memory(lines)
    lines.append(f"Total benchmark time {time.perf_counter() - started:.0f} s. Batch: see BATCH.md.")
    text = "\n".join(lines) + "\n"
    print(text)
    # The threshold family's section (written by threshold_family.py) is kept below its marker.
    target = Path(args.write)
    old = target.read_text(encoding="utf-8") if target.exists() else ""
    marker = "<!-- benchmarks/threshold_family.py writes from here to the end -->"
    kept = old[old.index(marker):] if marker in old else ""
    target.write_text(text + ("\n" + kept if kept else ""), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
