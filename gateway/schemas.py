"""Marshmallow schemas of every request and response: they validate input and write the OpenAPI document."""

from __future__ import annotations

from marshmallow import EXCLUDE, Schema, fields, validate

from shared.models import DeliveryStatus, JobKind, JobStatus, TenantStatus


class StrictSchema(Schema):
    class Meta:
        unknown = EXCLUDE


class ProblemSchema(Schema):
    """RFC 9457 problem details with the service's stable `code`."""

    type = fields.String()
    title = fields.String()
    status = fields.Integer()
    code = fields.String(required=True)
    detail = fields.String()
    errors = fields.Dict()


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
    progress = fields.Integer()
    counters = fields.Nested(CountersSchema)
    attempts = fields.Integer()
    error = fields.Nested(ErrorSchema, allow_none=True)
    seq = fields.Integer()
    created_at = fields.String()
    updated_at = fields.String()
    started_at = fields.String(allow_none=True)
    finished_at = fields.String(allow_none=True)


class UploadFormSchema(Schema):
    """multipart/form-data: one or several `file` parts, and an optional callback URL."""

    file = fields.List(fields.Raw(metadata={"type": "string", "format": "binary"}), required=True)
    callback_url = fields.String(metadata={"description": "http(s) URL that receives the job's events"})
    ocr_languages = fields.String(
        metadata={
            "description": "tesseract languages for scanned pages, joined by '+' ('deu+eng'); default:"
            " the tenant's, else the service's"
        }
    )


class UploadQuerySchema(StrictSchema):
    force = fields.Boolean(
        load_default=False, metadata={"description": "ingest again even when the same bytes exist"}
    )


class IdempotencyHeaderSchema(StrictSchema):
    idempotency_key = fields.String(
        data_key="Idempotency-Key",
        validate=validate.Length(min=1, max=255),
        metadata={"description": "repeats of the request with this key get the first answer"},
    )


class UploadResultSchema(Schema):
    filename = fields.String()
    job_id = fields.String(allow_none=True)
    document_id = fields.String(allow_none=True)
    status = fields.String(allow_none=True)
    duplicate = fields.Boolean()
    location = fields.String(allow_none=True)
    error = fields.Nested(ErrorSchema, allow_none=True)


class UploadResponseSchema(JobSchema):
    """With one file, the job is also given at the top level; `results` always has every file."""

    job_id = fields.String()
    duplicate = fields.Boolean()
    results = fields.List(fields.Nested(UploadResultSchema), required=True)


class ListArgsSchema(StrictSchema):
    cursor = fields.String(metadata={"description": "the next_cursor of the previous page"})
    limit = fields.Integer(load_default=50, validate=validate.Range(min=1, max=200))


class JobListArgsSchema(ListArgsSchema):
    status = fields.String(validate=validate.OneOf([s.value for s in JobStatus]))
    kind = fields.String(validate=validate.OneOf([k.value for k in JobKind]))


class JobListSchema(Schema):
    items = fields.List(fields.Nested(JobSchema), required=True)
    next_cursor = fields.String(allow_none=True)


class DocumentSchema(Schema):
    document_id = fields.String(required=True)
    filename = fields.String()
    sha256 = fields.String()
    size_bytes = fields.Integer()
    page_count = fields.Integer(allow_none=True)
    ocr_languages = fields.String(
        allow_none=True, metadata={"description": "the tesseract languages its scanned pages are read in"}
    )
    created_at = fields.String()
    deleted = fields.Boolean()
    latest_job = fields.Nested(JobSchema, allow_none=True)


class DocumentListSchema(Schema):
    items = fields.List(fields.Nested(DocumentSchema), required=True)
    next_cursor = fields.String(allow_none=True)


class SearchArgsSchema(StrictSchema):
    q = fields.String(required=True, validate=validate.Length(min=1, max=2000))
    top_k = fields.Integer(load_default=5, validate=validate.Range(min=1, max=100))
    document_id = fields.String()


class SearchHitSchema(Schema):
    score = fields.Float()
    document_id = fields.String()
    page_start = fields.Integer()
    page_end = fields.Integer()
    chunk_index = fields.Integer()
    section = fields.String(allow_none=True)
    sections = fields.List(fields.String())
    text = fields.String()
    index_version = fields.Integer()


class SearchResponseSchema(Schema):
    query = fields.String()
    index_version = fields.Integer()
    results = fields.List(fields.Nested(SearchHitSchema), required=True)


class ReindexArgsSchema(StrictSchema):
    from_stage = fields.String(
        data_key="from", load_default="embed", validate=validate.OneOf(["embed", "chunk", "extract"])
    )
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


class LimitsSchema(StrictSchema):
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
    ocr_languages = fields.String(allow_none=True, metadata={"description": OCR_LANGUAGES_DESCRIPTION})


class TenantOcrSchema(StrictSchema):
    ocr_languages = fields.String(
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


class HealthSchema(Schema):
    status = fields.String(required=True)


class ReadinessSchema(Schema):
    status = fields.String(required=True, validate=validate.OneOf(["ready", "degraded", "unavailable"]))
    checks = fields.Dict(
        keys=fields.String(), values=fields.String(validate=validate.OneOf(["ok", "down", "local"]))
    )
    # The dependencies that are down, by name.
    down = fields.List(fields.String())


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


class DeliveryAttemptSchema(Schema):
    at = fields.String(allow_none=True)
    response_status = fields.Integer(allow_none=True)
    error_code = fields.String(allow_none=True)


class DeliverySchema(Schema):
    delivery_id = fields.Integer(required=True)
    event_id = fields.String()
    event_type = fields.String()
    seq = fields.Integer()
    url = fields.String()
    status = fields.String(validate=validate.OneOf([s.value for s in DeliveryStatus]))
    attempts = fields.Integer()
    last_response_status = fields.Integer(allow_none=True)
    last_error_code = fields.String(allow_none=True)
    attempt_log = fields.List(fields.Nested(DeliveryAttemptSchema))
    next_attempt_at = fields.String(allow_none=True)
    last_attempt_at = fields.String(allow_none=True)
    delivered_at = fields.String(allow_none=True)
    created_at = fields.String()


class DeliveryListSchema(Schema):
    items = fields.List(fields.Nested(DeliverySchema), required=True)


class WebhookSettingsSchema(Schema):
    default_callback_url = fields.String(allow_none=True)
    secret = fields.String(metadata={"description": "verifies the webhook-signature header"})
    previous_secret_valid_until = fields.String(
        allow_none=True, metadata={"description": "until then the previous secret signs too"}
    )


class WebhookSettingsUpdateSchema(StrictSchema):
    default_callback_url = fields.String(
        required=True,
        allow_none=True,
        validate=validate.Length(min=1, max=2000),
        metadata={"description": "receives the events of jobs uploaded without a callback_url"},
    )


class EventStreamArgsSchema(StrictSchema):
    last_event_id = fields.Integer(
        validate=validate.Range(min=0),
        metadata={"description": "resume after this seq (the Last-Event-ID header does the same)"},
    )
