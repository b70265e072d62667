"""The service wired in this process (gateway and worker threads) behind a real HTTP server on a free
port, for the client to talk to over a socket; and a filter in front of the event stream that can cut
it or refuse it, and notes each request's Last-Event-ID."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from werkzeug.serving import make_server

from ingest_client import Client
from shared.settings import Settings
from tests.conftest import admin_key, tenant_key
from tests.support.inprocess import InProcess, in_process_service


class StreamCutError(RuntimeError):
    """Raised inside a response: the server drops the connection mid-stream."""


@dataclass
class EventStreamFilter:
    """WSGI middleware in front of /v1/jobs/<id>/events. `cut_after` events cuts the first `cuts`
    streams after that many events; `refuse` answers 502 instead of streaming."""

    app: Callable[..., Iterable[bytes]]
    cut_after: int = 0
    cuts: int = 0
    refuse: bool = False
    last_event_ids: list[str | None] = field(default_factory=list)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not environ.get("PATH_INFO", "").endswith("/events"):
            return self.app(environ, start_response)
        self.last_event_ids.append(environ.get("HTTP_LAST_EVENT_ID"))
        if self.refuse:
            start_response("502 Bad Gateway", [("Content-Type", "text/plain")])
            return [b"bad gateway"]
        body = self.app(environ, start_response)
        if self.cuts > 0 and self.cut_after > 0:
            self.cuts -= 1
            return self._cut(body)
        return body

    def _cut(self, body: Iterable[bytes]) -> Iterator[bytes]:
        sent = 0
        try:
            for chunk in body:
                yield chunk
                sent += chunk.count(b"\nid: ") + chunk.startswith(b"id: ")
                if sent >= self.cut_after:
                    raise StreamCutError("the connection drops")
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()


@dataclass
class Served:
    """A running service: its address, the in-process parts, the event stream's filter and keys."""

    url: str
    service: InProcess
    events: EventStreamFilter

    def client(self, key: str, **options: Any) -> Client:
        options.setdefault("poll_interval_s", 0.1)
        return Client(self.url, key, **options)

    def tenant_key(self, name: str = "acme") -> str:
        return tenant_key(self.service.app, name)

    def admin_key(self) -> str:
        return admin_key(self.service.app)


@contextmanager
def serving(settings: Settings, *, worker: bool = True) -> Iterator[Served]:
    """The service on 127.0.0.1 at a free port, one thread per request as a real gateway has."""
    with in_process_service(settings, worker=worker) as service:
        events = EventStreamFilter(service.app.wsgi_app)
        service.app.wsgi_app = events  # type: ignore[method-assign]
        server = make_server("127.0.0.1", 0, service.app, threaded=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield Served(f"http://127.0.0.1:{server.server_port}", service, events)
        finally:
            server.shutdown()
            server.server_close()


@pytest.fixture
def client_settings(settings: Settings) -> Settings:
    """The embedded topology (SQLite, fake embedder) with a quick event stream."""
    return settings.replace(events_poll_s=0.05)


@pytest.fixture
def served(client_settings: Settings) -> Iterator[Served]:
    """The service with worker threads: jobs run to their end."""
    with serving(client_settings) as running:
        yield running


@pytest.fixture
def stalled(client_settings: Settings) -> Iterator[Served]:
    """The service without workers: jobs stay queued until cancelled."""
    with serving(client_settings, worker=False) as running:
        yield running
