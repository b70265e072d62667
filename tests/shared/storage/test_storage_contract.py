"""The ObjectStorage contract, run against LocalStorage and against S3Storage on a private S3 server."""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import pytest

from shared.errors import ObjectNotFoundError
from shared.storage import STREAM_CHUNK_BYTES, LocalStorage, ObjectStorage
from tests.support.object_stores import PseudoRandomStream, s3_storage

LARGE_OBJECT_BYTES = 20 * 1024 * 1024


def sha256_of_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1024 * 1024), b""):
            digest.update(block)
    return digest.hexdigest()


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStorage:
    """Each implementation, empty: a fresh directory, or a fresh bucket on the S3 server."""
    if request.param == "local":
        return LocalStorage(str(tmp_path / "objects"))
    return s3_storage(request.getfixturevalue("s3_server"))


# --- The contract, for every implementation ----------------------------------------------------


def test_put_file_streams_a_large_object_that_reads_back_identical(
    storage: ObjectStorage, tmp_path: Path
) -> None:
    # Given a 20 MB non-seekable stream
    stream = PseudoRandomStream(LARGE_OBJECT_BYTES)

    # When it is stored
    storage.put_file("docs/big/source.pdf", stream)  # type: ignore[arg-type]
    expected = stream.sha256.hexdigest()

    # Then reading it whole and downloading it both give the same bytes
    data = storage.get_bytes("docs/big/source.pdf")
    assert len(data) == LARGE_OBJECT_BYTES
    assert hashlib.sha256(data).hexdigest() == expected
    target = tmp_path / "download.pdf"
    storage.download("docs/big/source.pdf", str(target))
    assert target.stat().st_size == LARGE_OBJECT_BYTES
    assert sha256_of_file(target) == expected


def test_stream_reads_a_large_object_back_identical_in_bounded_pieces(storage: ObjectStorage) -> None:
    # Given a 20 MB object
    stream = PseudoRandomStream(LARGE_OBJECT_BYTES)
    storage.put_file("docs/big/source.pdf", stream)  # type: ignore[arg-type]

    # When it is streamed
    digest, total, largest = hashlib.sha256(), 0, 0
    for piece in storage.stream("docs/big/source.pdf"):
        digest.update(piece)
        total += len(piece)
        largest = max(largest, len(piece))

    # Then every byte arrives, in pieces no larger than the stream's bound
    assert total == LARGE_OBJECT_BYTES
    assert digest.hexdigest() == stream.sha256.hexdigest()
    assert 0 < largest <= STREAM_CHUNK_BYTES


def test_a_stream_closed_early_releases_the_object(storage: ObjectStorage) -> None:
    # Given an object of several pieces, streamed
    storage.put_bytes("docs/3/source.pdf", b"x" * (3 * STREAM_CHUNK_BYTES))
    pieces = storage.stream("docs/3/source.pdf")

    # When the reader stops after the first piece and closes the stream
    assert next(iter(pieces))
    pieces.close()  # type: ignore[attr-defined]

    # Then the object can still be read and deleted
    assert len(storage.get_bytes("docs/3/source.pdf")) == 3 * STREAM_CHUNK_BYTES
    storage.delete("docs/3/source.pdf")
    assert storage.exists("docs/3/source.pdf") is False


def test_put_file_with_a_known_small_size_reads_back_identical(storage: ObjectStorage) -> None:
    # Given a 1 MB upload spooled to a seekable file, its size known from the gateway's count
    data = os.urandom(1024 * 1024)
    stream = io.BytesIO(data)

    # When it is stored with that size (one request rather than the transfer manager)
    storage.put_file("docs/small/source.pdf", stream, size=len(data))

    # Then it reads back byte for byte
    assert storage.get_bytes("docs/small/source.pdf") == data


