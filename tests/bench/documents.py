"""Deterministic benchmark documents: pages of business prose as text PDFs and as 300-dpi scans."""

from __future__ import annotations

import random
import re

from tests.support.pdfs import scanned_pdf, text_pdf
from tests.support.retrieval_corpus import CORPUS

# Real sentences (those of the retrieval corpus, minus its headings), so the tokenizer, the chunker and
# tesseract see ordinary business prose with its numbers and punctuation.
_SENTENCES = tuple(
    sentence
    for pages in CORPUS.values()
    for page in pages
    for paragraph in page.split("\n\n")
    if paragraph.endswith(".")
    for sentence in re.split(r"(?<=[.!?])\s+", paragraph)
)
_SENTENCES_PER_PARAGRAPH = 5


def prose_pages(count: int, words_per_page: int, *, seed: int) -> list[str]:
    """`count` pages of about `words_per_page` words of shuffled real sentences, the same every run."""
    rng = random.Random(seed)
    pages = []
    for _ in range(count):
        sentences, words = [], 0
        while words < words_per_page:
            sentence = rng.choice(_SENTENCES)
            sentences.append(sentence)
            words += len(sentence.split())
        paragraphs = [
            " ".join(sentences[i : i + _SENTENCES_PER_PARAGRAPH])
            for i in range(0, len(sentences), _SENTENCES_PER_PARAGRAPH)
        ]
        pages.append("\n\n".join(paragraphs))
    return pages


def text_document(pages: int = 100, words_per_page: int = 280) -> bytes:
    """A text PDF of `pages` moderately dense pages (about 280 words, 2 KB of text each)."""
    return text_pdf(prose_pages(pages, words_per_page, seed=100))


def scanned_document(pages: int = 20, words_per_page: int = 250, dpi: int = 300) -> bytes:
    """A PDF of `pages` page images at `dpi` with no text layer, as a scanner delivers them."""
    return scanned_pdf(prose_pages(pages, words_per_page, seed=200), dpi=dpi)
