"""The one runner, driven with a unit of work of the test's own: its gate, its stop checks and the one
ladder that every way a unit can stop goes down (a whole stage and an OCR range are such units)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dramatiq
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from ingest_worker.failures import RetryPolicy
from ingest_worker.pipeline_errors import JobCancelledError
from ingest_worker.resources import Resources
from ingest_worker.runner import Claim, JobEndedError, run
from shared import jobs
from shared.errors import DatabaseUnavailableError, PermanentError, StaleTransitionError
from shared.jobs import ACTIVE
from shared.models import DeadLetter, Job, Tenant, TenantStatus
from shared.queue import HALT
from shared.settings import Settings
from tests.support.databases import migrate_database
from tests.support.inprocess import create_document_job
from tests.support.pdfs import text_pdf

NO_RETRIES = RetryPolicy(0, 1, 1, outage_retries=0)
OUTAGE_RETRIES_ONLY = RetryPolicy(0, 1, 1, outage_retries=3)
ONE_RETRY = RetryPolicy(1, 1, 1, outage_retries=0)


class Unit:
    """A unit that claims the job like a stage and runs `body`; it records what the runner asked."""

    stage = "validate"
    runs_in = ACTIVE

    def __init__(
        self,
        job_id: str,
        body: Callable[[Resources], Any],
        claim: Claim = Claim.RUN,
        *,
        fails: dict[str, BaseException] | None = None,
    ) -> None:
        self.job_id, self.body, self.claim_result = job_id, body, claim
        self.calls: list[str] = []
        self.fails = fails or {}  # a step that raises, by name, after it is recorded

    def _step(self, name: str) -> None:
        self.calls.append(name)
        if name in self.fails:
            raise self.fails[name]

    def __str__(self) -> str:
        return "test unit"

    def claim(self, res: Resources, session: Session, job: Job) -> Claim:
        self._step("claim")
        if self.claim_result is Claim.RUN:
            jobs.start(session, job.id, self.stage, lease_s=60)
        return self.claim_result

    def renew(self, session: Session, lease_s: float) -> bool:
        return True

    def work(self, res: Resources) -> Any:
        self.calls.append("work")
        return self.body(res)

    def release(self, res: Resources) -> None:
        self._step("release")

    def finish(self, res: Resources, result: Any) -> str | None:
        self._step("finish")
        return None


@pytest.fixture
def res(settings: Settings) -> Any:
    migrate_database(settings.effective_database_url)
    resources = Resources(settings)
    yield resources
    resources.vectors.close()


def job_of(res: Resources, job_id: str) -> Job:
    with res.db.transaction() as session:
        job = session.get(Job, job_id)
        assert job is not None
        session.expunge(job)
        return job


def cancelled_meanwhile(job_id: str) -> Callable[[Resources], Any]:
    def body(res: Resources) -> Any:
        with res.db.transaction() as session:
            jobs.request_cancel(session, job_id)
        raise JobCancelledError()

    return body


def failed_meanwhile(job_id: str) -> Callable[[Resources], Any]:
    def body(res: Resources) -> Any:
        with res.db.transaction() as session:
            jobs.fail(session, job_id, PermanentError("Another part failed.", code="other_part"))
        raise JobEndedError()

    return body


def raises(exc: BaseException) -> Callable[[Resources], Any]:
    def body(res: Resources) -> Any:
        raise exc

    return body


@pytest.mark.parametrize(
    ("name", "status", "error_code", "cleaned_up"),
    [
        ("cancelled", "cancelled", None, True),
        ("ended", "failed", "other_part", False),
        ("permanent", "failed", "bad_input", False),
        ("transient, last attempt", "dead_lettered", "internal_error", False),
    ],
)
def test_every_way_a_unit_stops_gives_it_back_once_and_settles_the_job(
    res: Resources, name: str, status: str, error_code: str | None, cleaned_up: bool
) -> None:
    # Given a queued job and a unit whose work stops in one of the ways work can stop
    _, job_id = create_document_job(res, text_pdf(["Runner."]))
    body = {
        "cancelled": cancelled_meanwhile(job_id),
        "ended": failed_meanwhile(job_id),
        "permanent": raises(PermanentError("Bad input.", code="bad_input")),
        "transient, last attempt": raises(RuntimeError("boom")),
    }[name]
    unit, cleanups = Unit(job_id, body), []
    # When the runner runs it
    result = run(res, unit, policy=NO_RETRIES, on_cancel=lambda _res, job: cleanups.append(job))
    # Then the pipeline stops, the unit is given back once and never finished, and the job settles
    assert result == HALT
    assert unit.calls == ["claim", "work", "release"]
    job = job_of(res, job_id)
    assert (job.status, job.error_code) == (status, error_code)
    assert cleanups == ([job_id] if cleaned_up else [])
    with res.db.transaction() as session:
        letters = session.scalars(select(DeadLetter.stage).where(DeadLetter.job_id == job_id)).all()
    assert list(letters) == (["validate"] if status == "dead_lettered" else [])


def test_a_transient_failure_with_retries_left_marks_the_job_retrying_and_retries(res: Resources) -> None:
    # Given a unit whose work fails on an unknown error, with a retry left
    _, job_id = create_document_job(res, text_pdf(["Runner."]))
    unit = Unit(job_id, raises(RuntimeError("boom")))
    # When the runner runs it, then it asks Dramatiq for a retry
    with pytest.raises(dramatiq.Retry):
        run(res, unit, policy=ONE_RETRY, on_cancel=lambda _res, _job: None)
    # And the unit was given back, the job is retrying with the classified error
    assert unit.calls == ["claim", "work", "release"]
    job = job_of(res, job_id)
    assert (job.status, job.error_code) == ("retrying", "internal_error")


@pytest.mark.parametrize(
    ("step", "calls"),
    [("claim", ["claim"]), ("finish", ["claim", "work", "finish", "release"])],
)
def test_a_database_lost_during_the_claim_or_the_finish_is_retried_like_the_work(
    res: Resources, step: str, calls: list[str]
) -> None:
    # Given a unit whose claim's transaction or whose finish loses the database (an outage: only the
    # outage retries are left), and whose giving back fails too
    _, job_id = create_document_job(res, text_pdf(["Runner."]))
    lost = DatabaseUnavailableError()
    unit = Unit(job_id, lambda _res: "done", fails={step: lost, "release": lost})
    # When the runner runs it, then the failure goes down the one classification: a retry with
    # backoff, neither raised as it was nor dead-lettered
    with pytest.raises(dramatiq.Retry) as retry:
        run(res, unit, policy=OUTAGE_RETRIES_ONLY, on_cancel=lambda _res, _job: None)
    assert retry.value.delay is not None and retry.value.delay >= 0
    assert unit.calls == calls
    with res.db.transaction() as session:
        assert session.scalars(select(DeadLetter).where(DeadLetter.job_id == job_id)).first() is None


def test_a_job_that_changed_state_as_its_unit_finished_is_left_to_the_next_delivery(res: Resources) -> None:
    # Given a unit whose finish finds the job in another state (a cancel request as the last stage ends)
    _, job_id = create_document_job(res, text_pdf(["Runner."]))
    unit = Unit(job_id, lambda _res: "done", fails={"finish": StaleTransitionError()})
    # When the runner runs it, then the error goes on to Dramatiq, whose next delivery settles the job
    # from its new state, and the job is not failed here
    with pytest.raises(StaleTransitionError):
        run(res, unit, policy=NO_RETRIES, on_cancel=lambda _res, _job: None)
    assert unit.calls == ["claim", "work", "finish"]
    assert job_of(res, job_id).status == "running"


@pytest.mark.parametrize(("claim", "expected"), [(Claim.DROP, HALT), (Claim.HAND_ON, None)])
def test_a_unit_not_claimed_is_never_run(res: Resources, claim: Claim, expected: str | None) -> None:
    # Given a unit that is done or held elsewhere
    _, job_id = create_document_job(res, text_pdf(["Runner."]))
    unit = Unit(job_id, raises(AssertionError("must not run")), claim=claim)
    # When the runner runs it, then it drops the message or hands the job on, without running it
    assert run(res, unit, policy=NO_RETRIES, on_cancel=lambda _res, _job: None) == expected
    assert unit.calls == ["claim"]
    assert job_of(res, job_id).status == "queued"


def test_a_stop_at_the_boundary_fails_the_job_before_the_unit_is_claimed(res: Resources) -> None:
    # Given a job whose tenant was suspended
    tenant_id, job_id = create_document_job(res, text_pdf(["Runner."]))
    with res.db.transaction() as session:
        tenant = session.get(Tenant, tenant_id)
        assert tenant is not None
        tenant.status = TenantStatus.SUSPENDED.value
    unit = Unit(job_id, raises(AssertionError("must not run")))
    # When the runner runs a unit of it
    assert run(res, unit, policy=NO_RETRIES, on_cancel=lambda _res, _job: None) == HALT
    # Then the job failed with the stop's code and the unit was not even claimed
    assert unit.calls == []
    job = job_of(res, job_id)
    assert (job.status, job.error_code) == ("failed", "tenant_suspended")


def test_a_final_job_runs_nothing(res: Resources) -> None:
    # Given a job that is already final
    _, job_id = create_document_job(res, text_pdf(["Runner."]))
    with res.db.transaction() as session:
        jobs.cancel_queued(session, job_id)
    unit = Unit(job_id, raises(AssertionError("must not run")))
    # When a unit of it is delivered, then nothing runs and the job stays as it is
    assert run(res, unit, policy=NO_RETRIES, on_cancel=lambda _res, _job: None) == HALT
    assert unit.calls == []
    assert job_of(res, job_id).status == "cancelled"
