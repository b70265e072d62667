"""A small OpenAI-compatible embeddings server on 127.0.0.1: deterministic vectors, scripted faults."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import random
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

HOST = "127.0.0.1"
NATIVE_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
MAX_INPUTS = 2048
# Canned answers (status, content type, body); "{key}" in a body becomes the presented key, as a careless
# proxy might echo it.
CANNED: dict[str, tuple[int, str, object]] = {
    "rate_limited": (429, "application/json", {"error": {"message": "Rate limit reached"}}),
    "unavailable": (503, "application/json", {"error": {"message": "The server is overloaded"}}),
    "bad_request": (400, "application/json", {"error": {"message": "Bad input from key {key}"}}),
    "html": (200, "text/html", "<html><body>Proxy login</body></html>"),
    "wrong_shape": (200, "application/json", {"object": "list", "results": []}),
}
# Faults that change a real answer: one dimension too many, or an answer only after a stall.
FAULTS = frozenset(CANNED) | {"wrong_dimension", "stall"}
STALL_S = 1.0


@dataclass(frozen=True)
class RecordedRequest:
    """What one POST /v1/embeddings carried."""

    model: str
    inputs: list[str]
    dimensions: int | None
    encoding_format: str | None
    authorization: str


@dataclass
class _Script:
    faults: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)
    reverse_order: bool = False
    floats_only: bool = False
    # A share of all requests answered with one of these faults, drawn at random (a flaky provider).
    flaky_share: float = 0.0
    flaky_kinds: tuple[str, ...] = ()
    rng: random.Random = field(default_factory=lambda: random.Random(0))


def vector_for(model: str, text: str, dimension: int) -> list[float]:
    """The unit vector the server returns for `text`: seeded by a hash, so the same on every run."""
    seed = int.from_bytes(hashlib.sha256(f"{model}\0{text}".encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dimension).astype(np.float32)
    return (vector / np.linalg.norm(vector)).astype(np.float32).tolist()


class OpenAIServer:
    """Serves POST /v1/embeddings in a thread; use as a context manager and point `base_url` at it."""

    def __init__(self, api_key: str = "sk-test-key") -> None:
        self.api_key = api_key
        self._script = _Script()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((HOST, 0), _handler(self))
        self._thread = threading.Thread(target=self._serve, name="openai-server", daemon=True)

    @property
    def base_url(self) -> str:
        """The API root, as OpenAI's client expects it (ending in /v1)."""
        return f"http://{HOST}:{self._httpd.server_address[1]}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, faulted ones included."""
        with self._lock:
            return list(self._script.requests)

    def fail_next(self, kind: str, *, times: int = 1, headers: Mapping[str, str] | None = None) -> None:
        """Answer the next `times` requests with the fault `kind` (a key of FAULTS), adding `headers`."""
        if kind not in FAULTS:
            raise ValueError(f"unknown fault {kind!r}")
        with self._lock:
            self._script.faults.extend([(kind, dict(headers or {}))] * times)

    def fail_share(self, share: float, kinds: tuple[str, ...] = ("rate_limited", "unavailable")) -> None:
        """From now on answer about `share` of all requests with one of `kinds` (0 stops), at random."""
        if not all(kind in CANNED for kind in kinds) or not 0 <= share <= 1:
            raise ValueError(f"not a share of canned faults: {share}, {kinds}")
        with self._lock:
            self._script.flaky_share, self._script.flaky_kinds = share, kinds

    def answer_out_of_order(self) -> None:
        """List the vectors of each answer last to first (each keeps its `index`), as servers may."""
        with self._lock:
            self._script.reverse_order = True

    def answer_floats(self) -> None:
        """Send vectors as JSON floats whatever `encoding_format` asks, as some compatible servers do."""
        with self._lock:
            self._script.floats_only = True

    def _serve(self) -> None:
        # shutdown() waits for the next poll: the default half second would be paid by every test.
        self._httpd.serve_forever(poll_interval=0.02)

    def __enter__(self) -> OpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _respond(self, payload: Any, authorization: str) -> tuple[int, str, bytes, dict[str, str]]:
        """(status, content type, body, headers) for one request; records it first."""
        model, inputs = payload.get("model"), payload.get("input")
        inputs = [inputs] if isinstance(inputs, str) else inputs
        dimensions, encoding = payload.get("dimensions"), payload.get("encoding_format")
        with self._lock:
            self._script.requests.append(RecordedRequest(model, inputs, dimensions, encoding, authorization))
            kind, headers = self._script.faults.pop(0) if self._script.faults else ("", {})
            script = self._script
            if not kind and script.flaky_share and script.rng.random() < script.flaky_share:
                kind = script.rng.choice(script.flaky_kinds)
            reverse = self._script.reverse_order
            encoding = None if self._script.floats_only else encoding
        presented = authorization.removeprefix("Bearer ")
        if kind == "stall":
            time.sleep(STALL_S)
        elif kind in CANNED:
            status, content_type, body = CANNED[kind]
            text = body if isinstance(body, str) else json.dumps(body)
            return status, content_type, text.replace("{key}", presented).encode(), headers
        if presented != self.api_key:
            error = {"message": f"Incorrect API key provided: {presented}", "code": "invalid_api_key"}
            return 401, "application/json", _json({"error": error}), {}
        if not isinstance(inputs, list) or not 0 < len(inputs) <= MAX_INPUTS or not all(inputs):
            return 400, "application/json", _json({"error": {"message": "invalid input"}}), {}
        dimension = dimensions or NATIVE_DIMENSIONS.get(model, 384)
        if kind == "wrong_dimension":
            dimension += 1
        vectors = [_encode(vector_for(model, text, dimension), encoding) for text in inputs]
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        if reverse:
            data.reverse()
        tokens = sum(len(text.split()) for text in inputs)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        answer = {"object": "list", "data": data, "model": model, "usage": usage}
        return 200, "application/json", _json(answer), {}


def _encode(vector: list[float], encoding: str | None) -> str | list[float]:
    if encoding == "base64":
        return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode()
    return vector


def _json(value: object) -> bytes:
    return json.dumps(value).encode()


def _handler(server: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.rstrip("/") != "/v1/embeddings":
                self._send(404, "application/json", _json({"error": {"message": "not found"}}), {})
                return
            try:
                payload = json.loads(body)
            except ValueError:
                self._send(400, "application/json", _json({"error": {"message": "not JSON"}}), {})
                return
            self._send(*server._respond(payload, self.headers.get("Authorization", "")))

        def _send(self, status: int, content_type: str, body: bytes, headers: Mapping[str, str]) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            # A client that timed out has gone; there is nobody to tell.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
            pass  # silent, so test output shows only the tests

    return Handler
