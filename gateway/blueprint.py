"""The blueprint every API module declares its routes on: flask-smorest's, with a parser that reads a
JSON body once, under the service's bounds (shared/json_documents.py), after the view's key check."""

from __future__ import annotations

from typing import Any

import flask_smorest
from marshmallow import RAISE, Schema
from webargs.flaskparser import FlaskParser, is_json_request

from shared import json_documents
from shared.errors import MissingBodyError, NotJsonError


class ArgumentsParser(FlaskParser):
    """webargs' Flask parser, except for a JSON body: every body this API declares is required, so a
    missing one is 400 `missing_body` (webargs would read it as `{}` and apply the defaults), one of
    another media type is 415, and the document is parsed by `json_documents.loads` (nesting bounded,
    strict UTF-8, no lone surrogates) instead of `json.loads`. A query parameter or body field the
    schema does not name is refused (422), not ignored: a misspelt `limt=5` must not silently fall back
    to the default."""

    DEFAULT_UNKNOWN_BY_LOCATION = {
        **FlaskParser.DEFAULT_UNKNOWN_BY_LOCATION,
        "query": RAISE,
        "querystring": RAISE,
        "json": RAISE,
    }

    def load_json(self, req: Any, schema: Schema) -> Any:
        data = req.get_data(cache=True)
        if not data:
            raise MissingBodyError()
        if not is_json_request(req):
            raise NotJsonError()
        return json_documents.loads(data)


class Blueprint(flask_smorest.Blueprint):  # type: ignore[misc]
    ARGUMENTS_PARSER = ArgumentsParser()
