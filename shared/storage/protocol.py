"""What the service needs from an object store, whichever it is: the protocols both stores meet.

Keys are derived from ids by the callers (never from client filenames); every store translates its
vendor errors into `StorageUnavailableError` / `ObjectNotFoundError`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO, Protocol

# The pieces `stream` yields: small enough that a download holds little, large enough to be cheap.
STREAM_CHUNK_BYTES = 256 * 1024


class ObjectWriter(Protocol):
    """An object written as its bytes arrive: nothing is visible under its key until `commit`."""

    def write(self, data: bytes) -> None:
        """Append bytes to the object."""

    def commit(self) -> None:
        """Make the object visible under its key, whole."""

    def abort(self) -> None:
        """Drop what was written, leaving no object; after a commit, or twice, it does nothing."""


class ObjectStorage(Protocol):
    """What the service needs from an object store."""

    def writer(self, key: str) -> ObjectWriter:
        """A writer for a new object under `key`, fed piece by piece (never whole on disk twice)."""

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
