"""The gateway's Prometheus side: request counts, ids bound to each request's logs, and GET /metrics."""

from __future__ import annotations

import hmac
import logging
import time

from flask import Flask, Response, g, request
from sqlalchemy import func, select

from gateway.services import services
from shared import logging as ingest_logging
from shared import metrics
from shared.errors import UnauthorizedError
from shared.models import Job

logger = logging.getLogger("gateway.access")

# Probes and scrapes would drown the access log.
QUIET_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


def jobs_by_status() -> dict[str, int]:
    with services().db.transaction() as session:
        rows = session.execute(select(Job.status, func.count()).group_by(Job.status)).all()
    return {str(status): int(count) for status, count in rows}


def _check_scraper() -> None:
    """With INGEST_METRICS_TOKEN set, only a scraper that sends it as a bearer token is served."""
    token = services().settings.metrics_token
    if not token:
        return
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
        raise UnauthorizedError("GET /metrics needs the metrics token (Authorization: Bearer <token>).")


def metrics_view() -> Response:
    """Prometheus text exposition: this gateway's counters, plus jobs by status and queue depths
    read now (so any gateway answers the same)."""
    _check_scraper()
    state = metrics.StateCollector(jobs_by_status, services().relay.publisher.broker)
    return Response(metrics.exposition([state]), content_type=metrics.CONTENT_TYPE)


def _before() -> None:
    g.started = time.monotonic()
    ingest_logging.clear()
    ingest_logging.bind(job_id=(request.view_args or {}).get("job_id"))


def _after(response: Response) -> Response:
    route = request.url_rule.rule if request.url_rule is not None else None
    metrics.count_http_request(request.method, route, response.status_code)
    if request.path not in QUIET_PATHS:
        elapsed_ms = (time.monotonic() - g.get("started", time.monotonic())) * 1000
        logger.info("%s %s %s %.0fms", request.method, request.path, response.status_code, elapsed_ms)
    return response


def _teardown(exc: BaseException | None) -> None:
    ingest_logging.clear()


def install(app: Flask) -> None:
    """Count and log every request, and serve /metrics (left out of the OpenAPI document: it is for
    Prometheus, not API clients)."""
    app.before_request(_before)
    app.after_request(_after)
    app.teardown_request(_teardown)
    app.add_url_rule("/metrics", "metrics", metrics_view, methods=["GET"])
