"""Hostile-input harness the hostile tests share: parse within a bound on work, check the promise, build payloads."""

from __future__ import annotations

import contextlib
import signal
import threading


from prunecheck.checker.language.loader import parse_policy_text
from prunecheck.spec.errors import PolicySyntaxError
from prunecheck.spec.policy import Policy

from conftest import HANG_GUARD, PARSE_CALLS, counted_calls
MASKED = "policy is nested too deeply or is too large"  # the loader's last-resort text for RecursionError
# Names that cannot exist on disk: CPython re-opens the filename of a Python SyntaxError to show the line.
NOWHERE = "<hostile>/policy"


# --------------------------------------------------------------------------- the property, with a bound on work


class _Overtime(BaseException):
    """Raised by SIGALRM: a BaseException, so the loader's `except Exception` guard cannot swallow it."""


@contextlib.contextmanager
def _deadline(seconds: float):
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield  # no alarm available: only the call count bounds the parse
        return

    def on_alarm(signum, frame):
        raise _Overtime()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _shown(data, limit: int = 200) -> str:
    text = repr(data)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(data)} long)"


def _as_text(data) -> str:
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


def verdict(data, filename: str):
    """parse_policy_text's answer (a Policy or the PolicySyntaxError), checked against the promise: within
    PARSE_CALLS function calls (a hang, e.g. reading from a pipe, is cut off by the HANG_GUARD alarm)."""
    try:
        with _deadline(HANG_GUARD), counted_calls() as calls:
            try:
                result = parse_policy_text(data, filename)
            except PolicySyntaxError as err:
                result = err
    except _Overtime:
        raise AssertionError(f"no verdict within {HANG_GUARD} s (hung) for {filename}: {_shown(data)}") from None
    assert calls.count < PARSE_CALLS, f"{calls.count} calls for {filename}: {_shown(data)}"
    if isinstance(result, PolicySyntaxError):
        check_error(result, data, filename)
    else:
        assert isinstance(result, Policy), type(result)
    return result


def check_error(err: PolicySyntaxError, data, filename: str) -> None:
    text = _as_text(data)
    assert err.file == filename
    assert isinstance(err.line, int) and isinstance(err.col, int)
    assert err.line >= 1 and err.col >= 1, str(err)
    assert err.line <= len(text.splitlines()) + 1, f"line beyond the text: {err}"
    assert err.col <= len(text) + 1, f"column beyond the text: {err}"
    assert err.message and "\n" not in str(err) and len(err.message) < 1000, str(err)
    assert not err.message.startswith("internal error"), f"a crash masked by the loader's guard: {err}"
    assert err.message != MASKED, f"a RecursionError/MemoryError masked by the loader's guard: {err}"


def refusal(data, filename: str) -> PolicySyntaxError:
    result = verdict(data, filename)
    assert isinstance(result, PolicySyntaxError), f"accepted: {_shown(data)}"
    return result


def fn(body: str) -> str:
    return f"def evict(span, window):\n    return {body}\n"


def billion_laughs(levels: int = 9) -> str:
    rows = ['lol0: &lol0 "lol"']
    for i in range(1, levels + 1):
        rows.append(f"lol{i}: &lol{i} [" + ", ".join([f"*lol{i - 1}"] * 9) + "]")
    return "\n".join(rows) + f"\nname: x\nevict: true\ndescription: *lol{levels}\n"


