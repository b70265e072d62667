"""Text quality on real born-digital documents: what the extract and chunk stages hand to the index,
measured against `pdftotext` (poppler), an independent extractor used only here as the reference.
Word boundaries are checked against the words it reads in either of its reading orders (the page's
layout, and the content stream's with -raw); coverage against its default text.

The documents and what was seen on their pages (running heads, headings) are listed in
tests/fixtures/real/manifest.json. Each test prints its figure per document and in all, then asserts it.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
import shutil
import subprocess
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pypdf import PdfReader

from ingest_worker.stages.chunk import chunk_pages, document_text
from ingest_worker.stages.extract import extract_pages
from shared.artifacts import Chunk, PageText
from shared.embedders.local import LocalEmbedder
from shared.settings import Settings
from tests.support.text_metrics import false_joins, split_words, vocabulary, words

FIXTURES = Path(__file__).parents[2] / "fixtures" / "real"
MANIFEST: list[dict[str, Any]] = json.loads((FIXTURES / "manifest.json").read_text("utf-8"))["documents"]

MAX_SPLIT_SHARE = 0.0005
MAX_FALSE_JOIN_SHARE = 0.0005
MIN_WORD_COVERAGE = 0.99
SMALL_CHUNK_WORDS = 20
MAX_SMALL_CHUNK_SHARE = 0.05
MIN_OUTLINE_MATCH = 0.8
# As the service runs them (settings' defaults and the local embedder's window).
MIN_CHARS = Settings().ocr_min_chars_per_page
OVERLAP_TOKENS = Settings().chunk_overlap_tokens
# A line holding only a page number ("7", "- 7 -", "Page 7", "7 / 12").
PAGE_NUMBER_LINE = re.compile(
    r"(?i)^[\s\-\u2013\u2014]*(page\s+)?\d{1,4}(\s*(/|of)\s*\d{1,4})?[\s\-\u2013\u2014]*$"
)

pytestmark = pytest.mark.skipif(
    shutil.which("pdftotext") is None, reason="needs poppler-utils (make test-debs)"
)


@dataclass(frozen=True)
class Result:
    """One document through extract and chunk, beside its reference text."""

    entry: dict[str, Any]
    pages: list[PageText]
    chunks: list[Chunk]
    # pdftotext's text in its default reading order (the page's layout), and in the order of the
    # content stream (-raw).
    reference: str
    reference_raw: str

    @property
    def vocabulary(self) -> set[str]:
        """The words pdftotext reads in the document, in either order. Its default order breaks some
        words its raw order keeps whole (at a combining mark, 'воздаѧ́ нїй'; at a kern, 'D ABC'), and
        a word it reads whole either way is one of the document's."""
        return vocabulary(self.reference) | vocabulary(self.reference_raw)

    @property
    def name(self) -> str:
        return str(self.entry["file"])


@functools.cache
def _embedder() -> LocalEmbedder:
    return LocalEmbedder.from_settings(Settings(model_cache_dir=Settings.from_env().model_cache_dir))


@functools.cache
def _result(name: str) -> Result:
    entry = next(e for e in MANIFEST if e["file"] == name)
    path = str(FIXTURES / name)
    embedder = _embedder()
    pages = extract_pages(path, min_chars=MIN_CHARS)
    chunks = chunk_pages(
        pages,
        max_tokens=min(Settings().chunk_max_tokens, embedder.max_tokens),
        overlap_tokens=OVERLAP_TOKENS,
        count_tokens=embedder.count_tokens,
    )
    return Result(entry, pages, chunks, _pdftotext(path), _pdftotext(path, "-raw"))


def _pdftotext(path: str, *options: str) -> str:
    return subprocess.run(
        ["pdftotext", *options, "-enc", "UTF-8", path, "-"], capture_output=True, text=True, check=True
    ).stdout


def _results() -> list[Result]:
    return [_result(entry["file"]) for entry in MANIFEST]


