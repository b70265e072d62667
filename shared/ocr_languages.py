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


def checked(value: str, configured: str) -> str:
    """`value` ("deu+eng"), stripped, when every language in it is one of `configured`'s; raises
    UnknownOcrLanguageError naming the others, or the list allowed, otherwise."""
    allowed = available(configured)
    codes = value.strip().split("+")
    if not value.strip() or len(codes) > MAX_LANGUAGES or not all(_CODE.fullmatch(c) for c in codes):
        raise UnknownOcrLanguageError(
            f"ocr_languages must be up to {MAX_LANGUAGES} language codes joined by '+', such as 'deu+eng';"
            f" available: {', '.join(allowed)}."
        )
    unknown = [code for code in codes if code not in allowed]
    if unknown:
        raise UnknownOcrLanguageError(
            f"Unknown OCR language(s): {', '.join(unknown)}; available: {', '.join(allowed)}."
        )
    if len(set(codes)) != len(codes):
        raise UnknownOcrLanguageError("ocr_languages names a language twice.")
    return "+".join(codes)


def missing(configured: str, installed: set[str]) -> list[str]:
    """The configured languages (and `osd`, which orientation detection needs) tesseract lacks."""
    return [code for code in (*available(configured), "osd") if code not in installed]
