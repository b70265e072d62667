"""Opening the vector store as a worker starts: the first index job then finds it open."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
from qdrant_client import QdrantClient

from ingest_worker import warm_up
from ingest_worker.resources import Resources
from shared.embedders import model_spec
from shared.settings import Settings
from shared.vectorstores import EdgeStore, QdrantClientStore, VectorStore, open_vector_store
from shared.vectorstores.protocol import collection_name
from tests.support.vectorstore_corpus import write_corpus


def make_store(kind: str, folder: Path) -> VectorStore:
    if kind == "edge":
        return EdgeStore(folder / "edge", prefix="chunks")
    return QdrantClientStore(QdrantClient(path=str(folder / "qdrant")), prefix="chunks", server=False)


@pytest.mark.parametrize("kind", ["edge", "local"])
def test_open_collections_names_every_collection_after_a_restart(tmp_path: Path, kind: str) -> None:
    # Given a store with two models' collections, closed as a process stops
    earlier = make_store(kind, tmp_path)
    names = sorted([earlier.collection("model-a", 16), earlier.collection("model-b", 16)])
    for name in names:
        earlier.ensure_collection(name, 16)
    write_corpus(earlier, names[1], seed=3, dimension=16, tenants=("t",), versions=(1,), chunks=5)
    earlier.close()
    # When the next process opens them all at start, then it names both and reads what was there
    store = make_store(kind, tmp_path)
    try:
        assert store.open_collections() == names
        assert store.count(names[1], "t") == 5
    finally:
        store.close()


def test_warm_up_opens_the_store_its_shards_and_the_default_collection(settings: Settings) -> None:
    # Given a store folder that holds a dense-only collection from an earlier run
    legacy = collection_name(settings.qdrant_collection_prefix, "older-model", 8)
    earlier = open_vector_store(settings)
    assert isinstance(earlier, EdgeStore)
    earlier.ensure_shard(legacy, 8, hybrid=False)
    earlier.close()
    resources = Resources(settings)

    # When a worker starts and its warm-up has run
    warm_up.start_warm_up(resources).join(timeout=60)

    # Then the store is open before any job, with that shard loaded and the default model's made
    assert "vectors" in vars(resources)
    store = resources.vectors
    assert isinstance(store, EdgeStore)
    model, dimension = model_spec(settings)
    assert set(store._shards) == {legacy, store.collection(model, dimension)}
    store.close()


def test_a_failed_warm_up_logs_and_leaves_the_store_to_open_on_first_use(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a store that cannot be opened at start
    def unavailable(_settings: Settings) -> None:
        raise OSError("the disk is not there yet")

    monkeypatch.setattr("ingest_worker.resources.open_vector_store", unavailable)
    resources = Resources(settings)

    # When the warm-up runs
    with caplog.at_level(logging.WARNING, logger="ingest_worker.warm_up"):
        opened = warm_up.warm_vectors(resources)

    # Then it does not raise, says so, and nothing is cached: the first job opens the store itself
    assert opened is False
    assert "opens on first use" in caplog.text
    assert "vectors" not in vars(resources)
    monkeypatch.undo()
    resources.vectors.close()


@pytest.mark.parametrize(
    ("queues", "warms"),
    [
        (None, True),
        ({"index", "index-backlog", "bulk-index"}, True),
        ({"ingest", "ocr"}, False),
        ({"webhooks"}, False),
    ],
)
def test_only_a_worker_of_an_index_queue_opens_the_store(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, queues: set[str] | None, warms: bool
) -> None:
    # Given the middleware of a pool's worker process (with a local folder only the index pool may open it)
    started: list[Resources] = []
    monkeypatch.setattr(warm_up, "start_warm_up", started.append)
    resources = Resources(settings)
    middleware = warm_up.VectorWarmUp(lambda: resources)

    # When its worker boots on `queues`
    middleware.after_worker_boot(None, SimpleNamespace(consumer_whitelist=queues))  # type: ignore[arg-type]

    # Then the warm-up starts only where index stages run
    assert started == ([resources] if warms else [])
