"""Where a parsed policy comes from: its text (Origin), and whose deployment it is judged under (DeploymentBasis)."""

from __future__ import annotations

from dataclasses import dataclass

BASES = ("operator", "default", "trusted", "as_written")  # where a judged policy's deployment comes from


@dataclass(frozen=True)
class Claim:
    """A deployment key a policy file states but was not believed: the value it claims, the value used instead,
    and where the claim is written (`file:line:col`)."""

    key: str
    claimed: str
    used: str
    where: str


@dataclass(frozen=True)
class DeploymentBasis:
    """Where a policy's deployment comes from (one of BASES): the operator's configuration (`source` names it), the
    least-assuming default (none stated), the policy file's own section believed (`trusted`, operator's opt-in), or
    the text as written (parsed but not yet judged: internal use); `claims` are the file's keys not believed."""

    basis: str = "as_written"
    source: str = ""
    claims: tuple = ()

    def __post_init__(self):
        if self.basis not in BASES:
            raise ValueError(f"basis must be one of {', '.join(BASES)}")


@dataclass(frozen=True)
class Origin:
    """The text a policy was parsed from (its form: yaml, json or python) and where its keys sit in it: `evict`,
    `rank`, `deployment` at the key, `budget` and `deployment.KEY` at the value."""

    text: str
    form: str
    keys: tuple = ()  # (key, Loc) pairs, in the order of the text

    def locations(self) -> dict:
        return dict(self.keys)
