"""Cursors for the paged lists: newest-first lists of documents and jobs, and a document's chunks."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, or_

from shared.errors import InvalidRequestError

# A cursor is the position of the last item of a page and that item's id (or its version's):
# `<position>_<uuid>`, the position a creation time in microseconds since the epoch (newest-first lists)
# or an index (a document's chunks). Every string of this form is a cursor: a position between items,
# or past every item, names a place in the order as well as one given out does. Stated in the OpenAPI
# document (gateway/schemas/common.py) as in the check.
CURSOR_PATTERN = r"^[0-9]{1,17}_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
# Timestamps are naive UTC (shared/models/base.py); 10**17 microseconds is in the year 5138.
EPOCH = datetime(1970, 1, 1)
MICROSECOND = timedelta(microseconds=1)


def encode_cursor(position: int, item_id: str) -> str:
    return f"{position}_{item_id}"


def decode_cursor(cursor: str) -> tuple[int, str]:
    """The position and id in `cursor`; 400 `invalid_cursor` when it is not of the cursors' form."""
    if not re.fullmatch(CURSOR_PATTERN, cursor):
        raise InvalidRequestError("The cursor is not one this API gave out.", code="invalid_cursor")
    position, item_id = cursor.split("_")
    return int(position), item_id


def time_position(moment: datetime) -> int:
    return (moment - EPOCH) // MICROSECOND


def page(stmt: Any, model: Any, *, cursor: str | None, limit: int) -> Any:
    """`stmt` ordered newest first, after `cursor`, one row more than `limit` (to know if more follow)."""
    if cursor is not None:
        position, item_id = decode_cursor(cursor)
        created = EPOCH + position * MICROSECOND
        stmt = stmt.where(
            or_(model.created_at < created, and_(model.created_at == created, model.id < item_id))
        )
    return stmt.order_by(model.created_at.desc(), model.id.desc()).limit(limit + 1)


def next_cursor(rows: list[Any], limit: int) -> str | None:
    if len(rows) <= limit:
        return None
    last = rows[limit - 1]
    return encode_cursor(time_position(last.created_at), last.id)
