"""Reading pages with OCR in child processes, and the artifacts that hold the text read."""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from ingest_worker.isolation import run_isolated
from ingest_worker.resources import Resources
from ingest_worker.stages.models import PageText
from ingest_worker.stages.ocr import ocr_pages
from shared import metrics

# Pages per OCR child call: small enough that a cancel is seen soon and that two children share a
# scan's pages evenly, large enough that the per-call cost (a few ms) stays negligible.
OCR_PAGES_PER_CALL = 4


def read_pages(res: Resources, path: str, wanted: list[int], *, check: Callable[[], None]) -> dict[int, str]:
    """OCR `wanted` pages of the PDF at `path`, a few pages per child process, `ocr_parallelism`
    children at once (tesseract uses one core each), calling `check` (which raises to stop) before
    each group of pages."""
    settings = res.settings
    groups = [wanted[i : i + OCR_PAGES_PER_CALL] for i in range(0, len(wanted), OCR_PAGES_PER_CALL)]
    texts: dict[int, str] = {}

    def read(group: list[int]) -> dict[int, str]:
        check()
        # Opening and rendering get the parse budget; each page adds tesseract's own.
        return run_isolated(
            partial(
                ocr_pages,
                path,
                group,
                dpi=settings.ocr_dpi,
                languages=settings.ocr_languages,
                timeout_s=settings.ocr_timeout_s,
            ),
            timeout_s=settings.parse_timeout_s + settings.ocr_timeout_s * len(group),
            memory_mb=settings.parse_memory_mb,
        )

    with ThreadPoolExecutor(max(1, settings.ocr_parallelism)) as pool:
        for result in pool.map(read, groups):
            texts.update(result)
    metrics.OCR_PAGES.inc(len(texts))
    return texts


def with_ocr_text(pages: list[PageText], texts: dict[int, str]) -> list[PageText]:
    """The pages, those read by OCR carrying their OCR text."""
    return [
        PageText(number=p.number, text=texts[p.number], needs_ocr=False, source="ocr")
        if p.number in texts
        else p
        for p in pages
    ]


def texts_to_json(texts: dict[int, str]) -> bytes:
    return json.dumps({str(number): text for number, text in sorted(texts.items())}).encode()


def texts_from_json(data: bytes) -> dict[int, str]:
    return {int(number): str(text) for number, text in json.loads(data).items()}
