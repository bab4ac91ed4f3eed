"""prunecheck: vets context-pruning policies a model wrote for itself, before they are deployed.

The stable Python API (the command line is a thin layer over it)::

    import prunecheck
    policy = prunecheck.load_policy("policy.yaml", deployment={"records": "undo_region"})  # the operator's facts
    report = prunecheck.check(policy, depth=12, spans=6)    # or prunecheck.parse_policy(text, "name.yaml")
    report.verdict                                          # prunecheck.Verdict.VIOLATED / UNKNOWN / HOLDS
    for result in report.results:                           # one prunecheck.Result per condition
        result.condition, result.verdict, result.trace, result.certificate
    prunecheck.explain(policy, report.result("C1"))         # steps and the located cause
    prunecheck.repair(policy), prunecheck.diff(old, new)    # proved repairs, behavioural policy diffs
    prunecheck.check_many(paths, jobs=2)                    # batch vetting with a cache
    prunecheck.replay(policy, [prunecheck.Append(kind="message", tokens=1), prunecheck.Edit(target=0, mode="destroy")])
"""

from __future__ import annotations

from prunecheck.version import __version__

_EXPORTS = {
    "Verdict": ("prunecheck.checker.result", "Verdict"),
    "Result": ("prunecheck.checker.result", "Result"),
    "Report": ("prunecheck.checker.result", "Report"),
    "Trace": ("prunecheck.checker.result", "Trace"),
    "Policy": ("prunecheck.spec.policy", "Policy"),
    "Deployment": ("prunecheck.spec.policy", "Deployment"),
    "DeploymentOverride": ("prunecheck.spec.policy", "DeploymentOverride"),
    "PrunecheckError": ("prunecheck.spec.errors", "PrunecheckError"),
    "PolicySyntaxError": ("prunecheck.spec.errors", "PolicySyntaxError"),
    "CheckOptions": ("prunecheck.checker.options", "CheckOptions"),
    "Engine": ("prunecheck.checker.options", "Engine"),
    "Reason": ("prunecheck.checker.result", "Reason"),
    "reason_text": ("prunecheck.checker.outputs.reasons", "reason_text"),
    "CONDITIONS": ("prunecheck.spec.conditions", "CONDITIONS"),
    "ActionRefused": ("prunecheck.spec.runtime", "ActionRefused"),
    **{name: ("prunecheck.spec.actions", name)
       for name in ("Append", "Edit", "Read", "Pin", "Unpin", "Compact", "Undo", "Audit")},
}
__all__ = sorted(["check", "check_explicit", "parse_policy", "load_policy", "explain", "repair", "diff", "check_many", "replay",
                  "__version__", *_EXPORTS])


