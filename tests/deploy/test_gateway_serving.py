"""The gateway as each topology serves it: `make gateway`'s gunicorn (deploy/gunicorn.conf.py) as a real
server process, and `make run`'s waitress server with its upload gate (deploy/embedded.py) in this
process (tests/support/serving.py). Limits are answered before the body is read, to a raw socket, `requests`
and `curl` alike, and no client or tenant can starve the others."""

from __future__ import annotations

import json
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from shared.db import Database
from shared.settings import Settings
from tests.support.body_probe import probe
from tests.support.pdfs import text_pdf
from tests.support.serving import embedded_gateway, gunicorn_gateway, new_tenant
from tests.support.starvation import close_all, half_open, latency, open_streams

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

MB = 1024 * 1024
# At most this much of a refused body may be read (the probe sees what the server's socket gave it).
READ_AT_MOST = 64 * 1024
# Who posts the large body, and the answer it gets: over its limit, or without a key.
REFUSALS = [(True, 413, "upload_too_large"), (False, 401, "unauthorized")]
# A refused body is announced this large; the test's file holds no data (sparse).
ANNOUNCED = 300 * MB


@pytest.fixture(scope="module")
def gunicorn(pg_server_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`make gateway`'s gunicorn on PostgreSQL, one for the module (each test makes its own tenants): a
    1 MB service upload limit, 20 streams a tenant."""
    # Open streams would hold a graceful stop for its whole timeout.
    limits = {"max_upload_mb": "1", "events_max_streams_per_tenant": "20", "gateway_graceful_timeout_s": "1"}
    db = Database(pg_server_url)
    try:
        with gunicorn_gateway(db, tmp_path_factory.mktemp("gunicorn"), **limits) as base:
            yield base
    finally:
        db.dispose()


@pytest.fixture
def gateway(gunicorn: str, pg_db: Database) -> tuple[str, Database]:
    """The module's gunicorn, on this test's emptied database."""
    return gunicorn, pg_db


@pytest.fixture
def embedded(settings: Settings, sqlite_db: Database) -> Iterator[tuple[str, Database]]:
    """`make run`'s server, as deploy/embedded.py builds it, on SQLite: a 1 MB service upload limit."""
    with embedded_gateway(settings.replace(max_upload_mb=1), sqlite_db) as base:
        yield base, sqlite_db


@pytest.fixture(params=["gateway", "embedded"])
def served(request: pytest.FixtureRequest) -> tuple[str, Database]:
    """Each topology's server in turn."""
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]


@pytest.fixture
def announced_file(tmp_path: Path) -> Path:
    """A 300 MB file that takes no room (sparse): what a client announces and starts to send."""
    path = tmp_path / "big.pdf"
    with path.open("wb") as file:
        file.truncate(ANNOUNCED)
    return path


def _upload(base: str, key: str, data: bytes) -> requests.Response:
    files = {"file": ("a.pdf", data, "application/pdf")}
    return requests.post(f"{base}/v1/documents", headers={"Authorization": f"Bearer {key}"}, files=files)


@pytest.mark.parametrize("expect_continue", [False, True])
def test_an_oversized_or_keyless_body_is_answered_before_it_is_read(
    served: tuple[str, Database], expect_continue: bool
) -> None:
    # Given a tenant allowed 3 MB
    base, db = served
    port = int(base.rsplit(":", 1)[1])
    key = new_tenant(db, "acme", max_upload_mb=3)

    # When it, and a client without a key, announce 300 MB bodies
    keyed = probe(port, ANNOUNCED, {"Authorization": f"Bearer {key}"}, expect_continue=expect_continue)
    keyless = probe(port, ANNOUNCED, {}, expect_continue=expect_continue)

    # Then each gets its answer, not a reset, with at most 64 KB of the body read
    assert (keyed.status, keyed.code, keyed.reset) == (413, "upload_too_large", False)
    assert (keyless.status, keyless.code, keyless.reset) == (401, "unauthorized", False)
    assert keyed.read_bytes <= READ_AT_MOST and keyless.read_bytes <= READ_AT_MOST, (keyed, keyless)


