"""Schemas the features share: query and body parsing, a document's metadata, problem details and list
paging."""

from __future__ import annotations

from typing import Any

from marshmallow import EXCLUDE, RAISE, Schema, fields, validate

from gateway.pagination import CURSOR_PATTERN
from shared import document_metadata, ocr_languages
from shared.settings import Settings
from shared.webhooks.callback_urls import MAX_URL_LENGTH, URL_PATTERN


class StrictSchema(Schema):
    """Query strings and headers. The parser refuses a query parameter the schema does not name (422),
    as it refuses an unknown body field (gateway/blueprint.py), and leaves other headers alone."""

    class Meta:
        unknown = EXCLUDE


class BodySchema(Schema):
    """A JSON body: a field it does not name is refused (422), not ignored, so that a misspelt field
    never silently falls back to its default (the OpenAPI document says `additionalProperties: false`)."""

    class Meta:
        unknown = RAISE


class MetadataField(fields.Dict):
    """A document's metadata, checked by shared/document_metadata.py and described by its JSON Schema."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(keys=fields.String(), **kwargs)

    def json_schema(self, settings: Settings) -> dict[str, Any]:
        schema = dict(document_metadata.JSON_SCHEMA)
        if own := self.metadata.get("description"):
            schema["description"] = f"{own}: {schema['description']}"
        return schema


class OcrLanguagesField(fields.String):
    """OCR languages ("deu+eng"), checked against the service's by the view (shared/ocr_languages.py),
    described by the pattern of the languages offered."""

    def json_schema(self, settings: Settings) -> dict[str, Any]:
        return {"pattern": ocr_languages.pattern(settings.ocr_available_languages)}


def callback_url_field(**kwargs: Any) -> fields.String:
    """A callback URL of the form shared/webhooks/callback_urls.py accepts; whether its host may be
    called is the guard's to say (422 `callback_url_not_allowed`)."""
    return fields.String(
        validate=validate.Length(min=1, max=MAX_URL_LENGTH),
        metadata={"format": "uri", "pattern": URL_PATTERN, **kwargs.pop("metadata", {})},
        **kwargs,
    )


class ProblemSchema(Schema):
    """RFC 9457 problem details with the service's stable `code`."""

    type = fields.String()
    title = fields.String()
    status = fields.Integer()
    code = fields.String(required=True)
    detail = fields.String()
    errors = fields.Dict()


class ListArgsSchema(StrictSchema):
    cursor = fields.String(
        metadata={"description": "the next_cursor of the previous page", "pattern": CURSOR_PATTERN}
    )
    limit = fields.Integer(load_default=50, validate=validate.Range(min=1, max=200))
