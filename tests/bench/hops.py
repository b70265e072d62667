"""Stage hop latency on the production processes: how long a job waits between two stages.

    python -m tests.bench.hops [--poll-ms 1000,100,20] [--idle 6] [--burst 24]

For each bound on an idle consumer's polling pause (INGEST_REDIS_POLL_MAX_MS; the `dramatiq`
command's own is 1000 ms), a fresh cluster (tests/chaos/cluster.py: gunicorn, the two `dramatiq`
pools, the maintenance loop, private PostgreSQL, Redis and S3) ingests small text PDFs with the tests'
embeddings server, which answers at once, so the stages are short and the hops show. Idle: one
document at a time. Under load: a burst uploaded at once. A hop is the next stage's `started_at` minus
the previous stage's `finished_at` (the `job_stages` rows). The price of a short bound is what idle
consumers cost Redis: commands per second with nothing to do.
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import redis
from sqlalchemy import select

from shared.models import JobStage
from shared.queue import STAGES
from tests.bench.documents import prose_pages
from tests.chaos.check import wait_final
from tests.chaos.cluster import Cluster
from tests.support.openai_server import OpenAIServer
from tests.support.pdfs import text_pdf

POLL_MS = (1000, 100, 20)


@dataclass(frozen=True)
class Hops:
    """Hop latencies (seconds) at one polling bound, idle and under load, and the idle Redis load."""

    poll_ms: int
    idle_s: tuple[float, ...]
    load_s: tuple[float, ...]
    idle_redis_commands_per_s: float
    burst: int


def percentile_ms(values: tuple[float, ...], p: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def hops_of(cluster: Cluster, job_ids: list[str]) -> list[float]:
    assert cluster.db is not None
    with cluster.db.transaction() as session:
        rows = session.execute(
            select(JobStage.job_id, JobStage.stage, JobStage.started_at, JobStage.finished_at).where(
                JobStage.job_id.in_(job_ids)
            )
        ).all()
    spans = {(job, stage): (start, end) for job, stage, start, end in rows}
    found = []
    for job in job_ids:
        for prev, nxt in itertools.pairwise(STAGES):
            if (job, prev) in spans and (job, nxt) in spans:
                found.append((spans[(job, nxt)][0] - spans[(job, prev)][1]).total_seconds())
    return found


def _redis_commands_per_s(url: str, seconds: float = 5) -> float:
    client = redis.Redis.from_url(url)
    try:
        before = int(client.info("stats")["total_commands_processed"])
        time.sleep(seconds)
        return (int(client.info("stats")["total_commands_processed"]) - before - 1) / seconds
    finally:
        client.close()


def measure_hops(poll_ms: tuple[int, ...] = POLL_MS, idle_jobs: int = 6, burst: int = 24) -> list[Hops]:
    seeds = itertools.count(5000)
    results = []
    with OpenAIServer() as provider:
        for bound in poll_ms:
            workdir = Path(tempfile.mkdtemp(prefix="hops-bench-"))
            # Production recovery settings: only the polling bound changes.
            cluster = Cluster(
                workdir,
                provider,
                redis_poll_max_ms=bound,
                lease_s=30,
                handoff_stall_s=30,
                redis_heartbeat_timeout_s=15,
                maintenance_interval_s=2.0,
                max_recoveries=3,
            )
            try:
                cluster.start()
                tenant_id, key = cluster.new_tenant("bench")
                with cluster.client(key) as client:

                    def upload(client=client) -> str:  # type: ignore[no-untyped-def]
                        pdf = text_pdf(prose_pages(2, 200, seed=next(seeds)))
                        response = client.post(
                            "/v1/documents", files={"file": ("h.pdf", pdf, "application/pdf")}
                        )
                        return str(response.json()["job_id"])

                    upload()  # a warm-up, not counted: the first job starts the parse children
                    wait_final(cluster, tenant_id, 60)
                    time.sleep(2)
                    idle_commands = _redis_commands_per_s(cluster.settings.broker_url)
                    idle_ids = []
                    for _ in range(idle_jobs):
                        idle_ids.append(upload())
                        wait_final(cluster, tenant_id, 60)
                        time.sleep(1)  # the consumers go back to their longest pause
                    load_ids = [upload() for _ in range(burst)]
                    wait_final(cluster, tenant_id, 300)
                results.append(
                    Hops(
                        bound,
                        tuple(hops_of(cluster, idle_ids)),
                        tuple(hops_of(cluster, load_ids)),
                        idle_commands,
                        burst,
                    )
                )
            finally:
                cluster.stop()
                shutil.rmtree(workdir, ignore_errors=True)
    return results


TABLE_HEADER = (
    "| INGEST_REDIS_POLL_MAX_MS | idle: median hop | p99 | under a burst: median hop | p99 "
    "| Redis commands/s with nothing to do |\n| --- | --- | --- | --- | --- | --- |"
)


def table_row(h: Hops) -> str:
    return (
        f"| {h.poll_ms} | {statistics.median(h.idle_s) * 1000:.0f} ms | {percentile_ms(h.idle_s, 99):.0f} ms "
        f"| {statistics.median(h.load_s) * 1000:.0f} ms | {percentile_ms(h.load_s, 99):.0f} ms "
        f"| {h.idle_redis_commands_per_s:.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--poll-ms", default=",".join(map(str, POLL_MS)))
    parser.add_argument("--idle", type=int, default=6)
    parser.add_argument("--burst", type=int, default=24)
    args = parser.parse_args()
    results = measure_hops(tuple(int(p) for p in args.poll_ms.split(",")), args.idle, args.burst)
    print("\n".join([TABLE_HEADER, *(table_row(h) for h in results)]))


if __name__ == "__main__":
    main()
