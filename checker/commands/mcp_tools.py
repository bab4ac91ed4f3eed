"""The MCP server's tools as plain functions: policy text in, (summary line, JSON document) out; run in workers."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Optional

from prunecheck.spec.conditions import CONDITIONS
from prunecheck.spec.errors import PolicySyntaxError, PrunecheckError, ReplayMismatch, TraceFormatError

from prunecheck.checker.language.loader import parse_deployment_text, parse_policy_text
from prunecheck.checker.language.operator import Operator, judged
from prunecheck.spec.policy import Claim
from prunecheck.checker.language.source_text import decode_policy_bytes
from prunecheck.checker.language.typecheck import MAX_FILE_BYTES
from prunecheck.checker.options import DEFAULTS, DIFF_DEFAULTS, MAX_SPANS, options_with

MAX_CERTIFICATE_BYTES = 4 * MAX_FILE_BYTES  # a certificate embeds its policy and an invariant: larger than a policy
MAX_CERTIFICATES = 2 * len(CONDITIONS)
MAX_TRACE_ACTIONS = 1000
FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
FORMS = (".yaml", ".yml", ".json", ".py")


@dataclass(frozen=True)
class Limits:
    """The server's per-call bounds: a caller may ask for less, never more (time: the worker's wall clock); and the
    operator's deployment every call is judged under (from `prunecheck mcp`'s own arguments and configuration, never
    from a call; a policy's own section is never believed: the calls come from the model under vetting)."""

    depth: int = 24
    spans: int = 12
    rlimit: int = 200_000_000
    seconds: float = 120.0
    operator: Operator = field(default=Operator())


def file_name(name: str) -> str:
    """The label a policy text is known by (it picks the form; never opened): a plain file name, no path."""
    if not isinstance(name, str) or not FILE_NAME.fullmatch(name) or not name.lower().endswith(FORMS):
        raise PolicySyntaxError(f"bad policy name {str(name)[:70]!r}: a plain file name ending in "
                                f"{', '.join(FORMS)}", "<arguments>", 1, 1)
    return name


def bounded_text(text, name: str) -> str:
    """The policy text, refused as the loader refuses a file of the same bytes (too large, not UTF-8, empty, NUL),
    with the same message, before anything else runs."""
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogatepass")
    return decode_policy_bytes(text, file_name(name))


def _bound(value: Optional[int], default: int, low: int, cap: int, what: str) -> int:
    value = default if value is None else value
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= cap:
        raise PolicySyntaxError(f"{what} must be an integer from {low} to {cap} (this server's limit)",
                                "<arguments>", 1, 1)
    return value


def options_for(limits: Limits, depth=None, spans=None, rlimit=None, base=DEFAULTS, **more):
    """CheckOptions within the server's limits; the rlimit is never 0 (unbounded) and the per-condition timeout
    never longer than the call's."""
    return options_with(base, depth=_bound(depth, min(base.depth, limits.depth), 0, limits.depth, "depth"),
                        spans=_bound(spans, min(base.spans, limits.spans), 2, min(limits.spans, MAX_SPANS), "spans"),
                        rlimit=_bound(rlimit, limits.rlimit, 1, limits.rlimit, "rlimit"),
                        timeout=min(base.timeout, limits.seconds), **more)


def policy_of(text: str, name: str, operator: Operator, deployment: Optional[dict] = None):
    """The policy a text holds, judged under the server operator's deployment (its own section a claim); the keys
    of a call's `deployment` (read as a deployment file, so a bad one is an error) are claims too: named, not used."""
    operator = replace(operator, trust_policy_deployment=False)
    policy = judged(parse_policy_text(bounded_text(text, name), name), operator)
    if deployment:
        claimed = parse_deployment_text(json.dumps(deployment), "deployment.json")
        calls = tuple(Claim(key, value, getattr(policy.deployment, key), "<call>: deployment")
                      for key, value in claimed.settings)
        policy = replace(policy, basis=replace(policy.basis, claims=policy.basis.claims + calls))
    return policy


def _conditions(only) -> tuple:
    if only is None:
        return DEFAULTS.only
    wanted = tuple(str(c).strip().upper() for c in only)
    unknown = [c for c in wanted if c not in CONDITIONS]
    if unknown or not wanted:
        raise PolicySyntaxError(f"unknown condition {', '.join(unknown)[:80] or '(none)'}; choose from "
                                f"{','.join(CONDITIONS)}", "<arguments>", 1, 1)
    return wanted


