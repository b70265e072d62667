"""Deterministic fakes for the tests that are not about what they replace.

`FakeEmbedder` stands in for the offline model in pipeline tests: it counts tokens with the model's own
tokenizer (so chunks keep their real sizes) but turns texts into vectors by hashing their tokens, which
costs microseconds instead of the model's tens of milliseconds a chunk.
tests/shared/embedders/test_embedder_contract.py holds it to the same behaviour as the real embedders.
Tests select it through settings: `Settings(embedder=FAKE_EMBEDDER)`, which worker processes started
by a test inherit as well.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
from tokenizers import Tokenizer

from shared.embedders.onnx_build import model_dir
from shared.embedders.onnx_graph import max_seq_length
from shared.settings import Settings

# The `embedder` setting that selects the fake (shared.embedders.make_embedder imports it by name).
FAKE_EMBEDDER = "tests.shared.embedders.fakes:FakeEmbedder"

# The tokenizer's [CLS] and [SEP]: every text is seen with both, so even an empty one has a vector.
_CLS, _SEP = 101, 102
# Each token adds +-1 at two coordinates picked by multiplicative hashing of its id.
_HASH_A, _HASH_B = 2_654_435_761, 40_503


@functools.cache
def _tokenizer() -> tuple[Tokenizer, int]:
    """The offline model's tokenizer (no truncation, no padding) and its window, loaded once."""
    source = model_dir()
    tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer, max_seq_length(source)


class FakeEmbedder:
    """A hashed bag of the model's tokens: deterministic, unit-length, and texts that share words
    point the same way, so searches over fake vectors still find the document they name.

    Like the offline model it truncates a text to its window (`max_tokens` tokens of its own).
    """

    model_name = "fake-hashed-tokens"
    dimension = 384

    def __init__(self) -> None:
        tokenizer, window = _tokenizer()
        self._tokenizer = tokenizer
        self.max_tokens = window - 2

    @classmethod
    def from_settings(cls, settings: Settings) -> FakeEmbedder:
        """The fake for any settings (the factory's hook for an embedder named `module:Class`)."""
        return cls()

    def count_tokens(self, text: str) -> int:
        """Number of the offline model's tokens in `text`, exactly as the real embedder counts them."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order, from the text's first `max_tokens` tokens."""
        return [self._vector(text).tolist() for text in texts]

    def _vector(self, text: str) -> np.ndarray:
        ids = self._tokenizer.encode(text, add_special_tokens=False).ids[: self.max_tokens]
        tokens = np.array([_CLS, *ids, _SEP], dtype=np.uint64)
        vector = np.zeros(self.dimension, dtype=np.float64)
        for multiplier in (_HASH_A, _HASH_B):
            hashed = tokens * np.uint64(multiplier)
            slots = (hashed >> np.uint64(7)) % np.uint64(self.dimension)
            signs = np.where(hashed & np.uint64(64), 1.0, -1.0)
            np.add.at(vector, slots.astype(np.intp), signs)
        norm = np.linalg.norm(vector)
        if norm == 0:  # every token cancelled out: unlikely, but a vector must still have unit length
            vector[0], norm = 1.0, 1.0
        return (vector / norm).astype(np.float32)
