"""Worker and service processes for tests, forked from a server that has already imported the
libraries they load, instead of each started from a bare interpreter.

The kill tests start a process, kill it, and start another, dozens of times a run (`dramatiq` pools in
tests/e2e/test_recovery.py and the OCR-range tests, `make run` in test_vectorstore_sigkill.py). Each
start spent about 4.4 s of its 4.9 s of imports on the same third-party libraries (sqlalchemy 1.2 s,
qdrant-client 0.8 s, redis, pypdf...: `python -X importtime`, 2 cores), CPU that the suite's other
workers wait for. The server imports those once, and never the project's own modules, which read their
settings from the environment as they are imported. For each request it forks a child that takes the
request's environment, folder and log, and runs its command as `python` would, in a session of its
own, so `os.killpg(process.pid, ...)` reaches its children too (as `start_new_session=True` does).

The child is the server's, not the test's: `Forked.poll` and `wait` ask the server, which reaps it.

    process = spawn(["-m", "dramatiq", "ingest_worker.actors"], env=env, cwd=ROOT, log=path)
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import runpy
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# What the project's processes import, and what their imports cost. Only libraries that read nothing
# from the environment while importing.
PRELOAD = (
    "sqlalchemy",
    "sqlalchemy.orm",
    "sqlalchemy.dialects.postgresql.psycopg2",
    "sqlalchemy.dialects.sqlite",
    "psycopg2",
    "qdrant_client",
    "qdrant_client.models",
    "redis",
    "pika",
    "dramatiq",
    "dramatiq.cli",
    "dramatiq.brokers.redis",
    "dramatiq.brokers.rabbitmq",
    "pypdf",
    "pypdfium2",
    "PIL.Image",
    "httpx",
    "requests",
    "numpy",
    "marshmallow",
    "flask",
    "waitress",
    "prometheus_client",
    "yaml",
)


def _run(request: dict[str, Any]) -> None:
    """In the forked child: become the request's process, run its command, and exit."""
    code = 1
    try:
        os.setsid()
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        argv: list[str] = request["argv"]
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            sys.path[0] = request["cwd"]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path[0] = str(Path(argv[0]).resolve().parent)
            runpy.run_path(argv[0], run_name="__main__")
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if not isinstance(stop.code, int | None):
            print(stop.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)


def serve() -> None:
    """The server: preload, then answer one JSON line per request line on stdin."""
    for name in PRELOAD:
        importlib.import_module(name)
    # A fork copies only the calling thread: the libraries must not have started any.
    assert threading.active_count() == 1, threading.enumerate()
    exits: dict[int, int] = {}
    for line in sys.stdin:
        request = json.loads(line)
        while True:  # reap whatever has exited
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            exits[pid] = os.waitstatus_to_exitcode(status)
        if request["op"] == "spawn":
            pid = os.fork()
            if pid == 0:
                _run(request)
            answer: dict[str, Any] = {"pid": pid}
        else:
            answer = {"returncode": exits.get(request["pid"])}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


def _die_with_parent() -> None:
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class ForkServer:
    process: subprocess.Popen[str]
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def start(cls) -> ForkServer:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.forkserver"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=_die_with_parent,
        )
        return cls(process)

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            stdin, stdout = self.process.stdin, self.process.stdout
            assert stdin is not None and stdout is not None
            stdin.write(json.dumps(request) + "\n")
            stdin.flush()
            line = stdout.readline()
        if not line:
            raise RuntimeError(f"the fork server exited ({self.process.poll()})")
        answer: dict[str, Any] = json.loads(line)
        return answer


@dataclass
class Forked:
    """The part of `subprocess.Popen` the tests use, for a child of the fork server."""

    pid: int
    server: ForkServer
    returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.ask({"op": "poll", "pid": self.pid})["returncode"]
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
            time.sleep(0.05)
        return code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


_server: ForkServer | None = None
_server_lock = threading.Lock()


def spawn(argv: list[str], *, env: dict[str, str], cwd: Path, log: Path) -> Forked:
    """Run `python *argv` (`["-m", module, ...]` or `[script, ...]`) with exactly `env`, in `cwd`,
    its output appended to `log`, in a new session; forked from this test process's server."""
    global _server
    with _server_lock:
        if _server is None or _server.process.poll() is not None:
            _server = ForkServer.start()
        server = _server
    answer = server.ask({"op": "spawn", "argv": argv, "env": env, "cwd": str(cwd), "log": str(log)})
    return Forked(answer["pid"], server)


if __name__ == "__main__":
    serve()
