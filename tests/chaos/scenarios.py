"""The failure matrix: each scenario breaks the running service in one way and states the final state
it expects of every job it submitted; `check.py` then holds the service to it."""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
from sqlalchemy import func, select

from shared.models import Job
from tests.bench.documents import prose_pages
from tests.chaos.check import Expected
from tests.chaos.cluster import INDEX, INGEST, Cluster
from tests.support import hostile_pdfs
from tests.support.openai_server import OpenAIServer
from tests.support.pdfs import text_pdf

COMPLETED = frozenset({"completed"})
FAILED = frozenset({"failed"})
CANCELLED = frozenset({"cancelled"})
_seeds = itertools.count(10_000)
# How often `submit` retries an upload answered 503 with Retry-After.
SUBMIT_RETRIES = 5


def good_pdf(pages: int = 3) -> bytes:
    """A text PDF no other upload of the run has: the same bytes again would be a duplicate."""
    return text_pdf(prose_pages(pages, 220, seed=next(_seeds)))


@dataclass
class Context:
    """What a scenario works with: the cluster, the embeddings server, its tenant and a random source."""

    cluster: Cluster
    provider: OpenAIServer
    tenant_id: str
    client: httpx.Client
    rng: random.Random

    def upload(self, name: str, pdf: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
        return self.client.post(
            "/v1/documents", files={"file": (name, pdf, "application/pdf")}, headers=headers or {}
        )

    def submit(self, name: str, pdf: bytes) -> str:
        """Upload a file that must be accepted; its job id. A 503 with Retry-After (the database
        restarting) is the client's to retry, as the API promises; any other answer fails."""
        response = self.upload(name, pdf)
        for _ in range(SUBMIT_RETRIES):
            if response.status_code != 503 or "Retry-After" not in response.headers:
                break
            time.sleep(min(float(response.headers["Retry-After"]), 5.0))
            response = self.upload(name, pdf)
        if response.status_code != 202:
            raise RuntimeError(f"upload of {name} answered {response.status_code}: {response.text}")
        return str(response.json()["job_id"])

    def good(self, count: int, pages: int = 3, prefix: str = "good") -> list[Expected]:
        return [
            Expected(self.submit(f"{prefix}-{n}.pdf", good_pdf(pages)), f"{prefix}-{n}", COMPLETED)
            for n in range(count)
        ]

    def count(self, *statuses: str) -> int:
        assert self.cluster.db is not None
        with self.cluster.db.transaction() as session:
            return int(
                session.scalar(
                    select(func.count())
                    .select_from(Job)
                    .where(Job.tenant_id == self.tenant_id, Job.status.in_(statuses))
                )
                or 0
            )

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while not predicate():
            if time.monotonic() > deadline:
                raise RuntimeError("the scenario's trigger never came")
            time.sleep(0.1)


@dataclass(frozen=True)
class Scenario:
    name: str
    what: str
    run: Callable[[Context], list[Expected]]
    timeout_s: float = 180
    # The broker the cluster of the scenario runs on.
    broker: str = "redis"


KILLS = 20


def worker_kills(ctx: Context) -> list[Expected]:
    """20 SIGKILLs of a worker pool (with its children) at random moments while uploads keep coming."""
    expected = ctx.good(4, pages=4, prefix="before")
    for kill in range(KILLS):
        expected += ctx.good(1, pages=4, prefix=f"kill{kill}")
        time.sleep(ctx.rng.uniform(0.3, 2.0))
        ctx.cluster.restart(ctx.rng.choice([INGEST, INGEST, INDEX]))
    return expected


def redis_flush_restart(ctx: Context) -> list[Expected]:
    """Redis flushed and restarted (nothing persisted) in the middle of a burst."""
    expected = ctx.good(20)
    ctx.wait_for(lambda: ctx.count("completed") >= 3)
    ctx.cluster.redis.flush_and_restart()
    return expected + ctx.good(3, prefix="after")


def postgres_restart(ctx: Context) -> list[Expected]:
    """PostgreSQL restarted (fast shutdown: every connection cut) with stages in flight."""
    expected = ctx.good(16)
    ctx.wait_for(lambda: ctx.count("completed") >= 2)
    ctx.cluster.postgres.restart()
    time.sleep(1)
    return expected + ctx.good(3, prefix="after")


S3_DOWN_S = 10.0


def s3_outage(ctx: Context) -> list[Expected]:
    """The S3 server stopped for ten seconds with stages in flight, then started again."""
    expected = ctx.good(16)
    ctx.wait_for(lambda: ctx.count("completed") >= 2)
    ctx.cluster.s3.stop()
    time.sleep(S3_DOWN_S)
    ctx.cluster.s3.start()
    return expected + ctx.good(3, prefix="after")


def flaky_provider(ctx: Context) -> list[Expected]:
    """The embedding provider answers half its calls with 429 or 503; some documents need several
    embedding batches."""
    ctx.provider.fail_share(0.5)
    expected = ctx.good(8) + ctx.good(2, pages=120, prefix="long")
    return expected


def after_flaky_provider(ctx: Context) -> None:
    ctx.provider.fail_share(0.0)


HOSTILE = (
    ("password", hostile_pdfs.password_pdf, "encrypted"),
    ("png", hostile_pdfs.disguised_png, "invalid_pdf"),
    ("stream-bomb", hostile_pdfs.shared_stream_bomb_pdf, "decompression_bomb"),
    ("huge-count", hostile_pdfs.huge_count_pdf, "page_count_mismatch"),
    ("deep-tree", hostile_pdfs.deep_page_tree_pdf, "page_tree_too_deep"),
    ("cyclic-tree", hostile_pdfs.cyclic_page_tree_pdf, "page_tree_cycle"),
    ("shared-branch", hostile_pdfs.shared_branch_pdf, "page_tree_cycle"),
    ("gigapixel", hostile_pdfs.gigapixel_image_pdf, "image_too_large"),
    ("object-bomb", hostile_pdfs.object_table_bomb_pdf, "too_many_objects"),
)


def hostile_storm(ctx: Context) -> list[Expected]:
    """Each hostile file twice, mixed at random with twelve good ones."""
    files: list[tuple[str, bytes, frozenset[str], str | None]] = [
        (f"good-{n}", good_pdf(), COMPLETED, None) for n in range(12)
    ]
    for name, make, code in HOSTILE:
        pdf = make()
        # Twice: the second copy is the same bytes, so it must answer as a duplicate of the first.
        files += [(f"{name}-{copy}", pdf, FAILED, code) for copy in (1, 2)]
    ctx.rng.shuffle(files)
    expected: dict[str, Expected] = {}
    for label, pdf, statuses, code in files:
        response = ctx.upload(f"{label}.pdf", pdf)
        if response.status_code not in (200, 202):
            raise RuntimeError(f"{label} answered {response.status_code}: {response.text}")
        job_id = str(response.json()["job_id"])
        expected.setdefault(job_id, Expected(job_id, label, statuses, code))
    return list(expected.values())


def duplicate_submissions(ctx: Context) -> list[Expected]:
    """Five documents, each sent eight times at once, half of them under one Idempotency-Key."""
    documents = [good_pdf() for _ in range(5)]
    sends = [(n, copy) for n in range(5) for copy in range(8)]
    ctx.rng.shuffle(sends)

    def send(item: tuple[int, int]) -> tuple[int, httpx.Response]:
        n, copy = item
        headers = {"Idempotency-Key": f"doc-{n}"} if copy % 2 else {}
        return n, ctx.upload(f"doc-{n}.pdf", documents[n], headers)

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(send, sends))
    job_ids: dict[int, set[str]] = {}
    for n, response in answers:
        # 409: the same key while its first request is still in flight, which a client retries.
        if response.status_code == 409:
            continue
        if response.status_code not in (200, 202):
            raise RuntimeError(f"doc-{n} answered {response.status_code}: {response.text}")
        job_ids.setdefault(n, set()).add(str(response.json()["job_id"]))
    split = {n: ids for n, ids in job_ids.items() if len(ids) != 1}
    if split or len(job_ids) != 5:
        raise RuntimeError(f"duplicate submissions made more than one job per document: {split}")
    return [Expected(ids.pop(), f"doc-{n}", COMPLETED) for n, ids in job_ids.items()]


