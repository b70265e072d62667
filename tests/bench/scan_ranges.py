"""A scan's OCR in one message or in page ranges across two worker processes, end to end.

    python -m tests.bench.scan_ranges [--pages 20] [--range-pages 5] [--parallelism 1 2]

Runs the production topology on this machine (PostgreSQL, Redis, two `dramatiq` processes on the
ingest and OCR queues, one on the index queue, a maintenance loop) and ingests the same scan with
ranges off and on, for each OCR parallelism (tesseract children per message). Prints the client's
end-to-end time, the OCR stage's span, and how long each range ran and waited.
"""

from __future__ import annotations

import argparse
import io
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import redis
import sqlalchemy as sa
from sqlalchemy import select

from gateway.app import create_app
from ingest_worker.maintenance import MaintenanceLoop
from shared.db import Database, migrate
from shared.models import Job, JobStage, StagePart
from shared.outbox import Relay
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from shared.tenants import create_tenant
from tests.bench.documents import scanned_document

ROOT = Path(__file__).resolve().parents[2]
DATABASE_URL = os.environ.get(
    "INGEST_TEST_DATABASE_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("INGEST_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def run(settings: Settings, pdf: bytes, workdir: Path, *, range_pages: int, parallelism: int) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INGEST_")}
    env.update(
        PYTHONPATH=str(ROOT),
        OMP_THREAD_LIMIT="1",
        INGEST_DATABASE_URL=settings.database_url,
        INGEST_BROKER_URL=settings.broker_url,
        INGEST_BROKER_NAMESPACE=settings.broker_namespace,
        INGEST_DATA_DIR=settings.data_dir,
        INGEST_MODEL_CACHE_DIR=os.environ.get("INGEST_MODEL_CACHE_DIR", str(ROOT / "var" / "models")),
        INGEST_OCR_RANGE_PAGES=str(range_pages),
        INGEST_OCR_PARALLELISM=str(parallelism),
        INGEST_LOG_LEVEL="WARNING",
    )
    pools = [["ingest", "ocr"], ["ingest", "ocr"], ["index"]]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dramatiq",
                "ingest_worker.actors",
                "--processes",
                "1",
                "--threads",
                "1",
                "-Q",
                *q,
            ],
            env=env,
            cwd=ROOT,
            stdout=(workdir / f"worker-{i}.log").open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for i, q in enumerate(pools)
    ]
    db = Database(settings.database_url)
    loop = MaintenanceLoop(db, Relay(db.sessions, Publisher(make_broker(settings))), settings)
    loop.start_thread()
    app = create_app(settings)
    try:
        with db.transaction() as session:
            _, key = create_tenant(session, f"bench-{uuid.uuid4().hex[:6]}")
        client = app.test_client()
        time.sleep(3)  # the worker processes import and connect
        sent = time.monotonic()
        response = client.post(
            "/v1/documents",
            headers={"Authorization": f"Bearer {key}"},
            data={"file": (io.BytesIO(pdf), "s.pdf")},
        )
        job_id = response.get_json()["job_id"]
        while (
            status := client.get(
                response.headers["Location"], headers={"Authorization": f"Bearer {key}"}
            ).get_json()["status"]
        ) not in {
            "completed",
            "failed",
            "dead_lettered",
        }:
            time.sleep(0.05)
        client_s = time.monotonic() - sent
        return describe(db, job_id, status, client_s, range_pages, parallelism)
    finally:
        loop.stop()
        for proc in procs:
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=60)
        db.dispose()


def describe(
    db: Database, job_id: str, status: str, client_s: float, range_pages: int, parallelism: int
) -> str:
    with db.transaction() as session:
        job = session.get(Job, job_id)
        assert job is not None
        stages = {s.stage: s for s in session.scalars(select(JobStage).where(JobStage.job_id == job_id))}
        parts = session.scalars(
            select(StagePart).where(StagePart.job_id == job_id).order_by(StagePart.part)
        ).all()
        ocr = stages["ocr"]
        assert ocr.finished_at is not None
        spans = {
            name: (s.finished_at - s.started_at).total_seconds()
            for name, s in stages.items()
            if s.finished_at
        }
        line = (
            f"ranges of {range_pages or '-'} pages, {parallelism} tesseract per message: {status}, "
            "end to end "
            f"{client_s:.1f} s; OCR stage {spans['ocr']:.1f} s; other stages "
            f"{sum(v for k, v in spans.items() if k != 'ocr'):.1f} s"
        )
        for p in parts:
            assert p.finished_at is not None
            done_s = (p.finished_at - ocr.started_at).total_seconds()
            line += f"\n  range {p.part} (pages {p.pages[0]}-{p.pages[-1]}): done at +{done_s:.1f} s"
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--range-pages", type=int, default=5)
    parser.add_argument("--parallelism", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    pdf = scanned_document(args.pages)
    admin = sa.create_engine(DATABASE_URL, isolation_level="AUTOCOMMIT")
    name = f"ingest_bench_{secrets.token_hex(4)}"
    namespace = f"ingest-bench-{uuid.uuid4().hex[:8]}"
    workdir = Path(tempfile.mkdtemp(prefix="ingest-ranges-"))
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = sa.engine.make_url(DATABASE_URL).set(database=name).render_as_string(hide_password=False)
    try:
        migrate(url)
        settings = Settings(
            data_dir=str(workdir / "data"),
            database_url=url,
            broker_url=REDIS_URL,
            broker_namespace=namespace,
            maintenance_interval_s=0.5,
        )
        for parallelism in args.parallelism:
            for range_pages in (0, args.range_pages):
                print(
                    run(settings, pdf, workdir, range_pages=range_pages, parallelism=parallelism), flush=True
                )
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(f"{namespace}*"))
        if keys:
            client.delete(*keys)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
