"""The one exception the client raises for an answer the service refused, carrying its problem+json."""

from __future__ import annotations

from typing import Any

import httpx


class ApiError(Exception):
    """An error answer: `status` (HTTP), `code` (the service's stable code) and `message` (its detail)."""

    def __init__(self, status: int, code: str, message: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body or {}

    @classmethod
    def from_response(cls, response: httpx.Response) -> ApiError:
        """Read the problem+json body; an answer without one (a proxy's page) keeps its status."""
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return cls(response.status_code, "http_error", response.reason_phrase or "error")
        code = str(body.get("code") or "http_error")
        message = str(body.get("detail") or body.get("title") or response.reason_phrase)
        return cls(response.status_code, code, message, body)


class StreamError(Exception):
    """The event stream broke off (a cut connection or an unreadable answer); `wait` reconnects."""
