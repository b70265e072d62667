"""Writing a new file past the page cache (O_DIRECT), where the filesystem allows it.

An upload is written once and read once, by a worker, a while later; copying it into the page
cache costs the gateway more CPU than anything else it does per upload (about 2.5 ms per MB here,
and the kernel's flusher threads pay again to write it back), while a direct write costs about a
tenth of that. Direct writes need a buffer, offset and length aligned to the device's block size:
the bytes are gathered in page-aligned buffers (reused from one file to the next, so their pages
are not faulted in again), written whole, and the last partial block is written through the page
cache once the flag is cleared. A filesystem that refuses the flag (tmpfs on older kernels, some
network filesystems) gets ordinary writes.
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import os

BUFFER_BYTES = 256 * 1024
# Every block size a Linux device may ask for divides the page size.
ALIGN_BYTES = mmap.PAGESIZE
# Idle buffers a process keeps for the next files (each BUFFER_BYTES).
KEEP_IDLE = 16
O_DIRECT = getattr(os, "O_DIRECT", 0)

_idle: list[mmap.mmap] = []


def _take_buffer() -> mmap.mmap:
    try:
        return _idle.pop()  # one step: two threads never take the same buffer
    except IndexError:
        return mmap.mmap(-1, BUFFER_BYTES)


def _give_back(buffer: mmap.mmap) -> None:
    if len(_idle) < KEEP_IDLE:
        _idle.append(buffer)
    else:
        buffer.close()


class DirectFileWriter:
    """Appends to the open file `fd`, directly where it can; `close()` writes the rest and closes
    `fd` (on error as well)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._direct = _set_direct(fd, True)
        self._buffer: mmap.mmap | None = _take_buffer() if self._direct else None
        self._filled = 0
        # Bytes of the buffer written to the file so far (the file's offset, without asking it).
        self._written = 0

    def write(self, data: bytes) -> None:
        if self._buffer is None:
            _write_all(self._fd, data)
            return
        view, buffer = memoryview(data), self._buffer
        while view:
            n = min(BUFFER_BYTES - self._filled, len(view))
            buffer[self._filled : self._filled + n] = view[:n]
            self._filled += n
            view = view[n:]
            if self._filled == BUFFER_BYTES:
                self._flush(BUFFER_BYTES)

    def close(self) -> None:
        """Write what is gathered (its aligned part directly, the tail through the page cache) and
        close the file."""
        try:
            if self._buffer is not None and self._filled:
                self._flush(self._filled - self._filled % ALIGN_BYTES)
                if self._filled:
                    self._buffered()
                    _write_all(self._fd, self._buffer[: self._filled])
        finally:
            self._release()
            os.close(self._fd)

    def discard(self) -> None:
        """Close the file without writing what is gathered."""
        self._release()
        os.close(self._fd)

    def _flush(self, length: int) -> None:
        """Write the buffer's first `length` bytes (aligned) and keep the rest at its start."""
        assert self._buffer is not None
        if not length:
            return
        chunk = memoryview(self._buffer)[:length]
        try:
            _write_all(self._fd, chunk)
        except OSError as exc:
            if not (self._direct and exc.errno == errno.EINVAL):
                raise
            # The filesystem took the flag but not the write: the rest (all of it, unless a direct
            # write went through before the refusal) through the page cache then.
            self._buffered()
            _write_all(self._fd, chunk[os.lseek(self._fd, 0, os.SEEK_CUR) - self._written :])
        finally:
            chunk.release()
        self._written += length
        rest = self._filled - length
        if rest:
            self._buffer.move(0, length, rest)
        self._filled = rest

    def _buffered(self) -> None:
        if self._direct:
            _set_direct(self._fd, False)
            self._direct = False

    def _release(self) -> None:
        buffer, self._buffer = self._buffer, None
        if buffer is not None:
            _give_back(buffer)


def _set_direct(fd: int, on: bool) -> bool:
    """Turn O_DIRECT on or off for `fd`; whether it is now on."""
    if not O_DIRECT:
        return False
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    try:
        fcntl.fcntl(fd, fcntl.F_SETFL, flags | O_DIRECT if on else flags & ~O_DIRECT)
    except OSError:
        return False
    return on


def _write_all(fd: int, data: bytes | memoryview | mmap.mmap) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    finally:
        view.release()
