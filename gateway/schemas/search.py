"""Schemas of search: the query string of `GET /v1/search`, the JSON body of `POST /v1/search`, hits."""

from __future__ import annotations

from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, post_load, validate, validates_schema

from gateway.schemas.common import BodySchema, MetadataField, StrictSchema
from shared import document_metadata
from shared.document_metadata import KEY
from shared.settings import Settings
from shared.vector_queries import MODES

MODE_HELP = (
    "hybrid: dense and keyword rankings fused by reciprocal rank; dense: cosine similarity of the "
    "embeddings; keyword: BM25 over the chunks' words. Default: hybrid with a Qdrant server, dense in "
    "the embedded topology (Qdrant local mode scores keywords in Python: hybrid costs several times dense)"
)
MIN_SCORE_HELP = (
    "the least score a hit must reach: a cosine for dense, a BM25 score for keyword; for hybrid, the "
    "cosine every fused hit must reach (the fused score is only a rank)"
)


class ScalarField(fields.Raw):
    """A value to compare a metadata value with: a string, a number or a boolean, by the rules of
    metadata values (shared/document_metadata.py)."""

    def _validated(self, value: Any) -> Any:
        if not document_metadata.is_scalar(value):
            raise ValidationError(
                "must be a string without NUL, a number within a signed 64-bit integer's range or a boolean"
            )
        return value

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> Any:
        return self._validated(value)

    def json_schema(self, settings: Settings) -> dict[str, Any]:
        return document_metadata.SCALAR_SCHEMA


class ChoicesField(fields.List):
    """The values of `in`: all strings or all integers."""

    def json_schema(self, settings: Settings) -> dict[str, Any]:
        scalar = document_metadata.SCALAR_SCHEMA
        return {"oneOf": [{"items": {**scalar, "type": "string"}}, {"items": {**scalar, "type": "integer"}}]}


class FilterSchema(Schema):
    """Unknown keys are refused, not ignored: a misspelt condition must not silently widen a search."""

    class Meta:
        unknown = RAISE


class MetadataConditionSchema(FilterSchema):
    class Meta:
        unknown = RAISE
        # Exactly one kind of condition, as `_one_kind` checks.
        json_schema = {
            "oneOf": [
                {"required": ["eq"]},
                {"required": ["in"]},
                {"anyOf": [{"required": ["gte"]}, {"required": ["lte"]}]},
            ]
        }

    key = fields.String(
        required=True,
        validate=validate.Regexp(KEY),
        metadata={"description": "a key of the document's metadata (payload `metadata.<key>`)"},
    )
    eq = ScalarField(metadata={"description": "equal to this value"})
    any_of = ChoicesField(
        ScalarField(),
        data_key="in",
        validate=validate.Length(min=1, max=100),
        metadata={"description": "equal to one of these (all strings or all integers)"},
    )
    gte = fields.Float(allow_nan=False, metadata={"description": "at least this number"})
    lte = fields.Float(allow_nan=False, metadata={"description": "at most this number"})

    @validates_schema
    def _one_kind(self, data: dict[str, Any], **_: Any) -> None:
        kinds = ["eq" in data, "any_of" in data, "gte" in data or "lte" in data]
        if sum(kinds) != 1:
            raise ValidationError("give exactly one of eq, in, or a range (gte and/or lte)")
        values = data.get("any_of") or []
        if not (all(isinstance(v, str) for v in values) or all(_integral(v) for v in values)):
            raise ValidationError("the values of in are all strings or all integers", "in")

    @post_load
    def _integers(self, data: dict[str, Any], **_: Any) -> dict[str, Any]:
        """`in` integers written as 3.0 (an integer to JSON Schema) are compared as 3."""
        if data.get("any_of") and not isinstance(data["any_of"][0], str):
            data["any_of"] = [int(v) for v in data["any_of"]]
        return data


def _integral(value: Any) -> bool:
    return type(value) is int or (type(value) is float and value.is_integer())


class SearchFilterSchema(FilterSchema):
    document_ids = fields.List(
        fields.String(validate=validate.Length(max=64)), validate=validate.Length(max=100)
    )
    filename = fields.String(validate=validate.Length(min=1, max=255))
    page_from = fields.Integer(
        validate=validate.Range(min=1), metadata={"description": "chunks ending on or after"}
    )
    page_to = fields.Integer(
        validate=validate.Range(min=1), metadata={"description": "chunks starting on or before"}
    )
    metadata = fields.List(fields.Nested(MetadataConditionSchema), validate=validate.Length(max=20))


class SearchArgsSchema(StrictSchema):
    q = fields.String(required=True, validate=validate.Length(min=1, max=2000))
    top_k = fields.Integer(load_default=5, validate=validate.Range(min=1, max=100))
    document_id = fields.String()
    mode = fields.String(validate=validate.OneOf(MODES), metadata={"description": MODE_HELP})


class SearchRequestSchema(BodySchema):
    query = fields.String(required=True, validate=validate.Length(min=1, max=2000))
    top_k = fields.Integer(load_default=5, validate=validate.Range(min=1, max=100))
    mode = fields.String(validate=validate.OneOf(MODES), metadata={"description": MODE_HELP})
    min_score = fields.Float(allow_none=True, allow_nan=False, metadata={"description": MIN_SCORE_HELP})
    filter = fields.Nested(SearchFilterSchema, metadata={"description": "conditions every hit meets"})


class SearchHitSchema(Schema):
    score = fields.Float()
    document_id = fields.String()
    filename = fields.String(allow_none=True)
    page_start = fields.Integer()
    page_end = fields.Integer()
    chunk_index = fields.Integer()
    section = fields.String(allow_none=True)
    sections = fields.List(fields.String())
    text = fields.String()
    index_version = fields.Integer()
    metadata = MetadataField(metadata={"description": "the document's metadata"})


class SearchResponseSchema(Schema):
    query = fields.String()
    mode = fields.String(metadata={"description": "the mode that ranked the results"})
    index_version = fields.Integer()
    results = fields.List(fields.Nested(SearchHitSchema), required=True)
