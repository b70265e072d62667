"""Object storage: one protocol (`protocol.py`), the local folder of the embedded topology
(`local.py`) and any S3 API server (`s3.py`, imported only when the settings name it)."""

from __future__ import annotations

from shared.settings import Settings
from shared.storage.local import LocalStorage
from shared.storage.parts import BufferedPartWriter
from shared.storage.protocol import STREAM_CHUNK_BYTES, ObjectStorage, ObjectWriter

__all__ = [
    "STREAM_CHUNK_BYTES",
    "BufferedPartWriter",
    "LocalStorage",
    "ObjectStorage",
    "ObjectWriter",
    "make_storage",
]


def make_storage(settings: Settings) -> ObjectStorage:
    """The object store the settings name."""
    if settings.storage_backend == "local":
        return LocalStorage(settings.effective_storage_dir)
    if settings.storage_backend == "s3":
        from shared.storage.s3 import S3Storage

        return S3Storage.from_settings(settings)
    raise ValueError(f"unknown INGEST_STORAGE_BACKEND {settings.storage_backend!r} (local or s3)")
