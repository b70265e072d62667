"""An upload's latency during a reindex, beside its usual latency, on the embedded topology.

    python -m tests.bench.reindex_latency [--documents 30] [--pages 3]

The service runs in this process as `make run` wires it (in-process broker, 2 worker threads, the
maintenance loop, SQLite, a local object store, Qdrant in-process and the offline embedder) in a
temporary folder. Tenant A has `documents` documents; tenant B uploads one document at a time,
first alone, then while A's reindex (re-embedding every document) runs, and A uploads one of its
own during its reindex. Latency: the upload request → its job's `finished_at`. `measure` returns the
numbers (`make bench` uses it); `main` prints them.
"""

from __future__ import annotations

import argparse
import io
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shared import reindex as reindexes
from shared.models import Job, Reindex
from shared.settings import Settings
from shared.tenants import create_tenant
from tests.bench.documents import prose_pages
from tests.bench.fairness_setup import quiet_skips
from tests.support.inprocess import in_process_service
from tests.support.pdfs import text_pdf

RUNS = 3
WORDS_PER_PAGE = 280
TABLE_HEADER = (
    "| upload | alone, median (s) | during the reindex, median (s) | ratio | uploads that ended "
    "during it |\n| --- | --- | --- | --- | --- |"
)


@dataclass(frozen=True)
class ReindexLatency:
    documents: int
    pages: int
    idle_s: tuple[float, ...]  # tenant B alone
    during_s: tuple[float, ...]  # tenant B while tenant A reindexes
    own_s: float  # tenant A's own upload during its reindex
    overlapped: int  # of B's and A's uploads during the reindex, how many finished before its flip
    reindex_s: float
    worker_threads: int
    bulk_max_concurrency: int

    @property
    def ratio(self) -> float:
        return statistics.median(self.during_s) / statistics.median(self.idle_s)


def table_rows(result: ReindexLatency) -> str:
    idle = statistics.median(result.idle_s)
    during = statistics.median(result.during_s)
    total = len(result.during_s) + 1
    return "\n".join(
        [
            f"| another tenant's | {idle:.2f} | {during:.2f} | {result.ratio:.1f}x | "
            f"{result.overlapped} of {total} |",
            f"| the reindexed tenant's own | {idle:.2f} | {result.own_s:.2f} | "
            f"{result.own_s / idle:.1f}x | |",
        ]
    )


class _Tenants:
    def __init__(self, service: Any, pages: int) -> None:
        self.client = service.app.test_client()
        self.res = service.resources
        self.pages = pages
        self.seed = 0

    def new(self, name: str) -> tuple[str, str]:
        with self.res.db.transaction() as session:
            tenant, key = create_tenant(session, name)
            return tenant.id, key

    def pdf(self) -> bytes:
        self.seed += 1
        return text_pdf(prose_pages(self.pages, WORDS_PER_PAGE, seed=self.seed))

    def upload(self, key: str, pdf: bytes) -> str:
        data = {"file": (io.BytesIO(pdf), "doc.pdf")}
        answer = self.client.post("/v1/documents", data=data, headers={"Authorization": f"Bearer {key}"})
        assert answer.status_code == 202, answer.get_json()
        return str(answer.get_json()["job_id"])

    def wait(self, job_ids: list[str], timeout_s: float = 600) -> datetime:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.res.db.transaction() as session:
                rows = [session.get(Job, j) for j in job_ids]
                if all(r is not None and r.finished_at is not None for r in rows):
                    assert all(r.status == "completed" for r in rows if r is not None)
                    return max(r.finished_at for r in rows if r is not None).replace(tzinfo=UTC)
            time.sleep(0.02)
        raise AssertionError("jobs did not finish in time")

    def latency_s(self, key: str) -> tuple[float, datetime]:
        pdf = self.pdf()
        sent = datetime.now(UTC)
        finished = self.wait([self.upload(key, pdf)])
        return (finished - sent).total_seconds(), finished

    def reindex_state(self, tenant_id: str) -> Reindex:
        with self.res.db.transaction() as session:
            row = reindexes.latest_reindex(session, tenant_id)
            assert row is not None
            session.expunge(row)
            return row


def measure(documents: int = 30, pages: int = 3, workdir: Path | None = None) -> ReindexLatency:
    own_dir = workdir is None
    folder = Path(tempfile.mkdtemp(prefix="ingest-reindex-")) if workdir is None else workdir
    settings = Settings.from_env(data_dir=str(folder / "data"), maintenance_interval_s=0.5)
    try:
        # Bulk messages over their cap are put back with a warning each: expected here.
        with (
            quiet_skips(),
            in_process_service(settings, threads=settings.worker_threads, maintenance=True) as service,
        ):
            tenants = _Tenants(service, pages)
            a_id, a_key = tenants.new("tenant-a")
            _, b_key = tenants.new("tenant-b")
            tenants.wait([tenants.upload(a_key, tenants.pdf()) for _ in range(documents)])
            tenants.latency_s(b_key)  # not timed: the first job of B creates nothing new, but warms up
            idle = tuple(tenants.latency_s(b_key)[0] for _ in range(RUNS))
            started = time.monotonic()
            with tenants.res.db.transaction() as session:
                reindexes.start(session, settings, a_id)
            during = [tenants.latency_s(b_key) for _ in range(RUNS)]
            own = tenants.latency_s(a_key)
            reindex = _wait_reindex(tenants, a_id)
            reindex_s = time.monotonic() - started
            flipped = (reindex.flipped_at or datetime.max).replace(tzinfo=UTC)
            return ReindexLatency(
                documents=documents,
                pages=pages,
                idle_s=idle,
                during_s=tuple(s for s, _ in during),
                own_s=own[0],
                overlapped=sum(1 for _, end in [*during, own] if end <= flipped),
                reindex_s=reindex_s,
                worker_threads=settings.worker_threads,
                bulk_max_concurrency=settings.bulk_max_concurrency,
            )
    finally:
        if own_dir:
            shutil.rmtree(folder, ignore_errors=True)


def _wait_reindex(tenants: _Tenants, tenant_id: str, timeout_s: float = 1800) -> Reindex:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        row = tenants.reindex_state(tenant_id)
        if row.status != "running":
            assert row.status == "flipped", row.failures
            return row
        time.sleep(0.1)
    raise AssertionError("the reindex did not end in time")


def _lines(values: Iterator[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=30)
    parser.add_argument("--pages", type=int, default=3)
    args = parser.parse_args()
    result = measure(args.documents, args.pages)
    print(TABLE_HEADER)
    print(table_rows(result))
    print(
        f"\nalone: {_lines(iter(result.idle_s))} s; during: {_lines(iter(result.during_s))} s; "
        f"reindex of {result.documents} documents: {result.reindex_s:.1f} s"
    )


if __name__ == "__main__":
    main()
