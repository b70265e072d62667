"""Document metadata in the points' payload: under `metadata` only, so it never overwrites the
payload's own keys; a PATCH rewrites it in place (no re-embedding) through a `metadata` job; and a
PATCH racing an ingest ends with the newest metadata on every point. The race tests run the stages
one by one, as the pipeline would deliver them."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask

from ingest_worker import stage_io
from ingest_worker.actors import STAGE_POLICIES, WORK
from ingest_worker.resources import Resources
from ingest_worker.runner import run_stage
from ingest_worker.stages.index import PointOrigin, index_points
from shared import operations
from shared.artifacts import Chunk
from shared.models import Document, Job
from shared.queue import HALT
from shared.settings import Settings
from tests.e2e.test_pipeline_embedded import new_key, wait_final
from tests.support.databases import migrate_database
from tests.support.inprocess import create_document_job, in_process_service
from tests.support.pdfs import text_pdf

PAGES = ["Invoices are due thirty days after delivery. " * 40, "Late payments carry interest. " * 40]
# Every key the index stage puts at a payload's top level, and `metadata` itself.
RESERVED = [
    "tenant_id",
    "document_id",
    "job_id",
    "chunk_index",
    "page_start",
    "page_end",
    "char_start",
    "char_end",
    "heading",
    "sections",
    "text",
    "index_version",
    "embedding_model",
    "extractor_version",
    "chunker_version",
    "filename",
    "metadata",
]
HOSTILE = {key: f"forged {key}" for key in RESERVED} | {"index_version": 999}


def points(res: Resources, tenant_id: str, document_id: str) -> list[Any]:
    store = res.vectors
    collection = store.collection(res.embedder.model_name, res.embedder.dimension)
    found = store.records(collection, tenant_id=tenant_id, with_vectors=True)
    return [p for p in found if p.payload["document_id"] == document_id]


def test_the_builder_puts_metadata_under_its_own_key() -> None:
    # Given an origin whose metadata names every reserved payload key
    origin = PointOrigin(
        tenant_id="t1",
        document_id="d1",
        job_id="j1",
        index_version=3,
        embedding_model="m",
        extractor_version=None,
        chunker_version=None,
        metadata=HOSTILE,
    )
    # When a chunk's point is built
    _, (payload,) = index_points([Chunk(0, "text", 1, 1, 0, 4, token_count=1)], origin)
    # Then the payload's own keys are the origin's, and the metadata sits whole under `metadata`
    assert (payload["tenant_id"], payload["document_id"], payload["job_id"]) == ("t1", "d1", "j1")
    assert payload["index_version"] == 3 and payload["text"] == "text" and payload["chunk_index"] == 0
    assert payload["metadata"] == HOSTILE


@pytest.fixture
def service(settings: Settings) -> Iterator[tuple[Flask, Resources]]:
    with in_process_service(settings) as service:
        yield service.app, service.resources


@pytest.mark.slow
def test_metadata_named_after_payload_keys_stays_under_metadata_and_a_patch_rewrites_it(
    service: tuple[Flask, Resources],
) -> None:
    app, res = service
    client = app.test_client()
    tenant_id, key = new_key(res)
    headers = {"Authorization": f"Bearer {key}"}
    # Given a document uploaded with metadata that names every reserved payload key
    up = client.post(
        "/v1/documents",
        headers=headers,
        data={"file": (io.BytesIO(text_pdf(PAGES)), "a.pdf"), "metadata": json.dumps(HOSTILE)},
    )
    job = wait_final(client, up.headers["Location"], key)
    assert job["status"] == "completed"
    document_id = up.get_json()["document_id"]
    # Then every point's own keys are the real ones, and the metadata sits under `metadata`
    before = points(res, tenant_id, document_id)
    assert len(before) == job["counters"]["points"] > 0
    for point in before:
        assert point.payload["tenant_id"] == tenant_id and point.payload["document_id"] == document_id
        assert point.payload["job_id"] == job["job_id"] and point.payload["index_version"] == 1
        assert not point.payload["text"].startswith("forged")
        assert point.payload["metadata"] == HOSTILE
    # And search still finds the document's chunks
    results = client.get("/v1/search?q=invoices due", headers=headers).get_json()["results"]
    assert results and results[0]["document_id"] == document_id

    # When the client replaces the metadata
    patched = client.patch(f"/v1/documents/{document_id}", headers=headers, json={"metadata": {"year": 2026}})
    assert patched.status_code == 202
    assert wait_final(client, patched.headers["Location"], key)["status"] == "completed"
    # Then every point carries the new metadata, with the same vectors and the same other keys
    after = {p.id: p for p in points(res, tenant_id, document_id)}
    assert set(after) == {p.id for p in before}
    for point in before:
        assert after[point.id].payload == {**point.payload, "metadata": {"year": 2026}}
        assert after[point.id].vectors == point.vectors


# The race: stages one by one.


def run(res: Resources, job_id: str, stage: str) -> Any:
    return run_stage(
        res, job_id, stage, WORK[stage], policy=STAGE_POLICIES[stage][0], on_cancel=stage_io.delete_job_points
    )


@pytest.fixture
def res(settings: Settings) -> Iterator[Resources]:
    migrate_database(settings.effective_database_url)
    resources = Resources(settings)
    yield resources
    resources.vectors.close()


def ingest_up_to_embed(res: Resources) -> tuple[str, str, str]:
    """A document with metadata {"v": 1} whose ingest job has run up to and including embed."""
    tenant_id, job_id = create_document_job(res, text_pdf(PAGES))
    with res.db.transaction() as session:
        job = session.get(Job, job_id)
        assert job is not None
        document = session.get(Document, job.document_id)
        assert document is not None
        document.user_metadata = {"v": 1}
        document_id = document.id
    for stage in ("validate", "extract", "ocr", "chunk", "embed"):
        assert run(res, job_id, stage) is None
    return tenant_id, document_id, job_id


def patch(res: Resources, document_id: str, metadata: dict[str, Any]) -> str:
    """What PATCH /v1/documents/<id> does: returns the metadata job's id."""
    with res.db.transaction() as session:
        document = session.get(Document, document_id)
        assert document is not None
        return operations.change_metadata(session, document, metadata).id


