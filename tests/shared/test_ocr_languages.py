"""OCR language lists: the pattern the OpenAPI document states accepts exactly what the check accepts."""

from __future__ import annotations

import re

import pytest

from shared import ocr_languages
from shared.errors import UnknownOcrLanguageError

CONFIGURED = "eng,deu,chi_sim,script/Latin"


@pytest.mark.parametrize(
    "value",
    [
        "eng",
        "deu+eng",
        "eng+eng",
        "script/Latin+chi_sim",
        "+".join(["eng"] * 8),
        "",
        " eng",
        "eng+",
        "fra",
        "eng ",
        "+".join(["eng"] * 9),
        "ENG",
        "eng+deu\n",
    ],
)
def test_the_pattern_and_the_check_agree(value: str) -> None:
    matches = re.fullmatch(ocr_languages.pattern(CONFIGURED), value) is not None
    try:
        ocr_languages.checked(value, CONFIGURED)
        accepted = True
    except UnknownOcrLanguageError:
        accepted = False
    assert matches == accepted, value


def test_a_language_named_twice_is_read_once() -> None:
    assert ocr_languages.checked("deu+eng+deu", CONFIGURED) == "deu+eng"
