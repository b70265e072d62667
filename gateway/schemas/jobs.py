"""Schemas of jobs, their listing and their event stream."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from gateway.request_checks import MAX_ID
from gateway.schemas.common import ListArgsSchema, StrictSchema
from shared.job_waiting import REASONS
from shared.models import JobKind, JobStatus


class ErrorSchema(Schema):
    code = fields.String(allow_none=True)
    message = fields.String(allow_none=True)


class CountersSchema(Schema):
    pages = fields.Integer()
    ocr_pages = fields.Integer()
    ocr_pages_dropped = fields.Integer(
        metadata={"description": "pages OCR found no confident text on (photographs, drawings, noise)"}
    )
    chunks = fields.Integer()
    points = fields.Integer()


class JobSchema(Schema):
    job_id = fields.String(required=True)
    document_id = fields.String()
    kind = fields.String(validate=validate.OneOf([k.value for k in JobKind]))
    status = fields.String(validate=validate.OneOf([s.value for s in JobStatus]))
    stage = fields.String(allow_none=True)
    progress = fields.Integer(metadata={"description": "0-100; moves within a long stage (OCR, embed) too."})
    waiting = fields.String(
        allow_none=True,
        validate=validate.OneOf(REASONS),
        metadata={
            "description": "Why a job no worker runs yet waits (a field, not a state); null otherwise."
        },
    )
    counters = fields.Nested(CountersSchema)
    attempts = fields.Integer()
    error = fields.Nested(ErrorSchema, allow_none=True)
    seq = fields.Integer()
    created_at = fields.String()
    updated_at = fields.String()
    started_at = fields.String(allow_none=True)
    finished_at = fields.String(allow_none=True)


class JobListArgsSchema(ListArgsSchema):
    status = fields.String(validate=validate.OneOf([s.value for s in JobStatus]))
    kind = fields.String(validate=validate.OneOf([k.value for k in JobKind]))


class JobListSchema(Schema):
    items = fields.List(fields.Nested(JobSchema), required=True)
    next_cursor = fields.String(allow_none=True)


class EventStreamArgsSchema(StrictSchema):
    last_event_id = fields.Integer(
        validate=validate.Range(min=0, max=MAX_ID),
        metadata={"description": "resume after this seq (the Last-Event-ID header does the same)"},
    )
