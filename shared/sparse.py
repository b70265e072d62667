"""Lexical sparse vectors: BM25 term weights over an offline Unicode tokenizer, hashed to 32-bit indices.

The worker encodes each chunk (`document_vector`) and the gateway each query (`query_vector`) with the
same tokenizer and hash, so both sides agree without a shared vocabulary. The document side carries
BM25's term-frequency saturation and length normalisation; the IDF factor is left to Qdrant
(`Modifier.IDF` on the sparse vector), which knows the corpus at query time.

Collisions: a term's index is the first four bytes of its BLAKE2b digest, so two distinct terms share
an index with probability 2^-32 per pair. Colliding terms are simply counted as one term (their
frequencies add up in a chunk): a query for one then also matches chunks holding the other. Nothing
is stored to detect it; with rare pairs among rare terms the effect on a ranking is negligible.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

# BM25's usual constants: `K1` bounds how much a repeated term counts, `B` how much a long chunk is
# discounted. Chunks are cut to a token budget, so their lengths sit near `AVERAGE_CHUNK_TERMS`.
K1 = 1.2
B = 0.75
AVERAGE_CHUNK_TERMS = 150.0

WORD = re.compile(r"\w+")
# Scripts written without spaces between words: a run of them is indexed as overlapping character
# pairs, so a query word matches inside a sentence without a dictionary.
UNSPACED = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+"
)


@dataclass(frozen=True)
class SparseVector:
    """Sorted unique indices and their weights, as Qdrant takes them."""

    indices: list[int]
    values: list[float]


def tokens(text: str) -> list[str]:
    """The terms of `text`: NFKC-normalised, casefolded word runs; unspaced scripts as character pairs."""
    found: list[str] = []
    for word in WORD.findall(unicodedata.normalize("NFKC", text).casefold()):
        start = 0
        for run in UNSPACED.finditer(word):
            found.extend(_pieces(word[start : run.start()]))
            chars = run.group()
            found.extend([chars] if len(chars) == 1 else [chars[i : i + 2] for i in range(len(chars) - 1)])
            start = run.end()
        found.extend(_pieces(word[start:]))
    return found


def _pieces(word: str) -> list[str]:
    # `\w` includes the underscore: `snake_case` is also found by `snake` and `case`.
    return [p for p in word.split("_") if p]


def term_index(term: str) -> int:
    """A stable unsigned 32-bit index of `term` (the same in every process and release)."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest(), "big")


def _counts(text: str) -> tuple[Counter[int], int]:
    terms = tokens(text)
    return Counter(term_index(t) for t in terms), len(terms)


def document_vector(text: str, *, average_terms: float = AVERAGE_CHUNK_TERMS) -> SparseVector:
    """BM25 weights of a chunk's terms, without IDF: tf*(k1+1) / (tf + k1*(1 - b + b*len/avg))."""
    counts, length = _counts(text)
    norm = K1 * (1 - B + B * length / average_terms)
    indices = sorted(counts)
    return SparseVector(indices, [counts[i] * (K1 + 1) / (counts[i] + norm) for i in indices])


def query_vector(text: str) -> SparseVector:
    """One unit per distinct query term: the score is then the sum of IDF * weight of the terms matched."""
    counts, _ = _counts(text)
    indices = sorted(counts)
    return SparseVector(indices, [1.0] * len(indices))
