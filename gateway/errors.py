"""The one table from error to HTTP status, and the one handler that renders problem+json."""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from shared import errors

logger = logging.getLogger(__name__)

STATUS_FOR_ERROR: list[tuple[type[errors.IngestError], int]] = [
    (errors.UnauthorizedError, 401),
    (errors.ForbiddenError, 403),
    (errors.TenantSuspendedError, 403),
    (errors.NotFoundError, 404),
    (errors.StorageQuotaExceededError, 403),
    (errors.ConflictError, 409),
    (errors.TooManyActiveJobsError, 429),
    (errors.TooManyStreamsError, 429),
    (errors.UploadTooLargeError, 413),
    (errors.TooManyFormPartsError, 413),
    (errors.NotAPdfError, 415),
    (errors.UnsupportedMediaTypeError, 415),
    (errors.EmptyFileError, 422),
    (errors.CallbackUrlNotAllowedError, 422),
    (errors.CallbackUrlHttpsRequiredError, 422),
    (errors.InvalidRequestError, 400),
    (errors.SearchUnavailableError, 503),
    (errors.DatabaseUnavailableError, 503),
    (errors.TransientError, 503),
    (errors.PermanentError, 422),
]

# Werkzeug's own HTTP errors (raised before our code runs) get stable codes too.
CODE_FOR_HTTP_STATUS = {
    400: "invalid_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "upload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    # The HTTP server's own refusal of oversized headers (the embedded server's waitress).
    431: "headers_too_large",
}

# A schema's refusal of these fields (their length) is the same fault as the guard's refusal.
CALLBACK_URL_FIELDS = frozenset({"callback_url", "default_callback_url"})


def _failed_fields(messages: dict[str, Any]) -> set[str]:
    """The names of the fields webargs refused, across locations (json, query, form...)."""
    return {name for by_field in messages.values() if isinstance(by_field, dict) for name in by_field}


def problem_document(status: int, code: str, detail: str) -> dict[str, Any]:
    """The body of a problem+json answer (also for the HTTP server's own refusals)."""
    return {
        "type": "about:blank",
        "title": code.replace("_", " "),
        "status": status,
        "code": code,
        "detail": detail,
    }


def problem(
    status: int,
    code: str,
    detail: str,
    headers: dict[str, str] | None = None,
    errors: dict[str, Any] | None = None,
) -> Response:
    """An RFC 9457 problem document with our stable `code`."""
    body = problem_document(status, code, detail)
    if errors:
        body["errors"] = errors
    response = jsonify(body)
    response.status_code = status
    response.mimetype = "application/problem+json"
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def status_for(error: errors.IngestError) -> int:
    for cls, status in STATUS_FOR_ERROR:
        if isinstance(error, cls):
            return status
    return 500


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(errors.IngestError)
    def _ingest_error(error: errors.IngestError) -> Response:
        status = status_for(error)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        if status in (429, 503) and isinstance(error, errors.TransientError):
            headers = {"Retry-After": str(int(error.retry_after_s or 5))}
        return problem(status, error.code, error.message, headers)

    @app.errorhandler(HTTPException)
    def _http_error(error: HTTPException) -> Response:
        status = error.code or 500
        code = CODE_FOR_HTTP_STATUS.get(status, "http_error")
        # webargs puts the field errors of an invalid request in `data["messages"]`.
        data = getattr(error, "data", None) or {}
        messages = data.get("messages") if isinstance(data, dict) else None
        if messages:
            fields = _failed_fields(messages)
            if fields and fields <= CALLBACK_URL_FIELDS:
                fault = errors.InvalidCallbackUrlError()
                return problem(status_for(fault), fault.code, fault.message, errors=messages)
            return problem(
                status, "invalid_request", "The request's parameters are invalid.", errors=messages
            )
        # Keep the exception's own headers: Allow on a 405, Retry-After on a 503.
        headers = {k: v for k, v in error.get_headers() if k.lower() != "content-type"}
        return problem(status, code, error.description or error.name, headers)

    @app.errorhandler(Exception)
    def _unexpected(error: Exception) -> Response:
        logger.error("unhandled error", exc_info=error)
        return problem(500, "internal_error", "An internal error occurred.")
