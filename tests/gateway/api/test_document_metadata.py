"""A document's metadata: what the upload field and PATCH accept, and the clear 400 for the rest."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from shared import document_metadata
from shared.errors import InvalidMetadataError
from shared.models import Job
from tests.conftest import auth, tenant_key
from tests.support.pdfs import text_pdf

VALID = {"customer": "acme", "year": 2026, "score": 0.5, "draft": False, "tags": ["a", 1, True]}


def upload(client: Any, key: str, metadata: str | None, text: str = "Metadata.") -> Any:
    data: dict[str, Any] = {"file": (io.BytesIO(text_pdf([text])), "m.pdf")}
    if metadata is not None:
        data["metadata"] = metadata
    return client.post("/v1/documents", headers=auth(key), data=data)


def test_valid_metadata_is_returned_as_given() -> None:
    assert document_metadata.parse(json.dumps(VALID)) == VALID
    assert document_metadata.checked({}) == {}


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("[1, 2]", "must be a JSON object"),
        ("{not json", "not valid JSON"),
        ('{"a": NaN}', "not valid JSON"),
        ('{"a b": 1}', "is not 1-64 letters"),
        ('{"": 1}', "is not 1-64 letters"),
        (json.dumps({"k" * 65: 1}), "is not 1-64 letters"),
        ('{"a": null}', "(not null)"),
        ('{"a": {"b": 1}}', "(not an object)"),
        ('{"a": [1, [2]]}', "metadata.a is a list with an item"),
        ('{"a": [null]}', "metadata.a is a list with an item"),
        ('{"a": "x\\u0000y"}', "NUL character"),
        ('{"a": "x\\ud800y"}', "lone surrogate"),
        ('{"a": ["\\udfff"]}', "metadata.a is a list with an item"),
        ('{"a": 99999999999999999999}', "outside a signed 64-bit integer's range"),
        ('{"a": 1e300}', "outside a signed 64-bit integer's range"),
        ('{"a": [-9223372036854775809]}', "metadata.a is a list with an item"),
        (json.dumps({"big": "x" * 8200}), "larger than 8192 bytes"),
        ("[" * 5000 + "]" * 5000, "larger than 8192 bytes"),
        ("[" * 4000 + "]" * 4000, "not valid JSON"),
    ],
)
def test_invalid_metadata_is_refused_with_what_is_wrong(value: str, says: str) -> None:
    with pytest.raises(InvalidMetadataError) as raised:
        document_metadata.parse(value)
    assert raised.value.code == "invalid_metadata" and says in raised.value.message


def test_an_upload_stores_its_metadata_and_the_document_shows_it(app: Any, client: Any) -> None:
    # Given a tenant
    key = tenant_key(app, "acme")
    # When it uploads a PDF with metadata
    response = upload(client, key, json.dumps(VALID))
    # Then the document shows it, alone and in the list; a document uploaded without shows {}
    assert response.status_code == 202
    document = client.get(f"/v1/documents/{response.get_json()['document_id']}", headers=auth(key)).get_json()
    assert document["metadata"] == VALID
    plain = upload(client, key, None, text="No metadata.").get_json()["document_id"]
    listed = {
        d["document_id"]: d["metadata"] for d in client.get("/v1/documents", headers=auth(key)).json["items"]
    }
    assert listed == {document["document_id"]: VALID, plain: {}}


def test_an_upload_with_invalid_metadata_is_refused_before_anything_is_stored(app: Any, client: Any) -> None:
    key = tenant_key(app, "acme")
    response = upload(client, key, '{"tenant": {"nested": true}}')
    assert response.status_code == 400
    assert response.get_json()["code"] == "invalid_metadata"
    assert "metadata.tenant" in response.get_json()["detail"]
    assert client.get("/v1/documents", headers=auth(key)).get_json()["items"] == []


def test_a_patch_replaces_the_metadata_and_queues_a_metadata_job(app: Any, client: Any) -> None:
    # Given a document uploaded with metadata
    key = tenant_key(app, "acme")
    document_id = upload(client, key, json.dumps(VALID)).get_json()["document_id"]
    # When the client replaces it
    response = client.patch(
        f"/v1/documents/{document_id}", headers=auth(key), json={"metadata": {"year": 2027}}
    )
    # Then the answer is the queued metadata job, and the document holds the new metadata only
    assert response.status_code == 202
    job = response.get_json()
    assert (
        job["kind"] == "metadata"
        and job["status"] == "queued"
        and response.headers["Location"].endswith(job["job_id"])
    )
    document = client.get(f"/v1/documents/{document_id}", headers=auth(key)).get_json()
    assert document["metadata"] == {"year": 2027}
    # And the document's latest job is still its upload, not the metadata job
    assert document["latest_job"]["kind"] == "ingest"
    with app.extensions["ingest"].db.transaction() as session:
        assert session.get(Job, job["job_id"]).document_id == document_id


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"metadata": {"a": {"b": 1}}}, "invalid_metadata"),
        ({"metadata": {"a-b": 1}}, "invalid_metadata"),
        ({"metadata": {"a": "x" * 9000}}, "invalid_metadata"),
        ({"metadata": [1]}, "invalid_request"),
        ({}, "invalid_request"),
    ],
)
def test_an_invalid_patch_is_refused(app: Any, client: Any, body: dict[str, Any], code: str) -> None:
    key = tenant_key(app, "acme")
    document_id = upload(client, key, None).get_json()["document_id"]
    response = client.patch(f"/v1/documents/{document_id}", headers=auth(key), json=body)
    assert response.get_json()["code"] == code
    assert response.status_code == (400 if code == "invalid_metadata" else 422)
    assert client.get(f"/v1/documents/{document_id}", headers=auth(key)).get_json()["metadata"] == {}


def test_another_tenants_document_cannot_be_patched(app: Any, client: Any) -> None:
    # Given tenant A's document
    a, b = tenant_key(app, "a"), tenant_key(app, "b")
    document_id = upload(client, a, json.dumps({"owner": "a"})).get_json()["document_id"]
    # When tenant B patches it, Then it does not exist for B, and A's metadata is untouched
    response = client.patch(
        f"/v1/documents/{document_id}", headers=auth(b), json={"metadata": {"owner": "b"}}
    )
    assert response.status_code == 404 and response.get_json()["code"] == "not_found"
    assert client.get(f"/v1/documents/{document_id}", headers=auth(a)).get_json()["metadata"] == {
        "owner": "a"
    }


def test_a_deleted_document_cannot_be_patched(app: Any, client: Any) -> None:
    key = tenant_key(app, "acme")
    document_id = upload(client, key, None).get_json()["document_id"]
    assert client.delete(f"/v1/documents/{document_id}", headers=auth(key)).status_code == 202
    response = client.patch(f"/v1/documents/{document_id}", headers=auth(key), json={"metadata": {}})
    assert response.status_code == 404


def test_a_forced_upload_with_metadata_replaces_it_and_a_duplicate_keeps_it(app: Any, client: Any) -> None:
    # Given a document uploaded with metadata
    key = tenant_key(app, "acme")
    document_id = upload(client, key, json.dumps({"v": 1})).get_json()["document_id"]
    # When the same bytes come again with other metadata, Then a duplicate keeps the document's
    again = upload(client, key, json.dumps({"v": 2}))
    assert again.status_code == 200 and again.get_json()["document_id"] == document_id
    assert client.get(f"/v1/documents/{document_id}", headers=auth(key)).get_json()["metadata"] == {"v": 1}
    # And a forced upload replaces it
    data = {"file": (io.BytesIO(text_pdf(["Metadata."])), "m.pdf"), "metadata": json.dumps({"v": 3})}
    forced = client.post("/v1/documents?force=true", headers=auth(key), data=data)
    assert forced.status_code == 202 and forced.get_json()["document_id"] == document_id
    assert client.get(f"/v1/documents/{document_id}", headers=auth(key)).get_json()["metadata"] == {"v": 3}


def test_an_idempotency_key_reused_with_other_metadata_is_a_conflict(app: Any, client: Any) -> None:
    key = tenant_key(app, "acme")

    def send(metadata: str) -> Any:
        data = {"file": (io.BytesIO(text_pdf(["Once."])), "m.pdf"), "metadata": metadata}
        return client.post("/v1/documents", headers={**auth(key), "Idempotency-Key": "k1"}, data=data)

    first = send('{"v": 1}')
    assert send('{"v": 1}').get_json()["job_id"] == first.get_json()["job_id"]
    reused = send('{"v": 2}')
    assert reused.status_code == 409 and reused.get_json()["code"] == "idempotency_key_reused"
