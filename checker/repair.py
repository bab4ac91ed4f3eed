"""`prunecheck repair`: the fewest changes to a violated policy that the full checker proves safe, as a diff."""

from __future__ import annotations

import itertools
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from prunecheck.spec.conditions import CONDITIONS, violations
from prunecheck.spec.errors import PolicySyntaxError, PrunecheckError
from prunecheck.spec.policy import DEPLOYMENT_CHOICES, Policy
from prunecheck.spec.runtime import ActionRefused, Compact, State, step

from .bmc import DEFAULT_DEPTH, DEFAULT_SPANS, DEFAULT_TIMEOUT
from .check import check
from .loader import decode_policy_bytes, expected_verdicts, load_policy, parse_policy_text
from .render import action_call
from .repair_text import EXCLUSIONS, SAFE_DEPLOYMENT, Change, form_of, repaired_policy, repaired_text, unified_diff
from .result import Report, Verdict
from .typecheck import check_policy

MAX_ALTERNATIVES = 1  # further full checks spent on other candidates of the winning cost, to name them


@dataclass(frozen=True)
class RepairResult:
    """A proved repair (changes, repaired policy and text, diff, the proving Report), or None and the reason."""

    original: Report
    changes: Optional[tuple]
    policy: Optional[Policy] = None
    text: Optional[str] = None
    diff: Optional[str] = None
    report: Optional[Report] = None
    reason: str = ""
    form: str = "yaml"
    reprinted: bool = False  # the minimal edit did not re-parse to the repair: the whole policy was re-printed
    alternatives: tuple = ()  # other change tuples of the same cost, also proved
    candidates: int = 0  # change sets considered
    replayed_out: int = 0  # refuted by replaying a known counterexample on the runtime
    checked: int = 0  # given to the full checker
    seconds: float = field(default=0.0, compare=False)

    @property
    def already_holds(self) -> bool:
        return self.original.verdict == Verdict.HOLDS and all(r.verdict == Verdict.HOLDS
                                                              for r in self.original.results)

    @property
    def repaired(self) -> bool:
        return self.report is not None and bool(self.changes)


def available_changes(policy: Policy, allow_deployment: bool = True) -> tuple:
    """Every unit change that applies to policy, in preference order (text, deployment, budget)."""
    changes = [Change("exclude", kinds=kinds) for kinds in EXCLUSIONS]
    if allow_deployment:
        safe = SAFE_DEPLOYMENT.as_dict()
        changes += [Change("deployment", key=key, value=safe[key])
                    for key in DEPLOYMENT_CHOICES if getattr(policy.deployment, key) != safe[key]]
    if policy.budget is not None:
        changes.append(Change("drop_budget"))
    return tuple(changes)


def candidate_sets(changes: tuple):
    """Change tuples by increasing cost, then preference; at most one evict exclusion (one conjunct covers both)."""
    for cost in range(1, len(changes) + 1):
        for combo in itertools.combinations(changes, cost):
            if sum(c.kind == "exclude" for c in combo) <= 1:
                yield combo


def run_violations(policy: Policy, actions, spans: Optional[int]) -> frozenset:
    """Every condition the actions violate at some step when run on the reference runtime under policy, up to the
    first action the runtime does not enable there."""
    state, bad = State(), set()
    for action in actions:
        try:
            transition = step(policy, state, action, spans)
        except ActionRefused:
            break
        bad |= violations(policy, transition)
        state = transition.after
    return frozenset(bad)


def _traces(report: Report) -> list:
    return [r.trace for r in report.results if r.verdict == Verdict.VIOLATED and r.trace is not None]


def _dominated(changes: tuple, winner: tuple) -> bool:
    """changes only widens winner's evict exclusion (e.g. records and rationale where records sufficed)."""
    def split(cs):
        kinds = next((set(c.kinds) for c in cs if c.kind == "exclude"), set())
        return kinds, {c for c in cs if c.kind != "exclude"}
    (kinds, rest), (won, won_rest) = split(changes), split(winner)
    return rest == won_rest and bool(won) and kinds >= won


def _proved(report: Report) -> bool:
    return all(r.verdict == Verdict.HOLDS for r in report.results) and len(report.results) == len(CONDITIONS)


def _first_open(report: Report) -> str:
    return next(r.condition for r in report.results if r.verdict != Verdict.HOLDS)


