"""The OpenAPI document: flask-smorest's, with errors as our problem+json and the rules marshmallow
cannot state (a field's or a schema's `json_schema`), so that the document is as strict as the server:
a request the document allows is one the server takes, apart from what only the data can tell (a file
that is no PDF, a callback host the guard refuses, an embedding model the service cannot run)."""

from __future__ import annotations

import http
from typing import Any

from apispec.ext.marshmallow import MarshmallowPlugin, OpenAPIConverter
from flask import Flask
from flask_smorest import Api
from flask_smorest.utils import prepare_response

from gateway.schemas.common import ProblemSchema
from shared.settings import Settings

PROBLEM_JSON = "application/problem+json"
NO_NUL = "^[^\\u0000]*$"
BEARER = {"type": "http", "scheme": "bearer", "description": "an API key: Authorization: Bearer <key>"}


class IngestConverter(OpenAPIConverter):  # type: ignore[misc]
    """apispec's converter, adding a schema's `Meta.json_schema` to its JSON Schema."""

    def schema2jsonschema(self, schema: Any) -> dict[str, Any]:
        jsonschema: dict[str, Any] = super().schema2jsonschema(schema)
        jsonschema.update(getattr(getattr(schema, "Meta", None), "json_schema", {}))
        return jsonschema


class IngestPlugin(MarshmallowPlugin):  # type: ignore[misc]
    """apispec's marshmallow plugin with our converter, which asks each field with a
    `json_schema(settings)` method for the JSON Schema it adds (some depend on the settings: the OCR
    languages offered, the files one upload takes)."""

    Converter = IngestConverter

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.settings = settings

    def init_spec(self, spec: Any) -> None:
        super().init_spec(spec)
        settings = self.settings

        def own_json_schema(converter: Any, field: Any, **_: Any) -> dict[str, Any]:
            method = getattr(field, "json_schema", None)
            return method(settings) if callable(method) else {}

        self.converter.add_attribute_function(own_json_schema)
        self.converter.add_parameter_attribute_function(no_nul)


def no_nul(converter: Any, field: Any, ret: dict[str, Any], **_: Any) -> dict[str, Any]:
    """A text parameter without a pattern of its own may hold no NUL: the server refuses one in any
    query value or header (gateway/request_checks.py)."""
    schema = ret.get("schema", {})
    if schema.get("type") == "string" and "pattern" not in schema and "enum" not in schema:
        return {"schema": {**schema, "pattern": NO_NUL}}
    return {}


class IngestApi(Api):  # type: ignore[misc]
    """flask-smorest's Api, documenting errors as our problem+json, with the plugin above."""

    ERROR_SCHEMA = ProblemSchema

    def __init__(self, app: Flask, settings: Settings) -> None:
        super().__init__(app, spec_kwargs={"marshmallow_plugin": IngestPlugin(settings)})

    def _register_responses(self) -> None:
        # flask-smorest documents its error responses as application/json; ours are problem+json.
        for status in http.HTTPStatus:
            response: dict[str, Any] = {"description": status.phrase}
            if not 100 <= status < 200 and status not in (204, 304):
                response["schema"] = self.ERROR_SCHEMA
            prepare_response(response, self.spec, PROBLEM_JSON)
            self.spec.components.response(status.name, response, lazy=True)
        response = {"description": "Default error response", "schema": self.ERROR_SCHEMA}
        prepare_response(response, self.spec, PROBLEM_JSON)
        self.spec.components.response("DEFAULT_ERROR", response, lazy=True)
