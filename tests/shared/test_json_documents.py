"""The bounded JSON parse every request body and metadata filter passes: depth, lone surrogates,
non-JSON numbers, and integers past 64 bits in the filters the vector stores compile."""

from __future__ import annotations

from typing import Any

import pytest
from qdrant_client import models

from shared import json_documents
from shared.errors import InvalidFilterError, InvalidJsonError, InvalidTextError
from shared.search_filter import MetadataCondition
from shared.vectorstores.edge_layout import edge_filter


def test_a_document_within_the_bounds_is_returned() -> None:
    # Given JSON at the depth bound, with an emoji written as a surrogate pair
    deep = b"[" * json_documents.MAX_DEPTH + b'"\\ud83d\\ude00"' + b"]" * json_documents.MAX_DEPTH
    # When it is parsed
    document: Any = json_documents.loads(deep)
    # Then it is the document, the pair one character
    for _ in range(json_documents.MAX_DEPTH):
        document = document[0]
    assert document == "\U0001f600"


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"[" * (json_documents.MAX_DEPTH + 1) + b"]" * (json_documents.MAX_DEPTH + 1), InvalidJsonError),
        (b"[" * 100_000 + b"]" * 100_000, InvalidJsonError),
        (b'{"a": NaN}', InvalidJsonError),
        (b'{"a": "\xed\xa0\x80"}', InvalidJsonError),
        (b'{"a": ', InvalidJsonError),
        (b'{"a": "x\\ud800"}', InvalidTextError),
        (b'{"\\udc00": 1}', InvalidTextError),
        (b'[[[{"a": ["\\udfff"]}]]]', InvalidTextError),
    ],
)
def test_a_document_past_the_bounds_is_refused_with_its_code(data: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        json_documents.loads(data)


@pytest.mark.parametrize(
    "condition",
    [{"eq": 2**63}, {"eq": -(2**63) - 1}, {"any_of": (1, 2**64)}],
)
def test_a_metadata_condition_past_64_bits_is_an_invalid_filter(condition: dict[str, Any]) -> None:
    with pytest.raises(InvalidFilterError) as raised:
        MetadataCondition("year", **condition)
    assert raised.value.code == "invalid_filter"


def test_the_64_bit_limits_themselves_are_filters() -> None:
    assert MetadataCondition("year", eq=2**63 - 1).eq == 2**63 - 1
    assert MetadataCondition("year", any_of=(-(2**63),)).any_of == (-(2**63),)


@pytest.mark.parametrize("match", [models.MatchValue(value=2**64), models.MatchAny(any=[1, -(2**63) - 1])])
def test_the_engine_filter_refuses_integers_past_64_bits(match: Any) -> None:
    # Given a qdrant-client filter built around MetadataCondition's check
    found = models.Filter(must=[models.FieldCondition(key="metadata.year", match=match)])
    # When it is compiled for the engine, then it is a client error, not the binding's OverflowError
    with pytest.raises(InvalidFilterError):
        edge_filter(found)
