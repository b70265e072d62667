"""Schemas of webhook deliveries and a tenant's webhook settings."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from gateway.schemas.common import BodySchema, callback_url_field
from shared.models import DeliveryStatus


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


class WebhookSettingsUpdateSchema(BodySchema):
    default_callback_url = callback_url_field(
        required=True,
        allow_none=True,
        metadata={"description": "receives the events of jobs uploaded without a callback_url"},
    )
