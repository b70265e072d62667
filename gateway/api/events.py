"""The job's events as a server-sent event stream, read from the stored events (any process may have
written them), resumable from Last-Event-ID, ending once the job is final or after `events_max_s`.

A final job whose last event the client has seen is a 204 at once, which takes no slot. Each open
stream holds one of the tenant's `events_max_streams_per_tenant` slots (gateway/stream_leases.py,
shared by every gateway process); a further one is a 429 with Retry-After. A server whose streams
hold threads (the embedded one) also caps its own streams (`limit_streams_per_process`), shared fairly
among tenants (gateway/stream_slots.py), so that streams never take every thread: beyond it a stream
is a 503 with Retry-After. Every `CREDENTIAL_CHECK_S` an open stream checks that its key still works
and its tenant is active, and ends when not: the client's reconnect is then the 401 or 403. Only the
Authorization header authenticates: no credential is read from the URL, where logs and proxies would
keep it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from flask import Flask, Response, current_app, g, request
from sqlalchemy import select

from gateway import stream_leases
from gateway.auth import Caller, still_authorised, tenant_required
from gateway.blueprint import Blueprint
from gateway.job_queries import get_job
from gateway.request_checks import MAX_ID
from gateway.schemas.jobs import EventStreamArgsSchema
from gateway.services import services
from gateway.stream_slots import StreamSlots
from shared.db import Database
from shared.errors import InvalidRequestError, NotFoundError, StreamsBusyError
from shared.jobs import TERMINAL
from shared.models import Job, JobEvent
from shared.webhooks import event_body

blp = Blueprint("events", __name__, description="Live progress as server-sent events")

BATCH = 200
# A comment line now and then keeps proxies from closing a quiet stream.
KEEPALIVE_S = 15.0
# How often an open stream checks its key and tenant (one small read, in its poll's transaction): a
# revoked key or a suspended tenant stops receiving events within about this.
CREDENTIAL_CHECK_S = 2.0
FINAL = {s.value for s in TERMINAL}
SLOTS = "event_stream_slots"


def limit_streams_per_process(app: Flask, slots: int, *, per_tenant: int | None = None) -> None:
    """At most `slots` streams open at once in this process, at most `per_tenant` of them (by default
    half) one tenant's (for a server with a thread per request; a greenlet server needs none)."""
    app.extensions[SLOTS] = StreamSlots(slots, per_tenant=per_tenant)


def _last_seen(last_event_id: int | None) -> int:
    """The seq the client saw last (header first, then query); one no job can reach (beyond a 64-bit
    integer, which no database compares with) is a 400, as is one that is not an integer."""
    header = request.headers.get("Last-Event-ID")
    try:
        seen = (last_event_id or 0) if header is None else int(header.strip())
    except ValueError:
        seen = MAX_ID + 1
    if seen > MAX_ID:
        raise InvalidRequestError(
            "Last-Event-ID must be a seq (an integer below 2^63).", code="invalid_last_event_id"
        )
    return max(seen, 0)


def _stream(
    db: Database, job_id: str, after: int, lease_id: str, caller: Caller, *, poll_s: float, max_s: float
) -> Iterator[str]:
    deadline = time.monotonic() + max_s
    quiet_since = renewed = checked = time.monotonic()
    yield "retry: 2000\n\n"
    while True:
        if time.monotonic() - renewed >= stream_leases.LEASE_S / 3:
            renewed = time.monotonic()
            with db.transaction() as session:
                if not stream_leases.renew(session, lease_id):
                    return  # the slot lapsed (a stalled process): the client reconnects and resumes
        with db.transaction() as session:
            if time.monotonic() - checked >= CREDENTIAL_CHECK_S:
                checked = time.monotonic()
                if not still_authorised(session, caller):
                    return  # a revoked key or a suspended tenant: the reconnect is told which
            # The status first: every event committed before it is then visible to the next read
            # (PostgreSQL reads each statement at its own snapshot), so a final status comes with
            # its final event.
            status = session.scalar(select(Job.status).where(Job.id == job_id))
            events = session.execute(
                select(JobEvent.seq, JobEvent.type, JobEvent.payload)
                .where(JobEvent.job_id == job_id, JobEvent.seq > after)
                .order_by(JobEvent.seq)
                .limit(BATCH)
            ).all()
        for seq, event_type, payload in events:
            body = json.dumps(event_body(event_type, payload), separators=(",", ":"))
            yield f"id: {seq}\nevent: {event_type}\ndata: {body}\n\n"
            after = seq
        if events:
            quiet_since = time.monotonic()
            if len(events) == BATCH:
                continue
        if status in FINAL or status is None or time.monotonic() >= deadline:
            return
        if time.monotonic() - quiet_since >= KEEPALIVE_S:
            quiet_since = time.monotonic()
            yield ": keep-alive\n\n"
        time.sleep(poll_s)


@blp.route("/v1/jobs/<job_id>/events", methods=["GET"])
@tenant_required
@blp.arguments(EventStreamArgsSchema, location="query", as_kwargs=True)
@blp.response(200, content_type="text/event-stream", description="The job's events, then the stream ends")
@blp.alt_response(
    204,
    description="The job is final and the client has seen its last event (no body; answered even when "
    "every stream slot is taken)",
)
@blp.alt_response(
    429, description="The tenant has as many streams open as it may (Retry-After says when to try)"
)
@blp.alt_response(
    503,
    description="This server holds as many streams as it may, or the tenant its share of them "
    "(Retry-After says when to try)",
)
def stream_events(job_id: str, last_event_id: int | None = None) -> Any:
    """The job's events as they happen (`id:` is the job's seq), from the first one after
    Last-Event-ID; the stream ends once the job is completed, failed, dead-lettered or cancelled,
    or once the key is revoked or the tenant suspended."""
    svc = services()
    caller: Caller = g.caller
    tenant_id = str(caller.tenant_id)
    after = _last_seen(last_event_id)
    slots: StreamSlots | None = current_app.extensions.get(SLOTS)
    holds_slot = False
    try:
        with svc.db.transaction() as session:
            job = get_job(session, job_id, tenant_id=tenant_id)
            if job is None:
                raise NotFoundError("No such job.")
            if job.status in FINAL and job.seq <= after:
                # Nothing more will come: 204 tells an EventSource to stop reconnecting. It is
                # answered before any slot is taken, so a busy server still tells a client it is done.
                return Response(status=204)
            if slots is not None:
                holds_slot = slots.acquire(tenant_id)
                if not holds_slot:
                    raise StreamsBusyError(retry_after_s=5)
            lease_id = stream_leases.acquire(
                session, tenant_id, cap=svc.settings.events_max_streams_per_tenant
            )
    except BaseException:
        if slots is not None and holds_slot:
            slots.release(tenant_id)
        raise
    stream = _stream(
        svc.db,
        job_id,
        after,
        lease_id,
        caller,
        poll_s=svc.settings.events_poll_s,
        max_s=svc.settings.events_max_s,
    )
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    response = Response(stream, status=200, mimetype="text/event-stream", headers=headers)
    # The server closes the response when the stream ends or the client goes, started or not.
    response.call_on_close(lambda: _release(svc.db, lease_id, slots, tenant_id))
    return response


def _release(db: Database, lease_id: str, slots: StreamSlots | None, tenant_id: str) -> None:
    try:
        with db.transaction() as session:
            stream_leases.release(session, lease_id)
    finally:
        if slots is not None:
            slots.release(tenant_id)
