"""`make screenshots`: every page of the operator console, saved as PNGs under docs/console/.

Starts the service as `make run` does (SQLite, the in-process broker, worker threads, the maintenance
loop) in a temporary folder, seeds it through the API (two tenants' documents, a job that retried, a
dead-lettered one, a reindex), and photographs each page in headless chromium at 1280x800 and two at
phone width (375x800). Not part of the tests."""

from __future__ import annotations

import logging
import sys
import tempfile
import time
from pathlib import Path

import requests

from shared.settings import Settings
from tests.conftest import MODEL_CACHE_DIR, auth
from tests.support.console_browser import Console, browser_missing, chromium, served
from tests.support.console_seed import (
    CONTRACT,
    HANDBOOK,
    REPORT,
    SOLAR,
    TIDES,
    dead_lettered_job,
    failing_provider,
    retried_job,
)

OUT = Path(__file__).resolve().parent.parent / "docs" / "console"


def shoot(console: Console, name: str, route: str | None, ready: str) -> None:
    if route is not None:
        console.go(route)
    console.find(ready)
    time.sleep(0.4)  # fonts and the last repaint
    console.driver.save_screenshot(str(OUT / f"{name}.png"))
    print(f"saved docs/console/{name}.png")


def main() -> int:
    # The embed failures the dead letter is made of are logged with their tracebacks: not news here.
    logging.disable(logging.CRITICAL)
    missing = browser_missing()
    if missing:
        print(f"missing {missing}", file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        base = Settings(data_dir=f"{tmp}/data", model_cache_dir=MODEL_CACHE_DIR, maintenance_interval_s=1)
        with failing_provider(base) as (settings, provider), served(settings, maintenance=True) as service:
            acme_id, acme = service.tenant("acme")
            _, globex = service.tenant("globex")
            initech_id, _ = service.tenant("initech")
            admin = service.admin_key()
            solar = service.upload(acme, "solar-panels.pdf", SOLAR)
            uploaded = [(acme, solar), (globex, service.upload(globex, "globex-handbook.pdf", HANDBOOK))]
            for name, pages in (("quarterly-report.pdf", REPORT), ("tides.pdf", TIDES)):
                uploaded.append((acme, service.upload(acme, name, pages)))
            for job_id in uploaded:
                service.wait_job(*job_id)
            retried = retried_job(service, provider, acme, "employee-handbook.pdf", HANDBOOK)
            dead_lettered_job(service, provider, acme, "supplier-contract.pdf", CONTRACT)
            admin_headers = auth(admin)
            requests.post(f"{service.base_url}/v1/admin/tenants/{initech_id}/suspend", headers=admin_headers)
            requests.post(
                f"{service.base_url}/v1/admin/tenants/{acme_id}/reindex",
                headers=admin_headers,
                json={"from": "index"},
            )
            with chromium(1280, 800) as driver:
                console = Console(driver, service.base_url)
                console.viewport(1280, 800)
                console.open()
                console.find("#api-key")
                driver.save_screenshot(str(OUT / "sign-in.png"))
                print("saved docs/console/sign-in.png")
                console.sign_in(acme)
                shoot(console, "jobs", "#/jobs", "#jobs-table")
                shoot(console, "job-timeline", f"#/jobs/{retried}", "#timeline [data-stage=finalize]")
                shoot(console, "documents", "#/documents", "#documents-table")
                document_id = service.wait_job(acme, solar)["document_id"]
                shoot(console, "document-chunks", f"#/documents/{document_id}", "#chunks .chunk")
                console.go("#/search")
                console.find("#search-query").send_keys("photovoltaic cells and sunlight")
                console.find(".search-form button[type=submit]").click()
                shoot(console, "search", None, "#search-results .hit")
                console.viewport(375, 800)
                shoot(console, "jobs-phone", "#/jobs", "#jobs-table")
                shoot(console, "job-timeline-phone", f"#/jobs/{retried}", "#timeline [data-stage=finalize]")
                console.viewport(1280, 800)
                console.sign_out()
                console.sign_in(admin)
                shoot(console, "admin-tenants", "#/admin/tenants", "#tenants-table")
                shoot(console, "dead-letters", "#/admin/dead-letters", "#dead-letters-table")
                shoot(console, "reindex", "#/admin/reindex", "#reindex-table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
