"""Structural safety checks on an opened PDF: object count, page tree shape, content size and image size."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pypdf import PdfReader
from pypdf.errors import LimitReachedError
from pypdf.filters import decode_stream_data
from pypdf.generic import ArrayObject, DictionaryObject, EncodedStreamObject, NullObject, StreamObject

from ingest_worker.pipeline_errors import (
    DecompressionBombError,
    ImageTooLargeError,
    InvalidPdfError,
    NoPagesError,
    PageCountMismatchError,
    PageTreeCycleError,
    PageTreeTooDeepError,
    PdfLimitError,
    TooManyObjectsError,
    TooManyPagesError,
)

MB = 1024 * 1024


@dataclass(frozen=True)
class PdfLimits:
    """What a PDF may hold before it is refused as abusive rather than read.

    The defaults leave room for large genuine documents: a 2,000-page book holds some 10,000-50,000
    objects and tens of megabytes of page content; a 300 dpi scan of an A0 sheet is 140 megapixels.
    """

    # Entries of the cross-reference tables: each costs the reader memory before any page is read.
    max_objects: int = 1_000_000
    # Balanced page trees of a million pages are 6-10 levels deep.
    max_page_tree_depth: int = 64
    # Decoded content of every page, counted once per page that draws it (pages and forms it uses):
    # text extraction parses all of it, so this bounds its work.
    max_content_mb: int = 256
    # Declared size of one image: renderers allocate width x height x colour channels for it.
    max_image_pixels: int = 150_000_000
    # Form XObjects drawn inside form XObjects.
    max_form_depth: int = 16


def check_object_count(reader: PdfReader, limits: PdfLimits) -> None:
    """Raise TooManyObjectsError when the cross-reference tables list more than `limits.max_objects`."""
    count = sum(len(table) for table in reader.xref.values()) + len(reader.xref_objStm)
    if count > limits.max_objects:
        raise TooManyObjectsError(f"The PDF lists {count} objects; at most {limits.max_objects} are allowed.")


def count_pages(reader: PdfReader, *, max_pages: int, limits: PdfLimits) -> int:
    """The number of pages in the page tree, walked before any library flattens it.

    Raises PageTreeCycleError when a branch is reached twice (a loop, or a branch shared to multiply
    pages), PageTreeTooDeepError, NoPagesError, TooManyPagesError past `max_pages`, and
    PageCountMismatchError when the root's /Count disagrees with the pages found.
    """
    top = _resolve(reader.root_object.get("/Pages"))
    if not isinstance(top, DictionaryObject):
        raise InvalidPdfError("The PDF has no page tree.")
    pages = 0
    on_path: set[int] = {id(top)}
    seen: set[int] = {id(top)}
    stack: list[tuple[int, Iterator[object]]] = [(id(top), iter(_kids(top)))]
    while stack:
        branch_id, kids = stack[-1]
        kid = next(kids, None)
        if kid is None:
            stack.pop()
            on_path.discard(branch_id)
            continue
        node = _resolve(kid)
        if not isinstance(node, DictionaryObject) or not node:
            continue  # what readers skip as damage, not a page
        kind = _node_kind(node)
        if kind == "branch":
            if id(node) in on_path:
                raise PageTreeCycleError()
            if id(node) in seen:
                raise PageTreeCycleError("A branch of the PDF's page tree appears in it more than once.")
            if len(stack) >= limits.max_page_tree_depth:
                raise PageTreeTooDeepError(
                    f"The PDF's page tree is more than {limits.max_page_tree_depth} levels deep."
                )
            on_path.add(id(node))
            seen.add(id(node))
            stack.append((id(node), iter(_kids(node))))
        elif kind == "page":
            pages += 1
            if pages > max_pages:
                raise TooManyPagesError(
                    f"The PDF has at least {pages} pages; at most {max_pages} are allowed."
                )
    if pages == 0:
        raise NoPagesError()
    declared = _resolve(top.get("/Count"))
    if declared is not None and declared != pages:
        raise PageCountMismatchError(f"The PDF declares {declared} pages but holds {pages}.")
    return pages


def check_page_content(reader: PdfReader, limits: PdfLimits) -> None:
    """Raise DecompressionBombError when the pages' decoded content passes `limits.max_content_mb`
    (or one stream passes pypdf's own limit), and ImageTooLargeError for an image over
    `limits.max_image_pixels`. Images are judged by their declared size, never decoded.
    """
    budget = _ContentBudget(limits)
    for number, page in enumerate(reader.pages, start=1):
        budget.spend(_resolve(page.get("/Contents")), number)
        budget.visit_resources(page, number, depth=0, forms_on_page=set())


class _ContentBudget:
    """Decoded bytes spent so far; each stream is decoded once and its length remembered."""

    def __init__(self, limits: PdfLimits) -> None:
        self._limits = limits
        self._left = limits.max_content_mb * MB
        self._lengths: dict[int, int] = {}

    def spend(self, contents: object, number: int) -> None:
        streams = contents if isinstance(contents, ArrayObject) else [contents]
        for item in streams:
            stream = _resolve(item)
            if isinstance(stream, StreamObject):
                self._left -= self._decoded_length(stream, number)
        if self._left < 0:
            raise DecompressionBombError(
                f"The content of the PDF's first {number} pages decompresses to more than "
                f"{self._limits.max_content_mb} MB."
            )

    def visit_resources(
        self, holder: DictionaryObject, number: int, *, depth: int, forms_on_page: set[int]
    ) -> None:
        resources = _resolve(holder.get("/Resources"))
        xobjects = _resolve(resources.get("/XObject")) if isinstance(resources, DictionaryObject) else None
        if not isinstance(xobjects, DictionaryObject):
            return
        for item in xobjects.values():
            xobject = _resolve(item)
            if not isinstance(xobject, StreamObject):
                continue
            subtype = _resolve(xobject.get("/Subtype"))
            if subtype == "/Image":
                self._check_image(xobject, number)
            elif subtype == "/Form" and id(xobject) not in forms_on_page:
                if depth >= self._limits.max_form_depth:
                    raise PdfLimitError(f"Forms on page {number} of the PDF nest too deeply.")
                forms_on_page.add(id(xobject))
                self.spend(xobject, number)
                self.visit_resources(xobject, number, depth=depth + 1, forms_on_page=forms_on_page)

    def _decoded_length(self, stream: StreamObject, number: int) -> int:
        key = id(stream)
        if key not in self._lengths:
            try:
                # decode_stream_data, unlike get_data, keeps no decoded copy on the object.
                data = (
                    decode_stream_data(stream)
                    if isinstance(stream, EncodedStreamObject)
                    else stream.get_data()
                )
                self._lengths[key] = len(data)
            except LimitReachedError as exc:
                raise DecompressionBombError(
                    f"A content stream on page {number} of the PDF decompresses to more than allowed."
                ) from exc
        return self._lengths[key]

    def _check_image(self, image: StreamObject, number: int) -> None:
        width, height = _resolve(image.get("/Width")), _resolve(image.get("/Height"))
        if not isinstance(width, int | float) or not isinstance(height, int | float):
            return  # renderers skip an image without a size
        if width * height > self._limits.max_image_pixels:
            raise ImageTooLargeError(
                f"Page {number} of the PDF holds a {width} x {height} pixel image; "
                f"at most {self._limits.max_image_pixels} pixels are allowed."
            )


def _node_kind(node: DictionaryObject) -> str:
    """'branch', 'page' or 'other', decided as pypdf decides when it flattens the tree."""
    kind = _resolve(node.get("/Type"))
    if kind == "/Pages" or (kind is None and "/Kids" in node):
        return "branch"
    if kind in ("/Page", None):
        return "page"
    return "other"


def _kids(branch: DictionaryObject) -> list[object]:
    kids = _resolve(branch.get("/Kids"))
    if kids is None or isinstance(kids, NullObject):
        return []
    if not isinstance(kids, ArrayObject):
        raise InvalidPdfError("The PDF's page tree is malformed.")
    return list(kids)


def _resolve(value: object) -> object:
    get_object = getattr(value, "get_object", None)
    return get_object() if get_object is not None else value
