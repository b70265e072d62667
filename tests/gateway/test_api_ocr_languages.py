"""OCR languages through the API: per upload (a form field), per tenant (admin API), checked against
the configured list, and kept on the document (no worker runs here, so jobs stay queued)."""

from __future__ import annotations

import io
from typing import Any

from shared.models import Document
from tests.conftest import admin_key, auth, tenant_key
from tests.support.pdfs import text_pdf


def upload(client: Any, key: str, data: bytes, **form: str) -> Any:
    body = {"file": (io.BytesIO(data), "a.pdf"), **form}
    return client.post("/v1/documents", headers=auth(key), data=body, content_type="multipart/form-data")


def document_languages(app: Any, document_id: str) -> str | None:
    with app.extensions["ingest"].db.transaction() as session:
        document = session.get(Document, document_id)
        return None if document is None else document.ocr_languages


def test_an_upload_names_its_ocr_languages_and_the_document_keeps_them(app: Any, client: Any) -> None:
    # Given a tenant
    key = tenant_key(app, "acme")

    # When a PDF is uploaded with ocr_languages=deu+eng
    answer = upload(client, key, text_pdf(["Ein Brief."]), ocr_languages="deu+eng")

    # Then it is accepted, and the document is read in those languages, as the API shows
    assert answer.status_code == 202
    document_id = answer.get_json()["document_id"]
    assert document_languages(app, document_id) == "deu+eng"
    shown = client.get(f"/v1/documents/{document_id}", headers=auth(key)).get_json()
    assert shown["ocr_languages"] == "deu+eng"
    assert shown["latest_job"]["counters"]["ocr_pages_dropped"] == 0


def test_an_upload_without_languages_takes_the_tenants_then_the_services(app: Any, client: Any) -> None:
    # Given a tenant whose OCR languages an admin set to French, and one left to the service default
    admin, key, other = admin_key(app), tenant_key(app, "acme"), tenant_key(app, "globex")
    tenants = client.get("/v1/admin/tenants", headers=auth(admin)).get_json()["items"]
    acme = next(t for t in tenants if t["name"] == "acme")["tenant_id"]
    answer = client.patch(f"/v1/admin/tenants/{acme}/ocr", headers=auth(admin), json={"ocr_languages": "fra"})
    assert answer.status_code == 200
    assert answer.get_json()["ocr_languages"] == "fra"

    # When each uploads a PDF naming no language
    first = upload(client, key, text_pdf(["Une lettre."])).get_json()["document_id"]
    second = upload(client, other, text_pdf(["A letter."])).get_json()["document_id"]

    # Then the first is read in French, the second in the service's default
    assert document_languages(app, first) == "fra"
    assert document_languages(app, second) == "eng"


def test_an_unknown_language_is_a_422_with_a_stable_code(app: Any, client: Any) -> None:
    # Given a tenant and an admin
    admin, key = admin_key(app), tenant_key(app, "acme")
    tenant_id = client.get("/v1/admin/tenants", headers=auth(admin)).get_json()["items"][0]["tenant_id"]

    # When an upload or a tenant names a language the service does not offer, or a malformed list
    answers = [
        upload(client, key, text_pdf(["x"]), ocr_languages="deu+klingon"),
        upload(client, key, text_pdf(["y"]), ocr_languages="eng;rm -rf"),
        client.patch(
            f"/v1/admin/tenants/{tenant_id}/ocr", headers=auth(admin), json={"ocr_languages": "xyz"}
        ),
        client.post("/v1/admin/tenants", headers=auth(admin), json={"name": "b", "ocr_languages": "jpn"}),
    ]

    # Then each is refused with 422 unknown_ocr_language, naming what is wrong, and nothing is created
    for answer in answers:
        assert answer.status_code == 422
        assert answer.get_json()["code"] == "unknown_ocr_language"
    assert "klingon" in answers[0].get_json()["detail"]
    assert client.get("/v1/documents", headers=auth(key)).get_json()["items"] == []
    assert [t["name"] for t in client.get("/v1/admin/tenants", headers=auth(admin)).get_json()["items"]] == [
        "acme"
    ]


def test_a_forced_upload_naming_languages_reads_the_document_in_them_from_then_on(
    app: Any, client: Any
) -> None:
    # Given a document uploaded in English
    key = tenant_key(app, "acme")
    pdf = text_pdf(["A letter, then a Brief."])
    document_id = upload(client, key, pdf, ocr_languages="eng").get_json()["document_id"]

    # When the same bytes are uploaded again with force, naming German, and once more naming nothing
    again = client.post(
        "/v1/documents?force=true",
        headers=auth(key),
        data={"file": (io.BytesIO(pdf), "a.pdf"), "ocr_languages": "deu"},
        content_type="multipart/form-data",
    )
    client.post(
        "/v1/documents?force=true",
        headers=auth(key),
        data={"file": (io.BytesIO(pdf), "a.pdf")},
        content_type="multipart/form-data",
    )

    # Then the new job is for the same document, which is read in German from then on (a forced upload
    # naming no language keeps the document's)
    assert again.status_code == 202 and again.get_json()["document_id"] == document_id
    assert document_languages(app, document_id) == "deu"
