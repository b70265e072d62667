"""The embedder protocol, the factory that picks an implementation from settings, and the embedders
of other models (a tenant reindexed to another model keeps being served with it)."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from typing import Any, Protocol

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
    """The embedder the settings name; built once per process.

    Besides "local" and "openai", `embedder` may name a class as `package.module:Class` whose
    `from_settings(settings)` builds it (the tests' deterministic fake is selected so, in every
    process a test starts); its `model_name` and `dimension` are then class attributes."""
    if ":" in settings.embedder:
        return _embedder_class(settings.embedder).from_settings(settings)
    if settings.embedder == "local":
        from shared.embedders.local import LocalEmbedder

        return LocalEmbedder.from_settings(settings)
    if settings.embedder == "openai":
        from shared.embedders.openai_api import OpenAIEmbedder

        return OpenAIEmbedder.from_settings(settings)
    raise _unknown(settings.embedder)


# The offline model: its name is what reindexes and tenants record, its dimension is fixed.
LOCAL_MODEL = "all-MiniLM-L6-v2"
LOCAL_DIMENSION = 384


def settings_for_model(settings: Settings, model: str | None, dimension: int | None = None) -> Settings:
    """The settings whose embedder is `model` (at `dimension`): the offline model by its name, any other
    through the OpenAI-compatible provider these settings configure; `None` keeps the default."""
    if model is None:
        return settings
    if model == LOCAL_MODEL:
        if dimension not in (None, LOCAL_DIMENSION):
            raise ValueError(f"{LOCAL_MODEL} returns {LOCAL_DIMENSION} dimensions, not {dimension}")
        return settings.replace(embedder="local")
    return settings.replace(embedder="openai", openai_model=model, openai_dimensions=dimension or 0)


def model_spec(settings: Settings) -> tuple[str, int]:
    """(model, dimension) of the embedder the settings name, without loading it."""
    if ":" in settings.embedder:
        named = _embedder_class(settings.embedder)
        return named.model_name, named.dimension
    if settings.embedder == "local":
        return LOCAL_MODEL, LOCAL_DIMENSION
    if settings.embedder == "openai":
        from shared.embedders.openai_api import model_dimension

        return settings.openai_model, model_dimension(
            settings.openai_model, settings.openai_dimensions or None, settings.openai_max_tokens or None
        )
    raise _unknown(settings.embedder)


def _unknown(embedder: str) -> ValueError:
    return ValueError(
        f"unknown INGEST_EMBEDDER {embedder!r} (expected 'local', 'openai' or 'package.module:Class')"
    )


def _embedder_class(path: str) -> Any:
    """The class a `package.module:Class` setting names."""
    module, _, name = path.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"INGEST_EMBEDDER {path!r} names no importable class") from exc


class Embedders:
    """The default embedder and, built on first use and kept, those of other models."""

    def __init__(self, settings: Settings, default: Embedder | None = None) -> None:
        self.settings = settings
        self._default = default
        self._others: dict[tuple[str, int | None], Embedder] = {}
        self._lock = threading.Lock()

    @property
    def default(self) -> Embedder:
        with self._lock:
            if self._default is None:
                self._default = make_embedder(self.settings)
            return self._default

    def get(self, model: str | None = None, dimension: int | None = None) -> Embedder:
        """The embedder of `model` at `dimension` (the default one for `None` or its own model)."""
        if model is None:
            return self.default
        default_model, default_dimension = model_spec(self.settings)
        if model == default_model and dimension in (None, default_dimension):
            return self.default
        with self._lock:
            key = (model, dimension)
            if key not in self._others:
                self._others[key] = make_embedder(settings_for_model(self.settings, model, dimension))
            return self._others[key]
