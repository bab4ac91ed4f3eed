"""What long work reports as it goes: the Progress protocol, the quiet reporter, and current(), the one in use."""

from __future__ import annotations

import contextlib
import contextvars
from typing import ContextManager, Iterator, Optional, Protocol, TextIO


class Progress(Protocol):
    """Where long work says how far it is. Commands open a task; the work inside (theorems, checks, engines) reports
    to current(), which is that task's reporter while it runs. A display decides what to show (outputs/progress.py);
    it never writes to stdout."""

    def task(self, what: str, total: Optional[int] = None) -> ContextManager["Progress"]:
        """A run of `total` items (None: not known), called `what`, for the block; current() is this reporter, and
        the block gets it (`with progress_for(stderr).task("checking", 3) as progress:`)."""

    def expect(self, total: int) -> None:
        """The open task has `total` items (known only now)."""

    def item(self, name: str) -> None:
        """The item now worked on: a theorem, a policy file, a candidate repair."""

    def step(self, text: str) -> None:
        """What the item's work is doing now: a condition and an engine, a depth."""

    def advance(self, items: int = 1) -> None:
        """`items` more items done."""

    def note(self, text: str) -> None:
        """A one-line note, shown where the progress is shown (and not otherwise)."""

    def lines(self, stream: TextIO) -> TextIO:
        """`stream`, or a stream whose lines appear above the display while it shows (for stderr messages)."""


class Quiet:
    """The reporter that shows nothing: not a terminal, --quiet, a worker process, a library call."""

    @contextlib.contextmanager
    def task(self, what: str, total: Optional[int] = None) -> Iterator["Quiet"]:
        with reporting(self):
            yield self

    def expect(self, total: int) -> None:
        pass

    def item(self, name: str) -> None:
        pass

    def step(self, text: str) -> None:
        pass

    def advance(self, items: int = 1) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def lines(self, stream: TextIO) -> TextIO:
        return stream


QUIET = Quiet()
_CURRENT: contextvars.ContextVar = contextvars.ContextVar("prunecheck_progress", default=QUIET)


def current() -> Progress:
    """The reporter of the task open in this thread (QUIET if none): what engines and theorems report to."""
    return _CURRENT.get()


@contextlib.contextmanager
def reporting(progress: Progress) -> Iterator[Progress]:
    """current() is `progress` inside the block."""
    token = _CURRENT.set(progress)
    try:
        yield progress
    finally:
        _CURRENT.reset(token)
