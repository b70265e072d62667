"""The chunk stage: normalised page texts cut into overlapping, token-bounded chunks with page ranges.

Offsets: the chunker works on one document text, the normalised texts of the non-empty pages joined by
a blank line (`PAGE_SEPARATOR`); `document_text` builds it. A chunk's `char_start`/`char_end` are a
half-open range of code points into that text, and `chunk.text == document_text(pages)[start:end]`,
except for the later parts of a table too large for one chunk: each starts with the table's header
row and a line break, then the slice.

Tables (a paragraph of two or more lines of tab-separated cells, as extraction writes them) are kept
whole when they fit the window, packed like any other piece; a larger one is split between rows and
each part is a chunk of its own.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

from ingest_worker.stages.normalize import normalize_text
from ingest_worker.stages.pieces import Piece, Splitter, TokenCounter, heading_judge
from shared.artifacts import Chunk, PageText

PAGE_SEPARATOR = "\n\n"

_WORD_START = re.compile(r"(?<=\s)\S")
# A chunk under this share of the window (1/SMALL_SHARE) goes on past a heading into the next section.
SMALL_SHARE = 4


def document_text(pages: list[PageText]) -> str:
    """The text chunk offsets point into: normalised non-empty page texts joined by `PAGE_SEPARATOR`."""
    return _layout(pages)[0]


def chunk_pages(
    pages: list[PageText], *, max_tokens: int, overlap_tokens: int, count_tokens: TokenCounter
) -> list[Chunk]:
    """Cut the pages into chunks of at most `max_tokens` tokens as `count_tokens` counts them.

    Text is split at paragraphs, then sentences, lines, words and, for a word longer than the window,
    characters; the pieces are packed greedily into chunks that fill the window. A heading (one the
    extraction measured, or on pages without measurements a short one-line paragraph) opens a new chunk
    unless the chunk so far holds under a quarter of the window: then the chunk goes on into the next
    section and carries every heading it spans (`sections`), so short sections and slides make chunks
    of real size. A heading never ends a chunk. The rest of a section (or of the document) under half the
    window repeats more of the text before it than the overlap, up to half the window, so it is no
    orphan of a few words. A small last chunk is folded into the one before when both fit. Tables are
    never split while they fit the window. Other chunks start with up to `overlap_tokens` tokens (whole
    words) from the end of the one before. Chunks carry their 1-based
    page range, offsets (see the module docstring), exact token count, the heading of their section and
    the headings they span. Returns no chunks when the pages hold no text.
    Deterministic; the text handed to count_tokens adds up to a small multiple of the document's.
    """
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    if not 0 <= overlap_tokens < max_tokens:
        raise ValueError("overlap_tokens must be at least 0 and below max_tokens")
    text, page_starts, page_numbers, measured = _layout(pages)
    splitter = Splitter(text, max_tokens, count_tokens, heading_judge(page_starts, measured)).split()
    pieces, headings, tables = splitter.pieces, splitter.headings, splitter.tables
    heading_starts = [start for start, _ in headings]
    section_starts = set(heading_starts)
    # A chunk smaller than this does not end at a heading: it goes on into the next section.
    small = max_tokens // SMALL_SHARE

    def chunk(start: int, end: int, tokens: int, prefix: str = "") -> Chunk:
        first = bisect.bisect_right(heading_starts, start) - 1
        last = bisect.bisect_left(heading_starts, end)
        spanned = tuple(title for _, title in headings[max(first, 0) : last])
        return Chunk(
            index=len(chunks),
            text=prefix + text[start:end],
            page_start=page_numbers[bisect.bisect_right(page_starts, start) - 1],
            page_end=page_numbers[bisect.bisect_right(page_starts, end - 1) - 1],
            char_start=start,
            char_end=end,
            token_count=tokens,
            heading=headings[first][1] if first >= 0 else None,
            sections=spanned,
        )

    def fits(j: int, tokens: int) -> bool:
        """Whether piece j joins the chunk holding `tokens`: it fits, is no later part of a split table,
        and, when it is a heading, the chunk is still small and the heading's first piece fits too (a
        heading never ends a chunk)."""
        if tokens + pieces[j][2] > max_tokens or tables.get(pieces[j][0]):
            return False
        if pieces[j][0] not in section_starts:
            return True
        return tokens < small and (
            j + 1 == len(pieces) or tokens + pieces[j][2] + pieces[j + 1][2] <= max_tokens
        )

    chunks: list[Chunk] = []
    previous: tuple[int, int, int] | None = None  # first piece, end piece and start of the last chunk
    i = 0
    while i < len(pieces):
        if tables.get(pieces[i][0]):
            # A later part of a split table is a chunk of its own, led by the table's header row.
            chunks.append(chunk(*pieces[i], prefix=tables[pieces[i][0]]))
            previous, i = None, i + 1
            continue
        start, tokens = pieces[i][0], 0
        # A chunk that opens a section or a table starts clean; otherwise it repeats the previous
        # chunk's tail, as much of the overlap as leaves room for its first piece.
        budget = min(overlap_tokens, max_tokens - pieces[i][2])
        continues = previous is not None and pieces[i][0] not in section_starts and pieces[i][0] not in tables
        if previous and continues and budget > 0:
            tail = _overlap(text, pieces, *previous, budget, count_tokens)
            if tail:
                start, tokens = tail
        j = i + 1
        tokens += pieces[i][2]
        # Pack whole pieces while they fit; a heading closes the chunk unless the chunk is still small.
        while j < len(pieces) and fits(j, tokens):
            tokens += pieces[j][2]
            j += 1
        if previous and continues and overlap_tokens and tokens * 2 < max_tokens:
            # The rest of a section, under half the window: alone it would be an orphan of a few words,
            # so it repeats more of the text before it, up to half the window (chunks that overlap at
            # all; without overlap they tile the text).
            own = sum(piece[2] for piece in pieces[i:j])
            tail = _overlap(text, pieces, *previous, max_tokens // 2 - own, count_tokens)
            if tail and tail[0] < start:
                start, tokens = tail[0], tail[1] + own
        start, j, tokens = _fit(text, pieces, i, start, j, max_tokens, count_tokens)
        chunks.append(chunk(start, pieces[j - 1][1], tokens))
        previous, i = (i, j, start), j
    return _merge_small_tail(chunks, text, small, max_tokens, count_tokens, chunk)


def _merge_small_tail(
    chunks: list[Chunk],
    text: str,
    small: int,
    max_tokens: int,
    count: TokenCounter,
    make: Callable[..., Chunk],
) -> list[Chunk]:
    """The chunks with a small last chunk folded into the one before, when both fit the window: the end
    of a document has no next piece to join."""
    if len(chunks) < 2 or chunks[-1].token_count >= small:
        return chunks
    before, last = chunks[-2], chunks[-1]
    if before.text != text[before.char_start : before.char_end] or last.char_start < before.char_start:
        return chunks  # a later part of a split table keeps its header row and stays apart
    tokens = count(text[before.char_start : last.char_end])
    if tokens > max_tokens:
        return chunks
    del chunks[-2:]
    chunks.append(make(before.char_start, last.char_end, tokens))
    return chunks


def _layout(pages: list[PageText]) -> tuple[str, list[int], list[int], list[list[str] | None]]:
    """The document text; the offset where each non-empty page starts, with that page's number and the
    headings extraction measured on it (normalised like the text; None when none were measured)."""
    parts: list[str] = []
    starts: list[int] = []
    numbers: list[int] = []
    measured: list[list[str] | None] = []
    offset = 0
    for page in sorted(pages, key=lambda p: p.number):
        page_text = normalize_text(page.text)
        if not page_text:
            continue
        if parts:
            parts.append(PAGE_SEPARATOR)
            offset += len(PAGE_SEPARATOR)
        starts.append(offset)
        numbers.append(page.number)
        measured.append(None if page.headings is None else [normalize_text(h) for h in page.headings])
        parts.append(page_text)
        offset += len(page_text)
    return "".join(parts), starts, numbers, measured


def _fit(
    text: str, pieces: list[Piece], i: int, start: int, j: int, max_tokens: int, count: TokenCounter
) -> tuple[int, int, int]:
    """Shrink a packed chunk until its real token count fits: piece sums can miss tokens at the seams."""
    while True:
        tokens = count(text[start : pieces[j - 1][1]])
        if tokens <= max_tokens:
            return start, j, tokens
        if j - 1 > i:
            j -= 1
        elif start != pieces[i][0]:
            start = pieces[i][0]
        else:  # pragma: no cover - a single piece was counted on its own and fits
            raise AssertionError("a piece counted within the window no longer fits")


def _overlap(
    text: str, pieces: list[Piece], i: int, j: int, start: int, overlap_tokens: int, count: TokenCounter
) -> tuple[int, int] | None:
    """(start, tokens) of a tail of a chunk, from a word start, of at most `overlap_tokens` tokens.

    The chunk is text[start:end of pieces[j - 1]] holding pieces i..j-1. Whole trailing pieces (sentences)
    are preferred when they fill at least half the overlap, which costs no counting; otherwise the
    longest tail that fits is found among the word starts of the piece before them.
    """
    end = pieces[j - 1][1]
    total, k = 0, j - 1
    while k >= i and total + pieces[k][2] <= overlap_tokens:
        total += pieces[k][2]
        k -= 1
    if k + 1 < j and pieces[k + 1][0] > start and total * 2 >= overlap_tokens:
        return pieces[k + 1][0], total
    window = max(start, pieces[k][0]) if k >= i else start
    # Never the whole chunk: the next one would repeat it.
    word_starts = [m.start() for m in _WORD_START.finditer(text, window, end) if m.start() > start]
    low, high = 0, len(word_starts)
    best: tuple[int, int] | None = None
    # Tails get shorter as their start moves right, so the first start that fits is found by bisection.
    while low < high:
        middle = (low + high) // 2
        tokens = count(text[word_starts[middle] : end])
        if tokens <= overlap_tokens:
            best = (word_starts[middle], tokens)
            high = middle
        else:
            low = middle + 1
    return best