def __getattr__(name):
    # Lazy: `import prunecheck.spec` must not pull in z3 and the checker.
    if name in _EXPORTS:
        import importlib

        module, attr = _EXPORTS[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'prunecheck' has no attribute {name!r}")


def _deployment(deployment):
    """None, or a DeploymentOverride from a DeploymentOverride, a Deployment (every key) or a dict (its keys only)."""
    from prunecheck.checker.options import override_of
    from prunecheck.spec.policy import Deployment, DeploymentOverride

    if deployment is None or isinstance(deployment, (Deployment, DeploymentOverride)):
        return override_of(deployment)
    if isinstance(deployment, dict):
        try:
            return DeploymentOverride.of(deployment)
        except (TypeError, ValueError) as exc:
            from prunecheck.spec.errors import PolicySyntaxError
            raise PolicySyntaxError(f"bad deployment: {exc}", "<deployment>", 1, 1) from None
    raise TypeError("deployment must be a dict, a Deployment, a DeploymentOverride or None")


def _policy(policy, deployment=None):
    """A Policy from a Policy (already judged) or a path (judged as load_policy does), with the operator's deployment
    keys given (if any) set over it."""
    import os
    from dataclasses import replace

    from prunecheck.spec.policy import Policy, with_override

    override = _deployment(deployment)
    if isinstance(policy, Policy):
        judged = with_override(policy, override)
        if override is not None and policy.basis.basis == "default":
            judged = replace(judged, basis=replace(policy.basis, basis="operator", source="deployment="))
        return judged
    if isinstance(policy, (str, os.PathLike)):
        return load_policy(policy, override)
    raise TypeError("policy must be a prunecheck.Policy or a path to a policy file")


def load_policy(path, deployment=None, *, config=None, no_config: bool = False,
                trust_policy_deployment: bool = False):
    """Read a policy file (never executed) and judge it under the operator's deployment: the keys of `deployment`
    (a dict, a DeploymentOverride or a complete Deployment) over the configuration's (`config`, else the nearest
    prunecheck.toml or pyproject.toml [tool.prunecheck] at or above the file; none with `no_config`), the rest the
    least-assuming default. The file's own `deployment:` section is a claim, named in the report and not used,
    unless `trust_policy_deployment` (or the configuration) says to believe it (ADR 0037)."""
    from prunecheck.checker.language.loader import load_policy as _load
    from prunecheck.checker.language.operator import judged, operator_for

    operator = operator_for(path, config=config, no_config=no_config, deployment=_deployment(deployment),
                            trust=trust_policy_deployment)
    return judged(_load(path), operator)


def parse_policy(text, source: str = "<policy>.yaml", deployment=None, *, config=None, no_config: bool = False,
                 trust_policy_deployment: bool = False):
    """Parse policy text (never executed; the extension of `source` picks the form: .yaml/.yml, .json or .py) and
    judge it as load_policy does, the configuration found from the working directory."""
    from prunecheck.checker.language.loader import parse_policy_text
    from prunecheck.checker.language.operator import judged, operator_for

    operator = operator_for(None, config=config, no_config=no_config, deployment=_deployment(deployment),
                            trust=trust_policy_deployment)
    return judged(parse_policy_text(text, source), operator)


def check(policy, deployment=None, *, depth: int = None, spans: int = None, only=None, timeout: float = None,
          memory_mb: int = None, prove: bool = None, tokens=None, max_counterexamples: int = None, repeats=None,
          rlimit: int = None, recovery_peak: bool = None):
    """Check a policy (a Policy or a path) under its own deployment with the keys of `deployment` (a dict such as
    {"records": "window"}, a DeploymentOverride, or a complete Deployment) set over it: a Report with one Result
    per condition, `violated` with a replayed trace, `holds` with a cvc5-checked certificate, or
    `unknown` with the reason; with `recovery_peak`, also Report.recovery_peak. An option left None takes its
    default, the one prunecheck.CheckOptions() has."""
    from prunecheck.checker.check import check as _check
    from prunecheck.checker.options import options_with

    options = options_with(depth=depth, spans=spans, only=only, timeout=timeout, memory_mb=memory_mb, prove=prove,
                           tokens=tokens, counterexamples=max_counterexamples, repeats=repeats, rlimit=rlimit,
                           recovery_peak=recovery_peak)
    return _check(_policy(policy, deployment), options)


def check_explicit(policy, depth: int = None, spans: int = None, only=None, time_limit: float = None, tokens=None,
                   repeats=None):
    """The explicit-state oracle's Report (breadth-first over the reference runtime): the same shape as check's,
    never `holds`; tokens and repeats, when given, replace the domains derived from the policy's constants. An option
    left None takes its default, the one prunecheck.CheckOptions() has."""
    from prunecheck.checker.check import check as _check
    from prunecheck.checker.options import Engine, options_with

    options = options_with(engine=Engine.EXPLICIT, depth=depth, spans=spans, only=only, timeout=time_limit,
                           tokens=tokens, repeats=repeats)
    return _check(_policy(policy), options)


def explain(policy, result):
    """The explanation of a violated Result's counterexample: labelled steps and the located cause."""
    from prunecheck.checker.findings.explain import explain as _explain

    if result.trace is None:
        raise ValueError(f"{result.condition} has no counterexample to explain ({result.verdict})")
    return _explain(_policy(policy), result.trace.actions, result.condition, result.trace.spans)


def repair(policy, *, allow_deployment: bool = True, timeout: float = None, rlimit: int = None, depth: int = None,
           spans: int = None, alternatives: int = None, report=None):
    """The proved change to a policy file's text that keeps most of its intent (RepairResult; `.diff`, `.text`,
    `.report`, `.alternatives`, `.undecided`, `.status`), judged as load_policy judges it (a path) or as it was (a
    Policy): a deployment change is proposed only where the file's own section is believed (trusted), and never to
    a key the operator set. `report`: `check`'s Report of the same file at the same bounds, if already made (it is
    reused, not made again). Bounds left None take check's defaults; alternatives left None: none (stop at the
    first proved repair)."""
    from prunecheck.checker.commands.repair import MAX_ALTERNATIVES, repair as _repair
    from prunecheck.checker.language.loader import decode_policy_bytes
    from prunecheck.checker.language.operator import judge_like
    from prunecheck.checker.options import options_with

    loaded = _policy(policy)
    with open(loaded.source, "rb") as handle:
        text = decode_policy_bytes(handle.read(), loaded.source)
    options = options_with(depth=depth, spans=spans, timeout=timeout, rlimit=rlimit)
    trusted = loaded.basis.basis in ("trusted", "as_written")
    return _repair(loaded, text, loaded.source, allow_deployment=allow_deployment and trusted, options=options,
                   alternatives=MAX_ALTERNATIVES if alternatives is None else alternatives, original=report,
                   judge=judge_like(loaded))


def diff(old, new, *, depth: int = None, spans: int = None, timeout: float = None, rlimit: int = None):
    """Does `new` evict, in some reachable state, a span `old` keeps, and the reverse (PolicyDiff). Bounds left None
    take diff's defaults (prunecheck.checker.options.DIFF_DEFAULTS)."""
    from prunecheck.checker.commands.policydiff import diff_policies
    from prunecheck.checker.options import DIFF_DEFAULTS, options_with

    options = options_with(DIFF_DEFAULTS, depth=depth, spans=spans, timeout=timeout, rlimit=rlimit)
    return diff_policies(_policy(old), _policy(new), options)


def replay(policy, actions, *, spans=None):
    """Drive the reference runtime through `actions` (prunecheck.Append, Edit, Read, Pin, Unpin, Compact, Undo, Audit)
    from the empty window, with at most `spans` spans in it (None: no bound): per action, the frozenset of the
    conditions its step violates. An action the state does not allow raises prunecheck.ActionRefused."""
    from prunecheck.spec.conditions import violations
    from prunecheck.spec.runtime import State, step

    policy, state, out = _policy(policy), State(), []
    for action in actions:
        transition = step(policy, state, action, spans)
        out.append(violations(policy, transition))
        state = transition.after
    return tuple(out)


def check_many(paths, *, jobs: int = 1, cache_dir=None, **options):
    """Check many policy files (files, directories or globs) in parallel processes, with a result cache. The worker
    processes import only prunecheck, never the caller's main module: no `if __name__ == "__main__":` guard needed."""
    from prunecheck.checker.commands import batch

    if "deployment" in options:
        options["deployment"] = _deployment(options["deployment"])
    from prunecheck.checker.options import CheckOptions

    return batch.check_many(batch.expand_policy_paths(paths), CheckOptions(**options), jobs=jobs,
                            cache_dir=cache_dir)
