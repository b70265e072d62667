"""The embed stage's pure part: the chunks cut into the batches the embedder is called with."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from shared.artifacts import Chunk


@dataclass(frozen=True)
class EmbedBatch:
    """One call's worth of chunks: their texts, where their vectors go, and the tokens they count."""

    start: int
    texts: list[str]
    tokens: int


def embed_batches(chunks: list[Chunk], *, batch_size: int) -> Iterator[EmbedBatch]:
    """Consecutive batches of at most `batch_size` chunks, covering every chunk once, in order."""
    size = max(1, batch_size)
    for start in range(0, len(chunks), size):
        part = chunks[start : start + size]
        yield EmbedBatch(start, [c.text for c in part], sum(c.token_count for c in part))