def test_the_set_is_real_varied_and_small() -> None:
    # Given the manifest, then it lists every fixture, at least twenty, of the kinds asked for, within 15 MB
    files = sorted(p.name for p in FIXTURES.glob("*.pdf"))
    assert files == sorted(e["file"] for e in MANIFEST)
    assert len(files) >= 20
    assert sum((FIXTURES / f).stat().st_size for f in files) <= 15 * 2**20
    kinds = {e["kind"] for e in MANIFEST}
    kinds |= {e.get("also_kind") for e in MANIFEST}
    assert {"paper-1col", "paper-2col", "paper-3col", "manual", "form", "newsletter", "slides"} <= kinds
    assert any(e["script"] != "Latin" for e in MANIFEST)
    assert all(e["source"] and e["licence"] for e in MANIFEST)


def test_no_word_is_split() -> None:
    # Given each document's text as chunked, and pdftotext's vocabulary for it
    total, found = _word_checks(split_words, "split")
    # Then at most 0.05% of the words are split in two
    assert found / total <= MAX_SPLIT_SHARE


def test_no_words_are_joined() -> None:
    # Given each document's text as chunked, and pdftotext's vocabulary for it
    total, found = _word_checks(false_joins, "joined")
    # Then at most 0.05% of the words are two words run together
    assert found / total <= MAX_FALSE_JOIN_SHARE


def _word_checks(check: Any, what: str) -> tuple[int, int]:
    """(words, words found by `check`) over the documents, printing each document's figure."""
    total = found = found_default = 0
    for result in _results():
        text = document_text(result.pages)
        hits = check(text, result.vocabulary)
        # For comparison only: against the default order's words alone
        default_order = len(check(text, vocabulary(result.reference)))
        count = len(words(text))
        total, found, found_default = total + count, found + len(hits), found_default + default_order
        print(
            f"\n{result.name}: {count} words, {len(hits)} {what} {hits[:6]} (default order: {default_order})"
        )
    print(f"\n{what} words {found}/{total} = {found / total:.4%}")
    print(f"(against pdftotext's default order alone: {found_default}/{total} = {found_default / total:.4%})")
    return total, found


def test_every_word_lands_in_a_chunk() -> None:
    # Given pdftotext's words for each document
    total = found = 0
    for result in _results():
        in_chunks = {word for chunk in result.chunks for word in words(chunk.text)}
        reference = words(result.reference)
        hits = sum(word in in_chunks for word in reference)
        missing = sorted({word for word in reference if word not in in_chunks})
        total, found = total + len(reference), found + hits
        print(f"\n{result.name}: {hits}/{len(reference)} words in chunks; missing {missing[:8]}")
    print(f"\nwords of pdftotext's text found in some chunk: {found}/{total} = {found / total:.4f}")
    # Then at least 99% of them appear in some chunk
    assert found / total >= MIN_WORD_COVERAGE


def test_chunks_are_of_real_size() -> None:
    # Given the chunks of the documents longer than a page
    total = small = small_tokens = 0
    for result in _results():
        if len(result.pages) < 2:
            continue
        sizes = [len(chunk.text.split()) for chunk in result.chunks]
        under = sum(size < SMALL_CHUNK_WORDS for size in sizes)
        under_tokens = sum(chunk.token_count < SMALL_CHUNK_WORDS for chunk in result.chunks)
        total, small, small_tokens = total + len(sizes), small + under, small_tokens + under_tokens
        print(f"\n{result.name}: {len(sizes)} chunks, {under} under {SMALL_CHUNK_WORDS} words")
    print(
        f"\nchunks under {SMALL_CHUNK_WORDS} words: {small}/{total} = {small / total:.3f}; "
        f"under {SMALL_CHUNK_WORDS} tokens: {small_tokens}/{total} = {small_tokens / total:.3f}"
    )
    # Then at most 5% have fewer than twenty words
    assert small / total <= MAX_SMALL_CHUNK_SHARE


