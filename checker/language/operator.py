"""The operator's deployment: read from a configuration the operator owns, and the policy judged under it (ADR 0037)."""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

from prunecheck.checker.language.bounds import suggestion
from prunecheck.checker.language.loader import deployment_value_error, load_deployment
from prunecheck.checker.language.source_text import decode_policy_bytes, read_policy_file
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import (DEPLOYMENT_KEYS, LEAST_ASSUMING, Claim, DeploymentBasis, DeploymentOverride,
                                    Policy, with_override)

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

CONFIG_NAMES = ("prunecheck.toml", ".prunecheck.toml", "pyproject.toml")  # searched in this order in each directory
CONFIG_KEYS = ("trust-policy-deployment", "deployment", "per-file-deployment")
TRUST_FLAG = "--trust-policy-deployment"


@dataclass(frozen=True)
class Operator:
    """What the operator states about the deployment: the keys it sets (None: none, so the least-assuming default
    holds), whether a policy file's own `deployment:` section is believed, and where these come from."""

    settings: Optional[DeploymentOverride] = None
    trust_policy_deployment: bool = False
    source: str = ""  # the files the settings come from, e.g. `examples/prunecheck.toml, --deployment d.yaml`


@dataclass(frozen=True)
class Config:
    """One configuration file's prunecheck table: the deployment for every policy below it, per-file deployments
    by glob (relative to the file's directory, or a file name), and the trust opt-in."""

    path: str
    directory: str
    trust_policy_deployment: bool = False
    deployment: tuple = ()  # ((key, value), ...)
    per_file: tuple = ()  # ((glob, ((key, value), ...)), ...), in the file's order

    def settings_for(self, policy_path: Optional[str]) -> tuple:
        """The deployment keys this configuration sets for policy_path: its table, then each matching per-file one."""
        settings = dict(self.deployment)
        if policy_path is not None:
            rel = os.path.relpath(os.path.abspath(policy_path), self.directory).replace(os.sep, "/")
            for glob, table in self.per_file:
                if fnmatch.fnmatchcase(rel, glob) or fnmatch.fnmatchcase(os.path.basename(rel), glob):
                    settings.update(table)
        return tuple(settings.items())


def find_config(start) -> Optional[str]:
    """The nearest configuration at or above directory `start`: prunecheck.toml or .prunecheck.toml, or a
    pyproject.toml with a [tool.prunecheck] table (ruff's and pytest's rule); None if there is none."""
    here = Path(os.path.abspath(start))
    for directory in (here, *here.parents):
        for name in CONFIG_NAMES:
            candidate = directory / name
            if candidate.is_file() and (name != "pyproject.toml" or _has_tool_table(candidate)):
                return str(candidate)
    return None


