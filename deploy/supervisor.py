"""A small supervisor that starts, stops and restarts the processes of the production topology."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO

from deploy.topology import MULTIPROC_ENV, ROOT, ProcessSpec
from shared.settings import child_environment

logger = logging.getLogger(__name__)


class Topology:
    """Starts, stops, signals and (when asked) restarts the processes of `specs`.

    Each process runs in a session of its own, logs to `log_dir/<name>.log` and leaves its pid in
    `log_dir/<name>.pid`. Signals go to a process's main process (gunicorn's master, dramatiq's
    parent), which passes them on once; a whole group is killed only when it outlives `stop`.
    """

    def __init__(
        self, specs: list[ProcessSpec], log_dir: str | Path, *, restart_on_death: bool = False
    ) -> None:
        self.specs = {spec.name: spec for spec in specs}
        self.log_dir = Path(log_dir)
        self.restart_on_death = restart_on_death
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.restarts: dict[str, int] = dict.fromkeys(self.specs, 0)
        self._logs: dict[str, IO[bytes]] = {}
        self._stopping = threading.Event()
        self._lock = threading.RLock()
        self._watcher: threading.Thread | None = None

    def start(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._stopping.clear()
        for name in self.specs:
            self._spawn(name, fresh=True)
        if self.restart_on_death and self._watcher is None:
            self._watcher = threading.Thread(target=self._watch, name="topology-watch", daemon=True)
            self._watcher.start()

    def _spawn(self, name: str, *, fresh: bool = False) -> None:
        spec = self.specs[name]
        metrics_dir = spec.env.get(MULTIPROC_ENV)
        if metrics_dir:
            # A previous run's samples would add to this one's; a restarted process's predecessors'
            # counters stay, so the group's totals never go down.
            if fresh:
                shutil.rmtree(metrics_dir, ignore_errors=True)
            Path(metrics_dir).mkdir(parents=True, exist_ok=True)
        with self._lock:
            log = self._logs.get(name) or (self.log_dir / f"{name}.log").open("ab")
            self._logs[name] = log
            proc = subprocess.Popen(
                spec.argv,
                env=child_environment({"PYTHONPATH": str(ROOT), **spec.env}),
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            self.procs[name] = proc
            (self.log_dir / f"{name}.pid").write_text(f"{proc.pid}\n")
        logger.info("started %s (pid %s)", name, proc.pid)

    def _watch(self) -> None:
        while not self._stopping.wait(0.5):
            with self._lock:
                dead = [n for n, p in self.procs.items() if p.poll() is not None]
                for name in dead:
                    logger.warning("%s exited with %s; starting it again", name, self.procs[name].returncode)
                    self.restarts[name] += 1
                    self._spawn(name)

    def kill(self, name: str, sig: int = signal.SIGTERM) -> None:
        """Send `sig` to the main process of `name`."""
        proc = self.procs[name]
        if proc.poll() is None:
            proc.send_signal(sig)

    def wait_exit(self, name: str, timeout_s: float) -> int:
        return self.procs[name].wait(timeout=timeout_s)

    def _stop_one(self, name: str, timeout_s: float) -> None:
        proc = self.procs.get(name)
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            logger.warning("%s did not stop within %ss; killing it", name, timeout_s)
        # Whatever the main process left behind in its session goes too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        (self.log_dir / f"{name}.pid").unlink(missing_ok=True)

    def restart(self, name: str, timeout_s: float = 30) -> None:
        """Stop `name` gracefully (SIGTERM, then SIGKILL after `timeout_s`) and start it again."""
        with self._lock:
            self._stop_one(name, timeout_s)
            self._spawn(name)

    def stop(self, timeout_s: float = 30) -> None:
        """SIGTERM to every main process at once, then SIGKILL to what is left after `timeout_s`."""
        self._stopping.set()
        if self._watcher is not None:
            self._watcher.join()
            self._watcher = None
        with self._lock:
            for proc in self.procs.values():
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + timeout_s
            for name in list(self.procs):
                self._stop_one(name, max(0.0, deadline - time.monotonic()))
            self.procs.clear()
            for log in self._logs.values():
                log.close()
            self._logs.clear()

    def log(self, name: str) -> str:
        return (self.log_dir / f"{name}.log").read_text(errors="replace")

    def wait_ready(self, url: str, timeout_s: float = 60) -> None:
        """Poll `url` until it answers 200; fail early when a process has died."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            dead = [n for n, p in self.procs.items() if p.poll() is not None]
            if dead and not self.restart_on_death:
                tail = "\n".join(f"--- {n}\n{self.log(n)[-2000:]}" for n in dead)
                raise RuntimeError(f"{', '.join(dead)} exited before {url} was ready:\n{tail}")
            with (
                contextlib.suppress(urllib.error.URLError, OSError),
                urllib.request.urlopen(url, timeout=2) as response,
            ):
                if response.status == 200:
                    return
            time.sleep(0.2)
        raise TimeoutError(f"{url} was not ready within {timeout_s}s")

    def __enter__(self) -> Topology:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
