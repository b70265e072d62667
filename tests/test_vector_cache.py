"""The kept vectors of a test corpus (tests/support/vector_cache.py): the embedder's own, read back on a
later run, and replaced when the texts change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MODEL_CACHE_DIR
from tests.ingest_worker.stages.test_real_documents import _embedder
from tests.support.vector_cache import cached_vectors


def test_vectors_are_kept_read_back_and_replaced_when_the_texts_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a model cache folder holding the model (linked), and two texts
    cache = tmp_path / "models"
    cache.mkdir()
    for model in Path(MODEL_CACHE_DIR).glob("*.onnx"):
        (cache / model.name).symlink_to(model)
    embedder, texts = _embedder(), ["Heliotropes lean toward the sun.", "A second, unrelated sentence."]
    computed = embedder.embed(texts)

    # When the corpus is embedded, then the vectors are the embedder's, kept in one file
    assert cached_vectors(embedder, str(cache), "corpus", texts) == computed
    (kept,) = (cache / "test-vectors").glob("corpus-*.npy")

    # And a later run reads them back without embedding
    def refuse(_: Any) -> None:
        raise AssertionError("embedded again")

    with monkeypatch.context() as patched:
        patched.setattr(embedder, "embed", refuse)
        assert cached_vectors(embedder, str(cache), "corpus", texts) == computed

    # And changed texts are embedded anew, their file replacing the older one
    assert cached_vectors(embedder, str(cache), "corpus", texts[:1]) == embedder.embed(texts[:1])
    (replaced,) = (cache / "test-vectors").glob("corpus-*.npy")
    assert replaced.name != kept.name
