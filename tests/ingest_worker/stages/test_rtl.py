"""Right-to-left text: word gaps drawn as the font's space glyph, and the edges of pypdf's runs."""

from __future__ import annotations

from pathlib import Path

from pypdf import PdfReader

from ingest_worker.stages.fonts import RUN_BREAK, PageFonts, decoded, run_break, space_glyph
from ingest_worker.stages.layout import structured_text
from ingest_worker.stages.rtl import changes_direction, visual_edges
from tests.support.text_metrics import words

REAL = Path(__file__).parents[2] / "fixtures" / "real"


def _words(name: str, page: int) -> list[str]:
    return words(structured_text(PdfReader(REAL / name).pages[page]))


def test_the_words_of_an_arabic_line_drawn_in_one_array_stay_apart() -> None:
    # Given a title page whose lines are each one TJ array, words parted by moves (XeTeX, Amiri)
    found = _words("polyglossia-arabic.pdf", 0)
    # Then each word is a word of its own, in reading order
    assert found[:4] == words("اختبار دعم اللغة العربية")
    assert words("فرانسوا شاريت") == found[4:6]


def test_two_pieces_of_an_arabic_line_drawn_by_separate_arrays_stay_apart() -> None:
    # Given an exam's letterhead, where two blocks share a baseline, each drawn by its own array
    found = _words("sexam-exam-ar.pdf", 0)
    # Then the last word of one and the first of the other are not run together
    assert "الوطنیة" in found and "الدیوان" in found
    assert not any(word.startswith("الوطنیةال") for word in found)


def test_a_font_gives_the_code_of_its_own_space_glyph_or_one_it_decodes_to_a_space() -> None:
    # Given a font with a space glyph (Amiri, code 3) and one without (a subset of Simplified Arabic)
    with_space = PageFonts(PdfReader(REAL / "polyglossia-arabic.pdf").pages[1]).get("/F1")
    without = PageFonts(PdfReader(REAL / "sexam-exam-ar.pdf").pages[1]).get("/F1")
    assert with_space is not None and without is not None
    # Then each has a code that decodes to a space, with an advance
    own, other = space_glyph(with_space), space_glyph(without)
    assert own is not None and own.code == b"\x00\x03" and own.width > 0
    assert other is not None and decoded(without, other.code) == " "


def test_the_words_of_a_font_without_a_space_glyph_stay_apart() -> None:
    # Given slides whose Arabic font has no code that decodes to a space (its map gives two of its
    # letters as Latin ones), with two words in one array parted by a move
    page = PdfReader(REAL / "arabi-beamer-slides-ar.pdf").pages[0]
    font = PageFonts(page).get("/F22")
    assert font is not None and space_glyph(font) is None
    # Then a code it leaves unused ends pypdf's right-to-left run in its place
    stand_in = run_break(font)
    assert stand_in is not None and stand_in.run_break and decoded(font, stand_in.code) == RUN_BREAK
    # And the page's words stay apart, with no trace of that code
    text = structured_text(page)
    assert RUN_BREAK not in text
    found = words(text)
    assert "يالج" not in found and found.count("ي") == found.count("الج") > 0


def test_spaces_at_the_ends_of_a_right_to_left_run_change_ends_and_a_line_break_stays() -> None:
    # Given runs as pypdf assembles them: reading order inside, a space carried in at the end
    assert visual_edges("ب(  ") == "  ب("
    assert visual_edges(" سا و") == "سا و "
    assert visual_edges("كلمة \n") == " كلمة\n"
    # Then a run with no text but spaces is left as it is
    assert visual_edges("  ") == "  "


def test_a_right_to_left_letter_and_a_left_to_right_one_are_two_words() -> None:
    # Given letters and digits of both directions side by side
    assert changes_direction("ة", "i") and changes_direction("x", "م") and changes_direction("ب", "4")
    # Then the same direction, punctuation and Arabic-Indic digits (neutral to pypdf) are no boundary
    assert not changes_direction("ب", "ة") and not changes_direction("a", "b")
    assert not changes_direction("ة", "(") and not changes_direction("ب", "٢")
    assert not changes_direction("", "a")
