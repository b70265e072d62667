"""OCR accuracy and honesty end to end: scans in English, German and French uploaded through the API with
their `ocr_languages`, read by the embedded pipeline in this process; pages of pictures index nothing.

CER is the Levenshtein distance over the reference length, on NFC text with whitespace collapsed and case
kept. The thresholds are the service's defaults (Settings), the same for every test here.
"""

from __future__ import annotations

import io
import time
import unicodedata
from collections.abc import Iterator
from typing import Any

import pytesseract
import pytest
from flask import Flask

from ingest_worker.resources import Resources
from shared.artifacts import PageText, chunks_from_json, pages_from_json
from shared.models import JobStage
from shared.settings import Settings
from shared.tenants import create_tenant
from tests.support import scans
from tests.support.inprocess import in_process_service
from tests.support.ocr_texts import TEXTS
from tests.support.text_metrics import character_error_rate

pytestmark = [pytest.mark.slow, pytest.mark.ocr]

MAX_CER = {"eng": 0.03, "deu": 0.05, "fra": 0.05}
MAX_CAPTION_CER = 0.05
TERMINAL = {"completed", "failed", "dead_lettered", "cancelled"}
CAPTION = (
    "Figure 3. The old mill seen from the river bank in the spring of 1924, before the fire destroyed it."
)
# The pages of each language's scan: straight, tilted by 3 degrees, and fed sideways.
LAYOUTS: dict[str, tuple[float, int]] = {
    "straight": (0.0, 0),
    "skewed 3 degrees": (3.0, 0),
    "turned 90": (0.0, 90),
}


@pytest.fixture
def service(settings: Settings) -> Iterator[tuple[Flask, Resources]]:
    with in_process_service(settings.replace(ocr_parallelism=1)) as running:
        yield running.app, running.resources


def cer(reference: str, text: str) -> float:
    return character_error_rate(unicodedata.normalize("NFC", reference), unicodedata.normalize("NFC", text))


def ingest(app: Flask, key: str, pdf: bytes, **form: str) -> dict[str, Any]:
    client = app.test_client()
    headers = {"Authorization": f"Bearer {key}"}
    answer = client.post(
        "/v1/documents", headers=headers, data={"file": (io.BytesIO(pdf), "scan.pdf"), **form}
    )
    assert answer.status_code == 202, answer.get_json()
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        job = client.get(answer.headers["Location"], headers=headers).get_json()
        if job["status"] in TERMINAL:
            return job  # type: ignore[no-any-return]
        time.sleep(0.2)
    raise AssertionError(f"job not finished: {job}")


def final_pages(resources: Resources, job_id: str) -> list[PageText]:
    with resources.db.transaction() as session:
        row = session.get(JobStage, (job_id, "ocr"))
        assert row is not None and row.artifact_key
        key = row.artifact_key
    return pages_from_json(resources.storage.get_bytes(key))


def chunk_ranges(resources: Resources, job_id: str) -> list[tuple[int, int]]:
    """The page range of each chunk the job indexed."""
    with resources.db.transaction() as session:
        row = session.get(JobStage, (job_id, "chunk"))
        assert row is not None and row.artifact_key
        key = row.artifact_key
    return [(c.page_start, c.page_end) for c in chunks_from_json(resources.storage.get_bytes(key))]


def new_key(resources: Resources) -> str:
    with resources.db.transaction() as session:
        return create_tenant(session, "acme")[1]


def test_every_language_offered_has_its_tesseract_pack() -> None:
    # A missing pack must fail here, not skip: the accuracy below would be measured with the wrong model.
    installed = set(pytesseract.get_languages(config=""))
    assert set(TEXTS) | {"osd"} <= installed, f"missing tesseract packs: {set(TEXTS) - installed}"
    assert set(Settings().ocr_available_languages.split(",")) <= installed


