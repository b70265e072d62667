"""Accents set before their letter (TeX's accent primitive) come after it, as combining marks."""

from __future__ import annotations

import unicodedata

from ingest_worker.stages.accents import accents_after_letters


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", accents_after_letters(text))


def test_a_spacing_accent_before_a_letter_becomes_its_combining_mark() -> None:
    # Given words as pypdf reads OT1 fonts and transliteration tables: the accent first
    # Then the accent sits on the letter after it
    assert _nfc("Poincar\u00b4e") == "Poincaré"
    assert _nfc("Schr\u00a8odinger") == "Schrödinger"
    assert _nfc("d\u02c7zan") == "džan"
    assert _nfc("\u02d9par") == "ṗar"
    assert _nfc("Espa\u02dcna") == "España"


def test_a_combining_mark_stays_where_it_is() -> None:
    # Given a mark after a letter, and one after a space (it may belong to the letter before it)
    # Then neither moves
    assert _nfc("e\u0301t") == "ét"
    slavonic = "\u0438\u0486 \u0301\u0436\u0435"
    assert accents_after_letters(slavonic) == slavonic


def test_lone_accents_the_cedilla_and_ascii_marks_stay() -> None:
    # Given accents shown on their own (a glyph table), a cedilla TeX draws after its letter, code,
    # a web address's tilde
    text = "\u02c7 \u02c7 \u02c7 c\u00b8a `ls` ~user x^2 http://host/\u02dcuser"
    # Then nothing moves
    assert accents_after_letters(text) == text
