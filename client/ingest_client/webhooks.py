"""Verifying a webhook the service sent, the Standard Webhooks way, with the tenant's signing secret."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from standardwebhooks import Webhook


def verify_webhook(headers: Mapping[str, str], body: bytes | str, secret: str) -> dict[str, Any]:
    """The event (`{"id", "type", "timestamp", "data"}`) when `webhook-signature` is valid for `secret`
    and `webhook-timestamp` is recent; raises `standardwebhooks.WebhookVerificationError` otherwise.
    After a secret rotation the header holds two signatures and either secret verifies it."""
    payload = body.decode() if isinstance(body, bytes) else body
    event = Webhook(secret).verify(payload, {k.lower(): v for k, v in headers.items()})
    if not isinstance(event, dict):
        raise ValueError("A webhook body is a JSON object.")
    return event
