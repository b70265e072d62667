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
KEY = re.compile(r"[A-Za-z0-9_]{1,64}")
Scalar = str | int | float | bool


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
            if not all(_scalar(v) for v in item):
                raise InvalidMetadataError(
                    f"metadata.{key} is a list with an item that is not a string, number or boolean."
                )
        elif not _scalar(item):
            raise InvalidMetadataError(
                f"metadata.{key} must be a string, number, boolean or a list of them (not {_kind(item)})."
            )
    if size_of(value) > MAX_BYTES:
        raise InvalidMetadataError(f"metadata is larger than {MAX_BYTES} bytes.")
    return value


def _scalar(value: Any) -> bool:
    if isinstance(value, str):
        # PostgreSQL cannot store NUL in text, nor any store a lone surrogate (no UTF-8 for it).
        return "\x00" not in value and not has_lone_surrogate(value)
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, int) and not isinstance(value, bool):
        # Qdrant (and PostgreSQL's JSON in practice) hold signed 64-bit integers.
        return -(2**63) <= value < 2**63
    return isinstance(value, bool)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, float):
        return "a non-finite number"
    if isinstance(value, int):
        return "an integer beyond 64 bits"
    if isinstance(value, str):
        return "a string with a NUL character or a lone surrogate"
    return type(value).__name__
