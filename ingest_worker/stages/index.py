"""The index stage's pure part: each chunk's deterministic point id, its payload in the vector store and
its lexical (sparse) vector."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from shared.artifacts import Chunk
from shared.sparse import SparseVector, document_vector

POINT_NAMESPACE = uuid.UUID("6f2b8a1e-4c1d-5e7a-9b3f-2d8c0e4a7b61")


@dataclass(frozen=True, kw_only=True)
class PointOrigin:
    """What every point of one job carries besides its chunk: whose it is and what made it."""

    tenant_id: str
    document_id: str
    job_id: str
    index_version: int
    embedding_model: str
    extractor_version: str | None
    chunker_version: str | None
    # The document's metadata as read at upsert time; kept under one payload key so that none of
    # its keys can overwrite the payload's own.
    metadata: dict[str, Any] = field(default_factory=dict)
    filename: str | None = None


def point_id(job_id: str, chunk_index: int) -> str:
    """Deterministic: a retry overwrites its own points; a new job writes beside the old ones."""
    return str(uuid.uuid5(POINT_NAMESPACE, f"{job_id}:{chunk_index}"))


def index_points(chunks: list[Chunk], origin: PointOrigin) -> tuple[list[str], list[dict[str, Any]]]:
    """The point ids and payloads of a job's chunks, in chunk order."""
    ids = [point_id(origin.job_id, c.index) for c in chunks]
    payloads = [
        {
            "tenant_id": origin.tenant_id,
            "document_id": origin.document_id,
            "filename": origin.filename,
            "job_id": origin.job_id,
            "chunk_index": c.index,
            "page_start": c.page_start,
            "page_end": c.page_end,
            "char_start": c.char_start,
            "char_end": c.char_end,
            "heading": c.heading,
            "sections": list(c.sections),
            "text": c.text,
            "index_version": origin.index_version,
            "embedding_model": origin.embedding_model,
            "extractor_version": origin.extractor_version,
            "chunker_version": origin.chunker_version,
            "metadata": dict(origin.metadata),
        }
        for c in chunks
    ]
    return ids, payloads


def sparse_vectors(chunks: list[Chunk]) -> list[SparseVector]:
    """Each chunk's BM25 term weights, in chunk order (its heading is part of its text)."""
    return [document_vector(c.text) for c in chunks]