@pytest.mark.parametrize(("keyed", "status", "code"), REFUSALS)
def test_requests_receives_the_refusal_of_a_body_it_is_still_sending(
    served: tuple[str, Database], announced_file: Path, keyed: bool, status: int, code: str
) -> None:
    # Given a tenant allowed 3 MB, and a client that sends its whole body before it reads an answer
    base, db = served
    headers = {"Authorization": f"Bearer {new_tenant(db, 'acme', max_upload_mb=3)}"} if keyed else {}

    # When it posts a 300 MB file
    with announced_file.open("rb") as body:
        response = requests.post(f"{base}/v1/documents", headers=headers, data=body, timeout=60)

    # Then it gets the problem document, not a connection error
    assert response.status_code == status
    assert response.headers["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == code


@pytest.mark.parametrize("expect", ["Expect: 100-continue", "Expect:"], ids=["expect-100", "plain"])
@pytest.mark.parametrize(("keyed", "status", "code"), REFUSALS)
def test_curl_receives_the_refusal_of_a_large_upload(
    served: tuple[str, Database], announced_file: Path, expect: str, keyed: bool, status: int, code: str
) -> None:
    # Given a tenant allowed 3 MB
    base, db = served
    headers = ["-H", f"Authorization: Bearer {new_tenant(db, 'acme', max_upload_mb=3)}"] if keyed else []

    # When curl posts a 300 MB file, waiting for 100 Continue or not (an empty header drops it)
    command = ["curl", "-sS", "-w", "\n%{http_code}", "-H", expect, *headers]
    command += ["-F", f"file=@{announced_file};type=application/pdf", f"{base}/v1/documents"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)

    # Then it gets the problem document, and exits without an error
    assert done.returncode == 0, done.stderr
    body, _, answered = done.stdout.rpartition("\n")
    assert int(answered) == status
    assert json.loads(body)["code"] == code


def test_a_tenant_limit_above_the_service_default_takes_a_file_of_that_size(
    served: tuple[str, Database],
) -> None:
    # Given a service default of 1 MB and a tenant allowed 3 MB
    base, db = served
    key = new_tenant(db, "big", max_upload_mb=3)

    # When it uploads a 2 MB PDF
    response = _upload(base, key, text_pdf(["A large one."]) + b"\n" * (2 * MB))

    # Then it is accepted
    assert response.status_code == 202, response.text


def test_a_body_let_in_after_100_continue_is_read_whole(served: tuple[str, Database], tmp_path: Path) -> None:
    # Given a tenant allowed 3 MB, and a 2 MB PDF
    base, db = served
    key = new_tenant(db, "big", max_upload_mb=3)
    path = tmp_path / "a.pdf"
    path.write_bytes(text_pdf(["A large one."]) + b"\n" * (2 * MB))

    # When curl uploads it, waiting for 100 Continue before it sends the body
    command = ["curl", "-sS", "-w", "\n%{http_code}", "-H", "Expect: 100-continue"]
    command += ["-H", f"Authorization: Bearer {key}", "-F", f"file=@{path};type=application/pdf"]
    done = subprocess.run([*command, f"{base}/v1/documents"], capture_output=True, text=True, timeout=60)

    # Then the body is sent after the server's word, and the upload accepted
    assert done.returncode == 0, done.stderr
    body, _, answered = done.stdout.rpartition("\n")
    assert int(answered) == 202, body
    assert json.loads(body)["status"] == "queued"


def test_open_streams_and_half_sent_requests_do_not_starve_anothernew_tenant(
    gateway: tuple[str, Database],
) -> None:
    # Given one tenant holding 20 event streams and 60 connections that sent half a request line
    base, db = gateway
    port = int(base.rsplit(":", 1)[1])
    noisy, quiet = new_tenant(db, "noisy"), new_tenant(db, "quiet")
    job_id = _upload(base, noisy, text_pdf(["Streamed."])).json()["job_id"]
    assert _upload(base, quiet, text_pdf(["Listed."])).status_code == 202
    held = open_streams(port, noisy, job_id, 20) + half_open(port, 60)
    try:
        # When another tenant lists its jobs, and the load balancer checks health
        jobs = latency(f"{base}/v1/jobs", {"Authorization": f"Bearer {quiet}"}, 50)
        health = latency(f"{base}/healthz", {}, 10)
    finally:
        close_all(held)

    # Then both answer every time, promptly (a loose bound for a shared machine)
    assert jobs.failures == 0 and health.failures == 0
    assert jobs.p99_ms < 1000, jobs
    assert health.max_ms < 1000, health


def test_a_request_pipelined_behind_a_gated_body_is_answered(embedded: tuple[str, Database]) -> None:
    # Given a keyed request with a chunked body (held at its headers for the gate) and, in the same
    # packet, a second request right behind it
    base, db = embedded
    key = new_tenant(db, "pipelined")
    port = int(base.rsplit(":", 1)[1])
    first = (
        f"POST /v1/documents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
        "Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
    )
    second = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

    # When both are sent at once
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall((first + second).encode())
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk

    # Then each gets its answer, in order: the bytes behind the gated body are not lost
    statuses = [int(status) for status in re.findall(rb"HTTP/1\.1 (\d{3}) ", answer)]
    assert len(statuses) == 2, answer[:500]
    assert statuses[0] >= 400 and statuses[1] == 200
