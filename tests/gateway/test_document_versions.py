"""The version a document shows as indexed is the one search serves: a newer job that is cancelled or
fails leaves it in place, a newer one that completes replaces it, and a job cancelled after its index
stage (which removed the older points) leaves none. Stages are run one by one, as the pipeline would."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from ingest_worker.resources import Resources
from shared import jobs
from shared import reindex as reindexing
from shared.errors import PermanentError
from shared.models import Job, Reindex
from shared.queue import STAGES
from shared.settings import Settings
from tests.conftest import auth, tenant_key
from tests.support.inprocess import InProcess, in_process_service
from tests.support.pdfs import text_pdf
from tests.support.stage_runs import run_stages

PAGES = ["The first version of the harbour survey. " * 30, "Its second page, on the lighthouse. " * 30]


@pytest.fixture
def service(settings: Settings) -> Iterator[InProcess]:
    with in_process_service(settings, worker=False) as running:
        yield running


def upload(client: Any, key: str, *, force: bool = False) -> dict[str, Any]:
    answer = client.post(
        "/v1/documents" + ("?force=true" if force else ""),
        headers=auth(key),
        data={"file": (io.BytesIO(text_pdf(PAGES)), "survey.pdf")},
    )
    assert answer.status_code == 202, answer.get_json()
    return answer.get_json()  # type: ignore[no-any-return]


def document(client: Any, key: str, document_id: str) -> dict[str, Any]:
    answer = client.get(f"/v1/documents/{document_id}", headers=auth(key))
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()  # type: ignore[no-any-return]


def points_of(res: Resources, job_id: str) -> int:
    with res.db.transaction() as session:
        job = session.get(Job, job_id)
        assert job is not None and job.embedding_model and job.embedding_dim
        collection = res.vectors.collection(job.embedding_model, job.embedding_dim)
        return res.vectors.count(collection, job.tenant_id, job_id=job_id)


def indexed_once(service: InProcess) -> tuple[Any, str, dict[str, Any]]:
    client = service.app.test_client()
    key = tenant_key(service.app, "acme")
    first = upload(client, key)
    run_stages(service.resources, first["job_id"])
    return client, key, first


def test_a_completed_ingest_shows_its_version_as_indexed(service: InProcess) -> None:
    # Given a document uploaded but not yet ingested
    client = service.app.test_client()
    key = tenant_key(service.app, "acme")
    first = upload(client, key)
    assert document(client, key, first["document_id"])["indexed"] is None
    # When its job completes
    run_stages(service.resources, first["job_id"])
    # Then the document shows that job's version, with the points search serves
    indexed = document(client, key, first["document_id"])["indexed"]
    assert indexed["job_id"] == first["job_id"] and indexed["kind"] == "ingest"
    assert indexed["index_version"] == 1 and indexed["chunks"] >= 1
    assert indexed["points"] == indexed["chunks"] == points_of(service.resources, first["job_id"])


def test_a_cancelled_forced_reingest_keeps_showing_the_earlier_version(service: InProcess) -> None:
    # Given an indexed document and a forced re-ingest that got as far as embedding
    client, key, first = indexed_once(service)
    second = upload(client, key, force=True)
    assert second["document_id"] == first["document_id"]
    run_stages(service.resources, second["job_id"], STAGES[: STAGES.index("embed") + 1])
    # When the client cancels the re-ingest, and it stops at its next stage boundary
    assert client.post(f"/v1/jobs/{second['job_id']}/cancel", headers=auth(key)).status_code == 202
    run_stages(service.resources, second["job_id"], ("index",))
    # Then its latest job is the cancelled one, but the earlier version is still what is indexed
    body = document(client, key, first["document_id"])
    assert body["latest_job"]["status"] == "cancelled" and body["latest_job"]["counters"]["points"] == 0
    assert body["indexed"]["job_id"] == first["job_id"]
    assert body["indexed"]["points"] == points_of(service.resources, first["job_id"]) > 0


def test_a_failed_reingest_keeps_showing_the_earlier_version(service: InProcess) -> None:
    # Given an indexed document and a re-ingest that fails for good after chunking
    client, key, first = indexed_once(service)
    second = upload(client, key, force=True)
    run_stages(service.resources, second["job_id"], STAGES[: STAGES.index("chunk") + 1])
    with service.resources.db.transaction() as session:
        jobs.fail(
            session, second["job_id"], PermanentError("The embedder refused.", code="embedding_rejected")
        )
    # When the document is read
    body = document(client, key, first["document_id"])
    # Then the failed job is the latest, and the earlier version is the one indexed
    assert body["latest_job"]["status"] == "failed"
    assert body["indexed"]["job_id"] == first["job_id"]


def test_a_completed_reingest_replaces_the_indexed_version(service: InProcess) -> None:
    # Given an indexed document and a forced re-ingest
    client, key, first = indexed_once(service)
    second = upload(client, key, force=True)
    # When the re-ingest completes
    run_stages(service.resources, second["job_id"])
    # Then it is the indexed version, and the earlier version's points are gone
    indexed = document(client, key, first["document_id"])["indexed"]
    assert indexed["job_id"] == second["job_id"]
    assert indexed["points"] == points_of(service.resources, second["job_id"]) > 0
    assert points_of(service.resources, first["job_id"]) == 0


def test_a_reingest_cancelled_after_indexing_leaves_nothing_indexed(service: InProcess) -> None:
    # Given an indexed document and a re-ingest that finished its index stage (removing older points)
    client, key, first = indexed_once(service)
    second = upload(client, key, force=True)
    run_stages(service.resources, second["job_id"], STAGES[: STAGES.index("index") + 1])
    assert points_of(service.resources, first["job_id"]) == 0
    # When it is cancelled before finalize (it then removes its own points)
    client.post(f"/v1/jobs/{second['job_id']}/cancel", headers=auth(key))
    run_stages(service.resources, second["job_id"], ("finalize",))
    # Then nothing is indexed, and the document says so rather than naming a version with no points
    assert points_of(service.resources, second["job_id"]) == 0
    assert document(client, key, first["document_id"])["indexed"] is None


def test_a_reindex_serves_its_version_only_once_it_flips(service: InProcess) -> None:
    # Given an indexed document and a reindex of its tenant whose job completed into the next version
    client, key, first = indexed_once(service)
    res = service.resources
    with res.db.transaction() as session:
        tenant_id = session.get(Job, first["job_id"]).tenant_id  # type: ignore[union-attr]
        reindex, created = reindexing.start(session, res.settings, tenant_id)
        reindex_id = reindex.id
    assert created == 1
    with res.db.transaction() as session:
        job_id = session.scalars(select(Job.id).where(Job.kind == "reindex")).one()
    run_stages(res, job_id)
    before = document(client, key, first["document_id"])["indexed"]
    # When the maintenance loop flips the tenant to the new version
    with res.db.transaction() as session:
        assert reindexing.advance(session, session.get(Reindex, reindex_id), window=10) == "flipped"  # type: ignore[arg-type]
    after = document(client, key, first["document_id"])["indexed"]
    chunks = client.get(f"/v1/documents/{first['document_id']}/chunks", headers=auth(key)).get_json()
    # Then the old version was indexed until the flip, and the reindex job's is after it, its chunks
    # (reused from the first job) served under it
    assert (before["job_id"], before["index_version"]) == (first["job_id"], 1)
    assert (after["job_id"], after["kind"], after["index_version"]) == (job_id, "reindex", 2)
    assert chunks["job_id"] == job_id and len(chunks["items"]) == after["chunks"] > 0
