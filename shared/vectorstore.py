"""Qdrant adapter: collections per (model, dimension), tenant-filtered everything, deterministic ids.

Every search, count and delete goes through `_scope`, which always carries the tenant filter; a
search also always names the index version it reads (a tenant's active one), so a reindex writing
its new version beside the active one never shows in, or mixes into, an answer.
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

from shared.errors import VectorStoreError, VectorStoreUnavailableError
from shared.settings import Settings

UPSERT_BATCH = 256


def collection_name(prefix: str, model: str, dimension: int) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", model.lower()).strip("_")
    return f"{prefix}_{slug}_{dimension}"


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
        return collection_name(self.prefix, model, dimension)

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
                    vectors_config=models.VectorParams(size=dimension, distance=models.Distance.COSINE),
                )
            except (VectorStoreError, ValueError):
                # Another process created it first.
                if not self._call(self.client.collection_exists, name):
                    raise
            if self.server:
                self._call(
                    self.client.create_payload_index,
                    name,
                    field_name="tenant_id",
                    field_schema=models.KeywordIndexParams(
                        type=models.KeywordIndexType.KEYWORD, is_tenant=True
                    ),
                )
                for field in ("document_id", "job_id"):
                    self._call(
                        self.client.create_payload_index,
                        name,
                        field_name=field,
                        field_schema=models.PayloadSchemaType.KEYWORD,
                    )
                self._call(
                    self.client.create_payload_index,
                    name,
                    field_name="index_version",
                    field_schema=models.PayloadSchemaType.INTEGER,
                )
        self._known.add(name)

    def upsert(
        self,
        name: str,
        ids: Sequence[str],
        vectors: Sequence[Sequence[float]],
        payloads: Sequence[dict[str, Any]],
    ) -> None:
        """Write points and wait until Qdrant acknowledges them."""
        for start in range(0, len(ids), UPSERT_BATCH):
            end = start + UPSERT_BATCH
            points = [
                models.PointStruct(id=i, vector=list(v), payload=p)
                for i, v, p in zip(ids[start:end], vectors[start:end], payloads[start:end], strict=True)
            ]
            self._call(self.client.upsert, name, points=points, wait=True)

    @staticmethod
    def _scope(
        tenant_id: str,
        *,
        must: Sequence[tuple[str, str | int]] = (),
        must_not: Sequence[tuple[str, str | int]] = (),
    ) -> Any:
        def match(key: str, value: str | int) -> models.FieldCondition:
            return models.FieldCondition(key=key, match=models.MatchValue(value=value))

        return models.Filter(
            must=[match("tenant_id", tenant_id), *(match(k, v) for k, v in must)],
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
        if not self._call(self.client.collection_exists, name):
            return
        must_not: list[tuple[str, str | int]] = [("job_id", keep_job_id)] if keep_job_id else []
        must_not.extend(("index_version", version) for version in keep_versions)
        selector = models.FilterSelector(
            filter=self._scope(tenant_id, must=list(fields.items()), must_not=must_not)
        )
        self._call(self.client.delete, name, points_selector=selector, wait=True)

    def search(
        self,
        name: str,
        tenant_id: str,
        vector: Sequence[float],
        *,
        index_version: int,
        top_k: int,
        **fields: str,
    ) -> list[Hit]:
        """The tenant's points of `index_version` nearest to `vector`, best first."""
        if not self._call(self.client.collection_exists, name):
            return []
        must: list[tuple[str, str | int]] = [("index_version", index_version), *fields.items()]
        result = self._call(
            self.client.query_points,
            name,
            query=list(vector),
            query_filter=self._scope(tenant_id, must=must),
            limit=top_k,
            with_payload=True,
        )
        return [Hit(score=float(p.score), payload=dict(p.payload or {})) for p in result.points]

    def close(self) -> None:
        with self._lock:
            self.client.close()

    def set_document_metadata(
        self, name: str, tenant_id: str, document_id: str, metadata: dict[str, Any]
    ) -> None:
        """Replace the `metadata` payload key of the tenant's points of the document (every job's,
        every index version's) with `metadata`, leaving their vectors and other keys as they are."""
        if not self._call(self.client.collection_exists, name):
            return
        selector = models.FilterSelector(filter=self._scope(tenant_id, must=[("document_id", document_id)]))
        self._call(self.client.set_payload, name, payload={"metadata": metadata}, points=selector, wait=True)
