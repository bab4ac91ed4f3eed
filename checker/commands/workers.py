"""Batch worker processes that never import the caller's main module: fresh interpreters fed pickled jobs on a pipe."""

from __future__ import annotations

import json
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
from typing import Callable, Optional

from prunecheck.symbolic.interrupts import stop_if_interrupted

# The worker's whole program. multiprocessing's spawn and forkserver starts would re-run the caller's __main__ in
# every worker (an unguarded script runs again and its batch dies); this imports only prunecheck, from the caller's
# sys.path (argv[1]), so it finds the same prunecheck and any module a worker function lives in.
_BOOT = ("import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
         "from prunecheck.checker.commands.workers import serve; serve()")
DIED = "the checker process died (crash or out of memory)"
POLL = 0.1  # seconds between looks for an interrupt while waiting for workers


def serve() -> None:
    """The worker loop: read (function, args) jobs from stdin until it closes, answer each with (True, result) or
    (False, error text) on the original stdout; stray prints go to stderr."""
    import z3

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it then closes or kills us
    z3.set_param("ctrl_c", False)  # z3's own Ctrl-C handler, installed during each query, would take it back
    jobs = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    while True:
        job = _receive(jobs)
        if job is None:
            return
        try:
            function, args = pickle.loads(job)
            answer = pickle.dumps((True, function(*args)))
        except Exception as exc:  # noqa: BLE001 - reported to the parent as this job's failure
            answer = pickle.dumps((False, _one_line(exc)))
        try:
            _send(answers, answer)
        except OSError:  # the parent is gone (interrupted, or killed): nobody waits for the answer
            os._exit(0)  # not return: closing the pipe at exit would complain about it again


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def _send(stream, data: bytes) -> None:
    """One frame: its length, then the pickle; a pickle that cannot be read then never desynchronises the pipe."""
    stream.write(len(data).to_bytes(8, "big") + data)
    stream.flush()


def _receive(stream) -> Optional[bytes]:
    """The next frame, or None at the end of the stream (the other side closed it or died)."""
    head = stream.read(8)
    if len(head) < 8:
        return None
    data = stream.read(int.from_bytes(head, "big"))
    return data if len(data) == int.from_bytes(head, "big") else None


class Worker:
    """One worker process: `run` sends a job and waits for its answer; None if the process died meanwhile."""

    def __init__(self):
        self.process = subprocess.Popen([sys.executable, "-c", _BOOT, json.dumps(sys.path)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def run(self, function: Callable, args: tuple) -> Optional[tuple]:
        try:
            job = pickle.dumps((function, args))
        except Exception as exc:  # noqa: BLE001 - an argument that cannot be sent fails its job only
            return False, f"cannot send the job: {_one_line(exc)}"
        try:
            _send(self.process.stdin, job)
            answer = _receive(self.process.stdout)
        except OSError:
            return None
        return None if answer is None else pickle.loads(answer)

    def close(self, kill: bool = False) -> None:
        if kill:
            self.process.kill()
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self.process.wait()


def run_jobs(keys: list, function: Callable, args: tuple, jobs: int, done: Callable, failed: Callable,
             started: Optional[Callable] = None) -> None:
    """function(key, *args) for every key in min(jobs, len(keys)) worker processes that live for the whole batch;
    done(result) in this thread as results arrive; failed(key, why) for a job whose worker died (only that job is
    lost: the next one gets a fresh worker) or raised; started(key), if given, from another thread as a job is sent.
    An interrupt (a signal, symbolic/interrupts.py) kills the workers and raises Interrupted within POLL seconds."""
    todo, results, crew = queue.Queue(), queue.Queue(), _Crew()
    for key in keys:
        todo.put(key)
    threads = [threading.Thread(target=_drive, args=(todo, results, crew, function, args, started), daemon=True)
               for _ in range(min(jobs, len(keys)))]
    try:
        for thread in threads:
            thread.start()
        for _ in keys:
            _deliver(*_next(results), done, failed)
    except BaseException:
        todo.queue.clear()
        crew.stop()  # each thread, reading its worker's answer, sees the end and reaps it
        raise
    for thread in threads:
        thread.join()


def _next(results: queue.Queue) -> tuple:
    """The next (key, answer), looking for an interrupt every POLL seconds while waiting."""
    while True:
        stop_if_interrupted()
        try:
            return results.get(timeout=POLL)
        except queue.Empty:
            pass


class _Crew:
    """A batch's workers: once stopped, each is killed and no other is started (a thread may be starting one)."""

    def __init__(self):
        self.lock, self.workers, self.stopped = threading.Lock(), [], False

    def hire(self) -> Worker:
        """A new worker; OSError once the crew is stopped."""
        with self.lock:
            if self.stopped:
                raise OSError("the batch was stopped")
            self.workers.append(Worker())
            return self.workers[-1]

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            for worker in self.workers:
                worker.process.kill()


def _drive(todo: queue.Queue, results: queue.Queue, crew: _Crew, function: Callable, args: tuple,
           started: Optional[Callable] = None) -> None:
    """One thread per worker: take jobs until none is left, replacing the worker if it dies."""
    worker = None
    try:
        while True:
            try:
                key = todo.get_nowait()
            except queue.Empty:
                return
            try:
                if started is not None:
                    started(key)
                if worker is None:
                    worker = crew.hire()
                answer = worker.run(function, (key, *args))
            except Exception as exc:  # noqa: BLE001 - never leave the collector waiting for this key
                answer = (False, _one_line(exc))
            if answer is None and worker is not None:
                worker.close(kill=True)
                worker = None
            results.put((key, answer))
    finally:
        if worker is not None:
            worker.close()


def _deliver(key, answer, done: Callable, failed: Callable) -> None:
    if answer is None:
        failed(key, DIED)
    elif answer[0]:
        done(answer[1])
    else:
        failed(key, f"the checker process failed: {answer[1]}")
