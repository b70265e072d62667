"""Body limits before the body is read: the caller's own upload limit (above the service default
too), 413 for an announced larger body and 401 for a keyless one, with none of it read."""

from __future__ import annotations

import io
import json
from typing import Any

from flask import Flask
from sqlalchemy import update
from werkzeug.test import EnvironBuilder, run_wsgi_app

from shared.models import Tenant
from tests.conftest import auth, tenant_key
from tests.gateway.test_gateway_upload import PDF, upload

MB = 1024 * 1024


class CountingBody(io.RawIOBase):
    """A request body that counts the bytes the app reads from it."""

    def __init__(self, size: int) -> None:
        self.left, self.read_bytes = size, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self.left)
        buffer[:n] = b"\0" * n
        self.left -= n
        self.read_bytes += n
        return n


def _post_announced(app: Flask, size: int, headers: dict[str, str]) -> tuple[int, dict[str, Any], int]:
    """POST /v1/documents announcing `size` bytes: the status, the JSON answer and the bytes read."""
    environ = EnvironBuilder(
        "/v1/documents", method="POST", headers=headers, content_type="multipart/form-data; boundary=x"
    ).get_environ()
    body = CountingBody(size)
    environ.update({"wsgi.input": body, "CONTENT_LENGTH": str(size)})
    app_iter, status, _ = run_wsgi_app(app, environ, buffered=True)
    return int(status.split()[0]), json.loads(b"".join(app_iter)), body.read_bytes


def _set_limit(app: Flask, tenant_name: str, mb: int) -> None:
    with app.extensions["ingest"].db.transaction() as session:
        session.execute(update(Tenant).where(Tenant.name == tenant_name).values(max_upload_mb=mb))


def test_a_tenant_limit_above_the_service_default_lets_a_file_of_that_size_through(app: Flask) -> None:
    # Given a service default of 1 MB, one tenant allowed 3 MB and one on the default
    big, small = tenant_key(app, "big"), tenant_key(app, "small")
    _set_limit(app, "big", 3)
    two_mb_pdf = PDF + b"\n" * (2 * MB)

    # When each uploads a 2 MB PDF
    accepted = upload(app.test_client(), big, two_mb_pdf)
    refused = upload(app.test_client(), small, two_mb_pdf)

    # Then the tenant with the larger limit gets its job, the other a 413
    assert accepted.status_code == 202, accepted.get_json()
    assert refused.status_code == 413
    assert refused.get_json()["code"] == "upload_too_large"


def test_a_body_announced_over_the_callers_limit_is_refused_unread(app: Flask) -> None:
    # Given a tenant allowed 3 MB
    key = tenant_key(app, "acme")
    _set_limit(app, "acme", 3)

    # When it announces a 300 MB body
    status, answer, read = _post_announced(app, 300 * MB, auth(key))

    # Then it is a 413 and no byte of the body was read
    assert (status, answer["code"], read) == (413, "upload_too_large", 0)


def test_a_keyless_body_is_refused_unread(app: Flask) -> None:
    # Given no key, or a wrong one
    for headers in ({}, auth("not-a-key")):
        # When a client announces a 300 MB body
        status, answer, read = _post_announced(app, 300 * MB, headers)

        # Then it is a 401 and no byte of the body was read
        assert (status, answer["code"], read) == (401, "unauthorized", 0)
