"""Schemas of uploads and documents."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, validate

from gateway.schemas.common import (
    BodySchema,
    MetadataField,
    OcrLanguagesField,
    StrictSchema,
    callback_url_field,
)
from gateway.schemas.jobs import ErrorSchema, JobSchema
from shared.settings import Settings


class FilesField(fields.List):
    """The upload's `file` parts: at least one, at most the service's `max_files_per_request`."""

    def __init__(self) -> None:
        super().__init__(fields.Raw(metadata={"type": "string", "format": "binary"}), required=True)

    def json_schema(self, settings: Settings) -> dict[str, Any]:
        return {"minItems": 1, "maxItems": settings.max_files_per_request}


class UploadFormSchema(BodySchema):
    """multipart/form-data: one or several `file` parts (PDFs), and optional callback URL, OCR
    languages and metadata; a field of another name is refused (400 `unknown_form_field`)."""

    file = FilesField()
    callback_url = callback_url_field(metadata={"description": "http(s) URL that receives the job's events"})
    ocr_languages = OcrLanguagesField(
        metadata={
            "description": "tesseract languages for scanned pages, joined by '+' ('deu+eng'); default:"
            " the tenant's, else the service's"
        }
    )
    metadata = MetadataField(
        metadata={"description": "a JSON object, copied into every chunk's search payload under `metadata`"}
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
    metadata = MetadataField(metadata={"description": "the client's metadata ({} when none was given)"})
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


class MetadataUpdateSchema(BodySchema):
    """PATCH body: the document's new metadata, replacing the old as a whole ({} clears it)."""

    metadata = MetadataField(required=True, metadata={"description": "the new metadata"})
