"""Run a function in a child process with a time limit and a memory cap, so no file can sink a worker."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from ingest_worker.pipeline_errors import (
    ParserCrashedError,
    ParserKilledError,
    ParseTimeoutError,
    ProcessingTimeoutError,
)

logger = logging.getLogger(__name__)

R = TypeVar("R")

# Children are fresh interpreters started with `-c`, never forks of the worker (whose threads, locks and
# database and broker sockets a fork would copy mid-use). multiprocessing's "spawn" and "forkserver"
# would do too, but both re-run the parent's __main__ in every child: about 2 s a call under
# deploy/embedded.py. A child serves call after call, so the interpreter and pypdf load once (0.14 s);
# a warm call costs about 0.1 ms.
_BOOT = (
    "import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
    "from ingest_worker.isolation_child import serve; serve(int(sys.argv[2]), int(sys.argv[3]))"
)
# Idle children kept for the next call; more only linger, since concurrency is bounded by worker threads.
_MAX_IDLE = 4
# The waiting thread wakes this often: Dramatiq's time limit and shutdown reach a thread only between
# Python bytecodes, so one long wait inside a C call would make them late.
_POLL_S = 0.2
# A child that used at least this share of its wall-clock limit as CPU time was busy with its input, so
# the same input would time out again; one that mostly waited was starved by a loaded machine.
_BUSY_SHARE = 0.5
# Signals a process raises on itself when its code faults; any other death came from outside.
_FAULT_SIGNALS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT, signal.SIGTRAP}


class ChildTracebackError(Exception):
    """The traceback of an error raised in the child, attached as the `__cause__` of the re-raised error."""


def run_isolated(fn: Callable[..., R], /, *args: Any, timeout_s: float, memory_mb: int, **kwargs: Any) -> R:
    """`fn(*args, **kwargs)` run in a child process with at most `memory_mb` of address space.

    Returns what `fn` returns, or re-raises what it raises with its class, code and message (the
    child's traceback becomes the `__cause__`). `fn` must be importable by name; its arguments and
    result must pickle. To pass `fn` a keyword named `timeout_s` or `memory_mb`, bind it with
    `functools.partial`. Raises:

    - MemoryLimitError when `fn` runs out of memory under the cap;
    - ParseTimeoutError after `timeout_s` s when the child was busy for most of them (its input keeps it
      working), ProcessingTimeoutError (transient) when it mostly waited (a starved machine);
    - ParserCrashedError when the child died of a fault (SIGSEGV, SIGABRT...) or exited without answering;
    - ParserKilledError (transient) when a signal from outside ended it (the out-of-memory killer).
    """
    if timeout_s <= 0 or memory_mb <= 0:
        raise ValueError("timeout_s and memory_mb must be positive")
    request = pickle.dumps((fn, args, kwargs, memory_mb * 1024 * 1024, timeout_s))
    child = _POOL.take()
    answered = retire = False
    try:
        cpu_before_s = _cpu_seconds(child.process.pid)
        try:
            child.requests.send_bytes(request)
        except OSError:
            raise _died(child) from None
        kind, value, remote_traceback, retire = _await_answer(child, timeout_s, cpu_before_s)
        answered = True
    finally:
        # Also reached when the worker's own time limit or shutdown interrupts the wait.
        if answered and not retire:
            _POOL.give(child)
        else:
            child.stop(kill=not answered)
    if kind == "ok":
        return value
    if remote_traceback:
        raise value from ChildTracebackError(remote_traceback)
    raise value


@dataclass
class _Child:
    """A child interpreter and the two pipes a call goes through."""

    process: subprocess.Popen[bytes]
    requests: Connection
    answers: Connection

    @classmethod
    def start(cls) -> _Child:
        request_r, request_w = os.pipe()
        answer_r, answer_w = os.pipe()
        command = [sys.executable, "-c", _BOOT, json.dumps(sys.path), str(request_r), str(answer_w)]
        try:
            # A session of its own: the whole group (tesseract too) can be killed at once, and a Ctrl-C
            # meant for the worker's terminal does not land in the middle of a parse.
            process = subprocess.Popen(
                command, pass_fds=(request_r, answer_w), start_new_session=True, stdin=subprocess.DEVNULL
            )
        except BaseException:
            os.close(request_w)
            os.close(answer_r)
            raise
        finally:
            os.close(request_r)
            os.close(answer_w)
        return cls(process, Connection(request_w, readable=False), Connection(answer_r, writable=False))

    def stop(self, *, kill: bool) -> None:
        """Close the pipes (an idle child then exits by itself); with `kill`, SIGKILL its process group."""
        self.requests.close()
        self.answers.close()
        if kill:
            self._kill_group()
        try:
            self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            self._kill_group()
            self.process.wait()

    def _kill_group(self) -> None:
        # Only while the child is unreaped: its pid, and so its group id, cannot have been reused.
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)


class _ChildPool:
    """Idle children of this process, taken by one call at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Child] = []

    def take(self) -> _Child:
        with self._lock:
            while self._idle:
                child = self._idle.pop()
                if child.process.poll() is None:
                    return child
                child.stop(kill=False)
        return _Child.start()

    def give(self, child: _Child) -> None:
        with self._lock:
            if len(self._idle) < _MAX_IDLE:
                self._idle.append(child)
                return
        child.stop(kill=False)

    def close(self) -> None:
        """Stop every idle child (each exits once its pipes close)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for child in idle:
            child.stop(kill=False)

    def forget(self) -> None:
        """Drop the children without touching them: after a fork they belong to the parent process."""
        self._lock = threading.Lock()
        self._idle = []


_POOL = _ChildPool()


def stop_idle_children() -> None:
    """Stop the children kept for the next calls: the next call starts a fresh one."""
    _POOL.close()


os.register_at_fork(after_in_child=_POOL.forget)


def _await_answer(child: _Child, timeout_s: float, cpu_before_s: float | None) -> tuple[str, Any, str, bool]:
    deadline = time.monotonic() + timeout_s
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _timed_out(child, timeout_s, cpu_before_s)
        if child.answers.poll(min(remaining, _POLL_S)):
            try:
                answer: tuple[str, Any, str, bool] = pickle.loads(child.answers.recv_bytes())
            except EOFError:
                # The child died before it could answer; its exit status says how.
                raise _died(child) from None
            return answer


def _timed_out(child: _Child, timeout_s: float, cpu_before_s: float | None) -> Exception:
    cpu_after_s = _cpu_seconds(child.process.pid)
    child.stop(kill=True)
    busy_s = None if cpu_before_s is None or cpu_after_s is None else cpu_after_s - cpu_before_s
    logger.info("isolated call stopped after %s s (CPU %s s)", timeout_s, busy_s)
    # Unknown CPU time (no /proc) counts as busy: a child that hangs is far more often stuck on its input.
    if busy_s is None or busy_s >= _BUSY_SHARE * timeout_s:
        return ParseTimeoutError(f"Processing the PDF took longer than its time limit ({timeout_s:g} s).")
    return ProcessingTimeoutError()


def _died(child: _Child) -> Exception:
    child.stop(kill=False)
    code = child.process.returncode
    if code is None or code >= 0:
        logger.warning("isolated child exited with status %s and no answer", code)
        return ParserCrashedError()
    number = -code
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = str(number)
    logger.warning("isolated child died of %s", name)
    if number == signal.SIGXCPU:
        return ParseTimeoutError()
    if number in _FAULT_SIGNALS:
        return ParserCrashedError()
    return ParserKilledError()


def _cpu_seconds(pid: int) -> float | None:
    """CPU time of a child and of the children it has waited for (tesseract), from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            # Fields after the parenthesised command name; utime, stime, cutime and cstime are 14-17.
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")
