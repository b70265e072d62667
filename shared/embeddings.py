"""The embedder protocol and the factory that picks an implementation from settings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from shared.settings import Settings


class Embedder(Protocol):
    """Turns texts into vectors. Implementations classify their own failures (shared.errors)."""

    model_name: str
    dimension: int
    # The model's window in its own tokens: no chunk may be longer.
    max_tokens: int

    def count_tokens(self, text: str) -> int:
        """Number of model tokens in `text` (without special tokens)."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order."""


def make_embedder(settings: Settings) -> Embedder:
    """The embedder the settings name; built once per process."""
    if settings.embedder == "local":
        from shared.local_embedder import LocalEmbedder

        return LocalEmbedder.from_settings(settings)
    if settings.embedder == "openai":
        from shared.openai_embedder import OpenAIEmbedder

        return OpenAIEmbedder.from_settings(settings)
    raise ValueError(f"unknown INGEST_EMBEDDER {settings.embedder!r} (expected 'local' or 'openai')")
