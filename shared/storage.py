"""Object storage: one protocol, a local-directory implementation and an S3 (boto3) implementation.

Keys are derived from ids by the callers (never from client filenames); both implementations
translate their vendor errors into `StorageUnavailableError` / `ObjectNotFoundError`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Protocol

from shared.errors import ObjectNotFoundError, StorageUnavailableError
from shared.settings import Settings

COPY_BUFFER_BYTES = 1024 * 1024
# The pieces `stream` yields: small enough that a download holds little, large enough to be cheap.
STREAM_CHUNK_BYTES = 256 * 1024


class ObjectStorage(Protocol):
    """What the service needs from an object store."""

    def put_file(self, key: str, fileobj: BinaryIO, size: int | None = None) -> None:
        """Store a readable binary stream under `key`, streaming (never whole in memory); `size`,
        when the caller knows it, lets a small object go in one request."""

    def put_bytes(self, key: str, data: bytes) -> None:
        """Store a small value (an artifact) under `key`."""

    def get_bytes(self, key: str) -> bytes:
        """Read a whole object; `ObjectNotFoundError` when it does not exist."""

    def stream(self, key: str) -> Iterator[bytes]:
        """An object's bytes in pieces of at most STREAM_CHUNK_BYTES, never whole in memory. The object is
        opened now, so a missing one raises `ObjectNotFoundError` here rather than mid-stream; closing
        the iterator early releases the file or connection."""

    def download(self, key: str, path: str) -> None:
        """Copy an object to a local file, streaming."""

    def exists(self, key: str) -> bool:
        """True when `key` holds an object."""

    def delete(self, key: str) -> None:
        """Remove an object; removing a missing object is not an error."""

    def delete_prefix(self, prefix: str) -> None:
        """Remove every object whose key starts with `prefix`."""

    def check(self) -> None:
        """Raise `StorageUnavailableError` when the store cannot be used (readiness)."""


class LocalStorage:
    """Objects as files under one root directory (the embedded topology)."""

    def __init__(self, root: str) -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if self.root not in path.parents:
            raise ValueError(f"object key escapes the storage root: {key!r}")
        return path

    def put_file(self, key: str, fileobj: BinaryIO, size: int | None = None) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write beside the target and rename, so a reader never sees half an object.
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as tmp:
            shutil.copyfileobj(fileobj, tmp, COPY_BUFFER_BYTES)
        os.replace(tmp.name, path)

    def put_bytes(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as tmp:
            tmp.write(data)
        os.replace(tmp.name, path)

    def get_bytes(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError as exc:
            raise ObjectNotFoundError() from exc
        except OSError as exc:
            raise StorageUnavailableError() from exc

    def stream(self, key: str) -> Iterator[bytes]:
        try:
            handle = self._path(key).open("rb")
        except FileNotFoundError as exc:
            raise ObjectNotFoundError() from exc
        except OSError as exc:
            raise StorageUnavailableError() from exc
        return _pieces(handle)

    def download(self, key: str, path: str) -> None:
        try:
            shutil.copyfile(self._path(key), path)
        except FileNotFoundError as exc:
            raise ObjectNotFoundError() from exc

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def delete_prefix(self, prefix: str) -> None:
        base = self._path(prefix.rstrip("/")) if prefix.strip("/") else self.root
        if base.is_dir():
            shutil.rmtree(base)
        elif base.is_file():
            base.unlink()

    def check(self) -> None:
        if not os.access(self.root, os.W_OK):
            raise StorageUnavailableError()


def _pieces(handle: BinaryIO) -> Iterator[bytes]:
    with handle:
        while piece := handle.read(STREAM_CHUNK_BYTES):
            yield piece


def make_storage(settings: Settings) -> ObjectStorage:
    """The object store the settings name."""
    if settings.storage_backend == "local":
        return LocalStorage(settings.effective_storage_dir)
    if settings.storage_backend == "s3":
        from shared.s3_storage import S3Storage

        return S3Storage.from_settings(settings)
    raise ValueError(f"unknown INGEST_STORAGE_BACKEND {settings.storage_backend!r} (local or s3)")
