"""A chunked upload, whose size no header announces, is held to its caller's upload limit while it
is read, under `make gateway`'s gunicorn and `make run`'s waitress alike: the 413 problem comes while
the client is still sending, and a body within a tenant's own limit (above the service's) is taken."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from shared.db import Database
from shared.settings import Settings
from tests.support.body_probe import probe_chunked
from tests.support.pdfs import text_pdf
from tests.support.serving import embedded_gateway, gunicorn_gateway, new_tenant

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

MB = 1024 * 1024
# The client sends 200 chunks of 1 MB against a tenant limit of 3 MB.
CHUNKS = 200
LIMIT_MB = 3
# What the server may have read when it answers: the limit, the form's allowance (64 KB) and the
# read that crossed it (at most a chunk).
READ_AT_MOST = (LIMIT_MB + 1) * MB + 64 * 1024
# What the client may have sent by then: that, and what the two sockets' buffers hold.
SENT_AT_MOST = READ_AT_MOST + 16 * MB


@pytest.fixture(params=["gateway", "embedded"])
def served(
    request: pytest.FixtureRequest, settings: Settings, tmp_path: Path
) -> Iterator[tuple[str, Database]]:
    """Each topology's server in turn, with a 1 MB service upload limit."""
    if request.param == "gateway":
        db = request.getfixturevalue("pg_db")
        with gunicorn_gateway(db, tmp_path, max_upload_mb="1") as base:
            yield base, db
    else:
        db = request.getfixturevalue("sqlite_db")
        with embedded_gateway(settings.replace(max_upload_mb=1), db) as base:
            yield base, db


def test_a_chunked_upload_over_the_limit_is_refused_while_it_is_sent(served: tuple[str, Database]) -> None:
    # Given a tenant allowed 3 MB
    base, db = served
    key = new_tenant(db, "acme", max_upload_mb=LIMIT_MB)

    # When it sends a chunked upload of 200 chunks of 1 MB
    port = int(base.rsplit(":", 1)[1])
    result = probe_chunked(port, {"Authorization": f"Bearer {key}"}, chunks=CHUNKS, timeout_s=30)

    # Then the 413 problem arrives while it is still sending, not after the last chunk
    assert (result.status, result.code, result.reset) == (413, "upload_too_large", False), result
    assert result.read_bytes <= READ_AT_MOST, result
    assert result.sent_bytes <= SENT_AT_MOST < CHUNKS * MB, result


def test_a_chunked_upload_within_a_tenant_limit_above_the_service_default_is_taken(
    served: tuple[str, Database],
) -> None:
    # Given a service limit of 1 MB, a tenant allowed 3 MB, and a 2 MB PDF
    base, db = served
    key = new_tenant(db, "big", max_upload_mb=LIMIT_MB)
    pdf = text_pdf(["A large one."]) + b"\n" * (2 * MB)
    form = (
        b'--x\r\nContent-Disposition: form-data; name="file"; filename="a.pdf"\r\n'
        b"Content-Type: application/pdf\r\n\r\n" + pdf + b"\r\n--x--\r\n"
    )

    # When it sends the form chunked, 64 KB a chunk (requests sends a generator so)
    pieces = (form[at : at + 64 * 1024] for at in range(0, len(form), 64 * 1024))
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "multipart/form-data; boundary=x"}
    response = requests.post(f"{base}/v1/documents", headers=headers, data=pieces, timeout=60)

    # Then it is accepted
    assert response.status_code == 202, response.text
