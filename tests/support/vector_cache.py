"""The offline model's vectors for a fixed corpus, kept between runs in the model cache folder.

Embedding the real documents' thousand chunks takes about a minute on one core, and gives the same
vectors on every run with the same model file, the same texts and the same CPU features (the int8
kernels onnxruntime picks depend on them): they are kept under a digest of those three, where CI keeps
the model itself.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from shared.embedders.local import LocalEmbedder
from shared.embedders.onnx_build import build_model, cpu_features


def cached_vectors(
    embedder: LocalEmbedder, cache_dir: str, corpus: str, texts: Sequence[str]
) -> list[list[float]]:
    """`embedder.embed(texts)`, read from `cache_dir` when a run with the same model, CPU and texts
    kept it; an older file of the same `corpus` is replaced."""
    digest = hashlib.sha256(Path(build_model(cache_dir)).read_bytes())
    digest.update(cpu_features().encode())
    for text in texts:
        digest.update(hashlib.sha256(text.encode()).digest())
    folder = Path(cache_dir) / "test-vectors"
    path = folder / f"{corpus}-{digest.hexdigest()[:16]}.npy"
    if path.is_file():
        return np.load(path).tolist()
    vectors = embedder.embed(texts)
    folder.mkdir(parents=True, exist_ok=True)
    for older in folder.glob(f"{corpus}-*.npy"):
        older.unlink(missing_ok=True)
    scratch = path.with_suffix(f".{os.getpid()}.tmp")
    with scratch.open("wb") as file:
        np.save(file, np.asarray(vectors, dtype=np.float32))
    os.replace(scratch, path)
    return vectors
