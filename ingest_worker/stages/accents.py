"""Accents set before their letter, put after it as combining marks: "˙par" becomes "ṗar".

TeX's accent primitive draws the accent first and the letter under it after; fonts without a
precomposed glyph (OT1's "Poincare" with its acute set before the "e", transliteration tables) show
every accent that way. pypdf reads the glyphs in the order they are drawn, so the accent comes out as
a spacing character before its letter, which splits or garbles the word. A spacing accent right before
a letter is turned into the combining mark after it (NFC then composes the pair). An accent standing
alone ("ˇ") stays, and so does a combining mark wherever it is: one after a space may belong to the
letter before the space as well as to the one after it. The cedilla and the ogonek are left as they
are (TeX draws them after their letter), and so is a tilde that does not follow a letter: in a web
address (a small tilde before "user") it stands for "~".
"""

from __future__ import annotations

import re

# The spacing accents of TeX's text fonts and the combining marks they stand for. The ASCII grave,
# circumflex and tilde are left out: in code and paths they are characters of their own.
SPACING_ACCENTS = {
    "\u00b4": "\u0301",  # acute
    "\u02cb": "\u0300",  # grave (modifier letter)
    "\u02c6": "\u0302",  # circumflex
    "\u02dc": "\u0303",  # tilde
    "\u00af": "\u0304",  # macron
    "\u02c9": "\u0304",  # macron (modifier letter)
    "\u02d8": "\u0306",  # breve
    "\u02d9": "\u0307",  # dot above
    "\u00a8": "\u0308",  # dieresis
    "\u02da": "\u030a",  # ring above
    "\u02dd": "\u030b",  # double acute
    "\u02c7": "\u030c",  # caron
}
_LETTER = r"[^\W\d_]"
_TILDE = "\u02dc"
_BEFORE_LETTER = re.compile(
    f"([{''.join(a for a in SPACING_ACCENTS if a != _TILDE)}]|(?<={_LETTER}){_TILDE})({_LETTER})"
)


def accents_after_letters(text: str) -> str:
    """`text` with each accent set before its letter moved after it, as a combining mark."""
    return _BEFORE_LETTER.sub(lambda m: m.group(2) + SPACING_ACCENTS[m.group(1)], text)
