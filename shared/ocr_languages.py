"""OCR language lists ("deu+eng"): checked against the configured set, and against what tesseract has."""

from __future__ import annotations

import re

from shared.errors import UnknownOcrLanguageError

# A tesseract language code: "eng", "chi_sim", "script/Latin".
_CODE = re.compile(r"[A-Za-z0-9_]+(/[A-Za-z0-9_]+)?")
MAX_LANGUAGES = 8


def available(configured: str) -> tuple[str, ...]:
    """The codes of a comma-separated setting (`Settings.ocr_available_languages`), in order."""
    return tuple(code.strip() for code in configured.split(",") if code.strip())


def pattern(configured: str) -> str:
    """The regular expression (JSON Schema dialect too) of the values `checked` accepts: up to
    `MAX_LANGUAGES` of `configured`'s codes joined by '+'."""
    code = "(?:" + "|".join(re.escape(c) for c in available(configured)) + ")"
    return f"^{code}(?:\\+{code}){{0,{MAX_LANGUAGES - 1}}}$"


def checked(value: str, configured: str) -> str:
    """`value` ("deu+eng"), each language once, when it is up to `MAX_LANGUAGES` codes of
    `configured`'s joined by '+' (`pattern`); raises UnknownOcrLanguageError naming the others, or the
    list allowed, otherwise."""
    allowed = available(configured)
    codes = value.split("+")
    if len(codes) > MAX_LANGUAGES or not all(_CODE.fullmatch(c) for c in codes):
        raise UnknownOcrLanguageError(
            f"ocr_languages must be up to {MAX_LANGUAGES} language codes joined by '+', such as 'deu+eng';"
            f" available: {', '.join(allowed)}."
        )
    unknown = [code for code in codes if code not in allowed]
    if unknown:
        raise UnknownOcrLanguageError(
            f"Unknown OCR language(s): {', '.join(unknown)}; available: {', '.join(allowed)}."
        )
    # A language named twice is read once (tesseract would load it twice).
    return "+".join(dict.fromkeys(codes))


def missing(configured: str, installed: set[str]) -> list[str]:
    """The configured languages (and `osd`, which orientation detection needs) tesseract lacks."""
    return [code for code in (*available(configured), "osd") if code not in installed]
