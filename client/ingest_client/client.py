"""The service's REST API as methods: uploads, documents, jobs and their progress, search and webhooks."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import httpx

from ingest_client.admin import AdminCalls
from ingest_client.documents import DocumentCalls
from ingest_client.errors import ApiError
from ingest_client.events import Follower
from ingest_client.http import Http
from ingest_client.models import JobUpdate, UploadResult

# A file to upload: a path, or (file name, bytes or a binary file object).
Source = str | Path | tuple[str, bytes | IO[bytes]]


def _read(source: Source) -> tuple[str, bytes]:
    if isinstance(source, tuple):
        name, content = source
        return name, content if isinstance(content, bytes) else content.read()
    path = Path(source)
    return path.name, path.read_bytes()


class Client(AdminCalls, DocumentCalls):
    """A client for one API key (a tenant's, or an admin's for the admin calls). Use it as a context
    manager, or call `close()`. `transport` lets tests (or a proxy set-up) supply httpx's transport;
    `sleep` is how it waits between retries, reconnections and polls."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout_s: float = 30.0,
        max_retries: int = 5,
        max_retry_wait_s: float = 60.0,
        poll_interval_s: float = 1.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.http = Http(
            base_url,
            api_key,
            timeout_s=timeout_s,
            max_retries=max_retries,
            max_retry_wait_s=max_retry_wait_s,
            transport=transport,
            sleep=sleep,
        )
        self.poll_interval_s = poll_interval_s

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    # --- Uploads ---------------------------------------------------------------------------------

    def upload(
        self,
        sources: Iterable[Source],
        *,
        callback_url: str | None = None,
        ocr_languages: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        force: bool = False,
    ) -> list[UploadResult]:
        """Upload each file in its own request under an Idempotency-Key of its own, kept across the
        retries of a 429 or 503, so a retry never makes a second job. A file the service refuses gets
        its ApiError in its result; the others go on."""
        return [
            self.upload_one(
                source, callback_url=callback_url, ocr_languages=ocr_languages, metadata=metadata, force=force
            )
            for source in sources
        ]

    def upload_one(
        self,
        source: Source,
        *,
        callback_url: str | None = None,
        ocr_languages: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        force: bool = False,
        idempotency_key: str | None = None,
    ) -> UploadResult:
        """Upload one file (see `upload`); `metadata` is a flat JSON object the document and its
        points carry."""
        name, content = _read(source)
        key = idempotency_key or f"ingest-client-{uuid.uuid4()}"
        form = {k: v for k, v in (("callback_url", callback_url), ("ocr_languages", ocr_languages)) if v}
        if metadata is not None:
            form["metadata"] = json.dumps(dict(metadata))
        try:
            body = self.http.json(
                "POST",
                "/v1/documents",
                params={"force": "true"} if force else None,
                headers={"Idempotency-Key": key},
                files={"file": (name, content, "application/pdf")},
                data=form,
            )
        except ApiError as error:
            return UploadResult(filename=name, idempotency_key=key, error=error)
        return UploadResult(
            filename=name,
            idempotency_key=key,
            job_id=body.get("job_id"),
            document_id=body.get("document_id"),
            status=body.get("status"),
            duplicate=bool(body.get("duplicate")),
        )

    def wait(self, job_id: str, *, timeout_s: float | None = None) -> Iterator[JobUpdate]:
        """The job's progress as it happens, ending with its final state: from its event stream,
        reconnecting with Last-Event-ID when the stream is cut, and polling the job when no stream
        can be had. Raises TimeoutError after `timeout_s`."""
        follower = Follower(
            self.http,
            job_id,
            poll_interval_s=self.poll_interval_s,
            timeout_s=timeout_s,
            sleep=self.http.sleep,
        )
        return follower.updates()

    # --- Documents -------------------------------------------------------------------------------

    def documents(self, *, limit: int = 20, cursor: str | None = None) -> dict[str, Any]:
        """One page of the caller's documents, newest first: `{"items", "next_cursor"}`."""
        return self.http.json("GET", "/v1/documents", params=_params(limit=limit, cursor=cursor))

    def iter_documents(self, *, page_size: int = 100) -> Iterator[dict[str, Any]]:
        """Every document, following the cursor."""
        return _pages(lambda cursor: self.documents(limit=page_size, cursor=cursor))

    def document(self, document_id: str) -> dict[str, Any]:
        """One document, with its latest job."""
        return self.http.json("GET", f"/v1/documents/{document_id}")

    def delete_document(self, document_id: str) -> dict[str, Any]:
        """Delete a document; returns the delete job."""
        return self.http.json("DELETE", f"/v1/documents/{document_id}")

    # --- Jobs ------------------------------------------------------------------------------------

    def job(self, job_id: str) -> dict[str, Any]:
        """A job's status, stage, progress, counters and error."""
        return self.http.json("GET", f"/v1/jobs/{job_id}")

    def jobs(
        self,
        *,
        status: str | None = None,
        kind: str | None = None,
        limit: int = 20,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """One page of the caller's jobs, newest first: `{"items", "next_cursor"}`."""
        params = _params(status=status, kind=kind, limit=limit, cursor=cursor)
        return self.http.json("GET", "/v1/jobs", params=params)

    def cancel(self, job_id: str) -> dict[str, Any]:
        """Cancel a job (409 job_not_cancellable once it is final)."""
        return self.http.json("POST", f"/v1/jobs/{job_id}/cancel")

    def retry(self, job_id: str) -> dict[str, Any]:
        """Run a failed or dead-lettered job again (409 job_not_retryable otherwise)."""
        return self.http.json("POST", f"/v1/jobs/{job_id}/retry")

    # --- Search ----------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        top_k: int = 10,
        document_id: str | None = None,
        mode: str | None = None,
        min_score: float | None = None,
        filter: Mapping[str, Any] | None = None,  # noqa: A002 (the API's own name)
    ) -> dict[str, Any]:
        """The chunks that best answer `query`: `{"query", "mode", "index_version", "results"}`.
        `mode` is hybrid, dense or keyword (the service's default when None); `filter` takes
        document_ids, filename, page_from, page_to and metadata conditions (see the API docs)."""
        body: dict[str, Any] = {"query": query, "top_k": top_k, **_params(mode=mode, min_score=min_score)}
        narrow = dict(filter or {})
        if document_id is not None:
            narrow["document_ids"] = [document_id]
        if narrow:
            body["filter"] = narrow
        return self.http.json("POST", "/v1/search", json=body)

    # --- Webhooks --------------------------------------------------------------------------------

    def webhook_settings(self) -> dict[str, Any]:
        """The default callback URL and the signing secret."""
        return self.http.json("GET", "/v1/webhooks")

    def set_webhook_settings(self, default_callback_url: str | None) -> dict[str, Any]:
        """Set the default callback URL (None clears it)."""
        body = {"default_callback_url": default_callback_url}
        return self.http.json("PUT", "/v1/webhooks", json=body)

    def rotate_webhook_secret(self) -> dict[str, Any]:
        """A new signing secret; the previous one keeps signing for a while."""
        return self.http.json("POST", "/v1/webhooks/secret/rotate")

    def deliveries(self, job_id: str) -> list[dict[str, Any]]:
        """The webhook delivery log of a job's events, in order."""
        return self.http.json("GET", f"/v1/jobs/{job_id}/deliveries")["items"]

    def redeliver(self, job_id: str, delivery_id: int) -> dict[str, Any]:
        """Send one delivery again (same webhook-id)."""
        path = f"/v1/jobs/{job_id}/deliveries/{delivery_id}/redeliver"
        return self.http.json("POST", path)


def _params(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _pages(fetch: Any) -> Iterator[dict[str, Any]]:
    cursor: str | None = None
    while True:
        page = fetch(cursor)
        yield from page["items"]
        cursor = page.get("next_cursor")
        if not cursor:
            return
