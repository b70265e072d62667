"""A search's narrowing conditions (documents, filename, pages, metadata) as Qdrant conditions.

Every field names a payload key of its own; a metadata condition is confined to `metadata.<key>` with
a plain key, so no condition can name `tenant_id` or `index_version`. The vector store ANDs these under
its tenant and version scope, so a filter can only narrow what a tenant already sees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from qdrant_client import models

from shared.document_metadata import KEY, NUMBER_MAX, NUMBER_MIN
from shared.errors import InvalidFilterError

Scalar = str | int | float | bool


def refuse_big_numbers(values: Any) -> None:
    """`InvalidFilterError` when one of `values` is a number outside the signed 64-bit integer range,
    which no metadata value can hold (shared/document_metadata.py) and Qdrant cannot compare."""
    for value in values:
        if (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and not NUMBER_MIN <= value <= NUMBER_MAX
        ):
            raise InvalidFilterError(
                "A metadata filter's numbers must be within a signed 64-bit integer's range."
            )


@dataclass(frozen=True)
class MetadataCondition:
    """`metadata.<key>` equal to `eq`, one of `any_of`, or within [`gte`, `lte`]."""

    key: str
    eq: Scalar | None = None
    any_of: tuple[str | int, ...] | None = None
    gte: float | None = None
    lte: float | None = None

    def __post_init__(self) -> None:
        if not KEY.fullmatch(self.key):
            raise ValueError(f"metadata key must match {KEY.pattern}")
        given = [self.eq is not None, self.any_of is not None, self.gte is not None or self.lte is not None]
        if sum(given) != 1:
            raise ValueError("a metadata condition is one of eq, in, or a range (gte/lte)")
        if self.any_of is not None and len({type(v) for v in self.any_of}) > 1:
            raise ValueError("the values of `in` are all strings or all integers")
        refuse_big_numbers([self.eq, *(self.any_of or ())])


@dataclass(frozen=True)
class SearchFilter:
    """Conditions a hit must all meet; an empty filter narrows nothing."""

    document_ids: tuple[str, ...] | None = None
    filename: str | None = None
    page_from: int | None = None
    page_to: int | None = None
    metadata: tuple[MetadataCondition, ...] = field(default=())

    def conditions(self) -> list[Any]:
        """The Qdrant conditions of this filter (to be ANDed under the tenant scope)."""
        found: list[Any] = []
        if self.document_ids is not None:
            found.append(
                models.FieldCondition(key="document_id", match=models.MatchAny(any=list(self.document_ids)))
            )
        if self.filename is not None:
            found.append(models.FieldCondition(key="filename", match=models.MatchValue(value=self.filename)))
        # A chunk is in a page range when any of its pages is.
        if self.page_from is not None:
            found.append(models.FieldCondition(key="page_end", range=models.Range(gte=self.page_from)))
        if self.page_to is not None:
            found.append(models.FieldCondition(key="page_start", range=models.Range(lte=self.page_to)))
        for condition in self.metadata:
            found.append(_metadata(condition))
        return found


def _metadata(condition: MetadataCondition) -> models.FieldCondition:
    key = f"metadata.{condition.key}"
    if condition.any_of is not None:
        values = list(condition.any_of)
        return models.FieldCondition(key=key, match=models.MatchAny(any=values))  # type: ignore[arg-type]
    if isinstance(condition.eq, float):
        return models.FieldCondition(key=key, range=models.Range(gte=condition.eq, lte=condition.eq))
    if condition.eq is not None:
        return models.FieldCondition(key=key, match=models.MatchValue(value=condition.eq))
    return models.FieldCondition(key=key, range=models.Range(gte=condition.gte, lte=condition.lte))
