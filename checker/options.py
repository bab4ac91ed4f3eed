"""What a check is asked to do besides the policy: one frozen CheckOptions, where every default is defined."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Optional

from prunecheck.spec.conditions import CONDITIONS
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import Deployment, DeploymentOverride


class Engine(enum.Enum):
    """Which checker answers: z3 (proofs, bounded search, Spacer) or the explicit-state oracle over the runtime."""

    SYMBOLIC = "symbolic"
    EXPLICIT = "explicit"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class CheckOptions:
    """Everything a check takes besides the policy. `deployment` (the operator's --deployment file) sets its keys over
    the operator's configuration (`config`, else the nearest one; none with `no_config`), and a policy file's own
    section is believed only with `trust_policy_deployment` (checker/language/operator.py, ADR 0037);
    `tokens` and `repeats` (None: unrestricted) restrict appends' token counts and repetitions; `rlimit` (0: none)
    bounds every solver query by z3's resource count as `timeout` does by seconds; `cache_unknown` is batch's;
    `recovery_peak` adds the recovery set's peak size to the report."""

    depth: int = 12
    spans: int = 6
    only: tuple = CONDITIONS
    timeout: float = 30.0
    prove: bool = True
    tokens: Optional[tuple] = None
    repeats: Optional[tuple] = None
    engine: Engine = Engine.SYMBOLIC
    memory_mb: int = 0
    deployment: Optional[DeploymentOverride] = None
    counterexamples: int = 1
    cache_unknown: bool = False
    rlimit: int = 0
    recovery_peak: bool = False  # also measure the recovery set's peak size (checker/engines/peak.py): costs time
    config: Optional[str] = None  # the operator's configuration file; None: the nearest to each policy
    no_config: bool = False  # read no configuration file
    trust_policy_deployment: bool = False  # believe a policy file's own `deployment:` section

    def __post_init__(self):
        fields = {"only": tuple(self.only), "timeout": float(self.timeout), "engine": Engine(self.engine),
                  "tokens": None if self.tokens is None else tuple(self.tokens),
                  "repeats": None if self.repeats is None else tuple(self.repeats),
                  "deployment": override_of(self.deployment)}
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    @property
    def conditions(self) -> list:
        """The conditions asked for, in CONDITIONS order."""
        return [c for c in CONDITIONS if c in set(self.only)]

    def settings(self, policy_hash: str) -> dict:
        """The cache key's fields: what changes the answer, including the budgets that can turn an answer into
        `unknown`, as JSON values."""
        from prunecheck.checker.versions import versions  # z3's: loading a policy needs no solver

        return {"policy_hash": policy_hash, "depth": self.depth, "spans": self.spans, "only": self.conditions,
                "timeout": self.timeout, "memory_mb": int(self.memory_mb), "rlimit": int(self.rlimit),
                "prove": bool(self.prove), "tokens": None if self.tokens is None else sorted(self.tokens),
                "repeats": None if self.repeats is None else sorted(self.repeats),
                "engine": self.engine.value, "counterexamples": self.counterexamples, "versions": dict(versions()),
                "deployment_override": None if self.deployment is None else self.deployment.as_dict(),
                **({"recovery_peak": True} if self.recovery_peak else {})}


def override_of(override, filename: str = "<deployment>") -> Optional[DeploymentOverride]:
    """None, a DeploymentOverride, or a complete Deployment (an override of every key) as a DeploymentOverride."""
    if override is None or isinstance(override, DeploymentOverride):
        return override
    if isinstance(override, Deployment):
        return DeploymentOverride.whole(override)
    raise PolicySyntaxError("a deployment override must be a Deployment or a DeploymentOverride", filename, 1, 1)


DEFAULTS = CheckOptions()
MAX_SPANS = 256  # the most span slots a command accepts (a policy counting 100 spans may ask for about 103)
MAX_DEPTH = 200  # the deepest bounded search a command accepts
# `prunecheck diff` compares two policies step by step in one model of twice the state: shallower by default.
DIFF_DEFAULTS = replace(DEFAULTS, depth=8, spans=5)


def options_with(base: CheckOptions = DEFAULTS, **given) -> CheckOptions:
    """base with the options given set; a value of None keeps base's (the public API's keyword defaults)."""
    return replace(base, **{name: value for name, value in given.items() if value is not None})
