"""The report cache: JSON reports on disk, keyed by policy hash and options, each re-verified before it is believed."""

from __future__ import annotations

import enum
import hashlib
import json
import os
import stat
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

from prunecheck.spec.conditions import CONDITIONS, applicable
from prunecheck.spec.errors import Interrupted, PrunecheckError
from prunecheck.spec.policy import (BASES, DEPLOYMENT_KEYS, NAME_ATTRS, UNLISTED_AT_DEFAULT, Claim, DeploymentBasis,
                                    name_problem)
from prunecheck.spec.actions import ACTION_TYPES, OPTIONAL_ARGS

from prunecheck.checker.engines.certificate import Status, dumps
from prunecheck.checker.outputs.itf import MAX_TIMES_DIGITS
from prunecheck.checker.outputs.reason_doc import ReasonFormatError, reason_from_json, reasons_json
from prunecheck.checker.outputs.reasons import renders_as
from prunecheck.checker.outputs.render import report_json
from prunecheck.symbolic.interrupts import stop_if_interrupted
from prunecheck.checker.result import (VERSION_KEYS, Bounds, EngineRun, Method, Outcome, Report, Result, Search, Stats,
                                       Trace, Variants, Verdict, counted)

# 2: reports name their deployment and the keys an override set; 3: a certificate is an object; 4: entries hold each
# result's structured reason beside the report
FORMAT = 4
MAX_ENTRY_BYTES = 16 * 1024 * 1024


class ReportFormatError(PrunecheckError):
    """A JSON document is not a report as render.report_json writes it."""


def default_cache_dir() -> Path:
    """$XDG_CACHE_HOME/prunecheck, or ~/.cache/prunecheck."""
    base = os.environ.get("XDG_CACHE_HOME")
    return Path(base if base and os.path.isabs(base) else Path.home() / ".cache") / "prunecheck"


def _expect(ok: bool, what: str) -> None:
    if not ok:
        raise ReportFormatError(f"not a prunecheck report: {what}")


def _integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _action(entry, where: str):
    _expect(isinstance(entry, dict) and entry.get("action") in ACTION_TYPES and isinstance(entry.get("args"), dict),
            f"{where}: bad action")
    cls = ACTION_TYPES[entry["action"]]
    args = entry["args"]
    fields = set(cls.__dataclass_fields__)  # a host budget, a repetition count and a role are optional
    _expect(fields - set(OPTIONAL_ARGS) <= set(args) <= fields, f"{where}: wrong arguments for {entry['action']}")
    cites = args.get("cites", [])
    _expect(isinstance(cites, list) and all(_integer(c) and 0 <= c for c in cites) and len(set(cites)) == len(cites),
            f"{where}: cites must be a list of distinct span ids")
    args = {**args, **({"cites": tuple(sorted(cites))} if "cites" in args else {})}
    _expect(all(_integer(v) or isinstance(v, str) for k, v in args.items() if k != "cites"),
            f"{where}: bad argument value")
    # The runtime applies any count in one step, so a forged huge count costs nothing; it is bounded to stay printable.
    _expect("times" not in args or (_integer(args["times"]) and 1 <= args["times"] < 10 ** MAX_TIMES_DIGITS),
            f"{where}: times must be an integer from 1 to 10^{MAX_TIMES_DIGITS} - 1")
    _expect(all(not name_problem(args[attr]) for attr in NAME_ATTRS if attr in args), f"{where}: bad tool name or tag")
    return cls(**args)


def _reason(condition: str, doc, text: str):
    """The structured reason stored for condition, which must render as the report's text says."""
    try:
        reason = reason_from_json(doc)
    except ReasonFormatError as exc:
        raise ReportFormatError(f"not a prunecheck report: {condition}: {exc}") from None
    _expect(renders_as(reason, text), f"{condition}: its reason does not render as the report's text")
    return reason


