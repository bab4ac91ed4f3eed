"""The report cache: JSON reports on disk, keyed by policy hash, every answer-changing option and the tool versions."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Optional

from prunecheck.spec.conditions import CONDITIONS
from prunecheck.spec.errors import PrunecheckError
from prunecheck.spec.runtime import ACTION_TYPES

from .render import report_json
from .result import Report, Result, Trace, Verdict

FORMAT = 1


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
    fields = set(cls.__dataclass_fields__)  # a compaction's host budget is optional
    _expect(fields - {"budget"} <= set(args) <= fields, f"{where}: wrong arguments for {entry['action']}")
    _expect(all(_integer(v) or isinstance(v, str) for v in args.values()), f"{where}: bad argument value")
    return cls(**args)


def _result(condition: str, entry, spans: int) -> Result:
    _expect(isinstance(entry, dict), f"{condition} is not an object")
    verdict = entry.get("verdict")
    _expect(verdict in ("holds", "unknown", "violated"), f"{condition}: bad verdict {verdict!r}")
    depth = entry.get("depth")
    _expect(depth is None or _integer(depth), f"{condition}: bad depth")
    _expect(isinstance(entry.get("reason"), str) and isinstance(entry.get("engine"), str),
            f"{condition}: reason and engine must be strings")
    seconds = entry.get("seconds", 0.0)
    _expect(isinstance(seconds, (int, float)) and not isinstance(seconds, bool), f"{condition}: bad seconds")
    extra = {}
    if "trace" in entry:
        extra["trace"] = _trace(condition, entry["trace"], spans, "trace")
    if "other_traces" in entry:  # further counterexamples (check's `counterexamples` > 1)
        _expect(isinstance(entry["other_traces"], list), f"{condition}: other_traces is not a list")
        extra["others"] = tuple(_trace(condition, t, spans, f"other trace {i}")
                                for i, t in enumerate(entry["other_traces"], 2))
    certificate = entry.get("certificate")
    _expect(certificate is None or isinstance(certificate, str), f"{condition}: certificate is not a string")
    return Result(condition, Verdict[verdict.upper()], depth, entry["reason"], engine=entry["engine"],
                  certificate=certificate, seconds=float(seconds), **extra)


def _trace(condition: str, steps, spans: int, what: str) -> Trace:
    _expect(isinstance(steps, list), f"{condition}: {what} is not a list")
    # report_json leaves out a trace's span count: every engine records the report's bound there.
    return Trace(condition, tuple(_action(a, f"{condition} {what} step {i}") for i, a in enumerate(steps, 1)), spans)


def report_from_json(doc) -> Report:
    """The Report that render.report_json turned into doc (seconds rounded to 0.1 ms; they do not take part in ==)."""
    _expect(isinstance(doc, dict), "not an object")
    for key in ("policy", "source", "policy_hash"):
        _expect(isinstance(doc.get(key), str), f"{key} is not a string")
    _expect(_integer(doc.get("depth")) and _integer(doc.get("spans")), "depth and spans must be integers")
    conditions, versions = doc.get("conditions"), doc.get("versions")
    _expect(isinstance(conditions, dict) and all(c in CONDITIONS for c in conditions), "bad conditions")
    _expect(isinstance(versions, dict) and all(isinstance(v, str) for v in versions.values()), "bad versions")
    results = tuple(_result(c, conditions[c], doc["spans"]) for c in conditions)
    report = Report(doc["policy"], doc["policy_hash"], doc["source"], doc["depth"], doc["spans"], results,
                    tuple(versions.items()))
    _expect(doc.get("verdict") == str(report.verdict), "verdict does not match its conditions")
    return report


def cache_key(settings: dict) -> str:
    """sha256 of the canonical JSON of settings (policy hash, options, versions)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _digest(doc) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def cacheable(report: Report, unknown: bool = False) -> bool:
    """No `unknown` unless asked for (it depends on the time limits, which are in the key, and on the machine, which
    is not), and the JSON form reads back as an equal Report."""
    if not unknown and any(r.verdict == Verdict.UNKNOWN for r in report.results):
        return False
    try:
        return report_from_json(json.loads(json.dumps(report_json(report)))) == report
    except ReportFormatError:
        return False


class ReportCache:
    """A directory of `v1/<key[:2]>/<key>.json` entries, each {"format", "settings", "report", "sha256" of the
    report}; written atomically, checked on every read."""

    def __init__(self, directory):
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / f"v{FORMAT}" / key[:2] / f"{key}.json"

    def report(self, settings: dict, unknown: bool = False) -> Optional[Report]:
        """The cached report for settings, or None; an unreadable, corrupt or mismatched entry counts as absent, and
        so does one with an `unknown` result unless `unknown`."""
        try:
            entry = json.loads(self._path(cache_key(settings)).read_text(encoding="utf-8"))
            if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("settings") != settings \
                    or entry.get("sha256") != _digest(entry.get("report")):
                return None
            report = report_from_json(entry.get("report"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError, ReportFormatError):
            return None
        if report.policy_hash != settings.get("policy_hash") or not cacheable(report, unknown):
            return None
        return report

    def store(self, settings: dict, report: Report, unknown: bool = False) -> bool:
        """Write the entry (temp file, then os.replace); False if the report is not cacheable or the write failed."""
        if not cacheable(report, unknown) or report.policy_hash != settings.get("policy_hash"):
            return False
        path = self._path(cache_key(settings))
        doc = report_json(report)
        text = json.dumps({"format": FORMAT, "settings": settings, "report": doc, "sha256": _digest(doc)},
                          sort_keys=True)
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


__all__ = ["ReportCache", "ReportFormatError", "cache_key", "cacheable", "default_cache_dir", "report_from_json"]
