"""Reading pages with OCR in child processes, and the artifacts that hold what was read."""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from sqlalchemy.orm import Session

from ingest_worker.isolation import run_isolated
from ingest_worker.resources import Resources
from ingest_worker.stage_progress import StageProgress
from ingest_worker.stages.ocr import read_pages as ocr_read_pages
from ingest_worker.stages.ocr_confidence import ConfidenceRule, PageReading
from shared import metrics
from shared.artifacts import PageText
from shared.models import Document
from shared.settings import Settings

# Pages per OCR child call: small enough that a cancel is seen soon and that two children share a
# scan's pages evenly, large enough that the per-call cost (a few ms) stays negligible.
OCR_PAGES_PER_CALL = 4


def confidence_rule(settings: Settings) -> ConfidenceRule:
    """The thresholds OCR output must meet, from the settings."""
    return ConfidenceRule(
        min_word_confidence_pct=settings.ocr_min_word_confidence_pct,
        min_line_confident_pct=settings.ocr_min_line_confident_pct,
        min_line_chars=settings.ocr_min_line_chars,
        min_page_words=settings.ocr_min_page_words,
    )


def document_languages(session: Session, document_id: str, settings: Settings) -> str:
    """The languages the document is read in: those fixed at its upload, else the service's."""
    document = session.get(Document, document_id)
    languages = document.ocr_languages if document is not None else None
    return languages or settings.ocr_languages


def read_pages(
    res: Resources,
    path: str,
    wanted: list[int],
    *,
    languages: str,
    check: Callable[[], None],
    progress: StageProgress | None = None,
) -> dict[int, PageReading]:
    """OCR `wanted` pages of the PDF at `path` in `languages`, a few pages per child process,
    `ocr_parallelism` children at once (tesseract uses one core each), calling `check` (which raises to
    stop) before each group of pages and counting each group's pages in `progress`."""
    settings = res.settings
    groups = [wanted[i : i + OCR_PAGES_PER_CALL] for i in range(0, len(wanted), OCR_PAGES_PER_CALL)]
    readings: dict[int, PageReading] = {}
    rule = confidence_rule(settings)

    def read(group: list[int]) -> dict[int, PageReading]:
        check()
        # Opening and rendering get the parse budget; each page adds tesseract's own.
        return run_isolated(
            partial(
                ocr_read_pages,
                path,
                group,
                dpi=settings.ocr_dpi,
                languages=languages,
                timeout_s=settings.ocr_timeout_s,
                rule=rule,
            ),
            timeout_s=settings.parse_timeout_s + settings.ocr_timeout_s * len(group),
            memory_mb=settings.parse_memory_mb,
        )

    with ThreadPoolExecutor(max(1, settings.ocr_parallelism)) as pool:
        for result in pool.map(read, groups):
            readings.update(result)
            if progress is not None:
                progress.add(len(result))
    metrics.OCR_PAGES.inc(len(readings))
    return readings


def with_ocr_text(pages: list[PageText], readings: dict[int, PageReading]) -> list[PageText]:
    """The pages, those read by OCR carrying their OCR text ("" for a page of pictures)."""
    return [
        PageText(number=p.number, text=readings[p.number].text, needs_ocr=False, source="ocr")
        if p.number in readings
        else p
        for p in pages
    ]


def dropped_pages(readings: dict[int, PageReading]) -> int:
    """How many pages OCR read only low-confidence words on (the job's `ocr_pages_dropped`)."""
    return sum(reading.low_confidence for reading in readings.values())


def readings_to_json(readings: dict[int, PageReading]) -> bytes:
    return json.dumps(
        {
            str(number): {"text": r.text, "words_read": r.words_read, "words_kept": r.words_kept}
            for number, r in sorted(readings.items())
        }
    ).encode()


def readings_from_json(data: bytes) -> dict[int, PageReading]:
    readings = {}
    for number, item in json.loads(data).items():
        if isinstance(item, str):
            # A range artifact written before confidences were read: the text alone.
            readings[int(number)] = PageReading(item, words_read=0, words_kept=0)
        else:
            readings[int(number)] = PageReading(
                str(item["text"]), words_read=int(item["words_read"]), words_kept=int(item["words_kept"])
            )
    return readings
