"""The operator console at /console: static files only (an HTML page, ES modules and a style sheet in
assets/), served with a Content-Security-Policy of `default-src 'self'`, so that nothing inline and
nothing from another origin ever runs. The page calls the public API with the key it keeps in
sessionStorage; this blueprint serves files and knows nothing of keys."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, abort, send_from_directory

HERE = Path(__file__).resolve().parent
ASSETS_DIR = HERE / "assets"
# Every file the console is made of, fixed when the gateway starts; any other name is 404.
ASSETS = frozenset(p.relative_to(ASSETS_DIR).as_posix() for p in ASSETS_DIR.rglob("*") if p.is_file())
CSP = "; ".join(
    [
        "default-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "object-src 'none'",
    ]
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    # A new console takes effect on the next load; the files are small.
    "Cache-Control": "no-cache",
}

blp = Blueprint("console", __name__)


def _secured(response: Response) -> Response:
    response.headers.update(HEADERS)
    return response


@blp.get("/console")
@blp.get("/console/")
def index() -> Response:
    """The console's page (its routes are in the fragment: #/jobs, #/documents, ...)."""
    return _secured(send_from_directory(str(HERE), "index.html", max_age=0))


@blp.get("/console/assets/<path:name>")
def asset(name: str) -> Response:
    """One of the console's own files."""
    if name not in ASSETS:
        abort(404)
    return _secured(send_from_directory(str(ASSETS_DIR), name, max_age=0))
