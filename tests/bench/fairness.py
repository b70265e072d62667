"""Fairness between tenants on the production path: one tenant's upload while another's burst waits.

    python -m tests.bench.fairness [--jobs 50] [--caps 2,0,1]

The worker runs in this process on the real Redis broker (a private key namespace) with 2 threads;
the gateway is the Flask app publishing on that broker, with SQLite, a local object store and Qdrant
in-process in a temporary folder. Embeddings come from the tests' OpenAI-compatible server on
127.0.0.1, which answers at once: what is measured is how the worker's threads are shared between
tenants, not onnxruntime.

For each value of the per-tenant cap (INGEST_TENANT_MAX_CONCURRENCY), on a fresh service, tenant B
uploads one document alone three times (idle), then tenant A uploads a burst of documents one request
after another and B uploads one more as soon as A's last is accepted. B's latency runs from its
upload request to its job's `finished_at`; A's jobs finished before B's upload and before B's job are
counted from their own rows. `measure_fairness` returns the numbers (`make bench` uses it); `main`
prints them.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from tests.bench.documents import prose_pages
from tests.bench.fairness_setup import (
    WORKER_THREADS,
    WORKER_TIMEOUT_MS,
    FairnessService,
    fairness_service,
    quiet_skips,
)
from tests.support.openai_server import OpenAIServer
from tests.support.pdfs import text_pdf

BURST_JOBS = 50
IDLE_RUNS = 3
# The default cap, no cap (what the default buys), and a cap below the worker's thread count (what a
# cap can buy on this worker: one of A's messages in progress at most leaves B a thread).
CAPS = (2, 0, 1)
PAGES = 3
WORDS_PER_PAGE = 280
# The goal: tenant B's upload under another tenant's burst takes at most this many times its idle time.
GOAL_RATIO = 2.0


@dataclass(frozen=True)
class FairnessRun:
    """Tenant B's latency alone and right after tenant A's burst, with one value of the cap."""

    cap: int  # INGEST_TENANT_MAX_CONCURRENCY (0: no cap)
    idle_s: tuple[float, ...]  # B alone, one upload after another
    burst_s: float  # B's upload sent right after A's burst was accepted → B's job finished
    burst_jobs: int
    submit_s: float  # A's first upload sent → A's last upload accepted
    done_at_upload: int  # A's jobs finished when B's upload was sent
    done_before: int  # A's jobs finished before B's job
    drained_s: float  # A's first upload sent → A's last job finished
    put_back: int  # messages the worker put back in their queue for being over their tenant's cap

    @property
    def idle_median_s(self) -> float:
        return statistics.median(self.idle_s)

    @property
    def ratio(self) -> float:
        return self.burst_s / self.idle_median_s


@dataclass(frozen=True)
class Fairness:
    """Every run of the fairness benchmark, and how it was set up."""

    runs: list[FairnessRun]
    worker_threads: int
    worker_timeout_ms: int
    pages: int  # of every document, A's and B's


TABLE_HEADER = (
    "| INGEST_TENANT_MAX_CONCURRENCY | B alone (median of 3) | B right after A's burst | ratio | "
    "A's jobs done when B was sent | when B finished | A's burst drained in | messages put back |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- |"
)


def table_row(run: FairnessRun) -> str:
    verdict = "within" if run.ratio <= GOAL_RATIO else "over"
    return (
        f"| {run.cap or '0 (no cap)'} | {run.idle_median_s:.2f} s | {run.burst_s:.2f} s "
        f"| {run.ratio:.1f}x ({verdict} {GOAL_RATIO:g}x) | {run.done_at_upload}/{run.burst_jobs} "
        f"| {run.done_before}/{run.burst_jobs} | {run.drained_s:.1f} s | {run.put_back} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=BURST_JOBS)
    parser.add_argument("--caps", default=",".join(map(str, CAPS)))
    args = parser.parse_args()
    result = measure_fairness(caps=tuple(int(c) for c in args.caps.split(",")), burst_jobs=args.jobs)
    print(TABLE_HEADER)
    for run in result.runs:
        print(table_row(run))
    print("\nB alone, each run:", "; ".join(f"cap {r.cap}: {_seconds(r.idle_s)}" for r in result.runs))
    print("A's uploads accepted in:", "; ".join(f"cap {r.cap}: {r.submit_s:.1f} s" for r in result.runs))


def _seconds(values: tuple[float, ...]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def measure_fairness(caps: tuple[int, ...] = CAPS, burst_jobs: int = BURST_JOBS) -> Fairness:
    """Run the two-tenant scenario once per cap, each on a fresh service.

    Leaves nothing behind but Dramatiq's idle time-limit watchdogs: worker threads stopped, parse
    children ended, folders removed, Redis keys deleted.
    """
    # Distinct bytes for every upload: the same bytes again would be answered as a duplicate.
    documents = (text_pdf(prose_pages(PAGES, WORDS_PER_PAGE, seed=1000 + n)) for n in range(10**6))
    runs = []
    with OpenAIServer() as provider, quiet_skips():
        for cap in caps:
            with fairness_service(cap, provider) as service:
                runs.append(scenario(service, documents, burst_jobs))
    return Fairness(runs, WORKER_THREADS, WORKER_TIMEOUT_MS, PAGES)


def scenario(service: FairnessService, documents: Iterator[bytes], burst_jobs: int) -> FairnessRun:
    """Tenant B's latency alone, then right after tenant A's burst, on one fresh service."""
    # Not timed: the first job of each tenant starts the parse children and creates the collection.
    service.latency_s(service.a, next(documents))
    service.latency_s(service.b, next(documents))
    idle = tuple(service.latency_s(service.b, next(documents)) for _ in range(IDLE_RUNS))
    # Generated beforehand, so nothing but the uploads sits between A's burst and B's upload.
    burst = [next(documents) for _ in range(burst_jobs)]
    mine = next(documents)
    put_back_before = service.put_back.count
    started = datetime.now(UTC)
    backlog = [service.upload(service.a, pdf) for pdf in burst]
    sent = datetime.now(UTC)
    job_id = service.upload(service.b, mine)
    finished = service.wait([job_id])[job_id]
    drained = max(service.wait(backlog).values())
    return FairnessRun(
        cap=service.cap,
        idle_s=idle,
        burst_s=(finished - sent).total_seconds(),
        burst_jobs=burst_jobs,
        submit_s=(sent - started).total_seconds(),
        done_at_upload=service.finished_before(backlog, sent),
        done_before=service.finished_before(backlog, finished),
        drained_s=(drained - started).total_seconds(),
        put_back=service.put_back.count - put_back_before,
    )


if __name__ == "__main__":
    main()
