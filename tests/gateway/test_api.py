"""The REST contract beyond a single upload: several files, lists, cancel, retry, delete, quotas,
idempotency and the admin API (on the embedded defaults; no worker runs, so jobs stay queued
unless a test moves them)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from sqlalchemy import func, select

from shared import job_stages, jobs
from shared.errors import PermanentError
from shared.models import Job, JobStatus, OutboxMessage
from tests.conftest import admin_key, auth, tenant_key
from tests.support.pdfs import text_pdf

S = JobStatus


def pdf(n: int) -> bytes:
    return text_pdf([f"Document number {n}."])


def upload(client: Any, key: str, *files: tuple[bytes, str], query: str = "", **headers: str) -> Any:
    data = {"file": [(io.BytesIO(body), name) for body, name in files]}
    return client.post(f"/v1/documents{query}", headers={**auth(key), **headers}, data=data)


# How a queued job gets to each status, through the state machine's verbs, as a worker or client would.
FROM_QUEUED = {
    S.RUNNING: lambda session, job_id: jobs.start(session, job_id, "validate"),
    S.CANCELLED: jobs.cancel_queued,
    S.FAILED: lambda session, job_id: jobs.fail(session, job_id, PermanentError("x", code="x")),
}


def set_status(app: Any, job_id: str, target: JobStatus) -> None:
    """Move a queued job to `target` with the state machine."""
    with app.extensions["ingest"].db.transaction() as session:
        FROM_QUEUED[target](session, job_id)


def count_jobs(app: Any) -> int:
    with app.extensions["ingest"].db.transaction() as session:
        return int(session.scalar(select(func.count()).select_from(Job)) or 0)


# --- Uploads ------------------------------------------------------------------------------------


def test_several_files_in_one_request_get_one_result_each(app: Any, client: Any) -> None:
    key = tenant_key(app, "acme")
    response = upload(client, key, (pdf(1), "a.pdf"), (b"not a pdf", "b.txt"), (pdf(2), "c.pdf"))
    assert response.status_code == 202
    results = response.get_json()["results"]
    assert [r["filename"] for r in results] == ["a.pdf", "b.txt", "c.pdf"]
    assert results[0]["status"] == "queued" and results[2]["status"] == "queued"
    assert results[1]["error"]["code"] == "not_a_pdf" and "job_id" not in results[1]
    assert results[0]["location"] == f"/v1/jobs/{results[0]['job_id']}"
    assert count_jobs(app) == 2


def test_a_request_whose_files_are_all_bad_is_refused(app: Any, client: Any) -> None:
    response = upload(client, tenant_key(app, "acme"), (b"x", "a.txt"), (b"", "b.pdf"))
    assert response.status_code == 400 and response.get_json()["code"] == "no_acceptable_files"


def test_force_ingests_the_same_bytes_again_as_a_new_job(app: Any, client: Any) -> None:
    key = tenant_key(app, "acme")
    first = upload(client, key, (pdf(1), "a.pdf")).get_json()
    again = upload(client, key, (pdf(1), "a.pdf"), query="?force=true")
    assert again.status_code == 202
    body = again.get_json()
    assert body["document_id"] == first["document_id"] and body["job_id"] != first["job_id"]
    assert body["duplicate"] is True


# --- Idempotency --------------------------------------------------------------------------------


def test_the_same_idempotency_key_replays_the_first_answer(app: Any, client: Any) -> None:
    key = tenant_key(app, "acme")
    first = upload(client, key, (pdf(1), "a.pdf"), **{"Idempotency-Key": "k1"})
    second = upload(client, key, (pdf(1), "a.pdf"), **{"Idempotency-Key": "k1"})
    assert first.status_code == second.status_code == 202
    assert first.get_json() == second.get_json()
    assert second.headers["Location"] == first.headers["Location"]
    assert count_jobs(app) == 1


def test_the_same_idempotency_key_with_other_files_is_a_conflict(app: Any, client: Any) -> None:
    key = tenant_key(app, "acme")
    upload(client, key, (pdf(1), "a.pdf"), **{"Idempotency-Key": "k1"})
    response = upload(client, key, (pdf(2), "a.pdf"), **{"Idempotency-Key": "k1"})
    assert response.status_code == 409 and response.get_json()["code"] == "idempotency_key_reused"
    assert count_jobs(app) == 1


def test_idempotency_keys_belong_to_their_tenant(app: Any, client: Any) -> None:
    a, b = tenant_key(app, "a"), tenant_key(app, "b")
    ra = upload(client, a, (pdf(1), "a.pdf"), **{"Idempotency-Key": "same"})
    rb = upload(client, b, (pdf(1), "a.pdf"), **{"Idempotency-Key": "same"})
    assert ra.status_code == rb.status_code == 202
    assert ra.get_json()["job_id"] != rb.get_json()["job_id"]


def test_a_failed_request_gives_its_idempotency_key_back(app: Any, client: Any) -> None:
    key = tenant_key(app, "acme")
    assert upload(client, key, (b"nope", "a.pdf"), **{"Idempotency-Key": "k"}).status_code == 415
    assert upload(client, key, (pdf(1), "a.pdf"), **{"Idempotency-Key": "k"}).status_code == 202


# --- Jobs: list, cancel, retry ------------------------------------------------------------------


def test_jobs_are_listed_newest_first_with_cursor_pages_and_a_status_filter(app: Any, client: Any) -> None:
    key = tenant_key(app, "acme")
    ids = [upload(client, key, (pdf(n), f"{n}.pdf")).get_json()["job_id"] for n in range(5)]
    set_status(app, ids[0], S.CANCELLED)
    seen, cursor = [], ""
    while True:
        body = client.get(f"/v1/jobs?limit=2{cursor}", headers=auth(key)).get_json()
        seen += [j["job_id"] for j in body["items"]]
        if not body["next_cursor"]:
            break
        cursor = f"&cursor={body['next_cursor']}"
    assert seen == list(reversed(ids))
    cancelled = client.get("/v1/jobs?status=cancelled", headers=auth(key)).get_json()["items"]
    assert [j["job_id"] for j in cancelled] == [ids[0]]


def test_a_bad_cursor_or_filter_is_a_4xx_with_its_code(app: Any, client: Any) -> None:
    key = tenant_key(app, "acme")
    bad = client.get("/v1/jobs?cursor=%%%garbage", headers=auth(key))
    assert bad.status_code == 400 and bad.get_json()["code"] == "invalid_cursor"
    wrong = client.get("/v1/jobs?status=exploded&limit=0", headers=auth(key))
    assert wrong.status_code == 422 and wrong.get_json()["code"] == "invalid_request"
    assert set(wrong.get_json()["errors"]["query"]) == {"status", "limit"}


def test_cancel_stops_a_queued_job_at_once_and_asks_a_running_one(app: Any, client: Any) -> None:
    key = tenant_key(app, "acme")
    queued = upload(client, key, (pdf(1), "a.pdf")).get_json()["job_id"]
    running = upload(client, key, (pdf(2), "b.pdf")).get_json()["job_id"]
    set_status(app, running, S.RUNNING)
    assert client.post(f"/v1/jobs/{queued}/cancel", headers=auth(key)).get_json()["status"] == "cancelled"
    assert (
        client.post(f"/v1/jobs/{running}/cancel", headers=auth(key)).get_json()["status"]
        == "cancel_requested"
    )
    again = client.post(f"/v1/jobs/{queued}/cancel", headers=auth(key))
    assert again.status_code == 409 and again.get_json()["code"] == "job_not_cancellable"


def test_retry_requeues_a_failed_job_from_its_unfinished_stage(app: Any, client: Any) -> None:
    key = tenant_key(app, "acme")
    job_id = upload(client, key, (pdf(1), "a.pdf")).get_json()["job_id"]
    db = app.extensions["ingest"].db
    with db.transaction() as session:  # validate finished, extract failed
        job_stages.claim_stage(session, job_id, "validate")
        jobs.start(session, job_id, "validate")
    with db.transaction() as session:
        jobs.advance(session, job_id, "validate", pages=1)
    set_status(app, job_id, S.FAILED)
    response = client.post(f"/v1/jobs/{job_id}/retry", headers=auth(key))
    assert response.status_code == 202
    body = response.get_json()
    assert body["status"] == "queued" and body["error"] is None
    with db.transaction() as session:
        stages = session.scalars(select(OutboxMessage.stage).where(OutboxMessage.job_id == job_id)).all()
    assert list(stages) == ["validate", "extract"]
    refused = client.post(f"/v1/jobs/{job_id}/retry", headers=auth(key))
    assert refused.status_code == 409 and refused.get_json()["code"] == "job_not_retryable"


# --- Documents ----------------------------------------------------------------------------------


def test_documents_are_listed_read_and_deleted_as_a_job(app: Any, client: Any) -> None:
    key = tenant_key(app, "acme")
    up = upload(client, key, (pdf(1), "a.pdf")).get_json()
    document_id = up["document_id"]
    listed = client.get("/v1/documents", headers=auth(key)).get_json()["items"]
    assert [d["document_id"] for d in listed] == [document_id]
    one = client.get(f"/v1/documents/{document_id}", headers=auth(key)).get_json()
    assert one["filename"] == "a.pdf" and one["latest_job"]["job_id"] == up["job_id"]
    deleted = client.delete(f"/v1/documents/{document_id}", headers=auth(key))
    assert deleted.status_code == 202
    assert deleted.get_json()["kind"] == "delete" and deleted.headers["Location"].startswith("/v1/jobs/")
    # The unfinished ingest job was cancelled, the document is gone from the list, and the
    # same bytes may be uploaded again as a new document
    assert client.get(f"/v1/jobs/{up['job_id']}", headers=auth(key)).get_json()["status"] == "cancelled"
    assert client.get("/v1/documents", headers=auth(key)).get_json()["items"] == []
    assert client.delete(f"/v1/documents/{document_id}", headers=auth(key)).status_code == 404
    again = upload(client, key, (pdf(1), "a.pdf"))
    assert again.status_code == 202 and again.get_json()["document_id"] != document_id


# --- Quotas -------------------------------------------------------------------------------------


def test_too_many_active_jobs_is_429_with_retry_after(app: Any, client: Any) -> None:
    admin, key = admin_key(app), tenant_key(app, "acme")
    tenant_id = client.get("/v1/admin/tenants", headers=auth(admin)).get_json()["items"][0]["tenant_id"]
    client.patch(f"/v1/admin/tenants/{tenant_id}/limits", headers=auth(admin), json={"max_active_jobs": 2})
    assert upload(client, key, (pdf(1), "1.pdf")).status_code == 202
    assert upload(client, key, (pdf(2), "2.pdf")).status_code == 202
    refused = upload(client, key, (pdf(3), "3.pdf"))
    assert refused.status_code == 429 and refused.get_json()["code"] == "too_many_active_jobs"
    assert int(refused.headers["Retry-After"]) > 0
    assert count_jobs(app) == 2


def test_storage_allowance_and_upload_size_are_per_tenant(app: Any, client: Any) -> None:
    admin, key = admin_key(app), tenant_key(app, "acme")
    tenant_id = client.get("/v1/admin/tenants", headers=auth(admin)).get_json()["items"][0]["tenant_id"]
    big = b"%PDF-1.7\n" + b"0" * (600 * 1024)
    client.patch(f"/v1/admin/tenants/{tenant_id}/limits", headers=auth(admin), json={"max_storage_mb": 1})
    assert upload(client, key, (big, "1.pdf")).status_code == 202
    over = upload(client, key, (big + b"1", "2.pdf"))
    assert over.status_code == 403 and over.get_json()["code"] == "storage_quota_exceeded"
    client.patch(
        f"/v1/admin/tenants/{tenant_id}/limits",
        headers=auth(admin),
        json={"max_upload_mb": 1, "max_storage_mb": None},
    )
    small_limit = upload(client, key, (b"%PDF-1.7\n" + b"1" * (1024 * 1024), "3.pdf"))
    assert small_limit.status_code == 413 and small_limit.get_json()["code"] == "upload_too_large"


# --- Admin --------------------------------------------------------------------------------------


def test_admin_creates_suspends_and_resumes_tenants_and_revokes_keys(app: Any, client: Any) -> None:
    admin = admin_key(app)
    created = client.post("/v1/admin/tenants", headers=auth(admin), json={"name": "acme", "max_pages": 10})
    assert created.status_code == 201
    tenant = created.get_json()
    key = tenant["api_key"]
    assert tenant["limits"]["max_pages"] == 10
    assert client.get("/v1/jobs", headers=auth(key)).status_code == 200
    assert client.post("/v1/admin/tenants", headers=auth(admin), json={"name": "acme"}).status_code == 409
    # Suspended: its keys stop working; resumed: they work again
    client.post(f"/v1/admin/tenants/{tenant['tenant_id']}/suspend", headers=auth(admin))
    suspended = client.get("/v1/jobs", headers=auth(key))
    assert suspended.status_code == 403 and suspended.get_json()["code"] == "tenant_suspended"
    client.post(f"/v1/admin/tenants/{tenant['tenant_id']}/resume", headers=auth(admin))
    assert client.get("/v1/jobs", headers=auth(key)).status_code == 200
    # A second key; revoking the first leaves the second working
    second = client.post(f"/v1/admin/tenants/{tenant['tenant_id']}/keys", headers=auth(admin)).get_json()
    keys = client.get(f"/v1/admin/tenants/{tenant['tenant_id']}/keys", headers=auth(admin)).get_json()[
        "items"
    ]
    assert len(keys) == 2 and all("api_key" not in k for k in keys)
    first_id = next(k["key_id"] for k in keys if k["key_id"] != second["key_id"])
    assert client.post(f"/v1/admin/keys/{first_id}/revoke", headers=auth(admin)).get_json()["revoked"] is True
    assert client.get("/v1/jobs", headers=auth(key)).status_code == 401
    assert client.get("/v1/jobs", headers=auth(second["api_key"])).status_code == 200


def test_roles_do_not_mix(app: Any, client: Any) -> None:
    admin, key = admin_key(app), tenant_key(app, "acme")
    tenant_call = client.get("/v1/admin/tenants", headers=auth(key))
    assert tenant_call.status_code == 403 and tenant_call.get_json()["code"] == "forbidden"
    assert client.get("/v1/jobs", headers=auth(admin)).status_code == 403


@pytest.mark.parametrize(
    ("body", "content_type", "code"),
    [
        ("{not json", "application/json", "invalid_json"),
        ('{"name": ""}', "application/json", "invalid_request"),
        ('{"name": "a b/c"}', "application/json", "invalid_request"),
    ],
)
def test_bad_admin_bodies_are_4xx_with_a_code(
    app: Any, client: Any, body: str, content_type: str, code: str
) -> None:
    response = client.post(
        "/v1/admin/tenants", headers=auth(admin_key(app)), data=body, content_type=content_type
    )
    assert 400 <= response.status_code < 500
    assert response.mimetype == "application/problem+json" and response.get_json()["code"] == code
