"""Whether one client can starve the gateway: another tenant's `GET /v1/jobs` and `/healthz` latency
while one tenant holds event streams open and many connections sit on half a request line.

    python -m tests.bench.starvation [--streams 50] [--half-open 200]

Runs `make gateway`'s gunicorn (deploy/gunicorn.conf.py, gevent workers) on a private PostgreSQL
database and `make run`'s waitress server (deploy/embedded.py's options and upload gate) on SQLite,
each alone first and then under the load. `measure_starvation` returns the rows (`make bench` uses it).
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests
import sqlalchemy as sa

from shared.db import Database, migrate
from shared.settings import Settings
from shared.tenants import create_tenant
from tests.conftest import TEST_DATABASE_URL
from tests.support.pdfs import text_pdf
from tests.support.ports import free_port
from tests.support.starvation import Latency, close_all, half_open, latency, open_streams

ROOT = Path(__file__).resolve().parents[2]
TARGET_P99_MS = 200.0


@dataclass(frozen=True)
class Row:
    server: str
    idle: Latency
    loaded: Latency
    health: Latency


@contextmanager
def _postgres() -> Iterator[str]:
    admin = sa.create_engine(TEST_DATABASE_URL, isolation_level="AUTOCOMMIT")
    name = f"ingest_bench_{secrets.token_hex(4)}"
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = sa.engine.make_url(TEST_DATABASE_URL).set(database=name).render_as_string(hide_password=False)
    try:
        migrate(url)
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def _gunicorn(url: str, folder: Path, streams: int) -> Iterator[int]:
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "INGEST_DATABASE_URL": url,
        "INGEST_DATA_DIR": str(folder),
        "INGEST_EMBEDDER": "tests.shared.embedders.fakes:FakeEmbedder",
        "INGEST_PORT": str(port),
        "INGEST_EVENTS_MAX_STREAMS_PER_TENANT": str(streams),
        "INGEST_GATEWAY_GRACEFUL_TIMEOUT_S": "1",
    }
    command = [sys.executable, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py", "gateway.wsgi:app"]
    process = subprocess.Popen(
        command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        yield port
    finally:
        process.terminate()
        process.wait(30)


@contextmanager
def _waitress(folder: Path, streams: int) -> Iterator[int]:
    from deploy.embedded import STREAM_SLOTS, gateway_server
    from gateway.api.events import limit_streams_per_process
    from gateway.app import create_app

    settings = Settings(data_dir=str(folder), embedder="tests.shared.embedders.fakes:FakeEmbedder")
    settings = settings.replace(events_max_streams_per_tenant=streams)
    migrate(settings.effective_database_url)
    app = create_app(settings)
    limit_streams_per_process(app, STREAM_SLOTS)
    server = gateway_server(app, settings, host="127.0.0.1", port=0)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        yield server.effective_port
    finally:
        server.close()
        thread.join(5)


def _load(server: str, port: int, url: str, streams: int, halves: int, count: int) -> Row:
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if requests.get(f"{base}/healthz", timeout=1).status_code == 200:
                break
        except requests.RequestException:
            time.sleep(0.1)
    db = Database(url)
    with db.transaction() as session:
        noisy, quiet = create_tenant(session, "noisy")[1], create_tenant(session, "quiet")[1]
    db.dispose()
    jobs = []
    for key in (noisy, quiet):
        files = {"file": ("a.pdf", text_pdf([f"{key}"]), "application/pdf")}
        answer = requests.post(
            f"{base}/v1/documents", headers={"Authorization": f"Bearer {key}"}, files=files
        )
        jobs.append(answer.json()["job_id"])
    headers = {"Authorization": f"Bearer {quiet}"}
    idle = latency(f"{base}/v1/jobs", headers, count)
    # Streams beyond a cap get their 429 or 503 at once; the served ones stay open.
    held = open_streams(port, noisy, jobs[0], streams) + half_open(port, halves)
    try:
        loaded = latency(f"{base}/v1/jobs", headers, count)
        health = latency(f"{base}/healthz", {}, count // 5)
    finally:
        close_all(held)
    return Row(server, idle, loaded, health)


def measure_starvation(streams: int = 50, halves: int = 200, count: int = 200) -> list[Row]:
    """One row per topology: idle and loaded latency of another tenant's `GET /v1/jobs`."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-starve-") as folder, _postgres() as url:
        with _gunicorn(url, Path(folder) / "g", streams) as port:
            rows.append(_load("make gateway (gunicorn, gevent)", port, url, streams, halves, count))
        embedded = Path(folder) / "w"
        with _waitress(embedded, streams) as port:
            url = Settings(data_dir=str(embedded)).effective_database_url
            rows.append(_load("make run (waitress, 16 threads)", port, url, streams, halves, count))
    return rows


def starvation_section(rows: list[Row], streams: int = 50, halves: int = 200) -> str:
    lines = [
        "## Starvation\n",
        f"`tests/bench/starvation.py`: another tenant's `GET /v1/jobs` while one tenant asks for {streams} "
        f"event streams and {halves} connections sit on half a request line (target p99 under "
        f"{TARGET_P99_MS:.0f} ms; `/healthz` must answer).\n",
        "| server | idle p50 / p99 ms | loaded p50 / p99 ms | failures | /healthz max ms |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r.server} | {r.idle.p50_ms:.0f} / {r.idle.p99_ms:.0f} | {r.loaded.p50_ms:.0f} / "
            f"{r.loaded.p99_ms:.0f} | {r.loaded.failures + r.health.failures} | {r.health.max_ms:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=50)
    parser.add_argument("--half-open", type=int, default=200)
    args = parser.parse_args()
    print(starvation_section(measure_starvation(args.streams, args.half_open), args.streams, args.half_open))


if __name__ == "__main__":
    main()
