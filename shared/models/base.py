"""The declarative base shared by every model, and the helpers for their default ids and times."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON
from sqlalchemy.orm import DeclarativeBase


def utcnow() -> datetime:
    """Naive UTC now: every timestamp is stored as UTC without a zone (SQLite has none)."""
    return datetime.now(UTC).replace(tzinfo=None)


def new_id() -> str:
    return str(uuid.uuid4())


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON}