def _result(condition: str, entry, spans: int, reason) -> Result:
    _expect(isinstance(entry, dict), f"{condition} is not an object")
    verdict = entry.get("verdict")
    _expect(verdict in ("holds", "unknown", "violated"), f"{condition}: bad verdict {verdict!r}")
    depth = entry.get("depth")
    _expect(depth is None or _integer(depth), f"{condition}: bad depth")
    _expect(isinstance(entry.get("reason"), str) and isinstance(entry.get("engine"), str),
            f"{condition}: reason and engine must be strings")
    _expect(entry["engine"] in {m.value for m in Method}, f"{condition}: unknown engine")
    seconds = entry.get("seconds", 0.0)
    _expect(isinstance(seconds, (int, float)) and not isinstance(seconds, bool), f"{condition}: bad seconds")
    extra = {}
    if "trace" in entry:
        extra["trace"] = _trace(condition, entry["trace"], spans, "trace")
    if "other_traces" in entry:  # further counterexamples (check's `counterexamples` > 1)
        _expect(isinstance(entry["other_traces"], list), f"{condition}: other_traces is not a list")
        extra["others"] = tuple(_trace(condition, t, spans, f"other trace {i}")
                                for i, t in enumerate(entry["other_traces"], 2))
    if "counterexamples" in entry:
        extra["variants"] = _variants(condition, entry["counterexamples"], 1 + len(extra.get("others", ())))
    certificate = entry.get("certificate")
    _expect(certificate is None or isinstance(certificate, dict), f"{condition}: certificate is not an object")
    if certificate is not None:
        certificate = dumps(certificate)  # the text prove wrote: the cache re-confirms exactly this text
    reason = _reason(condition, reason, entry["reason"])
    return Result(condition, Verdict[verdict.upper()], depth, reason, engine=Method(entry["engine"]),
                  certificate=certificate, seconds=float(seconds), **extra)


def _variants(condition: str, entry, found: int) -> Variants:
    """The --max-counterexamples search's outcome; what it claims is not re-checked (README: the cache)."""
    _expect(isinstance(entry, dict) and entry.get("search") in {s.value for s in Search}, f"{condition}: bad search")
    _expect(all(_integer(entry.get(k)) and entry[k] >= 0 for k in ("asked", "depth", "reducible", "found"))
            and entry["found"] == found, f"{condition}: bad counterexample counts")
    _expect(isinstance(entry.get("reason"), str) and isinstance(entry.get("contained"), bool),
            f"{condition}: bad counterexample search")
    return Variants(entry["asked"], Search(entry["search"]), entry["depth"], entry["reducible"], entry["reason"],
                    entry["contained"])


def _trace(condition: str, steps, spans: int, what: str) -> Trace:
    _expect(isinstance(steps, list), f"{condition}: {what} is not a list")
    # report_json leaves out a trace's span count: every engine records the report's bound there.
    return Trace(condition, tuple(_action(a, f"{condition} {what} step {i}") for i, a in enumerate(steps, 1)), spans)


def report_from_json(doc, reasons) -> Report:
    """The Report that render.report_json turned into doc, with the structured reasons reason_doc.reasons_json
    turned into `reasons` (seconds rounded to 0.1 ms; they do not take part in ==)."""
    _expect(isinstance(doc, dict), "not an object")
    for key in ("policy", "source", "policy_hash"):
        _expect(isinstance(doc.get(key), str), f"{key} is not a string")
    _expect(_integer(doc.get("depth")) and _integer(doc.get("spans")), "depth and spans must be integers")
    conditions, versions = doc.get("conditions"), doc.get("versions")
    _expect(isinstance(conditions, dict) and all(c in CONDITIONS for c in conditions), "bad conditions")
    _expect(isinstance(versions, dict) and set(versions) == set(VERSION_KEYS)
            and all(isinstance(v, str) for v in versions.values()), "bad versions")
    deployment, overridden = doc.get("deployment"), doc.get("deployment_overridden")
    _expect(isinstance(deployment, dict) and set(deployment) <= set(DEPLOYMENT_KEYS)
            and set(DEPLOYMENT_KEYS) - set(deployment) <= set(UNLISTED_AT_DEFAULT)
            and all(isinstance(v, str) for v in deployment.values()), "bad deployment")
    _expect(isinstance(overridden, list) and all(k in DEPLOYMENT_KEYS for k in overridden),
            "bad deployment_overridden")
    deployment = {key: deployment[key] for key in DEPLOYMENT_KEYS if key in deployment}  # stored sorted
    _expect(isinstance(reasons, dict) and set(reasons) == set(conditions), "reasons do not match its conditions")
    # A JSON object's key order means nothing (a writer may sort keys): the results take the conditions' order.
    results = tuple(_result(c, conditions[c], doc["spans"], reasons[c]) for c in CONDITIONS if c in conditions)
    stats = doc.get("stats", {"conditions": {}})
    _expect(isinstance(stats, dict) and isinstance(stats.get("conditions"), dict), "bad stats")
    results = tuple(replace(r, stats=_stats(r.condition, stats["conditions"].get(r.condition, []))) for r in results)
    report = Report(doc["policy"], doc["policy_hash"], doc["source"], doc["depth"], doc["spans"], results,
                    tuple((key, versions[key]) for key in VERSION_KEYS), tuple(deployment.items()), tuple(overridden),
                    _bounds(stats.get("bounds")), basis=_basis(doc.get("deployment_basis")))
    _expect(doc.get("verdict") == str(report.verdict), "verdict does not match its conditions")
    return report