def metadata_on_points(res: Resources, tenant_id: str, document_id: str) -> list[Any]:
    return [p.payload["metadata"] for p in points(res, tenant_id, document_id)]


def test_a_patch_between_embed_and_index_ends_with_the_newest_metadata_on_every_point(res: Resources) -> None:
    # Given an ingest that has embedded its chunks but not indexed them
    tenant_id, document_id, job_id = ingest_up_to_embed(res)
    # When the client patches the metadata and its metadata job runs first (there are no points yet)
    metadata_job = patch(res, document_id, {"v": 2})
    assert run(res, metadata_job, "metadata") is None
    # And then the ingest indexes and finishes
    for stage in ("index", "finalize"):
        assert run(res, job_id, stage) is None
    # Then every point carries the newest metadata, and both jobs completed
    found = metadata_on_points(res, tenant_id, document_id)
    assert found and all(m == {"v": 2} for m in found)
    with res.db.transaction() as session:
        assert {session.get(Job, j).status for j in (job_id, metadata_job)} == {"completed"}  # type: ignore[union-attr]


def test_a_patch_while_the_index_stage_writes_ends_with_the_newest_metadata(res: Resources) -> None:
    # Given an ingest that has embedded its chunks, whose index stage read the metadata {"v": 1}
    tenant_id, document_id, job_id = ingest_up_to_embed(res)
    store = res.vectors
    real_upsert = store.upsert

    def upsert_after_a_patch(*args: Any, **kwargs: Any) -> None:
        # When, before its points are written, the client patches twice and both metadata jobs run
        for value in (2, 3):
            assert run(res, patch(res, document_id, {"v": value}), "metadata") is None
        store.upsert = real_upsert  # type: ignore[method-assign]
        real_upsert(*args, **kwargs)

    store.upsert = upsert_after_a_patch  # type: ignore[method-assign]
    for stage in ("index", "finalize"):
        assert run(res, job_id, stage) is None
    # Then the index stage saw the change after writing and every point carries the newest metadata
    found = metadata_on_points(res, tenant_id, document_id)
    assert found and all(m == {"v": 3} for m in found)


def test_deleting_the_document_cancels_its_queued_metadata_job(res: Resources) -> None:
    # Given an indexed document and a queued metadata job
    tenant_id, document_id, job_id = ingest_up_to_embed(res)
    for stage in ("index", "finalize"):
        assert run(res, job_id, stage) is None
    metadata_job = patch(res, document_id, {"v": 2})
    # When the document is deleted before the metadata job runs
    with res.db.transaction() as session:
        document = session.get(Document, document_id)
        assert document is not None
        operations.delete_document(session, document)
    # Then the metadata job is cancelled and never writes (the delete job removes the points)
    assert run(res, metadata_job, "metadata") == HALT
    with res.db.transaction() as session:
        assert session.get(Job, metadata_job).status == "cancelled"  # type: ignore[union-attr]
    assert all(m == {"v": 1} for m in metadata_on_points(res, tenant_id, document_id))
