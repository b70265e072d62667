"""An object written in memory-bounded parts, for a store that takes an object whole or as a multipart
upload (S3)."""

from __future__ import annotations

from typing import Protocol


class PartSink(Protocol):
    """The requests a `BufferedPartWriter` makes of a store that takes an object whole or in parts."""

    def put(self, data: bytes) -> None:
        """Store the whole object in one request."""

    def part(self, data: bytes) -> None:
        """Send the next part of a multipart upload (started by the first part)."""

    def complete(self) -> None:
        """Assemble the parts sent into the object."""

    def abort(self) -> None:
        """Drop the parts sent, if any."""


class BufferedPartWriter:
    """Holds an object in memory up to `part_bytes` and stores it in one request on commit; beyond
    that, sends it in parts of `part_bytes` as they fill (the last one on commit), so memory stays
    at about one part whatever the object's size."""

    def __init__(self, sink: PartSink, part_bytes: int) -> None:
        self._sink = sink
        self._part_bytes = part_bytes
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._parted = False
        self._open = True

    def write(self, data: bytes) -> None:
        assert self._open, "write after commit or abort"
        self._pending.append(data)
        self._pending_bytes += len(data)
        if self._pending_bytes > self._part_bytes:
            # Keep at least one byte back: the last part is sent on commit, never empty.
            data, start = b"".join(self._pending), 0
            while len(data) - start > self._part_bytes:
                self._sink.part(data[start : start + self._part_bytes])
                start += self._part_bytes
            self._parted = True
            self._pending, self._pending_bytes = [data[start:]], len(data) - start

    def commit(self) -> None:
        assert self._open, "commit after commit or abort"
        data, self._pending = b"".join(self._pending), []
        if self._parted:
            self._sink.part(data)
            self._sink.complete()
        else:
            self._sink.put(data)
        self._open = False

    def abort(self) -> None:
        if self._open:
            self._open, self._pending = False, []
            if self._parted:
                self._sink.abort()
