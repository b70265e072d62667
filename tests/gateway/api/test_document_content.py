"""A document's content endpoints: the chunks and page texts of the indexed version, matching what was
ingested, paged; the original file, streamed with safe headers; and 404 for another tenant's document."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import pytest

from shared.models import Document
from shared.settings import Settings
from tests.conftest import auth
from tests.support.inprocess import InProcess, in_process_service
from tests.support.pdfs import mixed_pdf, text_pdf
from tests.support.stage_runs import run_stages

CONTENT = ("chunks", "text", "file")
SURVEY = [
    "Harbour survey. The quay walls were measured at low tide in March. " * 12,
    "Lighthouse keepers kept their logs in a tin box beside the lamp room. " * 12,
    "Fishing boats returned before the storm, and the nets were dried on the green. " * 12,
]


@pytest.fixture
def service(settings: Settings) -> Iterator[InProcess]:
    with in_process_service(
        settings.replace(chunk_max_tokens=64, chunk_overlap_tokens=0), worker=False
    ) as running:
        yield running


@pytest.fixture
def keys(service: InProcess) -> dict[str, str]:
    from tests.conftest import tenant_key

    return {"acme": tenant_key(service.app, "acme"), "other": tenant_key(service.app, "other")}


def upload(
    service: InProcess, key: str, pdf: bytes, filename: str = "survey.pdf", **query: str
) -> dict[str, Any]:
    answer = service.app.test_client().post(
        "/v1/documents" + ("?force=true" if query.get("force") else ""),
        headers=auth(key),
        data={"file": (io.BytesIO(pdf), filename)},
    )
    assert answer.status_code == 202, answer.get_json()
    return answer.get_json()  # type: ignore[no-any-return]


def ingest(service: InProcess, key: str, pdf: bytes, **query: str) -> dict[str, Any]:
    uploaded = upload(service, key, pdf, **query)
    run_stages(service.resources, uploaded["job_id"])
    return uploaded


def get(service: InProcess, key: str, document_id: str, what: str, **query: Any) -> Any:
    return service.app.test_client().get(
        f"/v1/documents/{document_id}/{what}", headers=auth(key), query_string=query
    )


def all_chunks(service: InProcess, key: str, document_id: str, limit: int) -> list[dict[str, Any]]:
    items, cursor = [], None
    while True:
        page = get(service, key, document_id, "chunks", limit=limit, **({"cursor": cursor} if cursor else {}))
        assert page.status_code == 200, page.get_json()
        body = page.get_json()
        assert len(body["items"]) <= limit
        items += body["items"]
        cursor = body["next_cursor"]
        if cursor is None:
            return items


# --- Chunks and text ----------------------------------------------------------------------------


def test_text_and_chunks_are_those_ingested(service: InProcess, keys: dict[str, str]) -> None:
    # Given a three-page document ingested
    uploaded = ingest(service, keys["acme"], text_pdf(SURVEY))
    document_id = uploaded["document_id"]
    # When its text and chunks are read
    text = get(service, keys["acme"], document_id, "text").get_json()
    chunks = get(service, keys["acme"], document_id, "chunks", limit=200).get_json()
    # Then each page's text is the page's, read from the text layer, of the indexed job
    assert text["job_id"] == chunks["job_id"] == uploaded["job_id"]
    assert [p["number"] for p in text["pages"]] == [1, 2, 3]
    assert [p["source"] for p in text["pages"]] == ["text"] * 3
    for page, written in zip(text["pages"], SURVEY, strict=True):
        assert " ".join(page["text"].split()).startswith(written.split(". ")[0])
    # And the chunks, in order, cover every page with the pages' words and as many as were indexed
    items = chunks["items"]
    assert [c["index"] for c in items] == list(range(len(items)))
    assert {p for c in items for p in range(c["page_start"], c["page_end"] + 1)} == {1, 2, 3}
    joined = " ".join(c["text"] for c in items)
    assert all(word in joined for word in ("quay walls", "tin box", "nets were dried"))
    body = (
        service.app.test_client().get(f"/v1/documents/{document_id}", headers=auth(keys["acme"])).get_json()
    )
    assert body["indexed"]["chunks"] == len(items) > 3


@pytest.mark.ocr
def test_a_scanned_page_says_it_was_read_by_ocr(service: InProcess, keys: dict[str, str]) -> None:
    # Given a document whose second page is a scan
    pages = [
        "The survey begins on the quay. " * 10,
        "LIGHTHOUSE KEEPERS LOG",
        "The survey ends on the green. " * 10,
    ]
    uploaded = ingest(service, keys["acme"], mixed_pdf(pages, scanned={2}))
    # When its text is read
    text = get(service, keys["acme"], uploaded["document_id"], "text").get_json()
    # Then the scanned page came from OCR, with its words, and the others from the text layer
    assert [p["source"] for p in text["pages"]] == ["text", "ocr", "text"]
    assert "LIGHTHOUSE" in text["pages"][1]["text"].upper()


def test_chunks_page_through_in_order_and_end(service: InProcess, keys: dict[str, str]) -> None:
    # Given an ingested document of several chunks
    document_id = ingest(service, keys["acme"], text_pdf(SURVEY))["document_id"]
    whole = get(service, keys["acme"], document_id, "chunks", limit=200).get_json()
    assert whole["next_cursor"] is None
    # When they are read two at a time, following next_cursor
    paged = all_chunks(service, keys["acme"], document_id, limit=2)
    # Then the pages give every chunk once, in order
    assert paged == whole["items"]


def test_a_cursor_from_a_replaced_version_or_made_up_is_refused(
    service: InProcess, keys: dict[str, str]
) -> None:
    # Given a cursor into the indexed version, which a completed re-ingest then replaces
    document_id = ingest(service, keys["acme"], text_pdf(SURVEY))["document_id"]
    cursor = get(service, keys["acme"], document_id, "chunks", limit=1).get_json()["next_cursor"]
    ingest(service, keys["acme"], text_pdf(SURVEY), force="true")
    # When the cursor is used, and when a made-up one is
    stale = get(service, keys["acme"], document_id, "chunks", cursor=cursor)
    made_up = get(service, keys["acme"], document_id, "chunks", cursor="bm90IGEgY3Vyc29y")
    # Then the first is a conflict (start again), the second a bad request
    assert (stale.status_code, stale.get_json()["code"]) == (409, "indexed_version_changed")
    assert (made_up.status_code, made_up.get_json()["code"]) == (400, "invalid_cursor")


def test_before_any_version_is_indexed_content_is_a_conflict_but_the_file_is_there(
    service: InProcess, keys: dict[str, str]
) -> None:
    # Given a document uploaded whose job has not run
    pdf = text_pdf(SURVEY)
    document_id = upload(service, keys["acme"], pdf)["document_id"]
    # When its chunks, text and file are asked for
    answers = {what: get(service, keys["acme"], document_id, what) for what in CONTENT}
    # Then chunks and text answer 409 not_indexed, and the file is already served
    for what in ("chunks", "text"):
        assert (answers[what].status_code, answers[what].get_json()["code"]) == (409, "not_indexed")
    assert answers["file"].status_code == 200 and answers["file"].data == pdf


# --- Tenancy and deletion -----------------------------------------------------------------------


def test_another_tenants_document_is_as_unknown_as_a_made_up_id(
    service: InProcess, keys: dict[str, str]
) -> None:
    # Given a document of another tenant, ingested
    foreign = ingest(service, keys["other"], text_pdf(SURVEY))["document_id"]
    for what in CONTENT:
        # When the caller asks for its content, and for a made-up id's
        theirs = get(service, keys["acme"], foreign, what)
        unknown = get(service, keys["acme"], "00000000-0000-0000-0000-000000000000", what)
        # Then both are the same 404, and nothing of the other tenant's document shows
        assert theirs.status_code == unknown.status_code == 404
        assert theirs.get_json() == unknown.get_json()
        assert theirs.get_json()["code"] == "not_found" and foreign not in theirs.get_data(as_text=True)
    # And its owner reads it
    assert get(service, keys["other"], foreign, "text").status_code == 200


def test_a_deleted_documents_content_is_gone(service: InProcess, keys: dict[str, str]) -> None:
    # Given an ingested document, then deleted
    document_id = ingest(service, keys["acme"], text_pdf(SURVEY))["document_id"]
    deleted = service.app.test_client().delete(f"/v1/documents/{document_id}", headers=auth(keys["acme"]))
    assert deleted.status_code == 202
    # When its content is asked for
    for what in CONTENT:
        answer = get(service, keys["acme"], document_id, what)
        # Then each answers 404 document_deleted
        assert (answer.status_code, answer.get_json()["code"]) == (404, "document_deleted")


# --- The file -----------------------------------------------------------------------------------


def test_the_file_is_the_original_streamed_as_a_pdf_attachment(
    service: InProcess, keys: dict[str, str]
) -> None:
    # Given an uploaded document
    pdf = text_pdf(SURVEY)
    document_id = upload(service, keys["acme"], pdf, filename="Harbour survey.pdf")["document_id"]
    # When its file is downloaded
    answer = get(service, keys["acme"], document_id, "file")
    # Then the bytes are the original's, streamed, as an attachment named after the upload
    assert answer.status_code == 200 and answer.is_streamed
    assert answer.data == pdf
    assert answer.headers["Content-Type"] == "application/pdf"
    assert answer.headers["Content-Length"] == str(len(pdf))
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert answer.headers["Content-Disposition"] == (
        "attachment; filename=\"Harbour survey.pdf\"; filename*=UTF-8''Harbour%20survey.pdf"
    )


@pytest.mark.parametrize(
    ("filename", "ascii_name", "exact_name"),
    [
        ('a"; filename="evil.exe', "a__ filename__evil.exe", "a_; filename=_evil.exe"),
        ("report\r\nSet-Cookie: x=1.pdf", "report__Set-Cookie_ x_1.pdf", "report__Set-Cookie: x=1.pdf"),
        ("..\\..\\etc/passwd", "passwd", "passwd"),
        ("Résumé 日本.pdf", "Resume.pdf", "Résumé 日本.pdf"),
        ("日本.pdf", "document.pdf", "日本.pdf"),
        ("...", "document.pdf", "document.pdf"),
    ],
)
def test_a_hostile_filename_cannot_break_the_content_disposition(
    service: InProcess, keys: dict[str, str], filename: str, ascii_name: str, exact_name: str
) -> None:
    # Given a document whose recorded filename came from a hostile upload
    document_id = upload(service, keys["acme"], text_pdf(SURVEY))["document_id"]
    with service.resources.db.transaction() as session:
        document = session.get(Document, document_id)
        assert document is not None
        document.filename = filename
    # When its file is downloaded
    header = get(service, keys["acme"], document_id, "file").headers["Content-Disposition"]
    # Then the header is one attachment with an ASCII name and the exact (safe) name percent-encoded
    assert "\r" not in header and "\n" not in header and header.isascii()
    plain, encoded = header.removeprefix("attachment; ").split("; filename*=UTF-8''")
    assert plain == f'filename="{ascii_name}"'
    assert unquote(encoded) == exact_name and all(c not in encoded for c in " ;\"'\\/")
