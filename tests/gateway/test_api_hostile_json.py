"""Hostile JSON and text an outside probe sent: bodies nested past any schema's depth, lone UTF-16
surrogates (as JSON escapes and as invalid UTF-8), and integers past 64 bits in metadata filters get a
4xx with a stable code on both databases, never a 500."""

from __future__ import annotations

import io
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from gateway.app import create_app
from shared.db import Database
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from tests.conftest import admin_key, auth, tenant_key
from tests.gateway.test_gateway_upload import PDF, upload

# Each JSON endpoint the probe reached: (method, path) with {document} filled in.
JSON_ENDPOINTS = [
    ("PATCH", "/v1/documents/{document}"),
    ("POST", "/v1/search"),
    ("PUT", "/v1/webhooks"),
    ("POST", "/v1/admin/tenants"),
]
DEEP = b"[" * 100_000 + b"]" * 100_000
# A lone high surrogate as a JSON escape, and the same code point encoded as (invalid) UTF-8.
SURROGATE_ESCAPE = b'"\\ud800"'
SURROGATE_UTF8 = b'"\xed\xa0\x80"'


@pytest.fixture
def api(settings: Settings, any_db: Database) -> Flask:
    """A gateway on SQLite and on PostgreSQL."""
    settings = settings.replace(max_upload_mb=1, database_url=str(any_db.engine.url.render_as_string(False)))
    return create_app(settings, publisher=Publisher(make_broker(settings)), db=any_db)


def _code(response: Any) -> tuple[int, str]:
    return response.status_code, response.get_json()["code"]


def _document(client: FlaskClient, key: str) -> str:
    response = upload(client, key, PDF)
    assert response.status_code == 202, response.get_json()
    return response.get_json()["document_id"]  # type: ignore[no-any-return]


def _send(api: Flask, method: str, path: str, body: bytes) -> Any:
    client, key = api.test_client(), tenant_key(api, "acme")
    if "admin" in path:
        key = admin_key(api)
    if "{document}" in path:
        path = path.format(document=_document(client, key))
    return client.open(path, method=method, data=body, headers=auth(key), content_type="application/json")


@pytest.mark.parametrize(("method", "path"), JSON_ENDPOINTS)
def test_json_nested_too_deep_is_invalid_json(api: Flask, method: str, path: str) -> None:
    # When a client sends a body of arrays nested 100,000 deep
    response = _send(api, method, path, DEEP)
    # Then it is told the body is not JSON it accepts, not a 500
    assert _code(response) == (400, "invalid_json")


@pytest.mark.parametrize(("method", "path"), JSON_ENDPOINTS)
def test_json_nested_past_the_bound_is_refused_even_when_python_could_parse_it(
    api: Flask, method: str, path: str
) -> None:
    # When the body is nested 200 deep (well within what Python's parser reaches)
    response = _send(api, method, path, b"[" * 200 + b"]" * 200)
    # Then the depth bound refuses it all the same
    assert _code(response) == (400, "invalid_json")


@pytest.mark.parametrize(("method", "path"), JSON_ENDPOINTS)
def test_unparsable_json_is_invalid_json(api: Flask, method: str, path: str) -> None:
    # When the body is not JSON at all
    response = _send(api, method, path, b'{"metadata": ')
    # Then the answer says so with the same code
    assert _code(response) == (400, "invalid_json")


BODIES = {
    "PATCH /v1/documents/{document}": b'{"metadata": {"team": %s}}',
    "POST /v1/search": b'{"query": %s}',
    "POST /v1/search filename": b'{"query": "q", "filter": {"filename": %s}}',
    "PUT /v1/webhooks": b'{"default_callback_url": %s}',
    "POST /v1/admin/tenants": b'{"name": %s}',
}


@pytest.mark.parametrize("encoded", [SURROGATE_ESCAPE, SURROGATE_UTF8], ids=["escape", "utf8"])
@pytest.mark.parametrize("where", list(BODIES))
def test_a_lone_surrogate_in_a_json_body_is_a_client_error(api: Flask, where: str, encoded: bytes) -> None:
    method, path = where.split()[:2]
    # When a JSON string holds a lone surrogate (e.g. "https://example.com/\ud800" as a URL)
    body = BODIES[where] % (
        encoded if "webhooks" not in where else encoded.replace(b'"', b'"https://e.com/', 1)
    )
    response = _send(api, method, path, body)
    # Then it is refused before any view sees it
    assert _code(response) == (400, "invalid_text" if encoded == SURROGATE_ESCAPE else "invalid_json")


def test_a_surrogate_pair_is_an_ordinary_character(api: Flask) -> None:
    # Given a document
    client, key = api.test_client(), tenant_key(api, "acme")
    document = _document(client, key)
    # When its metadata is set to an emoji written as a surrogate pair escape
    response = client.patch(
        f"/v1/documents/{document}",
        data=b'{"metadata": {"mood": "\\ud83d\\ude00"}}',
        headers=auth(key),
        content_type="application/json",
    )
    # Then it is accepted
    assert response.status_code == 202, response.get_json()


