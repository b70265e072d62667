"""The I/O around each pure stage: read the inputs from storage, call the stage, store its output.

Every step reads what earlier stages stored (artifacts under `artifacts/<job id>/`), so a retry of
one stage never redoes the ones before it, and writing an artifact again is harmless. A reindex job
starts at a later stage: its skipped stages' rows point at the artifacts of the job it reindexes,
and a step reads its input from wherever the stage row says.
"""

from __future__ import annotations

import dataclasses
import io
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from ingest_worker import metadata
from ingest_worker.isolation import run_isolated
from ingest_worker.pipeline_errors import DocumentDeletedError, NoTextError
from ingest_worker.resources import Resources
from ingest_worker.retry_policy import backoff_ms
from ingest_worker.runner import StageResult, check_not_cancelled
from ingest_worker.stage_progress import StageProgress
from ingest_worker.stages.chunk import chunk_pages
from ingest_worker.stages.embed import embed_batches
from ingest_worker.stages.extract import extract_pages
from ingest_worker.stages.index import PointOrigin, index_points, sparse_vectors
from ingest_worker.stages.normalize import normalize_text
from ingest_worker.stages.validate import validate_pdf
from shared import metrics
from shared.artifacts import (
    artifact_key,
    chunks_from_json,
    chunks_to_json,
    pages_from_json,
    pages_to_json,
)
from shared.embedders import Embedder
from shared.errors import EmbeddingUnavailableError, PointCountMismatchError
from shared.job_events import JobSnapshot
from shared.models import Document, Job, JobStage, Tenant
from shared.pipeline import artifact_of
from shared.versions import CHUNKER_VERSION, EXTRACTOR_VERSION

# A failed embedding batch is tried again after a short pause; a provider asking for a longer one than
# this gets it from the stage's own retry policy instead of a sleeping worker thread.
BATCH_BACKOFF_MS = (200, 5000)


def _input(res: Resources, job: JobSnapshot, stage: str) -> bytes:
    """The artifact `stage` left for this job: its own, or the one a reindex job's row refers to."""
    with res.db.transaction() as session:
        row = session.get(JobStage, (job.id, stage))
        key = row.artifact_key if row is not None and row.artifact_key else _output_key(job, stage)
    return res.storage.get_bytes(key)


def _output_key(job: JobSnapshot, stage: str) -> str:
    """Where `stage` of this job stores the artifact the pipeline's declaration names."""
    return artifact_key(job.id, artifact_of(stage))


@contextmanager
def original(res: Resources, document_id: str) -> Iterator[str]:
    """The uploaded PDF as a local temporary file."""
    with res.db.transaction() as session:
        document = session.get(Document, document_id)
        assert document is not None
        key = document.object_key
    fd, path = tempfile.mkstemp(suffix=".pdf")
    os.close(fd)
    try:
        res.storage.download(key, path)
        yield path
    finally:
        os.unlink(path)


def _max_pages(res: Resources, job: JobSnapshot) -> int:
    with res.db.transaction() as session:
        tenant = session.get(Tenant, job.tenant_id)
        limit = tenant.max_pages if tenant is not None else None
    return limit or res.settings.max_pages


def validate(res: Resources, job: JobSnapshot) -> StageResult:
    with original(res, job.document_id) as path:
        # Parsing runs in a child process with its own time and memory limits (see isolation.py).
        report = run_isolated(
            validate_pdf,
            path,
            max_pages=_max_pages(res, job),
            timeout_s=res.settings.parse_timeout_s,
            memory_mb=res.settings.parse_memory_mb,
        )
    with res.db.transaction() as session:
        document = session.get(Document, job.document_id)
        if document is not None:
            document.page_count = report.page_count
    return StageResult(fields={"pages": report.page_count})


def extract(res: Resources, job: JobSnapshot) -> StageResult:
    with original(res, job.document_id) as path:
        pages = run_isolated(
            extract_pages,
            path,
            min_chars=res.settings.ocr_min_chars_per_page,
            timeout_s=res.settings.parse_timeout_s,
            memory_mb=res.settings.parse_memory_mb,
        )
    key = _output_key(job, "extract")
    res.storage.put_bytes(key, pages_to_json(pages))
    return StageResult(
        fields={"ocr_pages": sum(p.needs_ocr for p in pages), "extractor_version": EXTRACTOR_VERSION},
        artifact_key=key,
    )


def chunk(res: Resources, job: JobSnapshot) -> StageResult:
    pages = pages_from_json(_input(res, job, "ocr"))
    normalized = [dataclasses.replace(p, text=normalize_text(p.text)) for p in pages]
    embedder = res.embedder_for(job.embedding_model, job.embedding_dim)
    chunks = chunk_pages(
        normalized,
        max_tokens=min(res.settings.chunk_max_tokens, embedder.max_tokens),
        overlap_tokens=res.settings.chunk_overlap_tokens,
        count_tokens=embedder.count_tokens,
    )
    if not chunks:
        raise NoTextError()
    key = _output_key(job, "chunk")
    res.storage.put_bytes(key, chunks_to_json(chunks))
    return StageResult(fields={"chunks": len(chunks), "chunker_version": CHUNKER_VERSION}, artifact_key=key)


