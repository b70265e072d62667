"""A webhook receiver for tests: an HTTP server on a thread that verifies every signature with the
`standardwebhooks` package, as a customer's receiver would, and answers as it is told."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    event: dict[str, Any] | None  # None when the signature did not verify
    at: float = 0.0  # when it arrived (time.time())


@dataclass
class Receiver:
    secrets: list[str]
    # Answers to give, in order; once used up, `then` for every request.
    script: list[int] = field(default_factory=list)
    then: int = 200
    redirect_to: str = ""
    received: list[Received] = field(default_factory=list)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self) -> int:
        with self.lock:
            return self.script.pop(0) if self.script else self.then

    def record(self, headers: dict[str, str], body: bytes) -> None:
        at = time.time()
        event = None
        for secret in self.secrets:
            try:
                event = Webhook(secret).verify(body, headers)
                break
            except WebhookVerificationError:
                continue
        with self.lock:
            self.received.append(Received(headers, body, event, at))

    @property
    def events(self) -> list[dict[str, Any]]:
        """Every request whose signature verified, as the parsed event, in the order received."""
        with self.lock:
            return [r.event for r in self.received if r.event is not None]


@contextmanager
def receiver(secrets: list[str], **options: Any) -> Iterator[Receiver]:
    """A running receiver at `receiver.url` (http://127.0.0.1:<port>/hook)."""
    state = Receiver(secrets=secrets, **options)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            state.record({k.lower(): v for k, v in self.headers.items()}, body)
            status = 302 if state.redirect_to else state.answer()
            self.send_response(status)
            if state.redirect_to:
                self.send_header("Location", state.redirect_to)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps({"ok": status < 300}).encode())

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
