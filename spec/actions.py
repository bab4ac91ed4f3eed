"""The actions of the reference runtime, as data: what an agent or a host can do to the window, one step each."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Union


@dataclass(frozen=True)
class Append:
    """New content arrives at the end of the window: `times` equal spans in a row (one step each; see expand). With
    `result_tokens` n >= 1 (a `tool_call` only), each call is followed by its result (same kind, n tokens): `times`
    call/result pairs, 2·times spans and steps (0: no results)."""

    kind: str
    tokens: int
    role: str = "user"
    times: int = 1
    result_tokens: int = 0
    tool: str = ""  # the tool's name, "" = unnamed (spec/SPEC.md §1c)
    tag: str = ""  # a label the host attaches, "" = unnamed
    name = "append"

    def __repr__(self) -> str:
        # result_tokens at its default is left out, so that printed traces stay what they were before it.
        shown = [k for k in self.__dataclass_fields__ if k != "result_tokens" or self.result_tokens != 0]
        return f"Append({', '.join(f'{k}={getattr(self, k)!r}' for k in shown)})"


QUIET_DEFAULTS = {"cites": (), "event": "", "reported_tokens": 0}


def _quiet_repr(action) -> str:
    # Arguments at their quiet defaults are left out, so that printed traces stay what they were before them.
    shown = [k for k in action.__dataclass_fields__ if QUIET_DEFAULTS.get(k, object()) != getattr(action, k)]
    return f"{type(action).__name__}({', '.join(f'{k}={getattr(action, k)!r}' for k in shown)})"


@dataclass(frozen=True)
class Edit:
    """Summarise (`transform`) or replace-and-discard (`destroy`) a content span, writing a record and a rationale."""

    target: int
    mode: str
    cites: tuple = ()  # the span ids its rationale cites (evidence: on; spec/SPEC.md §6d), ascending
    name = "edit"

    def __repr__(self) -> str:
        return _quiet_repr(self)


@dataclass(frozen=True)
class Read:
    """The agent reads a span, `times` times in a row (one step each; see expand)."""

    span: int
    times: int = 1
    name = "read"


@dataclass(frozen=True)
class Pin:
    """The agent sets a span's pinned flag."""

    span: int
    name = "pin"


@dataclass(frozen=True)
class Unpin:
    """The agent clears a span's pinned flag."""

    span: int
    name = "unpin"


@dataclass(frozen=True)
class Compact:
    """Evict the policy's candidates, then truncate oldest-first to the effective budget: the least of the policy's
    budget and the host's (`budget`, None when the host imposes none; it may differ at every compaction)."""

    budget: Optional[int] = None
    cites: tuple = ()  # the span ids the compaction's rationale cites (evidence: on; spec/SPEC.md §6d), ascending
    event: str = ""  # the event the host fired it on ("" = none: an ordinary compaction; spec/SPEC.md §4g)
    reported_tokens: int = 0  # the token usage the previous model call reported (§4g)
    name = "compact"

    def __repr__(self) -> str:
        return _quiet_repr(self)


@dataclass(frozen=True)
class Undo:
    """Undo the edit whose record is span `edit`."""

    edit: int
    name = "undo"


@dataclass(frozen=True)
class Audit:
    """Ask for the closure status, `times` times in a row: changes nothing but the clock (a wait of `times` steps)."""

    times: int = 1
    name = "audit"


Action = Union[Append, Edit, Read, Pin, Unpin, Compact, Undo, Audit]
ACTION_TYPES = {cls.name: cls for cls in (Append, Edit, Read, Pin, Unpin, Compact, Undo, Audit)}


REPEATABLE = (Read, Audit, Append)


def action_args(action: Action) -> dict:
    """The action's arguments, without the defaults that mean "as a single step": a compaction without a host
    budget, a read or audit done once."""
    return {key: getattr(action, key) for key in action.__dataclass_fields__
            if not (isinstance(action, Compact) and getattr(action, key) is None)
            and not (key in QUIET_DEFAULTS and getattr(action, key) == QUIET_DEFAULTS[key])
            and not (key == "times" and getattr(action, key) == 1)
            and not (key == "result_tokens" and getattr(action, key) == 0)
            and not (key == "role" and getattr(action, key) == "user")
            and not (key in ("tool", "tag") and getattr(action, key) == "")}


# What action_args leaves out at its default; always passed by name.
OPTIONAL_ARGS = ("role", "budget", "times", "result_tokens", "tool", "tag", "cites", "event", "reported_tokens")


def action_text(action: Action, keywords: bool = False) -> str:
    """The action as a call: `compact(3, budget=2)`, or with every argument named, `compact(now=3, budget=2)`."""
    args = action_args(action)
    if keywords:
        return f"{action.name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"
    positional = [repr(v) for k, v in args.items() if k not in OPTIONAL_ARGS]
    named = [f"{k}={args[k]!r}" for k in OPTIONAL_ARGS if k in args]
    return f"{action.name}({', '.join(positional + named)})"


def steps_of(action: Action) -> int:
    """How many real steps the action stands for: its `times` for a repeated read, audit or append (twice that for
    an append of call/result pairs), else 1."""
    return action.times * (1 + paired(action)) if isinstance(action, REPEATABLE) else 1


def paired(action: Action) -> bool:
    """Whether the action appends call/result pairs (an Append with result_tokens)."""
    return isinstance(action, Append) and action.result_tokens != 0


def real_steps(actions) -> int:
    """The number of real steps a sequence of actions stands for (each repeated action counts `times`)."""
    return sum(steps_of(a) for a in actions)


def expand(action: Action) -> tuple:
    """The single steps a repeated action stands for: step(expand(a)) reaches the state step(a) does (tested)."""
    if paired(action):
        call = replace(action, times=1, result_tokens=0)
        return (call, replace(call, tokens=action.result_tokens, role="tool_result")) * action.times
    if isinstance(action, REPEATABLE) and action.times != 1:
        return (replace(action, times=1),) * action.times
    return (action,)