def _basis(doc) -> DeploymentBasis:
    """The DeploymentBasis render.basis_json wrote."""
    _expect(isinstance(doc, dict) and set(doc) == {"basis", "source", "claims"} and doc["basis"] in BASES
            and isinstance(doc["source"], str) and isinstance(doc["claims"], list), "bad deployment_basis")
    claims = []
    for claim in doc["claims"]:
        _expect(isinstance(claim, dict) and set(claim) == {"key", "claimed", "used", "where"}
                and claim["key"] in DEPLOYMENT_KEYS and all(isinstance(v, str) for v in claim.values()), "bad claim")
        claims.append(Claim(claim["key"], claim["claimed"], claim["used"], claim["where"]))
    return DeploymentBasis(doc["basis"], doc["source"], tuple(claims))


def _stats(condition: str, runs) -> Stats:
    """Engine statistics as report_json wrote them (they claim nothing about the verdict; only their shape is
    checked)."""
    _expect(isinstance(runs, list) and all(isinstance(run, dict) for run in runs), f"{condition}: bad stats")
    out = []
    for run in runs:
        outcome, seconds = run.get("outcome"), run.get("seconds")
        _expect(run.get("engine") in {m.value for m in Method} and outcome in {o.value for o in Outcome}
                and all(run.get(k) is None or _integer(run[k]) for k in ("depth", "states"))
                and _integer(run.get("queries")) and isinstance(seconds, (int, float))
                and not isinstance(seconds, bool), f"{condition}: bad stats")
        out.append(EngineRun(Method(run["engine"]), Outcome(outcome), run["depth"], run["queries"], run["states"],
                             float(seconds)))
    return Stats(tuple(out))


def _bounds(doc):
    """The Bounds in a report's stats, or None when they name only depth and spans."""
    _expect(doc is None or isinstance(doc, dict), "bad stats bounds")
    if doc is None or "timeout" not in doc:
        return None
    _expect(isinstance(doc["timeout"], (int, float)) and _integer(doc.get("rlimit"))
            and _integer(doc.get("memory_mb")), "bad stats bounds")
    domains = [doc.get(k) for k in ("tokens", "repeats")]
    _expect(all(d is None or (isinstance(d, list) and all(_integer(v) for v in d)) for d in domains),
            "bad stats bounds")
    tokens, repeats = (None if d is None else tuple(d) for d in domains)
    return Bounds(float(doc["timeout"]), doc["rlimit"], doc["memory_mb"], tokens, repeats)


