"""The offline embedder: all-MiniLM-L6-v2 as int8 ONNX on onnxruntime, with no torch and no download."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import onnxruntime as ort
from onnxruntime.capi import onnxruntime_pybind11_state as ort_state
from tokenizers import Tokenizer

from shared.embedders.onnx_build import build_model, model_dir
from shared.embedders.onnx_graph import MODEL_NAME, max_seq_length
from shared.errors import EmbeddingUnavailableError
from shared.settings import Settings

logger = logging.getLogger(__name__)

# [CLS] and [SEP] take two places of the model's window.
SPECIAL_TOKENS = 2


class LocalEmbedder:
    """Embeds texts with the int8 graph built by `shared.embedders.onnx_build`; safe to share between threads.

    `max_tokens` counts the text's own tokens: the window (sentence-transformers' max_seq_length, 256)
    minus [CLS] and [SEP], so 254. Longer texts are truncated to the window, as sentence-transformers does.
    """

    model_name = MODEL_NAME
    dimension = 384

    def __init__(
        self,
        model_path: str,
        tokenizer_path: str,
        *,
        window: int = 256,
        threads: int = 1,
        batch_size: int = 32,
    ) -> None:
        if threads < 1 or batch_size < 1:
            raise ValueError("threads and batch_size must be at least 1")
        self.max_tokens = window - SPECIAL_TOKENS
        self._batch_size = batch_size
        # tokenizer.json ships with truncation and padding to 128 switched on: both are set explicitly.
        self._counter = Tokenizer.from_file(tokenizer_path)
        self._counter.no_truncation()
        self._counter.no_padding()
        self._encoder = Tokenizer.from_file(tokenizer_path)
        self._encoder.enable_truncation(max_length=window)
        self._encoder.no_padding()  # each batch is padded to its own longest text below
        options = ort.SessionOptions()
        # onnxruntime takes every core by default; several worker processes would then fight over them.
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        # Idle threads would spin after each batch, taking CPU from OCR next door; measured: no speed cost.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])

    @classmethod
    def from_settings(cls, settings: Settings) -> LocalEmbedder:
        """The embedder for these settings, building the int8 model in the model cache folder if needed."""
        source = model_dir()
        return cls(
            build_model(settings.effective_model_cache_dir),
            str(source / "tokenizer.json"),
            window=max_seq_length(source),
            threads=settings.embed_threads,
            batch_size=settings.embed_batch_size,
        )

    def count_tokens(self, text: str) -> int:
        """Number of model tokens in `text`, without [CLS] and [SEP] and without truncation."""
        return len(self._counter.encode(text, add_special_tokens=False).ids)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length 384-d vector per text, in order; texts beyond the window are truncated."""
        if not texts:
            return []
        # One text at a time: encode_batch would start a thread pool on every core, outside the
        # thread budget and unsafe across fork; tokenizing is a fraction of a percent of the work.
        token_ids = [self._encoder.encode(text).ids for text in texts]
        # Texts of similar length share a batch, so little of each batch is padding.
        order = sorted(range(len(texts)), key=lambda i: len(token_ids[i]))
        vectors = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            vectors[rows] = self._run([token_ids[i] for i in rows])
        return vectors.tolist()

    def _run(self, batch: list[list[int]]) -> np.ndarray:
        width = max(len(ids) for ids in batch)
        input_ids = np.zeros((len(batch), width), dtype=np.int64)
        attention_mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            attention_mask[row, : len(ids)] = 1
        try:
            (embeddings,) = self._session.run(
                ["embeddings"], {"input_ids": input_ids, "attention_mask": attention_mask}
            )
        except (ort_state.Fail, ort_state.RuntimeException, MemoryError) as exc:
            # Most likely memory pressure: worth a retry later, unlike a rejected input.
            logger.error("local embedding of a batch of %s failed", len(batch), exc_info=True)
            raise EmbeddingUnavailableError("The local embedding model failed to run.") from exc
        return np.asarray(embeddings, dtype=np.float32)
