"""The embedded server's gate for large and chunked request bodies: the gateway's own checks that
need only the headers (a valid key, and a Content-Length within the caller's upload limit), answered
as the gateway answers them, so that a request they refuse is refused before its body is read; one
they let in is read up to the caller's limit."""

from __future__ import annotations

from typing import Any

from flask import Flask

from deploy.waitress_server import Verdict
from gateway import request_checks
from gateway.auth import authenticate
from gateway.services import services


def upload_gate(app: Flask) -> Any:
    """A gate for deploy/waitress_server.py: the caller's body limit in bytes lets the request in, a
    refusal is the gateway's whole answer (401, 403 for a suspended tenant, 413), logged and counted
    as any other."""

    def gate(environ: dict[str, Any]) -> Verdict:
        with app.request_context(environ):
            try:
                answer = app.preprocess_request()
                if answer is None:
                    limit_mb = authenticate().max_upload_mb or services().settings.max_upload_mb
                    return request_checks.limit_body(limit_mb)
            except Exception as error:  # rendered by the gateway's error handlers
                answer = app.handle_user_exception(error)
            response = app.finalize_request(answer)
            return response.status, list(response.headers.items()), response.get_data()

    return gate
