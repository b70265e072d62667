"""The upload body read once (gateway/upload_form.py): hostile bodies end in their 4xx code with no
object left in storage, files refused one by one or repeated never become objects, and the
tolerance of Werkzeug's parser (a preamble, an empty part without its CRLF) is kept."""

from __future__ import annotations

import io
import uuid
from typing import Any

import pytest
from flask import Flask
from sqlalchemy.exc import IntegrityError

from gateway import upload_form
from gateway.app import create_app
from shared import operations
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from shared.storage import LocalStorage, ObjectStorage
from shared.storage.s3 import S3Storage
from tests.conftest import auth, tenant_key
from tests.support.pdfs import text_pdf

PDF = text_pdf(["Read once."])
OTHER_PDF = text_pdf(["Read once, another."])
CONTENT_TYPE = "multipart/form-data; boundary=x"
END = b"--x--\r\n"


def part(name: str, data: bytes, filename: str | None = None) -> bytes:
    disposition = f'form-data; name="{name}"' + ("" if filename is None else f'; filename="{filename}"')
    return f"--x\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + data + b"\r\n"


FILE = part("file", PDF, "report.pdf")


def objects(storage: ObjectStorage) -> list[str]:
    """Every object, temporary file or unfinished multipart upload in the store."""
    if isinstance(storage, LocalStorage):
        return sorted(p.relative_to(storage.root).as_posix() for p in storage.root.rglob("*") if p.is_file())
    assert isinstance(storage, S3Storage)
    client = storage._ready()
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=storage.bucket).get("Contents", [])]
    unfinished = client.list_multipart_uploads(Bucket=storage.bucket).get("Uploads", [])
    return sorted(keys + [f"unfinished:{u['Key']}" for u in unfinished])


def storage_of(app: Flask) -> ObjectStorage:
    return app.extensions["ingest"].storage  # type: ignore[no-any-return]


def post(app: Flask, key: str, body: bytes, content_type: str = CONTENT_TYPE) -> Any:
    return app.test_client().post("/v1/documents", headers=auth(key), data=body, content_type=content_type)


