"""Text normalisation applied to every page before chunking: NFC, tidy whitespace, joined hyphenation."""

from __future__ import annotations

import re
import unicodedata

# A soft hyphen at a line end marks a word the layout broke: join the halves.
_SOFT_HYPHEN_BREAK = re.compile("\u00ad *\n *")
# Form feeds and vertical tabs separate blocks in extracted and OCR text: treat them as paragraph breaks.
_BLOCK_BREAKS = re.compile(r"[\f\v\u2028\u2029]")
# Other control characters (NUL from broken font maps, escape codes) carry no text.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f\u00ad\u200b\ufeff]")
# Horizontal whitespace of any kind, including no-break and em spaces; a run holding a tab becomes
# one tab, since extraction parts the cells of a table row with tabs (see layout.py).
_SPACES = re.compile(r"[^\S\n]+")
_LINE_EDGE_SPACES = re.compile(r"[ \t]*\n[ \t]*")
# A word broken across lines: letter, hyphen, newline, letter. Look-arounds keep "a-\nb-\nc" joining twice.
_LINE_END_HYPHEN = re.compile(r"(?<=[^\W\d_])-\n(?=[^\W\d_])")
_BLANK_LINES = re.compile(r"\n{3,}")


def normalize_text(text: str) -> str:
    """`text` in NFC with words re-joined across line-end hyphens, single spaces (or a single tab
    where the run of spaces held one), at most one blank line.

    Single newlines (line breaks) are kept; runs of blank lines become one paragraph break. A hyphen at
    the end of a line is removed only when the next line starts with a lower-case letter
    ("exam-\\nple" → "example"), so "Anglo-\\nSaxon" keeps its hyphen and its line break.
    The function is idempotent.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _SOFT_HYPHEN_BREAK.sub("", text)
    text = _BLOCK_BREAKS.sub("\n\n", text)
    # Any other soft hyphen goes with the controls: it only marks where a word may break. Controls go
    # before composing, so a letter and its combining mark that a control separated compose too.
    text = _CONTROL.sub("", text)
    text = unicodedata.normalize("NFC", text)
    text = _SPACES.sub(lambda m: "\t" if "\t" in m.group(0) else " ", text)
    text = _LINE_EDGE_SPACES.sub("\n", text)
    text = _LINE_END_HYPHEN.sub(_join_hyphenated, text)
    text = _BLANK_LINES.sub("\n\n", text)
    # Again at the end: a joined hyphenation can bring composable characters together (Hangul jamo).
    return unicodedata.normalize("NFC", text).strip()


def _join_hyphenated(match: re.Match[str]) -> str:
    following = match.string[match.end()]
    return "" if following.islower() else match.group(0)
