"""The child side of `isolation.run_isolated`: a loop that runs calls under the limits each one brings."""

from __future__ import annotations

import contextlib
import gc
import logging
import math
import pickle
import resource
import traceback
from multiprocessing.connection import Connection
from typing import Any

from ingest_worker.pipeline_errors import MemoryLimitError
from shared.errors import IngestError

# A child retires after this many calls, or once its peak memory passed this share of its cap, so
# memory a parser leaks or fragments never piles up into the next file's budget.
_MAX_CALLS = 100
_RETIRE_AT_CAP_SHARE = 0.5
# The child's own CPU limit lies this far past the wall-clock limit: it matters only when the parent
# is gone and nobody else will stop the child.
_CPU_BACKSTOP_S = 5


def serve(request_fd: int, answer_fd: int) -> None:
    """The child's loop: answer each call sent on `request_fd` on `answer_fd`, until EOF or retirement."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s [isolated]: %(message)s")
    # When the machine runs short of memory, the kernel should kill a parse, not the worker.
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as handle:
        handle.write("1000")
    requests = Connection(request_fd, writable=False)
    answers = Connection(answer_fd, readable=False)
    for calls in range(1, _MAX_CALLS + 1):
        try:
            request = requests.recv_bytes()
        except EOFError:
            return
        (kind, value, remote_traceback), retire = _serve_one(request)
        retire = retire or calls == _MAX_CALLS
        try:
            answer = pickle.dumps((kind, value, remote_traceback, retire))
        except Exception as exc:
            retire = True
            answer = pickle.dumps(("error", TypeError(f"the result does not pickle: {exc}"), "", retire))
        answers.send_bytes(answer)
        if retire:
            return


def _serve_one(request: bytes) -> tuple[tuple[str, Any, str], bool]:
    fn, args, kwargs, memory_bytes, timeout_s = pickle.loads(request)
    own = resource.getrusage(resource.RUSAGE_SELF)
    cpu_limit_s = math.ceil(own.ru_utime + own.ru_stime + timeout_s) + _CPU_BACKSTOP_S
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, resource.RLIM_INFINITY))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit_s, resource.RLIM_INFINITY))
    answer: tuple[str, Any, str] | None = None
    retire = False
    try:
        answer = ("ok", fn(*args, **kwargs), "")
    except Exception as exc:
        if not _caused_by(exc, MemoryError):
            # An error the code did not classify may leave a C library in any state: start afresh.
            retire = not isinstance(exc, IngestError)
            answer = ("error", _portable(exc), traceback.format_exc())
    if answer is None:
        # Out of the except block, the traceback and the frames holding the parse are gone: collect them
        # so there is memory to answer with.
        gc.collect()
        answer, retire = ("error", MemoryLimitError(), ""), True
    return answer, retire or _peak_rss_bytes() > _RETIRE_AT_CAP_SHARE * memory_bytes


def _peak_rss_bytes() -> int:
    """This interpreter's peak resident memory (VmHWM; 0 when unknown).

    Not getrusage's ru_maxrss: the kernel carries that over from the worker, whose memory it measured
    until the exec that started this child.
    """
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether `exc` or an exception in its cause or context chain is a `kind` (libraries rewrap errors)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _portable(exc: Exception) -> Exception:
    """`exc` if it survives pickling, else a RuntimeError that names it."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc
