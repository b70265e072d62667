"""The error taxonomy: every failure the service reports has a stable code and a client-safe message.

Adapters translate vendor exceptions at the boundary (`raise StorageUnavailableError() from exc`);
`PermanentError` means "fail now, retrying cannot help", `TransientError` means "retry with backoff".
HTTP statuses live only in `gateway/errors.py`. The errors of processing a document (unreadable or
over-limit PDFs, OCR and parser faults) are in `ingest_worker/pipeline_errors.py`.
"""

from __future__ import annotations


class IngestError(Exception):
    """Base of every classified error: `code` is stable, `message` is safe to show a client."""

    code = "internal_error"
    message = "An internal error occurred."

    def __init__(self, message: str | None = None, *, code: str | None = None) -> None:
        if message is not None:
            self.message = message
        if code is not None:
            self.code = code
        super().__init__(self.message)


class PermanentError(IngestError):
    """Bad input or a refusal that a retry cannot fix: the job fails at once."""

    code = "permanent_error"
    message = "The request cannot be processed."


class TransientError(IngestError):
    """A passing fault (network, 429, 5xx, timeout): retried with backoff.

    `retry_after_s` carries a provider's Retry-After when it gave one.
    """

    code = "transient_error"
    message = "A temporary fault occurred; the work will be retried."

    def __init__(
        self, message: str | None = None, *, code: str | None = None, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.retry_after_s = retry_after_s


# --- Requests (gateway) -------------------------------------------------------------------------


class UnauthorizedError(PermanentError):
    code = "unauthorized"
    message = "A valid API key is required (Authorization: Bearer <key>)."


class ForbiddenError(PermanentError):
    code = "forbidden"
    message = "This API key may not do that."


class NotFoundError(PermanentError):
    code = "not_found"
    message = "No such resource."


class InvalidRequestError(PermanentError):
    code = "invalid_request"
    message = "The request is malformed."


class InvalidJsonError(InvalidRequestError):
    code = "invalid_json"
    message = "The body is not JSON this service reads: UTF-8, no NaN or Infinity, nested at most 32 deep."


class InvalidTextError(InvalidRequestError):
    code = "invalid_text"
    message = "A string holds a lone UTF-16 surrogate (U+D800-U+DFFF), which is not a character."


class MissingBodyError(InvalidRequestError):
    code = "missing_body"
    message = "This call takes a JSON body (an empty object, {}, where every field has its default)."


class InvalidFilterError(InvalidRequestError):
    code = "invalid_filter"
    message = "The search filter is invalid."


class UploadTooLargeError(PermanentError):
    code = "upload_too_large"
    message = "The upload is larger than the allowed size."


class TooManyFormPartsError(PermanentError):
    code = "too_many_form_parts"
    message = "The form has more parts than allowed (1,000)."


class NotAPdfError(PermanentError):
    code = "not_a_pdf"
    message = "The file is not a PDF (it does not start with %PDF-)."


class UnsupportedMediaTypeError(PermanentError):
    code = "unsupported_media_type"
    message = "Send the PDF as multipart/form-data in the field 'file'."


class NotJsonError(UnsupportedMediaTypeError):
    code = "not_json"
    message = "This call takes a JSON body: send it with Content-Type: application/json."


class EmptyFileError(PermanentError):
    code = "empty_file"
    message = "The uploaded file is empty."


class TenantSuspendedError(PermanentError):
    code = "tenant_suspended"
    message = "The tenant is suspended."


class ConflictError(PermanentError):
    code = "conflict"
    message = "The request conflicts with the resource's current state."


class IdempotencyKeyReusedError(ConflictError):
    code = "idempotency_key_reused"
    message = "This Idempotency-Key was used for a different request."


class IdempotencyInProgressError(ConflictError):
    code = "idempotency_request_in_progress"
    message = "A request with this Idempotency-Key is still being processed; try again shortly."


class TooManyActiveJobsError(TransientError):
    code = "too_many_active_jobs"
    message = "The tenant has too many jobs in progress; try again later."


class TooManyStreamsError(TransientError):
    code = "too_many_event_streams"
    message = "The tenant has as many event streams open as it may; close one or try again later."


class StreamsBusyError(TransientError):
    code = "event_streams_busy"
    message = "This server holds as many event streams as it may; try again shortly."


class StorageQuotaExceededError(PermanentError):
    code = "storage_quota_exceeded"
    message = "The upload would exceed the tenant's storage allowance."


class SearchUnavailableError(PermanentError):
    code = "search_requires_qdrant_server"
    message = (
        "Search needs a Qdrant server when the gateway and the workers are separate processes "
        "(set INGEST_QDRANT_URL); the local Qdrant folder belongs to the index worker."
    )


# --- Job state ----------------------------------------------------------------------------------


class StaleTransitionError(PermanentError):
    code = "stale_transition"
    message = "The job is no longer in the state this change expected."


# --- Dependencies -------------------------------------------------------------------------------


class StorageUnavailableError(TransientError):
    code = "storage_unavailable"
    message = "Object storage is unavailable."


class ObjectNotFoundError(PermanentError):
    code = "object_not_found"
    message = "A stored object is missing."


class DatabaseUnavailableError(TransientError):
    """The database could not be reached, or the connection to it was lost (a restart, a failover).

    `maybe_committed`: the connection was lost while the COMMIT was in flight, so the transaction
    may have committed; a retry from its start is safe only when it is False.
    """

    code = "database_unavailable"
    message = "The database is unavailable; try again shortly."

    def __init__(
        self, message: str | None = None, *, maybe_committed: bool = False, retry_after_s: float = 2.0
    ) -> None:
        super().__init__(message, retry_after_s=retry_after_s)
        self.maybe_committed = maybe_committed


class BrokerUnavailableError(TransientError):
    code = "broker_unavailable"
    message = "The message broker is unavailable."


class VectorStoreUnavailableError(TransientError):
    code = "vector_store_unavailable"
    message = "The vector store is unavailable."


class VectorStoreError(PermanentError):
    code = "vector_store_rejected"
    message = "The vector store rejected the request."


class EmbeddingUnavailableError(TransientError):
    code = "embedding_unavailable"
    message = "The embedding provider is unavailable."


class EmbeddingRejectedError(PermanentError):
    code = "embedding_rejected"
    message = "The embedding provider rejected the request."


class PointCountMismatchError(TransientError):
    code = "point_count_mismatch"
    message = "The vector store holds a different number of points than chunks were indexed."


# --- Webhooks -----------------------------------------------------------------------------------


class InvalidCallbackUrlError(InvalidRequestError):
    code = "invalid_callback_url"
    message = "callback_url must be an absolute http(s) URL."


class InvalidMetadataError(InvalidRequestError):
    code = "invalid_metadata"
    message = "metadata must be a JSON object of strings, numbers, booleans or lists of them."


class CallbackUrlNotAllowedError(PermanentError):
    code = "callback_url_not_allowed"
    message = "The callback URL points at a loopback, private, link-local or otherwise non-public address."


class CallbackUrlHttpsRequiredError(PermanentError):
    code = "callback_url_https_required"
    message = "The callback URL must use https."


class WebhookDeliveryError(TransientError):
    """A delivery attempt failed; `response_status` is the receiver's answer when there was one."""

    code = "webhook_delivery_failed"
    message = "The webhook could not be delivered; it will be retried."

    def __init__(self, message: str | None = None, *, code: str | None = None, status: int | None = None):
        super().__init__(message, code=code)
        self.response_status = status


# --- OCR languages ------------------------------------------------------------------------------


class UnknownOcrLanguageError(PermanentError):
    code = "unknown_ocr_language"
    message = "ocr_languages names a language this service does not read."
