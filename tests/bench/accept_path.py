"""The accept path on the production topology beside a raw loop of the same three operations.

    python -m tests.bench.accept_path [--uploads 40] [--clients 1,8,32] [--backlog 100000]

The gateway is gunicorn (deploy/gunicorn.conf.py defaults) on a private PostgreSQL, Redis and S3 server
(tests/chaos/servers.py), with no worker consuming: what is measured is an upload's way to `202`.
Each upload is a distinct 1 MB PDF. The raw baseline does what an accepted upload must do, without the
service: put the object with boto3, insert the document, job, event and outbox rows with SQLAlchemy,
and push a message on a Redis list, in a loop, with the same number of client threads.

Beside each level's throughput: the machine's CPU per upload (every process, clients included, from
/proc/stat) and the gateway's own (its gunicorn processes). Last, the accept path of a tenant with a
backlog of queued jobs (rows inserted with SQL, counters kept consistent) beside a new tenant's, at
8 clients: what an upload costs must not grow with the backlog.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import boto3
import httpx
import redis
from botocore.config import Config

from deploy import topology
from shared.models import Document, Job, JobEvent, OutboxMessage
from shared.settings import Settings
from tests.bench import accept_backlog
from tests.chaos.cluster import Cluster
from tests.support.pdfs import text_pdf

MB = 1024 * 1024
CLIENTS = (1, 8, 32)
BACKLOG_JOBS = 100_000
BACKLOG_CLIENTS = 8
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Throughput:
    """One level of concurrency: how many operations, how long, and each one's latency."""

    clients: int
    latencies_s: tuple[float, ...]
    wall_s: float
    # CPU seconds spent meanwhile by the whole machine, by the run's own processes (clients, gateway,
    # servers) and by the gateway alone.
    machine_cpu_s: float = 0.0
    run_cpu_s: float = 0.0
    gateway_cpu_s: float = 0.0

    def cpu_ms(self, seconds: float) -> float:
        """`seconds` of CPU per operation, in ms."""
        return 1000 * seconds / len(self.latencies_s)

    @property
    def per_s(self) -> float:
        return len(self.latencies_s) / self.wall_s

    def percentile_ms(self, p: float) -> float:
        ordered = sorted(self.latencies_s)
        return 1000 * ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


@dataclass(frozen=True)
class AcceptPath:
    service: list[Throughput]
    raw: list[Throughput]
    pdf_bytes: int
    # At BACKLOG_CLIENTS: a new tenant, and a tenant with `backlog_jobs` queued jobs.
    empty: Throughput | None = None
    backlogged: Throughput | None = None
    backlog_jobs: int = 0


def machine_cpu_s() -> float:
    """CPU seconds the whole machine has spent busy since boot (every state but idle and iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / TICKS


def _processes() -> list[list[str]]:
    """The fields of /proc/<pid>/stat after the command name, for every live process."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.append([entry.name, *(entry / "stat").read_text().rsplit(")", 1)[1].split()])
            except OSError:
                continue
    return found


def group_cpu_s(pgid: int) -> float:
    """CPU seconds spent by the live processes of a process group (a gunicorn master and workers)."""
    return sum(int(f[12]) + int(f[13]) for f in _processes() if int(f[3]) == pgid) / TICKS


def run_cpu_s() -> float:
    """CPU seconds spent by this process and its live descendants: the client threads, the gateway
    and the private servers, without what other work on a shared machine spends meanwhile."""
    procs = _processes()
    children: dict[int, list[int]] = {}
    for f in procs:
        children.setdefault(int(f[2]), []).append(int(f[0]))
    cpu = {int(f[0]): int(f[12]) + int(f[13]) for f in procs}
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total / TICKS


