"""Moving a `var/qdrant` written by the release before the engine store (qdrant-client local mode) into
the engine's store: every point, its vectors and payload, resumably, once."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient, models

from ingest_worker import cli
from shared.settings import Settings
from shared.sparse import query_vector
from shared.vectorstores import EdgeStore, QdrantClientStore, StoredPoint, VectorStore, open_vector_store
from shared.vectorstores.migration import CHECKPOINT, migrate_local_mode
from tests.shared.embedders.fakes import FakeEmbedder

FIXTURE = Path(__file__).parents[2] / "fixtures" / "local_mode_var" / "qdrant"
HYBRID = "chunks_fake_hashed_tokens_384_hybrid"
PER_VERSION = {("acme", 1): 16, ("acme", 2): 16, ("other", 1): 6}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """A data folder holding the fixture's `var/qdrant`."""
    shutil.copytree(FIXTURE, tmp_path / "var" / "qdrant")
    return Settings(data_dir=str(tmp_path / "var"))


def everything(store: VectorStore) -> dict[str, dict[str, StoredPoint]]:
    return {c: {p.id: p for p in store.records(c, with_vectors=True)} for c in store.collections()}


def old_store(settings: Settings) -> QdrantClientStore:
    return QdrantClientStore(QdrantClient(path=settings.effective_qdrant_path), prefix="chunks", server=False)


def assert_same_points(
    old: dict[str, dict[str, StoredPoint]], new: dict[str, dict[str, StoredPoint]]
) -> None:
    assert set(old) == set(new)
    for collection, points in old.items():
        assert set(points) == set(new[collection])
        for point_id, point in points.items():
            moved = new[collection][point_id]
            assert moved.payload == point.payload
            assert point.vectors is not None and moved.vectors is not None
            assert set(moved.vectors) == set(point.vectors)
            for name, vector in point.vectors.items():
                assert_close(moved.vectors[name], vector)


def assert_close(found: Any, expected: Any) -> None:
    if isinstance(expected, list):
        np.testing.assert_allclose(found, expected, atol=1e-6)
    else:
        assert found.indices == expected.indices
        np.testing.assert_allclose(found.values, expected.values, atol=1e-6)


def per_version(points: dict[str, StoredPoint]) -> Counter[tuple[str, int]]:
    return Counter((p.payload["tenant_id"], p.payload["index_version"]) for p in points.values())


def test_the_first_start_moves_every_point_and_keeps_the_old_folder(settings: Settings) -> None:
    # Given a var/ written by the previous release
    old = old_store(settings)
    before = everything(old)
    old.close()
    assert per_version(before[HYBRID]) == PER_VERSION
    files = {p: p.read_bytes() for p in Path(settings.effective_qdrant_path).rglob("*") if p.is_file()}
    # When the embedded store opens for the first time
    store = open_vector_store(settings)
    try:
        assert isinstance(store, EdgeStore)
        after = everything(store)
        # Then every point came over with its vectors and payload, counted per (tenant, version)
        assert_same_points(before, after)
        assert per_version(after[HYBRID]) == PER_VERSION
        for (tenant, version), count in PER_VERSION.items():
            assert store.count(HYBRID, tenant, index_version=version) == count
        # And the moved points answer searches
        text = "copper glacier"
        hits = store.search(
            HYBRID,
            "acme",
            index_version=2,
            top_k=5,
            mode="hybrid",
            dense=FakeEmbedder().embed([text])[0],
            sparse=query_vector(text),
        )
        assert hits and all(h.payload["index_version"] == 2 for h in hits)
    finally:
        store.close()
    # And the local-mode folder is as it was (the rollback), but for its lock file
    for path, content in files.items():
        assert path.read_bytes() == content, path


class CrashError(Exception):
    pass


class FailingStore(EdgeStore):
    """Stops (as a crash would) after `batches` acknowledged batches."""

    def __init__(self, *args: Any, batches: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.batches = batches

    def write_points(self, name: str, points: Any) -> None:
        if self.batches == 0:
            raise CrashError()
        self.batches -= 1
        super().write_points(name, points)


def test_an_interrupted_migration_resumes_where_it_stopped(settings: Settings) -> None:
    old = old_store(settings)
    before = everything(old)
    old.close()
    root = settings.effective_edge_path
    # Given a migration stopped after two batches of eight
    failing = FailingStore(root, prefix="chunks", batches=2)
    with pytest.raises(CrashError):
        migrate_local_mode(settings.effective_qdrant_path, failing, batch=8)
    assert failing.count_all(HYBRID) == 16
    failing.close()
    assert (Path(root) / CHECKPOINT).exists()
    # When it runs again, then it finishes, and a third run has nothing to do
    store = EdgeStore(root, prefix="chunks")
    try:
        moved = migrate_local_mode(settings.effective_qdrant_path, store, batch=8)
        assert moved.collections == {HYBRID: 38}
        assert migrate_local_mode(settings.effective_qdrant_path, store).skipped
        after = everything(store)
        assert_same_points(before, after)
        assert per_version(after[HYBRID]) == PER_VERSION
    finally:
        store.close()


def test_a_dense_only_collection_moves_as_dense_only(settings: Settings) -> None:
    # Given a local-mode folder that also holds a dense-only collection (from before hybrid search)
    client = QdrantClient(path=settings.effective_qdrant_path)
    legacy = HYBRID.removesuffix("_hybrid")
    client.create_collection(
        legacy, vectors_config=models.VectorParams(size=384, distance=models.Distance.COSINE)
    )
    payload = {"tenant_id": "acme", "document_id": "old", "job_id": "j0", "index_version": 7}
    vector = FakeEmbedder().embed(["an old chunk"])[0]
    client.upsert(
        legacy,
        [models.PointStruct(id="5c1b1f0e-0000-4000-8000-000000000001", vector=vector, payload=payload)],
    )
    client.close()
    # When it is moved
    store = EdgeStore(settings.effective_edge_path, prefix="chunks")
    try:
        migrate_local_mode(settings.effective_qdrant_path, store)
        # Then the tenant's version 7 is placed in it and searched densely
        assert store.place(FakeEmbedder.model_name, 384, "acme", 7) == (legacy, False)
        hits = store.search(legacy, "acme", index_version=7, top_k=3, dense=vector)
        assert [h.payload["document_id"] for h in hits] == ["old"]
    finally:
        store.close()


def test_compacting_keeps_every_live_point(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the migrated store, whose tenant purges its version 1
    monkeypatch.setenv("INGEST_DATA_DIR", settings.data_dir)
    assert cli.main(["migrate-vectors"]) == 0
    store = EdgeStore(settings.effective_edge_path, prefix="chunks")
    store.delete(HYBRID, "acme", keep_versions=[2])
    before = everything(store)
    store.close()
    # When it is compacted, then the live points are all there as they were
    assert cli.main(["compact-vectors"]) == 0
    store = EdgeStore(settings.effective_edge_path, prefix="chunks")
    try:
        assert_same_points(before, everything(store))
        assert per_version(everything(store)[HYBRID]) == {("acme", 2): 16, ("other", 1): 6}
    finally:
        store.close()


def test_the_command_moves_the_points(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INGEST_DATA_DIR", settings.data_dir)
    assert cli.main(["migrate-vectors"]) == 0
    store = EdgeStore(settings.effective_edge_path, prefix="chunks")
    try:
        assert store.count_all(HYBRID) == 38
    finally:
        store.close()
