"""The vector store in local mode: hybrid, dense and keyword search, filters, min_score, tenant scope,
and index versions written before hybrid search (dense-only collections)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import QdrantClient, models

from shared.errors import ConflictError
from shared.search_filter import MetadataCondition, SearchFilter
from shared.sparse import document_vector, query_vector
from shared.vectorstores import QdrantClientStore, collection_name

A, B = "tenant-a", "tenant-b"
DIM = 4


def unit(*xs: float) -> list[float]:
    norm = math.sqrt(sum(x * x for x in xs))
    return [x / norm for x in xs]


# (chunk index, text, dense vector, pages, metadata): the dense vectors point along "topics", so a
# dense query finds by direction and a keyword query by words.
CHUNKS = [
    (0, "quarterly revenue rose strongly", unit(1, 0, 0, 0), (1, 1), {"year": 2023, "kind": "report"}),
    (1, "the zircon gasket must be replaced", unit(0, 1, 0, 0), (2, 3), {"year": 2021, "kind": "manual"}),
    (2, "operating margin and revenue outlook", unit(1, 1, 0, 0), (4, 4), {"year": 2024, "kind": "report"}),
    (3, "holiday leave for staff", unit(0, 0, 1, 0), (5, 6), {}),
]


def payload(
    tenant: str, doc: str, index: int, text: str, pages: tuple[int, int], meta: dict[str, Any]
) -> dict:
    return {
        "tenant_id": tenant,
        "document_id": doc,
        "filename": f"{doc}.pdf",
        "job_id": f"job-{doc}",
        "chunk_index": index,
        "page_start": pages[0],
        "page_end": pages[1],
        "text": text,
        "index_version": 1,
        "metadata": meta,
    }


def write(
    store: QdrantClientStore, name: str, tenant: str, doc: str, *, hybrid: bool = True, version: int = 1
) -> None:
    ids = [f"{abs(hash((tenant, doc, c[0], version))) % 10**12:012d}" for c in CHUNKS]
    ids = [f"00000000-0000-0000-0000-{i}" for i in ids]
    payloads = [payload(tenant, doc, i, t, p, m) | {"index_version": version} for i, t, _, p, m in CHUNKS]
    sparse = [document_vector(t) for _, t, _, _, _ in CHUNKS] if hybrid else None
    store.upsert(name, ids, [c[2] for c in CHUNKS], payloads, sparse)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[QdrantClientStore]:
    store = QdrantClientStore(QdrantClient(path=str(tmp_path / "qdrant")), prefix="chunks", server=False)
    yield store
    store.close()


@pytest.fixture
def filled(store: QdrantClientStore) -> tuple[QdrantClientStore, str]:
    # Given a hybrid collection holding tenant A's document "a1" and tenant B's document "b1"
    name, hybrid = store.place("model", DIM, A, 1)
    assert hybrid and name.endswith("_hybrid")
    store.ensure_collection(name, DIM)
    write(store, name, A, "a1")
    write(store, name, B, "b1")
    return store, name


def ask(
    store: QdrantClientStore, name: str, text: str, dense: list[float], mode: str, **kw: Any
) -> list[Any]:
    hits = store.search(
        name,
        A,
        index_version=1,
        top_k=kw.pop("top_k", 4),
        mode=mode,
        dense=dense,
        sparse=query_vector(text),
        **kw,
    )
    assert {h.payload["tenant_id"] for h in hits} <= {A}
    return hits


def test_each_mode_ranks_its_own_way(filled: tuple[QdrantClientStore, str]) -> None:
    store, name = filled
    # When a query's words name one chunk and its vector points at another
    text, vector = "zircon gasket", unit(0, 0, 1, 0)
    dense = ask(store, name, text, vector, "dense")
    keyword = ask(store, name, text, vector, "keyword")
    hybrid = ask(store, name, text, vector, "hybrid")
    # Then dense ranks by direction, keyword finds only the chunk with the words, hybrid has both on top
    assert dense[0].payload["chunk_index"] == 3 and len(dense) == 4
    assert [h.payload["chunk_index"] for h in keyword] == [1]
    assert {h.payload["chunk_index"] for h in hybrid[:2]} == {1, 3}


def test_filters_narrow_by_document_filename_pages_and_metadata(
    filled: tuple[QdrantClientStore, str],
) -> None:
    store, name = filled
    q, v = "revenue", unit(1, 0, 0, 0)

    def chunks(mode: str = "hybrid", **narrow: Any) -> set[int]:
        return {h.payload["chunk_index"] for h in ask(store, name, q, v, mode, narrow=SearchFilter(**narrow))}

    assert chunks(document_ids=("a1",)) == {0, 1, 2, 3}
    assert chunks(document_ids=("nope",)) == set()
    assert chunks(filename="a1.pdf", page_from=3, page_to=4) == {1, 2}
    assert chunks(page_from=6) == {3}
    assert chunks(metadata=(MetadataCondition("kind", eq="report"),)) == {0, 2}
    assert chunks(metadata=(MetadataCondition("year", any_of=(2021, 2024)),)) == {1, 2}
    assert chunks(metadata=(MetadataCondition("year", gte=2022, lte=2023.5),)) == {0}
    assert chunks("keyword", metadata=(MetadataCondition("year", eq=2024),)) == {2}


def test_no_filter_reaches_another_tenant(filled: tuple[QdrantClientStore, str]) -> None:
    store, name = filled
    q, v = "revenue", unit(1, 0, 0, 0)
    # Given filters naming tenant B's document, filename, and payload keys that look like the scope
    crafted = [
        SearchFilter(document_ids=("b1",)),
        SearchFilter(filename="b1.pdf"),
        SearchFilter(document_ids=("a1", "b1")),
        SearchFilter(metadata=(MetadataCondition("tenant_id", eq=B),)),
        SearchFilter(metadata=(MetadataCondition("index_version", any_of=(1, 2)),)),
    ]
    for mode in ("hybrid", "dense", "keyword"):
        for narrow in crafted:
            # Then tenant A only ever sees its own points (`ask` asserts it), and none of B's document
            hits = ask(store, name, q, v, mode, narrow=narrow)
            assert "b1" not in {h.payload["document_id"] for h in hits}
    # And a metadata key cannot reach outside `metadata.`
    for key in ("tenant_id.x", "../tenant_id", "a b", ""):
        with pytest.raises(ValueError):
            MetadataCondition(key, eq="x")


def test_min_score_is_a_cosine_a_bm25_score_or_the_fused_hits_cosine(
    filled: tuple[QdrantClientStore, str],
) -> None:
    store, name = filled
    v = unit(1, 0, 0, 0)  # cosine 1 with chunk 0, 0.71 with chunk 2, 0 with chunks 1 and 3
    assert {h.payload["chunk_index"] for h in ask(store, name, "x", v, "dense", min_score=0.5)} == {0, 2}
    keyword = ask(store, name, "revenue gasket", v, "keyword")
    assert {h.payload["chunk_index"] for h in keyword} == {0, 1, 2}
    top, second = keyword[0].score, keyword[1].score
    assert second < top
    above = ask(store, name, "revenue gasket", v, "keyword", min_score=(top + second) / 2)
    assert [h.score for h in above] == [top]
    # For hybrid: "gasket" matches chunk 1 by words, but its cosine (0) is under min_score
    hybrid = ask(store, name, "revenue gasket", v, "hybrid", min_score=0.5)
    assert {h.payload["chunk_index"] for h in hybrid} == {0, 2}


def test_idf_is_counted_over_the_tenants_own_points(filled: tuple[QdrantClientStore, str]) -> None:
    store, name = filled
    before = ask(store, name, "zircon", unit(0, 1, 0, 0), "keyword")[0].score
    # When another tenant writes many chunks holding the same word
    ids = [f"00000000-0000-0000-0001-{i:012d}" for i in range(30)]
    texts = ["zircon zircon everywhere"] * 30
    payloads = [payload(B, "b2", i, t, (1, 1), {}) for i, t in enumerate(texts)]
    store.upsert(name, ids, [unit(0, 1, 0, 0)] * 30, payloads, [document_vector(t) for t in texts])
    # Then tenant A's score for it is unchanged
    assert ask(store, name, "zircon", unit(0, 1, 0, 0), "keyword")[0].score == pytest.approx(before)


def test_a_version_written_before_hybrid_search_stays_dense_only(store: QdrantClientStore) -> None:
    # Given a dense-only collection (as made before) holding tenant A's version 1
    legacy = collection_name("chunks", "model", DIM)
    store.client.create_collection(
        legacy, vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE)
    )
    write(store, legacy, A, "a1", hybrid=False)
    # Then version 1 is placed there (more of it is written there), a new version in the hybrid one
    assert store.place("model", DIM, A, 1) == (legacy, False)
    assert store.place("model", DIM, A, 2) == (store.collection("model", DIM), True)
    assert store.place("model", DIM, B, 1)[1] is True
    # And it answers dense queries, while keyword and hybrid say what is missing
    hits = store.search(legacy, A, index_version=1, top_k=2, dense=unit(1, 0, 0, 0))
    assert hits[0].payload["chunk_index"] == 0
    for mode in ("keyword", "hybrid"):
        with pytest.raises(ConflictError) as raised:
            store.search(
                legacy, A, index_version=1, top_k=2, mode=mode, dense=[1, 0, 0, 0], sparse=query_vector("x")
            )
        assert raised.value.code == "keyword_index_missing"
    # And deleting through the hybrid name also removes the tenant's points from the dense-only sibling
    hybrid_name = store.collection("model", DIM)
    store.ensure_collection(hybrid_name, DIM)
    write(store, hybrid_name, A, "a1", version=2)
    store.delete(hybrid_name, A, keep_versions=[2])
    assert store.count(legacy, A) == 0 and store.count(hybrid_name, A) == 4


def test_the_dense_only_sibling_is_reached_before_any_hybrid_collection_exists(
    store: QdrantClientStore,
) -> None:
    # Given tenant A's points in a dense-only collection, and no hybrid collection yet
    legacy = collection_name("chunks", "model", DIM)
    store.client.create_collection(
        legacy, vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE)
    )
    write(store, legacy, A, "a1", hybrid=False)
    hybrid_name = store.collection("model", DIM)
    assert not store.client.collection_exists(hybrid_name)

    # When the document's metadata is replaced through the hybrid name
    store.set_document_metadata(hybrid_name, A, "a1", {"kind": "changed"})
    # Then the points in the dense-only collection carry it
    hits = store.search(legacy, A, index_version=1, top_k=4, dense=unit(1, 0, 0, 0))
    assert {h.payload["metadata"]["kind"] for h in hits} == {"changed"}

    # And a cancelled job's points are deleted through the hybrid name too
    store.delete(hybrid_name, A, job_id="job-a1")
    assert store.count(legacy, A) == 0
