"""`make bench`: the costly stages, whole documents end to end, the upload's memory, tenant fairness and
an upload's latency during a reindex.

    python -m tests.bench.run [--out docs/bench.md] [--upload-mb 200] [--ocr-pages 3]

Prints a Markdown report and writes it to `--out`. Everything it starts (the embedded process, a
gunicorn gateway, an in-process worker on Redis) is stopped, and its folders and Redis keys are
removed, before it returns.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from shared.settings import Settings
from tests.bench.documents import scanned_document, text_document
from tests.bench.fairness import measure_fairness
from tests.bench.machine import describe_machine
from tests.bench.pipeline import embedded_service
from tests.bench.reindex_latency import measure as measure_reindex_latency
from tests.bench.report import Results, render
from tests.bench.stages import measure_embedding, measure_extraction, measure_ocr
from tests.bench.upload_memory import measure_upload_memory
from tests.pdfs import text_pdf

ROOT = Path(__file__).resolve().parents[2]
TEXT_PAGES = 100
SCAN_PAGES = 20
# The end-to-end figures measured earlier on such machines (ARCHITECTURE.md §10).
REFERENCE_TEXT_S = 9.0
REFERENCE_SCAN_S = 25.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "bench.md")
    parser.add_argument("--upload-mb", type=int, default=200)
    parser.add_argument("--ocr-pages", type=int, default=3)
    args = parser.parse_args()

    settings = Settings.from_env()
    # As the worker's entry point does: tesseract with one OpenMP thread, inherited by the embedded process.
    settings.export_child_environment()
    started, load_at_start = time.monotonic(), os.getloadavg()[0]
    workdir = Path(tempfile.mkdtemp(prefix="ingest-bench-"))
    try:
        step("generating the documents")
        text, scan = text_document(TEXT_PAGES), scanned_document(SCAN_PAGES)
        step("extraction")
        extraction = measure_extraction(text, workdir)
        step("OCR")
        ocr = measure_ocr(scan, workdir, pages=args.ocr_pages, settings=settings)
        step("embedding")
        embeddings = [measure_embedding(settings, threads=threads) for threads in (1, 2)]
        step("end to end on deploy/embedded.py")
        (workdir / "embedded").mkdir()
        with embedded_service(workdir / "embedded") as service:
            served = service.settings
            cold = service.ingest("first.pdf", text_pdf(["A first page, to start the service's parts."]))
            text_run = service.ingest("text.pdf", text)
            scan_run = service.ingest("scan.pdf", scan)
        step(f"gateway memory during a {args.upload_mb} MB upload")
        upload = measure_upload_memory(args.upload_mb)
        step("fairness between two tenants on the Redis broker")
        fairness = measure_fairness()
        step("an upload's latency during a reindex")
        (workdir / "reindex").mkdir()
        reindex = measure_reindex_latency(workdir=workdir / "reindex")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    results = Results(
        date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        duration_s=time.monotonic() - started,
        machine=describe_machine(),
        load=(load_at_start, os.getloadavg()[0]),
        extraction=extraction,
        ocr=ocr,
        embeddings=embeddings,
        cold=cold,
        text=text_run,
        scan=scan_run,
        reference_floor_s={text_run.name: REFERENCE_TEXT_S, scan_run.name: REFERENCE_SCAN_S},
        worker_threads=served.worker_threads,
        embed_threads=served.embed_threads,
        upload=upload,
        fairness=fairness,
        reindex=reindex,
    )
    report = render(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report)
    print(report)
    print(f"written to {args.out}", file=sys.stderr)


def step(what: str) -> None:
    print(f"bench: {what}...", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
