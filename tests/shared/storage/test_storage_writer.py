"""The ObjectWriter contract (an object written as its bytes arrive, visible only once committed),
run against LocalStorage and against S3Storage on a private S3 server; and the part buffering on a
deterministic fake."""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path

import pytest

from shared.storage import BufferedPartWriter, LocalStorage, ObjectStorage
from shared.storage.s3 import S3Storage
from tests.support.object_stores import s3_storage

# The smallest part S3 (and SeaweedFS) takes for all but the last: a multipart upload of some 10 MB.
SMALL_PART_BYTES = 5 * 1024 * 1024
PIECE_BYTES = 256 * 1024


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStorage:
    """Each implementation, empty; S3 with small parts so a multipart upload is cheap to make."""
    if request.param == "local":
        return LocalStorage(str(tmp_path / "objects"))
    store = s3_storage(request.getfixturevalue("s3_server"))
    store.writer_part_bytes = SMALL_PART_BYTES
    return store


def pieces(size: int, piece_bytes: int, seed: int = 3) -> list[bytes]:
    data = random.Random(seed).randbytes(size)
    return [data[i : i + piece_bytes] for i in range(0, size, piece_bytes)]


def leftovers(storage: ObjectStorage, *objects: str) -> list[str]:
    """What a writer could have left besides `objects`: temporary files, unfinished multipart uploads."""
    if isinstance(storage, LocalStorage):
        files = [p.relative_to(storage.root).as_posix() for p in storage.root.rglob("*") if p.is_file()]
        return [name for name in files if name not in objects]
    assert isinstance(storage, S3Storage)
    uploads = storage._ready().list_multipart_uploads(Bucket=storage.bucket).get("Uploads", [])
    return [upload["Key"] for upload in uploads]


@pytest.mark.parametrize("size", [1, SMALL_PART_BYTES, 2 * SMALL_PART_BYTES + 123])
def test_a_committed_writer_reads_back_identical_and_is_invisible_before(
    storage: ObjectStorage, size: int
) -> None:
    # Given an object written in pieces of 256 KiB (one request, exactly one part, or several parts)
    writer = storage.writer("documents/t/doc.pdf")
    sent = pieces(size, PIECE_BYTES)
    for piece in sent:
        writer.write(piece)

    # Then nothing is visible under the key until the commit
    assert storage.exists("documents/t/doc.pdf") is False

    # When it is committed
    writer.commit()

    # Then it reads back byte for byte, and nothing else is left
    assert hashlib.sha256(storage.get_bytes("documents/t/doc.pdf")).digest() == (
        hashlib.sha256(b"".join(sent)).digest()
    )
    assert leftovers(storage, "documents/t/doc.pdf") == []


@pytest.mark.parametrize("size", [1000, 2 * SMALL_PART_BYTES + 123])
def test_an_aborted_writer_leaves_no_object_and_nothing_unfinished(storage: ObjectStorage, size: int) -> None:
    # Given an object partly written (on S3, the larger one has sent parts already)
    writer = storage.writer("documents/t/aborted.pdf")
    for piece in pieces(size, PIECE_BYTES):
        writer.write(piece)

    # When it is aborted, twice
    writer.abort()
    writer.abort()

    # Then there is no object, no temporary file and no unfinished multipart upload
    assert storage.exists("documents/t/aborted.pdf") is False
    assert leftovers(storage) == []


def test_abort_after_commit_keeps_the_object(storage: ObjectStorage) -> None:
    # Given a committed writer
    writer = storage.writer("documents/t/kept.pdf")
    writer.write(b"%PDF-1.7 kept")
    writer.commit()

    # When a cleanup path aborts it anyway
    writer.abort()

    # Then the object is still there
    assert storage.get_bytes("documents/t/kept.pdf") == b"%PDF-1.7 kept"


def test_a_committed_writer_replaces_an_existing_object(storage: ObjectStorage) -> None:
    storage.put_bytes("documents/t/doc.pdf", b"old")
    writer = storage.writer("documents/t/doc.pdf")
    writer.write(b"new")
    writer.commit()
    assert storage.get_bytes("documents/t/doc.pdf") == b"new"


