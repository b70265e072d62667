"""A page's text with its structure: paragraph breaks, headings on lines of their own, tables as rows.

pypdf's plain text has line breaks but no blank lines between paragraphs, so a chunker cannot tell
a paragraph, a heading or a table from the next. Its `visitor_text` reports each run of text with
the font, the size and the position it is drawn at; this module keeps pypdf's text and its reading
order (the order of the content stream, which keeps columns whole) and only changes the whitespace
between runs:

- a run on the same baseline as the one before but set apart from it (pypdf ended the run with a
  line break) is a table cell: cells are joined by a tab, rows by a line break;
- a vertical gap clearly larger than the page's usual line spacing, or a jump back up the page (the
  next column), starts a paragraph (a blank line);
- a short line in a font clearly larger than the body text's, or in a bold face, is a heading and
  stands alone as a paragraph; so does a table (two or more rows of at least two cells);
- labels of a figure or a title block (three or more such lines in a row) are not headings.

Only whitespace changes, so the text itself, and its character error rate, are pypdf's, spaces
between words aside (see `spacing` and `pen`; for right-to-left text `rtl`), and accents set before
their letter, which go after it (see `accents`). Running heads and feet are dropped later (see
`running`).
"""

from __future__ import annotations

import itertools
import math
import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pypdf import PageObject

from ingest_worker.stages.accents import accents_after_letters
from ingest_worker.stages.fonts import RUN_BREAK
from ingest_worker.stages.pen import Pen
from ingest_worker.stages.rtl import RIGHT_TO_LEFT, changes_direction, visual_edges
from ingest_worker.stages.spacing import WORD_GAP_EM, word_gaps

# A gap between lines this many times the usual spacing separates paragraphs.
PARAGRAPH_GAP = 1.5
# Line spacing is at most this many times the body font size (double spacing is 2.4 or so).
MAX_LEADING = 1.5
# Lines whose baselines differ by less than this share of the font size are on one line.
SAME_LINE = 0.3
# A run drawn more than this many type sizes above or below its line starts a new one.
LINE_JUMP = 1.2
# A heading's font is at least this much larger than the body's (or bold), and the line is short.
HEADING_SCALE = 1.08
HEADING_MAX_CHARS = 80
HEADING_MAX_WORDS = 12
# Table cells are short: side-by-side runs averaging more than this are columns of prose.
TABLE_MEAN_CELL_CHARS = 32
# A footnote mark: at most this many digits or symbols, set this much smaller and raised this share of
# the note's type size.
FOOTNOTE_MARK_CHARS = 3
FOOTNOTE_MARK_SCALE = 0.85
FOOTNOTE_MARK_RISE = 0.15
_FOOTNOTE_SYMBOLS = "*\u2217\u2020\u2021\u00a7\u00b6"
# This many short heading-face lines in a row are labels or a title block (see _kinds).
HEADING_MAX_STACK = 3
_NUMBERED = re.compile(r"^(\d+(\.\d+)*\.?|[A-Z]\.|[IVX]+\.)\s+\S")
_CAPTION = re.compile(r"(?i)^(fig(ure)?|table|tab|abbildung|tabelle|listing)\.?\s*\d")
# TeX's bold extended faces: cmbx10, lmbx12, ecbx1000 and their Cyrillic and Latin Modern kin.
_TEX_BOLD = re.compile(r"^[a-z]{0,4}(bx|b)\d")
# A descriptor's /FontWeight at or above this is bold (400 regular, 700 bold).
BOLD_WEIGHT = 600
_BOLD_MARKERS = ("bold", "black", "heavy", "semibold", "demi")


@dataclass
class _Line:
    cells: list[str] = field(default_factory=list)
    y: float = 0.0
    size: float = 0.0
    bold: bool = True

    @property
    def text(self) -> str:
        return "\t".join(cell.strip() for cell in self.cells if cell.strip())

    @property
    def is_row(self) -> bool:
        cells = [cell.strip() for cell in self.cells if cell.strip()]
        # Two columns of prose drawn line by line also put runs side by side on one baseline; their
        # "cells" are whole lines of text, far longer than a table's.
        return len(cells) >= 2 and sum(map(len, cells)) / len(cells) <= TABLE_MEAN_CELL_CHARS


def structured_text(page: PageObject) -> str:
    """The text of `page` as pypdf reads it, with paragraph breaks, headings and table rows marked
    by whitespace (see the module docstring)."""
    return structured_page(page)[0]