def check_tool(limits: Limits, policy: str, name: str = "policy.yaml", deployment: Optional[dict] = None,
               depth=None, spans=None, rlimit=None, only=None, prove: bool = True) -> tuple:
    """(summary, the `check --format json` document of this one policy)."""
    from prunecheck.checker.check import check
    from prunecheck.checker.outputs.files import Checked, json_document

    loaded = policy_of(policy, name, limits.operator, deployment)
    options = options_for(limits, depth, spans, rlimit, only=_conditions(only), prove=bool(prove))
    report = check(loaded, options)
    verdicts = ", ".join(f"{r.condition} {r.verdict}" for r in report.results)
    return f"policy {report.policy_name}: {report.verdict} ({verdicts})", json_document([Checked(name, loaded,
                                                                                                 report)])


def actions_from(trace) -> tuple:
    """The actions of a counterexample as the JSON report lists them ([{action, args}]), read as the ITF reader
    reads a trace file's: names, fields and integers checked, nothing evaluated."""
    from prunecheck.checker.outputs.itf import actions_of

    if not isinstance(trace, list) or not trace or len(trace) > MAX_TRACE_ACTIONS:
        raise TraceFormatError("trace: a non-empty list of {action, args} objects, as check reports it")
    states = [{}]
    for i, step in enumerate(trace):
        if not isinstance(step, dict) or not isinstance(step.get("args", {}), dict):
            raise TraceFormatError(f"trace step {i}: not an {{action, args}} object")
        states.append({"mbt::actionTaken": step.get("action"), "mbt::nondetPicks": step.get("args", {})})
    return actions_of({"states": states})


def explain_tool(limits: Limits, policy: str, condition: str, trace: list, name: str = "policy.yaml",
                 deployment: Optional[dict] = None, spans=None) -> tuple:
    """(the explanation as text, its JSON): the steps of a counterexample and the located cause in the policy."""
    from prunecheck.checker.engines.replay import first_violation, replay
    from prunecheck.checker.findings.explain import explanation_json, explanation_lines, explanation_of

    loaded = policy_of(policy, name, limits.operator, deployment)
    condition = _conditions([condition])[0]
    if spans is not None:  # None: no bound, so a trace from a check at any span bound replays
        spans = _bound(spans, DEFAULTS.spans, 2, min(limits.spans, MAX_SPANS), "spans")
    try:
        transitions = replay(loaded, actions_from(trace), spans)
    except (TraceFormatError, ReplayMismatch) as exc:
        raise PolicySyntaxError(f"the trace does not replay: {exc.one_line()}", "<trace>", 1, 1) from None
    where = first_violation(loaded, transitions, condition)
    if not where:
        raise PolicySyntaxError(f"the trace does not violate {condition} on the runtime", "<trace>", 1, 1)
    explanation = explanation_of(loaded, transitions[:where], condition)
    lines = [f"policy {loaded.name}: {condition} violated at step {where} of {len(transitions)}",
             *explanation_lines(loaded, explanation, indent="  ")]
    return "\n".join(lines), {"policy": loaded.name, "condition": condition, "source": name,
                              **explanation_json(explanation)}


def repair_tool(limits: Limits, policy: str, name: str = "policy.yaml", allow_deployment: bool = True,
                depth=None, spans=None, rlimit=None) -> tuple:
    """(summary, `repair --format json`): the proved change that keeps most of the policy's intent."""
    from prunecheck.checker.commands.repair import repair, result_json

    text = bounded_text(policy, name)
    options = options_for(limits, depth, spans, rlimit)
    operator = replace(limits.operator, trust_policy_deployment=False)
    # allow_deployment is the caller's wish; the deployment is the operator's, so no call changes it (ADR 0037).
    result = repair(policy_of(policy, name, operator), text, name, allow_deployment=False, options=options,
                    alternatives=0, judge=lambda parsed: judged(parsed, operator))
    doc = result_json(result)
    return f"repair of {doc['policy']}: {result.status}" + (f" ({result.reason})" if result.reason else ""), doc