def test_put_bytes_then_get_bytes_returns_the_value_and_a_second_put_replaces_it(
    storage: ObjectStorage,
) -> None:
    # Given a stored artifact
    storage.put_bytes("docs/1/artifacts/pages.json", b'{"pages": 1}')

    # When it is read, then overwritten and read again
    first = storage.get_bytes("docs/1/artifacts/pages.json")
    storage.put_bytes("docs/1/artifacts/pages.json", b'{"pages": 2}')
    second = storage.get_bytes("docs/1/artifacts/pages.json")

    # Then each read returns what was last written
    assert first == b'{"pages": 1}'
    assert second == b'{"pages": 2}'


def test_an_empty_value_is_an_object(storage: ObjectStorage) -> None:
    # Given an empty value stored under a key
    storage.put_bytes("docs/1/empty.txt", b"")

    # Then it exists and reads back empty
    assert storage.exists("docs/1/empty.txt")
    assert storage.get_bytes("docs/1/empty.txt") == b""


def test_exists_follows_put_and_delete(storage: ObjectStorage) -> None:
    # Given a key never written
    key = "docs/2/source.pdf"
    assert storage.exists(key) is False

    # When it is written
    storage.put_bytes(key, b"%PDF-1.7")
    # Then it exists
    assert storage.exists(key) is True

    # When it is deleted
    storage.delete(key)
    # Then it no longer exists
    assert storage.exists(key) is False


def test_deleting_a_missing_object_is_not_an_error(storage: ObjectStorage) -> None:
    # Given a key never written
    # When it is deleted, twice
    storage.delete("docs/missing/source.pdf")
    storage.delete("docs/missing/source.pdf")

    # Then nothing was raised and nothing exists
    assert storage.exists("docs/missing/source.pdf") is False


def test_reading_a_missing_object_raises_object_not_found(storage: ObjectStorage, tmp_path: Path) -> None:
    # Given a key never written
    target = tmp_path / "missing.pdf"

    # When it is read or downloaded
    with pytest.raises(ObjectNotFoundError) as read_error:
        storage.get_bytes("docs/missing/source.pdf")
    with pytest.raises(ObjectNotFoundError):
        storage.download("docs/missing/source.pdf", str(target))
    # (a stream fails when it is opened, before any piece could be sent)
    with pytest.raises(ObjectNotFoundError):
        storage.stream("docs/missing/source.pdf")

    # Then the error is classified, carries its own message, and no file was left behind
    assert read_error.value.code == "object_not_found"
    assert read_error.value.message == ObjectNotFoundError.message
    assert not target.exists()


def test_delete_prefix_removes_only_keys_under_that_prefix(storage: ObjectStorage) -> None:
    # Given objects under docs/1/, a sibling docs/10/ sharing its leading characters, and another tree
    doomed = ["docs/1/source.pdf", "docs/1/artifacts/pages.json", "docs/1/artifacts/chunks.json"]
    kept = ["docs/10/source.pdf", "docs/2/source.pdf", "other/1/source.pdf"]
    for key in doomed + kept:
        storage.put_bytes(key, key.encode())

    # When the docs/1/ prefix is deleted
    storage.delete_prefix("docs/1/")

    # Then only its objects are gone
    assert [key for key in doomed if storage.exists(key)] == []
    assert [key for key in kept if storage.exists(key)] == kept
    assert storage.get_bytes("docs/10/source.pdf") == b"docs/10/source.pdf"


def test_delete_prefix_of_nothing_is_not_an_error(storage: ObjectStorage) -> None:
    # Given an empty store
    # When a prefix with no objects is deleted
    storage.delete_prefix("docs/none/")

    # Then the store still works
    storage.put_bytes("docs/none/after.txt", b"ok")
    assert storage.get_bytes("docs/none/after.txt") == b"ok"


def test_check_passes_on_a_usable_store(storage: ObjectStorage) -> None:
    # Given a store that works
    # When readiness is checked
    # Then nothing is raised
    storage.check()
