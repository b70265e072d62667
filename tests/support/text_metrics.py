"""Text comparison helpers for tests: edit distance, character error rate, and word-level checks of
an extraction against a reference one (split words, false joins)."""

from __future__ import annotations

import itertools
import re
import unicodedata

import numpy as np


def squash_whitespace(text: str) -> str:
    """`text` with every run of whitespace replaced by one space, so layouts compare equal."""
    return " ".join(text.split())


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions all cost 1)."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    target = np.frombuffer(b.encode("utf-32-le"), dtype=np.uint32)
    columns = np.arange(len(b) + 1, dtype=np.int64)
    previous = columns.copy()
    for i, char in enumerate(a, start=1):
        substitute = previous[:-1] + (target != ord(char))
        delete = previous[1:] + 1
        row = np.empty_like(previous)
        row[0] = i
        row[1:] = np.minimum(substitute, delete)
        # Insertions chain along the row: row[j] = min_k(row[k] + j - k), a running minimum.
        previous = np.minimum.accumulate(row - columns) + columns
    return int(previous[-1])


def character_error_rate(reference: str, hypothesis: str) -> float:
    """Edit distance over reference length, after squashing whitespace on both sides."""
    ref, hyp = squash_whitespace(reference), squash_whitespace(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    return edit_distance(ref, hyp) / len(ref)


# Words as the quality measurements count them: runs of letters, digits and combining marks, compared
# after NFKC (ligatures such as "ﬁ" become "fi") and case folding.
_WORD = re.compile(
    r"[\w\u0300-\u036f\u0591-\u05c7\u064b-\u065f\u0670\u0900-\u0dff\u0e00-\u0e7f\u1000-\u109f]+"
)
_LINE_END_HYPHEN = re.compile(r"(?<=\w)-\n(?=\w)")


def words(text: str) -> list[str]:
    """The words of `text`, NFKC-normalised and case-folded."""
    return [m.group(0) for m in _WORD.finditer(unicodedata.normalize("NFKC", text).casefold())]


def vocabulary(reference: str) -> set[str]:
    """The words of a reference extraction, with those a line-end hyphen broke also joined."""
    return set(words(reference)) | set(words(_LINE_END_HYPHEN.sub("", reference)))


def split_words(text: str, vocab: set[str]) -> list[str]:
    """Words of `text` absent from `vocab` whose join with the word beside them (across whitespace
    only) is present: "technica l" when the reference says "technical". Each split is listed once."""
    text = unicodedata.normalize("NFKC", text).casefold()
    matches = list(_WORD.finditer(text))
    found: list[str] = []
    previous_joined = False
    for a, b in itertools.pairwise(matches):
        joined = a.group(0) + b.group(0)
        between = text[a.end() : b.start()]
        is_split = (
            bool(between)
            and between.isspace()
            and (a.group(0) not in vocab or b.group(0) not in vocab)
            and joined in vocab
        )
        if is_split and not previous_joined:
            found.append(f"{a.group(0)} {b.group(0)}")
        previous_joined = is_split
    return found


def false_joins(text: str, vocab: set[str]) -> list[str]:
    """Words of `text` absent from `vocab` that split into two words present in it: "thetext"."""
    found = []
    for word in words(text):
        if word in vocab:
            continue
        if any(word[:i] in vocab and word[i:] in vocab for i in range(1, len(word))):
            found.append(word)
    return found
