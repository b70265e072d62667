"""A document's own content and metadata: its chunks, page texts and original file, and PATCH."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ingest_client.errors import ApiError
from ingest_client.http import Http


class DocumentCalls:
    """Mixed into Client; another tenant's document answers 404, as an unknown one does."""

    http: Http

    def update_metadata(self, document_id: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
        """Replace the document's metadata; its points follow without re-embedding. Returns the job
        that rewrites them (the document shows the new metadata at once)."""
        return self.http.json("PATCH", f"/v1/documents/{document_id}", json={"metadata": dict(metadata)})

    def chunks(self, document_id: str, *, limit: int = 100, cursor: str | None = None) -> dict[str, Any]:
        """One page of the indexed version's chunks: `{"items", "next_cursor", ...}` (409 not_indexed
        while no version is indexed)."""
        params = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        return self.http.json("GET", f"/v1/documents/{document_id}/chunks", params=params)

    def iter_chunks(self, document_id: str, *, page_size: int = 100) -> Iterator[dict[str, Any]]:
        """Every chunk of the indexed version, following the cursor."""
        cursor: str | None = None
        while True:
            page = self.chunks(document_id, limit=page_size, cursor=cursor)
            yield from page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def text(self, document_id: str) -> dict[str, Any]:
        """The indexed version's text, page by page, each with its source (text layer or OCR)."""
        return self.http.json("GET", f"/v1/documents/{document_id}/text")

    def download(self, document_id: str, destination: str | Path) -> Path:
        """Stream the original file to `destination` (never held whole in memory); returns its path."""
        path = Path(destination)
        with self.http.client.stream("GET", f"/v1/documents/{document_id}/file") as response:
            if response.is_error:
                response.read()
                raise ApiError.from_response(response)
            with path.open("wb") as out:
                for piece in response.iter_bytes():
                    out.write(piece)
        return path
