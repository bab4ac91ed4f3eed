"""The MCP server's worker pool: each tool call runs in a worker process of its own, killed past the call's limit."""

from __future__ import annotations

import threading

from prunecheck.checker.commands.mcp_tools import Limits, run_tool
from prunecheck.checker.commands.workers import DIED, Worker


class Pool:
    """At most `size` calls run at once, each alone in a fresh-interpreter worker (z3's state is per process, so
    calls share none); a worker is reused by later calls and replaced when it is killed or dies."""

    def __init__(self, size: int):
        self.slots = threading.BoundedSemaphore(size)
        self.lock = threading.Lock()
        self.idle = []
        self.busy = set()
        self.closed = self.killed = False

    def call(self, tool: str, limits: Limits, arguments: dict) -> tuple:
        """run_tool's answer (status, text, document), or ("error", line, None) when the call outlives
        limits.seconds or its worker dies."""
        return self.run(run_tool, (tool, limits, arguments), limits.seconds)

    def run(self, function, args: tuple, seconds: float) -> tuple:
        """function(*args) in a worker, killed after `seconds`: its answer, or ("error", line, None)."""
        with self.slots:
            worker, stopped = self._take(), threading.Event()
            timer = threading.Timer(seconds, lambda: (stopped.set(), worker.process.kill()))
            timer.start()
            try:
                answer = worker.run(function, args)
            finally:
                timer.cancel()
            if answer is None:
                with self.lock:
                    self.busy.discard(worker)
                worker.close(kill=True)
                if stopped.is_set():
                    return "error", (f"prunecheck: error: the call exceeded this server's limit of {seconds:g} s "
                                     "per call; ask for a smaller depth, spans or rlimit"), None
                if self.killed:
                    return "error", "prunecheck: interrupted: the server is stopping", None
                return "error", f"prunecheck: internal error: {DIED}", None
            self._give(worker)
            if not answer[0]:
                return "error", f"prunecheck: internal error: {answer[1]}", None
            return answer[1]

    def _take(self) -> Worker:
        with self.lock:
            worker = self.idle.pop() if self.idle else None
        worker = worker or Worker()
        with self.lock:
            self.busy.add(worker)
        return worker

    def _give(self, worker: Worker) -> None:
        with self.lock:
            self.busy.discard(worker)
            if not self.closed:
                self.idle.append(worker)
                return
        worker.close()

    def kill(self) -> None:
        """Kill every worker, busy or idle, at once (the server is interrupted): their calls end, unanswered."""
        self.closed = self.killed = True
        for worker in list(self.busy) + list(self.idle):
            worker.process.kill()

    def close(self) -> None:
        with self.lock:
            self.closed, idle, self.idle = True, self.idle, []
        for worker in idle:
            worker.close()


__all__ = ["Pool"]
