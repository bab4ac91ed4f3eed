"""Interrupts: SIGINT and SIGTERM mark the run interrupted and stop z3's running queries; the run checks the mark."""

from __future__ import annotations

import contextlib
import signal
import socket
import sys
import threading
import time
from typing import Callable, Optional

from prunecheck.spec.errors import Interrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM)
# z3's words for a query stopped by its own Ctrl-C handler or by Context.interrupt: an interrupt, never a limit.
# (Its `canceled` also means a limit: it is read as an interrupt only once a signal has arrived.)
Z3_INTERRUPTED = ("interrupted from keyboard", "interrupted")
RETRY = 0.05  # seconds between interrupts of a query that is still running after one


class _Run:
    """This process's interrupt state: one command line run at a time."""

    def __init__(self):
        self.signal: Optional[int] = None  # the signal that interrupted the run
        self.committed = False  # the outcome is decided and being written: a signal no longer changes it
        self.installed = False
        self.asking = 0  # queries running on z3's main context (solver.query)
        self.touched = False  # z3's main context was interrupted: settle it before anything else uses it
        self.contexts: list = []  # z3 contexts of their own with a query running (Spacer's)
        self.hooks: list = []  # called in the main thread on a signal (an event loop's: stop its workers)
        self.raising = False  # the handler also raises KeyboardInterrupt, to leave an event loop


_run = _Run()


def interrupted() -> bool:
    """Whether a signal has interrupted the run before its outcome was decided."""
    return _run.signal is not None and not _run.committed


def stop_if_interrupted() -> None:
    """Raise Interrupted if a signal has interrupted the run: long loops call it between their steps."""
    if interrupted():
        raise Interrupted(f"interrupted by {signal.Signals(_run.signal).name}")


def stop_if_said(reason) -> None:
    """Raise Interrupted if z3's reason for an `unknown` says it was interrupted, or a signal has arrived (z3 then
    says `canceled`, a word it also uses for its limits): an interrupt is never read as a limit."""
    if " ".join(str(reason).split()).lower() in Z3_INTERRUPTED:
        raise Interrupted(f"z3: {reason}")
    stop_if_interrupted()


def interrupt(signum: int = signal.SIGINT) -> None:
    """Mark the run interrupted and stop every z3 query running in this process (from any thread). z3's main
    context is interrupted only while a query runs on it: an interrupt it gets idle stays pending, and until its next
    query its simplifier silently gives up (returns terms unsimplified)."""
    if _run.signal is None:
        _run.signal = signum
    if _run.committed:  # the outcome is decided: what is left (writing it) runs to its end
        return
    contexts = list(_run.contexts)
    if _run.asking:
        _run.touched = True
        contexts.append(sys.modules["z3.z3"].main_ctx())
    for context in contexts:
        try:
            context.interrupt()
        except Exception:  # noqa: BLE001 - z3 reports the query it already stopped ("canceled"): nothing to do
            pass


@contextlib.contextmanager
def asking():
    """While inside, a query runs on z3's main context: an interrupt stops it (Interrupted if one came first)."""
    _run.asking += 1
    try:
        stop_if_interrupted()  # after counting the query: a signal from here on interrupts z3 (_watch)
        yield
    finally:
        _run.asking -= 1


def _settle() -> None:
    """A pending interrupt of z3's main context cleared (a query clears it), for whatever this process does next."""
    if _run.touched:
        core = sys.modules["z3.z3"]
        core.Solver(ctx=core.main_ctx()).check()


def commit() -> None:
    """The run's outcome is decided (its output comes next): raise Interrupted if a signal came first; after this,
    a signal no longer changes the outcome, and the output is written whole."""
    stop_if_interrupted()
    _run.committed = True


def handling() -> bool:
    """Whether this process handles SIGINT and SIGTERM itself (then z3's own Ctrl-C handler stays off)."""
    return _run.installed


@contextlib.contextmanager
def interruptible(context):
    """While inside, an interrupt also stops queries on this z3 context (one that is not z3's main context)."""
    stop_if_interrupted()
    _run.contexts.append(context)
    try:
        yield
    finally:
        _run.contexts.remove(context)


@contextlib.contextmanager
def stopping(hook: Callable[[], None]):
    """For a main thread that runs an event loop and no z3: while inside, a signal calls hook() (stop the workers),
    then raises KeyboardInterrupt there to leave the loop; the caller turns it into Interrupted."""
    if interrupted():
        hook()
        stop_if_interrupted()
    _run.hooks.append(hook)
    _run.raising = True
    try:
        yield
    finally:
        _run.hooks.remove(hook)
        _run.raising = bool(_run.hooks)


def _on_signal(signum, frame) -> None:
    """Python's handler, run in the main thread between any two bytecodes (inside z3's callbacks too): it marks the
    run and calls no z3 (_watch interrupts z3's queries, from its own thread)."""
    if _run.signal is None:
        _run.signal = signum
    for hook in list(_run.hooks):
        hook()
    if _run.raising and not _run.committed:
        raise KeyboardInterrupt


def _watch(reader: socket.socket) -> None:
    """The signals' wake-up bytes, read in a thread of its own: a z3 query running in the main thread holds it in
    native code, where Python's handler cannot run until the query ends, so the query is interrupted from here."""
    while True:
        try:
            data = reader.recv(64)
        except OSError:
            return
        if not data:
            return
        signals = [byte for byte in data if byte in SIGNALS]
        if signals:
            interrupt(signals[0])
            for hook in list(_run.hooks):  # also when another handler took the signal (uvicorn's, serving HTTP)
                hook()
            while _run.asking and interrupted():  # a query z3 had not yet begun: it would not see the interrupt
                time.sleep(RETRY)
                interrupt(signals[0])


def _install() -> Callable[[], None]:
    """Handle SIGINT and SIGTERM from now on, with a fresh state; returns the function that undoes both."""
    global _run
    _run = _Run()
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    old_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    watcher = threading.Thread(target=_watch, args=(reader,), name="prunecheck-interrupts", daemon=True)
    watcher.start()
    for s in SIGNALS:
        signal.signal(s, _on_signal)
    _run.installed = True

    def undo() -> None:
        global _run
        for s in SIGNALS:
            signal.signal(s, previous[s] if previous[s] is not None else signal.SIG_DFL)
        signal.set_wakeup_fd(old_fd)
        writer.close()  # the watcher reads the end of the stream and returns
        watcher.join(1)
        reader.close()
        _settle()
        _run = _Run()  # what follows in this process (a library call, the next main()) starts uninterrupted

    return undo


def install() -> None:
    """Handle SIGINT and SIGTERM for the rest of this process (the console script, before anything else runs)."""
    if not _run.installed and threading.current_thread() is threading.main_thread():
        _kept.append(_install())  # its sockets must live as long as the process


_kept: list = []


@contextlib.contextmanager
def handling_signals():
    """While inside: SIGINT and SIGTERM interrupt the run (interrupt()) instead of raising KeyboardInterrupt or
    killing the process. Outside the main thread, or already handled (install()), it changes nothing."""
    if _run.installed or threading.current_thread() is not threading.main_thread():
        yield
        return
    undo = _install()
    try:
        yield
    finally:
        undo()


__all__ = ["Z3_INTERRUPTED", "asking", "commit", "handling", "handling_signals", "install", "interrupt", "interruptible",
           "interrupted", "stop_if_interrupted", "stop_if_said", "stopping"]
