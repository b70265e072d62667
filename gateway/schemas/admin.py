"""Schemas of the admin API: reindexing, tenants, API keys and dead letters."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from gateway.schemas.common import BodySchema, OcrLanguagesField, StrictSchema
from gateway.schemas.jobs import ErrorSchema
from shared.models import TenantStatus
from shared.pipeline import FROM_STAGES


class ReindexArgsSchema(BodySchema):
    from_stage = fields.String(data_key="from", load_default="embed", validate=validate.OneOf(FROM_STAGES))
    model = fields.String(validate=validate.Length(min=1, max=100))
    dimension = fields.Integer(validate=validate.Range(min=1, max=65536))
    dry_run = fields.Boolean(load_default=False)


class ReindexSchema(Schema):
    reindex_id = fields.String()
    tenant_id = fields.String()
    status = fields.String()
    source_version = fields.Integer()
    target_version = fields.Integer()
    embedding_model = fields.String()
    embedding_dimension = fields.Integer()
    from_stage = fields.String(data_key="from")
    total = fields.Integer()
    done = fields.Integer()
    failed = fields.Integer()
    failures = fields.List(fields.Dict())
    jobs_created = fields.Integer()
    plan = fields.Dict()
    created_at = fields.String()
    flipped_at = fields.String(allow_none=True)
    finished_at = fields.String(allow_none=True)


class LimitsSchema(BodySchema):
    """A tenant's own limits; null means the service default."""

    max_active_jobs = fields.Integer(allow_none=True, validate=validate.Range(min=1, max=100_000))
    max_upload_mb = fields.Integer(allow_none=True, validate=validate.Range(min=1, max=100_000))
    max_pages = fields.Integer(allow_none=True, validate=validate.Range(min=1, max=1_000_000))
    max_storage_mb = fields.Integer(allow_none=True, validate=validate.Range(min=1, max=100_000_000))


OCR_LANGUAGES_DESCRIPTION = (
    "tesseract languages for the tenant's scanned pages, joined by '+' ('deu+eng'); null: the service's"
)


class TenantCreateSchema(LimitsSchema):
    name = fields.String(
        required=True, validate=[validate.Length(min=1, max=100), validate.Regexp(r"^[A-Za-z0-9_.-]+$")]
    )
    ocr_languages = OcrLanguagesField(allow_none=True, metadata={"description": OCR_LANGUAGES_DESCRIPTION})


class TenantOcrSchema(BodySchema):
    ocr_languages = OcrLanguagesField(
        required=True, allow_none=True, metadata={"description": OCR_LANGUAGES_DESCRIPTION}
    )


class TenantSchema(Schema):
    tenant_id = fields.String(required=True)
    name = fields.String()
    status = fields.String(validate=validate.OneOf([s.value for s in TenantStatus]))
    limits = fields.Nested(LimitsSchema)
    ocr_languages = fields.String(allow_none=True, metadata={"description": OCR_LANGUAGES_DESCRIPTION})
    created_at = fields.String()
    api_key = fields.String(metadata={"description": "shown once, when created"})


class TenantListSchema(Schema):
    items = fields.List(fields.Nested(TenantSchema), required=True)


class ApiKeySchema(Schema):
    key_id = fields.String(required=True)
    prefix = fields.String()
    role = fields.String()
    created_at = fields.String()
    revoked = fields.Boolean()
    api_key = fields.String(metadata={"description": "shown once, when created"})


class ApiKeyListSchema(Schema):
    items = fields.List(fields.Nested(ApiKeySchema), required=True)


class DeadLetterSchema(Schema):
    dead_letter_id = fields.Integer(required=True)
    job_id = fields.String()
    tenant_id = fields.String()
    stage = fields.String()
    actor = fields.String()
    error = fields.Nested(ErrorSchema)
    retries = fields.Integer()
    created_at = fields.String()
    replayed = fields.Boolean()


class DeadLetterListSchema(Schema):
    items = fields.List(fields.Nested(DeadLetterSchema), required=True)


class DeadLetterArgsSchema(StrictSchema):
    include_replayed = fields.Boolean(load_default=False)
