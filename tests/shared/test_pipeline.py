"""The pipeline's declaration (shared/pipeline.py) and what derives from it."""

from __future__ import annotations

import pytest

from shared import pipeline, queue
from shared.pipeline import FROM_STAGES, INGEST, PIPELINES, STAGE, artifact_of, reused_inputs


def test_actor_and_queue_names_are_the_ones_messages_in_flight_and_dead_letters_hold() -> None:
    # Then renaming a stage's actor or queue would strand its messages: the names are pinned here
    assert {name: (stage.actor, stage.queue) for name, stage in STAGE.items()} == {
        "validate": ("validate_document", "ingest"),
        "extract": ("extract_text", "ingest"),
        "ocr": ("ocr_pages", "ocr"),
        "chunk": ("chunk_text", "ingest"),
        "embed": ("embed_chunks", "ingest"),
        "index": ("index_chunks", "index"),
        "finalize": ("finalize_job", "index"),
        "delete": ("delete_document", "index"),
        "metadata": ("apply_metadata", "index"),
    }
    assert queue.PART_ACTOR_FOR_STAGE == {"ocr": "ocr_range"}


def test_the_message_contract_takes_its_stage_lists_from_the_declaration() -> None:
    assert tuple(stage.name for stage in INGEST) == queue.STAGES
    assert {kind: tuple(s.name for s in stages) for kind, stages in PIPELINES.items()} == queue.PIPELINES
    assert {name: stage.actor for name, stage in STAGE.items()} == queue.ACTOR_FOR_STAGE
    assert set(queue.QUEUE_FOR_STAGE.values()) <= set(queue.STAGE_QUEUES)


def test_every_stage_reads_only_artifacts_that_an_earlier_stage_writes() -> None:
    for kind, stages in PIPELINES.items():
        for at, stage in enumerate(stages):
            earlier = {s.name for s in stages[:at] if s.writes}
            assert set(stage.reads) <= earlier, (kind, stage.name)


def test_a_reindex_starts_at_the_declared_stages_latest_first() -> None:
    assert FROM_STAGES == ("index", "embed", "chunk", "extract")
    order = [s.name for s in INGEST]
    positions = [order.index(s) for s in FROM_STAGES]
    assert positions == sorted(positions, reverse=True)


def test_a_reindex_needs_only_the_artifacts_its_first_stage_and_the_later_ones_read() -> None:
    # Given the stages a reindex may start at, then it needs the artifacts those and later stages read:
    # from `chunk` the OCR stage's pages, not the extract stage's, which only OCR reads
    assert {stage: reused_inputs(stage) for stage in FROM_STAGES} == {
        "index": ("chunk", "embed"),
        "embed": ("chunk",),
        "chunk": ("ocr",),
        "extract": (),
    }


def test_artifact_names_come_from_the_declaration() -> None:
    assert [artifact_of(s) for s in ("extract", "ocr", "chunk", "embed")] == [
        "pages.json",
        "pages-final.json",
        "chunks.json",
        "vectors.npy",
    ]
    with pytest.raises(ValueError, match="validate writes no artifact"):
        artifact_of("validate")
    assert pipeline.STAGE["index"].reads == ("chunk", "embed")
