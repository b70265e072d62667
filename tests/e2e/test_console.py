"""The operator console in a real headless browser (chromium through Selenium), as a tenant uses it:
sign in, upload a PDF through the drop zone's file input, watch its job complete on the live stream,
read its timeline, its document's chunks and a search; hostile filenames and text stay text; and
another tenant sees none of it and gets no admin page or call."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from selenium.webdriver.common.by import By

from tests.conftest import missing_service
from tests.support.console_browser import Console, Served, browser_missing, chromium, production_like, served
from tests.support.pdfs import text_pdf, write_pdf

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis]

STAGES = ("validate", "extract", "ocr", "chunk", "embed", "index", "finalize")
PAYLOAD = "<img src=x onerror=window.pwned=1;document.title=1337>"
HOSTILE_NAME = f"{PAYLOAD}.pdf"
TITLE = "PDF ingestion console"


@pytest.fixture(scope="module")
def site(pg_server_url: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    missing = browser_missing()
    if missing:
        missing_service(missing)
    data_dir = str(tmp_path_factory.mktemp("console") / "data")
    with production_like(data_dir, pg_server_url, redis_url) as settings, served(settings) as site:
        yield site


@pytest.fixture(scope="module")
def console(site: Served) -> Iterator[Console]:
    with chromium() as driver:
        yield Console(driver, site.base_url)


@pytest.fixture(scope="module")
def acme(site: Served) -> dict[str, Any]:
    tenant_id, key = site.tenant("acme")
    return {"tenant_id": tenant_id, "key": key}


def _job_page_completes(console: Console, job_id: str) -> None:
    console.find(f"#upload-results a[href='#/jobs/{job_id}']").click()
    console.wait_text("#live-state", "The job is completed.", timeout=60)
    for stage in STAGES:
        console.find(f"#timeline li[data-stage={stage}][data-state=done]")


def test_a_tenant_uploads_a_pdf_watches_it_complete_and_reads_its_timeline_and_chunks(
    console: Console, acme: dict[str, Any], tmp_path: Path
) -> None:
    # Given a tenant signed in with its key
    console.requests()
    console.sign_in(acme["key"])
    assert [a.text for a in console.driver.find_elements(By.CSS_SELECTOR, "#nav a")] == [
        "Jobs",
        "Documents",
        "Search",
    ]
    assert console.unlabelled_fields() == []
    # When it uploads a PDF through the drop zone's file input
    pdf = write_pdf(
        tmp_path, text_pdf(["Heliotropes lean toward the morning sun in the walled garden."]), "garden.pdf"
    )
    job_id = console.upload(pdf)
    # Then its job page follows the live stream to `completed`, and the timeline shows every stage done
    _job_page_completes(console, job_id)
    console.find("#timeline li[data-stage=embed] .tl-bar.tl-done")
    # And its document shows the chunk text
    console.go("#/documents")
    console.find("#documents-table a.doc-link").click()
    console.wait_text("#chunks .chunk", "Heliotropes lean toward the morning sun")
    console.wait_text("#page-texts", "Page 1")

    # And every call carried the key in its Authorization header and none in its URL; the event
    # stream was read with fetch(), never EventSource; the key is in sessionStorage only
    sent = [r for r in console.requests() if "/v1/" in r["url"]]
    assert sent and all(r["headers"].get("authorization") == f"Bearer {acme['key']}" for r in sent)
    assert all(acme["key"] not in r["url"] for r in console.requests() + sent)
    streams = [r for r in sent if r["url"].endswith(f"/v1/jobs/{job_id}/events")]
    assert streams and all(r["type"] == "Fetch" for r in streams)
    storage = console.driver.execute_script(
        "return [sessionStorage.length, localStorage.length, document.cookie, location.href]"
    )
    assert storage[0] == 1 and storage[1] == 0 and storage[2] == "" and acme["key"] not in storage[3]
    assert console.console_errors() == []


def test_a_pdf_dropped_on_the_upload_zone_is_uploaded(console: Console) -> None:
    # Given the jobs page, when a PDF is dropped on the upload zone (a drop event carrying the file)
    console.go("#/jobs")
    console.find("#dropzone")
    data = base64.b64encode(text_pdf(["Dropped on the zone, not chosen."])).decode()
    console.driver.execute_script(
        """const bytes = Uint8Array.from(atob(arguments[0]), (c) => c.charCodeAt(0));
        const transfer = new DataTransfer();
        transfer.items.add(new File([bytes], 'dropped.pdf', {type: 'application/pdf'}));
        const zone = document.getElementById('dropzone');
        const init = {dataTransfer: transfer, bubbles: true, cancelable: true};
        zone.dispatchEvent(new DragEvent('dragover', init));
        zone.dispatchEvent(new DragEvent('drop', init));""",
        data,
    )
    # Then it is uploaded, and its job shows in the polled list
    assert console.find("#upload-results .filename").text == "dropped.pdf"
    console.find("#upload-results a.upload-job")
    console.wait_text("#jobs-table", "dropped.pdf")


def test_the_pages_are_readable_at_phone_width(console: Console, acme: dict[str, Any]) -> None:
    console.viewport(375, 800)
    try:
        for route, ready in (("#/jobs", "#jobs-table"), ("#/documents", "#documents-table")):
            console.go(route)
            console.find(ready)
            assert not console.overflows_horizontally(), route
        console.wait_text("#documents-table a.doc-link", "garden.pdf").click()
        console.find("#chunks .chunk")
        assert not console.overflows_horizontally()
        console.find("#document-facts a[href^='#/jobs/']").click()
        console.find("#timeline li[data-stage=finalize]")
        assert not console.overflows_horizontally()
    finally:
        console.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_a_tenant_searches_its_documents(console: Console, acme: dict[str, Any]) -> None:
    console.go("#/search")
    assert console.unlabelled_fields() == []
    console.find("#search-query").send_keys("heliotropes garden")
    console.find("#search-mode").send_keys("keyword")
    console.find(".search-form button[type=submit]").click()
    hit = console.wait_text("#search-results .hit", "Heliotropes lean toward the morning sun")
    assert hit.find_element(By.CSS_SELECTOR, "a.hit-file").text == "garden.pdf"


def test_hostile_filenames_and_text_are_shown_as_text_and_nothing_runs(
    site: Served, console: Console, acme: dict[str, Any], tmp_path: Path
) -> None:
    # Given a PDF whose filename and text hold HTML that would run script if parsed
    pdf = write_pdf(
        tmp_path, text_pdf([f"Quarterly {PAYLOAD} figures <script>window.pwned=2</script>"]), HOSTILE_NAME
    )
    console.go("#/jobs")
    job_id = console.upload(pdf)
    # When the console shows it on every page that renders a filename or the text
    assert console.find("#upload-results .filename").text == HOSTILE_NAME
    _job_page_completes(console, job_id)
    console.go("#/jobs")
    console.wait_text("#jobs-table", HOSTILE_NAME)
    console.go("#/documents")
    console.wait_text("#documents-table", HOSTILE_NAME)
    document_id = site.wait_job(acme["key"], job_id)["document_id"]
    console.go(f"#/documents/{document_id}")
    assert console.find("#document-filename").text == HOSTILE_NAME
    console.wait_text("#chunks .chunk", PAYLOAD)
    console.go("#/search")
    console.find("#search-query").send_keys("quarterly figures")
    console.find("#search-mode").send_keys("keyword")
    console.find(".search-form button[type=submit]").click()
    console.wait_text("#search-results .hit", PAYLOAD)
    # Then the payload is there as text, no element was made of it, and nothing ran
    state = console.driver.execute_script(
        "return [document.title, window.pwned === undefined,"
        " document.querySelectorAll('img, script:not([src])').length]"
    )
    assert state == [TITLE, True, 0]
    # And the console is served with a policy that runs no inline script and nothing from elsewhere
    page = requests.get(f"{site.base_url}/console", timeout=10)
    assert "default-src 'self'" in page.headers["Content-Security-Policy"]
    assert not re.search(r"<script(?![^>]*\bsrc=)|\son[a-z]+=|\sstyle=", page.text)


def test_another_tenant_sees_none_of_it_and_gets_no_admin_page_or_call(
    site: Served, console: Console, acme: dict[str, Any]
) -> None:
    # Given acme's job and document, and another tenant signed in
    jobs = requests.get(
        f"{site.base_url}/v1/jobs", headers={"Authorization": f"Bearer {acme['key']}"}, timeout=10
    )
    acme_job = jobs.json()["items"][-1]
    _, other = site.tenant("globex")
    console.sign_out()
    console.sign_in(other, keyboard=True)
    console.requests()
    # Then its lists hold none of acme's jobs or documents, and acme's ids are unknown to it
    console.go("#/jobs")
    console.wait_text("#job-list", "No jobs yet")
    console.go("#/documents")
    console.wait_text("#document-list", "No documents yet")
    console.go(f"#/jobs/{acme_job['job_id']}")
    console.wait_text("h1", "Job not found")
    console.go(f"#/documents/{acme_job['document_id']}")
    console.wait_text("h1", "Document not found")
    console.go("#/search")
    console.find("#search-query").send_keys("heliotropes garden")
    console.find(".search-form button[type=submit]").click()
    console.wait_text("p[role=status]", "0 results")
    # And it has no admin page: none in the navigation, and the route refuses without a call
    assert [a.text for a in console.driver.find_elements(By.CSS_SELECTOR, "#nav a")] == [
        "Jobs",
        "Documents",
        "Search",
    ]
    console.go("#/admin/tenants")
    console.wait_text("[role=alert]", "This page needs an admin key.")
    console.go("#/admin/dead-letters")
    console.wait_text("[role=alert]", "This page needs an admin key.")
    assert not [r for r in console.requests() if "/v1/admin" in r["url"]]
    # And the service refuses an admin call made from the page with its key
    status = console.driver.execute_async_script(
        """const done = arguments[arguments.length - 1];
        const key = sessionStorage.getItem('ingest-console.api-key');
        fetch('/v1/admin/tenants', {headers: {Authorization: 'Bearer ' + key}})
          .then((r) => done(r.status), (e) => done(String(e)));"""
    )
    assert status == 403
