"""Object storage on any S3 API server (AWS S3, MinIO, SeaweedFS) through boto3.

Vendor errors are translated at this boundary, by `shared.storage.s3_errors`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any, BinaryIO

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

from shared.errors import StorageUnavailableError
from shared.settings import Settings
from shared.storage.parts import BufferedPartWriter
from shared.storage.protocol import STREAM_CHUNK_BYTES, ObjectWriter
from shared.storage.s3_errors import MISSING_BUCKET_CODES, VENDOR_ERRORS, error_code, is_not_found, translate
from shared.storage.s3_upload import S3Upload

MIB = 1024 * 1024
# Uploads above this size go multipart, in parts of the same size.
MULTIPART_CHUNK_BYTES = 8 * MIB
# Parts read from the stream wait in memory for the network: at most this many per upload, so an
# upload of any size holds a bounded amount of memory (measured: about 70 MB peak with 2 parts).
MAX_BUFFERED_PARTS = 2
# DeleteObjects accepts at most 1000 keys per request.
DELETE_BATCH_SIZE = 1000

BUCKET_EXISTS_CODES = frozenset({"BucketAlreadyOwnedByYou", "BucketAlreadyExists"})

# Fail fast: a dead endpoint must surface as a retryable error in seconds, not minutes.
CLIENT_CONFIG = Config(
    connect_timeout=3,
    read_timeout=30,
    retries={"mode": "standard", "max_attempts": 3},
    # Path-style URLs work on every S3 server (MinIO, SeaweedFS) without wildcard DNS.
    s3={"addressing_style": "path"},
    # Send and verify checksums only where the API requires them: S3-compatible servers differ in
    # which of the newer default checksum headers they accept.
    request_checksum_calculation="when_required",
    response_checksum_validation="when_required",
)


def _transfer_config() -> TransferConfig:
    config = TransferConfig(
        multipart_threshold=MULTIPART_CHUNK_BYTES,
        multipart_chunksize=MULTIPART_CHUNK_BYTES,
        max_concurrency=MAX_BUFFERED_PARTS,
        # Bounded write-behind queue for downloads (100 x 256 KiB).
        max_io_queue=100,
        # The classic transfer manager honours the memory bounds below; the CRT one has its own.
        preferred_transfer_client="classic",
    )
    config.max_in_memory_upload_chunks = MAX_BUFFERED_PARTS
    return config


class S3Storage:
    """Objects in one S3 bucket.

    The boto3 client is built lazily in each process (never at import, and again after a fork), and
    the bucket is ensured once per process on first use rather than at construction: building the
    storage then never does network I/O, so an entry point can start while the store is down and
    report it through `check()` instead of crashing.
    """

    def __init__(
        self,
        *,
        bucket: str,
        endpoint_url: str | None = None,
        region: str | None = None,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
    ) -> None:
        self.bucket = bucket
        self.endpoint_url = endpoint_url or None
        self.region = region or None
        # Empty credentials fall back to boto3's own chain (environment, instance role).
        self._access_key_id = access_key_id or None
        self._secret_access_key = secret_access_key or None
        self.transfer_config = _transfer_config()
        self.delete_batch_size = DELETE_BATCH_SIZE
        # A writer's object up to this size goes in one PUT; a larger one in parts of this size.
        self.writer_part_bytes = MULTIPART_CHUNK_BYTES
        self._client: Any = None
        self._client_pid = 0
        self._bucket_ready = False
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> S3Storage:
        """The storage the `INGEST_S3_*` settings describe (no network I/O happens here)."""
        return cls(
            bucket=settings.s3_bucket,
            endpoint_url=settings.s3_endpoint_url,
            region=settings.s3_region,
            access_key_id=settings.s3_access_key_id,
            secret_access_key=settings.s3_secret_access_key,
        )

    def __repr__(self) -> str:
        return f"S3Storage(bucket={self.bucket!r}, endpoint_url={self.endpoint_url!r})"

    # --- Clients -------------------------------------------------------------------------------

    def _s3(self) -> Any:
        """This process's client; a client (and its sockets) inherited across a fork is replaced."""
        pid = os.getpid()
        if self._client is not None and self._client_pid == pid:
            return self._client
        if self._client_pid != pid:
            # A lock inherited from the parent may be held by a thread that no longer exists.
            self._lock = threading.Lock()
        with self._lock:
            if self._client is None or self._client_pid != pid:
                session = boto3.session.Session()
                self._client = session.client(
                    "s3",
                    endpoint_url=self.endpoint_url,
                    region_name=self.region,
                    aws_access_key_id=self._access_key_id,
                    aws_secret_access_key=self._secret_access_key,
                    config=CLIENT_CONFIG,
                )
                self._client_pid = pid
                self._bucket_ready = False
            return self._client

    def _ready(self) -> Any:
        """The client, once the bucket is known to exist in this process."""
        client = self._s3()
        if not self._bucket_ready:
            self.ensure_bucket()
        return client

    def ensure_bucket(self) -> None:
        """Create the bucket when it does not exist; concurrent creators are fine."""
        client = self._s3()
        try:
            client.head_bucket(Bucket=self.bucket)
        except ClientError as exc:
            if not is_not_found(exc) and error_code(exc) not in MISSING_BUCKET_CODES:
                raise translate(exc, bucket_call=True) from exc
            self._create_bucket(client)
        except VENDOR_ERRORS as exc:
            raise translate(exc, bucket_call=True) from exc
        self._bucket_ready = True

    def _create_bucket(self, client: Any) -> None:
        kwargs: dict[str, Any] = {"Bucket": self.bucket}
        if self.region and self.region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": self.region}
        try:
            client.create_bucket(**kwargs)
        except ClientError as exc:
            if error_code(exc) not in BUCKET_EXISTS_CODES:
                raise translate(exc, bucket_call=True) from exc
            # Another process won the race, or someone else owns the name: only a HEAD can tell.
            try:
                client.head_bucket(Bucket=self.bucket)
            except VENDOR_ERRORS as head_exc:
                raise translate(head_exc, bucket_call=True) from head_exc
        except VENDOR_ERRORS as exc:
            raise translate(exc, bucket_call=True) from exc

    # --- ObjectStorage -------------------------------------------------------------------------

    def writer(self, key: str) -> ObjectWriter:
        """A writer to `key`: held in memory and PUT on commit up to `writer_part_bytes`, a multipart
        upload beyond it (aborted on abort)."""
        return BufferedPartWriter(S3Upload(self._ready(), self.bucket, key), self.writer_part_bytes)

    def put_file(self, key: str, fileobj: BinaryIO, size: int | None = None) -> None:
        """Stream `fileobj` to `key`; multipart above MULTIPART_CHUNK_BYTES, memory stays bounded.
        An object known to fit one part goes in one PUT: the transfer manager's threads and futures
        cost more than the request itself for the usual upload of a few MB."""
        client = self._ready()
        try:
            if size is not None and size <= MULTIPART_CHUNK_BYTES:
                client.put_object(Bucket=self.bucket, Key=key, Body=fileobj, ContentLength=size)
            else:
                client.upload_fileobj(fileobj, self.bucket, key, Config=self.transfer_config)
        except VENDOR_ERRORS as exc:
            raise translate(exc) from exc

    def put_bytes(self, key: str, data: bytes) -> None:
        """Store a small value in one request."""
        client = self._ready()
        try:
            client.put_object(Bucket=self.bucket, Key=key, Body=data)
        except VENDOR_ERRORS as exc:
            raise translate(exc) from exc

    def get_bytes(self, key: str) -> bytes:
        """Read a whole object; `ObjectNotFoundError` when it does not exist."""
        client = self._ready()
        try:
            body = client.get_object(Bucket=self.bucket, Key=key)["Body"]
            try:
                return bytes(body.read())
            finally:
                body.close()
        except VENDOR_ERRORS as exc:
            raise translate(exc) from exc

    def stream(self, key: str) -> Iterator[bytes]:
        """An object's bytes in pieces as they arrive (`get_object` Body, `iter_chunks`); a missing
        object raises `ObjectNotFoundError` here, before the first piece."""
        client = self._ready()
        try:
            body = client.get_object(Bucket=self.bucket, Key=key)["Body"]
        except VENDOR_ERRORS as exc:
            raise translate(exc) from exc
        return self._pieces(body)

    @staticmethod
    def _pieces(body: Any) -> Iterator[bytes]:
        try:
            for piece in body.iter_chunks(STREAM_CHUNK_BYTES):
                yield bytes(piece)
        except VENDOR_ERRORS as exc:
            raise translate(exc) from exc
        finally:
            body.close()

    def download(self, key: str, path: str) -> None:
        """Copy an object to a local file, streaming; the file appears only once complete."""
        client = self._ready()
        try:
            client.download_file(self.bucket, key, path, Config=self.transfer_config)
        except VENDOR_ERRORS as exc:
            raise translate(exc) from exc

    def exists(self, key: str) -> bool:
        """True when `key` holds an object."""
        client = self._ready()
        try:
            client.head_object(Bucket=self.bucket, Key=key)
        except VENDOR_ERRORS as exc:
            if is_not_found(exc):
                return False
            raise translate(exc) from exc
        return True

    def delete(self, key: str) -> None:
        """Remove an object; S3 treats removing a missing object as success."""
        client = self._ready()
        try:
            client.delete_object(Bucket=self.bucket, Key=key)
        except VENDOR_ERRORS as exc:
            if is_not_found(exc):
                return
            raise translate(exc) from exc

    def delete_prefix(self, prefix: str) -> None:
        """Remove every object whose key starts with `prefix`, a page of keys per request."""
        client = self._ready()
        try:
            pages = client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=prefix, PaginationConfig={"PageSize": self.delete_batch_size}
            )
            for page in pages:
                keys = [item["Key"] for item in page.get("Contents", [])]
                for start in range(0, len(keys), self.delete_batch_size):
                    batch = keys[start : start + self.delete_batch_size]
                    response = client.delete_objects(
                        Bucket=self.bucket,
                        Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True},
                    )
                    # DeleteObjects answers 200 even when some keys failed; they are listed here.
                    if response.get("Errors"):
                        raise StorageUnavailableError()
        except VENDOR_ERRORS as exc:
            raise translate(exc) from exc

    def check(self) -> None:
        """Raise `StorageUnavailableError` unless the bucket answers with these credentials."""
        client = self._ready()
        try:
            client.head_bucket(Bucket=self.bucket)
        except VENDOR_ERRORS as exc:
            raise translate(exc, bucket_call=True) from exc
