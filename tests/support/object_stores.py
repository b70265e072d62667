"""Helpers for the storage tests: a reproducible non-seekable stream, and an S3Storage on a fresh bucket."""

from __future__ import annotations

import hashlib
import io
import random
import uuid

from shared.settings import Settings
from shared.storage.s3 import S3Storage
from tests.support.s3_server import S3ServerInfo


class PseudoRandomStream(io.RawIOBase):
    """A non-seekable stream of `size` reproducible bytes, generated as it is read."""

    def __init__(self, size: int, seed: int = 7) -> None:
        self._left = size
        self._random = random.Random(seed)
        self.sha256 = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        count = min(len(buffer), self._left)
        chunk = self._random.randbytes(count)
        buffer[:count] = chunk
        self.sha256.update(chunk)
        self._left -= count
        return count


def s3_storage(server: S3ServerInfo, **changes: str) -> S3Storage:
    settings = Settings(
        storage_backend="s3",
        s3_endpoint_url=server.endpoint_url,
        s3_bucket=f"contract-{uuid.uuid4().hex[:12]}",
        s3_access_key_id=server.access_key_id,
        s3_secret_access_key=server.secret_access_key,
    ).replace(**changes)
    return S3Storage.from_settings(settings)
