"""Whether a page's text reads as language or as the garbage a failed OCR leaves behind.

Another tool's invisible OCR layer (a "sandwich" PDF) may hold good text, or the fragments tesseract
makes of a photograph or a bad scan: "Mis oe Ss ee 2 Ft TT fT = = =". Real text, in any language
written with letters, is mostly words of several letters, cased as words are (lower, Capitalised or
UPPER); garbage is mostly one- and two-character crumbs, symbols and cases mixed at random.
"""

from __future__ import annotations

# Share of a text's tokens that must be words of at least LONG_WORD_LETTERS letters, cased as words
# are. Prose in English, German and French measured 52-74% (68 pages); OCR garbage of pictures 0-15%.
MIN_LONG_WORD_SHARE = 0.35
LONG_WORD_LETTERS = 4
# Share of the visible characters that must be letters: prose holds 92-99%, garbage 74-92%, so this
# only catches symbol soup; the word share does the rest.
MIN_LETTER_SHARE = 0.5
# Texts with fewer tokens are judged on nothing: too short to tell, they count as plausible.
MIN_TOKENS = 8
# Quotes, brackets, stops and dashes, typographic ones too (written as escapes: some look like others).
_EDGE_PUNCTUATION = "\"'()[]{}<>.,;:!?«»„“”\u2018\u2019-\u2013\u2014/*"


def plausible_text(text: str) -> bool:
    """True when `text` reads as words rather than OCR garbage (see the module's note); a text too
    short to judge (under MIN_TOKENS tokens) is plausible."""
    tokens = text.split()
    if len(tokens) < MIN_TOKENS:
        return True
    visible = "".join(tokens)
    letters = sum(char.isalpha() for char in visible)
    if letters < MIN_LETTER_SHARE * len(visible):
        return False
    long_words = sum(_is_long_word(token) for token in tokens)
    return long_words >= MIN_LONG_WORD_SHARE * len(tokens)


def long_word_share(text: str) -> float:
    """The share of `text`'s tokens that are words of LONG_WORD_LETTERS letters or more."""
    tokens = text.split()
    return sum(_is_long_word(token) for token in tokens) / len(tokens) if tokens else 0.0


def _is_long_word(token: str) -> bool:
    core = token.strip(_EDGE_PUNCTUATION)
    # Elisions and compounds ("l'école", "river-bank") are words too.
    letters = core.replace("'", "").replace("\u2019", "").replace("-", "")
    if len(letters) < LONG_WORD_LETTERS or not letters.isalpha():
        return False
    return letters.islower() or letters.isupper() or (letters[0].isupper() and letters[1:].islower())
