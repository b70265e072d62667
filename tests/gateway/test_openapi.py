"""The served OpenAPI document: unique schema names, binary media described as binary, the server's
rules stated (patterns, formats, item counts, typed filter values, required bodies, closed objects),
and a client generated from it by openapi-python-client that works against the live service."""

from __future__ import annotations

import importlib
import io
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.client.conftest import Served, serving
from tests.support.pdfs import text_pdf

PACKAGE = "ingest_api_client"
# openapi-python-client formats its output with ruff and maps media types to Python types: no
# formatting (the code is only imported), and a PDF read as the bytes it is.
FINAL = ("completed", "failed", "cancelled")
GENERATOR_CONFIG = "post_hooks: []\ncontent_type_overrides:\n  application/pdf: application/octet-stream\n"


def _document(app: Any) -> dict[str, Any]:
    return app.test_client().get("/openapi.json").get_json()  # type: ignore[no-any-return]


def test_the_document_is_openapi_3_1_with_one_name_per_schema(app: Any) -> None:
    # Given the served document
    document = _document(app)
    # Then it is OpenAPI 3.1, and the PATCH body is no longer named like the document's own metadata
    assert document["openapi"] == "3.1.0"
    schemas = document["components"]["schemas"]
    assert "MetadataUpdate" in schemas and "DocumentMetadata" not in schemas
    # And the original file is described as binary
    file_answer = document["paths"]["/v1/documents/{document_id}/file"]["get"]["responses"]["200"]
    assert file_answer["content"]["application/pdf"]["schema"] == {"type": "string", "format": "binary"}


def test_the_document_states_the_rules_the_server_enforces(app: Any) -> None:
    document = _document(app)
    schemas = document["components"]["schemas"]
    settings = app.extensions["ingest"].settings
    form = document["paths"]["/v1/documents"]["post"]["requestBody"]["content"]["multipart/form-data"]
    upload = schemas["UploadForm"]["properties"]
    # An upload takes 1 to max_files_per_request PDFs, a metadata object sent as JSON, a URI callback
    # and a pattern of the languages offered; no other field
    assert (upload["file"]["minItems"], upload["file"]["maxItems"]) == (1, settings.max_files_per_request)
    assert form["encoding"] == {
        "file": {"contentType": "application/pdf"},
        "metadata": {"contentType": "application/json"},
    }
    assert upload["callback_url"]["format"] == "uri" and upload["callback_url"]["pattern"].startswith(
        "^https?://"
    )
    assert "eng" in upload["ocr_languages"]["pattern"]
    assert schemas["UploadForm"]["additionalProperties"] is False
    # Metadata: key names, and values typed and bounded, wherever it appears
    for metadata in (upload["metadata"], schemas["MetadataUpdate"]["properties"]["metadata"]):
        assert metadata["propertyNames"] == {"pattern": "^[A-Za-z0-9_]{1,64}$"}
        assert metadata["additionalProperties"]["type"] == ["string", "number", "boolean", "array"]
        assert metadata["additionalProperties"]["maximum"] == 2**63 - 1
    # A filter condition is exactly one kind, with typed values
    condition = schemas["MetadataCondition"]
    assert len(condition["oneOf"]) == 3 and condition["properties"]["eq"]["pattern"] == "^[^\\u0000]*$"
    # Cursors have their pattern, text query parameters exclude NUL, JSON bodies are closed and required
    listing = {p["name"]: p["schema"] for p in document["paths"]["/v1/documents"]["get"]["parameters"]}
    assert listing["cursor"]["pattern"].startswith("^[0-9]{1,17}_")
    search = {p["name"]: p["schema"] for p in document["paths"]["/v1/search"]["get"]["parameters"]}
    assert search["q"]["pattern"] == "^[^\\u0000]*$"
    for name in ("SearchRequest", "Limits", "ReindexArgs", "TenantOcr", "WebhookSettingsUpdate"):
        assert schemas[name]["additionalProperties"] is False, name
    for path, method in [
        ("/v1/admin/tenants/{tenant_id}/limits", "patch"),
        ("/v1/admin/tenants/{tenant_id}/reindex", "post"),
    ]:
        assert document["paths"][path][method]["requestBody"]["required"] is True


def test_an_admin_call_that_changes_state_needs_its_body(app: Any, client: Any) -> None:
    from tests.conftest import admin_key, auth, tenant_key

    # Given an admin and a tenant
    admin = auth(admin_key(app))
    tenant = client.get("/v1/whoami", headers=auth(tenant_key(app, "acme"))).get_json()["tenant_id"]
    # When its limits are patched, or a reindex started, without a body, or with a body not JSON
    missing = client.patch(f"/v1/admin/tenants/{tenant}/limits", headers=admin)
    started = client.post(f"/v1/admin/tenants/{tenant}/reindex", headers=admin)
    not_json = client.post(f"/v1/admin/tenants/{tenant}/reindex", headers=admin, data="{}")
    # Then each is refused with its code, and no reindex started
    assert (missing.status_code, missing.get_json()["code"]) == (400, "missing_body")
    assert (started.status_code, started.get_json()["code"]) == (400, "missing_body")
    assert (not_json.status_code, not_json.get_json()["code"]) == (415, "not_json")
    assert client.get(f"/v1/admin/tenants/{tenant}/reindex", headers=admin).status_code == 404
    # And with `{}` each does what its defaults say
    assert client.patch(f"/v1/admin/tenants/{tenant}/limits", headers=admin, json={}).status_code == 200


