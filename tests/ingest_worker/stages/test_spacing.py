"""Word gaps in TJ arrays: pypdf reads a move of WORD_GAP_EM or more as a gap and a smaller one never."""

from __future__ import annotations

from pathlib import Path

from pypdf import PdfReader
from pypdf.generic import ArrayObject, FloatObject, NumberObject, TextStringObject

from ingest_worker.stages.layout import structured_text
from ingest_worker.stages.spacing import WORD_GAP_EM, word_gaps

REAL = Path(__file__).parents[2] / "fixtures" / "real"


def _rewrite(items: list[object]) -> list[object]:
    operands = [ArrayObject(items)]
    word_gaps()(b"TJ", operands, None, None)
    return list(operands[0])


def test_a_word_gap_becomes_a_move_no_space_width_can_hide_and_keeps_the_pen_where_it_was() -> None:
    # Given a word space of a third of an em between two words
    items = _rewrite([TextStringObject("word"), NumberObject(-333), TextStringObject("next")])
    # Then the move is split into one far to the right and one back, adding up to the same move
    moves = [float(i) for i in items if isinstance(i, (NumberObject, FloatObject))]
    assert len(moves) == 2 and moves[0] < -5000 < 5000 < moves[1]
    assert abs(sum(moves) + 333) < 1e-6
    assert [i for i in items if isinstance(i, str)] == ["word", "next"]


def test_a_kern_is_cut_into_steps_too_small_to_read_as_a_gap() -> None:
    # Given a kern just under the word gap
    kern = -(WORD_GAP_EM * 1000 - 1)
    items = _rewrite([TextStringObject("technica"), FloatObject(kern), TextStringObject("l")])
    moves = [float(i) for i in items if isinstance(i, (NumberObject, FloatObject))]
    # Then the same move is made in small steps
    assert len(moves) > 1 and all(-20 <= m < 0 for m in moves)
    assert abs(sum(moves) - kern) < 1e-6


def test_moves_at_the_ends_and_backward_kerns_are_left_alone() -> None:
    # Given a leading move, a backward kern and a trailing move
    items = [
        NumberObject(-500),
        TextStringObject("A"),
        NumberObject(80),
        TextStringObject("V"),
        NumberObject(-400),
    ]
    # Then nothing changes
    assert _rewrite(list(items)) == items


def test_a_word_gap_between_two_arrays_in_different_faces_is_a_space() -> None:
    # Given a glossary entry: a command in a typewriter face, then its description in roman, each an
    # array of its own, a word space apart (pypdf measures the move by the typewriter space: too wide)
    page = PdfReader(REAL / "babel-bulgarian.pdf").pages[16]
    # When the page is read
    text = structured_text(page)
    # Then the two are two words
    assert "\\Romannumeral converts its argument" in text


def test_arrays_drawn_one_after_the_other_are_measured_from_where_the_last_one_ended() -> None:
    # Given a justified line that goes on in a second array without a move, then a lowered "E"
    page = PdfReader(REAL / "vntex-manual-vi.pdf").pages[1]
    # When the page is read
    text = structured_text(page)
    # Then the logo is not taken for two words
    assert "VnT EX" not in text and "VnTEX" in text


def test_the_symbols_of_a_formula_set_in_their_own_faces_are_apart() -> None:
    # Given an exam whose formulas set numbers, variables and indices in faces of their own, close
    # together but not touching ("2x", "14y", "u_n")
    page = PdfReader(REAL / "sexam-exam-ar.pdf").pages[2]
    # When the page is read
    text = structured_text(page)
    # Then each symbol is a word of its own
    assert "2 x" in text and "14 y" in text and "u n" in text
    assert "2x" not in text and "14y" not in text


def test_a_limit_set_under_lim_is_apart_from_it() -> None:
    # Given "lim" with its limit set under it, half a type size lower
    page = PdfReader(REAL / "sexam-exam-ar.pdf").pages[1]
    # When the page is read
    text = structured_text(page)
    # Then the limit is not glued to "lim"
    assert "lim x" in text and "limx" not in text


def test_punctuation_in_another_face_stays_with_its_word() -> None:
    # Given a low opening quote set lower than the word it opens, and angle brackets in a symbol face
    # around an italic argument
    quoted = structured_text(PdfReader(REAL / "babel-bulgarian.pdf").pages[3])
    bracketed = structured_text(PdfReader(REAL / "pdfpages-manual.pdf").pages[1])
    # Then neither is set apart from its word
    assert "”тази" in quoted
    assert "\\usepackage[⟨options⟩]{pdfpages}" in bracketed


def test_a_wide_character_spacing_taken_back_by_moves_leaves_the_word_gaps() -> None:
    # Given a line set with a character spacing of nearly half an em, taken back after every glyph
    # but the last of a word by a move to the left
    page = PdfReader(REAL / "rcs-user-manual.pdf").pages[3]
    # When the page is read
    text = structured_text(page)
    # Then the gap the moves leave between two words is a space
    assert "Spell checked." in text
