"""Liveness and readiness: /healthz answers while the process runs; /readyz checks dependencies."""

from __future__ import annotations

from typing import Any

from flask_smorest import Blueprint
from sqlalchemy import text

from gateway.schemas import HealthSchema, ReadinessSchema
from gateway.services import services
from shared.errors import IngestError

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
    """503 only when uploads cannot be accepted (database or storage down); a broker outage is
    'degraded', since the outbox keeps the work until the broker is back."""
    svc = services()
    checks: dict[str, str] = {}
    try:
        with svc.db.transaction() as session:
            session.execute(text("SELECT 1"))
        checks["database"] = "ok"
    except Exception:
        checks["database"] = "down"
    try:
        svc.storage.check()
        checks["storage"] = "ok"
    except IngestError:
        checks["storage"] = "down"
    try:
        svc.relay.publisher.check()
        checks["broker"] = "ok"
    except IngestError:
        checks["broker"] = "down"
    ready = checks["database"] == "ok" and checks["storage"] == "ok"
    status = "ready" if ready and checks["broker"] == "ok" else "degraded" if ready else "unavailable"
    return {"status": status, "checks": checks}, 200 if ready else 503
