"""One contract for every vector store adapter: the engine in-process (the embedded default) and
qdrant-client (local mode standing in for the server path), so the two cannot drift."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient

from shared.search_filter import MetadataCondition, SearchFilter
from shared.settings import Settings
from shared.sparse import document_vector, query_vector
from shared.vectorstores import (
    EdgeStore,
    QdrantClientStore,
    VectorStore,
    collection_name,
    open_vector_store,
)
from tests.support.vectorstore_corpus import WORDS, Corpus, chunk_id, write_corpus

A, B = "tenant-a", "tenant-b"
DIM = 16
MODEL = "test-model"


def make_store(kind: str, folder: Path) -> VectorStore:
    if kind == "edge":
        return EdgeStore(folder / "edge", prefix="chunks")
    return QdrantClientStore(QdrantClient(path=str(folder / "qdrant")), prefix="chunks", server=False)


@pytest.fixture(params=["edge", "local"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    opened = make_store(request.param, tmp_path)
    yield opened
    opened.close()


@pytest.fixture
def filled(store: VectorStore) -> tuple[VectorStore, str, Corpus]:
    name = store.collection(MODEL, DIM)
    store.ensure_collection(name, DIM)
    corpus = write_corpus(store, name, seed=7, dimension=DIM, tenants=(A, B), versions=(1, 2), chunks=30)
    return store, name, corpus


def ask(store: VectorStore, name: str, tenant: str, corpus: Corpus, mode: str, **kw: Any) -> list[Any]:
    text = kw.pop("text", "harbor lantern copper")
    return store.search(
        name,
        tenant,
        index_version=kw.pop("index_version", 1),
        top_k=kw.pop("top_k", 10),
        mode=mode,
        dense=corpus.query_vector(text),
        sparse=query_vector(text),
        **kw,
    )


def test_the_embedded_default_is_the_engine_in_process(tmp_path: Path) -> None:
    # Given embedded settings, when the store is opened, then it is the engine's; "local" rolls back
    default = open_vector_store(Settings(data_dir=str(tmp_path / "a")))
    rollback = open_vector_store(Settings(data_dir=str(tmp_path / "b"), embedded_vector_store="local"))
    try:
        assert type(default) is EdgeStore and type(rollback) is QdrantClientStore
        default.check()  # ready on a first start, before any shard exists
        rollback.check()
        assert isinstance(default, VectorStore) and isinstance(rollback, VectorStore)
    finally:
        default.close()
        rollback.close()


@pytest.mark.parametrize("mode", ["dense", "keyword", "hybrid"])
def test_search_sees_only_the_tenants_own_version(filled: tuple[VectorStore, str, Corpus], mode: str) -> None:
    store, name, corpus = filled
    for tenant in (A, B):
        for version in (1, 2):
            hits = ask(store, name, tenant, corpus, mode, index_version=version, top_k=50)
            assert hits
            assert {(h.payload["tenant_id"], h.payload["index_version"]) for h in hits} == {(tenant, version)}
    assert ask(store, name, "nobody", corpus, mode) == []


def test_counts_and_deletes_stay_within_the_tenant(filled: tuple[VectorStore, str, Corpus]) -> None:
    store, name, _ = filled
    assert store.count(name, A) == store.count(name, B) == 60
    assert store.count(name, A, index_version=2) == 30
    # When tenant A deletes a document, then B's document of the same id stays
    store.delete(name, A, document_id="doc-0")
    assert store.count(name, A, document_id="doc-0") == 0
    assert store.count(name, B, document_id="doc-0") == 20
    with pytest.raises(ValueError):
        store.delete(name, A)


def test_deletes_keep_a_jobs_or_a_versions_points(filled: tuple[VectorStore, str, Corpus]) -> None:
    store, name, _ = filled
    # A document re-ingested by job-1-v2: deleting the document but that job's points keeps them
    store.delete(name, A, keep_job_id="job-doc-1-v2", document_id="doc-1")
    assert store.count(name, A, document_id="doc-1") == 10
    assert store.count(name, A, document_id="doc-1", index_version=2) == 10
    # Purging every version but 2 keeps version 2 whole
    store.delete(name, B, keep_versions=[2])
    assert store.count(name, B, index_version=1) == 0 and store.count(name, B, index_version=2) == 30
    assert store.count(name, A, index_version=1) == 20


def test_payload_updates_and_string_ids(filled: tuple[VectorStore, str, Corpus]) -> None:
    store, name, corpus = filled
    # Ids go in as text and come back as the same text
    assert {p.id for p in store.records(name, tenant_id=A)} == {
        chunk_id(A, d, c, v) for d, c, v in corpus.keys[A]
    }
    # When a document's metadata is replaced, then its points of every version carry it, others not
    store.set_document_metadata(name, A, "doc-2", {"year": 2031, "kind": "memo"})
    by_doc = {(p.payload["document_id"], p.payload["metadata"].get("year")) for p in store.records(name)}
    assert ("doc-2", 2031) in by_doc and all(y != 2031 for d, y in by_doc if d != "doc-2")
    assert all(p.payload["metadata"].get("year") != 2031 for p in store.records(name, tenant_id=B))
    narrow = SearchFilter(metadata=(MetadataCondition("kind", eq="memo"),))
    for mode in ("dense", "keyword", "hybrid"):
        hits = ask(store, name, A, corpus, mode, narrow=narrow, top_k=50)
        assert hits and {h.payload["document_id"] for h in hits} == {"doc-2"}
        assert all(isinstance(h.payload["chunk_index"], int) for h in hits)


def test_filters_narrow_by_document_pages_and_metadata_ranges(
    filled: tuple[VectorStore, str, Corpus],
) -> None:
    store, name, corpus = filled
    narrow = SearchFilter(
        document_ids=("doc-0", "doc-1"),
        page_from=2,
        page_to=4,
        metadata=(MetadataCondition("score", gte=0.25, lte=0.75),),
    )
    hits = ask(store, name, A, corpus, "dense", narrow=narrow, top_k=50)
    assert hits
    for hit in hits:
        p = hit.payload
        assert p["document_id"] in ("doc-0", "doc-1") and p["page_end"] >= 2 and p["page_start"] <= 4
        assert 0.25 <= p["metadata"]["score"] <= 0.75


def test_min_score_is_a_cosine_a_bm25_score_or_the_fused_hits_cosine(
    filled: tuple[VectorStore, str, Corpus],
) -> None:
    store, name, corpus = filled
    text = "harbor lantern copper"
    query = np.asarray(corpus.query_vector(text))
    dense = ask(store, name, A, corpus, "dense", top_k=50)
    keyword = ask(store, name, A, corpus, "keyword", top_k=50)
    # Thresholds halfway between two hits' scores, so no float rounding decides
    middle = len(dense) // 2
    cosine = (dense[middle].score + dense[middle + 1].score) / 2
    bm25 = (keyword[len(keyword) // 2].score + keyword[len(keyword) // 2 + 1].score) / 2
    # A dense or keyword threshold keeps exactly the hits scoring at least that much
    assert [h.score for h in ask(store, name, A, corpus, "dense", top_k=50, min_score=cosine)] == [
        h.score for h in dense if h.score >= cosine
    ]
    assert [h.score for h in ask(store, name, A, corpus, "keyword", top_k=50, min_score=bm25)] == [
        h.score for h in keyword if h.score >= bm25
    ]
    # A hybrid threshold is the cosine every fused hit reaches
    fused = ask(store, name, A, corpus, "hybrid", top_k=50, min_score=cosine)
    vectors = {(c, v): corpus.query_vector(t) for (d, c, v), t in corpus.texts[A].items()}
    assert fused and len(fused) <= len([h for h in dense if h.score >= cosine])
    for hit in fused:
        assert float(np.dot(query, vectors[(hit.payload["chunk_index"], 1)])) >= cosine - 1e-5


def test_reindex_into_a_new_dimension(filled: tuple[VectorStore, str, Corpus]) -> None:
    store, old, corpus = filled
    # Given a tenant reindexing into a model of another dimension, version 3
    new = store.collection(MODEL, 8)
    assert new != old
    store.ensure_collection(new, 8)
    smaller = write_corpus(store, new, seed=8, dimension=8, tenants=(A,), versions=(3,), chunks=12)
    # Then each version answers from its own collection, in its own dimension
    assert [h.payload["index_version"] for h in ask(store, new, A, smaller, "hybrid", index_version=3)]
    assert ask(store, old, A, corpus, "dense")[0].payload["index_version"] == 1
    # And purging the old versions leaves the new one whole
    store.delete(old, A, keep_versions=[3])
    assert store.count(old, A) == 0 and store.count(new, A, index_version=3) == 12


def test_a_dense_only_collection_is_placed_and_searched_densely(store: VectorStore) -> None:
    legacy = collection_name("chunks", MODEL, DIM)
    rng = np.random.default_rng(1)
    payload = {"tenant_id": A, "document_id": "d", "job_id": "j", "index_version": 4, "chunk_index": 0}
    if isinstance(store, EdgeStore):
        store.ensure_shard(legacy, DIM, hybrid=False)
    elif isinstance(store, QdrantClientStore):
        from qdrant_client import models

        store.client.create_collection(
            legacy, vectors_config=models.VectorParams(size=DIM, distance="Cosine")
        )
    store.upsert(legacy, [chunk_id(A, "d", 0, 4)], [list(rng.normal(size=DIM))], [payload])
    assert store.place(MODEL, DIM, A, 4) == (legacy, False)
    assert store.place(MODEL, DIM, A, 5) == (store.collection(MODEL, DIM), True)
    assert len(store.search(legacy, A, index_version=4, top_k=3, dense=list(rng.normal(size=DIM)))) == 1


def test_idf_is_scoped_to_the_tenant_and_version(filled: tuple[VectorStore, str, Corpus]) -> None:
    store, name, corpus = filled
    before = [(h.payload["chunk_index"], h.score) for h in ask(store, name, A, corpus, "keyword", top_k=50)]
    # When another tenant and another version of the same tenant pile up the query's words
    heavy = " ".join(["harbor lantern"] * 20)
    ids = [chunk_id(t, "heavy", i, v) for t, v in ((B, 1), (A, 2)) for i in range(40)]
    payloads = [
        {"tenant_id": t, "document_id": "heavy", "job_id": "j", "index_version": v, "chunk_index": i}
        for t, v in ((B, 1), (A, 2))
        for i in range(40)
    ]
    vectors = [corpus.query_vector(heavy) for _ in ids]
    store.upsert(name, ids, vectors, payloads, sparse=[document_vector(heavy)] * len(ids))
    # Then tenant A's scores in version 1 stay what they were
    after = [(h.payload["chunk_index"], h.score) for h in ask(store, name, A, corpus, "keyword", top_k=50)]
    assert [c for c, _ in after] == [c for c, _ in before]
    assert all(abs(x - y) < 1e-6 for (_, x), (_, y) in zip(after, before, strict=True))


@pytest.mark.parametrize("mode", ["dense", "keyword", "hybrid"])
def test_both_adapters_rank_alike_within_1e4(tmp_path: Path, mode: str) -> None:
    stores = [make_store("edge", tmp_path), make_store("local", tmp_path)]
    try:
        answers = []
        for store in stores:
            name = store.collection(MODEL, DIM)
            store.ensure_collection(name, DIM)
            corpus = write_corpus(
                store, name, seed=11, dimension=DIM, tenants=(A, B), versions=(1, 2), chunks=30
            )
            asked = [ask(store, name, A, corpus, mode, text=t, top_k=60) for t in queries(corpus)]
            answers.append(
                [[(h.payload["document_id"], h.payload["chunk_index"], h.score) for h in a] for a in asked]
            )
        for edge, local in zip(*answers, strict=True):
            assert len(edge) == len(local) and edge
            assert all(abs(e[2] - q[2]) <= 1e-4 for e, q in zip(edge, local, strict=True))
            assert tie_groups(edge) == tie_groups(local)
    finally:
        for store in stores:
            store.close()


def queries(corpus: Corpus) -> list[str]:
    rng = random.Random(5)
    return [" ".join(rng.sample(WORDS, 3)) for _ in range(8)]


def tie_groups(hits: list[tuple[str, int, float]]) -> list[set[tuple[str, int]]]:
    """The ranking, with hits whose scores tie (within 1e-5) as one unordered group."""
    groups: list[set[tuple[str, int]]] = []
    last: float | None = None
    for doc, chunk, score in hits:
        if last is None or abs(score - last) > 1e-5:
            groups.append(set())
        groups[-1].add((doc, chunk))
        last = score
    return groups


def test_eight_threads_write_and_search_at_once(store: VectorStore) -> None:
    name = store.collection(MODEL, DIM)
    store.ensure_collection(name, DIM)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            corpus = write_corpus(
                store, name, seed=n, dimension=DIM, tenants=(f"t{n}",), versions=(1,), chunks=60
            )
            for _ in range(20):
                hits = ask(store, name, f"t{n}", corpus, "hybrid")
                assert hits and all(h.payload["tenant_id"] == f"t{n}" for h in hits)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(store.count(name, f"t{n}") == 60 for n in range(8))
