"""Liveness and readiness: /healthz answers while the process runs; /readyz checks dependencies."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify
from sqlalchemy import text

from gateway.services import services
from shared.errors import IngestError

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz() -> Any:
    return jsonify({"status": "ok"})


@bp.get("/readyz")
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
    response = jsonify({"status": status, "checks": checks})
    response.status_code = 200 if ready else 503
    return response
