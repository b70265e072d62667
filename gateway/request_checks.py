"""Checks every request passes before a view runs: ids that fit the database and no NUL characters;
and the caller's body limit, checked before the body is read. A JSON body is read by the views'
parser (gateway/blueprint.py), an upload's form by gateway/upload_form.py, each after the key check
and each reporting its own faults."""

from __future__ import annotations

from typing import Any

from flask import Flask, request
from werkzeug.routing import IntegerConverter

from shared.errors import InvalidRequestError, UploadTooLargeError

# The largest id either database stores (a signed 64-bit integer).
MAX_ID = 2**63 - 1
# Multipart framing around the files: the request may exceed the upload limit by this much.
MULTIPART_OVERHEAD_BYTES = 64 * 1024


class IdConverter(IntegerConverter):
    """`<int:...>` path ids beyond a 64-bit integer match no route (404), instead of overflowing
    the database driver."""

    def __init__(self, map: Any, *args: Any, **kwargs: Any) -> None:  # noqa: A002 (werkzeug's name)
        kwargs.setdefault("max", MAX_ID)
        super().__init__(map, *args, **kwargs)


def refuse_nul() -> None:
    """PostgreSQL cannot store NUL in text: refuse it in the path, query string and headers up front."""
    pairs = [*request.args.items(multi=True), *request.headers.items()]
    if "\x00" in request.path or any("\x00" in k or "\x00" in v for k, v in pairs):
        raise InvalidRequestError("The request contains a NUL character.", code="nul_character")


def limit_body(limit_mb: int) -> int:
    """Bound this request's body by the caller's upload limit (which may exceed the service default)
    plus the multipart framing, and return that bound in bytes: an announced larger Content-Length is
    refused before any of the body is read, and a chunked body stops being read at the limit (here
    by Werkzeug's stream, under gunicorn; by the server itself under waitress, which reads a body
    before the app runs: deploy/waitress_server.py)."""
    limit = limit_mb * 1024 * 1024 + MULTIPART_OVERHEAD_BYTES
    request.max_content_length = limit
    if (request.content_length or 0) > limit:
        raise UploadTooLargeError()
    return limit


def install(app: Flask) -> None:
    """Bounded integer ids and the NUL check (before blueprints register)."""
    app.url_map.converters["int"] = IdConverter
    app.before_request(refuse_nul)
