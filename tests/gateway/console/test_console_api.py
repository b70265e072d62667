"""What the console needs from the gateway, without a browser: its files served from the gateway's own
origin under a Content-Security-Policy of `default-src 'self'` (no inline script or style, nothing from
elsewhere, only its own files), `GET /v1/whoami`, and a job's timeline scoped to its tenant."""

from __future__ import annotations

import io
import re
from typing import Any

from gateway.console import ASSETS, CSP
from tests.conftest import admin_key, auth, tenant_key
from tests.support.pdfs import text_pdf


def test_the_console_and_every_file_it_loads_come_from_the_gateway_under_its_policy(client: Any) -> None:
    page = client.get("/console")
    assert page.status_code == 200 and page.mimetype == "text/html"
    assert page.headers["Content-Security-Policy"] == CSP
    assert CSP.startswith("default-src 'self'") and "frame-ancestors 'none'" in CSP
    html = page.get_data(as_text=True)
    # No inline script, event handler or style attribute; every file it names is the gateway's own
    assert not re.search(r"<script(?![^>]*\bsrc=)|\son[a-z]+=|\sstyle=|<style", html)
    links = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert links and all(link.startswith("/console/assets/") for link in links)
    for name in sorted(ASSETS):
        answer = client.get(f"/console/assets/{name}")
        assert answer.status_code == 200, name
        assert answer.headers["Content-Security-Policy"] == CSP
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
        if name.endswith(".js"):
            assert answer.mimetype in {"text/javascript", "application/javascript"}
            source = answer.get_data(as_text=True)
            # Text from the service is never parsed as HTML, and no credential is put in a URL
            assert not re.search(
                r"\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|new EventSource", source
            ), name
            assert "localStorage" not in source, name


def test_nothing_but_the_consoles_own_files_is_served_from_its_path(client: Any) -> None:
    for path in (
        "/console/assets/../__init__.py",
        "/console/assets/%2e%2e/__init__.py",
        "/console/assets/nope.js",
    ):
        assert client.get(path).status_code == 404, path
    assert client.get("/console/index.html").status_code == 404


def test_whoami_tells_a_tenants_key_from_an_admin_key(client: Any, app: Any) -> None:
    tenant = client.get("/v1/whoami", headers=auth(tenant_key(app, "acme")))
    assert tenant.status_code == 200
    body = tenant.get_json()
    assert body["role"] == "tenant" and body["tenant_name"] == "acme" and body["tenant_id"]
    admin = client.get("/v1/whoami", headers=auth(admin_key(app))).get_json()
    assert admin == {"role": "admin", "tenant_id": None, "tenant_name": None}
    assert client.get("/v1/whoami").status_code == 401
    assert client.get("/v1/whoami", headers=auth("ik_wrong")).status_code == 401


def test_a_jobs_timeline_is_its_tenants_only(client: Any, app: Any) -> None:
    key = tenant_key(app, "acme")
    upload = client.post(
        "/v1/documents", headers=auth(key), data={"file": (io.BytesIO(text_pdf(["Timeline."])), "t.pdf")}
    )
    job_id = upload.get_json()["job_id"]
    timeline = client.get(f"/v1/jobs/{job_id}/timeline", headers=auth(key))
    assert timeline.status_code == 200
    body = timeline.get_json()
    assert body["job_id"] == job_id and body["status"] == "queued" and body["stages"] == []
    assert body["pipeline"][0] == "validate" and body["pipeline"][-1] == "finalize"
    assert [e["type"] for e in body["events"]] == ["job.queued"] and body["recoveries"] == 0
    # Another tenant's key finds no such job; an admin key is refused
    other = client.get(f"/v1/jobs/{job_id}/timeline", headers=auth(tenant_key(app, "globex")))
    assert other.status_code == 404
    assert client.get(f"/v1/jobs/{job_id}/timeline", headers=auth(admin_key(app))).status_code == 403
