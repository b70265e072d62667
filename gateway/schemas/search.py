"""Schemas of semantic search."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from gateway.schemas.common import StrictSchema


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
