"""The embedded gateway's waitress server (pinned: waitress==3.0.2, whose channel and parser it
extends): its own refusals are problem+json with a stable code, as the gateway's, and a request that
announces a body over 64 KB is held at its headers until a gate lets it in.

Waitress reads a whole body before the application runs. The gate (deploy/body_gate.py: the gateway's
own key and upload-limit checks) runs on one of the server's threads, never on the thread that reads
sockets, while the connection's reading is paused. A request it refuses is answered at once (no
`100 Continue`) and its connection closed, the body unread; one it lets in is read as before, and a
client that sent `Expect: 100-continue` is told to go on only then."""

from __future__ import annotations

import io
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from waitress import create_server
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.task import ErrorTask, WSGITask
from waitress.utilities import Error

from deploy import lingering
from gateway.errors import CODE_FOR_HTTP_STATUS, problem_document

logger = logging.getLogger(__name__)

# A body up to this size is read before the application runs, as waitress always does: one over it
# waits for the gate (one socket read past the headers, at most 8 KB, is held meanwhile, and what of
# it lies past the body is read as the requests that follow).
GATED_ABOVE_BYTES = 64 * 1024

# The gate's refusal: the status line, headers and body of a whole answer.
Refusal = tuple[str, list[tuple[str, str]], bytes]
# Given the request's WSGI environ (its body not readable), a refusal, or None to let it in.
Gate = Callable[[dict[str, Any]], Refusal | None]
# Headers the server writes itself (the connection closes after a refusal).
_OWN_HEADERS = {"content-length", "connection", "transfer-encoding"}


class RefusedByGateError(Error):  # type: ignore[misc]
    """A request the gate refused, carrying the gateway's own answer."""

    def __init__(self, refusal: Refusal) -> None:
        status, self.headers, payload = refusal
        code, _, self.reason = status.partition(" ")
        self.code = int(code)
        super().__init__(payload)


class ProblemErrorTask(ErrorTask):  # type: ignore[misc]
    """Waitress's error response, as an RFC 9457 problem document instead of plain text (or the
    gate's answer as the gateway rendered it)."""

    def execute(self) -> None:
        error = self.request.error
        self.status = f"{error.code} {error.reason}"
        if isinstance(error, RefusedByGateError):
            body = error.body
            self.response_headers.extend(h for h in error.headers if h[0].lower() not in _OWN_HEADERS)
        else:
            code = CODE_FOR_HTTP_STATUS.get(error.code, "http_error")
            body = json.dumps(problem_document(error.code, code, f"{error.reason}: {error.body}")).encode()
            self.response_headers.append(("Content-Type", "application/problem+json"))
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class GatedParser(HTTPRequestParser):  # type: ignore[misc]
    """Waitress's request parser that stops at the headers of a request with a large body: what
    arrives meanwhile is kept aside (`held`), and no 100 Continue is due until the gate lets it in."""

    held = False
    gated = False
    wants_continue = False
    aside = b""

    def received(self, data: bytes) -> int:
        if self.held:
            self.aside += data
            return len(data)
        had_headers = self.headers_finished
        consumed: int = super().received(data)
        body_follows = not had_headers and self.headers_finished and not self.completed
        if body_follows and (self.chunked or self.content_length > GATED_ABOVE_BYTES):
            self.held = True
            self.wants_continue, self.expect_continue = self.expect_continue, False
        return consumed


class GatedChannel(HTTPChannel):  # type: ignore[misc]
    """A connection whose large request bodies wait for the server's gate before they are read;
    after a refusal it lingers (deploy/lingering.py) before it closes."""

    error_task_class = ProblemErrorTask
    parser_class = GatedParser
    refused = False
    linger_until = 0.0

    def readable(self) -> bool:
        request = self.request
        held = request is not None and request.held
        return not (held or self.linger_until) and bool(super().readable())

    def writable(self) -> bool:
        if self.linger_until:
            return time.monotonic() >= self.linger_until or lingering.client_closed(self.socket)
        return bool(super().writable())

    def handle_write(self) -> None:
        if self.linger_until:
            self.linger_until = 0.0
            super().handle_close()
            return
        super().handle_write()

    def handle_close(self) -> None:
        if self.refused and not self.linger_until and self.connected and not self.total_outbufs_len:
            lingering.half_close(self.socket)
            self.will_close, self.linger_until = False, time.monotonic() + lingering.LINGER_S
            return
        self.linger_until = 0.0
        super().handle_close()

    def received(self, data: bytes) -> bool:
        result: bool = super().received(data)
        request = self.request
        if request is not None and request.held and not request.gated:
            request.gated = True
            self.server.add_task(_GateTask(self, request))
        return result

    def let_in(self, request: GatedParser, refusal: Refusal | None) -> None:
        """The gate's word on `request` (from a server thread): answer its refusal, or read on."""
        behind = b""  # what arrived past the body: the next pipelined requests
        with self.requests_lock:
            if self.request is not request or not self.connected:
                return
            request.held = False
            aside, request.aside = request.aside, b""
            if refusal is not None:
                request.error, request.completed = RefusedByGateError(refusal), True
                self.refused = True
            elif aside:
                behind = aside[request.received(aside) :]
            if request.completed:
                self.request, self.sent_continue = None, False
                self.requests.append(request)
                if len(self.requests) == 1:
                    self.server.add_task(self)
            elif request.wants_continue:
                request.expect_continue = True
                if not self.requests and not self.sent_continue:
                    self.send_continue()
        if behind:
            self.received(behind)
        self.server.pull_trigger()


class _GateTask:
    """The gate's check of one held request, run as a task on the server's threads."""

    def __init__(self, channel: GatedChannel, request: GatedParser) -> None:
        self.channel, self.request = channel, request

    def service(self) -> None:
        refusal = None
        if self.channel.connected:
            environ = WSGITask(self.channel, self.request).get_environment()
            environ["wsgi.input"] = io.BytesIO()
            try:
                refusal = self.channel.server.gate(environ)
            except Exception:
                # The application decides after the body, as without a gate.
                logger.exception("the upload gate failed; the request is read whole")
        self.channel.let_in(self.request, refusal)

    def cancel(self) -> None:
        """Nothing to undo when the server stops before the check ran."""


def make_server(app: Any, gate: Gate | None = None, **options: Any) -> Any:
    """A waitress server for `app` (options as waitress.serve's) that answers its own errors as
    problem+json and holds each large body for `gate` (none: every request is let in); `.run()`
    serves until interrupted."""
    server = create_server(app, **options)
    server.channel_class = GatedChannel
    server.gate = gate or (lambda environ: None)
    return server
