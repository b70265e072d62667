"""Client.upload: idempotency keys kept across retries, Retry-After honoured, refusals as ApiError."""

from __future__ import annotations

import httpx
import pytest

from ingest_client import ApiError, Client
from tests.client.conftest import Served
from tests.support.pdfs import text_pdf

PDF = text_pdf(["An upload that is tried again. " * 20])


def test_a_429_is_retried_after_retry_after_with_the_same_idempotency_key() -> None:
    # Given a service that answers 429 with Retry-After: 3 once, then accepts
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) == 1:
            problem = {"status": 429, "code": "too_many_active_jobs", "detail": "Too many active jobs."}
            return httpx.Response(429, json=problem, headers={"Retry-After": "3"})
        return httpx.Response(202, json={"job_id": "j1", "document_id": "d1", "status": "queued"})

    waits: list[float] = []
    client = Client("http://ingest.test", "k", transport=httpx.MockTransport(answer), sleep=waits.append)

    # When a file is uploaded
    result = client.upload([("a.pdf", PDF)])[0]

    # Then the client waited as told and sent the same key and the same bytes again
    assert result.job_id == "j1" and result.ok
    assert waits == [3.0]
    keys = {r.headers["Idempotency-Key"] for r in seen}
    assert keys == {result.idempotency_key}
    assert all(PDF in r.content for r in seen)


def test_retries_are_bounded_and_capped() -> None:
    # Given a service that is always unavailable, asking for an hour's wait
    def answer(request: httpx.Request) -> httpx.Response:
        problem = {"status": 503, "code": "storage_unavailable", "detail": "Try later."}
        return httpx.Response(503, json=problem, headers={"Retry-After": "3600"})

    waits: list[float] = []
    client = Client(
        "http://ingest.test",
        "k",
        transport=httpx.MockTransport(answer),
        sleep=waits.append,
        max_retries=3,
        max_retry_wait_s=2.0,
    )

    # When a job is read
    with pytest.raises(ApiError) as raised:
        client.job("j1")

    # Then it tried 4 times, waiting at most the cap, and raised the last answer's problem
    assert waits == [2.0, 2.0, 2.0]
    assert (raised.value.status, raised.value.code) == (503, "storage_unavailable")


def test_the_same_idempotency_key_returns_the_first_job(stalled: Served) -> None:
    # Given a tenant's client
    with stalled.client(stalled.tenant_key()) as client:
        # When the same upload is sent twice under one key
        first = client.upload_one(("a.pdf", PDF), idempotency_key="upload-42")
        again = client.upload_one(("a.pdf", PDF), idempotency_key="upload-42")

    # Then the second answer is the first job
    assert first.job_id is not None and again.job_id == first.job_id


def test_a_refused_file_gets_its_error_and_the_others_go_on(stalled: Served) -> None:
    # Given a PDF and a file that is not one
    with stalled.client(stalled.tenant_key()) as client:
        # When both are uploaded
        good, bad = client.upload([("good.pdf", PDF), ("notes.pdf", b"hello, not a pdf")])

    # Then the PDF is queued and the other carries the problem's code, status and message
    assert good.ok and good.status == "queued"
    assert bad.error is not None and not bad.ok
    assert (bad.error.status, bad.error.code) == (415, "not_a_pdf")
    assert "PDF" in bad.error.message


def test_too_many_active_jobs_is_retried_then_raised(stalled: Served) -> None:
    # Given a tenant allowed one active job, which it already has
    admin = stalled.client(stalled.admin_key())
    tenant = admin.create_tenant("busy", max_active_jobs=1)
    with stalled.client(tenant["api_key"], max_retries=1, max_retry_wait_s=0.05) as client:
        assert client.upload([("a.pdf", PDF)])[0].ok

        # When it uploads another
        refused = client.upload([("b.pdf", text_pdf(["Another one. " * 20]))])[0]

    # Then after its retry the 429 comes back as the result's error
    assert refused.error is not None
    assert (refused.error.status, refused.error.code) == (429, "too_many_active_jobs")
    admin.close()


def test_an_unknown_job_raises_not_found(stalled: Served) -> None:
    # Given a tenant's client
    # When it asks for a job that does not exist
    with stalled.client(stalled.tenant_key()) as client, pytest.raises(ApiError) as raised:
        client.job("no-such-job")

    # Then the problem's status and code are on the exception
    assert (raised.value.status, raised.value.code) == (404, "not_found")
