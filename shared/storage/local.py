"""Objects as files under one root folder: the embedded topology's object store."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from shared.errors import ObjectNotFoundError, StorageUnavailableError
from shared.storage.protocol import STREAM_CHUNK_BYTES, ObjectWriter

COPY_BUFFER_BYTES = 1024 * 1024
# A local writer's temporary file, beside its object until it is renamed over it.
PARTIAL_PREFIX = ".partial-"


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

    def writer(self, key: str) -> ObjectWriter:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        return LocalObjectWriter(path)

    def put_file(self, key: str, fileobj: BinaryIO, size: int | None = None) -> None:
        self._put(key, iter(functools.partial(fileobj.read, COPY_BUFFER_BYTES), b""))

    def put_bytes(self, key: str, data: bytes) -> None:
        self._put(key, [data])

    def _put(self, key: str, pieces: Iterable[bytes]) -> None:
        writer = self.writer(key)
        try:
            for piece in pieces:
                writer.write(piece)
        except BaseException:
            writer.abort()
            raise
        writer.commit()

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

    def sweep_partials(self, older_than_s: float) -> int:
        """Remove the temporary files of writers that never committed or aborted (a process killed
        mid-upload) once they are older than `older_than_s`; returns how many."""
        cutoff = time.time() - older_than_s
        removed = 0
        for path in self.root.rglob(f"{PARTIAL_PREFIX}*"):
            try:
                if path.is_file() and path.stat().st_mtime < cutoff:
                    path.unlink()
                    removed += 1
            except FileNotFoundError:
                continue  # committed or aborted meanwhile
        return removed


class LocalObjectWriter:
    """A temporary file beside the target, renamed over it on commit (a reader never sees half an
    object) and removed on abort.

    Written through the page cache. Writes past it (O_DIRECT) cost less CPU, but a direct write waits
    for the device, and under the gateway's gevent workers that wait stops every request of the
    process: measured with the peer bench (ROUNDS=2, 1 MB uploads), buffered writes took the accept
    path from 101 to 131 uploads/s at 8 clients and from 106 to 132 at 32."""

    def __init__(self, path: Path) -> None:
        self._path = path
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=PARTIAL_PREFIX)
        self._tmp_path = Path(name)
        self._file: BinaryIO | None = os.fdopen(fd, "wb")

    def write(self, data: bytes) -> None:
        assert self._file is not None, "write after commit or abort"
        self._file.write(data)

    def commit(self) -> None:
        assert self._file is not None, "commit after commit or abort"
        file, self._file = self._file, None
        try:
            file.close()
        except BaseException:
            self._tmp_path.unlink(missing_ok=True)
            raise
        os.replace(self._tmp_path, self._path)

    def abort(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            file.close()
            self._tmp_path.unlink(missing_ok=True)


def _pieces(handle: BinaryIO) -> Iterator[bytes]:
    with handle:
        while piece := handle.read(STREAM_CHUNK_BYTES):
            yield piece
