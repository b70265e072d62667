"""The one description of the production process layout, and the commands that run its processes in place.

`process_specs(settings)` names every process of the production topology with its real entry point
(gunicorn with deploy/gunicorn.conf.py, the `dramatiq` CLI per queue pool, the maintenance module)
and the environment that rebuilds `settings` in it. `make up`, the compose and Kubernetes files'
consistency test, and the test harnesses all start from it, so none of them can drift; the supervisor
that runs them together is deploy/supervisor.py.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

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
