"""Which words tesseract read with confidence, and whether those words make text or are a picture's noise.

Tesseract reads something in almost any image: on a photograph, a drawing or a texture it returns short
fragments ("Mis", "oe Ss", "= = =") with low word confidences, now and then one by chance above the rest.
Printed text comes back in lines of words nearly all read with high confidence. So a word is kept only
when its confidence reaches a threshold, a line only when most of it was kept (a lucky fragment amid a
line of noise goes), and a page yields text only when enough confident words remain in such lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Where a word sits in tesseract's layout: block, paragraph and line numbers.
LineKey = tuple[int, int, int]


@dataclass(frozen=True)
class OcrWord:
    """One word as tesseract read it: its text, its confidence (0 to 100) and its line."""

    text: str
    confidence: float
    line: LineKey


@dataclass(frozen=True)
class ConfidenceRule:
    """The thresholds (see Settings: ocr_min_word_confidence_pct and the two after it)."""

    min_word_confidence_pct: float
    min_line_confident_pct: float
    min_line_chars: int
    min_page_words: int

    def __post_init__(self) -> None:
        if not 0 <= self.min_word_confidence_pct <= 100 or not 0 <= self.min_line_confident_pct <= 100:
            raise ValueError("confidence thresholds are percentages, from 0 to 100")
        if self.min_line_chars < 0 or self.min_page_words < 0:
            raise ValueError("min_line_chars and min_page_words must not be negative")


@dataclass(frozen=True)
class PageReading:
    """What a page gave: its text ("" when nothing confident was left) and how many words were read
    and kept."""

    text: str
    words_read: int
    words_kept: int

    @property
    def low_confidence(self) -> bool:
        """Tesseract read words on the page, but none that make text: a photograph, a drawing, noise."""
        return self.words_read > 0 and not self.text


def words_from_data(data: Mapping[str, Sequence[Any]]) -> list[OcrWord]:
    """The words of pytesseract's `image_to_data(..., output_type=Output.DICT)`, in reading order.

    Rows for pages, blocks, paragraphs and lines (level below 5) and empty words are skipped.
    """
    words = []
    for level, text, conf, block, par, line in zip(
        data["level"],
        data["text"],
        data["conf"],
        data["block_num"],
        data["par_num"],
        data["line_num"],
        strict=True,
    ):
        word = str(text).strip()
        if int(level) != 5 or not word:
            continue
        words.append(OcrWord(word, float(conf), (int(block), int(par), int(line))))
    return words


def confident_text(words: Iterable[OcrWord], rule: ConfidenceRule) -> PageReading:
    """The page's text from its confident words, laid out as tesseract lays out plain text: words
    joined by spaces, lines by a newline, paragraphs by a blank line.

    A word is confident when its confidence reaches `rule.min_word_confidence_pct`. A line is kept
    when its confident words hold at least `rule.min_line_confident_pct` of its characters and at
    least `rule.min_line_chars` letters and digits, and only those words are kept of it. The page
    yields "" when fewer than `rule.min_page_words` words are kept.
    """
    lines: dict[LineKey, list[OcrWord]] = {}
    for word in words:
        lines.setdefault(word.line, []).append(word)
    kept_lines: list[tuple[LineKey, list[str]]] = []
    read = kept = 0
    for key, line in lines.items():
        read += len(line)
        sure = [w for w in line if w.confidence >= rule.min_word_confidence_pct]
        total_chars = sum(len(w.text) for w in line)
        if not sure or 100 * sum(len(w.text) for w in sure) < rule.min_line_confident_pct * total_chars:
            continue
        if sum(_alphanumerics(w.text) for w in sure) < rule.min_line_chars:
            continue
        kept += len(sure)
        kept_lines.append((key, [w.text for w in sure]))
    if kept < max(rule.min_page_words, 1):
        return PageReading("", read, 0)
    parts: list[str] = []
    previous: LineKey | None = None
    for key, texts in kept_lines:
        if previous is not None:
            parts.append("\n" if key[:2] == previous[:2] else "\n\n")
        parts.append(" ".join(texts))
        previous = key
    return PageReading("".join(parts), read, kept)


def _alphanumerics(text: str) -> int:
    return sum(1 for char in text if char.isalnum())
