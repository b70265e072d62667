"""What only S3Storage does: refusing anonymous requests, multipart, paging, lazy clients, its errors."""

from __future__ import annotations

import socket
import time

import boto3
import pytest
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import ClientError

from shared.errors import StorageUnavailableError
from shared.settings import Settings
from shared.storage.s3 import MULTIPART_CHUNK_BYTES, S3Storage
from tests.support.object_stores import PseudoRandomStream, s3_storage
from tests.support.ports import free_port
from tests.support.s3_server import S3ServerInfo


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
    settings = Settings(storage_backend="s3", s3_endpoint_url=f"http://127.0.0.1:{free_port()}")
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
    endpoint = f"http://127.0.0.1:{free_port()}"
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
