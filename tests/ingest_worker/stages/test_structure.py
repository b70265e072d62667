"""Structure from extraction to chunks: headings become each chunk's section, tables stay whole."""

from __future__ import annotations

from pathlib import Path

from ingest_worker.stages.chunk import chunk_pages
from ingest_worker.stages.extract import extract_pages
from ingest_worker.stages.normalize import normalize_text
from ingest_worker.stages.running import drop_running_lines
from shared.artifacts import Chunk, PageText
from tests.ingest_worker.stages.chunking import count_tokens
from tests.support.pdfs import write_pdf
from tests.support.structured_pdfs import Section, report_pdf, side_by_side_pdf
from tests.support.text_metrics import squash_whitespace

MAX_TOKENS = 96
OVERLAP_TOKENS = 16
TARIFFS = [
    ["Vessel class", "Gross tonnage", "Harbour due"],
    ["Coaster", "under 3000", "120 EUR"],
    ["Feeder", "3000 to 15000", "480 EUR"],
    ["Mainliner", "over 15000", "1900 EUR"],
]
# Each section's prose uses a word no other section uses, so a chunk tells which section it is from.
MARKERS = {
    "1 Pilotage": "pilot",
    "2 Harbour dues": "tonnage",
    "3 Berths": "quay",
    "4 Waste": "garbage",
    "5 Contacts": "radio",
}
PROSE = {
    "pilot": "A {m} boards every ship at the outer buoy and stays on the bridge until the ship is moored.",
    "tonnage": "The dues depend on the gross {m} of the vessel and are invoiced after departure.",
    "quay": "Each {m} is assigned a day ahead, and a ship that arrives late loses its slot at the {m}.",
    "garbage": "Ships hand their {m} to the barge, which sails twice a day along the berths.",
    "radio": "The duty officer answers the {m} on channel twelve at every hour of the day and night.",
}


def sections(table: list[list[str]]) -> list[Section]:
    out = []
    for heading, marker in MARKERS.items():
        sentence = PROSE[marker].format(m=marker)
        paragraphs = [" ".join([sentence] * 3) for _ in range(4)]
        out.append(Section(heading, paragraphs, table if marker == "tonnage" else ()))
    return out


def chunks_of(tmp_path: Path, pdf: bytes, max_tokens: int = MAX_TOKENS) -> tuple[list[PageText], list[Chunk]]:
    pages = extract_pages(write_pdf(tmp_path, pdf), min_chars=20)
    chunks = chunk_pages(
        pages, max_tokens=max_tokens, overlap_tokens=OVERLAP_TOKENS, count_tokens=count_tokens
    )
    return pages, chunks


def row_text(row: list[str]) -> str:
    return "\t".join(cell for cell in row if cell)


def test_extraction_marks_paragraphs_headings_and_table_rows(tmp_path: Path) -> None:
    # Given a report with bold headings, paragraphs set apart and a ruled table
    pages = extract_pages(write_pdf(tmp_path, report_pdf(sections(TARIFFS))), min_chars=20)
    text = "\n\n".join(normalize_text(p.text) for p in pages)
    # Then each heading is a paragraph of its own and the table is one block of tab-separated rows
    blocks = text.split("\n\n")
    assert all(heading in blocks for heading in MARKERS)
    assert "\n".join(row_text(row) for row in TARIFFS) in blocks
    # And paragraphs are set apart from each other (four per section)
    prose = [b for b in blocks if b not in MARKERS and "\t" not in b]
    assert len(prose) == 4 * len(MARKERS)


def test_a_table_that_fits_is_one_chunk_and_every_chunk_knows_its_section(tmp_path: Path) -> None:
    # Given a report over several pages with a table that fits the window
    pages, chunks = chunks_of(tmp_path, report_pdf(sections(TARIFFS)))
    assert max(c.page_end for c in chunks) >= 2
    # Then exactly one chunk holds the table, whole, and no other chunk holds any of its rows
    table = "\n".join(row_text(row) for row in TARIFFS)
    holding = [c for c in chunks if table in c.text]
    assert len(holding) == 1
    assert not [c for c in chunks if c is not holding[0] and any(row_text(r) in c.text for r in TARIFFS)]
    # And each chunk's section is the heading of the section its text comes from
    for chunk in chunks:
        found = {heading for heading, marker in MARKERS.items() if marker in chunk.text}
        if chunk is holding[0]:
            found = {"2 Harbour dues"}
        assert found == {chunk.heading}, chunk
    # And no chunk is over the window, and each one's text is on the pages it names
    texts = {p.number: squash_whitespace(normalize_text(p.text)) for p in pages}
    for chunk in chunks:
        assert chunk.token_count <= MAX_TOKENS and count_tokens(chunk.text) <= MAX_TOKENS
        words = squash_whitespace(chunk.text)
        assert words[:40] in texts[chunk.page_start] and words[-40:] in texts[chunk.page_end], chunk