def cache_key(settings: dict) -> str:
    """sha256 of the canonical JSON of settings (policy hash, options, versions)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _digest(doc) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def cacheable(report: Report, unknown: bool = False) -> bool:
    """No `unknown` unless asked for (it depends on the time limits, which are in the key, and on the machine, which
    is not), and the JSON form reads back as an equal Report; never a report with a recovery peak (it would not
    read back)."""
    if report.recovery_peak is not None:
        return False
    if not unknown and any(r.verdict == Verdict.UNKNOWN for r in report.results):
        return False
    try:
        back = json.loads(json.dumps({"report": report_json(report), "reasons": reasons_json(report)}))
        return report_from_json(back["report"], back["reasons"]) == report
    except ReportFormatError:
        return False


class CacheStatus(enum.Enum):
    """What a read of the cache found."""

    HIT = "hit"            # an entry that passed every check against the policy being checked
    MISS = "miss"          # no entry, or one these options do not read (an `unknown` without --cache-unknown)
    REJECTED = "rejected"  # an entry that is corrupt, tampered with or unverifiable: never believed


@dataclass(frozen=True)
class CacheRead:
    """The outcome of one read: the verified report on a hit, why the entry was rejected otherwise."""

    status: CacheStatus
    report: Optional[Report] = None
    reason: str = ""


MISS = CacheRead(CacheStatus.MISS)


def _rejected(reason: str) -> CacheRead:
    return CacheRead(CacheStatus.REJECTED, None, " ".join(reason.split())[:300])


def _trace_problem(policy, trace: Trace, condition: str, depth: int, spans: int) -> Optional[str]:
    """Why the trace is not a counterexample to condition within the bounds, or None."""
    from prunecheck.spec.errors import ReplayMismatch

    from prunecheck.checker.engines.replay import confirm

    if len(trace.actions) > depth:
        return f"{condition}: a trace of {counted(len(trace.actions), 'action')} is longer than the depth bound {depth}"
    try:
        confirm(policy, trace.actions, condition, spans)
    except ReplayMismatch as exc:
        return f"{condition}: the trace does not replay as a counterexample: {exc}"
    return None


def _certificate_problem(text: str, policy, condition: str, settings: dict) -> Optional[str]:
    """Why the certificate is not confirmed for exactly this policy and condition, or None, re-checked within the
    time and rlimit the report is asked with (confirm_certificate memoises by content, and shares regenerated models
    and cvc5's answers between policies of one shape)."""
    from prunecheck.checker.engines.certificate import confirm_certificate

    recheck = confirm_certificate(text, policy, condition, int(settings["timeout"] * 1000), settings["rlimit"])
    if recheck.status is not Status.CONFIRMED:
        return f"its certificate is {recheck.status}: {recheck.reason}"
    return None


def _result_problem(policy, result: Result, settings: dict) -> Optional[str]:
    """Why the result's evidence does not support its verdict for this policy and these settings, or None."""
    traces = ([result.trace] if result.trace is not None else []) + list(result.others)
    for trace in traces:
        problem = _trace_problem(policy, trace, result.condition, settings["depth"], settings["spans"])
        if problem:
            return problem
    variants = result.variants
    if variants is not None and (variants.asked != settings["counterexamples"] or len(traces) > variants.asked
                                 or variants.depth > settings["depth"]):
        return f"{result.condition}: its counterexample search is not the one asked for"
    if result.verdict == Verdict.VIOLATED:
        if result.trace is None:
            return f"{result.condition}: violated without a counterexample"
        if result.depth != len(result.trace.actions):
            return f"{result.condition}: the depth {result.depth} is not the length of its counterexample"
    if result.verdict == Verdict.HOLDS:
        if traces or result.certificate is None:
            return f"{result.condition}: holds without a certificate, or with a counterexample"
        if settings["engine"] != "symbolic" or not settings["prove"]:
            return f"{result.condition}: holds, which these options never report"
        problem = _certificate_problem(result.certificate, policy, result.condition, settings)
        if problem:
            return f"{result.condition}: holds, but {problem}"
    return None


def verify_report(report: Report, policy, settings: dict) -> Optional[str]:
    """Why `report` is not a report of `policy` under `settings` whose every verdict its evidence supports, or None:
    each `holds` needs a certificate that cvc5 confirms for exactly this policy and condition, each trace must
    replay on the runtime and violate its condition exactly at its last step, within the bounds. `unknown` claims
    nothing. Reasons and engine names are prose, and statistics claim nothing: neither is checked."""
    from prunecheck.checker.language.document import policy_hash

    if report.policy_hash != settings["policy_hash"] or report.policy_hash != policy_hash(policy):
        return "the report is for another policy (policy hash)"
    if report.policy_name != policy.name:
        return "the report names another policy"
    if report.deployment != tuple(policy.deployment.as_dict(policy.overridden).items()) or report.overridden != policy.overridden:
        return "the report names another deployment, or other overridden keys"
    if report.basis != policy.basis:
        return "the report rests on another deployment basis (operator, default, trusted) or names other claims"
    if (report.depth, report.spans) != (settings["depth"], settings["spans"]):
        return f"the report's bounds (depth {report.depth}, {report.spans} spans) are not the ones asked for"
    if [r.condition for r in report.results] != list(applicable(policy, settings["only"])):
        return "the report's conditions are not the ones asked for"
    if dict(report.versions) != settings["versions"]:
        return "the report was made by other tool versions"
    for result in report.results:
        problem = _result_problem(policy, result, settings)
        if problem:
            return problem
    return None


def _read_regular_file(path: Path) -> Optional[bytes]:
    """The file's bytes; None if it is not a regular file (a FIFO would block) or is larger than MAX_ENTRY_BYTES."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY_BYTES:
            return None
        data = handle.read(MAX_ENTRY_BYTES + 1)
    return data if len(data) <= MAX_ENTRY_BYTES else None


class ReportCache:
    """A directory of `v<FORMAT>/<key[:2]>/<key>.json` entries, each {"format", "settings", "report", "reasons" (each
    result's structured reason, which must render as the report's text), "sha256" of the report}; written atomically.
    Whoever can write the directory can write any entry (the checksum only catches accidents), so an entry is believed
    only after verify_report against the policy being checked."""

    def __init__(self, directory):
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / f"v{FORMAT}" / key[:2] / f"{key}.json"

    def read(self, settings: dict, policy, unknown: bool = False) -> CacheRead:
        """A hit only for an entry that verify_report accepts for `policy`; no entry, or an entry with an `unknown`
        result unless `unknown`, is a miss; anything else is rejected, with the reason."""
        try:
            data = _read_regular_file(self._path(cache_key(settings)))
            entry = json.loads(data.decode("utf-8")) if data is not None else None
        except FileNotFoundError:
            return MISS
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            return _rejected(f"unreadable entry ({type(exc).__name__})")
        if data is None:
            return _rejected(f"the entry is not a regular file of at most {MAX_ENTRY_BYTES} bytes")
        if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("settings") != settings:
            return _rejected("the entry is not for these settings")
        if entry.get("sha256") != _digest(entry.get("report")):
            return _rejected("the entry's checksum does not match its report")
        try:
            report = report_from_json(entry.get("report"), entry.get("reasons"))
        except (ReportFormatError, RecursionError) as exc:
            return _rejected(str(exc))
        if not unknown and any(r.verdict == Verdict.UNKNOWN for r in report.results):
            return MISS
        if not cacheable(report, unknown):
            return _rejected("the report does not survive a round trip through JSON")
        try:
            problem = verify_report(report, policy, settings)
        except Interrupted:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever goes wrong while verifying, the entry is not believed
            problem = f"verification failed: {type(exc).__name__}: {exc}"
        return _rejected(problem) if problem else CacheRead(CacheStatus.HIT, report)

    def report(self, settings: dict, policy, unknown: bool = False) -> Optional[Report]:
        """The verified report of read(), or None."""
        return self.read(settings, policy, unknown).report

    def discard(self, settings: dict) -> None:
        """Remove the entry for settings, if any (a rejected entry that no fresh report replaces)."""
        try:
            self._path(cache_key(settings)).unlink()
        except OSError:
            pass

    def store(self, settings: dict, report: Report, unknown: bool = False) -> bool:
        """Write the entry (temp file, then os.replace); False if the report is not cacheable or the write failed;
        never once the run is interrupted (Interrupted)."""
        stop_if_interrupted()
        if not cacheable(report, unknown) or report.policy_hash != settings.get("policy_hash"):
            return False
        path = self._path(cache_key(settings))
        doc = report_json(report)
        # Keys in the report's own order: a certificate reads back as the very text prove wrote.
        text = json.dumps({"format": FORMAT, "settings": settings, "report": doc, "reasons": reasons_json(report),
                           "sha256": _digest(doc)})
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(text)
                os.replace(temp, path)
            except BaseException:
                try:
                    os.unlink(temp)
                except OSError:
                    pass
                raise
        except OSError:
            return False
        return True


__all__ = ["CacheRead", "CacheStatus", "ReportCache", "ReportFormatError", "cache_key", "cacheable",
           "default_cache_dir", "report_from_json", "verify_report"]
