"""The production topology as real processes on private servers: the service the failure matrix breaks.

PostgreSQL, Redis and `weed mini` of its own; a gunicorn gateway, the two `dramatiq` pools of `make
worker` (ingest and OCR; one single-threaded pool owning the local Qdrant folder) and the maintenance
loop, each in a process group of its own so one can be SIGKILLed with its children; and the tests'
OpenAI-compatible embeddings server, which a scenario can make fail.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from shared.db import Database, migrate
from shared.settings import Settings
from shared.tenants import create_tenant
from tests.chaos.servers import PrivatePostgres, PrivateRedis, RestartableS3, free_port, wait_until
from tests.openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ACTORS = ("ingest_worker.actors",)
BACKLOG_OF_INGEST = ("ingest-backlog", "ocr-backlog")


@dataclass(frozen=True)
class ProcessSpec:
    """One production process: its name, command line and environment on top of the service's."""

    name: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()


def process_specs(threads: int = 2, processes: int = 1, plugins: tuple[str, ...] = ()) -> list[ProcessSpec]:
    """The processes of `make gateway`, `make worker` (without a Qdrant URL) and `make maintenance`."""
    dramatiq = (sys.executable, "-m", "dramatiq", *ACTORS, *plugins, "--worker-shutdown-timeout", "5000")
    return [
        ProcessSpec(
            "gateway",
            (str(BIN / "gunicorn"), "-c", str(ROOT / "deploy/gunicorn.conf.py"), "gateway.wsgi:app"),
            (("GUNICORN_WORKERS", "1"), ("GUNICORN_THREADS", "8")),
        ),
        ProcessSpec(
            "ingest",
            (*dramatiq, "-p", str(processes), "-t", str(threads), "-Q", "ingest", "ocr", *BACKLOG_OF_INGEST),
        ),
        ProcessSpec(
            "index",
            (*dramatiq, "-p", "1", "-t", "1", "-Q", "index", "index-backlog"),
        ),
        ProcessSpec("maintenance", (sys.executable, "-m", "ingest_worker.maintenance")),
    ]


class Cluster:
    """The servers, the processes and a client of the gateway."""

    def __init__(
        self,
        workdir: Path,
        provider: OpenAIServer | None,
        *,
        specs: list[ProcessSpec] | None = None,
        **overrides: Any,
    ) -> None:
        self.workdir = workdir
        self.postgres = PrivatePostgres(workdir)
        self.redis = PrivateRedis(workdir)
        self.s3 = RestartableS3(workdir)
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        embedder: dict[str, Any] = {}
        if provider is not None:
            embedder = {
                "embedder": "openai",
                "openai_api_key": provider.api_key,
                "openai_base_url": provider.base_url,
                "openai_dimensions": 384,
            }
        self.settings = Settings(
            data_dir=str(workdir / "data"),
            database_url=self.postgres.url,
            broker_url=self.redis.url,
            storage_backend="s3",
            s3_endpoint_url=self.s3.endpoint_url,
            s3_bucket=self.s3.bucket,
            s3_access_key_id=self.s3.access_key_id,
            s3_secret_access_key=self.s3.secret_access_key,
            qdrant_path=str(workdir / "qdrant"),
            port=self.port,
            # Recovery tuned for a test that kills workers every few seconds: short leases and a
            # frequent sweeper, so each kill costs seconds, not the production half minute.
            lease_s=4,
            handoff_stall_s=5,
            redis_heartbeat_timeout_s=5,
            maintenance_interval_s=0.5,
            # A job killed over and over by the matrix is still a good job: it must complete.
            max_recoveries=20,
        ).replace(**{**embedder, **overrides})
        self.specs = {spec.name: spec for spec in specs or process_specs()}
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.db: Database | None = None

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("INGEST_")}
        env.update(
            PYTHONPATH=str(ROOT),
            OMP_THREAD_LIMIT="1",
            INGEST_MODEL_CACHE_DIR=os.environ.get("INGEST_MODEL_CACHE_DIR", str(ROOT / "var" / "models")),
            INGEST_LOG_LEVEL="WARNING",
        )
        defaults = Settings()
        for name, value in vars(self.settings).items():
            if value != getattr(defaults, name):
                env["INGEST_" + name.upper()] = str(value)
        return env

    # --- servers and processes --------------------------------------------------------------

    def start(self, processes: tuple[str, ...] | None = None) -> None:
        """Start the servers, then the named processes (all by default)."""
        self.postgres.init()
        self.redis.start()
        self.s3.start()
        migrate(self.settings.database_url)
        self.db = Database(self.settings.database_url)
        for name in self.specs if processes is None else processes:
            self.start_process(name)
        if "gateway" in self.processes:
            self.wait_gateway()

    def wait_gateway(self) -> None:
        wait_until(lambda: httpx.get(f"{self.base_url}/healthz", timeout=1).status_code == 200, 60, "gateway")

    def start_process(self, name: str) -> None:
        spec = self.specs[name]
        log = (self.workdir / f"{name}.log").open("ab")
        self.processes[name] = subprocess.Popen(
            spec.argv,
            env={**self.env(), **dict(spec.env)},
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Signal the process's whole group (a SIGKILL takes its worker children too) and reap it."""
        process = self.processes.pop(name, None)
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if sig != signal.SIGKILL:
            # Children of a gracefully stopped group that outlived it.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)

    def restart(self, name: str, sig: int = signal.SIGKILL) -> None:
        self.kill(name, sig)
        self.start_process(name)

    def stop(self) -> None:
        for name in list(self.processes):
            self.kill(name, signal.SIGTERM)
        if self.db is not None:
            self.db.engine.dispose()
        self.s3.stop()
        self.redis.stop()
        self.postgres.stop()

    def log_tail(self, name: str, lines: int = 40) -> str:
        path = self.workdir / f"{name}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    # --- the service's API -------------------------------------------------------------------

    def new_tenant(self, name: str) -> tuple[str, str]:
        """(tenant id, API key) of a new tenant."""
        assert self.db is not None
        with self.db.transaction() as session:
            tenant, key = create_tenant(session, name)
            return tenant.id, key

    def client(self, key: str) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=60)


@contextlib.contextmanager
def running_cluster(workdir: Path) -> Iterator[tuple[Cluster, OpenAIServer]]:
    """A started cluster and its embeddings server, stopped with everything they started."""
    with OpenAIServer() as provider:
        cluster = Cluster(workdir, provider)
        try:
            cluster.start()
            yield cluster, provider
        finally:
            cluster.stop()


def pause(seconds: float) -> None:
    time.sleep(seconds)
