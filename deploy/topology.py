"""The one description of the production process layout, and a small supervisor that runs it.

`process_specs(settings)` names every process of the production topology with its real entry point
(gunicorn with deploy/gunicorn.conf.py, the `dramatiq` CLI per queue pool, the maintenance module)
and the environment that rebuilds `settings` in it. `make up`, the compose and Kubernetes files'
consistency test, and the test harnesses all start from it, so none of them can drift.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from shared.queue import (
    BACKLOG_SUFFIX,
    QUEUE_BULK,
    QUEUE_BULK_INDEX,
    QUEUE_INDEX,
    QUEUE_INGEST,
    QUEUE_OCR,
    QUEUE_WEBHOOKS,
)
from shared.settings import Settings, child_environment

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
GUNICORN_CONFIG = "deploy/gunicorn.conf.py"
WSGI_APP = "gateway.wsgi:app"
ACTORS_MODULE = "ingest_worker.actors"
MAINTENANCE_MODULE = "ingest_worker.maintenance"
# prometheus_client reads this variable when it is imported: every process of a group (gunicorn's
# workers, a dramatiq pool's worker processes) writes its samples into the group's folder.
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

# Worker pools, one per queue family; a pool takes the backlog lane of its queues too.
POOL_QUEUES: dict[str, tuple[str, ...]] = {
    "worker-ingest": (QUEUE_INGEST, QUEUE_OCR, QUEUE_INGEST + BACKLOG_SUFFIX, QUEUE_OCR + BACKLOG_SUFFIX),
    "worker-index": (QUEUE_INDEX, QUEUE_INDEX + BACKLOG_SUFFIX, QUEUE_BULK_INDEX),
    "worker-bulk": (QUEUE_BULK,),
    "worker-webhooks": (QUEUE_WEBHOOKS,),
}


@dataclass(frozen=True)
class ProcessSpec:
    """One process of the topology: its name, command line and environment (`INGEST_*` and the
    Prometheus folder; the supervisor adds the inherited PATH and the like)."""

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    # Where its Prometheus exposition answers (the gateway: /metrics on its own port).
    metrics_url: str = ""

    @property
    def command(self) -> list[str]:
        """The command line with a plain `python` for the interpreter, as deployment files write it."""
        return ["python", *self.argv[1:]] if self.argv[0] == sys.executable else list(self.argv)


def pool_size(settings: Settings, pool: str) -> tuple[int, int]:
    """(processes, threads) of a worker pool. Without a Qdrant URL the index pool alone opens the
    local folder, which allows one process and is not thread-safe (ARCHITECTURE section 2)."""
    if pool == "worker-index":
        if settings.local_qdrant:
            return 1, 1
        return settings.index_worker_processes, settings.index_worker_threads
    if pool == "worker-webhooks":
        return 1, settings.webhook_worker_threads
    if pool == "worker-bulk":
        return 1, settings.worker_threads
    return settings.worker_processes, settings.worker_threads


def dramatiq_argv(settings: Settings, pool: str) -> list[str]:
    processes, threads = pool_size(settings, pool)
    return [
        sys.executable,
        "-m",
        "dramatiq",
        ACTORS_MODULE,
        "--processes",
        str(processes),
        "--threads",
        str(threads),
        # Each worker process sets up its own logging from the settings (JSON or text).
        "--skip-logging",
        "-Q",
        *POOL_QUEUES[pool],
    ]


def process_specs(settings: Settings, *, pools: tuple[str, ...] | None = None) -> list[ProcessSpec]:
    """Every process of the production topology for `settings`: gateway, worker pools, maintenance.

    Pool `i` exposes its metrics on `settings.metrics_port + i` (0: no worker metrics), so pools that
    share a host never share a port.
    """
    base = settings.to_env()
    metrics_dir = Path(settings.effective_metrics_dir).resolve()
    specs = [
        ProcessSpec(
            "gateway",
            [sys.executable, "-m", "gunicorn", "-c", GUNICORN_CONFIG, WSGI_APP],
            {**base, MULTIPROC_ENV: str(metrics_dir / "gateway")},
            f"http://{settings.host}:{settings.port}/metrics",
        )
    ]
    for i, pool in enumerate(pools if pools is not None else tuple(POOL_QUEUES)):
        port = settings.metrics_port + i if settings.metrics_port else 0
        env = {**base, "INGEST_METRICS_PORT": str(port), MULTIPROC_ENV: str(metrics_dir / pool)}
        url = f"http://{settings.host}:{port}/metrics" if port else ""
        specs.append(ProcessSpec(pool, dramatiq_argv(settings, pool), env, url))
    specs.append(ProcessSpec("maintenance", [sys.executable, "-m", MAINTENANCE_MODULE], dict(base)))
    return specs


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


def run(name: str, settings: Settings | None = None) -> None:
    """Replace this process with the topology's process `name` (one process per host or container,
    run by systemd or the like): `python -m deploy.topology run worker-ingest`."""
    specs = {spec.name: spec for spec in process_specs(settings or Settings.from_env())}
    if name not in specs:
        raise SystemExit(f"no process {name!r}; one of: {', '.join(specs)}")
    spec = specs[name]
    metrics_dir = spec.env.get(MULTIPROC_ENV)
    if metrics_dir:
        shutil.rmtree(metrics_dir, ignore_errors=True)
        Path(metrics_dir).mkdir(parents=True)
    os.chdir(ROOT)
    os.execve(spec.argv[0], spec.argv, child_environment({"PYTHONPATH": str(ROOT), **spec.env}))


def run_workers(settings: Settings | None = None) -> int:
    """Run every worker pool of the topology in the foreground (`make worker`), their output on this
    terminal; SIGTERM or Ctrl-C stops them gracefully. Returns the first non-zero exit status."""
    specs = [s for s in process_specs(settings or Settings.from_env()) if s.name.startswith("worker-")]
    procs = []
    for spec in specs:
        print(f"{spec.name}: {' '.join(spec.command)}", flush=True)
        metrics_dir = spec.env.get(MULTIPROC_ENV)
        if metrics_dir:
            shutil.rmtree(metrics_dir, ignore_errors=True)
            Path(metrics_dir).mkdir(parents=True)
        env = child_environment({"PYTHONPATH": str(ROOT), **spec.env})
        procs.append(subprocess.Popen(spec.argv, env=env, cwd=ROOT, start_new_session=True))

    def forward(signum: int, _frame: object) -> None:
        # To each pool's main process only: dramatiq passes it on to its workers once.
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    codes = [proc.wait() for proc in procs]
    return next((code for code in codes if code), 0)


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m deploy.topology", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="print each process of the topology and its command")
    one = sub.add_parser("run", help="run one process of the topology in place of this one")
    one.add_argument("name")
    sub.add_parser("workers", help="run every worker pool in the foreground")
    args = parser.parse_args(argv)
    if args.command == "run":
        run(args.name)
    if args.command == "workers":
        raise SystemExit(run_workers())
    for spec in process_specs(Settings.from_env()):
        print(f"{spec.name:16} {' '.join(spec.command)}")


if __name__ == "__main__":
    main()
