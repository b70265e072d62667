"""Reindexing without downtime, end to end on the service wired in-process (real Qdrant local mode,
the tests' fake embedder, SQLite or PostgreSQL): searches never go empty or mix versions, the flip is
the maintenance loop's, uploads and deletes during a reindex are kept, other tenants untouched."""

from __future__ import annotations

import time

import dramatiq
import pytest
from sqlalchemy import select

from ingest_worker.maintenance import requeue_unfinished
from shared import reindex as reindexes
from shared.models import Job, JobKind, JobStage
from shared.queue import QUEUE_BULK_INDEX
from shared.settings import Settings
from shared.vectorstores import hybrid_collection_name
from tests.shared.embedders.fakes import FakeEmbedder
from tests.support.inprocess import in_process_service
from tests.support.openai_server import OpenAIServer
from tests.support.reindexing import (
    TOPICS,
    SearchLoop,
    active_version,
    admin_key,
    ingest,
    points_of,
    tenant_with_key,
    upload,
    wait_purged,
    wait_reindex,
)

pytestmark = pytest.mark.slow

# The collection of the embedder the tests' settings name (the fake, at the offline model's 384-d).
DEFAULT = hybrid_collection_name("chunks", FakeEmbedder.model_name, FakeEmbedder.dimension)


def fast(settings: Settings, **changes: object) -> Settings:
    return settings.replace(maintenance_interval_s=0.2, **changes)


def test_a_tenant_is_reindexed_while_it_searches_uploads_and_deletes(settings: Settings) -> None:
    # A short hand-off stall, so a reindex job waiting in the bulk queue would be taken for lost
    # unless its hand-offs are recorded like any other job's.
    with in_process_service(fast(settings, handoff_stall_s=2), threads=2, maintenance=True) as service:
        client, res = service.app.test_client(), service.resources
        # Given a tenant with 20 documents, and another tenant with 2
        tenant_id, key = tenant_with_key(res, "acme")
        documents = ingest(client, key, TOPICS[:20])
        other_id, other_key = tenant_with_key(res, "other")
        ingest(client, other_key, TOPICS[20:22])
        others_before = sorted((p["id"], p["index_version"]) for p in points_of(res, DEFAULT, other_id))
        admin = {"Authorization": f"Bearer {admin_key(res)}"}

        # When an operator reindexes the tenant while it searches without pause, uploads a
        # document and deletes another
        with SearchLoop(service.app, key) as searches:
            started = client.post(f"/v1/admin/tenants/{tenant_id}/reindex", json={}, headers=admin)
            assert started.status_code == 202, started.get_json()
            assert started.get_json()["total"] == 20
            late = upload(client, key, TOPICS[22])
            deleted = documents[TOPICS[0]]
            assert (
                client.delete(
                    f"/v1/documents/{deleted}", headers={"Authorization": f"Bearer {key}"}
                ).status_code
                == 202
            )
            reindex = wait_reindex(res, tenant_id)
            time.sleep(1)  # a few searches after the flip

        # Then the new version became active, and no search ever came back empty or mixed versions
        assert reindex.status == "flipped", reindex.failures
        assert active_version(res, tenant_id) == 2
        versions = [a["index_version"] for a in searches.answers]
        assert versions[0] == 1 and versions[-1] == 2 and versions == sorted(versions)
        for answer in searches.answers:
            assert len(answer["results"]) == 10
            assert {r["index_version"] for r in answer["results"]} == {answer["index_version"]}
            hits = [(r["document_id"], r["chunk_index"]) for r in answer["results"]]
            assert len(set(hits)) == len(hits)
        # And every point of the tenant is of the new version (the old ones are gone), the upload
        # made during the reindex is in it and the deleted document is in no version
        assert wait_purged(res, tenant_id)
        points = points_of(res, DEFAULT, tenant_id)
        assert points and {p["index_version"] for p in points} == {2}
        indexed = {p["document_id"] for p in points}
        assert late["document_id"] in indexed and deleted not in indexed
        assert indexed == (set(documents.values()) - {deleted}) | {late["document_id"]}
        # And no reindex job was ever taken for lost while it waited in the bulk lane
        with res.db.transaction() as session:
            recoveries = session.scalars(
                select(Job.recoveries).where(Job.kind == JobKind.REINDEX.value)
            ).all()
        assert len(recoveries) >= 20 and set(recoveries) == {0}
        # And the other tenant's points are untouched, its searches still answered from version 1
        assert (
            sorted((p["id"], p["index_version"]) for p in points_of(res, DEFAULT, other_id)) == others_before
        )
        answer = client.get("/v1/search?q=bakeries", headers={"Authorization": f"Bearer {other_key}"})
        assert answer.get_json()["index_version"] == 1 and answer.get_json()["results"]


