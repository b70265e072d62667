"""Helpers for the reindex tests: a tenant with documents ingested through the gateway, a search
loop from another thread, and reading back every point a tenant has in Qdrant."""

from __future__ import annotations

import io
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from flask import Flask

from ingest_worker.resources import Resources
from shared import reindex as reindexes
from shared.models import KeyRole, Reindex, Tenant
from shared.tenants import create_tenant, new_api_key
from tests.support.pdfs import text_pdf

TOPICS = [
    "glaciers", "volcanoes", "orchards", "lighthouses", "bridges", "telescopes", "beehives", "deserts",
    "harbours", "vineyards", "satellites", "coral reefs", "libraries", "railways", "windmills", "caves",
    "rainforests", "observatories", "salt marshes", "bakeries", "canals", "glassworks", "quarries",
]  # fmt: skip
TERMINAL = {"completed", "failed", "dead_lettered", "cancelled"}


def document_text(topic: str) -> str:
    return f"A field report about {topic}: how {topic} are studied, kept and visited over the years. " * 6


def tenant_with_key(res: Resources, name: str) -> tuple[str, str]:
    with res.db.transaction() as session:
        tenant, key = create_tenant(session, name)
        return tenant.id, key


def admin_key(res: Resources) -> str:
    with res.db.transaction() as session:
        return new_api_key(session, None, KeyRole.ADMIN)


def upload(client: Any, key: str, topic: str) -> dict[str, Any]:
    data = {"file": (io.BytesIO(text_pdf([document_text(topic)])), f"{topic}.pdf")}
    answer = client.post("/v1/documents", data=data, headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 202, answer.get_json()
    return answer.get_json()  # type: ignore[no-any-return]


def wait_jobs(client: Any, key: str, job_ids: list[str], timeout_s: float = 300) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    pending = set(job_ids)
    bodies: dict[str, dict[str, Any]] = {}
    while pending and time.monotonic() < deadline:
        for job_id in list(pending):
            body = client.get(f"/v1/jobs/{job_id}", headers={"Authorization": f"Bearer {key}"}).get_json()
            if body["status"] in TERMINAL:
                bodies[job_id] = body
                pending.discard(job_id)
        time.sleep(0.2)
    assert not pending, f"jobs not final within {timeout_s}s: {pending}"
    return [bodies[j] for j in job_ids]


def ingest(client: Any, key: str, topics: list[str]) -> dict[str, str]:
    """Upload one document per topic and wait until all are completed: topic → document id."""
    answers = {topic: upload(client, key, topic) for topic in topics}
    finished = wait_jobs(client, key, [a["job_id"] for a in answers.values()])
    assert all(j["status"] == "completed" for j in finished), finished
    return {topic: a["document_id"] for topic, a in answers.items()}


def wait_reindex(res: Resources, tenant_id: str, timeout_s: float = 300) -> Reindex:
    """The tenant's latest reindex once it is no longer running."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with res.db.transaction() as session:
            row = reindexes.latest_reindex(session, tenant_id)
            if row is not None and row.status != "running":
                session.expunge(row)
                return row
        time.sleep(0.2)
    raise AssertionError(f"the reindex did not end within {timeout_s}s")


def wait_purged(res: Resources, tenant_id: str, timeout_s: float = 30) -> bool:
    """Whether the tenant's latest reindex has had the versions it left behind deleted: the
    maintenance pass flips a reindex first and purges after, so a flipped one may not be purged yet."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with res.db.transaction() as session:
            row = reindexes.latest_reindex(session, tenant_id)
            if row is not None and row.purged_at is not None:
                return True
        time.sleep(0.1)
    return False


def active_version(res: Resources, tenant_id: str) -> int:
    with res.db.transaction() as session:
        tenant = session.get(Tenant, tenant_id)
        assert tenant is not None
        return tenant.active_index_version


def points_of(res: Resources, collection: str, tenant_id: str) -> list[dict[str, Any]]:
    """Every payload of the tenant's points in `collection` (read straight from Qdrant)."""
    return [{"id": p.id, **p.payload} for p in res.vectors.records(collection, tenant_id=tenant_id)]


@dataclass
class SearchLoop:
    """Searches the tenant's documents over and over from another thread, keeping every answer."""

    app: Flask
    key: str
    query: str = "a field report about how places are studied"
    answers: list[dict[str, Any]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        client = self.app.test_client()
        headers = {"Authorization": f"Bearer {self.key}"}
        while not self.stop.is_set():
            answer = client.get(f"/v1/search?q={self.query}&top_k=10", headers=headers)
            assert answer.status_code == 200, answer.get_json()
            self.answers.append(answer.get_json())
            time.sleep(0.05)

    def __enter__(self) -> SearchLoop:
        self.thread = threading.Thread(target=self.run, name="search-loop", daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