def repair(policy: Policy, text: str, source: str, allow_deployment: bool = True, timeout: float = DEFAULT_TIMEOUT,
           depth: int = DEFAULT_DEPTH, spans: int = DEFAULT_SPANS, alternatives: int = MAX_ALTERNATIVES,
           original: Optional[Report] = None, rlimit: int = 0) -> RepairResult:
    """Search change sets by increasing cost for one under which every condition is proved (HOLDS with a
    certificate); candidates a known counterexample still breaks on the runtime are dropped without a solver.
    After the first proved set, up to `alternatives` more full checks look for others of the same cost. Each check
    has `timeout` seconds and `rlimit` (z3 resources per query, 0: none) per condition."""
    started = time.perf_counter()
    form = form_of(source)
    if parse_policy_text(text, source) != policy:
        raise PolicySyntaxError("the policy differs from its text (a deployment override?): repair edits the text",
                                source, 1, 1)
    original = original or check(policy, depth=depth, spans=spans, timeout=timeout, prove=True, rlimit=rlimit)
    if _proved(original):
        return RepairResult(original, (), policy, text, "", original, "every condition already holds", form,
                            seconds=time.perf_counter() - started)
    pool = _traces(original)
    refuted = Counter()  # condition -> candidates it refuted
    found, also, best_cost = None, [], None
    considered = replayed_out = checked = extra = 0
    for changes in candidate_sets(available_changes(policy, allow_deployment)):
        if best_cost is not None and (len(changes) > best_cost or extra >= alternatives):
            break
        if found is not None and _dominated(changes, found[0]):
            continue
        considered += 1
        candidate = repaired_policy(policy, changes, form)
        if not _valid(candidate):
            continue
        broken = next((bad for bad in (run_violations(candidate, t.actions, t.spans) for t in pool) if bad), None)
        if broken:
            replayed_out += 1
            refuted[min(broken, key=CONDITIONS.index)] += 1
            continue
        checked += 1
        if best_cost is not None:
            extra += 1
        report = check(candidate, depth=depth, spans=spans, timeout=timeout, prove=True, rlimit=rlimit)
        pool += _traces(report)
        if not _proved(report):
            refuted[_first_open(report)] += 1
            continue
        if found is None:
            found, best_cost = (changes, candidate, report), len(changes)
        else:
            also.append(changes)
    stats = dict(form=form, candidates=considered, replayed_out=replayed_out, checked=checked)
    if found is None:
        reason = _no_repair_reason(policy, original, form, allow_deployment, refuted)
        return RepairResult(original, None, reason=reason, seconds=time.perf_counter() - started, **stats)
    changes, candidate, report = found
    new_text, parsed, reprinted = repaired_text(text, source, policy, changes)
    if parsed != candidate:
        raise PrunecheckError("internal: the repaired text does not hold the proved policy")
    return RepairResult(original, changes, candidate, new_text, unified_diff(text, new_text, source), report,
                        reprinted=reprinted, alternatives=tuple(also),
                        seconds=time.perf_counter() - started, **stats)


def _no_repair_reason(policy: Policy, original: Report, form: str, allow_deployment: bool, refuted: Counter) -> str:
    """Why the search found nothing; for --text-only, a condition no policy text can reach, checked by replay."""
    tried = "every combination of the allowed changes" + ("" if allow_deployment else " to the policy text")
    fails = ", ".join(f"{c} still fails under {n} candidate{'s' * (n != 1)}" for c, n in sorted(refuted.items()))
    lines = [f"no repair within {tried}" + (f": {fails}" if fails else "")]
    if allow_deployment:
        return lines[0]
    texts = [p for p in (repaired_policy(policy, changes, form)
                         for changes in candidate_sets(available_changes(policy, allow_deployment=False))) if _valid(p)]
    for r in original.results:
        if r.verdict != Verdict.VIOLATED or r.trace is None or r.condition == "C1":
            continue
        if r.condition == "C2" and policy.deployment.records == "window":
            lines.append("no text repair can exist for C2: with records in the window every policy violates it at "
                         "some host budget (proofs/host_budget.py: append(message, 2); edit(0, destroy); "
                         "compact(budget=1) truncates or evicts the record whatever evict, rank and budget say). "
                         "The deployment decides it (records: window): run without --text-only.")
            continue
        if any(isinstance(a, Compact) for a in r.trace.actions):
            continue
        if all(r.condition in run_violations(p, r.trace.actions, r.trace.spans) for p in texts):
            unsafe = ", ".join(f"{k}: {v}" for k, v in policy.deployment.as_dict().items()
                               if v != SAFE_DEPLOYMENT.as_dict()[k])
            lines.append(
                f"no text repair can exist for {r.condition}: its counterexample "
                f"({', '.join(action_call(a) for a in r.trace.actions)}) has no compact step, and evict, rank and "
                f"budget are consulted only by compact (and {r.condition} is not C1, which reads evict directly); "
                f"replayed on the runtime, the same run violates {r.condition} under all {len(texts)} text "
                f"candidates too. The deployment decides it ({unsafe or 'defaults'}): run without --text-only.")
    return "\n".join(lines)


def _valid(policy: Policy) -> bool:
    try:
        check_policy(policy, policy.source)
    except PolicySyntaxError:  # e.g. dropping a budget that evict reads
        return False
    return True


# --------------------------------------------------------------------------- output


def _certificate_note(reason: str) -> str:
    return reason.rsplit("; ", 1)[-1] if "; " in reason else reason


def _condition_lines(report: Report) -> list:
    return [f"  {r.condition}  {r.verdict}  {r.engine}; {_certificate_note(r.reason)}" for r in report.results]


