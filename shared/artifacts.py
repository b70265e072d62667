"""Values the stages pass along (page texts, chunks, validation reports) and their JSON artifact form,
which the worker writes and the gateway reads back (a document's content)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal, cast

PageSource = Literal["text", "ocr"]
PAGE_SOURCES: tuple[PageSource, ...] = ("text", "ocr")

# Bumped when the shape of a stored artifact changes, so readers can refuse what they do not understand.
ARTIFACT_VERSION = 1


@dataclass(frozen=True)
class PageText:
    """The text of one page: `number` is 1-based; `source` says whether it came from the text layer or OCR.

    `headings` lists, in reading order, the paragraphs of `text` that extraction measured to be headings
    (a short line set larger or bolder than the body text around it); None when nothing was measured
    (OCR, or an artifact written before headings were measured), and the chunker then judges by shape.
    """

    number: int
    text: str
    needs_ocr: bool
    source: PageSource = "text"
    headings: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.number < 1:
            raise ValueError(f"page numbers start at 1, got {self.number}")
        if self.source not in PAGE_SOURCES:
            raise ValueError(f"page source must be one of {PAGE_SOURCES}, got {self.source!r}")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the fields."""
        data = asdict(self)
        data["headings"] = None if self.headings is None else list(self.headings)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PageText:
        """The page `to_dict` described."""
        headings = data.get("headings")
        return cls(
            number=int(data["number"]),
            text=str(data["text"]),
            needs_ocr=bool(data["needs_ocr"]),
            source=cast(PageSource, data["source"]),
            headings=None if headings is None else tuple(str(h) for h in headings),
        )


@dataclass(frozen=True)
class Chunk:
    """A piece of a document sized for the embedder.

    `page_start`/`page_end` are the 1-based first and last pages it draws from. `char_start`/`char_end`
    are a half-open range of code points into the chunker's document text (see `chunk.document_text`),
    and `text` equals that slice. `heading` is the chunk's section: the heading that opens it, or else
    the nearest heading before it, if any. `sections` lists every heading the chunk spans, that one first
    (a chunk gathering short sections or slides carries each of their headings).
    """

    index: int
    text: str
    page_start: int
    page_end: int
    char_start: int
    char_end: int
    token_count: int
    heading: str | None = None
    sections: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the fields."""
        data = asdict(self)
        data["sections"] = list(self.sections)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Chunk:
        """The chunk `to_dict` described."""
        heading = data.get("heading")
        sections = data.get("sections")
        return cls(
            index=int(data["index"]),
            text=str(data["text"]),
            page_start=int(data["page_start"]),
            page_end=int(data["page_end"]),
            char_start=int(data["char_start"]),
            char_end=int(data["char_end"]),
            token_count=int(data["token_count"]),
            heading=None if heading is None else str(heading),
            sections=tuple(str(s) for s in sections) if sections else ((str(heading),) if heading else ()),
        )


@dataclass(frozen=True)
class ValidationReport:
    """What validation learnt: the page count, and whether the file was encrypted but opened without one."""

    page_count: int
    encrypted_opened: bool

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the fields."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ValidationReport:
        """The report `to_dict` described."""
        return cls(page_count=int(data["page_count"]), encrypted_opened=bool(data["encrypted_opened"]))


def artifact_key(job_id: str, name: str) -> str:
    """Where a job's own artifact `name` is stored (a reindex job's stage row may point elsewhere)."""
    return f"artifacts/{job_id}/{name}"


def pages_to_json(pages: list[PageText]) -> bytes:
    """The pages artifact: UTF-8 JSON with a format version."""
    return _dump("pages", [page.to_dict() for page in pages])


def pages_from_json(data: bytes) -> list[PageText]:
    """The pages `pages_to_json` wrote."""
    return [PageText.from_dict(item) for item in load_items("pages", data)]


def chunks_to_json(chunks: list[Chunk]) -> bytes:
    """The chunks artifact: UTF-8 JSON with a format version."""
    return _dump("chunks", [chunk.to_dict() for chunk in chunks])


def chunks_from_json(data: bytes) -> list[Chunk]:
    """The chunks `chunks_to_json` wrote."""
    return [Chunk.from_dict(item) for item in load_items("chunks", data)]


def _dump(kind: str, items: list[dict[str, Any]]) -> bytes:
    document = {"version": ARTIFACT_VERSION, kind: items}
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def load_items(kind: str, data: bytes) -> list[dict[str, Any]]:
    """The items of a stored pages or chunks artifact (`kind` "pages" or "chunks"), as plain dicts."""
    document = json.loads(data.decode("utf-8"))
    if not isinstance(document, dict) or document.get("version") != ARTIFACT_VERSION:
        raise ValueError(f"unsupported {kind} artifact version")
    items = document.get(kind)
    if not isinstance(items, list):
        raise ValueError(f"{kind} artifact holds no {kind} list")
    return items
