"""Liveness and readiness: /healthz answers while the process runs; /readyz checks dependencies."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import text

from gateway.blueprint import Blueprint
from gateway.schemas.health import HealthSchema, ReadinessSchema
from gateway.services import Services, services
from shared.errors import IngestError, SearchUnavailableError

logger = logging.getLogger(__name__)

blp = Blueprint("health", __name__, description="Health of the gateway")


@blp.route("/healthz", methods=["GET"])
@blp.doc(security=[])
@blp.response(200, HealthSchema)
def healthz() -> Any:
    """200 while the process runs."""
    return {"status": "ok"}


@blp.route("/readyz", methods=["GET"])
@blp.doc(security=[])
@blp.response(200, ReadinessSchema)
@blp.alt_response(503, schema=ReadinessSchema, description="Uploads cannot be accepted")
def readyz() -> Any:
    """Each dependency is `ok` or `down`. 503 only when uploads cannot be accepted (database or
    storage down); a broker or vector store outage is `degraded`: the outbox keeps the work until
    the broker is back, and only search needs the vector store. Without a Qdrant server the local
    folder belongs to the index worker, so the vector store reads `local` (search answers 503)."""
    svc = services()
    checks = {
        "database": _probe(lambda: _select_one(svc)),
        "storage": _probe(svc.storage.check),
        "broker": _probe(svc.relay.publisher.check),
        "vector_store": _vector_store(svc),
    }
    ready = checks["database"] == "ok" and checks["storage"] == "ok"
    down = [name for name, state in checks.items() if state == "down"]
    status = "unavailable" if not ready else "degraded" if down else "ready"
    return {"status": status, "checks": checks, "down": down}, 200 if ready else 503


def _select_one(svc: Services) -> None:
    with svc.db.transaction() as session:
        session.execute(text("SELECT 1"))


def _probe(check: Callable[[], None]) -> str:
    try:
        check()
    except IngestError:
        return "down"
    except Exception:
        # The database driver's own errors are not classified; any failure of the probe means down.
        logger.info("readiness probe failed", exc_info=True)
        return "down"
    return "ok"


def _vector_store(svc: Services) -> str:
    try:
        store = svc.vectors
    except SearchUnavailableError:
        return "local"
    return _probe(store.check)
