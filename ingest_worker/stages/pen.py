"""Where each TJ array of a page is drawn, and whether it is set a word gap apart from the one before.

pypdf decides whether two pieces of text placed by a move (Td, Tm, ...) are two words by comparing the
move with half the width the font gives its space character, after a font change the smaller of the
two fonts'. That width is often wrong (a typewriter face's space is a full character wide; some fonts
give it far more), so a word set in one face and the next in another run together:
"\\Romannumeralconverts". Inside a TJ array `spacing` already judges the moves by WORD_GAP_EM of an
em; `Pen` gives the same judgement for the moves between arrays, from where each array starts (its
text matrix) and how far its glyphs, the character spacing (Tc) and its moves advance in pypdf's own
font model (`fonts`).

Where letters or digits of two pieces meet, a smaller gap parts them when the second piece changes
face: set in another font or size, or raised or lowered. The symbols of a formula are such pieces
("2x" is 2 and x, "u_n" u and n, a limit set under "lim"). A word that changes face part-way (a bold
prefix, an italic suffix) is drawn on without a gap and stays whole; punctuation in another face (a
closing parenthesis after italics, a low quote) stays with its word.

It also says whether an array draws right-to-left text and which code draws a space in its font:
pypdf puts the spaces it adds in such text at the end of the run, so `spacing` draws them as glyphs
(see `rtl`).
"""

from __future__ import annotations

import dataclasses
import math
import unicodedata
from dataclasses import dataclass
from typing import Any

from pypdf import PageObject
from pypdf.generic._font import Font

from ingest_worker.stages.fonts import (
    PageFonts,
    SpaceGlyph,
    advance,
    decoded,
    raw_characters,
    run_break,
    space_glyph,
)
from ingest_worker.stages.rtl import RIGHT_TO_LEFT

# A piece drawn this many type sizes above or below the one before is on another line (pypdf's
# threshold); one drawn closer, like a vowel mark set over a letter, belongs to the same line.
OFF_BASELINE = 0.8
# A piece set in another font or size than the one before, or raised or lowered from its baseline,
# starts a new word when it is set at least this share of an em apart from it: the variables and
# numbers of a formula and their indices are set in their own faces close but not touching (0.04 to
# 0.1 em apart in the documents measured); a word that changes face is drawn on without a gap. Two
# faces inside one index ("z^{6n}") can stand 0.032 em apart.
FACE_CHANGE_GAP_EM = 0.035
# A change of type size by more than this share is a change of size, not a rounding of the same one.
_SIZE_CHANGE = 0.01
# A piece whose baseline is this share of its type size above or below the one before is raised or
# lowered (a sub- or superscript); less is the same baseline.
_BASELINE_SHIFT = 0.1
# A piece set this share of the type size or more above or below the one before, but on its line (see
# OFF_BASELINE), is a symbol of its own whatever the gap: a limit set under "lim", an index over a sum.
# Sub- and superscripts, and footnote marks, are raised or lowered less.
SET_APART_SHIFT = 0.5
# The operators that place the next text somewhere new.
_PLACING = (b"Td", b"TD", b"Tm", b"T*", b"BT")


@dataclass(frozen=True)
class Placement:
    """How a TJ array stands to the text drawn before it.

    `apart`: a move placed it at least a word gap from the end of the piece before (or on another
    line, for right-to-left text); `right_to_left`: it draws right-to-left characters; `space`: the
    code of a space in its font, for right-to-left arrays; `space_advance`: what pypdf counts for a
    space character in its font, and `char_spacing` what the character spacing (Tc) adds after each
    glyph, in thousandths of an em."""

    apart: bool
    right_to_left: bool
    space: SpaceGlyph | None
    space_advance: float
    char_spacing: float = 0.0


@dataclass(frozen=True)
class _Piece:
    """Where a TJ array was drawn, in page space measured along its baseline: the baseline's offset,
    the array's two ends along it, its type size; its font and its text (in the order drawn)."""

    y: float
    left: float
    right: float
    size: float
    font: str | None = None
    text: str = ""


