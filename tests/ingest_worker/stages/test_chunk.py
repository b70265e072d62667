"""Tests for the chunk stage's window: sizes, slices, pages, overlap and splits, counted with the offline
embedder's real tokenizer."""

from __future__ import annotations

import itertools
import random
import re

import pytest

from ingest_worker.stages.chunk import chunk_pages, document_text
from shared.artifacts import PageText, chunks_from_json, chunks_to_json
from tests.ingest_worker.stages.chunking import MAX_TOKENS, WORDS, chunked, count_tokens, marked_pages


def test_no_chunk_exceeds_the_window_and_counts_are_exact() -> None:
    # Given twenty pages of prose
    pages = marked_pages(20)

    # When chunked
    chunks = chunked(pages)

    # Then every chunk fits the window by the real tokenizer, and says how many tokens it holds
    assert len(chunks) > 20
    for chunk in chunks:
        assert count_tokens(chunk.text) == chunk.token_count <= MAX_TOKENS


def test_chunks_are_numbered_and_are_slices_of_the_document_text() -> None:
    # Given pages, When chunked
    pages = marked_pages(8)
    chunks = chunked(pages)
    text = document_text(pages)

    # Then indexes run 0..n-1 and each chunk is exactly its offset range of the document text
    assert [chunk.index for chunk in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert text[chunk.char_start : chunk.char_end] == chunk.text
        assert chunk.text == chunk.text.strip()


def test_page_ranges_match_the_text_each_chunk_holds() -> None:
    # Given pages whose sentences name their page
    pages = marked_pages(15)

    # When chunked
    chunks = chunked(pages)

    # Then the pages named inside a chunk lie within its range, and its range is as tight as its text
    for chunk in chunks:
        named = [int(n) for n in re.findall(r"pg(\d+)", chunk.text)]
        assert named, "every chunk of this prose holds a marker"
        assert chunk.page_start <= min(named) and max(named) <= chunk.page_end
        assert chunk.page_end == max(named)
    assert chunks[0].page_start == 1 and chunks[-1].page_end == 15
    assert any(chunk.page_start < chunk.page_end for chunk in chunks), "some chunk spans a page break"


def test_consecutive_chunks_overlap_by_at_most_the_overlap() -> None:
    # Given pages whose paragraphs leave room for an overlap beside them
    pages = marked_pages(10)
    text = document_text(pages)

    # When chunked with an overlap
    chunks = chunked(pages, max_tokens=128, overlap_tokens=24)

    # Then each chunk starts inside the one before, sharing at least one word and at most the overlap
    for before, after in itertools.pairwise(chunks):
        assert before.char_start < after.char_start < before.char_end
        assert 1 <= count_tokens(text[after.char_start : before.char_end]) <= 24


def test_the_overlap_shrinks_to_leave_room_for_the_next_piece() -> None:
    # Given pages whose paragraphs nearly fill the window
    pages = marked_pages(10)
    text = document_text(pages)

    # When chunked with a large overlap
    chunks = chunked(pages, max_tokens=MAX_TOKENS, overlap_tokens=40)

    # Then chunks still fit, and overlaps never exceed the requested size
    for before, after in itertools.pairwise(chunks):
        assert after.token_count <= MAX_TOKENS
        if after.char_start < before.char_end:
            assert count_tokens(text[after.char_start : before.char_end]) <= 40


def test_without_overlap_chunks_tile_the_text() -> None:
    # Given pages, When chunked without overlap
    pages = marked_pages(10)
    chunks = chunked(pages, overlap_tokens=0)
    text = document_text(pages)

    # Then chunks do not overlap, and only whitespace lies between them: no text is lost
    assert chunks[0].char_start == 0 and chunks[-1].char_end == len(text)
    for before, after in itertools.pairwise(chunks):
        assert before.char_end <= after.char_start
        assert text[before.char_end : after.char_start].strip() == ""


def test_a_sentence_longer_than_the_window_is_split_at_words() -> None:
    # Given one sentence of 400 words without any punctuation
    sentence = " ".join(WORDS[k % len(WORDS)] for k in range(400))
    pages = [PageText(number=1, text=sentence, needs_ocr=False)]

    # When chunked
    chunks = chunked(pages)

    # Then it is cut at word boundaries into chunks that fit
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.token_count <= MAX_TOKENS
        assert set(chunk.text.split()) <= set(WORDS)


def test_a_word_longer_than_the_window_is_split_into_characters() -> None:
    # Given a long run of digits and letters without whitespace (a hash dump)
    rng = random.Random(1)
    blob = "".join(rng.choice("abcdefghij0123456789") for _ in range(3000))
    pages = [PageText(number=1, text=f"Checksum follows. {blob} End of record.", needs_ocr=False)]

    # When chunked
    chunks = chunked(pages, overlap_tokens=0)

    # Then every chunk fits, and together they hold the whole blob
    assert all(chunk.token_count <= MAX_TOKENS for chunk in chunks)
    assert blob in "".join(chunk.text for chunk in chunks).replace(" ", "")


def test_seams_that_add_tokens_never_push_a_chunk_over() -> None:
    # Given a tokenizer where a line break costs a token of its own (as in byte-level BPE vocabularies)
    def newline_costly(text: str) -> int:
        return len(text.split()) + text.count("\n")

    pages = marked_pages(6)

    # When chunked with it
    chunks = chunk_pages(pages, max_tokens=40, overlap_tokens=8, count_tokens=newline_costly)

    # Then no chunk exceeds the window by that tokenizer's count
    assert all(newline_costly(chunk.text) == chunk.token_count <= 40 for chunk in chunks)


def test_empty_pages_are_skipped_and_no_text_gives_no_chunks() -> None:
    # Given a document whose pages 1 and 3 are empty (say, scans not yet read)
    pages = [
        PageText(number=1, text="  \n ", needs_ocr=True),
        PageText(number=2, text="Only page two has words in it.", needs_ocr=False),
        PageText(number=3, text="", needs_ocr=True),
    ]

    # When chunked, Then one chunk comes out, attributed to page 2
    (chunk,) = chunked(pages)
    assert (chunk.page_start, chunk.page_end, chunk.char_start) == (2, 2, 0)
    # And a document without text gives no chunks at all
    assert chunked([pages[0], pages[2]]) == []


def test_chunking_is_deterministic_and_survives_the_json_round_trip() -> None:
    # Given pages chunked twice
    pages = marked_pages(5)
    first, second = chunked(pages), chunked(pages)

    # Then the results are equal, and equal again after the artifact round trip
    assert first == second
    assert chunks_from_json(chunks_to_json(first)) == first


def test_counting_stays_linear_in_the_document_length() -> None:
    # Given two hundred pages and a tokenizer that records how much text it was asked to count
    pages = marked_pages(200)
    counted = 0

    def counting(text: str) -> int:
        nonlocal counted
        counted += len(text)
        return count_tokens(text)

    # When chunked
    chunk_pages(pages, max_tokens=256, overlap_tokens=32, count_tokens=counting)

    # Then the tokenizer saw a small multiple of the document, not a quadratic amount
    assert counted <= 4 * len(document_text(pages))


@pytest.mark.parametrize(("max_tokens", "overlap_tokens"), [(0, 0), (10, 10), (10, -1)])
def test_impossible_windows_are_rejected(max_tokens: int, overlap_tokens: int) -> None:
    # Given a window that cannot hold its overlap, When / Then chunking refuses it
    with pytest.raises(ValueError):
        chunk_pages([], max_tokens=max_tokens, overlap_tokens=overlap_tokens, count_tokens=count_tokens)
