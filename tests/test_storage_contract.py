"""The ObjectStorage contract, run against LocalStorage and against S3Storage on a private S3 server."""

from __future__ import annotations

import hashlib
import io
import os
import random
import socket
import time
import uuid
from pathlib import Path

import boto3
import pytest
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import ClientError

from shared.errors import ObjectNotFoundError, StorageUnavailableError
from shared.s3_storage import MULTIPART_CHUNK_BYTES, S3Storage
from shared.settings import Settings
from shared.storage import LocalStorage, ObjectStorage
from tests.s3_server import S3ServerInfo

LARGE_OBJECT_BYTES = 20 * 1024 * 1024


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


def sha256_of_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1024 * 1024), b""):
            digest.update(block)
    return digest.hexdigest()


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def s3_storage(server: S3ServerInfo, **changes: str) -> S3Storage:
    settings = Settings(
        storage_backend="s3",
        s3_endpoint_url=server.endpoint_url,
        s3_bucket=f"contract-{uuid.uuid4().hex[:12]}",
        s3_access_key_id=server.access_key_id,
        s3_secret_access_key=server.secret_access_key,
    ).replace(**changes)
    return S3Storage.from_settings(settings)


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


# --- S3 only -------------------------------------------------------------------------------------


@pytest.mark.s3
def test_s3_server_refuses_anonymous_requests(s3_server: S3ServerInfo) -> None:
    # Given an object in a bucket, written with the server's credentials
    storage = s3_storage(s3_server)
    storage.put_bytes("secret.txt", b"private")
    anonymous = boto3.session.Session().client(
        "s3",
        endpoint_url=s3_server.endpoint_url,
        region_name="us-east-1",
        config=Config(signature_version=UNSIGNED, s3={"addressing_style": "path"}),
    )

    # When an unsigned client reads, lists or writes
    attempts = {
        "get": lambda: anonymous.get_object(Bucket=storage.bucket, Key="secret.txt"),
        "list": lambda: anonymous.list_objects_v2(Bucket=storage.bucket),
        "put": lambda: anonymous.put_object(Bucket=storage.bucket, Key="planted.txt", Body=b"x"),
        "list buckets": lambda: anonymous.list_buckets(),
    }
    statuses = {}
    for name, attempt in attempts.items():
        with pytest.raises(ClientError) as refused:
            attempt()
        statuses[name] = refused.value.response["ResponseMetadata"]["HTTPStatusCode"]

    # Then every request is refused and nothing was planted
    assert statuses == {"get": 403, "list": 403, "put": 403, "list buckets": 403}
    assert storage.exists("planted.txt") is False


@pytest.mark.s3
def test_s3_large_uploads_are_multipart(s3_server: S3ServerInfo) -> None:
    # Given a stream of three parts and a bit
    storage = s3_storage(s3_server)
    size = 3 * MULTIPART_CHUNK_BYTES + 1
    storage.put_file("docs/big/source.pdf", PseudoRandomStream(size))  # type: ignore[arg-type]

    # When its metadata is read
    head = storage._s3().head_object(Bucket=storage.bucket, Key="docs/big/source.pdf")

    # Then it was uploaded in four parts (a multipart ETag ends in -<parts>)
    assert head["ContentLength"] == size
    assert head["ETag"].strip('"').endswith("-4")


@pytest.mark.s3
def test_s3_delete_prefix_pages_through_many_keys(s3_server: S3ServerInfo) -> None:
    # Given more keys under a prefix than fit in one listing page or one delete batch
    storage = s3_storage(s3_server)
    storage.delete_batch_size = 3
    doomed = [f"docs/7/artifacts/{index:02d}.json" for index in range(11)]
    for key in [*doomed, "docs/70/source.pdf"]:
        storage.put_bytes(key, b"{}")

    # When the prefix is deleted
    storage.delete_prefix("docs/7/")

    # Then every page was deleted, and the neighbour kept
    listing = storage._s3().list_objects_v2(Bucket=storage.bucket, Prefix="docs/7")
    assert [item["Key"] for item in listing.get("Contents", [])] == ["docs/70/source.pdf"]


@pytest.mark.s3
def test_s3_bucket_is_created_once_on_first_use(s3_server: S3ServerInfo) -> None:
    # Given settings naming a bucket that does not exist yet
    storage = s3_storage(s3_server)
    other_process_view = s3_storage(s3_server, s3_bucket=storage.bucket)

    # When two storages use it (as two processes would)
    storage.check()
    other_process_view.put_bytes("k", b"v")
    storage.ensure_bucket()

    # Then the bucket exists and both see the same objects
    assert storage.get_bytes("k") == b"v"


@pytest.mark.s3
def test_s3_building_the_storage_does_no_network_io(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given settings pointing at a port nothing listens on, and a process where any connection fails
    # the test (a closed port refuses at once, so timing the construction would prove nothing)
    settings = Settings(storage_backend="s3", s3_endpoint_url=f"http://127.0.0.1:{closed_port()}")
    attempts: list[object] = []

    def no_connection(sock: socket.socket, address: object) -> None:
        attempts.append(address)
        raise AssertionError(f"building the storage connected to {address}")

    monkeypatch.setattr(socket.socket, "connect", no_connection)

    # When the storage is built
    storage = S3Storage.from_settings(settings)

    # Then it opened no connection and no client exists yet
    assert attempts == []
    assert storage._client is None


@pytest.mark.s3
def test_s3_check_fails_fast_when_the_endpoint_is_closed() -> None:
    # Given a storage whose endpoint is a closed port
    endpoint = f"http://127.0.0.1:{closed_port()}"
    storage = S3Storage.from_settings(
        Settings(s3_endpoint_url=endpoint, s3_access_key_id="AKEXAMPLE", s3_secret_access_key="secret")
    )

    # When readiness is checked
    started = time.monotonic()
    with pytest.raises(StorageUnavailableError) as unavailable:
        storage.check()
    elapsed = time.monotonic() - started

    # Then it fails within seconds (0.3 s measured), classified, with a message that leaks no vendor text
    assert elapsed < 6.0, f"check() took {elapsed:.1f} s"
    assert unavailable.value.code == "storage_unavailable"
    assert unavailable.value.message == "Object storage cannot be reached."
    assert endpoint not in str(unavailable.value)
    assert unavailable.value.__cause__ is not None


@pytest.mark.s3
@pytest.mark.parametrize(
    "bad_credentials",
    [
        pytest.param({"s3_secret_access_key": "not-the-secret"}, id="wrong-secret"),
        pytest.param({"s3_access_key_id": "AKUNKNOWN"}, id="unknown-key"),
    ],
)
def test_s3_wrong_credentials_give_a_classified_error(
    s3_server: S3ServerInfo, bad_credentials: dict[str, str]
) -> None:
    # Given an existing bucket, and a storage for it with credentials the server does not accept
    good = s3_storage(s3_server)
    good.put_bytes("k", b"v")
    bad = s3_storage(s3_server, s3_bucket=good.bucket, **bad_credentials)

    # When it is used
    for operation in (bad.check, lambda: bad.get_bytes("k"), lambda: bad.put_bytes("k2", b"v")):
        with pytest.raises(StorageUnavailableError) as refused:
            operation()

        # Then the error is classified and its message is ours, not the server's
        assert refused.value.code == "storage_unavailable"
        assert refused.value.message == "Object storage refused the service's credentials."
        assert "Signature" not in str(refused.value)
        assert isinstance(refused.value.__cause__, ClientError)
    assert good.exists("k2") is False
