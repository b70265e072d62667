"""GET /v1/jobs/<id>: the business state of one of the caller's jobs."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, g, jsonify

from gateway.auth import tenant_required
from gateway.representations import job_body
from gateway.services import services
from shared.errors import NotFoundError
from shared.jobs import get_job as load_job

bp = Blueprint("jobs", __name__)


@bp.get("/v1/jobs/<job_id>")
@tenant_required
def get_job(job_id: str) -> Any:
    with services().db.transaction() as session:
        job = load_job(session, job_id, tenant_id=g.caller.tenant_id)
        if job is None:
            raise NotFoundError("No such job.")
        return jsonify(job_body(job))
