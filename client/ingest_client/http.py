"""The HTTP layer: the API key, problem+json errors, and bounded retries of 429 and 503 per Retry-After."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx

from ingest_client.errors import ApiError

RETRIED_STATUSES = frozenset({429, 503})


def retry_after_s(response: httpx.Response, default_s: float) -> float:
    """Seconds from Retry-After (a number, or an HTTP date), else `default_s`."""
    value = response.headers.get("Retry-After")
    if value is None:
        return default_s
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return default_s
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)


class Http:
    """An httpx client bound to the service's address and key. A 429 or 503 is tried again after its
    Retry-After (capped at `max_retry_wait_s`), at most `max_retries` times, then raised as ApiError."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout_s: float = 30.0,
        max_retries: int = 5,
        max_retry_wait_s: float = 60.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {api_key}", "User-Agent": "ingest-client/0.1"},
            timeout=timeout_s,
            transport=transport,
        )
        self.max_retries = max_retries
        self.max_retry_wait_s = max_retry_wait_s
        self.sleep = sleep

    def close(self) -> None:
        self.client.close()

    def send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The answer to one call, after retries; an error answer raises ApiError."""
        attempt = 0
        while True:
            response = self.client.request(method, path, **kwargs)
            if response.status_code in RETRIED_STATUSES and attempt < self.max_retries:
                attempt += 1
                wait_s = min(retry_after_s(response, default_s=float(attempt)), self.max_retry_wait_s)
                response.close()
                self.sleep(wait_s)
                continue
            if response.is_error:
                raise ApiError.from_response(response)
            return response

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON body of the answer (None for an empty one)."""
        response = self.send(method, path, **kwargs)
        return response.json() if response.content else None
