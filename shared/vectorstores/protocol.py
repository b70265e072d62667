"""What every vector store adapter offers, and the tenant scope both build their filters from.

A store keeps one collection per (model, dimension): the hybrid one (`..._hybrid`, named vectors `dense`
and `sparse`) where new index versions are written, and, from before hybrid search, a dense-only one
(one unnamed vector). Every search, count and delete is scoped by `scope`, which always carries the
tenant condition; a search also names the index version it reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from qdrant_client import models

from shared import sparse as lexical
from shared.search_filter import SearchFilter
from shared.vector_queries import HYBRID_SUFFIX

UPSERT_BATCH = 256


def collection_name(prefix: str, model: str, dimension: int) -> str:
    """The dense-only collection of (model, dimension), as made before hybrid search."""
    slug = re.sub(r"[^a-z0-9]+", "_", model.lower()).strip("_")
    return f"{prefix}_{slug}_{dimension}"


def hybrid_collection_name(prefix: str, model: str, dimension: int) -> str:
    return collection_name(prefix, model, dimension) + HYBRID_SUFFIX


@dataclass(frozen=True)
class Hit:
    score: float
    payload: dict[str, Any]


@dataclass(frozen=True)
class StoredPoint:
    """A point as stored: its id as text, payload, and (when asked for) its vectors by name
    (`""` for the unnamed vector of a dense-only collection; a sparse one as a `SparseVector`)."""

    id: str
    payload: dict[str, Any]
    vectors: dict[str, list[float] | lexical.SparseVector] | None = None


def scope(
    tenant_id: str,
    *,
    must: Sequence[tuple[str, str | int]] = (),
    must_not: Sequence[tuple[str, str | int]] = (),
    narrow: SearchFilter | None = None,
) -> models.Filter:
    """The tenant's points matching `must`, none of `must_not`, and every condition of `narrow`
    (ANDed beside the tenant condition, so it can only narrow)."""

    def match(key: str, value: str | int) -> models.FieldCondition:
        return models.FieldCondition(key=key, match=models.MatchValue(value=value))

    extra = narrow.conditions() if narrow is not None else []
    return models.Filter(
        must=[match("tenant_id", tenant_id), *(match(k, v) for k, v in must), *extra],
        must_not=[match(k, v) for k, v in must_not] or None,
    )


def deletion_scope(
    tenant_id: str, keep_job_id: str | None, keep_versions: Sequence[int], fields: dict[str, str | int]
) -> models.Filter:
    """The tenant's points matching `fields`, except those of `keep_job_id` and of `keep_versions`."""
    if not fields and not keep_versions:
        raise ValueError("refusing to delete every point of a tenant without a field to match")
    must_not: list[tuple[str, str | int]] = [("job_id", keep_job_id)] if keep_job_id else []
    must_not.extend(("index_version", version) for version in keep_versions)
    return scope(tenant_id, must=list(fields.items()), must_not=must_not)


@runtime_checkable
class VectorStore(Protocol):
    """The service's view of its vector store (qdrant-client against a server or in local mode, or the
    Qdrant engine in-process); `tests/shared/vectorstores/test_vectorstore_contract.py` holds every
    adapter to it."""

    prefix: str

    def check(self) -> None:
        """Raise `VectorStoreUnavailableError` when the store does not answer (readiness)."""

    def collection(self, model: str, dimension: int) -> str:
        """The hybrid collection of (model, dimension), where new index versions are written."""

    def place(self, model: str, dimension: int, tenant_id: str, index_version: int) -> tuple[str, bool]:
        """The collection holding the tenant's `index_version`, and whether it is hybrid."""

    def ensure_collection(self, name: str, dimension: int) -> None:
        """Create the hybrid collection `name` unless it exists."""

    def upsert(
        self,
        name: str,
        ids: Sequence[str],
        vectors: Sequence[Sequence[float]],
        payloads: Sequence[dict[str, Any]],
        sparse: Sequence[lexical.SparseVector] | None = None,
    ) -> None:
        """Write points (with `sparse` vectors into a hybrid collection) and return once acknowledged."""

    def count(self, name: str, tenant_id: str, **fields: str | int) -> int:
        """The tenant's points in `name` matching `fields`."""

    def delete(
        self,
        name: str,
        tenant_id: str,
        *,
        keep_job_id: str | None = None,
        keep_versions: Sequence[int] = (),
        **fields: str | int,
    ) -> None:
        """Delete the tenant's points matching `fields` (in `name` and its dense-only sibling), except
        those of `keep_job_id` and of the index versions `keep_versions`."""

    def search(
        self,
        name: str,
        tenant_id: str,
        *,
        index_version: int,
        top_k: int,
        mode: str = "dense",
        dense: Sequence[float] | None = None,
        sparse: lexical.SparseVector | None = None,
        narrow: SearchFilter | None = None,
        min_score: float | None = None,
    ) -> list[Hit]:
        """The tenant's points of `index_version` that best answer the query, best first."""

    def set_document_metadata(
        self, name: str, tenant_id: str, document_id: str, metadata: dict[str, Any]
    ) -> None:
        """Replace the `metadata` payload key of the tenant's points of the document."""

    def collections(self) -> list[str]:
        """The names of the collections the store holds."""

    def open_collections(self) -> list[str]:
        """Open every collection now, so that a first use finds it open: their names."""

    def records(
        self, name: str, *, tenant_id: str | None = None, with_vectors: bool = False, batch: int = 256
    ) -> Iterator[StoredPoint]:
        """Every point of `name` (of `tenant_id` when given), in id order: for tests and migration."""

    def close(self) -> None:
        """Release the store (and its folder)."""
