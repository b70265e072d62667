"""The transactional outbox and its one relay: every row written with a job's change (a stage message,
a webhook delivery) is published by the same relay, right after its transaction commits, and by a
sweep for whatever that left.

`add_message` writes a stage message in the caller's transaction; `shared.webhooks.add_deliveries`
writes deliveries the same way. Once a relay is attached to a session factory (`Relay.attach`: the
gateway, the workers and the maintenance loop each attach theirs), a commit that added outbox rows
hands them to the relay at once (the fast path); its stage rows are claimed in it, before it commits,
so the fast path only sends and marks them. `Relay.publish_pending` is the maintenance loop's sweep:
rows whose fast path failed (broker down, process killed after the commit) and rows due later (a
webhook's retry). Each row kind (shared/stage_messages.py, `WebhookDeliveries`) claims its rows by a
compare-and-set, so two relays never publish one row at once; idempotent consumers absorb repeats.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol, cast

from sqlalchemy import ColumnElement, Table, event, select, update
from sqlalchemy.orm import Session, SessionTransaction, sessionmaker

from shared import insert_batch, job_counters
from shared.db import transaction
from shared.errors import BrokerUnavailableError
from shared.models import OutboxMessage, Tenant, WebhookDelivery, utcnow
from shared.outbox_marks import LINGER_S, SentMarks
from shared.queue import Publisher
from shared.settings import Settings
from shared.stage_messages import CLAIM_S, StageMessages
from shared.webhooks import WebhookDeliveries

logger = logging.getLogger(__name__)

STAGES, WEBHOOKS = StageMessages.name, WebhookDeliveries.name
# The kind of each outbox table's rows, for the rows a transaction adds.
KIND_OF: dict[type, str] = {OutboxMessage: STAGES, WebhookDelivery: WEBHOOKS}
# After a broker failure the fast path stays quiet at most this long: requests are not slowed by a
# broker that is down, and the sweep keeps trying.
MAX_QUIET_S = 5.0
# Where a session keeps the ids of the outbox rows its transaction added, by kind, and the claims it
# took on its stage rows before committing, by row id.
_ADDED = "outbox_added"
_CLAIMED = "outbox_claimed"
_RELAY = "outbox_relay"


class RowKind(Protocol):
    """One kind of outbox row: which rows are due, and how one is claimed, sent and marked."""

    name: str
    model: Any

    marks_sent: bool

    def due(self, now: datetime) -> ColumnElement[bool]: ...
    def claim(self, session: Session, row_id: int, now: datetime) -> Any | None: ...
    def send(self, claim: Any) -> None: ...
    def sent(self, session: Session, items: Sequence[tuple[int, Any]]) -> None: ...
    def unsent(self, session: Session, row_id: int, claim: Any, error: BrokerUnavailableError) -> float: ...


def add_message(session: Session, job_id: str, stage: str, *, part: int | None = None) -> OutboxMessage:
    """Queue the job's pipeline from `stage` (or, with `part`, that one part of the stage) for
    publishing, in the caller's transaction."""
    row = OutboxMessage(job_id=job_id, stage=stage, part=part)
    session.add(row)
    session.flush()
    return row


def add_ingest_messages(session: Session, tenant: Tenant, job_ids: list[str], stage: str) -> None:
    """`add_message` for new ingest jobs of one tenant in one INSERT. With a relay attached and not
    quiet the rows are written claimed, the lane read from the tenant row the caller locked plus this
    transaction's unwritten jobs: the commit has no claim statement left to run for them."""
    relay: Relay | None = session.info.get(_RELAY)
    claim = relay is not None and not relay.quiet()
    values = {"available_at": utcnow() + timedelta(seconds=CLAIM_S), "attempts": 1} if claim else {}
    rows = [{"job_id": job_id, "stage": stage, **values} for job_id in job_ids]
    table = cast(Table, OutboxMessage.__table__)
    id_of_job = dict(insert_batch.insert_returning(session, table, rows, ("job_id", "id")))
    ids = [id_of_job[job_id] for job_id in job_ids]
    if relay is not None:
        session.info.setdefault(_ADDED, {}).setdefault(STAGES, []).extend(ids)
    if relay is not None and claim:
        active = (tenant.active_jobs or 0) + job_counters.pending_jobs(session).get(tenant.id, 0)
        claims = relay.stages.new_claims(list(zip(ids, job_ids, strict=True)), stage, tenant.id, active)
        session.info.setdefault(_CLAIMED, {}).update(claims)


