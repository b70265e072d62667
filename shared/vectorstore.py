"""Qdrant adapter: collections per (model, dimension), tenant-filtered everything, deterministic ids.

Every search, count and delete goes through `_scope`, which always carries the tenant filter; a
search also always names the index version it reads (a tenant's active one), so a reindex writing
its new version beside the active one never shows in, or mixes into, an answer.
A hybrid collection (`..._hybrid`) holds named vectors `dense` and `sparse` (BM25, IDF by Qdrant); older
collections one unnamed dense vector. A tenant's index version lives wholly in one of the two (`place`),
so an older version answers dense queries until a reindex writes the next into the hybrid collection.
Local mode (`QdrantClient(path=...)`) is one process only and not thread-safe, so every call
holds a lock. Server-only settings (payload index, `is_tenant`) are applied only with a URL.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from shared import sparse as lexical
from shared.errors import ConflictError, VectorStoreError, VectorStoreUnavailableError
from shared.search_filter import SearchFilter
from shared.settings import Settings
from shared.vector_queries import DENSE, HYBRID_SUFFIX, MODES, SPARSE, mode_query

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


class VectorStore:
    """The service's view of Qdrant."""

    def __init__(self, client: QdrantClient, *, prefix: str, server: bool) -> None:
        self.client = client
        self.prefix = prefix
        self.server = server
        self._lock = threading.RLock()
        self._known: set[str] = set()
        self._no_legacy: set[str] = set()  # dense-only collections absent (nothing makes them now)

    @classmethod
    def from_settings(cls, settings: Settings) -> VectorStore:
        if settings.qdrant_url:
            client = QdrantClient(
                url=settings.qdrant_url, api_key=settings.qdrant_api_key or None, timeout=30
            )
            return cls(client, prefix=settings.qdrant_collection_prefix, server=True)
        client = QdrantClient(path=settings.effective_qdrant_path)
        return cls(client, prefix=settings.qdrant_collection_prefix, server=False)

    def check(self) -> None:
        """Raise `VectorStoreUnavailableError` when Qdrant does not answer (readiness)."""
        self._call(self.client.get_collections)

    def collection(self, model: str, dimension: int) -> str:
        """The hybrid collection of (model, dimension), where new index versions are written."""
        return hybrid_collection_name(self.prefix, model, dimension)

    def place(self, model: str, dimension: int, tenant_id: str, index_version: int) -> tuple[str, bool]:
        """The collection holding the tenant's `index_version`, and whether it is hybrid: the dense-only
        one when it holds points of that version (written before hybrid search), else the hybrid one."""
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
        """Write points and wait until Qdrant acknowledges them: into a hybrid collection with their
        `sparse` vectors, into a dense-only one (`sparse=None`) with the dense vector alone."""
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

    @staticmethod
    def _scope(
        tenant_id: str,
        *,
        must: Sequence[tuple[str, str | int]] = (),
        must_not: Sequence[tuple[str, str | int]] = (),
        narrow: SearchFilter | None = None,
    ) -> Any:
        """The tenant's points matching `must`, none of `must_not`, and every condition of `narrow`
        (ANDed beside the tenant condition, so it can only narrow)."""

        def match(key: str, value: str | int) -> models.FieldCondition:
            return models.FieldCondition(key=key, match=models.MatchValue(value=value))

        extra = narrow.conditions() if narrow is not None else []
        return models.Filter(
            must=[match("tenant_id", tenant_id), *(match(k, v) for k, v in must), *extra],
            must_not=[match(k, v) for k, v in must_not] or None,
        )

    def count(self, name: str, tenant_id: str, **fields: str | int) -> int:
        if not self._call(self.client.collection_exists, name):
            return 0
        result = self._call(
            self.client.count,
            name,
            count_filter=self._scope(tenant_id, must=list(fields.items())),
            exact=True,
        )
        return int(result.count)

    def delete(
        self,
        name: str,
        tenant_id: str,
        *,
        keep_job_id: str | None = None,
        keep_versions: Sequence[int] = (),
        **fields: str | int,
    ) -> None:
        """Delete the tenant's points matching `fields`, except those of `keep_job_id` and those of
        the index versions `keep_versions`."""
        if not fields and not keep_versions:
            raise ValueError("refusing to delete every point of a tenant without a field to match")
        must_not: list[tuple[str, str | int]] = [("job_id", keep_job_id)] if keep_job_id else []
        must_not.extend(("index_version", version) for version in keep_versions)
        selector = models.FilterSelector(
            filter=self._scope(tenant_id, must=list(fields.items()), must_not=must_not)
        )
        for collection in self._with_sibling(name):
            self._call(self.client.delete, collection, points_selector=selector, wait=True)

    def _with_sibling(self, name: str) -> list[str]:
        """The collection and, for a hybrid one, its dense-only sibling (where a tenant's versions
        begun before hybrid search still sit), those of them that exist."""
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
        """The tenant's points of `index_version` that best answer the query, best first.

        `dense` ranks by cosine, `keyword` by BM25 (`sparse` weights, IDF over the tenant's points of
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
        scope = self._scope(tenant_id, must=[("index_version", index_version)], narrow=narrow)
        # IDF counted over the tenant's own points of this version, not the whole collection.
        corpus = self._scope(tenant_id, must=[("index_version", index_version)])
        query = mode_query(
            mode, hybrid=hybrid, dense=dense, sparse=sparse, corpus=corpus, top_k=top_k, min_score=min_score
        )
        result = self._call(
            self.client.query_points, name, query_filter=scope, limit=top_k, with_payload=True, **query
        )
        return [Hit(score=float(p.score), payload=dict(p.payload or {})) for p in result.points]

    def close(self) -> None:
        with self._lock:
            self.client.close()

    def set_document_metadata(
        self, name: str, tenant_id: str, document_id: str, metadata: dict[str, Any]
    ) -> None:
        """Replace the `metadata` payload key of the tenant's points of the document (every job's,
        every index version's, its dense-only sibling's too) with `metadata`, leaving their vectors and
        other keys as they are."""
        selector = models.FilterSelector(filter=self._scope(tenant_id, must=[("document_id", document_id)]))
        for collection in self._with_sibling(name):
            self._call(
                self.client.set_payload,
                collection,
                payload={"metadata": metadata},
                points=selector,
                wait=True,
            )
