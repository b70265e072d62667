"""Following a job with Client.wait: the event stream, its resumption after a cut, and polling."""

from __future__ import annotations

import httpx

from ingest_client import JobUpdate
from shared.settings import Settings
from tests.client.conftest import Served, serving
from tests.support.pdfs import text_pdf

PDF = text_pdf(["Quarterly revenue grew in every region. " * 20, "Payment terms are thirty days. " * 20])


def test_wait_follows_a_job_to_completion(served: Served) -> None:
    # Given an uploaded PDF
    with served.client(served.tenant_key()) as client:
        job_id = client.upload([("report.pdf", PDF)])[0].job_id
        assert job_id is not None

        # When the client follows its job
        updates = list(client.wait(job_id, timeout_s=60))

    # Then it sees each newer state once, in order, with growing progress, ending completed
    seqs = [u.seq for u in updates]
    assert seqs == sorted(set(seqs))
    assert [u.progress for u in updates] == sorted(u.progress for u in updates)
    assert updates[-1].status == "completed" and updates[-1].progress == 100
    assert updates[-1].job["counters"]["chunks"] >= 1
    assert all(not u.terminal for u in updates[:-1])
    assert {"job.started", "job.completed"} <= {u.event for u in updates}


def test_wait_resumes_a_cut_stream_with_last_event_id(stalled: Served) -> None:
    # Given a queued job (no workers) whose first event stream drops the connection after one event
    stalled.events.cut_after, stalled.events.cuts = 1, 1
    with stalled.client(stalled.tenant_key()) as client:
        job_id = client.upload([("report.pdf", PDF)])[0].job_id
        assert job_id is not None
        updates = client.wait(job_id, timeout_s=30)

        # When the client has the first event, the stream is cut, and the job is cancelled meanwhile
        first: JobUpdate = next(updates)
        client.cancel(job_id)
        rest = list(updates)

    # Then it reconnected over a new connection with the last seq it had, and saw the cancellation once
    assert first.status == "queued"
    assert stalled.events.last_event_ids[:2] == ["0", str(first.seq)]
    assert [u.status for u in rest] == ["cancelled"]
    assert rest[0].seq > first.seq


def test_wait_polls_the_job_when_the_stream_is_refused(served: Served) -> None:
    # Given a proxy in front of the service that refuses event streams (502)
    served.events.refuse = True
    with served.client(served.tenant_key()) as client:
        job_id = client.upload([("report.pdf", PDF)])[0].job_id
        assert job_id is not None

        # When the client follows the job
        updates = list(client.wait(job_id, timeout_s=60))

    # Then it tried the stream a few times, then polled the job to its end
    assert len(served.events.last_event_ids) >= 2
    assert updates[-1].status == "completed"
    assert all(u.event is None for u in updates)


def test_wait_polls_the_job_while_the_tenant_holds_every_stream(client_settings: Settings) -> None:
    # Given a tenant allowed one event stream, already open on another job
    with serving(client_settings.replace(events_max_streams_per_tenant=1)) as served:
        key = served.tenant_key()
        headers = {"Authorization": f"Bearer {key}"}
        with served.client(key) as client, httpx.Client(base_url=served.url, headers=headers) as other:
            held_id = client.upload([("held.pdf", PDF)])[0].job_id
            job_id = client.upload([("report.pdf", PDF)])[0].job_id
            assert held_id is not None and job_id is not None
            with other.stream("GET", f"/v1/jobs/{held_id}/events", timeout=30) as held:
                assert held.status_code == 200

                # When the client follows the second job (its stream answered 429)
                updates = list(client.wait(job_id, timeout_s=60))

    # Then it polled the job to its end instead of failing
    assert updates[-1].status == "completed"
    assert all(u.event is None for u in updates)


def test_wait_on_a_final_job_ends_with_its_state(served: Served) -> None:
    # Given a job that has already completed
    with served.client(served.tenant_key()) as client:
        job_id = client.upload([("report.pdf", PDF)])[0].job_id
        assert job_id is not None
        list(client.wait(job_id, timeout_s=60))

        # When the client follows it again
        updates = list(client.wait(job_id, timeout_s=10))

    # Then it replays the job's history and ends at once with the final state
    assert updates[-1].status == "completed"


def test_the_stream_parser_reads_fields_comments_and_retry() -> None:
    from ingest_client.events import SseEvent, parse_sse

    # Given a stream with a retry field, a comment, a two-line data field and an event without an id
    lines = ["retry: 2000", "", ": keep-alive", "id: 3", "event: job.started", "data: {", "data: }", ""]
    lines += ["data: plain", ""]

    # When it is parsed
    items = list(parse_sse(lines))

    # Then the retry is a number, comments are skipped, data lines join, and the last id carries over
    assert items == [2000, SseEvent("3", "job.started", "{\n}"), SseEvent("3", "message", "plain")]
