"""`make bench`: the stages, whole documents, the production processes, memory, tenant fairness and
an upload's latency during a reindex.

    python -m tests.bench.run [--parts accept,hops] [--quick] [--out docs/benchmarks.md]

Parts: pipeline (the stages alone and end to end on deploy/embedded.py), accept (the accept path beside
a raw loop), efficiency (1 and 2 worker processes beside a raw sequential run), hops (stage hop latency
against the Redis polling bound), memory (worker peak memory on a long and a short PDF), recovery (after
a SIGKILL), upload (the gateway's memory during a large upload), fairness (two tenants), reindex (an
upload's latency during a reindex beside its latency alone), ocr (CPU per page with and without the
confidence rule, with three languages, with script detection), webhooks (how soon a webhook leaves after
its event commits, on an idle system), search (dense, keyword and hybrid search latency in Qdrant local
mode over 10,000 and 50,000 points), starvation (another tenant's latency while one holds event streams
and half-sent requests hold connections, in both topologies). `--quick` runs
each part smaller. Prints a Markdown report and writes it to `--out` when every part ran (in full or
quick). Everything it starts is stopped, and its folders and Redis keys removed, before it returns.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from shared.settings import Settings
from tests.bench import (
    accept_path,
    efficiency,
    hops,
    ocr_cost,
    recovery,
    search_latency,
    starvation,
    vector_store,
    webhook_latency,
    worker_memory,
)
from tests.bench import report_production as production
from tests.bench.documents import scanned_document, text_document
from tests.bench.fairness import measure_fairness
from tests.bench.machine import describe_machine
from tests.bench.pipeline import embedded_service
from tests.bench.reindex_latency import measure as measure_reindex_latency
from tests.bench.report import Pipeline, Results, render
from tests.bench.stages import measure_embedding, measure_extraction, measure_ocr
from tests.bench.upload_memory import UploadMemory, measure_upload_memory
from tests.support.pdfs import text_pdf

ROOT = Path(__file__).resolve().parents[2]
PARTS = (
    "pipeline",
    "accept",
    "efficiency",
    "hops",
    "memory",
    "recovery",
    "upload",
    "fairness",
    "reindex",
    "ocr",
    "webhooks",
    "search",
    "starvation",
    "vectors",
)
# The end-to-end figures measured earlier on such machines (ARCHITECTURE.md §10).
REFERENCE_TEXT_S = 9.0
REFERENCE_SCAN_S = 25.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--parts", default=",".join(PARTS), help="comma-separated, of: " + ", ".join(PARTS))
    parser.add_argument("--quick", action="store_true", help="smaller documents, fewer runs")
    parser.add_argument("--upload-mb", type=int, default=200)
    parser.add_argument("--ocr-pages", type=int, default=3)
    args = parser.parse_args()
    parts = [p for p in PARTS if p in args.parts.split(",")]
    unknown = set(filter(None, args.parts.split(","))) - set(PARTS)
    if unknown:
        parser.error(f"unknown part(s): {', '.join(sorted(unknown))}")
    quick = args.quick

    settings = Settings.from_env()
    # As the worker's entry point does: tesseract with one OpenMP thread, inherited by the processes.
    settings.export_child_environment()
    started, load_at_start = time.monotonic(), os.getloadavg()[0]
    found: dict[str, object] = {}
    runs: dict[str, Callable[[], object]] = {
        "pipeline": lambda: measure_pipeline(settings, args.ocr_pages, quick),
        "accept": lambda: accept_path.measure_accept_path(2 if quick else 20),
        "efficiency": lambda: (
            efficiency.measure_efficiency(2, 10, 1, 1) if quick else efficiency.measure_efficiency()
        ),
        "hops": lambda: hops.measure_hops((1000, 20), 3, 8) if quick else hops.measure_hops(),
        "memory": lambda: worker_memory.measure_worker_memory((10, 200) if quick else (10, 1000)),
        "recovery": lambda: recovery.measure_recovery((4,) if quick else (30, 4)),
        "upload": lambda: measure_upload_memory(20 if quick else args.upload_mb),
        "fairness": lambda: measure_fairness(caps=(2,), burst_jobs=10) if quick else measure_fairness(),
        "reindex": lambda: measure_reindex_latency(documents=8) if quick else measure_reindex_latency(),
        "ocr": lambda: ocr_cost.measure_ocr_cost(settings, rounds=1 if quick else 2),
        "webhooks": lambda: webhook_latency.measure_webhook_latency(rounds=3 if quick else 10),
        "search": lambda: (
            search_latency.measure_search_latency((2_000,), 10)
            if quick
            else search_latency.measure_search_latency((10_000, 50_000), 30)
        ),
        "starvation": lambda: (
            starvation.measure_starvation(10, 40, 50) if quick else starvation.measure_starvation()
        ),
        "vectors": lambda: (
            vector_store.measure_vector_store(6_000, 4_000, 30, 5, 1.0)
            if quick
            else vector_store.measure_vector_store()
        ),
    }
    for part in parts:
        step(part)
        found[part] = runs[part]()

    upload = found.get("upload")
    assert upload is None or isinstance(upload, UploadMemory)
    sections = []
    if "accept" in found:
        sections.append(production.accept_section(found["accept"]))  # type: ignore[arg-type]
    if "efficiency" in found:
        sections.append(production.efficiency_section(found["efficiency"]))  # type: ignore[arg-type]
    if "hops" in found:
        sections.append(production.hops_section(found["hops"]))  # type: ignore[arg-type]
    if "memory" in found:
        sections.append(production.memory_section(found["memory"], upload))  # type: ignore[arg-type]
    if "recovery" in found:
        sections.append(production.recovery_section(found["recovery"]))  # type: ignore[arg-type]
    if "ocr" in found:
        sections.append(ocr_cost.ocr_section(found["ocr"]))  # type: ignore[arg-type]
    if "webhooks" in found:
        sections.append(webhook_latency.webhook_section(found["webhooks"]))  # type: ignore[arg-type]
    if "search" in found:
        sections.append(search_latency.search_section(found["search"]))  # type: ignore[arg-type]
    if "starvation" in found:
        rows, (streams, halves) = found["starvation"], (10, 40) if quick else (50, 200)
        sections.append(starvation.starvation_section(rows, streams, halves))  # type: ignore[arg-type]
    if "vectors" in found:
        sections.append(vector_store.vector_section(found["vectors"]))  # type: ignore[arg-type]
    results = Results(
        date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC") + (" (quick mode)" if quick else ""),
        duration_s=time.monotonic() - started,
        machine=describe_machine(),
        load=(load_at_start, os.getloadavg()[0]),
        pipeline=found.get("pipeline"),  # type: ignore[arg-type]
        upload=upload,
        fairness=found.get("fairness"),  # type: ignore[arg-type]
        reindex=found.get("reindex"),  # type: ignore[arg-type]
        production=tuple(sections),
    )
    report = render(results)
    print(report)
    if len(parts) == len(PARTS):
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report)
        print(f"written to {args.out}", file=sys.stderr)


def measure_pipeline(settings: Settings, ocr_pages: int, quick: bool) -> Pipeline:
    """The costly stages on their own, then three documents end to end through deploy/embedded.py."""
    text_pages, scan_pages = (20, 4) if quick else (100, 20)
    workdir = Path(tempfile.mkdtemp(prefix="ingest-bench-"))
    try:
        text, scan = text_document(text_pages), scanned_document(scan_pages)
        extraction = measure_extraction(text, workdir)
        ocr = measure_ocr(scan, workdir, pages=min(ocr_pages, scan_pages), settings=settings)
        embeddings = [measure_embedding(settings, threads=threads) for threads in (1, 2)]
        (workdir / "embedded").mkdir()
        with embedded_service(workdir / "embedded") as service:
            served = service.settings
            cold = service.ingest("first.pdf", text_pdf(["A first page, to start the service's parts."]))
            text_run = service.ingest("text.pdf", text)
            scan_run = service.ingest("scan.pdf", scan)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    reference = {} if quick else {text_run.name: REFERENCE_TEXT_S, scan_run.name: REFERENCE_SCAN_S}
    return Pipeline(
        extraction=extraction,
        ocr=ocr,
        embeddings=embeddings,
        cold=cold,
        text=text_run,
        scan=scan_run,
        reference_floor_s=reference,
        worker_threads=served.worker_threads,
        embed_threads=served.embed_threads,
    )


def step(what: str) -> None:
    print(f"bench: {what}...", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
