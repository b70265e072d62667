"""Text comparison helpers for tests: edit distance and character error rate."""

from __future__ import annotations

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