class Pen:
    """Follows the text operators of one page as pypdf reads them (see the module)."""

    def __init__(self, page: PageObject, *, word_gap_em: float) -> None:
        self._fonts = PageFonts(page)
        self._word_gap_em = word_gap_em
        self._font: str | None = None
        self._size = 0.0
        self._char_spacing = 0.0  # Tc, in unscaled text space units
        self._saved: list[tuple[str | None, float, float]] = []
        self._last: _Piece | None = None  # the last array drawn
        self._placed = False  # a text positioning operator came after it
        self._codes: dict[tuple[str | None, bytes], tuple[str, float, int]] = {}
        self._spaces: dict[str | None, SpaceGlyph | None] = {}

    def follow(self, operator: bytes, operands: list[Any]) -> None:
        """Track the current font and character spacing through Tf, Tc, q and Q, as pypdf does, and
        the moves of the text."""
        if operator == b"Tf" and len(operands) >= 2:
            self._font = str(operands[0])
            self._size = _number(operands[1])
        elif operator == b"Tc" and operands:
            self._char_spacing = _number(operands[0])
        elif operator == b"q":
            self._saved.append((self._font, self._size, self._char_spacing))
        elif operator == b"Q" and self._saved:
            self._font, self._size, self._char_spacing = self._saved.pop()
        elif operator in _PLACING:
            self._placed = True
        elif operator in (b"'", b'"'):
            if operator == b'"' and len(operands) >= 2:
                self._char_spacing = _number(operands[1])
            # Text on the next line, drawn where this follower does not measure.
            self._last = None

    def place(self, items: list[Any], cm: Any, tm: Any) -> Placement | None:
        """Where TJ array `items` (or a Tj's string, as a list of one), drawn at text matrix `tm`
        under `cm`, stands; None when its font is not known (pypdf's reading then stands)."""
        font = self._fonts.get(self._font)
        try:
            codes = (
                [self._code(font, bytes(item)) for item in items if isinstance(item, bytes)] if font else []
            )
        except (UnicodeError, LookupError, TypeError):
            font = None
        if font is None:
            self._last = None
            return None
        text = "".join(text for text, _, _ in codes)
        right_to_left = bool(RIGHT_TO_LEFT.search(text))
        space = self._space(font) if right_to_left else None
        spacing = 1000 * self._char_spacing / self._size if self._size else 0.0
        placement = Placement(False, right_to_left, space, advance(font, " "), spacing)
        if text and all(unicodedata.combining(char) for char in text):
            # A vowel or other mark, set over a letter of a piece drawn before or after it: part of
            # that word, and no measure of where the line's pieces end.
            return placement
        glyphs = sum(width + count * spacing for _, width, count in codes)
        piece = self._piece(glyphs, items, cm, tm, text)
        last, placed = self._last, self._placed
        if piece is not None and last is not None and not placed:
            # Drawn on from where the last piece ended: pypdf does not move the text matrix by the
            # glyphs it shows, so `tm` is still where that piece began.
            width = piece.right - piece.left
            piece = _Piece(last.y, last.right, last.right + width, piece.size, piece.font, piece.text)
        self._last, self._placed = piece, False
        if piece is None or last is None or not placed:
            return placement
        size = max(piece.size, last.size)
        if abs(piece.y - last.y) > OFF_BASELINE * size:
            # Another line: pypdf breaks the line there; right-to-left text needs its space all the same.
            return dataclasses.replace(placement, apart=right_to_left)
        gap = max(piece.left - last.right, last.left - piece.right)
        threshold = self._word_gap_em
        if _alphanumeric_meet(last, piece):
            if abs(piece.y - last.y) >= SET_APART_SHIFT * size:
                return dataclasses.replace(placement, apart=True)
            if _changes_face(last, piece):
                threshold = FACE_CHANGE_GAP_EM
        return dataclasses.replace(placement, apart=gap >= threshold * size)

    def _space(self, font: Font) -> SpaceGlyph | None:
        """The code that draws a word gap of right-to-left text in the current font: its space glyph,
        or else a run break (see `fonts`); remembered per font."""
        if self._font not in self._spaces:
            self._spaces[self._font] = space_glyph(font) or run_break(font)
        return self._spaces[self._font]

    def _code(self, font: Font, code: bytes) -> tuple[str, float, int]:
        """What `code` decodes to in the current font, how far its glyphs advance (thousandths of
        an em) and how many they are, as pypdf reads and measures them; remembered, since a page
        repeats its words."""
        key = (self._font, code)
        if key not in self._codes:
            raw = raw_characters(font, code)
            self._codes[key] = (decoded(font, code), sum(advance(font, char) for char in raw), len(raw))
        return self._codes[key]

    def _piece(self, glyphs: float, items: list[Any], cm: Any, tm: Any, text: str) -> _Piece | None:
        """Where TJ array `items`, whose glyphs advance `glyphs`, is drawn, from that and its moves."""
        try:
            moves = -sum(
                float(item) for item in items if isinstance(item, (int, float)) and not isinstance(item, bool)
            )
            a, b, c, d, e, f = _times(tm, cm)
        except (TypeError, ValueError, UnicodeError, LookupError):
            return None
        if glyphs <= 0:
            # A font whose widths pypdf cannot read (all naught): where its text ends is not known.
            return None
        width = glyphs + moves
        # Measured along the baseline and across it, so that a page drawn turned (slides set in
        # landscape by a rotated matrix) measures like any other.
        scale = math.hypot(a, b)
        if scale <= 0:
            return None
        along, across = (e * a + f * b) / scale, (f * a - e * b) / scale
        size = abs(self._size) * math.hypot(c, d)
        end = width / 1000 * self._size * scale
        left, right = sorted((along, along + end))
        if not all(math.isfinite(v) for v in (left, right, across, size)):
            return None
        return _Piece(across, left, right, size, self._font, text)


def _alphanumeric_meet(before: _Piece, after: _Piece) -> bool:
    """Whether a letter or digit of `before` meets one of `after`: the last character drawn of one
    and the first of the other, on the side `after` is drawn. Punctuation set in another face or
    off the baseline ("change)" after italics, a low quote) keeps to its word."""
    if after.left >= before.left:
        meeting = before.text[-1:], after.text[:1]
    else:
        meeting = before.text[:1], after.text[-1:]
    return all(char.isalnum() for char in meeting)


def _changes_face(before: _Piece, after: _Piece) -> bool:
    """Whether `after` is set in another font or size than `before`, or off its baseline."""
    size = max(before.size, after.size)
    return (
        before.font != after.font
        or abs(before.size - after.size) > _SIZE_CHANGE * size
        or abs(before.y - after.y) > _BASELINE_SHIFT * size
    )


def _times(tm: Any, cm: Any) -> list[float]:
    """The text matrix `tm` in page space: tm x cm."""
    a, b, c, d, e, f = (float(v) for v in tm)
    p, q, r, s, t, u = (float(v) for v in cm)
    return [a * p + b * r, a * q + b * s, c * p + d * r, c * q + d * s, e * p + f * r + t, e * q + f * s + u]


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) else 0.0