def test_a_table_over_the_window_is_split_between_rows_with_its_header_repeated(tmp_path: Path) -> None:
    # Given a table of forty rows, far over the window
    big = [TARIFFS[0]] + [
        [f"Class {n}", f"{n * 1000} to {n * 1000 + 999}", f"{n * 40} EUR"] for n in range(1, 41)
    ]
    _, chunks = chunks_of(tmp_path, report_pdf([Section("Harbour dues", ["Dues by tonnage."], big)]))
    header = row_text(big[0])
    parts = [c for c in chunks if header in c.text]
    # Then it is cut into several chunks, each within the window and led by the header row
    assert len(parts) >= 3
    assert all(c.text.startswith(header + "\n") and count_tokens(c.text) <= MAX_TOKENS for c in parts)
    # And every row is in exactly one of them, whole and in order
    rows = [line for c in parts for line in c.text.split("\n")[1:]]
    assert rows == [row_text(r) for r in big[1:]]
    assert {c.heading for c in parts} == {"Harbour dues"}


def test_a_running_head_is_not_taken_for_a_heading() -> None:
    # Given pages that each open with the same running head (its page number aside) and a real heading
    bodies = {1: "Pilots board at the buoy.", 2: "Dues follow the tonnage.", 3: "Berths are assigned daily."}
    texts = [f"Harbour manual, page {n}\n\n{n} Section {n}\n\n{body}\n" for n, body in bodies.items()]
    # When running lines are dropped, knowing the headings measured on each page
    headings = [{f"{n} Section {n}"} for n in bodies]
    kept = drop_running_lines(texts, headings)
    # Then the running head is gone, and the sections of the chunks are the pages' real headings
    assert kept[1] == "2 Section 2\n\nDues follow the tonnage.\n"
    chunks = chunk_pages(
        [
            PageText(number=n, text=t, needs_ocr=False, headings=tuple(h))
            for n, (t, h) in enumerate(zip(kept, headings, strict=True), start=1)
        ],
        max_tokens=MAX_TOKENS,
        overlap_tokens=OVERLAP_TOKENS,
        count_tokens=count_tokens,
    )
    # (sections this short are gathered into one chunk, which names each of them)
    assert [c.sections for c in chunks] == [tuple(f"{n} Section {n}" for n in (1, 2, 3))]
    assert "Harbour manual" not in chunks[0].text


def test_page_numbers_and_a_foot_with_a_date_are_left_out_but_repeated_text_is_not() -> None:
    # Given pages ending with a foot that carries the date and page, a page number alone, and a
    # sentence that happens to end one page and open the next
    foot = "- {n} -\n\nBoard minutes, 3 May 2024, p. {n}\n"
    texts = [
        "Minutes of the board\n\nThe board met at noon. It agreed the budget.\n\n" + foot.format(n=1),
        "It agreed the budget.\n\nThe chair closed the meeting.\n\n" + foot.format(n=2),
    ]
    # When running lines are dropped
    kept = drop_running_lines(texts)
    # Then the foot and the page numbers are gone and the text stays
    assert kept == [
        "Minutes of the board\n\nThe board met at noon. It agreed the budget.\n",
        "It agreed the budget.\n\nThe chair closed the meeting.\n",
    ]


def test_a_table_that_ends_every_page_is_content_not_a_foot() -> None:
    # Given pages that each end with the same table, its rows alike once their digits are masked
    table = "Quarter\tRevenue\tCosts\nQ1\t11\t7\nQ2\t22\t14\nQ3\t33\t21\n"
    seasons = "\n".join(
        f"{{topic}} changed in {season}." for season in ("spring", "summer", "autumn", "winter")
    )
    texts = [seasons.format(topic=topic) + f"\n\n{table}" for topic in ("Sales", "Costs", "Staff")]
    # When running lines are dropped
    kept = drop_running_lines(texts)
    # Then every page keeps its table
    assert kept == texts


def test_prose_columns_drawn_line_by_line_are_not_a_table(tmp_path: Path) -> None:
    # Given two columns of prose whose lines are drawn side by side on shared baselines
    left = ["The left column tells one story and its lines", "run down the page at a steady pace"] * 4
    right = ["while the right column tells another story", "that readers follow on their own"] * 4
    (page,) = extract_pages(write_pdf(tmp_path, side_by_side_pdf(left, right)), min_chars=20)
    # Then no table is made of them: no tabs, every word kept
    assert "\t" not in page.text
    assert squash_whitespace(page.text) == " ".join(f"{a} {b}" for a, b in zip(left, right, strict=True))


def test_pages_of_one_template_keep_their_body() -> None:
    # Given statement pages whose every line recurs on the others once its numbers are masked
    pages = [
        "\n".join(f"Account {n}: balance {n * 100 + line} on day {line}" for line in range(20)) + f"\n{n}\n"
        for n in range(1, 6)
    ]

    # When running heads and feet are left out
    kept = drop_running_lines(pages)

    # Then each page keeps its whole body and loses only its page number
    for page, text in zip(pages, kept, strict=True):
        assert text.split("\n")[:20] == page.split("\n")[:20]
        assert text.strip().split("\n")[-1].startswith("Account")
