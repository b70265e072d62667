"""Idempotency-Key records: the first request with a key owns it; repeats get its stored answer.

The claim is an insert that only one request can win, committed at once, so concurrent repeats
see it; a repeat with a different fingerprint is refused, one that arrives while the first is still
running waits briefly for its answer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from shared.db import transaction
from shared.errors import IdempotencyInProgressError, IdempotencyKeyReusedError
from shared.models import IdempotencyRecord


@dataclass(frozen=True)
class StoredResponse:
    status: int
    body: dict[str, Any]
    location: str | None


def _insert(session: Session) -> Any:
    return postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert


def claim(
    sessions: sessionmaker[Session], tenant_id: str, key: str, fingerprint: str, *, wait_s: float = 10.0
) -> StoredResponse | None:
    """None when this request owns the key (it must `complete` or `release` it); otherwise the
    answer the first request gave."""
    deadline = time.monotonic() + wait_s
    while True:
        with transaction(sessions) as session:
            insert = _insert(session)
            won = session.execute(
                insert(IdempotencyRecord)
                .values(tenant_id=tenant_id, key=key, fingerprint=fingerprint)
                .on_conflict_do_nothing()
                .returning(IdempotencyRecord.key)
            ).first()
            if won is not None:
                return None
            record = session.get(IdempotencyRecord, (tenant_id, key))
            if record is None:  # released between our insert and our read
                continue
            if record.fingerprint != fingerprint:
                raise IdempotencyKeyReusedError()
            if record.response_status is not None:
                return StoredResponse(
                    record.response_status, record.response_body or {}, record.response_location
                )
        if time.monotonic() > deadline:
            raise IdempotencyInProgressError()
        time.sleep(0.05)


def complete(
    sessions: sessionmaker[Session],
    tenant_id: str,
    key: str,
    response: StoredResponse,
) -> None:
    with transaction(sessions) as session:
        session.execute(
            update(IdempotencyRecord)
            .where(IdempotencyRecord.tenant_id == tenant_id, IdempotencyRecord.key == key)
            .values(
                response_status=response.status,
                response_body=response.body,
                response_location=response.location,
            )
        )


def release(sessions: sessionmaker[Session], tenant_id: str, key: str) -> None:
    """Give the key back after a request failed, so the client may try again with it."""
    with transaction(sessions) as session:
        session.execute(
            delete(IdempotencyRecord).where(
                IdempotencyRecord.tenant_id == tenant_id,
                IdempotencyRecord.key == key,
                IdempotencyRecord.response_status.is_(None),
            )
        )
