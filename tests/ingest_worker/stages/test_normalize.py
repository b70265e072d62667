"""Tests for text normalisation before chunking."""

from __future__ import annotations

import unicodedata

import pytest

from ingest_worker.stages.normalize import normalize_text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("exam-\nple", "example"),
        ("a well-\nknown fact", "a wellknown fact"),
        ("Anglo-\nSaxon", "Anglo-\nSaxon"),
        ("page 4-\n5", "page 4-\n5"),
        ("co\u00ad\noperate", "cooperate"),
        ("hyphen- \n  ated", "hyphenated"),
        ("a  \t  b", "a\tb"),  # a tab parts table cells: kept, once
        ("a  b", "a b"),
        ("no\u00a0break\u2003em", "no break em"),
        ("one\n\n\n\n\ntwo", "one\n\ntwo"),
        ("one\n \n\t\ntwo", "one\n\ntwo"),
        ("line one\nline two", "line one\nline two"),
        ("windows\r\nline\rends", "windows\nline\nends"),
        ("block\fbreak", "block\n\nbreak"),
        ("nul\x00 and bell\x07 gone", "nul and bell gone"),
        ("  \n padded \n  ", "padded"),
        ("", ""),
    ],
)
def test_examples(raw: str, expected: str) -> None:
    # Given raw extracted text, When normalised, Then it reads as expected
    assert normalize_text(raw) == expected


def test_text_is_composed_to_nfc() -> None:
    # Given "é" written as "e" plus a combining acute accent
    decomposed = "caf" + "e\u0301"

    # When normalised, Then it is the single composed character
    result = normalize_text(decomposed)
    assert result == "café"
    assert unicodedata.is_normalized("NFC", result)


@pytest.mark.parametrize(
    "raw",
    [
        "e\x00\u0301-\nple",
        "a-\nb-\nc",
        "x \u00ad\n y\f\f\fz",
        "\u1100-\n\u1161",
        " \t\n\r\n\x0b\u2028 ",
        "Über-\nschrift \u00a0 über  alles\n\n\n",
    ],
)
def test_normalising_twice_changes_nothing(raw: str) -> None:
    # Given awkward input, When normalised twice, Then the second pass is a no-op
    once = normalize_text(raw)
    assert normalize_text(once) == once
