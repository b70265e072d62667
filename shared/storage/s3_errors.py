"""Translation of boto3's exceptions into the service's storage errors, at the S3 boundary.

A missing key becomes `ObjectNotFoundError`; an unreachable endpoint, a 5xx, refused credentials or a
missing bucket become `StorageUnavailableError` (the job's input is not at fault, so the work is retried
once the store is back or fixed). The client-visible messages are fixed strings; the vendor exception
stays chained for the logs.
"""

from __future__ import annotations

from boto3.exceptions import Boto3Error
from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError, NoCredentialsError
from botocore.exceptions import ConnectionError as BotoConnectionError

from shared.errors import IngestError, ObjectNotFoundError, StorageUnavailableError

NOT_FOUND_CODES = frozenset({"404", "NoSuchKey", "NotFound"})
MISSING_BUCKET_CODES = frozenset({"NoSuchBucket"})
REFUSED_CODES = frozenset(
    {
        "403",
        "AccessDenied",
        "Forbidden",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "InvalidToken",
        "ExpiredToken",
        "InvalidSecurity",
    }
)
UNREACHABLE_MESSAGE = "Object storage cannot be reached."
REFUSED_MESSAGE = "Object storage refused the service's credentials."
MISSING_BUCKET_MESSAGE = "The object storage bucket does not exist."

# What a boto3 call raises for anything the store or the network did.
VENDOR_ERRORS = (ClientError, BotoCoreError, Boto3Error)


def error_code(exc: ClientError) -> str:
    """The S3 error code of a client error ("NoSuchKey", "403", ...)."""
    return str(exc.response.get("Error", {}).get("Code", ""))


def _status(exc: ClientError) -> int:
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)


def is_not_found(exc: BaseException) -> bool:
    """True when `exc` says the object (or, on a bucket request, the bucket) does not exist."""
    return isinstance(exc, ClientError) and error_code(exc) in NOT_FOUND_CODES


def translate(exc: BaseException, *, bucket_call: bool = False) -> IngestError:
    """The classified error for a vendor exception (the caller raises it `from exc`).

    `bucket_call` marks bucket-level requests, where a bare 404 means the bucket is missing.
    """
    if isinstance(exc, Boto3Error) and isinstance(exc.__context__, ClientError | BotoCoreError):
        # upload_fileobj wraps the ClientError it caught in S3UploadFailedError.
        exc = exc.__context__
    if isinstance(exc, ClientError):
        code = error_code(exc)
        if code in MISSING_BUCKET_CODES or (bucket_call and code in NOT_FOUND_CODES):
            return StorageUnavailableError(MISSING_BUCKET_MESSAGE)
        if code in NOT_FOUND_CODES:
            return ObjectNotFoundError()
        if code in REFUSED_CODES or _status(exc) in (401, 403):
            return StorageUnavailableError(REFUSED_MESSAGE)
        return StorageUnavailableError()
    if isinstance(exc, NoCredentialsError):
        return StorageUnavailableError(REFUSED_MESSAGE)
    if isinstance(exc, BotoConnectionError | HTTPClientError):
        return StorageUnavailableError(UNREACHABLE_MESSAGE)
    return StorageUnavailableError()
