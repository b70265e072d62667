"""The embedded gateway's waitress server (pinned: waitress==3.0.2, whose channel and parser it
extends): its own refusals are problem+json with a stable code, as the gateway's, and a request that
announces a body over 64 KB, or sends a chunked one, is held at its headers until a gate lets it in.

Waitress reads a whole body before the application runs. The gate (deploy/body_gate.py: the gateway's
own key and upload-limit checks) runs on one of the server's threads, never on the thread that reads
sockets, while the connection's reading is paused. A request it refuses is answered at once (no
`100 Continue`) and its connection closed, the body unread; one it lets in is read up to the limit the
gate gave it (else the server's `max_request_body_size`), and a client that sent
`Expect: 100-continue` is told to go on only then. A chunked body, whose size nobody announced, is
held again where it passes its limit, and the gate, shown the size read so far, gives the refusal."""

from __future__ import annotations

import copy
import io
import json
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from waitress import create_server
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.task import ErrorTask, WSGITask
from waitress.utilities import BadRequest, Error, RequestEntityTooLarge

from deploy import lingering
from gateway.errors import CODE_FOR_HTTP_STATUS, problem_document

logger = logging.getLogger(__name__)

# A body up to this size is read before the application runs, as waitress always does: one over it
# waits for the gate (one socket read past the headers, at most 8 KB, is held meanwhile, and what of
# it lies past the body is read as the requests that follow).
GATED_ABOVE_BYTES = 64 * 1024
# A chunk's size line and the trailer are kept in memory (and copied at each read) until they end:
# longer ones are refused (gunicorn's bounds: its header field size, and 64 KB).
MAX_CHUNK_LINE_BYTES = 8190
MAX_TRAILER_BYTES = 64 * 1024

# The gate's refusal: the status line, headers and body of a whole answer.
Refusal = tuple[str, list[tuple[str, str]], bytes]
# The gate's word: a refusal; or, to let the request in, the most body bytes it may send (None: the
# server's max_request_body_size).
Verdict = Refusal | int | None
# Given the request's WSGI environ (its body not readable), its verdict.
Gate = Callable[[dict[str, Any]], Verdict]
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
    """Waitress's request parser that stops at the headers of a request with a large or chunked
    body: what arrives meanwhile is kept aside (`held`), and no 100 Continue is due until the gate
    lets it in; a chunked body is held again once it passes the limit the gate gave it."""

    held = False
    gated = False  # the gate has the request (held) now
    wants_continue = False
    aside = b""
    body_limit = sys.maxsize  # bytes of (decoded) body it may send
    over_limit = False

    def parse_header(self, header_plus: bytes) -> None:
        super().parse_header(header_plus)
        if self.chunked or self.content_length > GATED_ABOVE_BYTES:
            # The gate sets this body's limit: until then waitress's own check (against the
            # server's limit, which a tenant's own may exceed) stands aside.
            self.body_limit = self.adj.max_request_body_size
            self.adj = copy.copy(self.adj)
            self.adj.max_request_body_size = sys.maxsize

    def received(self, data: bytes) -> int:
        if self.held:
            self.aside += data
            return len(data)
        had_headers = self.headers_finished
        consumed: int = super().received(data)
        if not had_headers:
            body_follows = self.headers_finished and not self.completed
            if body_follows and (self.chunked or self.content_length > GATED_ABOVE_BYTES):
                self.held = True
                self.wants_continue, self.expect_continue = self.expect_continue, False
        elif self.chunked and not self.completed:
            body = self.body_rcv
            if len(body) > self.body_limit:
                self.held, self.over_limit = True, True
            elif len(body.control_line) > MAX_CHUNK_LINE_BYTES or len(body.trailer) > MAX_TRAILER_BYTES:
                self.error, self.completed = BadRequest("chunk size line or trailer too long"), True
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
        self._gate_if_held()
        return result

    def _gate_if_held(self) -> None:
        request = self.request
        if request is not None and request.held and not request.gated:
            request.gated = True
            self.server.add_task(_GateTask(self, request))

    def let_in(self, request: GatedParser, verdict: Verdict) -> None:
        """The gate's word on `request` (from a server thread): answer its refusal, or read on."""
        behind = b""  # what arrived past the body: the next pipelined requests
        with self.requests_lock:
            if self.request is not request or not self.connected:
                return
            request.held, request.gated = False, False
            aside, request.aside = request.aside, b""
            if isinstance(verdict, int):
                request.body_limit = verdict
            # Chunk framing may add as much again as the body (waitress's own check), no more.
            request.adj.max_request_body_size = 2 * request.body_limit + 1
            if isinstance(verdict, tuple):
                request.error, request.completed = RefusedByGateError(verdict), True
            elif request.over_limit or request.content_length > request.body_limit:
                # Past the limit, and the gate let it in all the same: waitress's own answer.
                error = RequestEntityTooLarge(f"exceeds the limit of {request.body_limit} bytes")
                request.error, request.completed = error, True
            elif aside:
                behind = aside[request.received(aside) :]
            if request.error is not None:
                self.refused = True
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
        else:
            self._gate_if_held()  # the part set aside took the body past its limit
        self.server.pull_trigger()


class _GateTask:
    """The gate's check of one held request, run as a task on the server's threads."""

    def __init__(self, channel: GatedChannel, request: GatedParser) -> None:
        self.channel, self.request = channel, request

    def service(self) -> None:
        verdict = None
        request = self.request
        if self.channel.connected:
            environ = WSGITask(self.channel, request).get_environment()
            environ["wsgi.input"] = io.BytesIO()
            if request.over_limit:  # the size it has reached, for the gate's limit check
                environ["CONTENT_LENGTH"] = str(len(request.body_rcv))
            try:
                verdict = self.channel.server.gate(environ)
            except Exception:
                # The application decides after the body, read up to the server's limit.
                logger.exception("the upload gate failed; the request is read up to the server's limit")
        self.channel.let_in(request, verdict)

    def cancel(self) -> None:
        """Nothing to undo when the server stops before the check ran."""


def make_server(app: Any, gate: Gate | None = None, **options: Any) -> Any:
    """A waitress server for `app` (options as waitress.serve's) that answers its own errors as
    problem+json and holds each large or chunked body for `gate` (none: every request is let in, up
    to `max_request_body_size`); `.run()` serves until interrupted."""
    server = create_server(app, **options)
    server.channel_class = GatedChannel
    server.gate = gate or (lambda environ: None)
    return server
