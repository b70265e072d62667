"""Moving the points of qdrant-client's local mode (`qdrant_path`, by default `var/qdrant`) into the
engine's store, once, without losing a point, resumably.

Each collection is scrolled in id order, a batch at a time, and written into the shard of the same name
with the same ids, vectors and payloads; after each acknowledged batch the next offset is saved in a
checkpoint file in the engine's folder. Writing a point twice is harmless (same id, same content), so a
migration interrupted anywhere resumes from its checkpoint. A collection is done once both sides count
the same points; when all are, the checkpoint says so and the migration never runs again.

The local-mode folder is only read: it stays as it was, the rollback (`INGEST_EMBEDDED_VECTOR_STORE=local`)
until removed by hand. Points written after the migration are only in the engine's store.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shared.errors import VectorStoreError
from shared.vectorstores.client_store import stored_vectors
from shared.vectorstores.edge_store import EdgeStore
from shared.vectorstores.protocol import StoredPoint

log = logging.getLogger(__name__)
CHECKPOINT = "migration-from-local-mode.json"
BATCH = 256


@dataclass
class Migrated:
    """What a migration moved: the points of each collection."""

    collections: dict[str, int] = field(default_factory=dict)
    skipped: bool = False


def has_local_mode_data(source: str | Path) -> bool:
    """True when `source` holds a local-mode store with at least one collection."""
    folder = Path(source) / "collection"
    return folder.is_dir() and any(folder.iterdir())


def migrate_local_mode(source: str | Path, store: EdgeStore, *, batch: int = BATCH) -> Migrated:
    """Move every point of the local-mode store at `source` into `store`, resuming a checkpoint; a
    no-op when there is nothing to move or it was done before."""
    checkpoint = store.root / CHECKPOINT
    state = _load(checkpoint)
    if state.get("done") or not has_local_mode_data(source):
        return Migrated(skipped=True)
    from qdrant_client import QdrantClient

    log.info("moving the vectors of %s into %s", source, store.root)
    client = QdrantClient(path=str(source))
    moved = Migrated()
    try:
        for collection in sorted(c.name for c in client.get_collections().collections):
            progress = state.setdefault("collections", {}).setdefault(collection, {"offset": None})
            if not progress.get("done"):
                _copy(client, collection, store, progress, lambda: _save(checkpoint, state), batch)
            moved.collections[collection] = progress["count"]
        state["done"] = True
        _save(checkpoint, state)
    finally:
        client.close()
    log.info("moved %s points of %s", sum(moved.collections.values()), source)
    return moved


def _copy(client: Any, name: str, store: EdgeStore, progress: dict[str, Any], save: Any, batch: int) -> None:
    info = client.get_collection(name).config.params
    vectors = info.vectors
    hybrid = isinstance(vectors, dict)
    dimension = vectors["dense"].size if hybrid else vectors.size
    store.ensure_shard(name, dimension, hybrid=hybrid)
    offset = progress["offset"]
    while True:
        points, offset = client.scroll(name, limit=batch, offset=offset, with_payload=True, with_vectors=True)
        if points:
            store.write_points(
                name,
                [StoredPoint(str(p.id), dict(p.payload or {}), stored_vectors(p.vector)) for p in points],
            )
        progress["offset"] = offset
        save()
        if offset is None:
            break
    expected, found = int(client.count(name, exact=True).count), store.count_all(name)
    if found != expected:
        raise VectorStoreError(f"migration of {name} found {found} points of {expected}")
    progress.update(done=True, count=found)
    save()


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def _save(path: Path, state: dict[str, Any]) -> None:
    """Write the checkpoint whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(state, indent=1, sort_keys=True))
    os.replace(partial, path)
