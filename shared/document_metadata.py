"""A document's metadata: the client's flat JSON object, checked once wherever it comes in.

Keys are 1-64 letters, digits or underscores; values are strings, finite numbers, booleans, or lists
of those (no nested objects, no null: a key is either set or absent). The whole object is at most
`MAX_BYTES` as compact UTF-8 JSON. It lives in every point's payload under the one key `metadata`,
so no key of it can shadow the payload's own (`tenant_id`, `document_id`, `index_version`, ...).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from shared.errors import InvalidMetadataError
from shared.json_documents import has_lone_surrogate

MAX_BYTES = 8 * 1024
KEY_PATTERN = r"^[A-Za-z0-9_]{1,64}$"
KEY = re.compile(KEY_PATTERN)
Scalar = str | int | float | bool
# Qdrant (server and engine) holds integers as signed 64-bit; a number outside this range, integer or
# not, is refused, so that the OpenAPI document can state the rule as a JSON Schema range.
NUMBER_MIN, NUMBER_MAX = -(2**63), 2**63 - 1

# The same rules as JSON Schema (2020-12, OpenAPI 3.1), for the OpenAPI document: one schema of several
# types, each keyword applying to its own (a pattern to strings, a range to numbers, items to lists).
# The size limit and the lone surrogates (which no JSON Schema can state) are in the description.
SCALAR_SCHEMA: dict[str, Any] = {
    "type": ["string", "number", "boolean"],
    "pattern": "^[^\\u0000]*$",
    "minimum": NUMBER_MIN,
    "maximum": NUMBER_MAX,
}
JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "propertyNames": {"pattern": KEY_PATTERN},
    "additionalProperties": {
        **SCALAR_SCHEMA,
        "type": [*SCALAR_SCHEMA["type"], "array"],
        "items": SCALAR_SCHEMA,
    },
    "description": f"at most {MAX_BYTES} bytes as compact UTF-8 JSON: keys of 1-64 letters, digits or"
    " underscores; values strings (no NUL), numbers within a signed 64-bit integer's range, booleans or"
    " lists of them",
}


def size_of(metadata: dict[str, Any]) -> int:
    """Bytes of the compact UTF-8 JSON form, the form the limit is counted in."""
    return len(json.dumps(metadata, separators=(",", ":"), ensure_ascii=False).encode())


def parse(text: str) -> dict[str, Any]:
    """The metadata sent as a JSON text (the upload's form field), checked."""
    if len(text.encode()) > MAX_BYTES:
        raise InvalidMetadataError(f"metadata is larger than {MAX_BYTES} bytes.")
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        raise InvalidMetadataError("metadata is not valid JSON.") from None
    return checked(value)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def checked(value: Any) -> dict[str, Any]:
    """`value` itself when it is valid metadata; otherwise `InvalidMetadataError` saying what is wrong."""
    if not isinstance(value, dict):
        raise InvalidMetadataError("metadata must be a JSON object.")
    for key, item in value.items():
        if not isinstance(key, str) or not KEY.fullmatch(key):
            shown = str(key)[:70]
            raise InvalidMetadataError(f"metadata key {shown!r} is not 1-64 letters, digits or underscores.")
        if isinstance(item, list):
            if not all(is_scalar(v) for v in item):
                raise InvalidMetadataError(
                    f"metadata.{key} is a list with an item that is not a string, number or boolean."
                )
        elif not is_scalar(item):
            raise InvalidMetadataError(
                f"metadata.{key} must be a string, number, boolean or a list of them (not {_kind(item)})."
            )
    if size_of(value) > MAX_BYTES:
        raise InvalidMetadataError(f"metadata is larger than {MAX_BYTES} bytes.")
    return value


def is_scalar(value: Any) -> bool:
    """A value metadata may hold (or a list of it): a string, a number or a boolean, by the rules above."""
    if isinstance(value, str):
        # PostgreSQL cannot store NUL in text, nor any store a lone surrogate (no UTF-8 for it).
        return "\x00" not in value and not has_lone_surrogate(value)
    if isinstance(value, bool):
        return True
    if isinstance(value, int | float):
        return math.isfinite(value) and NUMBER_MIN <= value <= NUMBER_MAX
    return False


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, int | float):
        return "a number outside a signed 64-bit integer's range"
    if isinstance(value, str):
        return "a string with a NUL character or a lone surrogate"
    return type(value).__name__
