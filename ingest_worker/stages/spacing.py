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
miss is followed by a space character, which pypdf takes as text.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from pypdf.generic import ArrayObject, FloatObject, NameObject, NumberObject

# A move of at least this share of an em between two glyphs is a word gap. TeX's word spaces shrink
# to about 0.22 em on a tight line; its kerns and italic corrections stay under 0.1 em.
WORD_GAP_EM = 0.15
# pypdf adds a space for a move of at least 0.95 x half the font's space width. A space width can be
# smaller than this only for a font whose space is under 0.04 em; steps of a smaller move stay under it.
_STEP = 20.0
# Ten ems: more than twice the space width of any font.
_FAR = 10000.0

Visitor = Callable[[Any, Any, Any, Any], None]


def word_gaps() -> Visitor:
    """A `visitor_operand_before` that makes pypdf read TJ word gaps by WORD_GAP_EM (see the module)."""

    def visit(operator: Any, operands: Any, cm: Any, tm: Any) -> None:
        if operator == b"TJ" and operands and isinstance(operands[0], ArrayObject):
            operands[0][:] = _rewritten(list(operands[0]))

    return visit


def _rewritten(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    threshold = WORD_GAP_EM * 1000
    for index, item in enumerate(items):
        if not isinstance(item, (int, float, NumberObject, FloatObject)) or isinstance(item, bool):
            out.append(item)
            continue
        move = -float(item)
        inside = 0 < index < len(items) - 1
        between_text = inside and _is_text(items[index - 1]) and _is_text(items[index + 1])
        if not math.isfinite(move) or not between_text:
            out.append(item)
        elif move >= threshold:
            # A word gap: a move far beyond any space width, so pypdf adds its space, then the move back.
            # pypdf counts both moves, not its space, into the width of the text, so that stays right.
            out.extend([FloatObject(-(move + _FAR)), FloatObject(_FAR)])
        elif move > _STEP:
            # A kern: the same move in steps too small for pypdf to take any for a word gap.
            steps = math.ceil(move / _STEP)
            out.extend([FloatObject(-move / steps)] * steps)
        else:
            out.append(item)
    return out


def _is_text(item: Any) -> bool:
    return isinstance(item, (str, bytes)) and not isinstance(item, NameObject)
