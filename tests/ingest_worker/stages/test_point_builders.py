"""The pure parts of the embed and index stages: batches and point payloads."""

from __future__ import annotations

from ingest_worker.stages.embed import embed_batches
from ingest_worker.stages.index import PointOrigin, index_points, point_id
from shared.artifacts import Chunk

ORIGIN = PointOrigin(
    tenant_id="t1",
    document_id="d1",
    job_id="j1",
    index_version=3,
    embedding_model="m",
    extractor_version="x-1",
    chunker_version="c-1",
)


def _chunks(n: int) -> list[Chunk]:
    return [
        Chunk(
            i,
            f"text {i}",
            i + 1,
            i + 1,
            10 * i,
            10 * i + 6,
            token_count=i + 1,
            heading="H",
            sections=("H", "S"),
        )
        for i in range(n)
    ]


def test_batches_cover_every_chunk_once_in_order() -> None:
    # Given seven chunks and batches of three
    chunks = _chunks(7)

    # When they are cut into batches
    batches = list(embed_batches(chunks, batch_size=3))

    # Then the batches start where the previous one ended, hold the texts in order and count their tokens
    assert [b.start for b in batches] == [0, 3, 6]
    assert [t for b in batches for t in b.texts] == [c.text for c in chunks]
    assert [b.tokens for b in batches] == [1 + 2 + 3, 4 + 5 + 6, 7]


def test_no_chunks_make_no_batches() -> None:
    assert list(embed_batches([], batch_size=8)) == []


def test_points_carry_the_tenant_and_what_made_them() -> None:
    # Given two chunks of a job
    chunks = _chunks(2)

    # When their points are built
    ids, payloads = index_points(chunks, ORIGIN)

    # Then the ids are the job's deterministic ones and every payload names the tenant, job and versions
    assert ids == [point_id("j1", 0), point_id("j1", 1)]
    assert len(set(ids)) == 2
    first = payloads[0]
    assert first["tenant_id"] == "t1" and first["document_id"] == "d1" and first["job_id"] == "j1"
    assert first["index_version"] == 3 and first["embedding_model"] == "m"
    assert (first["extractor_version"], first["chunker_version"]) == ("x-1", "c-1")
    assert (first["chunk_index"], first["text"], first["sections"]) == (0, "text 0", ["H", "S"])
    assert (payloads[1]["page_start"], payloads[1]["char_start"], payloads[1]["char_end"]) == (2, 10, 16)


def test_point_ids_are_stable_and_differ_between_jobs() -> None:
    assert point_id("j1", 0) == point_id("j1", 0)
    assert point_id("j1", 0) != point_id("j2", 0)
