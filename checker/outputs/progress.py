"""The progress display: a rich progress bar on stderr when it is a terminal (checker/progress.py's Progress)."""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator, Optional, TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, ProgressColumn, SpinnerColumn, TextColumn
from rich.progress import TimeElapsedColumn
from rich.table import Column
from rich.text import Text

from prunecheck.checker.outputs.terminal import SafeStream, terminal_safe
from prunecheck.checker.progress import QUIET, Progress, reporting

# Seconds of work before the bar appears, so that a quick command shows none; tests set 0 (then it shows at once).
DELAY = 0.5


def progress_for(stream: TextIO, quiet: bool = False, terminal: Optional[bool] = None) -> Progress:
    """A display on `stream` (stderr) if `terminal` (by default: whether stream is one) and not `quiet`; otherwise
    QUIET. The report is stdout's: this never writes there."""
    raw = getattr(stream, "stream", stream)  # a SafeStream: rich writes its own escape codes, and escapes ours
    if terminal is None:
        terminal = _isatty(raw)
    return Display(raw) if terminal and not quiet else QUIET


def as_progress(progress) -> Progress:
    """A Progress from what a library caller passed: None (QUIET), a Progress, or a text stream (progress_for)."""
    if progress is None:
        return QUIET
    if hasattr(progress, "advance"):
        return progress
    return progress_for(progress)


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or closed
        return False


class Display:
    """A rich progress bar with the current item and step, done/total and the remaining time where the total is
    known; it appears after DELAY seconds of work and is erased when the outermost task ends. Once shown, every item,
    step and advance is drawn as it comes, not only at the next tick: each stands for solver work, which dwarfs a
    redraw."""

    def __init__(self, stream: TextIO, delay: Optional[float] = None):
        self.console = Console(file=stream, force_terminal=True)
        self._bar = Bar(SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn(bar_width=10),
                        MofNCompleteColumn(), TimeElapsedColumn(), _Remaining(),
                        TextColumn("{task.fields[now]}", markup=False,
                                   table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1)),
                        console=self.console, transient=True, redirect_stdout=False, redirect_stderr=False,
                        refresh_per_second=4, expand=True)
        self._delay = DELAY if delay is None else delay
        self._lock = threading.RLock()
        self._tasks = []  # (rich task id, [item]) of the open tasks, innermost last
        self._timer = None
        self._shown = False

    @contextlib.contextmanager
    def task(self, what: str, total: Optional[int] = None) -> Iterator["Display"]:
        with self._lock:
            self._tasks.append((self._bar.add_task(terminal_safe(what), total=total, now="", done_at=None), [""]))
            if len(self._tasks) == 1:
                self._begin()
        try:
            with reporting(self):
                yield self
        finally:
            with self._lock:
                task_id, _ = self._tasks.pop()
                self._bar.remove_task(task_id)
                if not self._tasks:
                    self._end()

    def expect(self, total: int) -> None:
        with self._lock:
            if self._tasks:
                self._bar.update(self._tasks[-1][0], total=total)

    def item(self, name: str) -> None:
        with self._lock:
            if self._tasks:
                task_id, item = self._tasks[-1]
                item[0] = terminal_safe(name)
                self._bar.update(task_id, now=item[0], refresh=self._shown)

    def step(self, text: str) -> None:
        with self._lock:
            if self._tasks:
                task_id, item = self._tasks[-1]
                now = terminal_safe(text)
                self._bar.update(task_id, now=f"{item[0]}: {now}" if item[0] else now, refresh=self._shown)

    def advance(self, items: int = 1) -> None:
        with self._lock:
            if self._tasks:
                task_id = self._tasks[-1][0]
                elapsed = next(t.elapsed for t in self._bar.tasks if t.id == task_id)
                self._bar.update(task_id, advance=items, done_at=elapsed, refresh=self._shown)

    def note(self, text: str) -> None:
        self.console.print(Text(terminal_safe(text)), soft_wrap=True)

    def lines(self, stream: TextIO) -> TextIO:
        return SafeStream(_Above(self.console))

    def _begin(self) -> None:
        if self._delay <= 0:
            self._show()
        else:
            self._timer = threading.Timer(self._delay, self._show)
            self._timer.daemon = True
            self._timer.start()

    def _show(self) -> None:
        with self._lock:
            if self._tasks and not self._shown:
                self._bar.start()
                self._shown = True

    def _end(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._shown:
            self._bar.stop()
            self._shown = False


class _Above:
    """A text stream whose complete lines the console prints above the live display (the display redraws below)."""

    def __init__(self, console):
        self.console = console
        self.pending = ""

    def write(self, text: str) -> int:
        *lines, self.pending = (self.pending + text).split("\n")
        for line in lines:
            self.console.print(Text(line), soft_wrap=True)
        return len(text)

    def flush(self) -> None:
        pass


class _Remaining(ProgressColumn):
    """`ETA 0:01:20` once the total is known and an item is done: the time the whole task takes at the mean time
    per item done, less the time spent, so it counts down between items (rich's own estimate waits for two items,
    and a theorem or a check can take minutes)."""

    def render(self, task) -> Text:
        done_at = task.fields.get("done_at")
        if task.total is None or not task.completed or done_at is None or task.elapsed is None:
            return Text("")
        left = max(0.0, done_at / task.completed * task.total - task.elapsed)
        minutes, seconds = divmod(int(left), 60)
        hours, minutes = divmod(minutes, 60)
        return Text(f"ETA {hours:d}:{minutes:02d}:{seconds:02d}", style="progress.remaining")
