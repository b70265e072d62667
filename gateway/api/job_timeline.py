"""A job's timeline: when each of its stages started and finished, how often each ran (retries and
recoveries), and the job's events, so that a picture can show where the time went (the console's
job page draws it). Scoped to the caller's tenant, like every job read."""

from __future__ import annotations

from typing import Any

from flask import g
from marshmallow import Schema, fields
from sqlalchemy import select

from gateway.auth import tenant_required
from gateway.blueprint import Blueprint
from gateway.job_queries import get_job
from gateway.services import services
from shared.errors import NotFoundError
from shared.job_representation import iso_time
from shared.models import JobEvent, JobStage, utcnow
from shared.queue import stages_of

blp = Blueprint("job_timeline", __name__, description="Where a job's time went, stage by stage")

# Progress events inside a long stage are many and say nothing about the stages' times.
SKIPPED_EVENTS = ("job.progress",)
MAX_EVENTS = 500


class TimelineStageSchema(Schema):
    stage = fields.String(required=True)
    status = fields.String(metadata={"description": "running, done or failed"})
    attempts = fields.Integer(
        metadata={"description": "runs of the stage: 1 plus its retries and recoveries"}
    )
    started_at = fields.String(metadata={"description": "when its last run started"})
    finished_at = fields.String(allow_none=True)
    parts = fields.Integer(metadata={"description": "parts it runs in (page ranges of a scan's OCR); 0: one"})
    parts_done = fields.Integer()
    units_done = fields.Integer(metadata={"description": "pages read or chunks embedded so far"})
    units_total = fields.Integer(allow_none=True)


class TimelineEventSchema(Schema):
    seq = fields.Integer(required=True)
    type = fields.String()
    timestamp = fields.String(allow_none=True)
    status = fields.String(allow_none=True)
    stage = fields.String(allow_none=True)
    error_code = fields.String(allow_none=True)


class TimelineSchema(Schema):
    job_id = fields.String(required=True)
    kind = fields.String()
    status = fields.String()
    attempts = fields.Integer()
    recoveries = fields.Integer(
        metadata={"description": "times a lost worker's or message's stage was resumed"}
    )
    created_at = fields.String()
    started_at = fields.String(allow_none=True)
    finished_at = fields.String(allow_none=True)
    now = fields.String(metadata={"description": "the server's time, the end of a running stage's bar"})
    pipeline = fields.List(
        fields.String(), metadata={"description": "the stages of the job's kind, in order"}
    )
    stages = fields.List(fields.Nested(TimelineStageSchema), required=True)
    events = fields.List(fields.Nested(TimelineEventSchema), required=True)


@blp.route("/v1/jobs/<job_id>/timeline", methods=["GET"])
@tenant_required
@blp.response(200, TimelineSchema)
def get_timeline(job_id: str) -> Any:
    """When each stage of the job ran (its last run's start and finish, and how many runs it took),
    its recoveries, and its events apart from progress (the latest 500), oldest first."""
    with services().db.transaction() as session:
        job = get_job(session, job_id, tenant_id=g.caller.tenant_id)
        if job is None:
            raise NotFoundError("No such job.")
        pipeline = list(stages_of(job.kind))
        rows = session.scalars(select(JobStage).where(JobStage.job_id == job.id)).all()
        order = {name: i for i, name in enumerate(pipeline)}
        rows = sorted(rows, key=lambda r: (order.get(r.stage, len(order)), r.started_at))
        events = session.execute(
            select(JobEvent.seq, JobEvent.type, JobEvent.payload)
            .where(JobEvent.job_id == job.id, JobEvent.type.not_in(SKIPPED_EVENTS))
            .order_by(JobEvent.seq.desc())
            .limit(MAX_EVENTS)
        ).all()
        return {
            "job_id": job.id,
            "kind": job.kind,
            "status": job.status,
            "attempts": job.attempts,
            "recoveries": job.recoveries,
            "created_at": iso_time(job.created_at),
            "started_at": iso_time(job.started_at),
            "finished_at": iso_time(job.finished_at),
            "now": iso_time(utcnow()),
            "pipeline": pipeline,
            "stages": [_stage_body(r) for r in rows],
            "events": [_event_body(seq, kind, payload) for seq, kind, payload in reversed(events)],
        }


def _stage_body(row: JobStage) -> dict[str, Any]:
    return {
        "stage": row.stage,
        "status": row.status,
        "attempts": row.attempts,
        "started_at": iso_time(row.started_at),
        "finished_at": iso_time(row.finished_at),
        "parts": row.parts,
        "parts_done": row.parts_done,
        "units_done": row.units_done,
        "units_total": row.units_total,
    }


def _event_body(seq: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    payload = payload or {}
    return {
        "seq": seq,
        "type": kind,
        "timestamp": payload.get("timestamp"),
        "status": payload.get("status"),
        "stage": payload.get("stage"),
        "error_code": payload.get("error_code"),
    }
