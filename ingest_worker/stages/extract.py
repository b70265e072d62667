"""The extract stage: the text layer of every page, with the pages that need OCR marked."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator

import numpy as np
from pypdf import PageObject, PdfReader
from pypdf.generic import ContentStream, DictionaryObject, IndirectObject

from ingest_worker.stages.invisible_text import invisible_share
from ingest_worker.stages.layout import structured_page
from ingest_worker.stages.running import drop_running_lines
from ingest_worker.stages.text_plausibility import plausible_text
from ingest_worker.stages.validate import open_pdf, pdf_errors
from shared.artifacts import PageText

# A page at least this much covered by images, whose text layer is shorter than COVERED_PAGE_MIN_CHARS,
# is a scan carrying a stamp, a page number or a scanner's header line (or another tool's nearly empty
# OCR layer): its words are in the image. OCR renders the whole page, so it also reads whatever text is
# drawn on top of the image; only invisible text of that length is given up. A searchable scan, whose
# invisible layer holds the page's text, stays above the length and keeps its layer.
COVERED_FRACTION = 0.5
COVERED_PAGE_MIN_CHARS = 200
# A page whose text is mostly drawn invisibly (render mode 3) carries another tool's OCR layer; when
# that text is garbage (text_plausibility.py) the page is read again.
INVISIBLE_LAYER_FRACTION = 0.5
# Coverage is measured on a grid over the crop box: enough to tell a full-page scan from a figure.
_COVERAGE_GRID = 64
# Forms may draw forms: a nesting depth and an invocation budget stop a file built to loop or explode.
_MAX_FORM_DEPTH = 8
_MAX_FORM_INVOCATIONS = 256

Matrix = tuple[float, float, float, float, float, float]
_IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


def extract_pages(path: str, *, min_chars: int) -> list[PageText]:
    """The text of each page of the PDF at `path`, in page order (numbers from 1), with blank lines
    between paragraphs, headings on lines of their own and table rows as tab-separated cells (see
    `layout.structured_text`), running heads, feet and page numbers left out (see `running`), and
    the headings measured on the page (`PageText.headings`).

    A page whose text layer has fewer than `min_chars` visible characters (not whitespace, not
    control characters) is marked `needs_ocr`, and so is a page mostly covered by images whose text
    layer is short (see COVERED_FRACTION), and a page whose invisible OCR layer is garbage (see
    `garbage_ocr_layer`); its text is kept as found. A page pypdf cannot read raises
    InvalidPdfError naming the page, or PdfLimitError when it trips a safety limit; the file-level
    errors are those of `validate.open_pdf`.
    """
    reader, _ = open_pdf(path)
    with pdf_errors():
        page_count = len(reader.pages)
    pages: list[PageText] = []
    wide: list[bool] = []  # pages wider than tall: slides, whose steps repeat lines on purpose
    for number in range(1, page_count + 1):
        with pdf_errors(f"Page {number} of the PDF could not be read."):
            page = reader.pages[number - 1]
            text, headings = structured_page(page)
            wide.append(_is_wide(page))
            chars = visible_chars(text)
            # Coverage is only worth its parse for the few pages whose text layer is short.
            needs_ocr = (
                chars < min_chars
                or (chars < COVERED_PAGE_MIN_CHARS and image_coverage(reader, page) >= COVERED_FRACTION)
                or garbage_ocr_layer(reader, page, text)
            )
        pages.append(
            PageText(
                number=number,
                text=text,
                needs_ocr=needs_ocr,
                headings=None if headings is None else tuple(headings),
            )
        )
    texts = drop_running_lines(
        [page.text for page in pages], [set(page.headings or ()) for page in pages], wide
    )
    # A page marked for OCR keeps the text it had: OCR will read the whole page anyway.
    return [p if p.needs_ocr else dataclasses.replace(p, text=t) for p, t in zip(pages, texts, strict=True)]


def _is_wide(page: PageObject) -> bool:
    """Whether the page, as shown (rotation included), is wider than it is tall."""
    try:
        left, bottom, right, top = (float(v) for v in page.cropbox)
        rotated = int(page.get("/Rotate", 0) or 0) % 180 == 90
    except (TypeError, ValueError):
        return False
    width, height = abs(right - left), abs(top - bottom)
    return height < width if not rotated else width < height


def garbage_ocr_layer(reader: PdfReader, page: PageObject, text: str) -> bool:
    """True when `text`, the page's text, is garbage drawn invisibly: a failed OCR layer. Visible text
    is never judged (a real text layer is never OCRed), and the content is parsed only for text that
    reads as garbage."""
    return not plausible_text(text) and invisible_share(reader, page) >= INVISIBLE_LAYER_FRACTION


def visible_chars(text: str) -> int:
    """How many characters of `text` would show on a page (printable and not whitespace)."""
    return sum(1 for char in text if char.isprintable() and not char.isspace())


def image_coverage(reader: PdfReader, page: PageObject) -> float:
    """The fraction (0 to 1) of the page's crop box covered by images, drawn directly or inside forms.

    Each image counts as the bounding box of where it is drawn, so a turned image counts a little more
    than its own area; images drawn over each other count once. Clipping paths and form bounding boxes
    are not followed: an image mostly clipped away still counts whole.
    """
    left, bottom, right, top = (float(v) for v in page.cropbox)
    if right <= left or top <= bottom:
        return 0.0
    covered = np.zeros((_COVERAGE_GRID, _COVERAGE_GRID), dtype=bool)
    contents = page.get_contents()
    if contents is None:
        return 0.0
    for x0, y0, x1, y1 in _ImageFinder(reader).boxes(contents, page.get("/Resources"), _IDENTITY):
        covered[_grid_span(y0, y1, bottom, top), _grid_span(x0, x1, left, right)] = True
    return float(covered.mean())


class _ImageFinder:
    """Walks content streams for the places images are drawn, following forms within a budget."""

    def __init__(self, reader: PdfReader) -> None:
        self._reader = reader
        self._forms_left = _MAX_FORM_INVOCATIONS

    def boxes(
        self, contents: ContentStream, resources: object, ctm: Matrix, depth: int = 0
    ) -> Iterator[tuple[float, float, float, float]]:
        """Bounding boxes, in page space, of the images `contents` draws under the transform `ctm`."""
        xobjects = _dictionary(_dictionary(resources).get("/XObject"))
        stack: list[Matrix] = []
        for operands, operator in contents.operations:
            if operator == b"q":
                stack.append(ctm)
            elif operator == b"Q":
                # An unbalanced Q is common in sloppy files; readers ignore it.
                ctm = stack.pop() if stack else ctm
            elif operator == b"cm":
                matrix = _matrix(operands)
                ctm = _multiply(matrix, ctm) if matrix is not None else ctm
            elif operator == b"INLINE IMAGE":
                yield _unit_square_box(ctm)
            elif operator == b"Do" and operands:
                xobject = _dictionary(xobjects.get(operands[0]))
                if xobject.get("/Subtype") == "/Image":
                    yield _unit_square_box(ctm)
                elif xobject.get("/Subtype") == "/Form" and depth < _MAX_FORM_DEPTH and self._forms_left:
                    self._forms_left -= 1
                    form_ctm = _multiply(_matrix(xobject.get("/Matrix")) or _IDENTITY, ctm)
                    # A form without resources of its own uses those of the stream that draws it.
                    form_resources = xobject.get("/Resources", resources)
                    form = ContentStream(xobject, self._reader)
                    yield from self.boxes(form, form_resources, form_ctm, depth + 1)


def _dictionary(value: object) -> DictionaryObject:
    """`value` resolved, when it is a dictionary (streams are too); an empty one otherwise."""
    if isinstance(value, IndirectObject):
        value = value.get_object()
    return value if isinstance(value, DictionaryObject) else DictionaryObject()


def _grid_span(low: float, high: float, start: float, end: float) -> slice:
    """The grid cells along one axis of the crop box (`start` to `end`) whose centres lie in [low, high]."""
    first = (low - start) / (end - start) * _COVERAGE_GRID
    last = (high - start) / (end - start) * _COVERAGE_GRID
    if not (math.isfinite(first) and math.isfinite(last)):
        return slice(0, 0)
    return slice(round(min(max(first, 0.0), _COVERAGE_GRID)), round(min(max(last, 0.0), _COVERAGE_GRID)))


def _matrix(operands: object) -> Matrix | None:
    """The six numbers of a `cm` operator or a /Matrix, or None when they are not six numbers."""
    if isinstance(operands, IndirectObject):
        operands = operands.get_object()
    if not isinstance(operands, list) or len(operands) != 6:
        return None
    try:
        a, b, c, d, e, f = (float(value) for value in operands)
    except (TypeError, ValueError):
        return None
    return (a, b, c, d, e, f)


def _multiply(m: Matrix, n: Matrix) -> Matrix:
    """The product m n in PDF's row-vector convention: the transform that applies m, then n."""
    return (
        m[0] * n[0] + m[1] * n[2],
        m[0] * n[1] + m[1] * n[3],
        m[2] * n[0] + m[3] * n[2],
        m[2] * n[1] + m[3] * n[3],
        m[4] * n[0] + m[5] * n[2] + n[4],
        m[4] * n[1] + m[5] * n[3] + n[5],
    )


def _unit_square_box(ctm: Matrix) -> tuple[float, float, float, float]:
    """The page-space bounding box of the unit square an image is drawn into."""
    a, b, c, d, e, f = ctm
    xs = (e, a + e, c + e, a + c + e)
    ys = (f, b + f, d + f, b + d + f)
    return min(xs), min(ys), max(xs), max(ys)