def one_mb_pdfs() -> Callable[[], bytes]:
    """A generator of distinct valid PDFs of 1 MB: a text page and an incompressible comment tail."""
    head = text_pdf(["An upload of one megabyte for the accept-path benchmark."])
    counter = iter(range(10**9))
    lock = threading.Lock()

    def make() -> bytes:
        with lock:
            n = next(counter)
        filler = hashlib.sha256(f"{n}".encode()).hexdigest().encode() * ((MB - len(head)) // 64 + 1)
        return head + b"\n%" + filler[: MB - len(head) - 2]

    return make


def _run(clients: int, count: int, operation: Callable[[], None], gateway_pgid: int = 0) -> Throughput:
    def timed(_: int) -> float:
        started = time.perf_counter()
        operation()
        return time.perf_counter() - started

    with ThreadPoolExecutor(clients) as pool:
        before = machine_cpu_s(), run_cpu_s(), group_cpu_s(gateway_pgid) if gateway_pgid else 0.0
        started = time.perf_counter()
        latencies = tuple(pool.map(timed, range(count)))
        wall = time.perf_counter() - started
        after = machine_cpu_s(), run_cpu_s(), group_cpu_s(gateway_pgid) if gateway_pgid else 0.0
    return Throughput(clients, latencies, wall, *(b - a for a, b in zip(before, after, strict=True)))


def measure_accept_path(
    uploads_per_client: int = 20, clients: tuple[int, ...] = CLIENTS, backlog_jobs: int = BACKLOG_JOBS
) -> AcceptPath:
    """Run both sides at each concurrency; `uploads_per_client` uploads per client thread (at least 40).
    Then, with `backlog_jobs`, a new tenant and a backlogged one at BACKLOG_CLIENTS."""
    workdir = Path(tempfile.mkdtemp(prefix="accept-bench-"))
    # The gateway alone, with the deploy defaults: no worker takes the jobs.
    cluster = Cluster(workdir, None, specs=gateway_only, max_active_jobs=10**7, gateway_workers=2)
    try:
        cluster.start()
        pgid = next(iter(cluster.processes.values())).pid
        _, key = cluster.new_tenant("bench")
        make = one_mb_pdfs()
        # Not timed: each gunicorn worker's first requests open its connections and finish its imports.
        _run(8, 16, _uploader(cluster, key, make))
        service, raw = [], []
        for n in clients:
            count = max(40, n * uploads_per_client)
            service.append(_run(n, count, _uploader(cluster, key, make), pgid))
            raw.append(_run(n, count, _raw_accept(cluster, make)))
        empty = backlogged = None
        if backlog_jobs:
            count = max(40, BACKLOG_CLIENTS * uploads_per_client)
            tenant_id, busy_key = cluster.new_tenant("backlogged")
            accept_backlog.add_backlog(cluster, tenant_id, backlog_jobs)
            _, new_key = cluster.new_tenant("new")
            empty = _run(BACKLOG_CLIENTS, count, _uploader(cluster, new_key, make), pgid)
            backlogged = _run(BACKLOG_CLIENTS, count, _uploader(cluster, busy_key, make), pgid)
        return AcceptPath(service, raw, len(make()), empty, backlogged, backlog_jobs)
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def gateway_only(settings: Settings) -> list[topology.ProcessSpec]:
    return topology.process_specs(settings, pools=())[:1]


def _uploader(cluster: Cluster, key: str, make: Callable[[], bytes]) -> Callable[[], None]:
    local = threading.local()

    def upload() -> None:
        if not hasattr(local, "client"):
            local.client = httpx.Client(
                base_url=cluster.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=120
            )
        response = local.client.post("/v1/documents", files={"file": ("one.pdf", make(), "application/pdf")})
        if response.status_code != 202:
            raise RuntimeError(f"upload answered {response.status_code}: {response.text}")

    return upload


def _raw_accept(cluster: Cluster, make: Callable[[], bytes]) -> Callable[[], None]:
    """The same three operations without the service: object, rows, message."""
    settings = cluster.settings
    s3 = boto3.session.Session().client(
        "s3",
        endpoint_url=settings.s3_endpoint_url,
        region_name=settings.s3_region,
        aws_access_key_id=settings.s3_access_key_id,
        aws_secret_access_key=settings.s3_secret_access_key,
        config=Config(s3={"addressing_style": "path"}, max_pool_connections=64),
    )
    queue = redis.Redis.from_url(settings.broker_url)
    tenant_id, _ = cluster.new_tenant(f"raw-{uuid.uuid4().hex[:6]}")
    assert cluster.db is not None
    db = cluster.db

    def accept() -> None:
        pdf = make()
        document_id = str(uuid.uuid4())
        key = f"documents/{tenant_id}/{document_id}.pdf"
        s3.put_object(Bucket=settings.s3_bucket, Key=key, Body=pdf)
        with db.transaction() as session:
            session.add(
                Document(
                    id=document_id,
                    tenant_id=tenant_id,
                    filename="one.pdf",
                    sha256=hashlib.sha256(pdf).hexdigest(),
                    size_bytes=len(pdf),
                    object_key=key,
                )
            )
            job = Job(tenant_id=tenant_id, document_id=document_id, kind="ingest")
            session.add(job)
            session.flush()
            session.add(
                JobEvent(job_id=job.id, tenant_id=tenant_id, seq=job.seq, type="job.queued", payload={})
            )
            session.add(OutboxMessage(job_id=job.id, stage="validate"))
        queue.rpush("raw-bench:queue", job.id)

    return accept


TABLE_HEADER = (
    "| clients | service: uploads/s | p50 | p99 | CPU / upload: machine | run | gateway "
    "| raw loop: accepts/s | p50 | p99 | CPU / accept: machine | run | service / raw |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
)


def table_rows(result: AcceptPath) -> list[str]:
    return [
        f"| {s.clients} | {s.per_s:.1f} | {s.percentile_ms(50):.0f} ms | {s.percentile_ms(99):.0f} ms "
        f"| {s.cpu_ms(s.machine_cpu_s):.0f} ms | {s.cpu_ms(s.run_cpu_s):.1f} ms "
        f"| {s.cpu_ms(s.gateway_cpu_s):.1f} ms "
        f"| {r.per_s:.1f} | {r.percentile_ms(50):.0f} ms | {r.percentile_ms(99):.0f} ms "
        f"| {r.cpu_ms(r.machine_cpu_s):.0f} ms | {r.cpu_ms(r.run_cpu_s):.1f} ms "
        f"| {100 * s.per_s / r.per_s:.0f}% |"
        for s, r in zip(result.service, result.raw, strict=True)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uploads", type=int, default=20, help="uploads per client thread")
    parser.add_argument("--clients", default=",".join(map(str, CLIENTS)))
    parser.add_argument("--backlog", type=int, default=BACKLOG_JOBS, help="queued jobs (0: skip)")
    args = parser.parse_args()
    result = measure_accept_path(args.uploads, tuple(int(c) for c in args.clients.split(",")), args.backlog)
    print("\n".join([TABLE_HEADER, *table_rows(result), "", *accept_backlog.backlog_rows(result)]))


if __name__ == "__main__":
    main()
