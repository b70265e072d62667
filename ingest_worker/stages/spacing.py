"""Word gaps judged from the glyph positions of TJ arrays, where pypdf's own rule misjudges them.

Inside a TJ array a number moves the pen: -333 is a third of an em to the right, a word space in TeX's
fonts; -40 a kern. pypdf takes a move of at least about half the width the font gives its space
character for a word gap. That width is often wrong: a font whose encoding puts a wide glyph at the
space's code (TeX's Armenian fonts: 1059 units) gets no spaces at all, and a font without a space
glyph gets a default that can be narrower than a kern, so words fall apart ("technica l").

`word_gaps()` gives a `visitor_operand_before` for `PageObject.extract_text` that rewrites each TJ
array before pypdf reads it, so that a move of at least WORD_GAP_EM of an em reads as a word gap and
a smaller one never does. Only how pypdf reads the moves changes, not where they put the pen: a
smaller move is cut into steps each too small for pypdf to call a gap, and a word gap pypdf would
miss is followed by a space character, which pypdf takes as text. In an array that draws
right-to-left text, the word gap is drawn as the font's space glyph instead (see `rtl`).

A move is measured with the character spacing (Tc) the pen adds after every glyph: some writers set
a wide one and take it back with moves to the left, so that only the gaps between words are left.

With the page's `Pen`, an array that a move set a word gap apart from the text before it (which
pypdf judges by the font's space width, see `pen`) starts with a space too. In right-to-left text
set in a font without a space glyph, the word gap is drawn as `fonts.RUN_BREAK`, which ends pypdf's
right-to-left run, followed by pypdf's space.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from pypdf.generic import (
    ArrayObject,
    ByteStringObject,
    FloatObject,
    NameObject,
    NumberObject,
    TextStringObject,
)

from ingest_worker.stages.fonts import SpaceGlyph
from ingest_worker.stages.pen import Pen, Placement

# A move of at least this share of an em between two glyphs is a word gap. TeX's word spaces shrink
# to about 0.22 em on a tight line; its kerns and italic corrections stay under 0.1 em. The thin space
# LaTeX sets in its own logo ("LaTeX 2e", .15 of a large font's quad) comes to 0.138 of the type size.
WORD_GAP_EM = 0.13
# pypdf adds a space for a move of at least 0.95 x half the font's space width. A space width can be
# smaller than this only for a font whose space is under 0.04 em; steps of a smaller move stay under it.
_STEP = 20.0
# Ten ems: more than twice the space width of any font.
_FAR = 10000.0

Visitor = Callable[[Any, Any, Any, Any], None]


def word_gaps(pen: Pen | None = None) -> Visitor:
    """A `visitor_operand_before` that makes pypdf read TJ word gaps by WORD_GAP_EM (see the module);
    with the page's `pen`, the moves between arrays too, and right-to-left gaps become space glyphs."""

    def visit(operator: Any, operands: Any, cm: Any, tm: Any) -> None:
        if pen is not None:
            pen.follow(operator, operands)
        if pen is not None and operator == b"Tj" and operands:
            # Nothing to rewrite in a single string, but the next array's gap is measured from it.
            pen.place(operands[:1], cm, tm)
        if operator == b"TJ" and operands and isinstance(operands[0], ArrayObject):
            items = list(operands[0])
            placement = pen.place(items, cm, tm) if pen is not None else None
            operands[0][:] = _opening(placement) + _rewritten(
                items,
                placement.space if placement else None,
                placement.char_spacing if placement else 0.0,
            )

    return visit


def _opening(placement: Placement | None) -> list[Any]:
    """What an array set apart from the text before it starts with: a space, then the pen moved back
    by the advance pypdf counts for it, so pypdf's measure of the text stays as it was."""
    if placement is None or not placement.apart:
        return []
    if placement.right_to_left:
        if placement.space is None:
            return []
        # Each character drawn advances by its width and the character spacing.
        if placement.space.run_break:
            back = placement.space.width + placement.space_advance + 2 * placement.char_spacing
            return [ByteStringObject(placement.space.code), TextStringObject(" "), FloatObject(back)]
        back = placement.space.width + placement.char_spacing
        return [ByteStringObject(placement.space.code), FloatObject(back)]
    return [TextStringObject(" "), FloatObject(placement.space_advance + placement.char_spacing)]


def _rewritten(items: list[Any], space: SpaceGlyph | None = None, char_spacing: float = 0.0) -> list[Any]:
    out: list[Any] = []
    threshold = WORD_GAP_EM * 1000
    for index, item in enumerate(items):
        if not isinstance(item, (int, float, NumberObject, FloatObject)) or isinstance(item, bool):
            out.append(item)
            continue
        move = -float(item)
        inside = 0 < index < len(items) - 1
        between_text = inside and _is_text(items[index - 1]) and _is_text(items[index + 1])
        # The character spacing (Tc) widens the gap after every glyph; some writers set it wide and
        # take it back with moves to the left ("l" 120 "c" under a Tc of 473 leaves a word gap of 353).
        gap = move + char_spacing
        if not math.isfinite(gap) or not between_text:
            out.append(item)
        elif gap >= threshold and space is not None and space.run_break:
            # A word gap of right-to-left text in a font without a space glyph: the code that ends
            # pypdf's right-to-left run, then a move far enough for pypdf to add its space after it.
            out.append(ByteStringObject(space.code))
            out.extend([FloatObject(-(move - space.width - char_spacing + _FAR)), FloatObject(_FAR)])
        elif gap >= threshold and space is not None:
            # A word gap of right-to-left text: the space glyph, then the rest of the move in steps.
            out.append(ByteStringObject(space.code))
            out.extend(_steps(move - space.width - char_spacing))
        elif gap >= threshold:
            # A word gap: a move far beyond any space width, so pypdf adds its space, then the move back.
            # pypdf counts both moves, not its space, into the width of the text, so that stays right.
            out.extend([FloatObject(-(move + _FAR)), FloatObject(_FAR)])
        elif move > _STEP:
            # A kern: the same move in steps too small for pypdf to take any for a word gap.
            out.extend(_steps(move))
        else:
            out.append(item)
    return out


def _steps(move: float) -> list[Any]:
    """A move (thousandths of an em, to the right) in steps too small for pypdf to call a gap."""
    steps = max(1, math.ceil(move / _STEP))
    return [FloatObject(-move / steps)] * steps


def _is_text(item: Any) -> bool:
    return isinstance(item, (str, bytes)) and not isinstance(item, NameObject)
