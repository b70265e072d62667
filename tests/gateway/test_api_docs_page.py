"""`/docs` (Swagger UI) loads nothing from another origin: its page and every file it names come from
the gateway itself."""

from __future__ import annotations

import re
from pathlib import Path

from gateway.app import create_app
from shared.settings import Settings
from tests.shared.embedders.fakes import FAKE_EMBEDDER
from tests.support.databases import migrate_database


def test_the_docs_page_and_its_files_are_served_by_the_gateway(tmp_path: Path) -> None:
    # Given the gateway
    settings = Settings(data_dir=str(tmp_path / "data"), embedder=FAKE_EMBEDDER)
    migrate_database(settings.effective_database_url)
    client = create_app(settings).test_client()

    # When a browser opens /docs
    page = client.get("/docs")
    assert page.status_code == 200 and page.mimetype == "text/html"
    html = page.get_data(as_text=True)

    # Then every script and style sheet it names is on the gateway's own origin, and is served
    links = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert len(links) >= 3
    assert [link for link in links if not link.startswith("/")] == []
    assert "//" not in html.replace("://", "")  # no protocol-relative address either
    for link in links:
        answer = client.get(link)
        assert answer.status_code == 200, link
        assert answer.mimetype in {"text/css", "text/javascript", "application/javascript"}, link
        assert len(answer.get_data()) > 10_000, link
    # And the spec the page loads is the gateway's own
    assert 'url: "/openapi.json"' in html
    assert client.get("/openapi.json").status_code == 200


def test_only_swagger_ui_files_are_served_from_the_assets_path(tmp_path: Path) -> None:
    settings = Settings(data_dir=str(tmp_path / "data"), embedder=FAKE_EMBEDDER)
    migrate_database(settings.effective_database_url)
    client = create_app(settings).test_client()
    # Given names outside the three files, when they are asked for, then the answer is a problem+json 404
    for name in ("index.html", "swagger-ui.js.map", "..%2Fswagger-ui.css", "%2e%2e/__init__.py"):
        answer = client.get("/docs/assets/" + name)
        assert answer.status_code == 404, name
        assert answer.mimetype == "application/problem+json", name
