"""The OpenAI embedder's test setup: a local server, an embedder using it, the vectors it should return."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from shared.embedders.openai_api import OpenAIEmbedder
from tests.support.openai_server import OpenAIServer, vector_for

KEY = "sk-test-4f1c9e2a7b"
MODEL = "text-embedding-3-small"
DIMENSIONS = 8


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(api_key=KEY) as running:
        yield running


def embedder_for(server: OpenAIServer, api_key: str = KEY, **options: Any) -> OpenAIEmbedder:
    """An embedder of shortened text-embedding-3-small vectors, talking to the local server."""
    settings: dict[str, Any] = {"dimensions": DIMENSIONS, "base_url": server.base_url, **options}
    return OpenAIEmbedder(api_key, **settings)


def expected(texts: list[str]) -> np.ndarray:
    return np.array([vector_for(MODEL, text, DIMENSIONS) for text in texts])
