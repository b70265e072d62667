"""Cooperative cancellation at every stage boundary: the job ends `cancelled`, no later stage runs,
and none of its points remain. The stages are run one by one, as the pipeline would deliver them."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select, update

from ingest_worker import stage_io
from ingest_worker.actors import STAGE_POLICIES
from ingest_worker.actors import WORK as ACTOR_WORK
from ingest_worker.resources import Resources
from ingest_worker.runner import run_stage
from shared import job_stages, jobs, operations
from shared.errors import ConflictError
from shared.models import Job, JobStage
from shared.queue import HALT, STAGES
from shared.settings import Settings
from tests.support.databases import migrate_database
from tests.support.inprocess import create_document_job
from tests.support.pdfs import text_pdf

WORK = {stage: ACTOR_WORK[stage] for stage in STAGES}


def new_job(res: Resources) -> tuple[str, str]:
    return create_document_job(res, res.storage.get_bytes("doc.pdf"))


def run(res: Resources, job_id: str, stage: str) -> Any:
    return run_stage(
        res, job_id, stage, WORK[stage], policy=STAGE_POLICIES[stage][0], on_cancel=stage_io.delete_job_points
    )


@pytest.fixture
def res(settings: Settings) -> Any:
    migrate_database(settings.effective_database_url)
    resources = Resources(settings)
    resources.storage.put_bytes("doc.pdf", text_pdf(["Cancel me at any boundary. " * 40, "Page two. " * 40]))
    yield resources
    resources.vectors.close()


@pytest.mark.parametrize("cancel_after", STAGES[:-1])
def test_a_cancel_request_stops_the_job_at_the_next_stage_boundary(res: Resources, cancel_after: str) -> None:
    tenant_id, job_id = new_job(res)
    # Given a job that has run up to and including `cancel_after`
    for stage in STAGES[: STAGES.index(cancel_after) + 1]:
        assert run(res, job_id, stage) is None
    # When the client cancels it
    with res.db.transaction() as session:
        job = session.get(Job, job_id)
        assert job is not None
        assert operations.cancel_job(session, job).status == "cancel_requested"
    # Then the next stage does not run: the pipeline halts and the job is cancelled
    following = STAGES[STAGES.index(cancel_after) + 1]
    assert run(res, job_id, following) == HALT
    with res.db.transaction() as session:
        job = session.get(Job, job_id)
        assert job is not None and job.status == "cancelled"
        ran = set(session.scalars(select(JobStage.stage).where(JobStage.job_id == job_id)))
    assert ran == set(STAGES[: STAGES.index(cancel_after) + 1])
    # And any later delivery halts too, and the job left no points behind
    assert run(res, job_id, STAGES[-1]) == HALT
    store = res.vectors
    collection = store.collection(res.embedder.model_name, res.embedder.dimension)
    assert store.count(collection, tenant_id, job_id=job_id) == 0


def test_a_cancelled_queued_job_never_starts(res: Resources) -> None:
    _, job_id = new_job(res)
    with res.db.transaction() as session:
        job = session.get(Job, job_id)
        assert job is not None and operations.cancel_job(session, job).status == "cancelled"
    assert run(res, job_id, "validate") == HALT
    with res.db.transaction() as session:
        assert session.scalars(select(JobStage).where(JobStage.job_id == job_id)).first() is None


class CancellingEmbedder:
    """The real embedder, which asks for the job to be cancelled while embedding its first batch."""

    def __init__(self, inner: Any, res: Resources, job_id: str) -> None:
        self.inner, self.res, self.job_id = inner, res, job_id
        self.model_name, self.dimension, self.max_tokens = inner.model_name, inner.dimension, inner.max_tokens
        self.calls = 0

    def count_tokens(self, text: str) -> int:
        return int(self.inner.count_tokens(text))

    def embed(self, texts: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            with self.res.db.transaction() as session:
                job = session.get(Job, self.job_id)
                assert job is not None
                operations.cancel_job(session, job)
        return self.inner.embed(texts)


def test_a_cancel_is_seen_between_batches_inside_a_long_stage(res: Resources) -> None:
    # Given a job whose chunks take several embedding batches
    res.storage.put_bytes("doc.pdf", text_pdf([f"Page {n} of a long document. " * 60 for n in range(12)]))
    _, job_id = new_job(res)
    for stage in ("validate", "extract", "ocr", "chunk"):
        assert run(res, job_id, stage) is None
    embedder = CancellingEmbedder(res.embedder, res, job_id)
    res.__dict__["embedder"] = embedder
    res.__dict__["settings"] = res.settings.replace(embed_batch_size=4)
    # When the client cancels while the first batch is embedded
    assert run(res, job_id, "embed") == HALT
    # Then the stage stops at the next batch: the job is cancelled and embed never finished
    assert embedder.calls == 1
    with res.db.transaction() as session:
        job = session.get(Job, job_id)
        assert job is not None and job.status == "cancelled" and job.chunks > 4
        stage = session.get(JobStage, (job_id, "embed"))
        assert stage is not None and stage.status != "done"


def test_a_cancel_waits_for_the_worker_that_holds_the_job(res: Resources) -> None:
    _, job_id = new_job(res)
    assert run(res, job_id, "validate") is None
    # Given another worker in the middle of extract (it holds the job's lease) and a cancel request
    with res.db.transaction() as session:
        job_stages.claim_stage(session, job_id, "extract")
        jobs.start(session, job_id, "extract", lease_s=60)
    with res.db.transaction() as session:
        job = session.get(Job, job_id)
        assert job is not None and operations.cancel_job(session, job).status == "cancel_requested"
    # When a duplicate message for the job arrives elsewhere, then it leaves the job to its holder
    assert run(res, job_id, "extract") == HALT
    with res.db.transaction() as session:
        job = session.get(Job, job_id)
        assert job is not None and job.status == "cancel_requested" and job.lease_expires_at is not None
    # When the holder finishes its stage, it lets go, and the next boundary cancels the job
    with res.db.transaction() as session:
        assert jobs.advance(session, job_id, "extract") is None
    assert run(res, job_id, "ocr") == HALT
    with res.db.transaction() as session:
        job = session.get(Job, job_id)
        assert job is not None and job.status == "cancelled"


@pytest.mark.parametrize(("moved_to", "expected"), [("running", "cancel_requested"), ("completed", None)])
def test_a_cancel_that_races_a_worker_is_decided_on_the_job_as_it_is_now(
    res: Resources, moved_to: str, expected: str | None
) -> None:
    _tenant, job_id = new_job(res)
    # Given a client that read the job while it was queued
    with res.db.transaction() as session:
        job = session.get(Job, job_id)
        assert job is not None and job.status == "queued"
        # When a worker moves the job on before the cancel is written (the row changes, the client's
        # copy does not)
        moved = update(Job).where(Job.id == job_id).values(status=moved_to)
        session.execute(moved.execution_options(synchronize_session=False))
        assert job.status == "queued"
        # Then the cancel is decided again: a running job is asked to stop, a finished one refuses
        if expected is None:
            with pytest.raises(ConflictError) as refused:
                operations.cancel_job(session, job)
            assert refused.value.code == "job_not_cancellable"
        else:
            assert operations.cancel_job(session, job).status == expected