class FailingStream:
    """A readable stream whose second read fails, as a client that hangs up mid-upload."""

    def __init__(self) -> None:
        self.reads = 0

    def read(self, size: int = -1) -> bytes:
        self.reads += 1
        if self.reads > 1:
            raise OSError("connection reset")
        return b"%PDF-1.7 first piece"


def test_put_file_whose_stream_fails_leaves_no_object_and_nothing_unfinished(storage: ObjectStorage) -> None:
    with pytest.raises(OSError, match="connection reset"):
        storage.put_file("documents/t/cut.pdf", FailingStream())  # type: ignore[arg-type]
    assert storage.exists("documents/t/cut.pdf") is False
    assert leftovers(storage) == []


def test_unfinished_local_uploads_are_swept_once_old_and_others_kept(tmp_path: Path) -> None:
    # Given an object, a writer still writing, and a writer whose process died hours ago
    storage = LocalStorage(str(tmp_path / "objects"))
    storage.put_bytes("documents/t/kept.pdf", b"%PDF-1.7 kept")
    live = storage.writer("documents/t/live.pdf")
    live.write(b"%PDF-1.7 arriving")
    dead = storage.writer("documents/u/dead.pdf")
    dead.write(b"%PDF-1.7 never finished")
    [dead_file] = (storage.root / "documents" / "u").iterdir()
    seven_hours_ago = dead_file.stat().st_mtime - 7 * 3600
    os.utime(dead_file, (seven_hours_ago, seven_hours_ago))
    # When partial files older than six hours are swept
    removed = storage.sweep_partials(6 * 3600)
    # Then only the dead writer's file is gone: the object stays, and the live writer still commits
    assert removed == 1
    assert not dead_file.exists()
    live.write(b" and done")
    live.commit()
    assert storage.get_bytes("documents/t/live.pdf") == b"%PDF-1.7 arriving and done"
    assert storage.get_bytes("documents/t/kept.pdf") == b"%PDF-1.7 kept"
    assert leftovers(storage, "documents/t/kept.pdf", "documents/t/live.pdf") == []


# --- Part buffering, on a fake sink ------------------------------------------------------------


class RecordingSink:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def put(self, data: bytes) -> None:
        self.calls.append(("put", len(data)))

    def part(self, data: bytes) -> None:
        self.calls.append(("part", len(data)))

    def complete(self) -> None:
        self.calls.append(("complete", 0))

    def abort(self) -> None:
        self.calls.append(("abort", 0))


def test_an_object_up_to_one_part_goes_in_one_put() -> None:
    sink = RecordingSink()
    writer = BufferedPartWriter(sink, part_bytes=10)
    writer.write(b"12345")
    writer.write(b"67890")
    writer.commit()
    assert sink.calls == [("put", 10)]


def test_a_larger_object_goes_in_full_parts_as_they_fill_and_a_non_empty_last_one() -> None:
    # Given a writer of 10-byte parts
    sink = RecordingSink()
    writer = BufferedPartWriter(sink, part_bytes=10)

    # When 21 bytes arrive in pieces of 7, then 9 more: 30 in all
    for _ in range(3):
        writer.write(os.urandom(7))
    sent_before_commit = list(sink.calls)
    writer.write(os.urandom(9))
    writer.commit()

    # Then full parts went out as they filled, and the rest (never empty) on commit
    assert sent_before_commit == [("part", 10), ("part", 10)]
    assert sink.calls == [("part", 10), ("part", 10), ("part", 10), ("complete", 0)]


def test_aborting_a_parted_object_aborts_the_upload_and_a_small_one_sends_nothing() -> None:
    parted, small = RecordingSink(), RecordingSink()
    writer = BufferedPartWriter(parted, part_bytes=4)
    writer.write(b"123456")
    writer.abort()
    other = BufferedPartWriter(small, part_bytes=4)
    other.write(b"12")
    other.abort()
    assert parted.calls == [("part", 4), ("abort", 0)]
    assert small.calls == []
