"""The service's Prometheus metrics, defined once, and the exposition both the gateway and workers serve.

In a process group that forks (gunicorn's workers, a dramatiq pool's processes) the environment
variable PROMETHEUS_MULTIPROC_DIR names a folder where every process writes its samples, and the
exposition adds them up; deploy/topology.py sets it for each group. Without it the samples stay in
this process (the embedded topology, tests).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import prometheus_client as prom
from prometheus_client import multiprocess
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from shared.queue import QUEUES

logger = logging.getLogger(__name__)

CONTENT_TYPE = prom.CONTENT_TYPE_LATEST
_STAGE_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)

STAGE_DURATION = prom.Histogram(
    "ingest_stage_duration_seconds",
    "Time a worker spent on one stage message, by stage and outcome (ok, error, skipped).",
    ["stage", "outcome"],
    buckets=_STAGE_BUCKETS_S,
)
STAGE_MESSAGES = prom.Counter(
    "ingest_stage_messages", "Stage messages processed, by stage and outcome.", ["stage", "outcome"]
)
OCR_PAGES = prom.Counter("ingest_ocr_pages", "Pages read by OCR.")
EMBEDDING_TOKENS = prom.Counter("ingest_embedding_tokens", "Tokens sent to the embedder.", ["embedder"])
WEBHOOK_DELIVERIES = prom.Counter(
    "ingest_webhook_deliveries",
    "Webhook delivery attempts, by outcome (delivered, retrying, failed).",
    ["outcome"],
)
TENANT_CAP_PUT_BACKS = prom.Counter(
    "ingest_tenant_cap_put_backs",
    "Messages put back on their queue because their tenant (or the bulk pool) was at its cap, by queue.",
    ["queue"],
)
HTTP_REQUESTS = prom.Counter(
    "ingest_http_requests",
    "Requests the gateway answered, by method, route and status.",
    ["method", "route", "status"],
)
# A client picks the method and the path freely: each would be a new series kept for the process's
# life. A method outside HTTP's standard set counts as OTHER, a path that matches no route as UNMATCHED.
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"})
OTHER = "other"
UNMATCHED = "unmatched"


def count_http_request(method: str, route: str | None, status: int) -> None:
    """Count one answered request under labels from bounded sets: the standard methods and OTHER,
    the app's routes (`route`, None where none matched) and UNMATCHED, the statuses 100 to 599."""
    HTTP_REQUESTS.labels(
        method if method in HTTP_METHODS else OTHER,
        UNMATCHED if route is None else route,
        str(status) if 100 <= status <= 599 else OTHER,
    ).inc()


def multiprocess_mode() -> bool:
    """True when samples are shared through a multiprocess folder."""
    return prom.values.ValueClass is not prom.values.MutexValue


def exposition(extra: Iterable[Collector] = ()) -> bytes:
    """The text exposition of this process group's metrics, plus `extra` collectors read now."""
    registry: prom.CollectorRegistry
    if multiprocess_mode():
        registry = prom.CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = prom.REGISTRY
    output = prom.generate_latest(registry)
    if extra:
        scrape = prom.CollectorRegistry(auto_describe=False)
        for collector in extra:
            scrape.register(collector)
        output += prom.generate_latest(scrape)
    return output


def mark_process_dead(pid: int) -> None:
    """Forget a dead process's live gauges (a no-op outside multiprocess mode)."""
    if multiprocess_mode():
        multiprocess.mark_process_dead(pid)


class StateCollector(Collector):
    """Read at scrape time: jobs by status (from the database) and messages waiting per queue (from
    the broker). Either source may be down; its family is then left out and `ingest_up` says so."""

    def __init__(self, jobs_by_status: Callable[[], dict[str, int]], broker: Any) -> None:
        self.jobs_by_status = jobs_by_status
        self.broker = broker

    def collect(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily(
            "ingest_dependency_up", "1 when the scrape could read the source.", labels=["source"]
        )
        try:
            counts = self.jobs_by_status()
        except Exception:
            logger.warning("metrics: could not count jobs", exc_info=True)
            up.add_metric(["database"], 0)
        else:
            up.add_metric(["database"], 1)
            jobs = GaugeMetricFamily("ingest_jobs", "Jobs by status.", labels=["status"])
            for status, count in sorted(counts.items()):
                jobs.add_metric([status], count)
            yield jobs
        try:
            depths = queue_depths(self.broker)
        except Exception:
            logger.warning("metrics: could not read the queue depths", exc_info=True)
            up.add_metric(["broker"], 0)
        else:
            up.add_metric(["broker"], 1)
            depth = GaugeMetricFamily(
                "ingest_queue_depth",
                "Messages waiting in a queue (ready, and delayed for a retry).",
                labels=["queue", "kind"],
            )
            for (queue, kind), count in sorted(depths.items()):
                depth.add_metric([queue, kind], count)
            yield depth
        yield up


def queue_depths(broker: Any) -> dict[tuple[str, str], int]:
    """Messages waiting per (queue, ready|delayed) on a Redis, RabbitMQ or in-process broker."""
    client = getattr(broker, "client", None)
    depths: dict[tuple[str, str], int] = {}
    if client is not None:  # Redis: a list of ready message ids per queue, `.DQ` for the delayed
        pipe = client.pipeline(transaction=False)
        for queue in QUEUES:
            pipe.llen(f"{broker.namespace}:{queue}")
            pipe.llen(f"{broker.namespace}:{queue}.DQ")
        values = pipe.execute()
        for i, queue in enumerate(QUEUES):
            depths[(queue, "ready")] = int(values[2 * i])
            depths[(queue, "delayed")] = int(values[2 * i + 1])
    elif hasattr(broker, "get_queue_message_counts"):  # RabbitMQ
        for queue in QUEUES:
            ready, delayed, _dead = broker.get_queue_message_counts(queue)
            depths[(queue, "ready")] = ready
            depths[(queue, "delayed")] = delayed
    else:  # the in-process broker of the embedded topology
        for name, queue in getattr(broker, "queues", {}).items():
            if not name.endswith(".XQ"):
                depths[(name.removesuffix(".DQ"), "delayed" if name.endswith(".DQ") else "ready")] = (
                    queue.qsize()
                )
    return depths
