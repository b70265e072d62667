"""Worker policies on the real Redis broker: retries with backoff, permanent failures, dead letters
and replay, time limits, and fairness between tenants. Faults come from a local OpenAI-compatible
embeddings server scripted to fail, so the workers run unchanged."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

import ingest_worker.actors as actors
from ingest_worker.resources import Resources
from ingest_worker.runner import RetryPolicy
from shared.errors import StorageUnavailableError
from shared.models import DeadLetter, JobEvent, JobStage
from shared.settings import Settings
from tests.conftest import auth, tenant_key
from tests.support import openai_server
from tests.support.inprocess import in_process_service
from tests.support.openai_server import OpenAIServer
from tests.support.pdfs import text_pdf

pytestmark = [pytest.mark.redis, pytest.mark.slow]

FAST_EMBED = RetryPolicy(max_retries=2, min_backoff_ms=100, max_backoff_ms=400)


@dataclass
class Service:
    app: Flask
    resources: Resources
    broker: Any
    provider: OpenAIServer

    def upload(self, key: str, text: str) -> dict[str, Any]:
        response = self.app.test_client().post(
            "/v1/documents", headers=auth(key), data={"file": (io.BytesIO(text_pdf([text])), "doc.pdf")}
        )
        assert response.status_code == 202, response.get_json()
        return response.get_json()  # type: ignore[no-any-return]

    def job(self, key: str, job_id: str) -> dict[str, Any]:
        return self.app.test_client().get(f"/v1/jobs/{job_id}", headers=auth(key)).get_json()  # type: ignore[no-any-return]

    def wait_final(self, key: str, job_id: str, timeout_s: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            body = self.job(key, job_id)
            if body["status"] in {"completed", "failed", "dead_lettered", "cancelled"}:
                return body
            time.sleep(0.05)
        raise AssertionError(f"job {job_id} not final: {body}")

    def stage_attempts(self, job_id: str) -> dict[str, int]:
        with self.resources.db.transaction() as session:
            rows = session.execute(select(JobStage.stage, JobStage.attempts).where(JobStage.job_id == job_id))
            return dict(rows.all())  # type: ignore[arg-type]

    def events(self, job_id: str) -> list[tuple[str, Any]]:
        with self.resources.db.transaction() as session:
            rows = session.execute(
                select(JobEvent.type, JobEvent.created_at)
                .where(JobEvent.job_id == job_id)
                .order_by(JobEvent.seq)
            )
            return list(rows.all())  # type: ignore[arg-type]


@pytest.fixture
def service(
    settings: Settings, broker_fields: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Service]:
    """The worker in this process on each real broker (Redis, RabbitMQ), embedding through the
    scripted server."""
    monkeypatch.setitem(actors.STAGE_POLICIES, "embed", (FAST_EMBED, actors.STAGE_POLICIES["embed"][1]))
    with OpenAIServer() as provider:
        settings = settings.replace(
            **broker_fields,
            embedder="openai",
            openai_api_key=provider.api_key,
            openai_base_url=provider.base_url,
            tenant_max_concurrency=1,
            # Each fault reaches the stage's policy, which is what these tests are about.
            embed_batch_attempts=1,
        )
        with in_process_service(settings, threads=2) as service:
            yield Service(service.app, service.resources, service.broker, provider)


def test_a_transient_fault_is_retried_without_redoing_earlier_stages(service: Service) -> None:
    # Given an embedding provider that answers 503 twice
    key = tenant_key(service.app, "acme")
    service.provider.fail_next("unavailable", times=2)
    # When a document is uploaded
    job_id = service.upload(key, "Retry me twice, then succeed.")["job_id"]
    # Then the job completes, embed ran three times and every earlier stage once
    job = service.wait_final(key, job_id)
    assert job["status"] == "completed" and job["error"] is None
    attempts = service.stage_attempts(job_id)
    assert attempts["embed"] == 3
    assert all(attempts[s] == 1 for s in ("validate", "extract", "ocr", "chunk", "index", "finalize"))
    # And the retries were reported, each waiting a jittered delay within the policy's cap
    events = service.events(job_id)
    assert [t for t, _ in events].count("job.retrying") == 2
    waits = [
        (events[i + 1][1] - at).total_seconds()
        for i, (kind, at) in enumerate(events)
        if kind == "job.retrying"
    ]
    assert all(0.04 <= w <= FAST_EMBED.max_backoff_ms / 1000 + 1.0 for w in waits), waits


def test_a_permanent_fault_fails_the_job_at_once(service: Service) -> None:
    key = tenant_key(service.app, "acme")
    service.provider.fail_next("bad_request")
    job_id = service.upload(key, "The provider refuses this one.")["job_id"]
    job = service.wait_final(key, job_id)
    assert job["status"] == "failed" and job["error"]["code"] == "embedding_rejected"
    assert service.stage_attempts(job_id)["embed"] == 1
    assert "job.retrying" not in [t for t, _ in service.events(job_id)]


def test_exhausted_retries_dead_letter_the_job_and_a_replay_completes_it(service: Service) -> None:
    # Given a provider down for longer than the embed stage's retries
    key = tenant_key(service.app, "acme")
    service.provider.fail_next("unavailable", times=FAST_EMBED.max_retries + 1)
    job_id = service.upload(key, "Down for too long, then back again.")["job_id"]
    # Then the job is dead-lettered and its message kept
    job = service.wait_final(key, job_id)
    assert job["status"] == "dead_lettered" and job["error"]["code"] == "embedding_unavailable"
    with service.resources.db.transaction() as session:
        (letter,) = session.scalars(select(DeadLetter).where(DeadLetter.job_id == job_id)).all()
        assert letter.stage == "embed" and letter.actor == "embed_chunks"
        assert letter.retries == FAST_EMBED.max_retries and letter.message["args"] == [job_id]
    # When the provider is back and the job is replayed, then it completes from the embed stage
    replay = service.app.test_client().post(f"/v1/jobs/{job_id}/retry", headers=auth(key))
    assert replay.status_code == 202
    assert service.wait_final(key, job_id)["status"] == "completed"
    attempts = service.stage_attempts(job_id)
    assert attempts["validate"] == 1 and attempts["embed"] == FAST_EMBED.max_retries + 2
    with service.resources.db.transaction() as session:
        assert (
            session.scalars(select(DeadLetter.replayed_at).where(DeadLetter.job_id == job_id)).one()
            is not None
        )


def test_a_stage_over_its_time_limit_is_stopped_and_classified(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an embed stage limited to 300 ms and a provider that stalls for 3 s, no retries
    # (Dramatiq checks time limits once a second)
    monkeypatch.setattr(openai_server, "STALL_S", 3.0)
    actor = service.broker.get_actor("embed_chunks")
    monkeypatch.setitem(actor.options, "time_limit", 300)
    monkeypatch.setitem(actors.STAGE_POLICIES, "embed", (RetryPolicy(0, 100, 100), 300))
    key = tenant_key(service.app, "acme")
    service.provider.fail_next("stall")
    job = service.wait_final(key, service.upload(key, "Too slow for the stage time limit.")["job_id"])
    # Then the stage was stopped and the job ended with the `timeout` code
    assert job["status"] == "dead_lettered" and job["error"]["code"] == "timeout"


def test_one_tenants_burst_does_not_starve_another_tenants_upload(service: Service) -> None:
    # Given tenant A's backlog of 30 jobs, then one job of tenant B (2 worker threads, cap 1 per tenant)
    a, b = tenant_key(service.app, "a"), tenant_key(service.app, "b")
    backlog = [service.upload(a, f"Backlog document number {n}.")["job_id"] for n in range(30)]
    started = time.monotonic()
    mine = service.upload(b, "Tenant B's single document.")["job_id"]
    # When B's job completes
    assert service.wait_final(b, mine, timeout_s=120)["status"] == "completed"
    latency = time.monotonic() - started
    done_before = sum(service.job(a, j)["status"] == "completed" for j in backlog)
    # Then most of A's backlog was still waiting: B did not queue behind it
    print(f"tenant B finished in {latency:.1f}s with {done_before}/30 of A's jobs done")
    assert done_before < 15
    for job_id in backlog:
        assert service.wait_final(a, job_id, timeout_s=120)["status"] == "completed"


def test_an_outage_of_object_storage_is_waited_out_beyond_the_stage_retries(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an index stage allowed one retry for its own errors and four while a service is down
    policy = RetryPolicy(max_retries=1, min_backoff_ms=50, max_backoff_ms=100, outage_retries=4)
    monkeypatch.setitem(actors.STAGE_POLICIES, "index", (policy, actors.STAGE_POLICIES["index"][1]))
    # And object storage that cannot be reached for the index stage's first three attempts (only the
    # index stage reads the vectors)
    storage = service.resources.storage
    real_get_bytes, failures = storage.get_bytes, {"left": 3}

    def get_bytes(key: str) -> bytes:
        if key.endswith("vectors.npy") and failures["left"]:
            failures["left"] -= 1
            raise StorageUnavailableError()
        return real_get_bytes(key)

    monkeypatch.setattr(storage, "get_bytes", get_bytes)
    key = tenant_key(service.app, "acme")
    # When a document is uploaded
    job_id = service.upload(key, "Indexed once the object store is back.")["job_id"]
    # Then the job waits the outage out and completes, its index stage run four times
    job = service.wait_final(key, job_id)
    assert job["status"] == "completed", job
    assert service.stage_attempts(job_id)["index"] == 4


def test_a_failed_embedding_batch_is_tried_again_in_place(
    settings: Settings, redis_url: str, broker_namespace: str
) -> None:
    # Given a provider that answers 429 or 503 to three calls in a row, and four tries per batch
    with OpenAIServer() as provider:
        settings = settings.replace(
            broker_url=redis_url,
            broker_namespace=broker_namespace,
            embedder="openai",
            openai_api_key=provider.api_key,
            openai_base_url=provider.base_url,
            embed_batch_attempts=4,
        )
        with in_process_service(settings, threads=1) as running:
            service = Service(running.app, running.resources, running.broker, provider)
            key = tenant_key(service.app, "acme")
            provider.fail_next("rate_limited", times=2)
            provider.fail_next("unavailable")
            # When a document is uploaded
            job_id = service.upload(key, "Embedded on the fourth try of its batch.")["job_id"]
            # Then it completes with one run of the embed stage, the batch sent four times
            assert service.wait_final(key, job_id)["status"] == "completed"
            assert service.stage_attempts(job_id)["embed"] == 1
            assert len(provider.requests) == 4
