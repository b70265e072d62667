"""Swagger UI's own files, served by the gateway from the swagger-ui-bundle package, so `/docs` loads
nothing from another origin and works offline."""

from __future__ import annotations

from flask import Blueprint, Response, abort, request, send_from_directory
from swagger_ui_bundle import swagger_ui_path

URL = "/docs/assets/"
# The files flask-smorest's page asks for; nothing else of the package is served.
ASSETS = frozenset({"swagger-ui.css", "swagger-ui-bundle.js", "swagger-ui-standalone-preset.js"})
ONE_DAY_S = 86_400

# flask-smorest's page starts Swagger UI from one inline script and Swagger UI sets inline styles;
# everything else it loads is ours (these files, /openapi.json), and nothing may frame the page
# where users paste their keys.
DOCS_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
}

blp = Blueprint("swagger_assets", __name__)


@blp.after_app_request
def docs_headers(response: Response) -> Response:
    """The docs page's CSP and framing refusal; nosniff on it and on its assets."""
    if request.path in ("/docs", "/docs/") or request.path.startswith(URL):
        response.headers.update(DOCS_HEADERS)
    return response


@blp.get(URL + "<name>")
def asset(name: str) -> Response:
    """One of Swagger UI's files; any other name is 404."""
    if name not in ASSETS:
        abort(404)
    return send_from_directory(str(swagger_ui_path), name, max_age=ONE_DAY_S)
