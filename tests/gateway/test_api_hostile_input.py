"""Hostile input an outside probe sent: NUL characters, ids past 64 bits, huge Last-Event-IDs, too
many form parts and wrong methods get a 4xx with a stable code on both databases, never a 500."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from gateway.app import create_app
from shared.db import Database
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from tests.conftest import auth, tenant_key
from tests.gateway.test_gateway_upload import PDF, upload


@pytest.fixture
def api(settings: Settings, any_db: Database) -> Flask:
    """A gateway on SQLite and on PostgreSQL."""
    settings = settings.replace(max_upload_mb=1, database_url=str(any_db.engine.url.render_as_string(False)))
    return create_app(settings, publisher=Publisher(make_broker(settings)), db=any_db)


def _job(client: FlaskClient, key: str) -> str:
    response = upload(client, key, PDF)
    assert response.status_code == 202, response.get_json()
    return response.get_json()["job_id"]  # type: ignore[no-any-return]


def _code(response: Any) -> tuple[int, str]:
    return response.status_code, response.get_json()["code"]


def test_nul_characters_are_refused_with_a_stable_code(api: Flask) -> None:
    # Given a tenant
    client, key = api.test_client(), tenant_key(api, "acme")
    cursor = base64.urlsafe_b64encode(json.dumps(["2026-01-01T00:00:00", "a\x00b"]).encode()).decode()
    # When it sends a NUL in a path id, a query value, a cursor, a filename, a callback URL and a header
    answers = {
        "path id": client.get("/v1/jobs/ab%00cd", headers=auth(key)),
        "query": client.get("/v1/jobs?status=queued%00", headers=auth(key)),
        "cursor": client.get(f"/v1/jobs?cursor={cursor}", headers=auth(key)),
        "filename": client.post(
            "/v1/documents",
            headers=auth(key),
            data={"file": (io.BytesIO(PDF), "re\x00port.pdf")},
            content_type="multipart/form-data",
        ),
        "callback url": upload(client, key, PDF, callback_url="https://example.com/\x00"),
        "header": client.post(
            "/v1/documents",
            headers={**auth(key), "Idempotency-Key": "a\x00b"},
            data={"file": (io.BytesIO(PDF), "report.pdf")},
            content_type="multipart/form-data",
        ),
    }
    # Then each is a 400 with its code, not a 500
    assert {what: _code(r) for what, r in answers.items()} == {
        "path id": (400, "nul_character"),
        "query": (400, "nul_character"),
        "cursor": (400, "invalid_cursor"),
        "filename": (400, "invalid_filename"),
        "callback url": (400, "invalid_callback_url"),
        "header": (400, "nul_character"),
    }


def test_ids_past_64_bits_match_nothing(api: Flask) -> None:
    # Given a tenant with a job
    client, key = api.test_client(), tenant_key(api, "acme")
    job_id = _job(client, key)
    # When it names a delivery id past 2^63
    response = client.post(f"/v1/jobs/{job_id}/deliveries/{2**63}/redeliver", headers=auth(key))
    # Then there is no such resource
    assert _code(response) == (404, "not_found")


@pytest.mark.parametrize("where", ["header", "query"])
def test_a_last_event_id_no_job_can_reach_is_a_client_error(api: Flask, where: str) -> None:
    # Given a tenant with a job
    client, key = api.test_client(), tenant_key(api, "acme")
    job_id = _job(client, key)
    # When it resumes its event stream after a seq past 2^63
    huge = str(2**64)
    if where == "header":
        response = client.get(f"/v1/jobs/{job_id}/events", headers={**auth(key), "Last-Event-ID": huge})
        # Then it is told before the stream starts
        assert _code(response) == (400, "invalid_last_event_id")
    else:
        response = client.get(f"/v1/jobs/{job_id}/events?last_event_id={huge}", headers=auth(key))
        # Then it is told before the stream starts, by the parameter's documented range
        assert _code(response) == (422, "invalid_request")
        assert list(response.get_json()["errors"]["query"]) == ["last_event_id"]


def test_too_many_form_parts_has_its_own_code(api: Flask) -> None:
    # Given a tenant
    client, key = api.test_client(), tenant_key(api, "acme")
    # When it uploads a form of 1,001 small parts
    response = client.post(
        "/v1/documents",
        headers=auth(key),
        data={"file": (io.BytesIO(PDF), "report.pdf"), "metadata": ["{}"] * 1000},
        content_type="multipart/form-data",
    )
    # Then the answer says so, not that the upload is too large
    assert _code(response) == (413, "too_many_form_parts")


def test_a_wrong_method_is_answered_with_allow(api: Flask) -> None:
    # When a client deletes the job list
    response = api.test_client().delete("/v1/jobs")
    # Then the 405 lists the methods the path accepts
    assert _code(response) == (405, "method_not_allowed")
    assert "GET" in response.headers["Allow"]
    assert response.mimetype == "application/problem+json"


def test_an_empty_file_is_a_422_as_documented(api: Flask) -> None:
    # Given a tenant
    client, key = api.test_client(), tenant_key(api, "acme")
    # When it uploads an empty file
    response = upload(client, key, b"")
    # Then it is the 422 empty_file docs/api.md lists
    assert _code(response) == (422, "empty_file")
