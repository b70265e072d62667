"""The JSON a client sends, parsed once under bounds: strict UTF-8, RFC 8259 numbers only, nesting at
most `MAX_DEPTH` deep, and no string (key or value) holding a lone UTF-16 surrogate."""

from __future__ import annotations

import json
import re
from typing import Any

from shared.errors import InvalidJsonError, InvalidTextError

# Our deepest schema (a search filter's metadata conditions) nests four levels; Python's own parser
# raises RecursionError near 1,000, and every recursive walk after it (marshmallow, jsonify) would too.
MAX_DEPTH = 32
# Left after decoding only when unpaired (a valid pair decodes to one character): it encodes to
# nothing in UTF-8, so PostgreSQL, the embedder and every JSON writer after us would fail on it.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def has_lone_surrogate(text: str) -> bool:
    """Whether `text` holds a code point in U+D800-U+DFFF (never a character on its own)."""
    return LONE_SURROGATE.search(text) is not None


def loads(data: bytes) -> Any:
    """The document in `data`; `InvalidJsonError` when it is not UTF-8 JSON nested at most `MAX_DEPTH`
    deep, `InvalidTextError` when one of its strings holds a lone surrogate."""
    try:
        document = json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise InvalidJsonError() from None
    check(document)
    return document


def check(document: Any) -> None:
    """Walk `document` without recursion, refusing it past `MAX_DEPTH` or with a lone surrogate."""
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            if has_lone_surrogate(value):
                raise InvalidTextError()
            continue
        if not isinstance(value, dict | list):
            continue
        if depth > MAX_DEPTH:
            raise InvalidJsonError()
        items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
        stack.extend((item, depth + 1) for item in items)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