def test_no_chunk_carries_running_heads_or_page_numbers() -> None:
    # Given the running heads and feet seen on the pages, with digit runs written as '#', and the
    # page-number lines of each page: a line holding only a number, first or last on its page in
    # pdftotext's text (a number line inside the page, a code listing's or a figure's, is content)
    found: list[str] = []
    for result in _results():
        patterns = [_head_pattern(head) for head in result.entry["running_heads"]]
        for chunk in result.chunks:
            flat = " ".join(chunk.text.split())
            found += [f"{result.name} chunk {chunk.index}: {p.pattern!r}" for p in patterns if p.search(flat)]
        # (chunks are slices of the page texts: a page number left in a page text is in a chunk)
        reference_pages = result.reference.split("\f")
        for page in result.pages:
            reference = _lines(reference_pages[page.number - 1])
            ours = _lines(page.text)
            for number in {line for line in reference[:2] + reference[-2:] if PAGE_NUMBER_LINE.match(line)}:
                # The page number is gone when the page keeps fewer such lines than pdftotext shows.
                if ours.count(number) >= reference.count(number):
                    found.append(f"{result.name} p{page.number}: page number {number!r}")
    print(f"\nrunning heads or page-number lines in chunks: {len(found)}")
    for item in found[:20]:
        print(f"  {item}")
    # Then no chunk holds one
    assert not found


def _lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.split("\n") if line.strip()]


def test_sections_are_the_headings_the_outline_lists() -> None:
    # Given the documents whose outline lists their headings (the stages never read the outline)
    sections_total = sections_matched = entries_total = entries_matched = 0
    for result in _results():
        if not result.entry["outline_lists_headings"]:
            continue
        outline = [_comparable(t) for t in _outline_titles(str(FIXTURES / result.name))]
        sections = {s for chunk in result.chunks for s in _sections(chunk)}
        comparable = {_comparable(s) for s in sections}
        matched = [s for s in comparable if _matches(s, outline)]
        found = [t for t in outline if _matches(t, comparable)]
        sections_total, sections_matched = sections_total + len(comparable), sections_matched + len(matched)
        entries_total, entries_matched = entries_total + len(outline), entries_matched + len(found)
        print(
            f"\n{result.name}: {len(matched)}/{len(comparable)} sections in the outline "
            f"(not: {sorted(comparable - set(matched))[:5]}); {len(found)}/{len(outline)} outline entries "
            f"are sections (not: {[t for t in outline if t not in found][:5]})"
        )
    section_share, entry_share = sections_matched / sections_total, entries_matched / entries_total
    print(f"\nsections matching an outline entry: {sections_matched}/{sections_total} = {section_share:.3f}")
    print(f"outline entries appearing as sections: {entries_matched}/{entries_total} = {entry_share:.3f}")
    # Then at least 80% of the sections are outline entries, and 80% of the entries are sections
    assert section_share >= MIN_OUTLINE_MATCH
    assert entry_share >= MIN_OUTLINE_MATCH


def _sections(chunk: Chunk) -> list[str]:
    listed = getattr(chunk, "sections", None)
    if listed:
        return list(listed)
    return [chunk.heading] if chunk.heading else []


def _head_pattern(head: str) -> re.Pattern[str]:
    parts = [re.escape(part) for part in head.split("#")]
    return re.compile(r"\d+".join(parts).replace(r"\ ", r"\s+"))


def _outline_titles(path: str) -> list[str]:
    titles: list[str] = []

    def walk(items: list[Any]) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item)
            else:
                titles.append(str(item.title))

    walk(PdfReader(path).outline)
    return titles


def _comparable(title: str) -> str:
    """A heading without its numbering, case or punctuation: "2.1 Usage." and "Usage" compare equal."""
    title = unicodedata.normalize("NFKC", title).casefold()
    title = re.sub(r"^\s*(\d+(\.\d+)*|[ivxlc]+|[a-z])[.)]?\s+", "", title)
    return " ".join(words(title))


def _matches(title: str, others: Any) -> bool:
    return any(
        title == other or difflib.SequenceMatcher(None, title, other).ratio() >= 0.85 for other in others
    )
