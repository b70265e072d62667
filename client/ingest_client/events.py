"""Following a job: its server-sent event stream, resumed with Last-Event-ID after a cut, and polling of
the job when no stream can be had; progress updates until the job is final."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import httpx

from ingest_client.errors import ApiError, StreamError
from ingest_client.http import Http
from ingest_client.models import JobUpdate


@dataclass
class SseEvent:
    """One dispatched server-sent event."""

    id: str | None
    event: str
    data: str


def parse_sse(lines: Iterable[str]) -> Iterator[SseEvent | int]:
    """Events from the lines of a text/event-stream, and an int (milliseconds) for each `retry:` field."""
    event_id: str | None = None
    event_type, data = "", list[str]()
    for line in lines:
        if not line:
            if data:
                yield SseEvent(event_id, event_type or "message", "\n".join(data))
            event_type, data = "", list[str]()
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            event_type = value
        elif name == "id":
            event_id = value
        elif name == "retry" and value.isdigit():
            yield int(value)


class Follower:
    """Follows one job. `max_stream_failures` cuts in a row without a new event send it to polling."""

    def __init__(
        self,
        http: Http,
        job_id: str,
        *,
        poll_interval_s: float = 1.0,
        max_stream_failures: int = 5,
        timeout_s: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.http = http
        self.job_id = job_id
        self.poll_interval_s = poll_interval_s
        self.max_stream_failures = max_stream_failures
        self.deadline = None if timeout_s is None else time.monotonic() + timeout_s
        self.sleep = sleep
        self.last_seq = 0
        self.reconnect_s = 1.0
        self.done = False

    def updates(self) -> Iterator[JobUpdate]:
        """Each newer state of the job, once, in order, ending with its final one."""
        failures = 0
        while not self.done and failures < self.max_stream_failures:
            self._check_deadline()
            seen = self.last_seq
            # Cut off mid-stream, or a garbled event: resume after the last event kept.
            with contextlib.suppress(httpx.TransportError, StreamError, ValueError):
                yield from self._stream()
            if self.done:
                return
            failures = 0 if self.last_seq > seen else failures + 1
            self.sleep(min(self.reconnect_s, self.poll_interval_s * 5))
        if not self.done:
            yield from self._poll()

    def _check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise TimeoutError(f"job {self.job_id} is not final yet")

    def _keep(self, update: JobUpdate) -> bool:
        """True for a state newer than the last one handed out (events and polls can overlap)."""
        if update.seq <= self.last_seq:
            return False
        self.last_seq = update.seq
        self.done = update.terminal
        return True

    def _stream(self) -> Iterator[JobUpdate]:
        headers = {"Last-Event-ID": str(self.last_seq), "Accept": "text/event-stream"}
        timeout = httpx.Timeout(30.0, read=60.0)
        path = f"/v1/jobs/{self.job_id}/events"
        with self.http.client.stream("GET", path, headers=headers, timeout=timeout) as response:
            if response.status_code == 204:
                # Final, and nothing newer than what we hold: the job's own state says how it ended.
                update = JobUpdate(self.http.json("GET", f"/v1/jobs/{self.job_id}"))
                self.done = update.terminal
                if self.done:
                    yield update
                return
            if response.status_code == 404:
                response.read()
                self.http.json("GET", f"/v1/jobs/{self.job_id}")  # raises when the job itself is missing
                self.max_stream_failures = 0  # the job is there but the stream is not: poll instead
                return
            if response.status_code == 429:
                # The tenant holds as many streams as it may (other jobs followed at once): poll this one.
                response.read()
                self.max_stream_failures = 0
                return
            if response.status_code >= 500:
                # A proxy or an overloaded gateway: try the stream again, then poll.
                raise StreamError(f"event stream answered {response.status_code}")
            if response.is_error:
                response.read()
                raise ApiError.from_response(response)
            for item in parse_sse(response.iter_lines()):
                if isinstance(item, int):
                    self.reconnect_s = item / 1000
                    continue
                update = JobUpdate(json.loads(item.data).get("data") or {}, item.event)
                if self._keep(update):
                    yield update
                if self.done:
                    return

    def _poll(self) -> Iterator[JobUpdate]:
        while True:
            self._check_deadline()
            update = JobUpdate(self.http.json("GET", f"/v1/jobs/{self.job_id}"))
            if update.seq > self.last_seq or (update.terminal and not self.done):
                self.last_seq = max(self.last_seq, update.seq)
                self.done = update.terminal
                yield update
            if self.done:
                return
            self.sleep(self.poll_interval_s)