HOSTILE = {
    "truncated body": ((FILE + END)[: len(FILE) // 2], 400, "missing_file"),
    "no closing boundary": (FILE, 400, "missing_file"),
    "closing boundary cut": (FILE + b"--x-", 400, "missing_file"),
    "a part without Content-Disposition": (
        FILE + b"--x\r\nContent-Type: text/plain\r\n\r\nhello\r\n" + END,
        400,
        "missing_file",
    ),
    "garbage instead of a form": (b"garbage without any delimiter" * 100, 400, "missing_file"),
    "a huge text field": (FILE + part("metadata", b"a" * 600_000) + END, 413, "upload_too_large"),
    "many parts": (
        FILE + b"".join(part("metadata", b"{}") for _ in range(1000)) + END,
        413,
        "too_many_form_parts",
    ),
    "too many files": (
        b"".join(part("files", PDF + str(i).encode(), f"{i}.pdf") for i in range(21)) + END,
        400,
        "too_many_files",
    ),
    "a NUL in a filename": (FILE + part("file", OTHER_PDF, "a\x00b.pdf") + END, 400, "invalid_filename"),
    "a file over the limit": (
        part("file", b"%PDF-1.7\n" + b"0" * (1024 * 1024), "big.pdf") + END,
        413,
        "upload_too_large",
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_body_gets_its_code_and_leaves_no_object(app: Flask, name: str) -> None:
    # Given a tenant, and a body that opens a file part before it goes wrong
    body, status, code = HOSTILE[name]
    key = tenant_key(app, "acme")

    # When it is posted
    response = post(app, key, body)

    # Then the answer is its 4xx code, and nothing was stored, not even half a file
    assert (response.status_code, response.get_json()["code"]) == (status, code)
    assert objects(storage_of(app)) == []


def test_refused_and_repeated_files_of_a_request_never_become_objects(app: Flask) -> None:
    # Given a request of a PDF, the same PDF again, an empty file, and 2 KB that are not a PDF
    key = tenant_key(app, "acme")
    body = FILE + FILE + part("files", b"", "empty.pdf") + part("files", b"GIF89a" * 400, "x.pdf") + END

    # When it is posted, and then once more
    first, second = post(app, key, body), post(app, key, body)

    # Then each file has its answer, and the store holds the one document's bytes only
    assert first.status_code == 202 and second.status_code == 200
    answers = [(r["duplicate"], (r.get("error") or {}).get("code")) for r in first.get_json()["results"]]
    assert answers == [(False, None), (True, None), (False, "empty_file"), (False, "not_a_pdf")]
    document_id = first.get_json()["results"][0]["document_id"]
    assert objects(storage_of(app)) == [f"documents/{first_tenant(app)}/{document_id}.pdf"]
    assert storage_of(app).get_bytes(objects(storage_of(app))[0]) == PDF


def first_tenant(app: Flask) -> str:
    from shared.models import Tenant

    with app.extensions["ingest"].db.transaction() as session:
        return str(session.query(Tenant.id).one()[0])


def test_a_preamble_and_an_empty_part_without_its_crlf_are_read_as_werkzeug_read_them(app: Flask) -> None:
    # Given a body with a preamble, and an empty file whose delimiter follows its blank line at once
    key = tenant_key(app, "acme")
    empty = b'--x\r\nContent-Disposition: form-data; name="file"; filename="empty.pdf"\r\n\r\n'
    body = b"a preamble\r\n" + empty + part("file", PDF, "report.pdf") + END

    # When it is posted
    response = post(app, key, body)

    # Then the empty file is refused on its own and the PDF after it is accepted whole
    results = response.get_json()["results"]
    assert response.status_code == 202
    assert [(r["filename"], (r.get("error") or {}).get("code")) for r in results] == [
        ("empty.pdf", "empty_file"),
        ("report.pdf", None),
    ]
    assert storage_of(app).get_bytes(objects(storage_of(app))[0]) == PDF


def test_a_first_try_that_loses_a_race_keeps_the_objects_its_retry_accepts(
    app: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a commit that fails once as a concurrent identical upload makes it fail
    reserve, calls = operations.reserve, []

    def reserve_failing_once(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise IntegrityError("INSERT", {}, Exception("duplicate key"))
        return reserve(*args, **kwargs)

    monkeypatch.setattr(operations, "reserve", reserve_failing_once)
    key = tenant_key(app, "acme")

    # When two files are uploaded
    response = post(app, key, FILE + part("file", OTHER_PDF, "other.pdf") + END)

    # Then the retry accepts both, with the objects the first try stored, and nothing else is left
    assert response.status_code == 202 and len(calls) == 2
    ids = [r["document_id"] for r in response.get_json()["results"]]
    tenant = first_tenant(app)
    assert objects(storage_of(app)) == sorted(f"documents/{tenant}/{i}.pdf" for i in ids)


@pytest.mark.s3
def test_on_s3_a_hostile_body_and_a_duplicate_leave_only_the_accepted_object(
    settings: Settings, s3_server: Any
) -> None:
    # Given a gateway storing on the S3 server
    from tests.support.databases import migrate_database

    settings = settings.replace(
        max_upload_mb=1,
        storage_backend="s3",
        s3_endpoint_url=s3_server.endpoint_url,
        s3_bucket=f"uploads-{uuid.uuid4().hex[:12]}",
        s3_access_key_id=s3_server.access_key_id,
        s3_secret_access_key=s3_server.secret_access_key,
    )
    migrate_database(settings.effective_database_url)
    app = create_app(settings, publisher=Publisher(make_broker(settings)))
    key = tenant_key(app, "acme")

    # When a truncated body, a good upload and its duplicate are posted
    truncated = post(app, key, FILE[: len(FILE) // 2])
    accepted = app.test_client().post(
        "/v1/documents", headers=auth(key), data={"file": (io.BytesIO(PDF), "report.pdf")}
    )
    duplicate = post(app, key, FILE + END)

    # Then only the accepted document's object exists
    assert truncated.get_json()["code"] == "missing_file"
    assert (accepted.status_code, duplicate.status_code) == (202, 200)
    document_id = accepted.get_json()["document_id"]
    assert objects(storage_of(app)) == [f"documents/{first_tenant(app)}/{document_id}.pdf"]


@pytest.mark.parametrize("piece_bytes", [1, 7, 64, 4096, 256 * 1024])
def test_the_form_reads_the_same_in_pieces_of_any_size(tmp_path: Any, piece_bytes: int) -> None:
    # Given a body with a preamble, a PDF ending in CRLF (its bytes then meet the delimiter's CRLF),
    # an empty file without its CRLF, a file of a CRLF only, a text field and a correctly empty file
    ending_in_crlf = PDF + b"\r\n"
    empty_sloppy = b'--x\r\nContent-Disposition: form-data; name="files"; filename="sloppy.pdf"\r\n\r\n'
    body = (
        b"preamble\r\n"
        + part("file", ending_in_crlf, "crlf.pdf")
        + empty_sloppy
        + part("files", b"\r\n", "only-crlf.pdf")
        + part("metadata", b'{"a": 1}')
        + part("files", b"", "empty.pdf")
        + END
    )
    stream = io.BytesIO(body)
    storage = LocalStorage(str(tmp_path / "objects"))

    # When it is read in pieces of this size
    form = upload_form.read(
        lambda size: stream.read(min(size, piece_bytes)),
        "x",
        upload_form.planned_file(storage, "t"),
        limit_bytes=1024 * 1024,
        max_files=20,
        max_parts=1000,
        max_field_bytes=500_000,
    )

    # Then every part is what was sent, and only the PDF's bytes are in a writer
    assert form.fields == {"metadata": '{"a": 1}'}
    outcomes = [(f.filename, f.size, f.error.code if f.error else None) for f in form.files]
    assert outcomes == [
        ("crlf.pdf", len(ending_in_crlf), None),
        ("sloppy.pdf", 0, "empty_file"),
        ("only-crlf.pdf", 0, "not_a_pdf"),
        ("empty.pdf", 0, "empty_file"),
    ]
    assert [f.writer is not None for f in form.files] == [True, False, False, False]
    form.files[0].writer.commit()  # type: ignore[union-attr]
    assert storage.get_bytes(form.files[0].object_key) == ending_in_crlf


def test_a_replayed_idempotent_upload_stores_nothing_more(app: Flask) -> None:
    # Given an upload sent with an Idempotency-Key
    key = tenant_key(app, "acme")
    headers = {**auth(key), "Idempotency-Key": "once"}
    client = app.test_client()
    first = client.post("/v1/documents", headers=headers, data=FILE + END, content_type=CONTENT_TYPE)

    # When the same request is sent again (its body streamed again before the key is looked up)
    again = client.post("/v1/documents", headers=headers, data=FILE + END, content_type=CONTENT_TYPE)

    # Then it is the stored answer, and the second copy of the bytes was dropped
    assert (first.status_code, again.status_code) == (202, 202)
    assert again.get_json() == first.get_json()
    assert len(objects(storage_of(app))) == 1
