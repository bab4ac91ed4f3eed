"""Which policy text a written trace's positions refer to: its policy file when that still holds the policy checked."""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from prunecheck.spec.errors import PrunecheckError
from prunecheck.spec.policy import DEPLOYMENT_KEYS, DeploymentOverride, Policy


JUDGED = ("operator", "default")  # a trace's deployment_basis under which the policy file's section was a claim


class FileStatus(str, enum.Enum):
    """How the policy file a trace names compares with the policy embedded in the trace (the one checked)."""

    SAME = "same"  # it holds exactly the policy checked: positions are positions in it
    CHANGED = "changed"  # it holds another policy now, or no longer loads
    MISSING = "missing"  # no such file, or the trace names none

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class TracePolicy:
    """The policy a trace is explained against, and where its positions are: in `path` only when status is SAME."""

    policy: Policy
    path: Optional[str]  # the policy file as the user can open it from here, as recorded if MISSING (None: no name)
    status: FileStatus


def policy_meta(policy: Policy, out_dir: Path) -> dict:
    """What a trace written into out_dir records to find its policy file again from anywhere: the file's path
    relative to the trace's directory (absolute if there is none), and the deployment keys an override set."""
    meta = {}
    if Path(policy.source).is_file():
        source = os.path.abspath(policy.source)
        try:
            meta["policy_file"] = Path(os.path.relpath(source, os.path.abspath(out_dir))).as_posix()
        except ValueError:  # another drive
            meta["policy_file"] = source
    if policy.overridden:
        meta["overridden"] = list(policy.overridden)
    meta["deployment_basis"] = policy.basis.basis
    return meta


def _recorded(info: dict) -> tuple:
    """(the policy file as the trace names it, where it may be): policy_file relative to the trace's directory; a
    trace written before policy_file existed has only the path as given to `check`, tried next to the trace, then
    from here."""
    recorded = info.get("policy_file")
    if isinstance(recorded, str) and recorded:
        return recorded, [Path(recorded)]
    source = info.get("source")
    if not isinstance(source, str) or not source or source.startswith("<"):
        return None, []
    return source, [Path(source)] if Path(source).is_absolute() else [Path(source), Path.cwd() / source]


def shown(path: Path) -> str:
    """A path to print: relative to the current directory when it lies below it, else absolute."""
    absolute = os.path.normpath(os.path.abspath(path))
    try:
        relative = os.path.relpath(absolute)
    except ValueError:
        return absolute
    return absolute if relative.startswith("..") else relative


def _override(info: dict, embedded: Policy) -> Optional[DeploymentOverride]:
    keys = info.get("overridden")
    if not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k in DEPLOYMENT_KEYS for k in keys):
        return None
    return DeploymentOverride.of({k: getattr(embedded.deployment, k) for k in keys})


def _regular(path: Path) -> bool:
    """A regular file (never a FIFO or device, which can block); a path the system refuses (too long) is none."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def trace_policy(trace: Path, info: dict, embedded: Policy) -> TracePolicy:
    """The policy file the trace names, if it still holds the embedded policy; otherwise the embedded policy."""
    from prunecheck.checker.language.loader import load_policy
    from prunecheck.checker.language.operator import under

    recorded, candidates = _recorded(info)
    found = next((trace.parent / c for c in candidates if _regular(trace.parent / c)), None)
    if found is None:
        return TracePolicy(embedded, recorded, FileStatus.MISSING)
    basis = info.get("deployment_basis")
    try:
        original = load_policy(shown(found), None if basis in JUDGED else _override(info, embedded))
    except PrunecheckError:
        return TracePolicy(embedded, shown(found), FileStatus.CHANGED)
    if basis in JUDGED:  # the deployment was the operator's, recorded in the trace; the file's section a claim
        keys = _override(info, embedded)
        original = under(original, embedded.deployment, basis, "", keys.keys() if keys else ())
    if original != embedded:
        return TracePolicy(embedded, shown(found), FileStatus.CHANGED)
    return TracePolicy(original, shown(found), FileStatus.SAME)