def structured_page(page: PageObject) -> tuple[str, list[str] | None]:
    """`structured_text(page)`, and the lines of it measured to be headings, in reading order (None
    when pypdf built its text in a way the measurement cannot follow)."""
    runs: list[tuple[str, float, float, bool]] = []
    reported: list[str] = []
    pen = Pen(page, word_gap_em=WORD_GAP_EM)

    def visit(text: str, cm: Any, tm: Any, font: Any, size: float) -> None:
        if text:
            reported.append(text)
            # The run breaks `spacing` draws only steer pypdf's assembly (see `fonts.RUN_BREAK`).
            text = text.replace(RUN_BREAK, "")
            if RIGHT_TO_LEFT.search(text):
                text = visual_edges(text)
            runs.append((text, *_position(cm, tm, size), _is_bold(font)))

    plain = page.extract_text(visitor_text=visit, visitor_operand_before=word_gaps(pen))
    if "".join(reported) != plain:
        # pypdf built its text some other way (it may for some fonts): keep it as it is.
        return accents_after_letters(plain.replace(RUN_BREAK, "")), None
    lines = _lines(runs)
    for line in lines:
        line.cells = [accents_after_letters(cell) for cell in line.cells]
    return _paragraphs(lines)


def _position(cm: Any, tm: Any, size: float) -> tuple[float, float]:
    """(baseline y, effective font size) in page space."""
    try:
        _, b, c, d, _, f = (float(v) for v in cm)
        _, _, tc, td, te, tf = (float(v) for v in tm)
    except (TypeError, ValueError):
        return 0.0, float(size or 0)
    y = te * b + tf * d + f
    scale = math.hypot(tc, td) * math.hypot(c, d)
    return y, abs(float(size or 0) * scale) or float(size or 0)


def _is_bold(font: Any) -> bool:
    """Whether a font is a bold face: by its name ("Helvetica-Bold", TeX's "CMBX10"), or by the
    weight its descriptor declares."""
    try:
        name = str(font.get("/BaseFont", "")) if font is not None else ""
        name = name.rsplit("+", 1)[-1].lower()  # without a subset prefix ("ABCDEF+")
        if any(marker in name for marker in _BOLD_MARKERS) or _TEX_BOLD.match(name):
            return True
        descriptor = font.get("/FontDescriptor") if font is not None else None
        descriptor = descriptor.get_object() if descriptor is not None else None
        weight = descriptor.get("/FontWeight", 0) if descriptor is not None else 0
        return float(weight) >= BOLD_WEIGHT
    except Exception:
        return False


def _lines(runs: Iterable[tuple[str, float, float, bool]]) -> list[_Line]:
    """Runs grouped into lines; a run that pypdf put on a new line at the same baseline is a cell."""
    lines: list[_Line] = []
    current: _Line | None = None
    ended = True  # the previous run ended its line
    before = ("", 0.0, 0.0)  # the previous piece, its baseline and its size
    for text, y, size, bold in runs:
        pieces = text.split("\n")
        for index, piece in enumerate(pieces):
            if index > 0:
                ended = True
            if not piece and index == len(pieces) - 1:
                continue
            same_baseline = current is not None and abs(current.y - y) < SAME_LINE * max(size, 1.0)
            # pypdf may run on a line into text drawn far below or above it (a page number at the foot).
            elsewhere = current is not None and abs(current.y - y) > LINE_JUMP * max(size, current.size, 1.0)
            if current is None or (ended and not same_baseline) or index > 0 or (elsewhere and piece.strip()):
                current = _Line([piece], y, size, bold)
                lines.append(current)
            elif ended:
                current.cells.append(piece)
            else:
                if _opens_footnote(current.cells[-1], before, y, size) and piece[:1].isalnum():
                    piece = " " + piece
                elif changes_direction(current.cells[-1][-1:], piece[:1]):
                    # A right-to-left word never runs on into a left-to-right one.
                    piece = " " + piece
                current.cells[-1] += piece
            before = (piece, y, size)
            if piece.strip():
                current.size = max(current.size, size)
                current.bold = current.bold and bold
            ended = False
        ended = text.endswith("\n")
    return [line for line in lines if line.text]


def _opens_footnote(cell: str, before: tuple[str, float, float], y: float, size: float) -> bool:
    """Whether `cell` is only a footnote mark (a raised, smaller number or symbol) set right before
    text at `y` in `size`: pypdf glues the mark to the note's first word ("1By e-mail")."""
    mark, mark_y, mark_size = before
    return (
        cell.strip() == mark.strip()
        and 0 < len(mark.strip()) <= FOOTNOTE_MARK_CHARS
        and all(char.isdigit() or char in _FOOTNOTE_SYMBOLS for char in mark.strip())
        and mark_size <= FOOTNOTE_MARK_SCALE * size
        and mark_y - y >= FOOTNOTE_MARK_RISE * size
    )


