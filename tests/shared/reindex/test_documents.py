"""Where a job reindexing a document starts (shared/reindex/documents.py `start_stage`): the reindex's
first stage when the stored work can be reused, else earlier, and it says why."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.orm import Session

from shared import operations
from shared.db import Database
from shared.models import Document, Job, JobStage, Reindex, StageStatus
from shared.reindex.documents import REQUESTED, Start, start_stage
from shared.settings import Settings
from shared.tenants import create_tenant
from shared.versions import CHUNKER_VERSION, EXTRACTOR_VERSION
from tests.support.databases import migrate_database

MODEL, DIMENSION = "all-MiniLM-L6-v2", 384


@pytest.fixture
def session(settings: Settings) -> Iterator[Session]:
    migrate_database(settings.effective_database_url)
    db = Database(settings.effective_database_url)
    try:
        with db.transaction() as session:
            yield session
    finally:
        db.dispose()


def source_job(session: Session, stored: tuple[str, ...], **fields: object) -> Job:
    """A completed ingest job whose `stored` stages are done with their artifacts."""
    tenant, _ = create_tenant(session, "acme")
    document = Document(tenant_id=tenant.id, filename="a.pdf", sha256="a" * 64, size_bytes=1, object_key="k")
    session.add(document)
    session.flush()
    job = operations.create_job(session, tenant_id=tenant.id, document_id=document.id)
    values = {
        "extractor_version": EXTRACTOR_VERSION,
        "chunker_version": CHUNKER_VERSION,
        "embedding_model": MODEL,
        "embedding_dim": DIMENSION,
        **fields,
    }
    for name, value in values.items():
        setattr(job, name, value)
    for stage in stored:
        session.add(
            JobStage(job_id=job.id, stage=stage, status=StageStatus.DONE.value, artifact_key=f"a/{stage}")
        )
    session.flush()
    return job


def reindex(from_stage: str, model: str = MODEL, dimension: int = DIMENSION) -> Reindex:
    return Reindex(from_stage=from_stage, embedding_model=model, embedding_dim=dimension)


ALL = ("extract", "ocr", "chunk", "embed")


@pytest.mark.parametrize(
    ("from_stage", "stored", "fields", "model", "expected"),
    [
        ("chunk", ALL, {}, MODEL, Start("chunk", REQUESTED)),
        # The OCR stage's pages are what the chunk stage reads; the extract artifact is not needed
        ("chunk", ("ocr", "chunk", "embed"), {}, MODEL, Start("chunk", REQUESTED)),
        (
            "chunk",
            ("extract", "chunk", "embed"),
            {},
            MODEL,
            Start("extract", "no stored ocr artifact", ("ocr",)),
        ),
        ("index", ALL, {}, "another-model", Start("embed", "vectors from another model")),
        (
            "index",
            ("extract", "ocr"),
            {},
            MODEL,
            Start("extract", "no stored chunk, embed artifact", ("chunk", "embed")),
        ),
        ("embed", ALL, {"chunker_version": -1}, MODEL, Start("chunk", "chunks from an older chunker")),
        ("index", ALL, {"extractor_version": -1}, MODEL, Start("extract", "pages from an older extractor")),
    ],
)
def test_a_reindex_job_starts_where_the_stored_work_allows_and_says_why(
    session: Session,
    from_stage: str,
    stored: tuple[str, ...],
    fields: dict[str, object],
    model: str,
    expected: Start,
) -> None:
    source = source_job(session, stored, **fields)
    assert start_stage(session, reindex(from_stage, model), source) == expected


def test_a_document_without_an_earlier_job_is_extracted(session: Session) -> None:
    assert start_stage(session, reindex("embed"), None) == Start("extract", "no earlier job to reuse")