def _has_tool_table(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            text = handle.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return False
    return re.search(r"^\s*\[\s*tool\s*\.\s*prunecheck\s*[\].]", text, re.M) is not None


def read_config(path) -> Config:
    """Parse a configuration file; any problem is a one-line PolicySyntaxError at the offending line."""
    data, filename = read_policy_file(path, "configuration")
    text = decode_policy_bytes(data, filename)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        where = re.search(r"line (\d+), column (\d+)", str(exc))
        line, col = (int(where.group(1)), int(where.group(2))) if where else (1, 1)
        raise PolicySyntaxError(f"not valid TOML: {str(exc).split(' (at ')[0]}", filename, line, col) from None
    if os.path.basename(filename) == "pyproject.toml":
        doc = doc.get("tool", {}).get("prunecheck", {})
        if not isinstance(doc, dict):
            raise PolicySyntaxError("[tool.prunecheck] must be a table", filename, *_where(text, "prunecheck"))
    return _config_of(doc, text, filename)


def _where(text: str, key: str) -> tuple:
    """(line, column) of the first place `key` is written as a key or table name in text; (1, 1) if not found."""
    for number, line in enumerate(text.splitlines(), 1):
        match = re.match(rf'\s*(\[+\s*)?(.*[."\s])?{re.escape(key)}"?\s*(=|\]|\.)', line)
        if match:
            return number, line.find(key) + 1
    return 1, 1


def _config_of(doc: dict, text: str, filename: str) -> Config:
    for key in doc:
        if key not in CONFIG_KEYS:
            raise PolicySyntaxError(f"unknown configuration key `{key[:64]}`{suggestion(key, CONFIG_KEYS)} (keys: "
                                    f"{', '.join(CONFIG_KEYS)})", filename, *_where(text, key))
    trust = doc.get("trust-policy-deployment", False)
    if not isinstance(trust, bool):
        raise PolicySyntaxError("trust-policy-deployment must be true or false", filename,
                                *_where(text, "trust-policy-deployment"))
    per_file = doc.get("per-file-deployment", {})
    if not isinstance(per_file, dict):
        raise PolicySyntaxError("per-file-deployment must be a table of file globs", filename,
                                *_where(text, "per-file-deployment"))
    tables = tuple((glob, _deployment_table(table, text, filename, f"per-file-deployment.{glob}"))
                   for glob, table in per_file.items())
    return Config(filename, os.path.dirname(os.path.abspath(filename)), trust,
                  _deployment_table(doc.get("deployment", {}), text, filename, "deployment"), tables)


def _deployment_table(table, text: str, filename: str, name: str) -> tuple:
    if not isinstance(table, dict):
        raise PolicySyntaxError(f"{name} must be a table of deployment keys", filename, *_where(text, name))
    out = []
    for key, value in table.items():
        if key not in DEPLOYMENT_KEYS:
            raise PolicySyntaxError(f"unknown deployment key `{key[:64]}`{suggestion(key, DEPLOYMENT_KEYS)} in "
                                    f"{name}", filename, *_where(text, key))
        problem = deployment_value_error(key, value) if isinstance(value, str) else f"deployment {key} is a string"
        if problem:
            raise PolicySyntaxError(problem, filename, *_where(text, key))
        out.append((key, value))
    return tuple(out)


def operator_for(policy_path=None, *, config: Optional[str] = None, no_config: bool = False,
                 deployment: Optional[str] = None, trust: bool = False, start: Optional[str] = None) -> Operator:
    """The operator's deployment for one policy file (policy_path None: text from a call, found from `start` or the
    working directory): the configuration (`config`, else the nearest to the policy, unless `no_config`), then the
    keys of the `deployment` file over it; trusted if `trust` or the configuration says so."""
    settings, sources, trusted = {}, [], bool(trust)
    path = config
    if path is None and not no_config:
        origin = start if start is not None else (os.path.dirname(os.path.abspath(os.fspath(policy_path)))
                                                  if policy_path is not None else os.getcwd())
        path = find_config(origin)
    if path is not None:
        found = read_config(path)
        settings.update(found.settings_for(None if policy_path is None else os.fspath(policy_path)))
        trusted = trusted or found.trust_policy_deployment
        sources.append(_shown(found.path))
    if deployment is not None:
        override = deployment if isinstance(deployment, DeploymentOverride) else load_deployment(deployment)
        settings.update(override.settings)
        sources.append("deployment=" if override.source == "<deployment>" else f"--deployment {override.source}")
    stated = DeploymentOverride.of(settings, ", ".join(sources)) if settings else None
    return Operator(stated, trusted, ", ".join(sources))


def load_judged(path, options) -> Policy:
    """The policy file at path, judged under the operator's deployment that `options` (a CheckOptions) name."""
    from prunecheck.checker.language.loader import load_policy

    operator = operator_for(path, config=options.config, no_config=options.no_config, deployment=options.deployment,
                            trust=options.trust_policy_deployment)
    return judged(load_policy(path), operator)


def judged_from_args(path, args) -> Policy:
    """The policy file at path judged under the operator's deployment a command's arguments name (the arguments of
    frontdoor.add_operator_arguments; missing ones at their defaults)."""
    from prunecheck.checker.language.loader import load_policy

    operator = operator_for(path, config=getattr(args, "config", None), no_config=bool(getattr(args, "no_config", 0)),
                            deployment=getattr(args, "deployment", None),
                            trust=bool(getattr(args, "trust_policy_deployment", False)))
    return judged(load_policy(path), operator)


def _shown(path: str) -> str:
    """A configuration's path to print: relative to the working directory when below it, else absolute."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    return absolute if relative.startswith("..") else relative


def claimed_keys(policy: Policy) -> dict:
    """{key: 'file:line:col'} of each deployment key the policy's text writes."""
    if policy.origin is None:
        return {}
    return {name.split(".", 1)[1]: f"{policy.source}:{loc.line}:{loc.col}"
            for name, loc in policy.origin.keys if name.startswith("deployment.")}


def judged(policy: Policy, operator: Operator) -> Policy:
    """The policy as it is judged: under the operator's deployment over the least-assuming default, its own section
    a claim (each key named with the value used instead); or, when trusted, its section with the operator's keys
    set over it (as before ADR 0037)."""
    if operator.trust_policy_deployment:
        return replace(with_override(policy, operator.settings), basis=DeploymentBasis("trusted", operator.source))
    deployment = operator.settings.apply(LEAST_ASSUMING) if operator.settings else LEAST_ASSUMING
    keys = operator.settings.keys() if operator.settings else ()
    return under(policy, deployment, "operator" if operator.settings else "default", operator.source, keys)


def under(policy: Policy, deployment, basis: str, source: str, operator_keys) -> Policy:
    """The policy (as its text was written) under `deployment`, whose keys `operator_keys` the operator set and the
    rest the least-assuming default: each key its text writes becomes a Claim."""
    written = policy.deployment
    claims = tuple(Claim(key, getattr(written, key), getattr(deployment, key), where)
                   for key, where in claimed_keys(policy).items())
    return replace(policy, deployment=deployment, overridden=tuple(k for k in DEPLOYMENT_KEYS if k in operator_keys),
                   basis=DeploymentBasis(basis, source, claims))


def judge_like(policy: Policy):
    """A function from a policy parsed from text to that policy judged as `policy` was: under its deployment, its
    section a claim (or, if `policy` was trusted, believed with the operator's keys over it)."""
    basis = policy.basis
    if basis.basis in ("operator", "default"):
        return lambda parsed: under(parsed, policy.deployment, basis.basis, basis.source, policy.overridden)
    keys = DeploymentOverride.of({k: getattr(policy.deployment, k) for k in policy.overridden})
    return lambda parsed: replace(with_override(parsed, keys if policy.overridden else None), basis=basis)


def basis_text(basis: DeploymentBasis) -> str:
    """One line: whose deployment a verdict rests on."""
    if basis.basis == "operator":
        return f"the operator's deployment ({basis.source}) over the least-assuming default"
    if basis.basis == "default":
        return ("the least-assuming default, the first seed's observed scenario (records and rationale in the window, "
                "pins set by the agent, the status reported by the pruning pass): no operator deployment was given")
    if basis.basis == "trusted":
        return (f"the policy file's own deployment section, believed ({TRUST_FLAG})"
                + (f", with the operator's keys over it ({basis.source})" if basis.source else ""))
    return "the policy text's deployment as written (not judged against an operator's)"


def claim_text(claim: Claim) -> str:
    """One line: a deployment key the policy file (or a call) claims and the value used instead."""
    return f"{claim.where}: claims {claim.key}: {claim.claimed}; not believed, {claim.key}={claim.used} used instead"


def claims_lines(claims: tuple) -> list:
    """A line per claim that differs from the value used, then one line for those that agree."""
    lines = [claim_text(c) for c in claims if c.claimed != c.used]
    same = [c for c in claims if c.claimed == c.used]
    if same:
        lines.append(f"{same[0].where}: claims {', '.join(f'{c.key}: {c.claimed}' for c in same)}; not believed, "
                     "and the deployment used agrees")
    return lines


__all__ = ["Operator", "Config", "find_config", "read_config", "operator_for", "judged", "under", "judge_like", "load_judged", "judged_from_args", "claimed_keys",
           "basis_text", "claim_text", "claims_lines", "CONFIG_NAMES", "CONFIG_KEYS", "TRUST_FLAG"]
