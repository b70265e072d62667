"""The qdrant-client adapter: a Qdrant server (the production topology), or local mode in a folder.

Local mode (`QdrantClient(path=...)`) is a pure-Python scan, one process only and not thread-safe, so
every call holds a lock; it remains the embedded store's rollback (`INGEST_EMBEDDED_VECTOR_STORE=local`).
Server-only settings (payload indexes, `is_tenant`) are applied only with a URL.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from shared import sparse as lexical
from shared.errors import ConflictError, VectorStoreError, VectorStoreUnavailableError
from shared.search_filter import SearchFilter
from shared.vector_queries import DENSE, HYBRID_SUFFIX, MODES, SPARSE, mode_query
from shared.vectorstores.protocol import (
    UPSERT_BATCH,
    Hit,
    StoredPoint,
    collection_name,
    deletion_scope,
    hybrid_collection_name,
    scope,
)


class QdrantClientStore:
    """The service's view of Qdrant through qdrant-client."""

    def __init__(self, client: QdrantClient, *, prefix: str, server: bool) -> None:
        self.client = client
        self.prefix = prefix
        self.server = server
        self._lock = threading.RLock()
        self._known: set[str] = set()
        self._no_legacy: set[str] = set()  # dense-only collections absent (nothing makes them now)

    def check(self) -> None:
        self._call(self.client.get_collections)

    def collection(self, model: str, dimension: int) -> str:
        return hybrid_collection_name(self.prefix, model, dimension)

    def place(self, model: str, dimension: int, tenant_id: str, index_version: int) -> tuple[str, bool]:
        """The dense-only collection when it holds points of that version (written before hybrid
        search), else the hybrid one."""
        legacy = collection_name(self.prefix, model, dimension)
        if legacy not in self._no_legacy:
            if not self._call(self.client.collection_exists, legacy):
                self._no_legacy.add(legacy)
            elif self.count(legacy, tenant_id, index_version=index_version):
                return legacy, False
        return self.collection(model, dimension), True

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            with self._lock:
                return fn(*args, **kwargs)
        except UnexpectedResponse as exc:
            if exc.status_code is not None and (exc.status_code >= 500 or exc.status_code == 429):
                raise VectorStoreUnavailableError() from exc
            raise VectorStoreError() from exc
        except (ResponseHandlingException, ConnectionError, TimeoutError) as exc:
            raise VectorStoreUnavailableError() from exc

    def ensure_collection(self, name: str, dimension: int) -> None:
        if name in self._known:
            return
        if not self._call(self.client.collection_exists, name):
            try:
                self._call(
                    self.client.create_collection,
                    name,
                    vectors_config={
                        DENSE: models.VectorParams(size=dimension, distance=models.Distance.COSINE)
                    },
                    sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
                )
            except (VectorStoreError, ValueError):
                # Another process created it first.
                if not self._call(self.client.collection_exists, name):
                    raise
            if self.server:
                tenant = models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)
                keyword, integer = models.PayloadSchemaType.KEYWORD, models.PayloadSchemaType.INTEGER
                indexed = [("tenant_id", tenant), ("document_id", keyword), ("job_id", keyword)]
                indexed += [("filename", keyword), ("index_version", integer)]
                indexed += [("page_start", integer), ("page_end", integer)]
                for field, schema in indexed:
                    self._call(self.client.create_payload_index, name, field_name=field, field_schema=schema)
        self._known.add(name)

    def upsert(
        self,
        name: str,
        ids: Sequence[str],
        vectors: Sequence[Sequence[float]],
        payloads: Sequence[dict[str, Any]],
        sparse: Sequence[lexical.SparseVector] | None = None,
    ) -> None:
        for start in range(0, len(ids), UPSERT_BATCH):
            end = start + UPSERT_BATCH
            batch = zip(ids[start:end], vectors[start:end], payloads[start:end], strict=True)
            if sparse is None:
                points = [models.PointStruct(id=i, vector=list(v), payload=p) for i, v, p in batch]
            else:
                points = [
                    models.PointStruct(
                        id=i,
                        vector={
                            DENSE: list(v),
                            SPARSE: models.SparseVector(indices=s.indices, values=s.values),
                        },
                        payload=p,
                    )
                    for (i, v, p), s in zip(batch, sparse[start:end], strict=True)
                ]
            self._call(self.client.upsert, name, points=points, wait=True)

    def count(self, name: str, tenant_id: str, **fields: str | int) -> int:
        if not self._call(self.client.collection_exists, name):
            return 0
        found = scope(tenant_id, must=list(fields.items()))
        return int(self._call(self.client.count, name, count_filter=found, exact=True).count)

    def delete(
        self,
        name: str,
        tenant_id: str,
        *,
        keep_job_id: str | None = None,
        keep_versions: Sequence[int] = (),
        **fields: str | int,
    ) -> None:
        selector = models.FilterSelector(filter=deletion_scope(tenant_id, keep_job_id, keep_versions, fields))
        for collection in self._with_sibling(name):
            self._call(self.client.delete, collection, points_selector=selector, wait=True)

    def _with_sibling(self, name: str) -> list[str]:
        """The collection and, for a hybrid one, its dense-only sibling, those of them that exist."""
        names = dict.fromkeys((name, name.removesuffix(HYBRID_SUFFIX)))
        return [n for n in names if self._call(self.client.collection_exists, n)]

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
        """`dense` ranks by cosine, `keyword` by BM25 (`sparse` weights, IDF over the tenant's points of
        that version), `hybrid` fuses both rankings by reciprocal rank. `min_score` is a cosine for
        dense, a BM25 score for keyword, and for hybrid the cosine every fused hit must reach."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        if not self._call(self.client.collection_exists, name):
            return []
        hybrid = name.endswith(HYBRID_SUFFIX)
        if mode != "dense" and not hybrid:
            raise ConflictError(
                "This index version has no keyword index; reindex from the index stage.",
                code="keyword_index_missing",
            )
        found = scope(tenant_id, must=[("index_version", index_version)], narrow=narrow)
        # IDF counted over the tenant's own points of this version, not the whole collection.
        corpus = scope(tenant_id, must=[("index_version", index_version)])
        query = mode_query(
            mode, hybrid=hybrid, dense=dense, sparse=sparse, corpus=corpus, top_k=top_k, min_score=min_score
        )
        result = self._call(
            self.client.query_points, name, query_filter=found, limit=top_k, with_payload=True, **query
        )
        return [Hit(score=float(p.score), payload=dict(p.payload or {})) for p in result.points]

    def set_document_metadata(
        self, name: str, tenant_id: str, document_id: str, metadata: dict[str, Any]
    ) -> None:
        """Every job's, every index version's points, its dense-only sibling's too; vectors and other
        keys stay as they are."""
        selector = models.FilterSelector(filter=scope(tenant_id, must=[("document_id", document_id)]))
        for collection in self._with_sibling(name):
            self._call(
                self.client.set_payload,
                collection,
                payload={"metadata": metadata},
                points=selector,
                wait=True,
            )

    def collections(self) -> list[str]:
        return sorted(c.name for c in self._call(self.client.get_collections).collections)

    def open_collections(self) -> list[str]:
        # Local mode loads every collection when its client is built; a server's answer opens the
        # connection a first request would otherwise open.
        return self.collections()

    def records(
        self, name: str, *, tenant_id: str | None = None, with_vectors: bool = False, batch: int = 256
    ) -> Iterator[StoredPoint]:
        if not self._call(self.client.collection_exists, name):
            return
        found = scope(tenant_id) if tenant_id is not None else None
        offset = None
        while True:
            points, offset = self._call(
                self.client.scroll,
                name,
                scroll_filter=found,
                limit=batch,
                offset=offset,
                with_payload=True,
                with_vectors=with_vectors,
            )
            for p in points:
                yield StoredPoint(
                    str(p.id), dict(p.payload or {}), stored_vectors(p.vector) if with_vectors else None
                )
            if offset is None:
                return

    def close(self) -> None:
        with self._lock:
            self.client.close()


def stored_vectors(vector: Any) -> dict[str, list[float] | lexical.SparseVector]:
    """A record's vectors by name, the unnamed one under `""`."""
    if not isinstance(vector, dict):
        return {"": list(vector)}
    return {
        k: lexical.SparseVector(list(v.indices), list(v.values))
        if isinstance(v, models.SparseVector)
        else list(v)
        for k, v in vector.items()
    }
