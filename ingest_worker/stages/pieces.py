"""The pieces a document text is cut into before packing: paragraphs, and what is too long cut at
sentences, lines, words and characters; tables cut between rows; headings noted on the way.

A piece is (start, end, tokens) of the document text, at most the window long.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

# Split levels, coarse to fine: a piece over the window is split at the next level. Look-behinds keep
# sentence punctuation (and a closing quote or bracket) with the sentence it ends.
_LEVELS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\n\n"),
    re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"')\]\u00bb\u201d\u2019])\s+"),
    re.compile(r"\n"),
    re.compile(r"\s+"),
)
# A paragraph longer than this many characters per token of the window is split without being counted
# first: at the 4-5 characters per token of prose it cannot fit, and if it could, splitting it only lets
# a chunk boundary fall inside it. Saves a tokenizer pass over most of a document.
_SURELY_OVER_CHARS_PER_TOKEN = 12
# The character split never searches a span longer than this many characters per token of the window,
# which bounds its cost on a huge run without whitespace (a base64 blob).
_MAX_CHARS_PER_TOKEN = 32
# A paragraph of its own that reads like a title: short, one line, no closing punctuation, not a footer.
_HEADING_MAX_CHARS = 80
_HEADING_MAX_WORDS = 12
# A line ending in a colon introduces what follows ("For example:"); it does not title it.
_NOT_HEADING_END = ".,;:!?"
_PAGE_FOOTER = re.compile(r"(?i)page\s+\d")
TokenCounter = Callable[[str], int]
# (start, end, tokens) of a piece of the document text.
Piece = tuple[int, int, int]


def heading_judge(page_starts: list[int], measured: list[list[str] | None]) -> Callable[[int, str], bool]:
    """Decides whether the paragraph at an offset is a heading: on a page whose headings extraction
    measured (type size and weight), only those are; elsewhere (OCR) a short one-line paragraph is."""
    remaining = [None if titles is None else list(titles) for titles in measured]

    def is_heading(start: int, paragraph: str) -> bool:
        titles = remaining[bisect.bisect_right(page_starts, start) - 1]
        if titles is None:
            return _is_heading(paragraph)
        if paragraph in titles:
            titles.remove(paragraph)
            return True
        return False

    return is_heading


class Splitter:
    """Cuts the document text into pieces of at most max_tokens each, noting headings on the way."""

    def __init__(
        self, text: str, max_tokens: int, count: TokenCounter, is_heading: Callable[[int, str], bool]
    ) -> None:
        self.text = text
        self.is_heading = is_heading
        self.max_tokens = max_tokens
        self.count = count
        self.pieces: list[Piece] = []
        self.headings: list[tuple[int, str]] = []
        # Start of each table piece → what its chunk's text starts with (a later part's header row).
        self.tables: dict[int, str] = {}

    def split(self) -> Splitter:
        after_heading = 0  # tokens of the heading just before, which the next piece must leave room for
        for start, end in _spans(self.text, 0, len(self.text), _LEVELS[0]):
            paragraph = self.text[start:end]
            heading = self.is_heading(start, paragraph)
            if heading:
                self.headings.append((start, paragraph))
            if _is_table(paragraph):
                self._table(start, end)
            else:
                # The paragraph after a heading is cut finer when its first piece would not fit beside
                # the heading: a heading never makes a chunk of its own.
                self._piece(start, end, 0, limit=self.max_tokens - after_heading)
            after_heading = self.pieces[-1][2] if heading and self.pieces[-1][2] < self.max_tokens else 0
        return self

    def _table(self, start: int, end: int) -> None:
        """A table whole when it fits; otherwise runs of rows, each after the first led by the header."""
        tokens = self.count(self.text[start:end])
        if tokens <= self.max_tokens:
            self._add_table(start, end, tokens, "")
            return
        rows = _spans(self.text, start, end, _LEVELS[2])
        header = self.text[rows[0][0] : rows[0][1]] + "\n"
        group: Piece | None = None  # the rows gathered so far
        prefix = ""  # the first run holds the header itself
        for row_start, row_end in rows:
            if group is not None:
                tokens = self.count(prefix + self.text[group[0] : row_end])
                if tokens <= self.max_tokens:
                    group = (group[0], row_end, tokens)
                    continue
                self._add_table(*group, prefix)
                prefix = header
            tokens = self.count(prefix + self.text[row_start:row_end])
            if tokens <= self.max_tokens:
                group = (row_start, row_end, tokens)
            else:
                # One row that does not fit beside the header: cut it as text.
                self._piece(row_start, row_end, 2)
                group, prefix = None, header
        if group is not None:
            self._add_table(*group, prefix)

    def _add_table(self, start: int, end: int, tokens: int, prefix: str) -> None:
        self.pieces.append((start, end, tokens))
        self.tables[start] = prefix

    def _piece(
        self, start: int, end: int, level: int, tokens: int | None = None, limit: int | None = None
    ) -> None:
        limit = self.max_tokens if limit is None else limit
        if tokens is None and end - start > limit * _SURELY_OVER_CHARS_PER_TOKEN:
            tokens = limit + 1
        if tokens is None:
            tokens = self.count(self.text[start:end])
        if tokens <= limit:
            self.pieces.append((start, end, tokens))
        elif level + 1 == len(_LEVELS):
            self._characters(start, end)
        else:
            for part in _spans(self.text, start, end, _LEVELS[level + 1]):
                # A span with nothing to split at this level goes finer without being counted again.
                self._piece(*part, level + 1, tokens if part == (start, end) else None, limit)

    def _characters(self, start: int, end: int) -> None:
        """Cut a span with no whitespace into the longest prefixes that fit, by binary search."""
        text, count, max_tokens = self.text, self.count, self.max_tokens
        position = start
        while position < end:
            low, high = position + 1, min(end, position + max_tokens * _MAX_CHARS_PER_TOKEN)
            if count(text[position:low]) > max_tokens:
                raise ValueError(f"one character counts more than max_tokens={max_tokens} tokens")
            while low < high:
                middle = (low + high + 1) // 2
                if count(text[position:middle]) <= max_tokens:
                    low = middle
                else:
                    high = middle - 1
            self.pieces.append((position, low, count(text[position:low])))
            position = low


def _spans(text: str, start: int, end: int, separator: re.Pattern[str]) -> list[tuple[int, int]]:
    """The non-blank stretches of text[start:end] between separators, trimmed of whitespace."""
    spans: list[tuple[int, int]] = []
    position = start
    for match in separator.finditer(text, start, end):
        spans.append((position, match.start()))
        position = match.end()
    spans.append((position, end))
    trimmed = []
    for span_start, span_end in spans:
        piece = text[span_start:span_end]
        stripped = piece.strip()
        if stripped:
            left = span_start + (len(piece) - len(piece.lstrip()))
            trimmed.append((left, left + len(stripped)))
    return trimmed


def _is_table(paragraph: str) -> bool:
    lines = paragraph.split("\n")
    return len(lines) >= 2 and all("\t" in line for line in lines)


def _is_heading(paragraph: str) -> bool:
    return (
        len(paragraph) <= _HEADING_MAX_CHARS
        and "\n" not in paragraph
        and paragraph[-1] not in _NOT_HEADING_END
        and (paragraph[0].isupper() or paragraph[0].isdigit())
        and any(char.isalpha() for char in paragraph)
        and len(paragraph.split()) <= _HEADING_MAX_WORDS
        and not _PAGE_FOOTER.match(paragraph)
    )
