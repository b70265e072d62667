"""Pipeline efficiency: the service's processes against a raw sequential loop over the same libraries.

    python -m tests.bench.efficiency [--text 4 --text-pages 30 --scans 2 --scan-pages 3]

One set of generated PDFs (text and 300-dpi scans) goes through:
- raw: one process, one document after another, no service: put the PDF in S3 (boto3), extract with
  pypdf, OCR the pages without text (pypdfium2 and tesseract, one page at a time), normalise and chunk,
  embed with the local embedder on one onnxruntime thread, upsert into a local Qdrant folder, and
  insert a row per document in PostgreSQL;
- the service with 1, then 2 ingest worker processes of one thread each (`INGEST_EMBED_THREADS=1`,
  `INGEST_OCR_PARALLELISM=1`: one core's worth of work each), beside the single-threaded index pool,
  the gunicorn gateway and the maintenance loop, on a private PostgreSQL, Redis and S3 server; every
  document uploaded at once, timed from the first upload to the last job's `finished_at`.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path

import boto3
from botocore.config import Config
from qdrant_client import QdrantClient, models
from sqlalchemy import func, select

from ingest_worker.stages.chunk import chunk_pages
from ingest_worker.stages.extract import extract_pages
from ingest_worker.stages.normalize import normalize_text
from ingest_worker.stages.ocr import ocr_pages
from shared.artifacts import PageText
from shared.embedders.local import LocalEmbedder
from shared.models import Document, Job, JobStage
from tests.bench.documents import scanned_document, text_document
from tests.chaos.check import wait_final
from tests.chaos.cluster import Cluster


@dataclass(frozen=True)
class Efficiency:
    documents: int
    pages: int
    raw_s: float
    raw_phases: dict[str, float]
    service_s: dict[int, float]  # worker processes → wall seconds
    service_stages: dict[int, dict[str, float]]  # worker processes → seconds summed per stage


def documents(text: int, text_pages: int, scans: int, scan_pages: int) -> list[bytes]:
    # Distinct bytes for each: the same bytes twice would be a duplicate, not new work.
    return [text_document(text_pages + n) for n in range(text)] + [
        scanned_document(scan_pages + n) for n in range(scans)
    ]


def raw_run(cluster: Cluster, pdfs: list[bytes], workdir: Path) -> tuple[float, dict[str, float]]:
    settings = cluster.settings
    s3 = boto3.session.Session().client(
        "s3",
        endpoint_url=settings.s3_endpoint_url,
        region_name=settings.s3_region,
        aws_access_key_id=settings.s3_access_key_id,
        aws_secret_access_key=settings.s3_secret_access_key,
        config=Config(s3={"addressing_style": "path"}),
    )
    embedder = LocalEmbedder.from_settings(settings.replace(embed_threads=1))
    qdrant = QdrantClient(path=str(workdir / "raw-qdrant"))
    qdrant.create_collection(
        "raw", vectors_config=models.VectorParams(size=384, distance=models.Distance.COSINE)
    )
    tenant_id, _ = cluster.new_tenant("raw")
    assert cluster.db is not None
    phases: dict[str, float] = defaultdict(float)

    def timed(phase: str, started: float) -> float:
        now = time.perf_counter()
        phases[phase] += now - started
        return now

    begun = time.perf_counter()
    for n, pdf in enumerate(pdfs):
        t = time.perf_counter()
        key = f"raw/{uuid.uuid4()}.pdf"
        s3.put_object(Bucket=settings.s3_bucket, Key=key, Body=pdf)
        path = workdir / f"raw-{n}.pdf"
        path.write_bytes(pdf)
        t = timed("store", t)
        pages = extract_pages(str(path), min_chars=settings.ocr_min_chars_per_page)
        t = timed("extract", t)
        wanted = [p.number for p in pages if p.needs_ocr]
        if wanted:
            texts = ocr_pages(str(path), wanted, dpi=settings.ocr_dpi, languages="eng", timeout_s=120)
            pages = [
                PageText(p.number, texts.get(p.number, p.text), False, "ocr") if p.number in texts else p
                for p in pages
            ]
        t = timed("ocr", t)
        normal = [PageText(p.number, normalize_text(p.text), p.needs_ocr, p.source) for p in pages]
        chunks = chunk_pages(normal, max_tokens=254, overlap_tokens=32, count_tokens=embedder.count_tokens)
        t = timed("chunk", t)
        vectors = []
        for start in range(0, len(chunks), 32):
            vectors += embedder.embed([c.text for c in chunks[start : start + 32]])
        t = timed("embed", t)
        qdrant.upsert(
            "raw",
            [
                models.PointStruct(id=str(uuid.uuid4()), vector=v, payload={"text": c.text})
                for c, v in zip(chunks, vectors, strict=True)
            ],
        )
        t = timed("index", t)
        with cluster.db.transaction() as session:
            session.add(
                Document(
                    tenant_id=tenant_id,
                    filename="raw.pdf",
                    sha256=uuid.uuid4().hex,
                    size_bytes=len(pdf),
                    object_key=key,
                )
            )
        timed("rows", t)
    qdrant.close()
    return time.perf_counter() - begun, dict(phases)


def service_run(cluster: Cluster, pdfs: list[bytes]) -> tuple[float, dict[str, float]]:
    tenant_id, key = cluster.new_tenant("bench")
    with cluster.client(key) as client:
        # A warm-up, not counted: the first job starts the parse children and loads the model.
        client.post("/v1/documents", files={"file": ("w.pdf", text_document(1), "application/pdf")})
        wait_final(cluster, tenant_id, 300)
        warm = set(wait_final(cluster, tenant_id, 0))
        started = time.time()
        for n, pdf in enumerate(pdfs):
            response = client.post("/v1/documents", files={"file": (f"{n}.pdf", pdf, "application/pdf")})
            if response.status_code != 202:
                raise RuntimeError(f"upload answered {response.status_code}: {response.text}")
    jobs = {i: j for i, j in wait_final(cluster, tenant_id, 1800).items() if i not in warm}
    failed = [j.status for j in jobs.values() if j.status != "completed"]
    if failed:
        raise RuntimeError(f"jobs did not complete: {failed}")
    assert cluster.db is not None
    with cluster.db.transaction() as session:
        finished = session.scalar(select(func.max(Job.finished_at)).where(Job.id.in_(jobs)))
        rows = session.execute(
            select(JobStage.stage, JobStage.started_at, JobStage.finished_at).where(JobStage.job_id.in_(jobs))
        ).all()
    stages: dict[str, float] = defaultdict(float)
    for stage, start, end in rows:
        stages[stage] += (end - start).total_seconds()
    assert finished is not None
    return finished.replace(tzinfo=UTC).timestamp() - started, dict(stages)


def measure_efficiency(
    text: int = 4,
    text_pages: int = 30,
    scans: int = 2,
    scan_pages: int = 3,
    processes: tuple[int, ...] = (1, 2),
) -> Efficiency:
    pdfs = documents(text, text_pages, scans, scan_pages)
    pages = sum(text_pages + n for n in range(text)) + sum(scan_pages + n for n in range(scans))
    one_core = {"embed_threads": 1, "ocr_parallelism": 1, "max_pages": 5000}
    service_s, service_stages = {}, {}
    raw_s, raw_phases = 0.0, {}
    for count in processes:
        workdir = Path(tempfile.mkdtemp(prefix="efficiency-bench-"))
        cluster = Cluster(workdir, None, worker_processes=count, worker_threads=1, **one_core)
        try:
            cluster.start()
            if not raw_phases:
                raw_s, raw_phases = raw_run(cluster, pdfs, workdir)
            service_s[count], service_stages[count] = service_run(cluster, pdfs)
        finally:
            cluster.stop()
            shutil.rmtree(workdir, ignore_errors=True)
    return Efficiency(len(pdfs), pages, raw_s, raw_phases, service_s, service_stages)


def table(result: Efficiency) -> str:
    rows = [
        "| run | wall | pages/s | raw / run |",
        "| --- | --- | --- | --- |",
        f"| raw, sequential, one process | {result.raw_s:.1f} s | {result.pages / result.raw_s:.1f} "
        "| 1.00x |",
    ]
    for count, seconds in result.service_s.items():
        rows.append(
            f"| service, {count} ingest worker process{'es' if count > 1 else ''} of 1 thread "
            f"| {seconds:.1f} s | {result.pages / seconds:.1f} | {result.raw_s / seconds:.2f}x |"
        )
    return "\n".join(rows)


def where_the_time_goes(result: Efficiency) -> str:
    phases = ("store", "extract", "ocr", "chunk", "embed", "index", "rows")
    stages = ("validate", "extract", "ocr", "chunk", "embed", "index", "finalize")
    raw = ", ".join(f"{p} {result.raw_phases.get(p, 0):.1f} s" for p in phases)
    lines = [f"- raw: {raw}."]
    for count, spent in result.service_stages.items():
        summed = ", ".join(f"{s} {spent.get(s, 0):.1f} s" for s in stages)
        lines.append(f"- service, {count} process(es), stage seconds summed over the jobs: {summed}.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", type=int, default=4)
    parser.add_argument("--text-pages", type=int, default=30)
    parser.add_argument("--scans", type=int, default=2)
    parser.add_argument("--scan-pages", type=int, default=3)
    args = parser.parse_args()
    result = measure_efficiency(args.text, args.text_pages, args.scans, args.scan_pages)
    print(table(result) + "\n\n" + where_the_time_goes(result))


if __name__ == "__main__":
    main()