class Relay:
    """Publishes outbox rows of every kind on the broker and marks them published."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        publisher: Publisher,
        *,
        interactive_jobs_per_tenant: int = 4,
        webhook_republish_after_s: float = 300.0,
    ) -> None:
        self.sessions = sessions
        self.publisher = publisher
        stages = StageMessages(publisher, interactive_jobs_per_tenant=interactive_jobs_per_tenant)
        webhooks = WebhookDeliveries(publisher, republish_after_s=webhook_republish_after_s)
        self.stages = stages
        self.kinds: dict[str, RowKind] = {stages.name: stages, webhooks.name: webhooks}
        self.marks = SentMarks(sessions, linger_s=LINGER_S if _spawn else 0.0)
        self._quiet_until = 0.0

    @classmethod
    def from_settings(
        cls, sessions: sessionmaker[Session], publisher: Publisher, settings: Settings
    ) -> Relay:
        return cls(
            sessions,
            publisher,
            interactive_jobs_per_tenant=settings.interactive_jobs_per_tenant,
            webhook_republish_after_s=settings.webhook_republish_after_s,
        )

    def quiet(self) -> bool:
        """Whether the fast path is holding off after a broker failure."""
        return time.monotonic() < self._quiet_until

    def publish(self, ids: Iterable[int], kind: str = STAGES, claims: dict[int, Any] | None = None) -> int:
        """Fast path: publish these rows of `kind` now if the broker looks healthy. Returns how many.
        `claims` are the ones the committing transaction took already, by row id.

        Runs after the caller's commit, so it never raises: whatever it cannot publish, the sweep
        publishes later.
        """
        claims = claims or {}
        if self.quiet():
            if claims:
                self._release(list(claims))
            return 0
        published = 0
        for row_id in ids:
            try:
                published += self._publish_one(self.kinds[kind], row_id, claims.get(row_id))
            except Exception:
                logger.exception(
                    "%s row %s not published on the fast path; the sweep will retry it", kind, row_id
                )
        return published

    def publish_pending(self, limit: int = 100) -> int:
        """Sweep: publish the rows of every kind that are due, up to `limit` of each. Returns how many."""
        published = 0
        for kind in self.kinds.values():
            now = utcnow()
            with transaction(self.sessions) as session:
                due = session.scalars(
                    select(kind.model.id).where(kind.due(now)).order_by(kind.model.id).limit(limit)
                ).all()
            for row_id in due:
                ok = self._publish_one(kind, row_id)
                published += ok
                if not ok and time.monotonic() < self._quiet_until:
                    return published
        return published

    def _release(self, row_ids: list[int]) -> None:
        """Make claimed stage rows due at once again, for the sweep (the fast path is quiet)."""
        try:
            with transaction(self.sessions) as session:
                session.execute(
                    update(OutboxMessage)
                    .where(OutboxMessage.id.in_(row_ids), OutboxMessage.published_at.is_(None))
                    .values(available_at=utcnow())
                )
        except Exception:
            logger.exception("claimed outbox rows %s not released; the sweep takes them later", row_ids)

    def _publish_one(self, kind: RowKind, row_id: int, claim: Any = None) -> bool:
        if claim is None:
            with transaction(self.sessions) as session:
                claim = kind.claim(session, row_id, utcnow())
        if claim is None:
            return False
        try:
            kind.send(claim)
        except BrokerUnavailableError as exc:
            with transaction(self.sessions) as session:
                quiet_s = kind.unsent(session, row_id, claim, exc)
            self._quiet_until = time.monotonic() + min(quiet_s, MAX_QUIET_S)
            return False
        if kind.marks_sent:
            self.marks.add(kind, row_id, claim)
        return True

    def attach(self, sessions: sessionmaker[Session]) -> None:
        """Publish the outbox rows each transaction of `sessions` adds right after it commits.

        One relay per session factory: a second `attach` to the same factory (the embedded process
        wires the gateway and the workers to one database) leaves the first in place.
        """
        if _ATTACHED.get(sessions) is not None:
            return
        _ATTACHED[sessions] = self
        event.listen(sessions, "after_flush", _collect_added)
        event.listen(sessions, "before_commit", lambda session: _claim_added(self, session))
        event.listen(sessions, "after_begin", lambda session, *_: session.info.__setitem__(_RELAY, self))
        event.listen(sessions, "after_commit", lambda session: _committed(self, session))
        event.listen(sessions, "after_rollback", _rolled_back)
        event.listen(sessions, "after_transaction_create", _began)
        event.listen(sessions, "after_transaction_end", _ended)


_ATTACHED: weakref.WeakKeyDictionary[sessionmaker[Session], Relay] = weakref.WeakKeyDictionary()
# Runs the fast path after a commit: inline unless a server that serves requests on greenlets sets
# one (`publish_in_background`).
_spawn: Callable[[Callable[[], object]], object] | None = None


def publish_in_background(spawn: Callable[[Callable[[], object]], object]) -> None:
    """Run each commit's fast path with `spawn` (e.g. `gevent.spawn`) instead of inline, so a request
    answers once its rows are committed without waiting for the broker. The rows are the hand-off:
    if the process dies before its fast path runs, the sweep publishes them. Marks then linger."""
    global _spawn
    _spawn = spawn
    for relay in list(_ATTACHED.values()):
        relay.marks.linger_s = LINGER_S


class _ThreadState(threading.local):
    def __init__(self) -> None:
        # Sessions of this thread with a transaction open, and rows committed but not yet handed on.
        self.open: weakref.WeakSet[Session] = weakref.WeakSet()
        self.committed: list[tuple[Relay, str, list[int], dict[int, Any]]] = []


_thread = _ThreadState()


def _collect_added(session: Session, _flush: Any) -> None:
    for row in session.new:
        kind = KIND_OF.get(type(row))
        if kind is not None:
            session.info.setdefault(_ADDED, {}).setdefault(kind, []).append(row.id)


def claim_added(session: Session) -> None:
    """Claim the stage rows the session's transaction added so far, now rather than just before it
    commits: a transaction that ends holding a hot row lock (an upload's quota counters) calls it
    first, so the lock is held for as few statements as possible."""
    relay = session.info.get(_RELAY)
    if relay is not None:
        _claim_added(relay, session)


def _claim_added(relay: Relay, session: Session) -> None:
    """Claim the stage rows this transaction added, in it: the fast path then needs no transaction
    of its own to claim them. While the fast path is quiet they stay due, for the sweep."""
    claimed = session.info.setdefault(_CLAIMED, {})
    ids = [i for i in session.info.get(_ADDED, {}).get(STAGES, ()) if i not in claimed]
    if not ids or relay.quiet():
        return
    # The lane reads the tenant's counter as this transaction will leave it.
    claimed.update(relay.stages.claim_many(session, ids, utcnow(), job_counters.pending_jobs(session)))


def _committed(relay: Relay, session: Session) -> None:
    claims = session.info.pop(_CLAIMED, {})
    for kind, ids in session.info.pop(_ADDED, {}).items():
        _thread.committed.append((relay, kind, ids, claims if kind == STAGES else {}))


def _rolled_back(session: Session) -> None:
    session.info.pop(_ADDED, None)
    session.info.pop(_CLAIMED, None)


def _began(session: Session, tx: SessionTransaction) -> None:
    if tx.parent is None:
        _thread.open.add(session)


def _ended(session: Session, tx: SessionTransaction) -> None:
    """Hand what committed to the relay once no other transaction of this thread is open: one still
    open may hold the locks the relay's own short transactions need (SQLite's writer lock, a job row
    on PostgreSQL), so the rows wait until the outermost one ends."""
    if tx.parent is not None:
        return
    _thread.open.discard(session)
    if not _thread.committed or any(s.in_transaction() for s in _thread.open):
        return
    added, _thread.committed = _thread.committed, []
    for relay, kind, ids, claims in added:
        if _spawn is None:
            relay.publish(ids, kind, claims)
        else:
            _spawn(functools.partial(relay.publish, ids, kind, claims))
