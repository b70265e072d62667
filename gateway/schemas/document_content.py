"""Schemas of a document's content: its chunks and page texts (the file itself is a PDF stream)."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

PAGE_SOURCES = ("text", "ocr")


class ChunkSchema(Schema):
    index = fields.Integer(required=True, metadata={"description": "0-based, in document order"})
    page_start = fields.Integer(metadata={"description": "the first page it draws from (1-based)"})
    page_end = fields.Integer(metadata={"description": "the last page it draws from"})
    section = fields.String(allow_none=True, metadata={"description": "the heading it starts under"})
    sections = fields.List(fields.String(), metadata={"description": "every heading it spans"})
    token_count = fields.Integer()
    text = fields.String()


class ChunkListSchema(Schema):
    job_id = fields.String(required=True, metadata={"description": "the job that made the indexed version"})
    index_version = fields.Integer()
    items = fields.List(fields.Nested(ChunkSchema), required=True)
    next_cursor = fields.String(allow_none=True)


class PageTextSchema(Schema):
    number = fields.Integer(required=True, metadata={"description": "1-based"})
    source = fields.String(
        validate=validate.OneOf(PAGE_SOURCES),
        metadata={"description": "text: the PDF's text layer; ocr: read from the page's image"},
    )
    text = fields.String()


class DocumentTextSchema(Schema):
    job_id = fields.String(required=True, metadata={"description": "the job that made the indexed version"})
    index_version = fields.Integer()
    pages = fields.List(fields.Nested(PageTextSchema), required=True)
