"""The maintenance loop's reindex duty: advance running reindexes, flip them, purge the old points.

The flip is a database change (shared/reindex/__init__.py); deleting the versions no longer read follows it,
and is retried on the next pass until the vector store confirms it. Searches read the active
version only, so points left behind for a while are never seen.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy import select

from shared import reindex as reindexes
from shared.db import Database
from shared.models import Reindex, ReindexStatus, Tenant, utcnow
from shared.vectorstores import VectorStore

logger = logging.getLogger(__name__)

R = ReindexStatus


def advance_reindexes(db: Database, vectors: Callable[[], VectorStore] | None, *, window: int) -> int:
    """One pass over every running reindex, then the purges due. Returns how many flipped."""
    with db.transaction() as session:
        running = list(session.scalars(select(Reindex.id).where(Reindex.status == R.RUNNING.value)))
    flipped = 0
    for reindex_id in running:
        with db.transaction() as session:
            reindex = session.get(Reindex, reindex_id)
            assert reindex is not None
            status = reindexes.advance(session, reindex, window=window)
            tenant_id, version = reindex.tenant_id, reindex.target_version
        if status == R.FLIPPED.value:
            flipped += 1
            logger.info("tenant %s: index version %s is active", tenant_id, version)
        elif status != R.RUNNING.value:
            logger.warning("tenant %s: reindex to version %s ended %s", tenant_id, version, status)
    if vectors is not None:
        purge_old_versions(db, vectors())
    return flipped


def purge_old_versions(db: Database, store: VectorStore) -> None:
    """Delete the points of every version a flipped (or cancelled) reindex left behind, in every
    collection the tenant's points may live in; the active version and a running reindex's target
    are kept."""
    ended = [R.FLIPPED.value, R.CANCELLED.value]
    with db.transaction() as session:
        due = list(
            session.scalars(select(Reindex).where(Reindex.status.in_(ended), Reindex.purged_at.is_(None)))
        )
        work = []
        for reindex in due:
            tenant = session.get(Tenant, reindex.tenant_id)
            assert tenant is not None
            keep = [tenant.active_index_version]
            running = reindexes.running_reindex(session, tenant.id)
            if running is not None:
                keep.append(running.target_version)
            work.append((reindex.id, tenant.id, keep, reindexes.collections_of(session, tenant.id)))
    for reindex_id, tenant_id, keep, collections in work:
        for model, dimension in sorted(collections):
            store.delete(store.collection(model, dimension), tenant_id, keep_versions=keep)
        with db.transaction() as session:
            row = session.get(Reindex, reindex_id)
            assert row is not None
            row.purged_at = utcnow()
        logger.info("tenant %s: points of index versions other than %s deleted", tenant_id, keep)
