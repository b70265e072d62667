"""Tenant isolation at every endpoint: another tenant's ids are a 404, never a 403 or a leak."""

from __future__ import annotations

import io
from typing import Any

import pytest

from shared import jobs
from shared.errors import PermanentError
from tests.conftest import auth, tenant_key
from tests.support.pdfs import text_pdf


@pytest.fixture
def two_tenants(app: Any, client: Any) -> dict[str, Any]:
    """Tenant A with a failed job on a document; tenant B with nothing."""
    a, b = tenant_key(app, "a"), tenant_key(app, "b")
    body = client.post(
        "/v1/documents", headers=auth(a), data={"file": (io.BytesIO(text_pdf(["A's secret."])), "a.pdf")}
    ).get_json()
    with app.extensions["ingest"].db.transaction() as session:
        jobs.fail(session, body["job_id"], PermanentError("x", code="x"))
    return {"a": a, "b": b, "job": body["job_id"], "document": body["document_id"]}


CALLS = [
    ("get", "/v1/jobs/{job}"),
    ("post", "/v1/jobs/{job}/cancel"),
    ("post", "/v1/jobs/{job}/retry"),
    ("get", "/v1/documents/{document}"),
    ("delete", "/v1/documents/{document}"),
]


@pytest.mark.parametrize(("method", "path"), CALLS)
def test_another_tenants_ids_do_not_exist(
    client: Any, two_tenants: dict[str, Any], method: str, path: str
) -> None:
    url = path.format(**two_tenants)
    response = getattr(client, method)(url, headers=auth(two_tenants["b"]))
    assert response.status_code == 404 and response.get_json()["code"] == "not_found"


def test_the_owner_still_reaches_them(client: Any, two_tenants: dict[str, Any]) -> None:
    a = auth(two_tenants["a"])
    assert client.get(f"/v1/jobs/{two_tenants['job']}", headers=a).status_code == 200
    assert client.get(f"/v1/documents/{two_tenants['document']}", headers=a).status_code == 200
    assert client.post(f"/v1/jobs/{two_tenants['job']}/retry", headers=a).status_code == 202


def test_lists_hold_only_the_callers_own(client: Any, two_tenants: dict[str, Any]) -> None:
    b = auth(two_tenants["b"])
    assert client.get("/v1/jobs", headers=b).get_json()["items"] == []
    assert client.get("/v1/documents", headers=b).get_json()["items"] == []
    a_jobs = client.get("/v1/jobs", headers=auth(two_tenants["a"])).get_json()["items"]
    assert [j["job_id"] for j in a_jobs] == [two_tenants["job"]]


def test_the_same_bytes_for_another_tenant_are_not_a_duplicate(
    client: Any, two_tenants: dict[str, Any]
) -> None:
    response = client.post(
        "/v1/documents",
        headers=auth(two_tenants["b"]),
        data={"file": (io.BytesIO(text_pdf(["A's secret."])), "a.pdf")},
    )
    assert response.status_code == 202 and response.get_json()["duplicate"] is False
    assert response.get_json()["document_id"] != two_tenants["document"]