def _paragraphs(lines: list[_Line]) -> tuple[str, list[str] | None]:
    """The page text and its headings; None for the headings of a page set in one face throughout,
    where type cannot tell a heading (the chunker then goes by the shape of a line)."""
    if not lines:
        return "", []
    gaps = sorted(a.y - b.y for a, b in itertools.pairwise(lines) if a.y - b.y > 0)
    body = statistics.median(line.size for line in lines)
    # The usual line spacing: a low quantile, since a page of one-line paragraphs has few small gaps,
    # and never more than a loose leading, so such a page still gets its breaks.
    spacing = min(gaps[len(gaps) // 4], MAX_LEADING * body) if gaps else 0.0
    kinds = _kinds(lines, body, spacing)
    blocks: list[tuple[str, str]] = []  # (kind, text) of each paragraph
    for i, line in enumerate(lines):
        text = line.text if kinds[i] == "table" else " ".join(line.text.split("\t"))
        if i:
            gap = lines[i - 1].y - line.y
            if (
                kinds[i] == "heading"
                and kinds[i - 1] == "heading"
                and _same_heading(lines[i - 1], line, spacing)
            ):
                # A heading wrapped over two lines is one heading.
                joined = blocks[-1][1]
                blocks[-1] = ("heading", joined + text if joined.endswith("-") else f"{joined} {text}")
                continue
            new_block = kinds[i] != kinds[i - 1] or kinds[i] == "heading"
            if new_block or gap < 0 or (spacing > 0 and gap > PARAGRAPH_GAP * spacing):
                blocks.append((kinds[i], text))
                continue
            blocks[-1] = (blocks[-1][0], f"{blocks[-1][1]}\n{text}")
        else:
            blocks.append((kinds[i], text))
    headings = [text for kind, text in blocks if kind == "heading"]
    one_face = all(abs(line.size - body) < SAME_LINE and line.bold == lines[0].bold for line in lines)
    return "\n\n".join(text for _, text in blocks) + "\n", None if one_face else headings


def _kinds(lines: list[_Line], body: float, spacing: float) -> list[str]:
    """Each line's kind: "heading", "table" (a row among rows) or "text"."""
    kinds = [_kind(line, body) for line in lines]
    # A table needs two rows at least; a lone row is ordinary text.
    for i, kind in enumerate(kinds):
        if kind == "row" and not (
            (i > 0 and kinds[i - 1] in ("row", "table")) or (i + 1 < len(kinds) and kinds[i + 1] == "row")
        ):
            kinds[i] = "text"
        elif kind == "row":
            kinds[i] = "table"
    # A heading broken at a hyphen goes on on the next line, in the same face, whatever its ending.
    for i in range(len(kinds) - 1):
        nxt = lines[i + 1]
        if (
            kinds[i] == "heading"
            and kinds[i + 1] == "text"
            and lines[i].text.endswith("-")
            and len(nxt.text) <= HEADING_MAX_CHARS
            and _same_heading(lines[i], nxt, spacing)
        ):
            kinds[i + 1] = "heading"
    # Three or more short lines in a heading face, one after the other, are labels of a figure or a
    # title block (title, authors, date), not headings of the text below: the first stays a heading
    # only when it is set larger than the body (a title).
    i = 0
    while i < len(kinds):
        j = i
        while j < len(kinds) and kinds[j] == "heading":
            j += 1
        # The first line of each heading in lines i..j-1 (a wrapped heading counts once).
        firsts = [k for k in range(i, j) if k == i or not _same_heading(lines[k - 1], lines[k], spacing)]
        if len(firsts) >= HEADING_MAX_STACK:
            title = lines[i].size >= HEADING_SCALE * body
            keep = firsts[1] if title else i
            kinds[keep:j] = ["text"] * (j - keep)
        i = max(j, i + 1)
    return kinds


def _same_heading(above: _Line, below: _Line, spacing: float) -> bool:
    """Whether two heading lines are one heading wrapped: same face, no paragraph gap between them."""
    gap = above.y - below.y
    return (
        abs(above.size - below.size) < SAME_LINE
        and above.bold == below.bold
        and 0 < gap <= PARAGRAPH_GAP * max(spacing, below.size)
    )


def _kind(line: _Line, body: float) -> str:
    if line.is_row:
        return "row"
    text = line.text
    short = len(text) <= HEADING_MAX_CHARS and len(text.split()) <= HEADING_MAX_WORDS
    larger = body > 0 and line.size >= HEADING_SCALE * body
    # A numbered heading may end in a full stop ("0. Definitions."); a caption is no heading.
    ending = text[-1:] not in ".,;:" or (text.endswith(".") and _NUMBERED.match(text) is not None)
    if short and (larger or line.bold) and ending and not _CAPTION.match(text):
        return "heading"
    return "text"
