"""Opaque cursors for newest-first lists: (created_at, id) of the last item, base64url JSON."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any

from sqlalchemy import and_, or_

from shared.errors import InvalidRequestError


def encode_cursor(created_at: datetime, item_id: str) -> str:
    raw = json.dumps([created_at.isoformat(), item_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created, item_id = json.loads(raw)
        if "\x00" in str(item_id):
            raise ValueError("NUL")  # no id has one, and PostgreSQL cannot compare with it
        return datetime.fromisoformat(created), str(item_id)
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        raise InvalidRequestError("The cursor is not one this API gave out.", code="invalid_cursor") from None


def page(stmt: Any, model: Any, *, cursor: str | None, limit: int) -> Any:
    """`stmt` ordered newest first, after `cursor`, one row more than `limit` (to know if more follow)."""
    if cursor:
        created, item_id = decode_cursor(cursor)
        stmt = stmt.where(
            or_(model.created_at < created, and_(model.created_at == created, model.id < item_id))
        )
    return stmt.order_by(model.created_at.desc(), model.id.desc()).limit(limit + 1)


def next_cursor(rows: list[Any], limit: int) -> str | None:
    if len(rows) <= limit:
        return None
    last = rows[limit - 1]
    return encode_cursor(last.created_at, last.id)
