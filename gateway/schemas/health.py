"""Schemas of the liveness and readiness probes."""

from __future__ import annotations

from marshmallow import Schema, fields, validate


class HealthSchema(Schema):
    status = fields.String(required=True)


class ReadinessSchema(Schema):
    status = fields.String(required=True, validate=validate.OneOf(["ready", "degraded", "unavailable"]))
    checks = fields.Dict(
        keys=fields.String(), values=fields.String(validate=validate.OneOf(["ok", "down", "local"]))
    )
    # The dependencies that are down, by name.
    down = fields.List(fields.String())
