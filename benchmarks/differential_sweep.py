"""Differential sweep: generated policies through the symbolic and the explicit engine; tallies and disagreements.

Run: python benchmarks/differential_sweep.py [--policies 2000] [--large 500] [--vocabulary 500] [--seed 0]
[--write FILE] (a count of 0 leaves that family out).
Three families: policies as prunecheck.strategies.policies generates them (constants up to 100), thresholds people
write with large constants (age/idle/step/reads 13..10^6, tokens 13..10^5, recency 1/c, frequency p/q, budgets up
to 10^5), and policies mixing issue 15's vocabulary with constants of 1..4 (vocabulary_policies). Each is searched
to depth 4 over 4 spans by the explicit engine over its default domains (derived from the policy's constants) and by
the symbolic engine twice: restricted to the same domains (exact: any difference in
verdict or shortest length is a disagreement) and unrestricted (the explicit engine must find every violation as
short in actions, and nothing the symbolic engine does not). Every counterexample is replayed by its engine.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter
from fractions import Fraction
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from prunecheck.checker.engines.bmc import check_bounded
from prunecheck.checker.engines.explicit import domains_for, explore
from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.checker.language.printer import policy_yaml
from prunecheck.checker.result import Verdict
from prunecheck.spec.conditions import CONDITIONS, applicable
from prunecheck.spec.policy import (COMPARE_OPS, ORDERS, PAIRS, ROLES, SUMMARY_ROLES, WHOLE_OPS, Binary, mentioned_names,
                                    read_positions, read_triggers, reads_attribute, reads_roles, stage_exprs,
                                    subexpressions, uses_pairs)
from prunecheck.strategies import deployments, policies

DEPTH, SPANS, STATES = 4, 4, 200_000


# The new vocabulary (issue 15; spec/SPEC.md 1b, 4b, 4c, 6c) and how to tell that a policy uses each part of it.
VOCABULARY = {
    "positions": lambda p: bool(read_positions(p)),
    "when": lambda p: p.when is not None,
    "until": lambda p: p.until is not None,
    "keep": lambda p: p.keep is not None,
    "order: newest": lambda p: p.order != "oldest",
    "effect: mask": lambda p: p.effect == "mask",
    "effect: summarise": lambda p: p.effect == "summarise",
    "reads masked": lambda p: reads_attribute(p, "masked"),
    "evicted: logged": lambda p: p.deployment.evicted == "logged",
    "pairs: together": lambda p: p.pairs == "together",
    "roles (role, turn, from_end_in_role)": reads_roles,
    "start_on": lambda p: p.start_on is not None,
    "T1 applies (pairs, role or start_on)": uses_pairs,
    "tool names or tags": lambda p: bool(mentioned_names(p)),
    # issue 29 (spec/SPEC.md §1d, §1e, §4g)
    "aggregates": lambda p: bool(p.aggregates),
    "// or %": lambda p: any(isinstance(n, Binary) and n.op in WHOLE_OPS for e in stage_exprs(p)
                             for n in subexpressions(e)),
    "event or reported_tokens": lambda p: bool(read_triggers(p)),
}


def summary(results):
    return {r.condition: (r.verdict, r.depth if r.verdict == Verdict.VIOLATED else None) for r in results}


def _atom(draw) -> str:
    kind = draw(st.sampled_from(("clock", "clock", "tokens", "recency", "frequency")))
    op = draw(st.sampled_from(COMPARE_OPS))
    if kind == "clock":
        return f"{draw(st.sampled_from(('age', 'idle', 'step', 'reads')))} {op} {draw(st.integers(13, 10**6))}"
    if kind == "tokens":
        return f"{draw(st.sampled_from(('tokens', 'window_tokens')))} {op} {draw(st.integers(13, 10**5))}"
    if kind == "recency":
        return f"recency {op} {float(Fraction(1, draw(st.integers(13, 10**6)))):.7f}".rstrip("0")
    q = draw(st.integers(2, 100))
    return f"frequency {op} {float(Fraction(draw(st.integers(1, q - 1)), q)):.4f}".rstrip("0")


@st.composite
def large_policies(draw):
    """Thresholds people write, with large constants: one or two comparisons, maybe `not pinned`, a rank, a budget."""
    atoms = [_atom(draw) for _ in range(draw(st.integers(1, 2)))]
    evict = f" {draw(st.sampled_from(('and', 'or')))} ".join(atoms)
    if draw(st.booleans()):
        evict = f"not pinned and ({evict})"
    lines = ["name: large", f"evict: \"{evict}\""]
    budget = draw(st.none() | st.integers(2, 10**5))
    if budget is not None:
        lines.append(f"budget: {budget}")
        if draw(st.booleans()):
            lines.append(f"rank: \"{draw(st.sampled_from(('0 - age', 'tokens', 'idle', 'recency')))}\"")
    return parse_policy_text("\n".join(lines) + "\n", "large.yaml", draw(deployments()))


# The vocabulary of issue 15 with constants small enough to matter within the bounds: positions, roles and masked in
# the selection, the stage's keep/when/until/order, an effect, pairs, tool names and tags, and (from the deployment) the
# log and record_tool.
_POSITIONAL = ("position", "from_end", "from_end_in_role", "turn", "tokens_after", "window_spans")
_VOCABULARY_ATOMS = st.one_of(
    st.builds("{} {} {}".format, st.sampled_from(_POSITIONAL), st.sampled_from(("<", ">=")), st.integers(1, 2)),
    st.builds("role {} '{}'".format, st.sampled_from(("==", "!=")), st.sampled_from(ROLES[::-1])),
    st.sampled_from(("masked", "not masked", "kind != 'record'", "tokens >= 2", "age > 1")),
    st.builds("{} {} '{}'".format, st.sampled_from(("tool", "tag")), st.sampled_from(("==", "!=")),
              st.sampled_from(("", "edit", "browse"))),
)


def _stage_lines(draw) -> list:
    lines = [f"keep: \"{draw(_VOCABULARY_ATOMS)}\""] if draw(st.booleans()) else []
    for key, op, low in (("when", ">", 1), ("until", "<=", 1)):
        if draw(st.booleans()):
            lines.append(f"{key}: \"window_{draw(st.sampled_from(('spans', 'tokens')))} {op} "
                         f"{draw(st.integers(low, 3))}\"")
    if draw(st.booleans()):
        return lines + [f"rank: \"{draw(st.sampled_from(('0 - tokens', 'position', 'from_end_in_role')))}\"",
                        f"budget: {draw(st.integers(2, 4))}"]
    return lines + [f"order: {draw(st.sampled_from(ORDERS))}"]


@st.composite
def vocabulary_policies(draw):
    """Policies mixing the new vocabulary (small constants), under any deployment (evicted: logged included)."""
    joined = f"{draw(_VOCABULARY_ATOMS)} {draw(st.sampled_from(('or', 'and')))} {draw(_VOCABULARY_ATOMS)}"
    lines = ["name: vocabulary", f"evict: \"{joined}\""] + _stage_lines(draw)
    if draw(st.booleans()):
        effect = draw(st.sampled_from(("mask", "summarise")))
        lines += [f"effect: {effect}", f"placeholder_tokens: {draw(st.integers(1, 2))}"]
        lines += [f"summary_role: {draw(st.sampled_from(SUMMARY_ROLES))}"] if effect == "summarise" else []
    lines.append(f"pairs: {draw(st.sampled_from(PAIRS))}")
    if draw(st.integers(0, 3)) == 0:
        lines.append(f"start_on: {draw(st.sampled_from(ROLES))}")
    return parse_policy_text("\n".join(lines) + "\n", "vocabulary.yaml", draw(deployments()))


def _explicit(policy, domains):
    """The explicit search to DEPTH, or to the deepest level it completes within STATES states."""
    depth = DEPTH
    results = explore(policy, depth, SPANS, domains=domains, time_limit=math.inf, max_states=STATES)
    stopped = [r.depth for r in results if r.reason.clauses[0].state_limit is not None]
    if stopped:
        depth = stopped[0]
        results = explore(policy, depth, SPANS, domains=domains, time_limit=math.inf, max_states=STATES)
    return depth, summary(results)


def compare(policy, record: dict) -> None:
    domains = domains_for(policy)
    started = time.perf_counter()
    depth, explicit = _explicit(policy, domains)
    record["times"]["explicit"] += time.perf_counter() - started
    started = time.perf_counter()
    exact = summary(check_bounded(policy, depth, SPANS, token_domain=domains.tokens, repeat_domain=domains.repeats,
                                  clock_targets=domains.clock_targets))
    free = summary(check_bounded(policy, depth, SPANS))
    record["times"]["symbolic"] += time.perf_counter() - started
    record["shallower"] += depth < DEPTH
    record["vocabulary"].update(name for name, uses in VOCABULARY.items() if uses(policy))
    text = policy_yaml(policy)
    conditions = applicable(policy)  # T1 only for a policy that uses pairs
    for c in conditions:
        record["tallies"][c]["applies"] += 1
        record["tallies"][c][str(free[c][0])] += 1
        record["tallies"][c]["explicit " + str(explicit[c][0])] += 1
    if exact != explicit:
        record["disagreements"].append((text, exact, explicit))
    missed = [c for c in conditions if free[c][0] == Verdict.VIOLATED and explicit[c] != free[c]]
    if missed:
        record["missed"].append((text, free, explicit))
    if any(explicit[c][0] == Verdict.VIOLATED and free[c][0] != Verdict.VIOLATED for c in conditions):
        record["unsound"].append((text, free, explicit))


def sweep(strategy, count: int, seed_: int, name: str) -> dict:
    record = {"name": name, "seen": 0, "shallower": 0, "disagreements": [], "missed": [], "unsound": [],
              "errors": [], "times": {"symbolic": 0.0, "explicit": 0.0}, "tallies": {c: Counter() for c in CONDITIONS}, "vocabulary": Counter()}

    @seed(seed_)
    @settings(max_examples=count, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(policy):
        try:
            compare(policy, record)
        except Exception as exc:  # noqa: BLE001 - a crash is a finding: record it and go on
            record["errors"].append((policy_yaml(policy), f"{type(exc).__name__}: {exc}"))
            return
        record["seen"] += 1
        if record["seen"] % 50 == 0:
            print(f"{name}: {record['seen']} policies, {len(record['disagreements'])} disagreements, "
                  f"{len(record['missed'])} missed", flush=True)

    run()
    return record


def lines_for(record: dict) -> list:
    t = record["tallies"]
    lines = [f"## {record['name']}", "", f"policies: {record['seen']}",
             f"exact disagreements (same domains; verdict or shortest length): {len(record['disagreements'])}",
             f"explicit violations the unrestricted symbolic search does not find: {len(record['unsound'])}",
             f"symbolic violations the explicit engine misses at its default domains (or finds only later): "
             f"{len(record['missed'])}",
             f"searched less deep than {DEPTH} (explicit state limit {STATES}): {record['shallower']}",
             f"engine errors: {len(record['errors'])}",
             f"engine time: symbolic {record['times']['symbolic']:.0f} s (both runs), "
             f"explicit {record['times']['explicit']:.0f} s", "",
             "policies using each part of the new vocabulary: "
             + ", ".join(f"{name} {record['vocabulary'][name]}" for name in VOCABULARY), "",
             "Each row counts the policies the condition applies to (T1 only to those that set `pairs` or read "
             "`role`); the others are not reported for it.", "",
             "| condition | applies to | symbolic violated | symbolic unknown | explicit violated | explicit unknown |",
             "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {c} | {t[c]['applies']} | {t[c]['violated']} | {t[c]['unknown']} | {t[c]['explicit violated']} | "
              f"{t[c]['explicit unknown']} |" for c in CONDITIONS]
    for title, key in (("Error", "errors"), ("Disagreement", "disagreements"), ("Unsound", "unsound"),
                       ("Missed", "missed")):
        for item in record[key][:5]:
            lines += ["", f"{title}:", "```yaml", item[0].rstrip(), "```"]
            lines += [item[1]] if key == "errors" else [f"symbolic {_short(item[1])}", f"explicit {_short(item[2])}"]
    return lines + [""]


def _short(results: dict) -> str:
    return ", ".join(f"{c} {v.name.lower()}" + (f" {d}" if d is not None else "") for c, (v, d) in results.items())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", type=int, default=2000, help="generated policies (constants up to 100)")
    parser.add_argument("--large", type=int, default=500, help="policies with large constants")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", metavar="FILE")
    parser.add_argument("--vocabulary", type=int, default=500,
                        help="policies mixing the new vocabulary with small constants")
    args = parser.parse_args(argv)
    families = ((large_policies(), args.large, "Large constants"),
                (policies(max_depth=3), args.policies, "Generated policies"),
                (vocabulary_policies(), args.vocabulary, "Vocabulary policies"))
    records = [sweep(strategy, count, args.seed, name) for strategy, count, name in families if count > 0]
    lines = [f"bounds: depth {DEPTH}, {SPANS} spans; explicit domains derived from each policy's constants", ""]
    for record in records:
        lines += lines_for(record)
    print("\n".join(lines))
    if args.write:
        header = ["# Differential sweep", "", f"Generated by `python benchmarks/differential_sweep.py --policies "
                  f"{args.policies} --large {args.large} --vocabulary {args.vocabulary} --seed {args.seed} --write "
                  f"{args.write}` on "
                  f"{time.strftime('%Y-%m-%d')}, with host budgets (issue 11), accelerated steps (issue 12) and the "
                  "vocabulary of issue 15 (positions, the compaction stage with start_on, effects and the log, "
                  "summaries, tool names and tags, tool-call pairs and T1), which the generated family draws, and the vocabulary family with small constants. "
                  "Both engines are bounded here, so `holds` never appears: the tallies count bounded verdicts of "
                  "the unrestricted symbolic search and of the explicit engine at its default domains. Engine times "
                  "are wall-clock seconds on whatever machine ran it (load included).", ""]
        Path(args.write).write_text("\n".join(header + lines) + "\n")
    bad = any(r["disagreements"] or r["unsound"] or r["errors"] for r in records)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
