"""The confidence rule (pure) and the plausibility of another tool's OCR layer (pure), and the worker's
start-up check of tesseract's languages."""

from __future__ import annotations

import pytest

from ingest_worker.ocr import language_check
from ingest_worker.ocr.language_check import OcrLanguagesMissingError, check_ocr_languages
from ingest_worker.stages.ocr_confidence import ConfidenceRule, OcrWord, confident_text
from ingest_worker.stages.text_plausibility import plausible_text
from shared import ocr_languages
from shared.errors import UnknownOcrLanguageError
from shared.settings import Settings
from tests.support.ocr_texts import TEXTS

RULE = ConfidenceRule(
    min_word_confidence_pct=60, min_line_confident_pct=60, min_line_chars=5, min_page_words=2
)
GARBAGE = "Mis\n\noe Ss\n\nee 2\nFt TT fT\n\n= = =\n\nrs att al Ge LSE"


def words(*lines: str, confidence: float = 95.0, block: int = 1) -> list[OcrWord]:
    return [
        OcrWord(text, confidence, (block, 1, number))
        for number, line in enumerate(lines, start=1)
        for text in line.split()
    ]


def test_lines_of_confident_words_are_laid_out_as_text() -> None:
    # Given two paragraphs of confidently read words
    page = words("The pumps were checked", "in March.") + words("Costs rose.", block=2)

    # When the rule is applied, Then every word is kept, lines and paragraphs as tesseract lays them out
    reading = confident_text(page, RULE)
    assert reading.text == "The pumps were checked\nin March.\n\nCosts rose."
    assert (reading.words_read, reading.words_kept, reading.low_confidence) == (8, 8, False)


def test_low_confidence_words_and_lines_of_crumbs_are_dropped() -> None:
    # Given a line of text with one smudged word, a line of noise with one lucky word, and lines of
    # confident crumbs ("4", "ed") as a picture's texture gives
    page = [
        *words("The station moved 4.2 million cubic metres"),
        OcrWord("xq", 20.0, (1, 1, 1)),
        OcrWord("Mpecsy", 0.0, (1, 1, 2)),
        OcrWord("ste", 10.0, (1, 1, 2)),
        OcrWord("water", 90.0, (1, 1, 2)),
        OcrWord("oj>", 5.0, (1, 1, 2)),
        OcrWord("Leet", 7.0, (1, 1, 2)),
        *[OcrWord(crumb, 80.0, (2, 1, n)) for n, crumb in enumerate(["4", "ed", "e", "@"], start=1)],
    ]

    # When the rule is applied
    reading = confident_text(page, RULE)

    # Then only the line of text remains, without its smudge
    assert reading.text == "The station moved 4.2 million cubic metres"
    assert reading.words_kept == 7


def test_a_page_of_few_or_only_doubtful_words_yields_nothing_and_counts_as_dropped() -> None:
    # Given a page of noise read at low confidence, and one of a single confident word
    noise = words("Mis oe Ss ee 2 Ft TT fT", "rs att al Ge LSE", confidence=31.0)
    few = words("Appendix")

    # When the rule is applied, Then neither yields text; both count as dropped for low confidence
    for page in (noise, few):
        reading = confident_text(page, RULE)
        assert reading.text == ""
        assert reading.low_confidence
    # And a blank page (no words at all) is not a dropped page, and a title page of two words is text
    assert not confident_text([], RULE).low_confidence
    assert confident_text(words("Annual Report"), RULE).text == "Annual Report"


def test_the_rule_of_the_tests_is_the_services() -> None:
    settings = Settings()
    assert (
        ConfidenceRule(
            settings.ocr_min_word_confidence_pct,
            settings.ocr_min_line_confident_pct,
            settings.ocr_min_line_chars,
            settings.ocr_min_page_words,
        )
        == RULE
    )


def test_thresholds_out_of_range_are_refused() -> None:
    with pytest.raises(ValueError):
        ConfidenceRule(
            min_word_confidence_pct=120, min_line_confident_pct=60, min_line_chars=5, min_page_words=5
        )
    with pytest.raises(ValueError):
        ConfidenceRule(
            min_word_confidence_pct=60, min_line_confident_pct=60, min_line_chars=-1, min_page_words=5
        )


@pytest.mark.parametrize("language", list(TEXTS))
def test_prose_is_plausible(language: str) -> None:
    assert plausible_text(TEXTS[language])


@pytest.mark.parametrize(
    "garbage",
    [
        GARBAGE,
        "es pal es a Cad =e PEAT TN FELON NES PRG PEI NETE CETTE TAB EA NS OTS DAES EON",
        "#$% &*@ ~~ |\\ ^^ ## $% {} [] <> ++ == -- __ // ;; :: %% @@",
    ],
)
def test_ocr_garbage_is_not_plausible(garbage: str) -> None:
    assert not plausible_text(garbage)


def test_a_text_too_short_to_judge_is_plausible() -> None:
    assert plausible_text("p. 3")


def test_ocr_languages_are_checked_against_the_configured_list() -> None:
    # Given the default list, When lists are checked, Then known ones pass (once each) and others fail
    configured = Settings().ocr_available_languages
    assert ocr_languages.checked("deu+eng", configured) == "deu+eng"
    assert ocr_languages.checked("eng+eng", configured) == "eng"
    for bad in ("", " deu+eng ", "eng+", "deu+xxx", "eng,deu", "../eng"):
        with pytest.raises(UnknownOcrLanguageError):
            ocr_languages.checked(bad, configured)


def test_workers_start_when_tesseract_has_every_language_offered() -> None:
    # Given the default settings (the six packs the Makefile and the Dockerfile install)
    # When checked against the real tesseract, Then nothing is raised
    check_ocr_languages(Settings())


def test_workers_refuse_to_start_naming_the_languages_tesseract_lacks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a tesseract with English and orientation data only
    monkeypatch.setattr(language_check.pytesseract, "get_languages", lambda config="": ["eng", "osd"])

    # When a worker offering eng, deu and fra starts, Then it refuses, naming deu and fra
    with pytest.raises(OcrLanguagesMissingError, match="deu, fra"):
        check_ocr_languages(Settings(ocr_available_languages="eng,deu,fra"))