def result_text(result: RepairResult, stale_expect: tuple = ()) -> str:
    original = result.original
    bad = [r.condition for r in original.results if r.verdict != Verdict.HOLDS]
    head = f"policy {original.policy_name} ({original.source}): {original.verdict}"
    lines = [head + (f" ({', '.join(bad)})" if bad else "")]
    if result.already_holds:
        lines.append("every condition already holds; nothing to repair")
        lines += _condition_lines(original)
        return "\n".join(lines)
    searched = (f"searched {result.candidates} candidate{'s' * (result.candidates != 1)}: "
                f"{result.replayed_out} refuted by replaying a known counterexample, {result.checked} checked in full; "
                f"{result.seconds:.1f} s")
    if not result.repaired:
        lines += [result.reason, searched]
        return "\n".join(lines)
    n = len(result.changes)
    lines.append(f"repair ({n} change{'s' * (n != 1)}), proved:")
    lines += [f"  - {c.describe(result.form)}" for c in result.changes]
    lines += _condition_lines(result.report)
    for alt in result.alternatives:
        lines.append("also proved at the same cost: " + "; ".join(c.describe(result.form) for c in alt))
    if result.reprinted:
        lines.append("note: the minimal edit did not re-parse to the repaired policy; the whole policy is re-printed "
                     "(comments and the expect table are not kept)")
    if stale_expect:
        lines.append(f"note: the file's expect table still says violated for {', '.join(stale_expect)}")
    lines.append(searched)
    lines.append(result.diff.rstrip("\n"))
    return "\n".join(lines)


def result_json(result: RepairResult) -> dict:
    original = result.original
    doc = {
        "policy": original.policy_name,
        "source": original.source,
        "original": {"verdict": str(original.verdict), "conditions": {r.condition: str(r.verdict)
                                                                      for r in original.results}},
        "status": "holds" if result.already_holds else "repaired" if result.repaired else "none",
        "changes": [c.as_dict(result.form) for c in result.changes or ()],
        "alternatives": [[c.as_dict(result.form) for c in alt] for alt in result.alternatives],
        "reason": result.reason or None,
        "search": {"candidates": result.candidates, "replayed_out": result.replayed_out, "checked": result.checked,
                   "seconds": round(result.seconds, 3)},
    }
    if result.repaired:
        doc["conditions"] = {r.condition: {"verdict": str(r.verdict), "engine": r.engine, "reason": r.reason}
                             for r in result.report.results}
        doc.update(reprinted=result.reprinted, diff=result.diff, text=result.text)
    return doc


# --------------------------------------------------------------------------- command line


def add_parser(subparsers) -> None:
    from .cli import _bounded_int, add_rlimit_argument

    parser = subparsers.add_parser("repair", help="propose the smallest proved-safe change to a violated policy")
    parser.add_argument("policy", metavar="POLICY", help=".yaml, .yml, .json or .py policy file")
    parser.add_argument("--text-only", action="store_true", help="change only the policy text, not its deployment")
    parser.add_argument("--out", metavar="FILE", help="write the repaired policy text to FILE")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text (default: the change, its proof and the unified diff) or json (one document)")
    parser.add_argument("--alternatives", type=_bounded_int(0, 64), default=MAX_ALTERNATIVES, metavar="N",
                        help=f"full checks spent naming other repairs of the same cost (default {MAX_ALTERNATIVES})")
    parser.add_argument("--timeout", type=_bounded_int(1, 3600), default=30, help="seconds per condition (default 30)")
    add_rlimit_argument(parser)
    parser.add_argument("--depth", type=_bounded_int(1, 200), default=DEFAULT_DEPTH,
                        help=f"bounded search depth (default {DEFAULT_DEPTH})")
    parser.add_argument("--spans", type=_bounded_int(2, 32), default=DEFAULT_SPANS,
                        help=f"span slots (default {DEFAULT_SPANS})")


def _read_text(path: str) -> str:
    with open(path, "rb") as handle:  # load_policy has already refused non-regular and oversized files
        data = handle.read()
    return decode_policy_bytes(data, path)


def run(args, stdout, stderr) -> int:
    policy = load_policy(args.policy)
    text = _read_text(args.policy)
    result = repair(policy, text, args.policy, allow_deployment=not args.text_only, timeout=float(args.timeout),
                    depth=args.depth, spans=args.spans, alternatives=args.alternatives, rlimit=args.rlimit)
    stale = ()
    if result.repaired:
        expect = expected_verdicts(args.policy)
        stale = tuple(c for c in CONDITIONS if expect.get(c) == "violated")
        if args.out:
            try:
                Path(args.out).write_text(("\ufeff" if _has_bom(args.policy) else "") + result.text, encoding="utf-8")
            except OSError as exc:
                raise PrunecheckError(f"cannot write {args.out}: {exc.strerror or exc}") from None
            print(f"wrote {args.out}", file=stderr)
    if args.format == "json":
        print(json.dumps(result_json(result), indent=2), file=stdout)
    else:
        print(result_text(result, stale if not result.reprinted else ()), file=stdout)
    return 0 if result.already_holds or result.repaired else 1


def _has_bom(path: str) -> bool:
    with open(path, "rb") as handle:
        return handle.read(3) == b"\xef\xbb\xbf"


__all__ = ["RepairResult", "Change", "repair", "available_changes", "candidate_sets", "run_violations",
           "result_text", "result_json", "add_parser", "run"]