def test_a_reindex_to_a_model_of_another_dimension_fills_a_new_collection(settings: Settings) -> None:
    with OpenAIServer(api_key="sk-test") as server:
        configured = fast(settings, openai_base_url=server.base_url, openai_api_key="sk-test")
        with in_process_service(configured, threads=2, maintenance=True) as service:
            client, res = service.app.test_client(), service.resources
            # Given a tenant whose 3 documents are in the default embedder's 384-d collection
            tenant_id, key = tenant_with_key(res, "acme")
            ingest(client, key, TOPICS[:3])
            admin = {"Authorization": f"Bearer {admin_key(res)}"}

            # When it is reindexed to an OpenAI-compatible model at 64 dimensions
            body = {"model": "text-embedding-3-small", "dimension": 64}
            started = client.post(f"/v1/admin/tenants/{tenant_id}/reindex", json=body, headers=admin)
            assert started.status_code == 202, started.get_json()
            reindex = wait_reindex(res, tenant_id)

            # Then the new collection holds all of its points, the old one none, and searches are
            # embedded with the new model
            assert reindex.status == "flipped", reindex.failures
            new = points_of(res, "chunks_text_embedding_3_small_64_hybrid", tenant_id)
            assert {p["document_id"] for p in new} and {p["index_version"] for p in new} == {2}
            assert wait_purged(res, tenant_id) and points_of(res, DEFAULT, tenant_id) == []
            before = len(server.requests)
            answer = client.get("/v1/search?q=orchards", headers={"Authorization": f"Bearer {key}"})
            assert answer.status_code == 200 and answer.get_json()["results"]
            assert server.requests[before:][0].dimensions == 64
            # And an upload after the flip is embedded with the new model too
            late = ingest(client, key, [TOPICS[5]])
            assert late[TOPICS[5]] in {
                p["document_id"] for p in points_of(res, "chunks_text_embedding_3_small_64_hybrid", tenant_id)
            }


@pytest.mark.postgres
def test_a_reindex_stopped_half_way_and_run_again_does_not_redo_finished_documents(
    settings: Settings, pg_server_url: str, pg_db: object
) -> None:
    configured = fast(settings, database_url=pg_server_url)
    with in_process_service(configured, threads=2, maintenance=True) as service:
        client, res = service.app.test_client(), service.resources
        tenant_id, key = tenant_with_key(res, "acme")
        ingest(client, key, TOPICS[:10])
    # Given a reindex whose workers and maintenance loop stop after 4 documents are done
    with in_process_service(configured, threads=1, maintenance=True) as service:
        res = service.resources
        with res.db.transaction() as session:
            reindexes.start(session, configured, tenant_id)
        finished = wait_completed_reindex_jobs(res, tenant_id, at_least=4)
    with res.db.transaction() as session:
        completed = session.scalars(
            select(Job.id).where(Job.kind == JobKind.REINDEX.value, Job.status == "completed")
        ).all()
        assert len(completed) < 10, "the workers stopped too late: every document was already done"
        before = {
            (row.job_id, row.stage): (row.attempts, row.finished_at)
            for row in session.scalars(select(JobStage).where(JobStage.job_id.in_(finished)))
        }

    # When the service starts again and the operator runs the reindex again
    with in_process_service(configured, threads=2, maintenance=True) as service:
        res = service.resources
        requeue_unfinished(res.db)
        with res.db.transaction() as session:
            reindexes.start(session, configured, tenant_id)
        reindex = wait_reindex(res, tenant_id)

        # Then it completes, with one job per document and no stage run again for a finished one
        assert reindex.status == "flipped", reindex.failures
        with res.db.transaction() as session:
            jobs = session.scalars(select(Job).where(Job.kind == JobKind.REINDEX.value)).all()
            assert len(jobs) == 10 and {j.status for j in jobs} == {"completed"}
            after = {
                (row.job_id, row.stage): (row.attempts, row.finished_at)
                for row in session.scalars(select(JobStage).where(JobStage.job_id.in_(finished)))
            }
        assert after == before
        assert wait_purged(res, tenant_id)
        assert {p["index_version"] for p in points_of(res, DEFAULT, tenant_id)} == {2}