def test_a_body_is_read_after_the_key_and_unknown_fields_are_refused(app: Any, client: Any) -> None:
    from tests.conftest import auth, tenant_key

    key = auth(tenant_key(app, "acme"))
    # A body that is no JSON, sent without a key, is a 401 before it is read
    anonymous = client.post("/v1/search", data="{not json", content_type="application/json")
    assert (anonymous.status_code, anonymous.get_json()["code"]) == (401, "unauthorized")
    # With a key: unknown fields of a search body, and unknown query parameters, are 422
    for extra in ({"tenant_id": "x"}, {"index_version": 1}):
        refused = client.post("/v1/search", headers=key, json={"query": "hello", **extra})
        assert (refused.status_code, refused.get_json()["code"]) == (422, "invalid_request"), extra
        assert list(refused.get_json()["errors"]["json"]) == list(extra)
    misspelt = client.get("/v1/documents?limt=5", headers=key)
    assert (misspelt.status_code, list(misspelt.get_json()["errors"]["query"])) == (422, ["limt"])
    # An upload's form field of another name is refused too, and nothing is stored
    form = {"file": (io.BytesIO(text_pdf(["A page."])), "a.pdf"), "ocr_language": "deu"}
    unknown = client.post("/v1/documents", headers=key, data=form)
    assert (unknown.status_code, unknown.get_json()["code"]) == (400, "unknown_form_field")
    assert client.get("/v1/documents", headers=key).get_json()["items"] == []


@pytest.fixture
def live(settings: Any) -> Iterator[Served]:
    """The service with worker threads behind a real HTTP server."""
    with serving(settings.replace(events_poll_s=0.05)) as running:
        yield running


def _generate(url: str, folder: Path) -> Any:
    """The package openapi-python-client generates from the served document, imported."""
    spec = folder / "openapi.json"
    spec.write_bytes(requests.get(f"{url}/openapi.json", timeout=10).content)
    config = folder / "config.yaml"
    config.write_text(GENERATOR_CONFIG)
    generator = Path(sys.executable).with_name("openapi-python-client")
    command = [str(generator), "generate", "--path", str(spec), "--output-path", str(folder / PACKAGE)]
    out = subprocess.run(
        [*command, "--config", str(config), "--meta", "none"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    # No warning: every schema became a model, every operation a module
    assert "Warning" not in out.stdout + out.stderr and "rror" not in out.stdout + out.stderr, out.stdout
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(folder))


def test_a_generated_client_uploads_lists_reads_patches_searches_and_downloads(
    live: Served, tmp_path: Path
) -> None:
    # Given a client generated from the served document, with a tenant's key
    package = _generate(live.url, tmp_path)
    models, types = (importlib.import_module(f"{PACKAGE}.{name}") for name in ("models", "types"))

    def call(module: str) -> Any:
        return importlib.import_module(f"{PACKAGE}.api.{module}")

    client = package.AuthenticatedClient(
        base_url=live.url, token=live.tenant_key(), raise_on_unexpected_status=True
    )
    pdf = text_pdf(["The warranty covers parts and labour for two years from the date of purchase."])

    # When it uploads a PDF with metadata
    form = models.UploadForm(
        file=[types.File(payload=io.BytesIO(pdf), file_name="warranty.pdf", mime_type="application/pdf")],
        metadata=models.UploadFormMetadata.from_dict({"team": "support", "year": 2026}),
    )
    upload = call("documents.post_v1_documents").sync_detailed(client=client, body=form)
    assert upload.status_code == 202, upload.content
    accepted = upload.parsed
    assert isinstance(accepted, models.UploadResponse) and accepted.job_id

    # Then its job completes, and the list and the read parse as their models
    deadline = time.monotonic() + 60
    while (
        job := call("jobs.get_v1_jobs_job_id").sync(accepted.job_id, client=client)
    ).status.value not in FINAL:
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
    assert job.status.value == "completed", job
    listed = call("documents.get_v1_documents").sync(client=client)
    assert isinstance(listed, models.DocumentList)
    assert [d.document_id for d in listed.items] == [accepted.document_id]
    read = call("documents.get_v1_documents_document_id").sync(accepted.document_id, client=client)
    assert isinstance(read, models.Document) and read.filename == "warranty.pdf"
    assert read.metadata.to_dict() == {"team": "support", "year": 2026}

    # And PATCH replaces the metadata, a search finds the text, and the file comes back byte for byte
    body = models.MetadataUpdate(metadata=models.MetadataUpdateMetadata.from_dict({"team": "legal"}))
    patched = call("documents.patch_v1_documents_document_id").sync_detailed(
        accepted.document_id, client=client, body=body
    )
    assert patched.status_code == 202, patched.content
    found = call("search.post_v1_search").sync(
        client=client, body=models.SearchRequest(query="How long does the warranty cover parts?")
    )
    assert isinstance(found, models.SearchResponse)
    assert found.results and "warranty covers parts" in found.results[0].text
    original = call("document_content.get_v1_documents_document_id_file").sync(
        accepted.document_id, client=client
    )
    assert original.payload.read() == pdf