def embed(res: Resources, job: JobSnapshot) -> StageResult:
    chunks = chunks_from_json(_input(res, job, "chunk"))
    embedder = res.embedder_for(job.embedding_model, job.embedding_dim)
    # Filled batch by batch: a long document's vectors as Python floats would take eight times the
    # memory of this array, and the worker's peak would grow with the document.
    vectors = np.empty((len(chunks), embedder.dimension), dtype=np.float32)
    progress = StageProgress(res, job.id, "embed")
    progress.begin(len(chunks))
    for batch in embed_batches(chunks, batch_size=res.settings.embed_batch_size):
        check_not_cancelled(res, job.id)
        vectors[batch.start : batch.start + len(batch.texts)] = _embed_batch(
            embedder, batch.texts, attempts=res.settings.embed_batch_attempts
        )
        metrics.EMBEDDING_TOKENS.labels(res.settings.embedder).inc(batch.tokens)
        progress.add(len(batch.texts))
    buffer = io.BytesIO()
    np.save(buffer, vectors)
    key = _output_key(job, "embed")
    res.storage.put_bytes(key, buffer.getvalue())
    return StageResult(
        fields={"embedding_model": embedder.model_name, "embedding_dim": embedder.dimension},
        artifact_key=key,
    )


def _embed_batch(embedder: Embedder, texts: list[str], *, attempts: int) -> list[list[float]]:
    """One batch, tried up to `attempts` times while the provider is unavailable (429, 5xx, timeouts),
    so a long document does not need every batch to succeed in one go."""
    for attempt in range(max(1, attempts)):
        try:
            return embedder.embed(texts)
        except EmbeddingUnavailableError as exc:
            low, high = BATCH_BACKOFF_MS
            pause = backoff_ms(attempt, min_ms=low, max_ms=high, retry_after_s=exc.retry_after_s)
            if attempt + 1 >= attempts or pause > high:
                raise
            time.sleep(pause / 1000)
    raise AssertionError("unreachable")


def index(res: Resources, job: JobSnapshot) -> StageResult:
    chunks = chunks_from_json(_input(res, job, "chunk"))
    vectors = np.load(io.BytesIO(_input(res, job, "embed")))
    with res.db.transaction() as session:
        row = session.get(Job, job.id)
        assert row is not None and row.embedding_model is not None and row.embedding_dim is not None
        document = session.get(Document, job.document_id)
        origin = PointOrigin(
            tenant_id=job.tenant_id,
            document_id=job.document_id,
            job_id=job.id,
            index_version=row.index_version,
            embedding_model=row.embedding_model,
            extractor_version=row.extractor_version,
            chunker_version=row.chunker_version,
            # Read now, not at upload: a change made while the job ran is in its points.
            metadata=dict((document.user_metadata if document else None) or {}),
            filename=document.filename if document is not None else None,
        )
        dimension, version = row.embedding_dim, row.index_version
    store = res.vectors
    # A version begun before hybrid search stays whole in its dense-only collection.
    collection, hybrid = store.place(origin.embedding_model, dimension, job.tenant_id, version)
    if hybrid:
        store.ensure_collection(collection, dimension)
    ids, payloads = index_points(chunks, origin)
    store.upsert(collection, ids, vectors.tolist(), payloads, sparse_vectors(chunks) if hybrid else None)
    written = store.count(collection, job.tenant_id, job_id=job.id)
    if written != len(chunks):
        raise PointCountMismatchError()
    with res.db.transaction() as session:
        document = session.get(Document, job.document_id)
        deleted = document is None or document.deleted_at is not None
    if deleted:
        # The document was deleted while this job indexed it: its points must not outlive it.
        store.delete(collection, job.tenant_id, job_id=job.id)
        raise DocumentDeletedError()
    # Only now that this job's points are all written and counted may the older ones go: those of
    # its own index version only, so a reindex never touches the version searches read.
    store.delete(
        collection, job.tenant_id, keep_job_id=job.id, document_id=job.document_id, index_version=version
    )
    # A metadata change committed since the read above: its job may have written before these points
    # existed, so write the newest value again (ingest_worker/metadata.py).
    metadata.settle(res, job.tenant_id, job.document_id, [collection], origin.metadata)
    return StageResult(fields={"points": written})


def finalize(res: Resources, job: JobSnapshot) -> StageResult:
    with res.db.transaction() as session:
        row = session.get(Job, job.id)
        assert row is not None
        if row.points != row.chunks or row.chunks == 0:
            raise PointCountMismatchError()
    return StageResult()


def delete_job_points(res: Resources, job_id: str) -> None:
    """Remove a cancelled job's own points (and only its own)."""
    with res.db.transaction() as session:
        row = session.get(Job, job_id)
        if row is None or row.embedding_model is None or row.embedding_dim is None:
            return
        tenant_id, model, dimension = row.tenant_id, row.embedding_model, row.embedding_dim
    store = res.vectors
    store.delete(store.collection(model, dimension), tenant_id, job_id=job_id)
