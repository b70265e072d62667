"""The embedded server's own refusals (before the gateway runs) are problem+json with a stable code, and
its own limits hold for a chunked body too."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from deploy.waitress_server import make_server


def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]


@pytest.fixture
def server() -> Iterator[Any]:
    server = make_server(
        app, host="127.0.0.1", port=0, max_request_header_size=2048, max_request_body_size=1024
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    yield server
    server.close()
    thread.join(5)


def exchange(server: Any, raw: bytes) -> tuple[int, dict[str, str], dict[str, Any]]:
    with socket.create_connection(("127.0.0.1", server.effective_port), timeout=5) as sock:
        sock.sendall(raw)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, json.loads(body)


@pytest.mark.parametrize(
    ("raw", "status", "code"),
    [
        (b"GET /x HTTP/1.1\r\nHost: a\r\nX-Big: " + b"a" * 4096 + b"\r\n\r\n", 431, "headers_too_large"),
        (
            b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4096\r\n\r\n" + b"a" * 4096,
            413,
            "upload_too_large",
        ),
        (b"GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: nope\r\n\r\n", 400, "invalid_request"),
        (
            b"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\n" + b"a" * 4096,
            413,
            "upload_too_large",
        ),
    ],
    ids=["headers", "content-length", "bad-length", "chunked"],
)
def test_the_servers_own_refusals_are_problem_json(server: Any, raw: bytes, status: int, code: str) -> None:
    # When a request breaks the server's own limits or syntax
    answered, headers, body = exchange(server, raw)
    # Then the answer is a problem document with a stable code
    assert answered == status
    assert headers["content-type"] == "application/problem+json"
    assert (body["status"], body["code"]) == (status, code)


def test_a_chunk_size_line_that_never_ends_is_refused() -> None:
    # Given a server that takes bodies up to 1 MB
    server = make_server(app, host="127.0.0.1", port=0, max_request_body_size=1024 * 1024)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        # When a chunked body's first size line runs on past 8 KB (kept in memory until it ends)
        raw = b"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + b"1" * 10_000
        answered, headers, body = exchange(server, raw)
    finally:
        server.close()
        thread.join(5)
    # Then it is refused at once, a problem document
    assert (answered, body["code"]) == (400, "invalid_request")
    assert headers["content-type"] == "application/problem+json"