@pytest.mark.parametrize("language", list(TEXTS))
def test_a_scan_uploaded_with_its_language_is_read_within_the_target(
    service: tuple[Flask, Resources], language: str
) -> None:
    app, resources = service
    assert language in set(pytesseract.get_languages(config="")), f"tesseract lacks {language}"
    text = TEXTS[language]
    assert len(text) >= 2000
    # Given a 300 dpi scan of known text in the language (noise, blur, grey paper), one page straight,
    # one tilted by 3 degrees and one fed sideways
    pdf = scans.concatenate(
        [
            scans.scan_pdf(scans.page_image(text, skew_degrees=skew, seed=n), content_turn=turn)
            for n, (skew, turn) in enumerate(LAYOUTS.values())
        ]
    )

    # When uploaded with ocr_languages naming the language
    key = new_key(resources)
    job = ingest(app, key, pdf, ocr_languages=language)

    # Then the job completes, every page read by OCR, none dropped
    assert job["status"] == "completed", job
    assert job["counters"]["ocr_pages"] == 3 and job["counters"]["ocr_pages_dropped"] == 0
    # And each page's text is within the language's target
    pages = final_pages(resources, job["job_id"])
    rates = {name: cer(text, page.text) for name, page in zip(LAYOUTS, pages, strict=True)}
    print(f"OCR {language}: " + ", ".join(f"{name} CER {rate:.2%}" for name, rate in rates.items()))
    for rate in rates.values():
        assert rate <= MAX_CER[language]
    # And the document shows the language it was read in
    shown = app.test_client().get(
        f"/v1/documents/{job['document_id']}", headers={"Authorization": f"Bearer {key}"}
    )
    assert shown.status_code == 200 and shown.get_json()["ocr_languages"] == language


def test_a_document_of_pictures_only_fails_no_text(service: tuple[Flask, Resources]) -> None:
    app, resources = service
    # Given a scanned document of pictures without text: shapes, a photograph-like field, a printed
    # halftone, a technical drawing and two letter-sized textures (what tesseract takes for letters)
    kinds = ["shapes", "clouds", "halftone", "drawing", "texture", "texture"]
    pdf = scans.concatenate(
        [scans.scan_pdf(scans.picture_page_image(kind, seed=n)) for n, kind in enumerate(kinds)]  # type: ignore[arg-type]
    )

    # When uploaded
    job = ingest(app, new_key(resources), pdf, ocr_languages="eng")

    # Then no page yields text, the job fails no_text, and the pages tesseract read only doubtful
    # words on are counted as dropped (at least the two textures; a blank-looking page reads no words)
    assert job["status"] == "failed" and job["error"]["code"] == "no_text", job
    assert all(page.text == "" for page in final_pages(resources, job["job_id"]))
    assert 2 <= job["counters"]["ocr_pages_dropped"] <= len(kinds)


def test_a_picture_page_indexes_nothing_and_a_caption_is_kept(service: tuple[Flask, Resources]) -> None:
    app, resources = service
    # Given a document: a page of text, a texture photographed on its own, and a photograph with a caption
    pdf = scans.concatenate(
        [
            scans.scan_pdf(scans.page_image(TEXTS["eng"])),
            scans.scan_pdf(scans.picture_page_image("texture", seed=4)),
            scans.scan_pdf(scans.picture_page_image("texture", caption=CAPTION, seed=5)),
        ]
    )

    # When uploaded
    job = ingest(app, new_key(resources), pdf, ocr_languages="eng")

    # Then it completes; the picture page yields no text, so no chunk of its own (a chunk running from
    # page 1 to page 3 holds nothing of it), and is counted as dropped
    assert job["status"] == "completed", job
    assert job["counters"]["ocr_pages_dropped"] == 1
    pages = final_pages(resources, job["job_id"])
    assert pages[1].text == ""
    assert (2, 2) not in chunk_ranges(resources, job["job_id"])
    # And the caption under the photograph is kept, within 5%
    caption_cer = cer(CAPTION, pages[2].text)
    print(f"OCR caption under a photograph: CER {caption_cer:.2%}")
    assert caption_cer <= MAX_CAPTION_CER
    assert cer(TEXTS["eng"], pages[0].text) <= MAX_CER["eng"]
