"""Schemas of uploads and documents."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from gateway.schemas.common import StrictSchema
from gateway.schemas.jobs import ErrorSchema, JobSchema


class UploadFormSchema(Schema):
    """multipart/form-data: one or several `file` parts, and optional callback URL, OCR languages and
    metadata."""

    file = fields.List(fields.Raw(metadata={"type": "string", "format": "binary"}), required=True)
    callback_url = fields.String(metadata={"description": "http(s) URL that receives the job's events"})
    ocr_languages = fields.String(
        metadata={
            "description": "tesseract languages for scanned pages, joined by '+' ('deu+eng'); default:"
            " the tenant's, else the service's"
        }
    )
    metadata = fields.String(
        metadata={
            "description": "a JSON object of at most 8 KB: keys of 1-64 letters, digits or underscores;"
            " values strings, numbers, booleans or lists of them. Copied into every chunk's search"
            " payload under `metadata`"
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


class IndexedVersionSchema(Schema):
    job_id = fields.String(required=True, metadata={"description": "the job whose points search serves"})
    kind = fields.String(metadata={"description": "ingest, or reindex"})
    index_version = fields.Integer(metadata={"description": "the tenant's active index version"})
    embedding_model = fields.String(allow_none=True)
    chunks = fields.Integer()
    points = fields.Integer()
    finished_at = fields.String(allow_none=True)


class DocumentSchema(Schema):
    document_id = fields.String(required=True)
    filename = fields.String()
    sha256 = fields.String()
    size_bytes = fields.Integer()
    page_count = fields.Integer(allow_none=True)
    ocr_languages = fields.String(
        allow_none=True, metadata={"description": "the tesseract languages its scanned pages are read in"}
    )
    metadata = fields.Dict(
        keys=fields.String(), metadata={"description": "the client's metadata ({} when none was given)"}
    )
    created_at = fields.String()
    deleted = fields.Boolean()
    latest_job = fields.Nested(JobSchema, allow_none=True)
    indexed = fields.Nested(
        IndexedVersionSchema,
        allow_none=True,
        metadata={
            "description": "the version search serves, which a newer job that runs, fails or is cancelled"
            " leaves in place; null while none is indexed (and once deleted)"
        },
    )


class DocumentListSchema(Schema):
    items = fields.List(fields.Nested(DocumentSchema), required=True)
    next_cursor = fields.String(allow_none=True)


class DocumentMetadataSchema(StrictSchema):
    """PATCH body: the document's new metadata, replacing the old as a whole ({} clears it)."""

    metadata = fields.Dict(
        keys=fields.String(),
        required=True,
        metadata={
            "description": "a JSON object of at most 8 KB: keys of 1-64 letters, digits or underscores;"
            " values strings, numbers, booleans or lists of them"
        },
    )