def diff_tool(limits: Limits, old: str, new: str, old_name: str = "old.yaml", new_name: str = "new.yaml",
              depth=None, spans=None, rlimit=None) -> tuple:
    """(summary, `diff --format json`): where one policy evicts, in a reachable state, a span the other keeps."""
    from prunecheck.checker.commands.policydiff import diff_json, diff_policies

    before, after = policy_of(old, old_name, limits.operator), policy_of(new, new_name, limits.operator)
    doc = diff_json(diff_policies(before, after, options_for(limits, depth, spans, rlimit, base=DIFF_DEFAULTS)),
                    before, after)
    return f"{doc['outcome']}: {doc['summary']}", doc


def _certificate_document(i: int, certificate):
    from prunecheck.checker.engines.certificate import CertificateError, certificate_json

    try:
        text = certificate if isinstance(certificate, str) else json.dumps(certificate)
    except (RecursionError, ValueError):
        raise PolicySyntaxError("certificate is nested too deeply", f"certificate[{i}]", 1, 1) from None
    if len(text.encode("utf-8", "surrogatepass")) > MAX_CERTIFICATE_BYTES:
        raise PolicySyntaxError(f"certificate is too large: more than {MAX_CERTIFICATE_BYTES} bytes",
                                f"certificate[{i}]", 1, 1)
    try:
        return certificate_json(text)
    except CertificateError as exc:
        return exc
    except json.JSONDecodeError as exc:
        raise PolicySyntaxError(f"certificate is not JSON: {exc.msg}", f"certificate[{i}]", exc.lineno,
                                exc.colno) from None
    except RecursionError:
        raise PolicySyntaxError("certificate is not JSON: nested too deeply", f"certificate[{i}]", 1, 1) from None


def certify_tool(limits: Limits, certificates: list, policy: Optional[str] = None, name: str = "policy.yaml",
                 deployment: Optional[dict] = None) -> tuple:
    """(summary, per certificate its cvc5 re-check): confirmed only with every assumption discharged in the set."""
    from prunecheck.checker.engines.certificate_set import certify_set

    if not isinstance(certificates, list) or not 1 <= len(certificates) <= MAX_CERTIFICATES:
        raise PolicySyntaxError(f"certificates: a list of 1 to {MAX_CERTIFICATES} certificates", "<arguments>", 1, 1)
    documents = [(f"certificate[{i}]", _certificate_document(i, c)) for i, c in enumerate(certificates)]
    loaded = policy_of(policy, name, limits.operator, deployment) if policy is not None else None
    verdicts = certify_set(documents, loaded, int(limits.seconds * 1000), limits.rlimit)
    entries = [{"name": v.name, "condition": v.condition or None, "status": str(v.status), "reason": v.reason,
                "policy_hash": v.policy_hash or None, "discharged": [list(d) for d in v.discharged],
                "obligations": [{"name": o.name, "cvc5": o.cvc5, "z3": o.z3} for o in v.obligations]}
               for v in verdicts]
    confirmed = all(e["status"] == "confirmed" for e in entries)
    summary = "; ".join(f"{e['name']} ({e['condition'] or '?'}): {e['status']}" for e in entries)
    return summary, {"confirmed": confirmed, "certificates": entries}


TOOLS = {"check": check_tool, "explain": explain_tool, "repair": repair_tool, "diff": diff_tool,
         "certify": certify_tool}


POLICY_ARGUMENTS = {"policy": "name", "old": "old_name", "new": "new_name"}


def precheck(tool: str, arguments: dict) -> Optional[str]:
    """The error line for a policy text the loader refuses (too large, not UTF-8, empty): found in the server, before
    a worker is sent it."""
    try:
        for text, name in POLICY_ARGUMENTS.items():
            if arguments.get(text) is not None:
                bounded_text(arguments[text], arguments.get(name, "policy.yaml"))
    except PrunecheckError as exc:
        return f"prunecheck: error: {exc.one_line()}"
    return None


def run_tool(tool: str, limits: Limits, arguments: dict) -> tuple:
    """("ok", summary, document) or ("error", the one line the CLI prints for the same input); in a worker."""
    try:
        summary, document = TOOLS[tool](limits, **arguments)
        return "ok", summary, document
    except PrunecheckError as exc:
        return "error", f"prunecheck: error: {exc.one_line()}", None


__all__ = ["Limits", "TOOLS", "run_tool", "precheck", "file_name", "bounded_text", "options_for",
           "MAX_CERTIFICATE_BYTES", "MAX_CERTIFICATES"]
