"""Right-to-left text as pypdf assembles it, and the word boundaries that assembly loses.

pypdf builds a run of right-to-left characters by putting each glyph it decodes in front of the run
(the glyphs are drawn left to right, so a word's last letter comes first). The space it adds for a
word gap skips that reordering and goes at the end of the run: the words of an Arabic line come out
glued together, their spaces after the last of them ("والعربيةهي  "). A glyph that the font decodes
to a space is reordered like the letters around it and lands between the words, so `spacing` draws
the word gaps of right-to-left text as the font's space glyph (found by `fonts`, placed by `pen`).
A font with no such glyph gets `fonts.RUN_BREAK` instead, a code that ends pypdf's right-to-left run
so that the space it adds next stays in place; `layout` drops it.

What is left is at the edges of the runs pypdf reports, which `layout` mends with `visual_edges`
(a space at the wrong end of a run) and `changes_direction` (two runs of opposite directions that
touch without a space).
"""

from __future__ import annotations

import re

# The characters that make pypdf assemble a run right to left: Hebrew, Arabic and their presentation
# forms, but not the Arabic-Indic digits, which it takes for neutral like spaces and punctuation.
RIGHT_TO_LEFT = re.compile("[\u0590-\u065f\u066e-\u06ef\u06fa-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")


def visual_edges(run: str) -> str:
    """A run of text that pypdf assembled right to left, its spaces at either end swapped.

    pypdf reports runs in the order they are drawn, left to right, and writes a right-to-left run
    in reading order: its first character is the rightmost. A space that ends up first in such a
    run was drawn at its right end, between it and the run reported after it; one that ends up last
    was drawn at its left end (or carried in from before it), between it and the run before. Swapped,
    each separates the run from its neighbour on that side. A line break pypdf ends a run with stays.
    """
    end = "\n" if run.endswith("\n") else ""
    body = run[: len(run) - len(end)]
    core = body.strip(" ")
    if not core:
        return run
    lead = body[: len(body) - len(body.lstrip(" "))]
    trail = body[len(body.rstrip(" ")) :]
    return trail + core + lead + end


def changes_direction(before: str, after: str) -> bool:
    """Whether two characters drawn side by side are a letter of a right-to-left script and a letter
    or digit of a left-to-right one, in either order: pypdf reports the two directions in runs of
    their own, and two such runs touch without a space where the line changes direction."""
    sides = {_direction(before), _direction(after)}
    return sides == {"rtl", "ltr"}


def _direction(char: str) -> str:
    if not char:
        return ""
    if RIGHT_TO_LEFT.match(char):
        return "rtl" if char.isalpha() else ""
    if char.isalpha() or "0" <= char <= "9":
        return "ltr"
    return ""
