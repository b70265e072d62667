"""The tenant's calls: documents, jobs (get, list, cancel, retry), search, webhooks and deliveries."""

from __future__ import annotations

import time

import pytest
from standardwebhooks import WebhookVerificationError

from ingest_client import ApiError, Client, verify_webhook
from shared.settings import Settings
from tests.client.conftest import Served, serving
from tests.support.pdfs import text_pdf, truncated_pdf

PDF = text_pdf(["Quarterly revenue grew in every region. " * 20, "Payment terms are thirty days. " * 20])


def _finish(client: Client, job_id: str | None) -> str:
    assert job_id is not None
    return list(client.wait(job_id, timeout_s=60))[-1].status


def test_documents_jobs_and_search(served: Served) -> None:
    # Given a completed document and a failed one
    with served.client(served.tenant_key()) as client:
        good = client.upload([("report.pdf", PDF)])[0]
        broken = client.upload([("broken.pdf", truncated_pdf())])[0]
        assert _finish(client, good.job_id) == "completed"
        assert _finish(client, broken.job_id) == "failed"

        # When the client reads them back and searches
        documents = [d["document_id"] for d in client.iter_documents(page_size=1)]
        document = client.document(str(good.document_id))
        failed = client.jobs(status="failed")["items"]
        job = client.job(str(good.job_id))
        hits = client.search("quarterly revenue", top_k=3, document_id=good.document_id)["results"]

        # Then each answer is the service's
        assert set(documents) == {good.document_id, broken.document_id}
        assert document["latest_job"]["status"] == "completed"
        assert [j["job_id"] for j in failed] == [broken.job_id]
        assert failed[0]["error"]["code"] == "truncated_pdf"
        assert job["counters"]["chunks"] >= 1
        assert hits and all(h["document_id"] == good.document_id for h in hits)

        # And a failed job can be retried, a completed one not cancelled, a document deleted
        assert client.retry(str(broken.job_id))["status"] == "queued"
        assert _finish(client, broken.job_id) == "failed"
        with pytest.raises(ApiError) as raised:
            client.cancel(str(good.job_id))
        assert (raised.value.status, raised.value.code) == (409, "job_not_cancellable")
        deletion = client.delete_document(str(good.document_id))
        assert deletion["kind"] == "delete"
        assert _finish(client, deletion["job_id"]) == "completed"


def test_cancel_a_queued_job(stalled: Served) -> None:
    # Given a queued job
    with stalled.client(stalled.tenant_key()) as client:
        job_id = str(client.upload([("report.pdf", PDF)])[0].job_id)

        # When it is cancelled
        job = client.cancel(job_id)

    # Then it is cancelled at once
    assert job["status"] == "cancelled"


@pytest.fixture
def hooked(client_settings: Settings) -> Settings:
    return client_settings.replace(webhook_allow_http=True, webhook_allowed_hosts="127.0.0.1")


def test_webhook_settings_deliveries_redelivery_and_verification(hooked: Settings) -> None:
    from tests.support.webhook_receiver import receiver

    with receiver([]) as hook, serving(hooked) as served, served.client(served.tenant_key()) as client:
        # Given a tenant whose default endpoint is a local receiver
        secret = client.webhook_settings()["secret"]
        hook.secrets.append(secret)
        assert client.set_webhook_settings(hook.url)["default_callback_url"] == hook.url

        # When a job runs and its events are delivered
        job_id = str(client.upload([("report.pdf", PDF)])[0].job_id)
        assert _finish(client, job_id) == "completed"
        deadline = time.monotonic() + 30
        while not any(d["event_type"] == "job.completed" and d["status"] == "delivered"
                      for d in client.deliveries(job_id)):  # fmt: skip
            assert time.monotonic() < deadline, "the final event was not delivered"
            time.sleep(0.1)

        # Then the log lists them, one can be sent again, and each signature verifies
        delivery = client.deliveries(job_id)[-1]
        again = client.redeliver(job_id, delivery["delivery_id"])
        assert again["event_id"] == delivery["event_id"]
        received = hook.received[0]
        event = verify_webhook(received.headers, received.body, secret)
        assert event["data"]["job_id"] == job_id
        with pytest.raises(WebhookVerificationError):
            verify_webhook(received.headers, received.body.replace(b"job", b"jab"), secret)
        rotated = client.rotate_webhook_secret()
        assert rotated["secret"] != secret
        assert client.set_webhook_settings(None)["default_callback_url"] is None
