"""The embedded gateway's waitress server, whose own refusals (a malformed request, headers or a body
over its limits, answered before the app runs) are problem+json with a stable code, as the gateway's."""

from __future__ import annotations

import json
from typing import Any

from waitress import create_server
from waitress.channel import HTTPChannel
from waitress.task import ErrorTask

from gateway.errors import CODE_FOR_HTTP_STATUS, problem_document


class ProblemErrorTask(ErrorTask):  # type: ignore[misc]
    """Waitress's error response, as an RFC 9457 problem document instead of plain text."""

    def execute(self) -> None:
        error = self.request.error
        code = CODE_FOR_HTTP_STATUS.get(error.code, "http_error")
        body = json.dumps(problem_document(error.code, code, f"{error.reason}: {error.body}")).encode()
        self.status = f"{error.code} {error.reason}"
        self.response_headers.append(("Content-Type", "application/problem+json"))
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class ProblemChannel(HTTPChannel):  # type: ignore[misc]
    error_task_class = ProblemErrorTask


def make_server(app: Any, **options: Any) -> Any:
    """A waitress server for `app` (options as waitress.serve's) that answers its own errors as
    problem+json; `.run()` serves until interrupted."""
    server = create_server(app, **options)
    server.channel_class = ProblemChannel
    return server