def service_relay_publish(service: object) -> None:
    """Publish the outbox once, as the maintenance loop would (it is not running here)."""
    from shared.outbox import Relay
    from shared.queue import Publisher

    relay = Relay(service.resources.db.sessions, Publisher(service.broker))  # type: ignore[attr-defined]
    while relay.publish_pending():
        pass


def wait_completed_reindex_jobs(
    res: object, tenant_id: str, *, at_least: int, timeout_s: float = 300
) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with res.db.transaction() as session:  # type: ignore[attr-defined]
            done = session.scalars(
                select(Job.id).where(
                    Job.tenant_id == tenant_id, Job.kind == JobKind.REINDEX.value, Job.status == "completed"
                )
            ).all()
        if len(done) >= at_least:
            return list(done)
        time.sleep(0.1)
    raise AssertionError("the reindex jobs did not complete")


def test_a_failed_document_keeps_the_old_version_and_a_re_run_retries_only_it(settings: Settings) -> None:
    with OpenAIServer(api_key="sk-test") as server:
        configured = fast(settings, openai_base_url=server.base_url, openai_api_key="sk-test")
        with in_process_service(configured, threads=2, maintenance=True) as service:
            client, res = service.app.test_client(), service.resources
            tenant_id, key = tenant_with_key(res, "acme")
            ingest(client, key, TOPICS[:3])
            target = {"model": "text-embedding-3-small", "dimension": 64}
            # Given a reindex whose first embedding request the provider refuses
            server.fail_next("bad_request")
            with res.db.transaction() as session:
                reindexes.start(session, configured, tenant_id, **target)

            # When every job has ended
            failed = wait_reindex(res, tenant_id)

            # Then the reindex failed listing the document, and searches still use the old version
            assert failed.status == "failed"
            assert [f["error_code"] for f in failed.failures or []] == ["embedding_rejected"]
            assert active_version(res, tenant_id) == 1
            headers = {"Authorization": f"Bearer {key}"}
            answer = client.get("/v1/search?q=glaciers", headers=headers).get_json()
            assert answer["index_version"] == 1 and answer["results"]

            # And running it again retries that document alone, then flips
            with res.db.transaction() as session:
                _, created = reindexes.start(session, configured, tenant_id, **target)
            assert created == 1
            assert wait_reindex(res, tenant_id).status == "flipped"
            with res.db.transaction() as session:
                rows = session.scalars(select(Job.status).where(Job.kind == JobKind.REINDEX.value))
                statuses = sorted(rows)
            assert statuses == ["completed", "completed", "completed", "failed"]
            assert active_version(res, tenant_id) == 2


def test_a_cancelled_reindex_leaves_the_active_version_and_its_points_are_deleted(settings: Settings) -> None:
    configured = fast(settings)
    with in_process_service(configured, threads=2, maintenance=True) as service:
        client, res = service.app.test_client(), service.resources
        tenant_id, key = tenant_with_key(res, "acme")
        ingest(client, key, TOPICS[:3])
        before = sorted(p["id"] for p in points_of(res, DEFAULT, tenant_id))
    # Given a reindex whose jobs all completed, with no maintenance loop to flip it
    with in_process_service(configured, threads=2) as service:
        res = service.resources
        with res.db.transaction() as session:
            reindexes.start(session, configured, tenant_id)
        service_relay_publish(service)
        wait_completed_reindex_jobs(res, tenant_id, at_least=3)
        assert {p["index_version"] for p in points_of(res, DEFAULT, tenant_id)} == {1, 2}

        # When an admin cancels it, and a worker serving the bulk index queue runs, as the index
        # pool of the split topology does (it alone may open the local Qdrant folder)
        admin = {"Authorization": f"Bearer {admin_key(res)}"}
        answer = service.app.test_client().delete(f"/v1/admin/tenants/{tenant_id}/reindex", headers=admin)
        index_pool = dramatiq.Worker(service.broker, queues={QUEUE_BULK_INDEX}, worker_threads=1)
        index_pool.start()
        try:
            purged = wait_purged(res, tenant_id)
        finally:
            index_pool.stop()

        # Then the old version stays active, with exactly its own points, and the new one's are gone
        assert answer.status_code == 200 and answer.get_json()["status"] == "cancelled"
        assert purged and active_version(res, tenant_id) == 1
        assert sorted(p["id"] for p in points_of(res, DEFAULT, tenant_id)) == before
