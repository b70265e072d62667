"""The service wired in this process, as deploy/embedded.py wires it: gateway, worker threads and,
when asked, the maintenance loop, on whichever broker, database and stores the settings name."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from flask import Flask

import ingest_worker.actors as actors
from gateway.app import create_app
from ingest_worker.broker import build_broker, start_workers
from ingest_worker.maintenance import MaintenanceLoop
from ingest_worker.resources import Resources, configure
from shared import operations
from shared.models import Document
from shared.outbox import Relay
from shared.queue import Publisher
from shared.settings import Settings
from shared.tenants import create_tenant
from tests.support.databases import migrate_database


@dataclass
class InProcess:
    app: Flask
    resources: Resources
    broker: Any


@contextmanager
def in_process_service(
    settings: Settings, *, threads: int = 1, maintenance: bool = False, worker: bool = True
) -> Iterator[InProcess]:
    """A fresh broker with every actor declared, worker threads on it, and the gateway."""
    migrate_database(settings.effective_database_url)
    resources = Resources(settings)
    configure(resources)
    broker = build_broker(settings)
    actors.declare_on(broker)
    app = create_app(
        settings,
        publisher=Publisher(broker),
        db=resources.db,
        vectors=resources.vectors,
        embedder=resources.embedder,
    )
    running = (
        start_workers(
            broker,
            stage_threads=threads,
            webhook_threads=settings.webhook_worker_threads,
            worker_timeout_ms=50,
        )
        if worker
        else []
    )
    relay = Relay.from_settings(resources.db.sessions, Publisher(broker), settings)
    loop = MaintenanceLoop(resources.db, relay, settings, lambda: resources.vectors)
    if maintenance:
        loop.start_thread()
    try:
        yield InProcess(app, resources, broker)
    finally:
        loop.stop()
        for each in running:
            each.stop()
        broker.close()
        resources.vectors.close()


def create_document_job(res: Resources, pdf: bytes, *, tenant: str = "acme") -> tuple[str, str]:
    """A tenant, a stored document and its queued ingest job, as the gateway would leave them
    (committed with its outbox row, which a relay attached to `res.db` publishes at once, as in a
    running service). Returns (tenant id, job id)."""
    import hashlib

    key = f"documents/{hashlib.sha256(pdf).hexdigest()}.pdf"
    res.storage.put_bytes(key, pdf)
    with res.db.transaction() as session:
        owner, _ = create_tenant(session, tenant)
        document = Document(
            tenant_id=owner.id,
            filename="a.pdf",
            sha256=hashlib.sha256(pdf).hexdigest(),
            size_bytes=len(pdf),
            object_key=key,
        )
        session.add(document)
        session.flush()
        return owner.id, operations.create_job(session, tenant_id=owner.id, document_id=document.id).id
