"""The embedded store on the Qdrant engine in-process (`qdrant-edge-py`): one shard folder per
collection under `<data_dir>/vectors/edge`, the same interface and answers as the qdrant-client adapter.

The engine is thread-safe, so calls run without a lock (only opening a shard takes one); like local
mode, one process owns the folder (the engine locks each shard's write-ahead log). An update returns
once it is in the write-ahead log, so an acknowledged batch survives a SIGKILL.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from shared import sparse as lexical
from shared.errors import ConflictError, VectorStoreError, VectorStoreUnavailableError
from shared.search_filter import SearchFilter
from shared.vector_queries import DENSE, HYBRID_SUFFIX, MODES, SPARSE
from shared.vectorstores.edge_layout import create_shard, edge_filter, is_shard
from shared.vectorstores.edge_queries import mode_request
from shared.vectorstores.protocol import (
    UPSERT_BATCH,
    Hit,
    StoredPoint,
    collection_name,
    deletion_scope,
    hybrid_collection_name,
    scope,
)

EdgeVector = list[float] | qe.SparseVector


class EdgeStore:
    """The service's view of its vectors in the engine's shards."""

    def __init__(self, root: str | Path, *, prefix: str) -> None:
        self.root = Path(root)
        self.prefix = prefix
        self._lock = threading.Lock()
        self._shards: dict[str, qe.EdgeShard] = {}

    def _engine(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (ValueError, TypeError):
            raise
        except Exception as exc:  # the engine raises plain `Exception`s
            raise VectorStoreError() from exc

    def _shard(self, name: str) -> qe.EdgeShard | None:
        """The open shard of collection `name`, or None when there is none."""
        shard = self._shards.get(name)
        if shard is not None:
            return shard
        with self._lock:
            if name not in self._shards:
                path = self.root / name
                if not is_shard(path):
                    return None
                self._shards[name] = self._engine(qe.EdgeShard.load, str(path))
            return self._shards[name]

    def ensure_shard(self, name: str, dimension: int, *, hybrid: bool) -> qe.EdgeShard:
        """The shard of `name`, created (hybrid, or dense-only for migrated data) when missing."""
        shard = self._shard(name)
        if shard is not None:
            return shard
        with self._lock:
            if name not in self._shards:
                self.root.mkdir(parents=True, exist_ok=True)
                self._shards[name] = self._engine(create_shard, self.root / name, dimension, hybrid=hybrid)
            return self._shards[name]

    def check(self) -> None:
        """The folder is there (made on a first start) and writable."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise VectorStoreUnavailableError() from exc
        if not os.access(self.root, os.W_OK):
            raise VectorStoreUnavailableError()

    def collection(self, model: str, dimension: int) -> str:
        return hybrid_collection_name(self.prefix, model, dimension)

    def place(self, model: str, dimension: int, tenant_id: str, index_version: int) -> tuple[str, bool]:
        legacy = collection_name(self.prefix, model, dimension)
        if self.count(legacy, tenant_id, index_version=index_version):
            return legacy, False
        return self.collection(model, dimension), True

    def ensure_collection(self, name: str, dimension: int) -> None:
        self.ensure_shard(name, dimension, hybrid=True)

    def upsert(
        self,
        name: str,
        ids: Sequence[str],
        vectors: Sequence[Sequence[float]],
        payloads: Sequence[dict[str, Any]],
        sparse: Sequence[lexical.SparseVector] | None = None,
    ) -> None:
        shard = self._shard(name)
        if shard is None:
            raise VectorStoreError()
        for start in range(0, len(ids), UPSERT_BATCH):
            end = start + UPSERT_BATCH
            batch = zip(ids[start:end], vectors[start:end], payloads[start:end], strict=True)
            if sparse is None:
                points = [qe.Point(i, list(v), p) for i, v, p in batch]
            else:
                points = [
                    qe.Point(i, {DENSE: list(v), SPARSE: qe.SparseVector(s.indices, s.values)}, p)
                    for (i, v, p), s in zip(batch, sparse[start:end], strict=True)
                ]
            self._engine(shard.update, qe.UpdateOperation.upsert_points(points))

    def write_points(self, name: str, points: Sequence[StoredPoint]) -> None:
        """Write points with their vectors as stored (by name, `""` the unnamed one): migration."""
        shard = self._shard(name)
        if shard is None:
            raise VectorStoreError()
        edge = [qe.Point(p.id, _edge_vectors(p.vectors or {}), p.payload) for p in points]
        self._engine(shard.update, qe.UpdateOperation.upsert_points(edge))

    def count(self, name: str, tenant_id: str, **fields: str | int) -> int:
        shard = self._shard(name)
        if shard is None:
            return 0
        found = edge_filter(scope(tenant_id, must=list(fields.items())))
        return int(self._engine(shard.count, qe.CountRequest(exact=True, filter=found)))

    def count_all(self, name: str) -> int:
        shard = self._shard(name)
        return 0 if shard is None else int(self._engine(shard.count, qe.CountRequest(exact=True)))

    def delete(
        self,
        name: str,
        tenant_id: str,
        *,
        keep_job_id: str | None = None,
        keep_versions: Sequence[int] = (),
        **fields: str | int,
    ) -> None:
        found = edge_filter(deletion_scope(tenant_id, keep_job_id, keep_versions, fields))
        assert found is not None
        for shard in self._with_sibling(name):
            self._engine(shard.update, qe.UpdateOperation.delete_points_by_filter(found))

    def _with_sibling(self, name: str) -> list[qe.EdgeShard]:
        names = dict.fromkeys((name, name.removesuffix(HYBRID_SUFFIX)))
        return [s for s in map(self._shard, names) if s is not None]

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
        """As the qdrant-client adapter: cosine, BM25 with IDF over the tenant's points of that version,
        or both fused by reciprocal rank; `min_score` a cosine, a BM25 score, the fused hits' cosine."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        shard = self._shard(name)
        if shard is None:
            return []
        hybrid = name.endswith(HYBRID_SUFFIX)
        if mode != "dense" and not hybrid:
            raise ConflictError(
                "This index version has no keyword index; reindex from the index stage.",
                code="keyword_index_missing",
            )
        found = edge_filter(scope(tenant_id, must=[("index_version", index_version)], narrow=narrow))
        corpus = edge_filter(scope(tenant_id, must=[("index_version", index_version)]))
        request = mode_request(
            mode,
            hybrid=hybrid,
            dense=dense,
            sparse=sparse,
            scope=found,
            corpus=corpus,
            top_k=top_k,
            min_score=min_score,
        )
        points = self._engine(shard.query, request)
        return [Hit(score=float(p.score), payload=dict(p.payload or {})) for p in points]

    def set_document_metadata(
        self, name: str, tenant_id: str, document_id: str, metadata: dict[str, Any]
    ) -> None:
        found = edge_filter(scope(tenant_id, must=[("document_id", document_id)]))
        assert found is not None
        for shard in self._with_sibling(name):
            self._engine(
                shard.update, qe.UpdateOperation.set_payload_by_filter(found, {"metadata": metadata})
            )

    def collections(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if is_shard(p))

    def open_collections(self) -> list[str]:
        names = self.collections()
        for name in names:
            self._shard(name)
        return names

    def records(
        self, name: str, *, tenant_id: str | None = None, with_vectors: bool = False, batch: int = 256
    ) -> Iterator[StoredPoint]:
        shard = self._shard(name)
        if shard is None:
            return
        found = edge_filter(scope(tenant_id)) if tenant_id is not None else None
        offset = None
        while True:
            request = qe.ScrollRequest(
                offset=offset, limit=batch, filter=found, with_payload=True, with_vector=with_vectors
            )
            points, offset = self._engine(shard.scroll, request)
            for p in points:
                vectors = _stored_vectors(p.vector) if with_vectors else None
                yield StoredPoint(str(p.id), dict(p.payload or {}), vectors)
            if offset is None:
                return

    def compact(self) -> dict[str, float]:
        """Vacuum deleted points out of every shard (`optimize()`, indexing stays off); the seconds
        each took. It holds the GIL throughout, so it is an offline command, never run by the service."""
        took: dict[str, float] = {}
        for name in self.collections():
            shard = self._shard(name)
            assert shard is not None
            began = time.monotonic()
            self._engine(shard.optimize)
            took[name] = time.monotonic() - began
        return took

    def close(self) -> None:
        with self._lock:
            shards, self._shards = list(self._shards.values()), {}
        for shard in shards:
            shard.flush()
            shard.close()


def _edge_vectors(vectors: dict[str, list[float] | lexical.SparseVector]) -> Any:
    if set(vectors) == {""}:
        return list(vectors[""])  # type: ignore[arg-type]
    return {
        k: qe.SparseVector(v.indices, v.values) if isinstance(v, lexical.SparseVector) else list(v)
        for k, v in vectors.items()
    }


def _stored_vectors(vector: Any) -> dict[str, list[float] | lexical.SparseVector]:
    if not isinstance(vector, dict):
        return {"": list(vector)}
    return {
        k: lexical.SparseVector(list(v.indices), list(v.values))
        if isinstance(v, qe.SparseVector)
        else list(v)
        for k, v in vector.items()
    }