def cancellation_storm(ctx: Context) -> list[Expected]:
    """Twenty uploads, each cancelled (twice) at a random moment within three seconds of its upload."""
    expected: list[Expected] = []
    errors: list[str] = []
    lock = threading.Lock()

    def cancel_later(label: str, job_id: str, delay_s: float) -> None:
        try:
            want = cancel(label, job_id, delay_s)
        except Exception as exc:
            with lock:
                errors.append(f"{label}: {exc!r}")
            return
        with lock:
            expected.append(want)

    def cancel(label: str, job_id: str, delay_s: float) -> Expected:
        time.sleep(delay_s)
        answers = [ctx.client.post(f"/v1/jobs/{job_id}/cancel") for _ in range(2)]
        first = answers[0]
        if first.status_code == 409:
            # Too late: it had finished. It must have completed, and stays so.
            want = Expected(job_id, label, COMPLETED)
        elif first.status_code == 202 and first.json().get("stage") == "finalize":
            # Asked during the last stage: the work is done and counted, so it may complete.
            want = Expected(job_id, label, CANCELLED | COMPLETED)
        elif first.status_code == 202:
            want = Expected(job_id, label, CANCELLED)
        else:
            raise RuntimeError(f"cancel of {label} answered {first.status_code}: {first.text}")
        return want

    threads = []
    for n in range(20):
        job_id = ctx.submit(f"cancel-{n}.pdf", good_pdf(4))
        thread = threading.Thread(target=cancel_later, args=(f"cancel-{n}", job_id, ctx.rng.uniform(0, 3)))
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    if errors:
        raise RuntimeError(f"{len(errors)} cancel request(s) failed, e.g. {errors[0]}")
    return expected


def rabbitmq_restart(ctx: Context) -> list[Expected]:
    """The RabbitMQ node stopped and started again (its durable queues kept) in the middle of a burst."""
    assert ctx.cluster.rabbitmq is not None
    expected = ctx.good(20)
    ctx.wait_for(lambda: ctx.count("completed") >= 3)
    ctx.cluster.rabbitmq.restart()
    return expected + ctx.good(3, prefix="after")


SCENARIOS = (
    Scenario("worker_kills", f"{KILLS} SIGKILLs of a worker pool at random moments", worker_kills, 240),
    Scenario("redis_flush_restart", "Redis flushed and restarted mid-burst", redis_flush_restart),
    Scenario("postgres_restart", "PostgreSQL restarted with stages in flight", postgres_restart),
    Scenario("s3_outage", f"S3 server stopped for {S3_DOWN_S:.0f} s, then started", s3_outage),
    Scenario("flaky_provider", "embedding provider fails half its calls (429/503)", flaky_provider, 300),
    Scenario("hostile_storm", "each hostile file twice among good ones", hostile_storm),
    Scenario("duplicate_submissions", "5 documents sent 8 times at once each", duplicate_submissions),
    Scenario("cancellation_storm", "20 uploads cancelled at random moments", cancellation_storm),
    Scenario("rabbitmq_restart", "RabbitMQ restarted mid-burst", rabbitmq_restart, broker="rabbitmq"),
)
CLEAN_UP: dict[str, Callable[[Context], None]] = {"flaky_provider": after_flaky_provider}
