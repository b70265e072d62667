"""The production topology as real processes on private servers: the service the failure matrix breaks.

PostgreSQL, Redis and `weed mini` of its own; the processes of deploy/topology.py (the gunicorn
gateway, the ingest pool, the single-threaded pool owning the local Qdrant folder, the maintenance
loop), each in a session of its own so one can be SIGKILLed with its children; and the tests'
OpenAI-compatible embeddings server, which a scenario can make fail.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from deploy import topology
from deploy.supervisor import Topology
from deploy.topology import ProcessSpec
from shared.db import Database, migrate
from shared.settings import Settings
from shared.tenants import create_tenant
from tests.chaos.servers import PrivatePostgres, PrivateRedis, RestartableS3
from tests.support.openai_server import OpenAIServer
from tests.support.ports import free_port
from tests.support.rabbitmq_server import RabbitNode, running_rabbitmq

ROOT = Path(__file__).resolve().parents[2]
# The worker pools of the topology the failure matrix breaks (bulk and webhooks have no work here).
POOLS = ("worker-ingest", "worker-index")
INGEST, INDEX = POOLS


def process_specs(settings: Settings, *, plugins: tuple[str, ...] = (), **env: str) -> list[ProcessSpec]:
    """The production processes for `settings` (deploy/topology.py), the ingest pool loading `plugins`
    beside the actors, with `env` added to its environment (a test plug-in's knobs)."""
    specs = []
    for spec in topology.process_specs(settings, pools=POOLS):
        if spec.name == INGEST and (plugins or env):
            at = spec.argv.index(topology.ACTORS_MODULE) + 1
            spec = dataclasses.replace(
                spec, argv=[*spec.argv[:at], *plugins, *spec.argv[at:]], env={**spec.env, **env}
            )
        specs.append(spec)
    return specs


class Cluster:
    """The servers, the processes and a client of the gateway."""

    def __init__(
        self,
        workdir: Path,
        provider: OpenAIServer | None,
        *,
        specs: Callable[[Settings], list[ProcessSpec]] = process_specs,
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
            model_cache_dir=os.environ.get("INGEST_MODEL_CACHE_DIR", str(ROOT / "var" / "models")),
            log_level="WARNING",
            gateway_workers=1,
            gateway_threads=8,
            worker_processes=1,
            worker_threads=2,
            # Recovery tuned for a test that kills workers every few seconds: short leases and a
            # frequent sweeper, so each kill costs seconds, not the production half minute.
            lease_s=4,
            handoff_stall_s=5,
            redis_heartbeat_timeout_s=5,
            maintenance_interval_s=0.5,
            # A job killed over and over by the matrix is still a good job: it must complete.
            max_recoveries=20,
        ).replace(**{**embedder, **overrides})
        self.topology = Topology(specs(self.settings), workdir / "logs")
        self.db: Database | None = None
        # The private RabbitMQ node when the messages travel through one (see running_cluster).
        self.rabbitmq: RabbitNode | None = None

    # --- servers and processes --------------------------------------------------------------

    def start(self) -> None:
        """Start the servers, then the processes."""
        self.postgres.init()
        self.redis.start()
        self.s3.start()
        migrate(self.settings.database_url)
        self.db = Database(self.settings.database_url)
        self.topology.start()
        self.topology.wait_ready(f"{self.base_url}/healthz")

    @property
    def processes(self) -> dict[str, Any]:
        return self.topology.procs

    def kill(self, name: str) -> None:
        """SIGKILL the process's whole group (its main process and every child), as the OOM killer
        or a lost host would."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.topology.procs[name].pid, signal.SIGKILL)
        self.topology.wait_exit(name, 30)

    def stop_process(self, name: str) -> None:
        """Stop it gracefully (SIGTERM to its main process) and wait for it."""
        self.topology.kill(name, signal.SIGTERM)
        self.topology.wait_exit(name, 60)

    def restart(self, name: str, *, kill: bool = True) -> None:
        """Start it again, SIGKILLed first unless it has already stopped."""
        if kill:
            self.kill(name)
        self.topology.restart(name)

    def stop(self) -> None:
        self.topology.stop()
        if self.db is not None:
            self.db.dispose()
        self.s3.stop()
        self.redis.stop()
        self.postgres.stop()

    def log_tail(self, name: str, lines: int = 40) -> str:
        path = self.workdir / "logs" / f"{name}.log"
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
def running_cluster(workdir: Path, *, broker: str = "redis") -> Iterator[tuple[Cluster, OpenAIServer]]:
    """A started cluster and its embeddings server, stopped with everything they started. On
    `broker="rabbitmq"` the messages travel through a private RabbitMQ node, the tenant cap's slots
    still in the private Redis."""
    with OpenAIServer() as provider, contextlib.ExitStack() as stack:
        overrides: dict[str, Any] = {}
        rabbitmq = None
        if broker == "rabbitmq":
            rabbitmq = stack.enter_context(running_rabbitmq(workdir))
            overrides = {"broker_url": rabbitmq.url}
        cluster = Cluster(workdir, provider, **overrides)
        cluster.rabbitmq = rabbitmq
        if rabbitmq is not None:
            cluster.settings = cluster.settings.replace(tenant_slots_redis_url=cluster.redis.url)
            cluster.topology = Topology(process_specs(cluster.settings), workdir / "logs")
        try:
            cluster.start()
            yield cluster, provider
        finally:
            cluster.stop()
