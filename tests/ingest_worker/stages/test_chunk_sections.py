"""Tests for the chunk stage's sections: headings label chunks, short sections are gathered, none alone."""

from __future__ import annotations

from shared.artifacts import PageText
from tests.ingest_worker.stages.chunking import MAX_TOKENS, chunked


def test_a_heading_paragraph_labels_the_chunks_after_it() -> None:
    # Given a heading on its own line before prose, and a second section
    body = " ".join(f"Sentence {k} about the warranty terms." for k in range(30))
    returns = " ".join(f"Goods of kind {k} may be returned within a month." for k in range(4))
    text = f"1. Warranty\n\n{body}\n\nReturns Policy\n\n{returns}"
    pages = [PageText(number=1, text=text, needs_ocr=False)]

    # When chunked
    chunks = chunked(pages)

    # Then chunks of the first section carry its heading and the last chunk, opened by it, the second one
    assert chunks[0].heading == "1. Warranty"
    assert chunks[1].heading == "1. Warranty"
    assert chunks[-1].heading == "Returns Policy"
    assert chunks[-1].text.startswith("Returns Policy")
    assert chunks[-1].sections == ("Returns Policy",)


def test_short_sections_are_gathered_into_chunks_of_real_size() -> None:
    # Given slides: a title and a line or two each, far under a quarter of the window
    slides = [f"Slide {n}\n\nThe harbour crane {n} lifts one container a minute." for n in range(1, 9)]
    pages = [PageText(number=n, text=t, needs_ocr=False) for n, t in enumerate(slides, start=1)]

    # When chunked
    chunks = chunked(pages, overlap_tokens=0)

    # Then each chunk reaches a quarter of the window before a heading may close it, and names every
    # slide title it holds, opening with the first
    assert len(chunks) < len(slides)
    assert all(c.token_count >= MAX_TOKENS // 4 for c in chunks)
    assert [title for c in chunks for title in c.sections] == [f"Slide {n}" for n in range(1, 9)]
    assert all(c.text.startswith(c.sections[0]) and c.heading == c.sections[0] for c in chunks)
    # And no heading ends a chunk, and every word is in some chunk
    assert not any(c.text.endswith(c.sections[-1]) for c in chunks)
    assert " ".join(c.text for c in chunks).split() == "\n\n".join(slides).split()


def test_a_short_last_section_joins_the_chunk_before() -> None:
    # Given a long section and a last one of a single short line
    body = " ".join(f"Sentence {k} about the warranty terms." for k in range(12))
    pages = [PageText(number=1, text=f"Warranty\n\n{body}\n\nContact\n\nCall us.", needs_ocr=False)]

    # When chunked
    chunks = chunked(pages)

    # Then the short tail is not a chunk of its own
    assert chunks[-1].text.endswith("Call us.")
    assert chunks[-1].token_count >= MAX_TOKENS // 4
    assert chunks[-1].sections[-1] == "Contact"


def test_a_heading_never_makes_a_chunk_of_its_own() -> None:
    # Given a heading followed by a paragraph that alone nearly fills the window
    words = " ".join(f"Clause {k} binds the carrier." for k in range(40))
    sentences = chunked([PageText(number=1, text=words, needs_ocr=False)], overlap_tokens=0)
    paragraph = sentences[0].text
    pages = [PageText(number=1, text=f"Carriage Terms\n\n{paragraph}\n\nMore terms follow.", needs_ocr=False)]

    # When chunked
    chunks = chunked(pages)

    # Then the heading opens a chunk that also holds text of its section
    assert chunks[0].text.startswith("Carriage Terms\n\nClause 0")
    assert all(c.text.strip() != "Carriage Terms" for c in chunks)


def test_the_rest_of_a_section_is_no_orphan_of_a_few_words() -> None:
    # Given a section whose first paragraph nearly fills the window and whose last is a short line,
    # then a long next section that the short line cannot join
    clauses = " ".join(f"Clause {k} binds the carrier." for k in range(40))
    paragraph = chunked([PageText(number=1, text=clauses, needs_ocr=False)], overlap_tokens=0)[0].text
    terms = " ".join(f"Term {k} of the schedule applies to the pallet." for k in range(12))
    text = f"Carriage\n\n{paragraph}\n\nSee annex B.\n\nSchedule\n\n{terms}"
    pages = [PageText(number=1, text=text, needs_ocr=False)]

    # When chunked with an overlap
    chunks = chunked(pages)

    # Then the chunk ending the section with the short line repeats enough of the text before it to
    # hold half the window, and it stays in its section
    rest = next(c for c in chunks if c.text.endswith("See annex B."))
    before = chunks[rest.index - 1]
    assert before.char_start < rest.char_start < before.char_end
    assert rest.token_count >= MAX_TOKENS // 2
    assert rest.sections == ("Carriage",)
