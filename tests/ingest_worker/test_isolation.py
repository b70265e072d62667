"""Tests for run_isolated: results and errors come back; hangs, memory hogs and crashes stay in the child."""

from __future__ import annotations

import ctypes
import inspect
import os
import pickle
import resource
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ingest_worker import isolation, pipeline_errors
from ingest_worker.isolation import ChildTracebackError, run_isolated, stop_idle_children
from ingest_worker.pipeline_errors import (
    EncryptedPdfError,
    MemoryLimitError,
    ParserCrashedError,
    ParserKilledError,
    ParseTimeoutError,
    ProcessingTimeoutError,
)
from shared import errors
from shared.errors import IngestError, PermanentError, StorageUnavailableError, TransientError

MEMORY_MB = 512
GB = 1024**3


# --- What the children run (module level, so a child can import them by name) -----------------


@dataclass(frozen=True)
class Sum:
    total: int
    pid: int


def add(a: int, b: int) -> Sum:
    return Sum(total=a + b, pid=os.getpid())


def own_pid() -> int:
    return os.getpid()


def sleep_forever(pid_file: str | None = None) -> None:
    if pid_file:
        Path(pid_file).write_text(str(os.getpid()))
    time.sleep(3600)


def spin() -> None:
    while True:
        pass


def allocate(gigabytes: int) -> int:
    return len(bytearray(gigabytes * GB))


def allocate_bit_by_bit() -> int:
    blocks = []
    while True:
        blocks.append(bytearray(16 * 1024 * 1024))


def segfault() -> None:
    ctypes.string_at(0)


def kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def raise_error(error: Exception) -> None:
    raise error


class UnpicklableError(Exception):
    def __init__(self, first: str, second: str) -> None:
        super().__init__(first)
        self.second = second


def raise_unpicklable() -> None:
    raise UnpicklableError("one", "two")


# --- Tests --------------------------------------------------------------------------------------


def test_a_result_comes_back() -> None:
    # Given a function that returns a dataclass
    # When it runs isolated
    result = run_isolated(add, 2, b=3, timeout_s=10, memory_mb=MEMORY_MB)

    # Then its result comes back, computed in another process
    assert result.total == 5
    assert result.pid != os.getpid()


def test_a_child_serves_one_call_after_another() -> None:
    # Given a fresh child (one that earlier tests used may be about to retire), warmed up by a call
    stop_idle_children()
    first = run_isolated(own_pid, timeout_s=10, memory_mb=MEMORY_MB)

    # When the next call comes
    second = run_isolated(own_pid, timeout_s=10, memory_mb=MEMORY_MB)

    # Then the same child answers it (no new interpreter per call)
    assert first == second


def test_a_classified_error_crosses_with_its_class_code_and_message() -> None:
    # Given a function raising one of our errors with its own message
    # When it runs isolated
    with pytest.raises(EncryptedPdfError) as caught:
        run_isolated(raise_error, EncryptedPdfError("Page 3 is encrypted."), timeout_s=10, memory_mb=512)

    # Then the caller gets the same class, code and message, the child's traceback as the cause
    assert caught.value.code == "encrypted"
    assert caught.value.message == "Page 3 is encrypted."
    assert isinstance(caught.value.__cause__, ChildTracebackError)
    assert "raise_error" in str(caught.value.__cause__)


def test_a_code_and_retry_after_given_at_raise_time_cross_too() -> None:
    # Given a transient error raised with its own code and Retry-After
    error = StorageUnavailableError("Storage is down.", code="storage_down", retry_after_s=7.5)

    # When / Then both survive the process boundary
    with pytest.raises(StorageUnavailableError) as caught:
        run_isolated(raise_error, error, timeout_s=10, memory_mb=MEMORY_MB)
    assert (caught.value.code, caught.value.retry_after_s) == ("storage_down", 7.5)


@pytest.mark.parametrize(
    "error_class",
    [
        cls
        for module in (errors, pipeline_errors)
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if issubclass(cls, IngestError) and cls.__module__ == module.__name__
    ],
)
def test_every_error_class_pickles_with_its_code(error_class: type[IngestError]) -> None:
    # Given any of our errors, with its default message
    error = error_class()

    # When it is pickled and unpickled (as it crosses the process boundary)
    copy = pickle.loads(pickle.dumps(error))

    # Then its class, code and message are kept
    assert (type(copy), copy.code, copy.message) == (error_class, error.code, error.message)


def test_an_error_that_does_not_pickle_arrives_as_a_runtime_error_naming_it() -> None:
    # Given an exception whose constructor pickle cannot call again
    # When / Then the caller still learns what it was
    with pytest.raises(RuntimeError, match="UnpicklableError: one"):
        run_isolated(raise_unpicklable, timeout_s=10, memory_mb=MEMORY_MB)


