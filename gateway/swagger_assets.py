"""Swagger UI's own files, served by the gateway from the swagger-ui-bundle package, so `/docs` loads
nothing from another origin and works offline."""

from __future__ import annotations

from flask import Blueprint, Response, abort, send_from_directory
from swagger_ui_bundle import swagger_ui_path

URL = "/docs/assets/"
# The files flask-smorest's page asks for; nothing else of the package is served.
ASSETS = frozenset({"swagger-ui.css", "swagger-ui-bundle.js", "swagger-ui-standalone-preset.js"})
ONE_DAY_S = 86_400

blp = Blueprint("swagger_assets", __name__)


@blp.get(URL + "<name>")
def asset(name: str) -> Response:
    """One of Swagger UI's files; any other name is 404."""
    if name not in ASSETS:
        abort(404)
    return send_from_directory(str(swagger_ui_path), name, max_age=ONE_DAY_S)
