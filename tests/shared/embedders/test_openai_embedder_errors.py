"""The OpenAI embedder's errors: rate limits, outages, unreadable answers are transient, refusals not."""

from __future__ import annotations

import email.utils
import logging
import re
import time
from typing import Any

import pytest

from shared.embedders.openai_api import OpenAIEmbedder
from shared.errors import EmbeddingRejectedError, EmbeddingUnavailableError, PermanentError, TransientError
from tests.support import openai_embedding, openai_server
from tests.support.openai_embedding import DIMENSIONS, KEY, embedder_for
from tests.support.openai_server import OpenAIServer

# The local OpenAI-compatible server, started for each test.
server = openai_embedding.server


# "{in 30 s}" becomes an HTTP date when the test runs, not when it is collected.
@pytest.mark.parametrize(
    ("kind", "headers", "options", "message", "wait"),
    [
        ("rate_limited", {"Retry-After": "7"}, {}, "HTTP 429", (7.0, 7.0)),
        ("rate_limited", {"Retry-After": "2", "retry-after-ms": "1500"}, {}, "HTTP 429", (1.5, 1.5)),
        ("rate_limited", {"Retry-After": "{in 30 s}"}, {}, "HTTP 429", (28.0, 30.0)),
        ("rate_limited", {}, {}, "HTTP 429", None),
        ("unavailable", {}, {}, "HTTP 503", None),
        ("html", {}, {}, "could not be read", None),
        ("wrong_shape", {}, {}, "could not be read", None),
        ("stall", {}, {"timeout_s": 0.3}, "unavailable", None),
    ],
    ids=["429-seconds", "429-ms", "429-date", "429", "503", "html", "wrong-shape", "timeout"],
)
def test_rate_limits_server_errors_timeouts_and_unreadable_answers_are_transient(
    server: OpenAIServer,
    kind: str,
    headers: dict[str, str],
    options: dict[str, Any],
    message: str,
    wait: tuple[float, float] | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a server that answers once with a 429 (with or without a wait), a 503, a 200 that is no
    # embeddings answer (a proxy's HTML page, JSON of another shape), or only after the client's timeout
    # (a stall of 4 s, far from the client's 0.3 s, so that giving up and waiting cannot be confused)
    monkeypatch.setattr(openai_server, "STALL_S", 4.0)
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    server.fail_next(kind, headers={k: v.replace("{in 30 s}", date) for k, v in headers.items()})
    embedder = embedder_for(server, **options)

    # When a text is embedded
    started = time.monotonic()
    with pytest.raises(EmbeddingUnavailableError, match=message) as caught:
        embedder.embed(["hello world"])

    # Then the error is transient, carries the server's wait, and the client did not retry by itself
    assert isinstance(caught.value, TransientError)
    waited = caught.value.retry_after_s
    assert waited is None if wait is None else wait[0] <= (waited or 0) <= wait[1]
    assert len(server.requests) == 1
    # Answered or given up on at once (0.3 s measured for the timeout), not after the 4 s stall
    assert time.monotonic() - started < 2.0

    # When the actor's retry comes, then it succeeds
    assert len(embedder.embed(["hello world"])) == 1


def test_a_refused_connection_is_transient() -> None:
    # Given the address of a server that has stopped
    with OpenAIServer() as stopped:
        pass

    # When a text is embedded through it, then the error is transient
    with pytest.raises(EmbeddingUnavailableError):
        OpenAIEmbedder(KEY, base_url=stopped.base_url).embed(["hello world"])


@pytest.mark.parametrize(
    ("key", "fault", "message"),
    [
        ("sk-wrong-9d8e7f6a5b", None, r"The embedding provider rejected the request \(HTTP 401\)\."),
        (KEY, "bad_request", r"The embedding provider rejected the request \(HTTP 400\)\."),
        (KEY, "wrong_dimension", rf"[^.]* vectors of dimension {DIMENSIONS + 1}, not {DIMENSIONS}\."),
    ],
    ids=["wrong-key", "bad-request", "wrong-dimension"],
)
def test_refusals_are_permanent_and_never_repeat_the_key(
    server: OpenAIServer, caplog: pytest.LogCaptureFixture, key: str, fault: str | None, message: str
) -> None:
    # Given a server whose error text quotes the key (a wrong key, or a 400 from a careless proxy),
    # or that answers with one dimension too many
    if fault:
        server.fail_next(fault)
    caplog.set_level(logging.DEBUG)

    # When a text is embedded
    with pytest.raises(EmbeddingRejectedError) as caught:
        embedder_for(server, api_key=key).embed(["hello world"])

    # Then the error is permanent, says what happened, and neither it nor our logs repeat the key
    assert isinstance(caught.value, PermanentError)
    assert re.fullmatch(message, caught.value.message)
    assert key not in f"{caught.value} {caught.value!r} {caught.value.message}"
    assert not any(key in r.getMessage() for r in caplog.records if r.name.startswith("shared."))