def test_a_child_that_sleeps_for_ever_is_stopped_in_time_as_a_transient_timeout() -> None:
    # Given a function that waits without using the CPU (like a starved machine)
    started = time.monotonic()

    # When it runs with a two-second limit
    with pytest.raises(ProcessingTimeoutError) as caught:
        run_isolated(sleep_forever, timeout_s=2, memory_mb=MEMORY_MB)

    # Then it is stopped at the limit (2.0 s measured; five times that bounds "not hung"), and the
    # error says "retry later"
    assert 2 <= time.monotonic() - started < 10
    assert isinstance(caught.value, TransientError)
    assert caught.value.code == "timeout"


def test_a_child_busy_for_its_whole_limit_fails_permanently_as_parse_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a function that keeps the CPU busy for ever (like a parser looping on a hostile file), on
    # a machine that may be five times oversubscribed: the spinning child then gets a fifth of a core,
    # under the service's "busy" share of half its limit, so the share is lowered to a tenth here
    monkeypatch.setattr(isolation, "_BUSY_SHARE", 0.1)
    started = time.monotonic()

    # When it runs with a two-second limit
    with pytest.raises(ParseTimeoutError) as caught:
        run_isolated(spin, timeout_s=2, memory_mb=MEMORY_MB)

    # Then it is stopped in time (2.0 s measured), and retrying the same input is pointless
    assert time.monotonic() - started < 10
    assert isinstance(caught.value, PermanentError)
    assert caught.value.code == "parse_timeout"


def test_ten_gigabytes_are_refused_by_the_cap_and_the_caller_lives_on() -> None:
    # Given the caller's peak memory so far
    peak_before_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    # When an isolated function asks for 10 GB under a 512 MB cap
    with pytest.raises(MemoryLimitError) as caught:
        run_isolated(allocate, 10, timeout_s=30, memory_mb=MEMORY_MB)

    # Then the cap stops it with a permanent, classified error; the caller's memory did not grow
    assert caught.value.code == "memory_limit_exceeded"
    assert isinstance(caught.value, PermanentError)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before_kb < 50 * 1024
    # And the next call is served normally
    assert run_isolated(add, 1, 1, timeout_s=10, memory_mb=MEMORY_MB).total == 2


def test_memory_taken_bit_by_bit_is_stopped_at_the_cap() -> None:
    # Given a function that keeps allocating 16 MB blocks
    # When / Then it is stopped at the cap, quickly (0.5 s measured, 1.2 s on a loaded machine)
    started = time.monotonic()
    with pytest.raises(MemoryLimitError):
        run_isolated(allocate_bit_by_bit, timeout_s=30, memory_mb=MEMORY_MB)
    assert time.monotonic() - started < 10


def test_a_crashing_child_is_a_permanent_parser_crash_and_is_replaced() -> None:
    # Given a warm child
    before = run_isolated(own_pid, timeout_s=10, memory_mb=MEMORY_MB)

    # When a call makes the child segfault
    with pytest.raises(ParserCrashedError) as caught:
        run_isolated(segfault, timeout_s=10, memory_mb=MEMORY_MB)

    # Then the caller gets a permanent error, and a new child serves the next call
    assert isinstance(caught.value, PermanentError)
    after = run_isolated(own_pid, timeout_s=10, memory_mb=MEMORY_MB)
    assert after != before


def test_a_child_killed_from_outside_is_a_transient_error() -> None:
    # Given a child that gets SIGKILLed by someone else (as the out-of-memory killer would)
    # When / Then the caller is told to retry
    with pytest.raises(ParserKilledError) as caught:
        run_isolated(kill_self, timeout_s=10, memory_mb=MEMORY_MB)
    assert isinstance(caught.value, TransientError)


class WorkerTimeLimitError(Exception):
    """Stands in for Dramatiq's TimeLimitExceeded, which it raises asynchronously in the worker thread."""


def test_an_exception_raised_into_the_waiting_thread_stops_the_child(tmp_path: Path) -> None:
    # Given a thread waiting on a child that sleeps for ever
    pid_file = tmp_path / "pid"
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            run_isolated(sleep_forever, str(pid_file), timeout_s=60, memory_mb=MEMORY_MB)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    while not pid_file.exists() or not pid_file.read_text():
        time.sleep(0.05)
    child_pid = int(pid_file.read_text())

    # When the worker's time limit fires in that thread, the way Dramatiq raises it
    raise_in = ctypes.pythonapi.PyThreadState_SetAsyncExc
    assert thread.ident is not None
    raise_in(ctypes.c_ulong(thread.ident), ctypes.py_object(WorkerTimeLimitError))
    thread.join(timeout=5)

    # Then the wait ends at once with that exception, and the child is gone
    assert not thread.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], WorkerTimeLimitError)
    with pytest.raises(ProcessLookupError):
        os.kill(child_pid, 0)


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError):
        run_isolated(add, 1, 2, timeout_s=0, memory_mb=MEMORY_MB)
