"""Schemas the features share: strict argument parsing, problem details and list paging."""

from __future__ import annotations

from marshmallow import EXCLUDE, Schema, fields, validate


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


class ListArgsSchema(StrictSchema):
    cursor = fields.String(metadata={"description": "the next_cursor of the previous page"})
    limit = fields.Integer(load_default=50, validate=validate.Range(min=1, max=200))
