"""The Qdrant engine in-process (`qdrant-edge-py`): one shard folder per collection, its configuration,
its payload indexes, and qdrant-client filters translated to the engine's own classes.

The engine has no collections: `<root>/<collection name>/` is one shard, the hybrid ones with the named
vectors `dense` (cosine) and `sparse` (IDF modifier), a dense-only one (migrated from before hybrid
search) with one unnamed vector. No HNSW graph is ever built (`optimize()` holds the GIL for its whole
run, seconds to minutes): searches are exact scans of the points the payload indexes select, and
`prevent_unoptimized` stays off so that no point is hidden while unindexed.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import qdrant_edge as qe
from qdrant_client import models

from shared.search_filter import refuse_big_numbers
from shared.vector_queries import DENSE, SPARSE

# Segments are never indexed (0 turns indexing off); no point waits for an optimizer to be seen.
OPTIMIZERS = qe.EdgeOptimizersConfig(indexing_threshold=0, prevent_unoptimized=False)
PAYLOAD_INDEXES: list[tuple[str, Any]] = [
    ("tenant_id", qe.KeywordIndexParams(is_tenant=True)),
    ("document_id", qe.PayloadSchemaType.Keyword),
    ("index_version", qe.PayloadSchemaType.Integer),
    ("job_id", qe.PayloadSchemaType.Keyword),
]


def shard_config(dimension: int, *, hybrid: bool) -> qe.EdgeConfig:
    """A hybrid shard (named `dense` and `sparse`), or a dense-only one (one unnamed vector)."""
    dense = qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine)
    if not hybrid:
        return qe.EdgeConfig(vectors=dense, optimizers=OPTIMIZERS)
    return qe.EdgeConfig(
        vectors={DENSE: dense},
        sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        optimizers=OPTIMIZERS,
    )


def create_shard(path: Path, dimension: int, *, hybrid: bool) -> qe.EdgeShard:
    """A new shard at `path` with its payload indexes (the folder is made whole, then renamed in, so
    a crash never leaves a shard without its indexes)."""
    partial = path.with_name(path.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    shard = qe.EdgeShard.create(str(partial), shard_config(dimension, hybrid=hybrid))
    for field, schema in PAYLOAD_INDEXES:
        shard.update(qe.UpdateOperation.create_field_index(field, schema))
    shard.flush()
    shard.close()
    partial.rename(path)
    return qe.EdgeShard.load(str(path))


def is_shard(path: Path) -> bool:
    return path.is_dir() and not path.name.endswith(".partial") and (path / "wal").exists()


def edge_filter(found: models.Filter | None) -> qe.Filter | None:
    """The engine's filter for a qdrant-client one (the conditions `scope` and `SearchFilter` make)."""
    if found is None:
        return None
    return qe.Filter(
        must=[_condition(c) for c in _listed(found.must)] or None,
        should=[_condition(c) for c in _listed(found.should)] or None,
        must_not=[_condition(c) for c in _listed(found.must_not)] or None,
    )


def _listed(conditions: Any) -> list[Any]:
    if conditions is None:
        return []
    return list(conditions) if isinstance(conditions, list) else [conditions]


def _condition(condition: Any) -> Any:
    if isinstance(condition, models.Filter):
        return edge_filter(condition)
    if not isinstance(condition, models.FieldCondition):
        raise TypeError(f"no engine condition for {type(condition).__name__}")
    if condition.range is not None:
        r: Any = condition.range  # `Range` (floats): `SearchFilter` makes no datetime ranges
        return qe.FieldCondition(
            key=condition.key, range=qe.RangeFloat(gte=r.gte, gt=r.gt, lte=r.lte, lt=r.lt)
        )
    match = condition.match
    # The engine's integers are 64-bit: a larger one would be an OverflowError in its binding.
    if isinstance(match, models.MatchValue):
        refuse_big_numbers([match.value])
        return qe.FieldCondition(key=condition.key, match=qe.MatchValue(match.value))
    if isinstance(match, models.MatchAny):
        values: Any = list(match.any)
        refuse_big_numbers(values)
        return qe.FieldCondition(key=condition.key, match=qe.MatchAny(values))
    raise TypeError(f"no engine condition for {condition!r}")
