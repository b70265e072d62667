"""The HTTP adapter of webhook delivery: one POST to an address already checked, errors classified once.

The connection goes to the address the SSRF guard checked (the name is not resolved again, so a
DNS answer that changes between check and connect cannot redirect it), while TLS still verifies
the certificate against the host name. Redirects are never followed (http.client has none).
"""

from __future__ import annotations

import http.client
import socket
import ssl
from typing import Any

from shared.errors import WebhookDeliveryError
from shared.webhooks.callback_urls import Target

MAX_RESPONSE_BYTES = 64 * 1024


def _connect(target: Target, timeout_s: float, connect_timeout_s: float) -> socket.socket:
    last: OSError | None = None
    for address in target.addresses:
        try:
            sock = socket.create_connection((address, target.port), timeout=connect_timeout_s)
        except OSError as exc:
            last = exc
            continue
        sock.settimeout(timeout_s)
        return sock
    raise last or OSError("no address to connect to")


class _PinnedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, target: Target, timeout_s: float, connect_timeout_s: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout_s)
        self._target, self._connect_timeout_s = target, connect_timeout_s

    def connect(self) -> None:
        self.sock = _connect(self._target, self.timeout, self._connect_timeout_s)  # type: ignore[arg-type]


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, target: Target, timeout_s: float, connect_timeout_s: float, context: Any) -> None:
        super().__init__(target.host, target.port, timeout=timeout_s, context=context)
        self._target, self._connect_timeout_s = target, connect_timeout_s

    def connect(self) -> None:
        sock = _connect(self._target, self.timeout, self._connect_timeout_s)  # type: ignore[arg-type]
        self.sock = self._context.wrap_socket(sock, server_hostname=self._target.host)  # type: ignore[attr-defined]


def post(
    target: Target,
    body: bytes,
    headers: dict[str, str],
    *,
    timeout_s: float,
    connect_timeout_s: float,
    tls_context: ssl.SSLContext | None = None,
) -> int:
    """POST `body`; returns the 2xx status, or raises `WebhookDeliveryError` with a stable code."""
    conn: http.client.HTTPConnection
    if target.scheme == "https":
        context = tls_context or ssl.create_default_context()
        conn = _PinnedHTTPSConnection(target, timeout_s, connect_timeout_s, context)
    else:
        conn = _PinnedHTTPConnection(target, timeout_s, connect_timeout_s)
    try:
        conn.request("POST", target.path, body=body, headers=headers)
        response = conn.getresponse()
        response.read(MAX_RESPONSE_BYTES)
        status = response.status
    except TimeoutError as exc:
        raise WebhookDeliveryError("The receiver did not answer in time.", code="webhook_timeout") from exc
    except ssl.SSLError as exc:
        raise WebhookDeliveryError("The TLS handshake failed.", code="webhook_tls_failed") from exc
    except (OSError, http.client.HTTPException) as exc:
        raise WebhookDeliveryError(
            "The receiver could not be reached.", code="webhook_connection_failed"
        ) from exc
    finally:
        conn.close()
    if 200 <= status < 300:
        return status
    raise WebhookDeliveryError(
        f"The receiver answered {status}.",
        code="webhook_redirect_refused" if 300 <= status < 400 else "webhook_http_error",
        status=status,
    )
