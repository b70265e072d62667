"""Files written past the page cache: the same bytes as written, whatever the sizes and the pieces,
on a filesystem that takes O_DIRECT, one that refuses the flag, and one that takes the flag but not
the write (from the start, or after some blocks); buffers are reused from one file to the next."""

from __future__ import annotations

import errno
import fcntl
import os
import random
from pathlib import Path
from typing import Any

import pytest

from shared import direct_writes
from shared.direct_writes import ALIGN_BYTES, BUFFER_BYTES, DirectFileWriter

SIZES = [
    0,
    1,
    ALIGN_BYTES - 1,
    ALIGN_BYTES,
    ALIGN_BYTES + 1,
    BUFFER_BYTES - 1,
    BUFFER_BYTES,
    3 * BUFFER_BYTES + 17,
]


def write_file(path: Path, data: bytes, seed: int) -> None:
    rng = random.Random(seed)
    writer = DirectFileWriter(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    at = 0
    while at < len(data):
        n = rng.choice([1, 100, ALIGN_BYTES, BUFFER_BYTES + 5, 700_000])
        writer.write(data[at : at + n])
        at += n
    writer.close()


@pytest.mark.parametrize("size", SIZES)
def test_a_file_reads_back_as_written(tmp_path: Path, size: int) -> None:
    data = random.Random(size).randbytes(size)
    write_file(tmp_path / "f", data, seed=size)
    assert (tmp_path / "f").read_bytes() == data


def test_direct_writes_are_used_where_the_filesystem_takes_them(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT, 0o600)
    writer = DirectFileWriter(fd)
    # This filesystem (the suite's temporary folder) takes the flag: the writer gathers into a buffer
    assert writer._direct and writer._buffer is not None
    writer.close()


def test_a_filesystem_refusing_the_flag_gets_ordinary_writes(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(direct_writes, "_set_direct", lambda fd, on: False)
    data = random.Random(1).randbytes(2 * BUFFER_BYTES + 3)
    write_file(tmp_path / "f", data, seed=1)
    assert (tmp_path / "f").read_bytes() == data


@pytest.mark.parametrize("written_first", [0.0, 0.5], ids=["from-the-start", "half-way"])
def test_a_filesystem_refusing_the_direct_write_gets_the_rest_through_the_page_cache(
    tmp_path: Path, monkeypatch: Any, written_first: float
) -> None:
    real_write_all = direct_writes._write_all
    refused = []

    def write_all(fd: int, data: Any) -> None:
        if fcntl.fcntl(fd, fcntl.F_GETFL) & direct_writes.O_DIRECT:
            # Some aligned blocks may go through directly before the filesystem refuses the rest
            done = int(len(data) * written_first) // ALIGN_BYTES * ALIGN_BYTES
            real_write_all(fd, memoryview(data)[:done])
            refused.append(len(data) - done)
            raise OSError(errno.EINVAL, "Invalid argument")
        real_write_all(fd, data)

    monkeypatch.setattr(direct_writes, "_write_all", write_all)
    data = random.Random(2).randbytes(3 * BUFFER_BYTES + 5)
    write_file(tmp_path / "f", data, seed=2)
    # Then nothing is written twice or left out
    assert refused and (tmp_path / "f").read_bytes() == data


def test_buffers_are_reused_and_an_abandoned_file_writes_nothing(tmp_path: Path) -> None:
    first = DirectFileWriter(os.open(tmp_path / "a", os.O_WRONLY | os.O_CREAT, 0o600))
    buffer = first._buffer
    first.write(b"x" * 10)
    first.discard()
    second = DirectFileWriter(os.open(tmp_path / "b", os.O_WRONLY | os.O_CREAT, 0o600))
    assert buffer is not None and second._buffer is buffer
    second.close()
    assert (tmp_path / "a").read_bytes() == b"" and (tmp_path / "b").read_bytes() == b""