@pytest.mark.parametrize("query", ["%ED%A0%80", "\\ud800"], ids=["utf8", "escape"])
def test_a_surrogate_in_a_query_string_is_not_a_500(api: Flask, query: str) -> None:
    # When a list's cursor carries the code point as invalid UTF-8 or as a JSON-like escape
    client, key = api.test_client(), tenant_key(api, "acme")
    response = client.get(f"/v1/documents?cursor={query}", headers=auth(key))
    # Then it is an ordinary (replaced or literal) text, refused as no cursor, not a server error
    assert _code(response) == (400, "invalid_cursor")


def test_a_lone_surrogate_in_upload_metadata_is_invalid_metadata(api: Flask) -> None:
    # When an upload's metadata form field holds a lone surrogate as a JSON escape
    client, key = api.test_client(), tenant_key(api, "acme")
    response = client.post(
        "/v1/documents",
        headers=auth(key),
        data={"file": (io.BytesIO(PDF), "report.pdf"), "metadata": '{"team": "\\ud800"}'},
        content_type="multipart/form-data",
    )
    # Then the metadata is refused with its code
    assert _code(response) == (400, "invalid_metadata")


def test_invalid_utf8_in_an_upload_form_field_is_replaced(api: Flask) -> None:
    # When the metadata form field carries the surrogate's code point as (invalid) UTF-8 bytes
    client, key = api.test_client(), tenant_key(api, "acme")
    metadata = '{"team": "a\ud800"}'.encode(errors="surrogatepass")
    response = client.post(
        "/v1/documents",
        headers=auth(key),
        data={"file": (io.BytesIO(PDF), "report.pdf"), "metadata": (io.BytesIO(metadata), None)},
        content_type="multipart/form-data",
    )
    # Then the bytes read as replacement characters, as in every text field of the form
    assert response.status_code == 202, response.get_json()
    document = client.get(f"/v1/documents/{response.get_json()['document_id']}", headers=auth(key))
    assert document.get_json()["metadata"] == {"team": "a\ufffd\ufffd\ufffd"}


def test_a_lone_surrogate_in_an_upload_callback_url_is_refused(api: Flask) -> None:
    # When an upload's callback_url form field carries the code point as invalid UTF-8
    client, key = api.test_client(), tenant_key(api, "acme")
    url = "https://e.com/\ud800".encode(errors="surrogatepass")
    response = client.post(
        "/v1/documents",
        headers=auth(key),
        data={"file": (io.BytesIO(PDF), "report.pdf"), "callback_url": url},
        content_type="multipart/form-data",
    )
    # Then the replaced characters make it no URL, as any other non-URL character would
    assert _code(response) == (400, "invalid_callback_url")


@pytest.mark.parametrize("condition", [{"eq": 2**64}, {"in": [2**64, 1]}, {"eq": -(2**63) - 1}])
def test_a_metadata_filter_past_64_bits_is_refused(api: Flask, condition: dict[str, Any]) -> None:
    # When a search filters a metadata key by an integer no store can hold
    client, key = api.test_client(), tenant_key(api, "acme")
    body = {"query": "q", "filter": {"metadata": [{"key": "year", **condition}]}}
    response = client.post("/v1/search", json=body, headers=auth(key))
    # Then it is refused with a code and the field, by the value's documented range, not an OverflowError
    assert _code(response) == (422, "invalid_request")
    assert list(response.get_json()["errors"]["json"]["filter"]["metadata"]["0"]) == list(condition)


@pytest.mark.parametrize(
    "disposition",
    [
        "form-data; name=\"file\"; filename*=UTF-8''a%0D%0Ab%E2%80%AEfdp.exe.pdf",
        'form-data; name="file"; filename="a\tb\u202efdp.exe.pdf"',
    ],
    ids=["filename*", "filename"],
)
def test_control_and_bidi_characters_never_reach_a_stored_filename(api: Flask, disposition: str) -> None:
    # When an upload names its file with CR, LF or a tab and a right-to-left override
    client, key = api.test_client(), tenant_key(api, "acme")
    body = (
        f"--B\r\nContent-Disposition: {disposition}\r\nContent-Type: application/pdf\r\n\r\n".encode()
        + PDF
        + b"\r\n--B--\r\n"
    )
    response = client.post(
        "/v1/documents", headers=auth(key), data=body, content_type="multipart/form-data; boundary=B"
    )
    assert response.status_code == 202, response.get_json()
    # Then the stored name has the controls replaced and the override dropped, and so has the download
    document_id = response.get_json()["document_id"]
    stored = client.get(f"/v1/documents/{document_id}", headers=auth(key)).get_json()["filename"]
    assert stored in ("a__bfdp.exe.pdf", "a_bfdp.exe.pdf")


def test_the_docs_page_refuses_framing_sniffing_and_other_origins(api: Flask) -> None:
    # When the docs page (where users paste keys) and one of its assets are fetched
    client = api.test_client()
    for path in ("/docs", "/docs/assets/swagger-ui.css"):
        response = client.get(path)
        # Then each carries a CSP, a framing refusal and nosniff
        assert response.status_code == 200, path
        assert "default-src 'self'" in response.headers["Content-Security-Policy"]
        assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
        assert response.headers["X-Frame-Options"] == "DENY"
        assert response.headers["X-Content-Type-Options"] == "nosniff"
