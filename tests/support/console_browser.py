"""The operator console in a real headless browser: Debian's chromium and chromium-driver driven by
Selenium, against the service (tests/support/inprocess.py: gateway, worker threads) served over HTTP by the
embedded gateway's waitress server. Used by the console's tests and by `make screenshots`."""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import redis
import requests
import sqlalchemy as sa
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service as ChromeService
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from deploy.waitress_server import make_server
from shared.models import Base, KeyRole
from shared.settings import Settings
from shared.tenants import create_tenant, new_api_key
from tests.conftest import MODEL_CACHE_DIR, auth
from tests.shared.embedders.fakes import FAKE_EMBEDDER
from tests.support.inprocess import InProcess, in_process_service
from tests.support.pdfs import text_pdf

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ("--headless=new", "--no-sandbox", "--disable-background-networking", "--disable-dev-shm-usage")
# The console's tests serve on a port of this range (the first free one).
PORTS = range(18100, 18200)
WAIT_S = 30.0
FINAL = {"completed", "failed", "dead_lettered", "cancelled"}


def browser_missing() -> str | None:
    """What is missing to run the browser, or None."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if shutil.which(p) is None]
    return (
        f"{' and '.join(missing)} (make test-debs installs chromium and chromium-driver)" if missing else None
    )


def free_port() -> int:
    for port in PORTS:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {PORTS}")


def empty_database(url: str) -> None:
    """Empty every table of a migrated PostgreSQL database (as tests/conftest.py's pg_db does)."""
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        tables = ", ".join(t.name for t in reversed(Base.metadata.sorted_tables))
        conn.execute(sa.text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    engine.dispose()


@contextmanager
def production_like(data_dir: str, database_url: str, redis_url: str) -> Iterator[Settings]:
    """Settings on the tests' PostgreSQL database (emptied first) and a Redis namespace of their
    own (removed afterwards), embedding with the fake; local files and Qdrant in `data_dir`."""
    empty_database(database_url)
    namespace = f"ingest-console-{uuid.uuid4().hex[:8]}"
    try:
        yield Settings(
            data_dir=data_dir,
            model_cache_dir=MODEL_CACHE_DIR,
            embedder=FAKE_EMBEDDER,
            database_url=database_url,
            broker_url=redis_url,
            broker_namespace=namespace,
            events_poll_s=0.1,
        )
    finally:
        client = redis.Redis.from_url(redis_url)
        keys = list(client.scan_iter(f"{namespace}*"))
        if keys:
            client.delete(*keys)
        client.close()


@dataclass
class Served:
    base_url: str
    service: InProcess

    def tenant(self, name: str) -> tuple[str, str]:
        """A new tenant: (its id, its API key)."""
        with self.service.resources.db.transaction() as session:
            tenant, key = create_tenant(session, name)
            return tenant.id, key

    def upload(self, key: str, name: str, pages: list[str]) -> str:
        """Upload a text PDF through the API; its job id."""
        files = {"file": (name, text_pdf(pages), "application/pdf")}
        response = requests.post(f"{self.base_url}/v1/documents", headers=auth(key), files=files, timeout=30)
        assert response.status_code == 202, response.text
        return str(response.json()["job_id"])

    def wait_job(
        self, key: str, job_id: str, statuses: set[str] = FINAL, timeout_s: float = 60
    ) -> dict[str, Any]:
        """The job once its status is one of `statuses`."""
        deadline = time.monotonic() + timeout_s
        while True:
            body = requests.get(f"{self.base_url}/v1/jobs/{job_id}", headers=auth(key), timeout=10).json()
            if body["status"] in statuses:
                return body  # type: ignore[no-any-return]
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} not {statuses}: {body}")
            time.sleep(0.1)

    def admin_key(self) -> str:
        with self.service.resources.db.transaction() as session:
            return new_api_key(session, None, KeyRole.ADMIN)


@contextmanager
def served(settings: Settings, *, threads: int = 2, maintenance: bool = False) -> Iterator[Served]:
    """The service of `settings` with its worker threads, its gateway on a waitress server."""
    with in_process_service(settings, threads=threads, maintenance=maintenance) as service:
        port = free_port()
        server = make_server(service.app, host="127.0.0.1", port=port, threads=12, connection_limit=200)
        thread = threading.Thread(target=server.run, name="console-server", daemon=True)
        thread.start()
        try:
            yield Served(f"http://127.0.0.1:{port}", service)
        finally:
            server.close()
            thread.join(10)
    # The pool's connections go now, not whenever the engine is collected: the suite's other
    # tests share the PostgreSQL server's connection limit.
    service.resources.db.dispose()


@contextmanager
def chromium(width: int = 1280, height: int = 800) -> Iterator[webdriver.Chrome]:
    """A headless chromium with its network log kept (to check which calls the page made)."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--window-size={width},{height}", "--lang=en-US"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=ChromeService(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


class Console:
    """The console's pages, as a person uses them."""

    def __init__(self, driver: webdriver.Chrome, base_url: str) -> None:
        self.driver = driver
        self.base_url = base_url

    def wait(self, condition: Any, timeout: float = WAIT_S, message: str = "") -> Any:
        def check(driver: Any) -> Any:
            try:
                return condition(driver)
            except StaleElementReferenceException:
                return False

        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.1).until(check, message)
        except TimeoutException as exc:
            raise TimeoutException(f"{exc.msg}; the page then: {self.page_state()}") from exc

    def page_state(self) -> dict[str, Any]:
        """Where the page is and what it says: for a failed wait's message."""
        return dict(
            self.driver.execute_script(
                "return {hash: location.hash, status: document.getElementById('status')?.textContent,"
                " view: document.getElementById('view')?.innerText.slice(0, 300),"
                " signedOut: !document.getElementById('sign-in-view')?.hidden}"
            )
        )

    def find(self, css: str, timeout: float = WAIT_S) -> WebElement:
        return self.wait(  # type: ignore[no-any-return]
            lambda d: next((e for e in d.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()), False),
            timeout,
            f"no visible {css}",
        )

    def wait_text(self, css: str, text: str, timeout: float = WAIT_S) -> WebElement:
        return self.wait(  # type: ignore[no-any-return]
            lambda d: next((e for e in d.find_elements(By.CSS_SELECTOR, css) if text in e.text), False),
            timeout,
            f"{text!r} never appeared in {css}",
        )

    def open(self, route: str = "") -> None:
        self.driver.get(f"{self.base_url}/console{route}")

    def go(self, route: str) -> None:
        """Another page of the signed-in console (a route in the fragment: the page is not reloaded)."""
        self.driver.execute_script("location.hash = arguments[0]", route)

    def sign_in(self, key: str, *, keyboard: bool = False) -> None:
        """Sign in by clicking the button, or with the keyboard alone (Enter in the key's field)."""
        self.open()
        field = self.find("#api-key")
        field.send_keys(key + ("\n" if keyboard else ""))
        if not keyboard:
            self.find("#sign-in-form button[type=submit]").click()
        self.find("#nav")

    def viewport(self, width: int, height: int) -> None:
        """The page's own size (a window's size would include the browser's frame)."""
        metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)

    def unlabelled_fields(self) -> list[str]:
        """The form fields of the page that have no label."""
        return list(
            self.driver.execute_script(
                "return [...document.querySelectorAll('input, select, textarea')]"
                ".filter((e) => e.offsetParent && !e.labels.length && !e.getAttribute('aria-label'))"
                ".map((e) => e.id || e.name || e.outerHTML)"
            )
        )

    def overflows_horizontally(self) -> bool:
        return bool(self.driver.execute_script("return document.documentElement.scrollWidth > innerWidth"))

    def sign_out(self) -> None:
        self.find("#sign-out").click()
        self.find("#api-key")

    def upload(self, path: str) -> str:
        """Upload a file through the drop zone's file input; the job id the page links to."""
        self.driver.find_element(By.ID, "upload-file").send_keys(path)
        link = self.find("#upload-results a.upload-job")
        return str(link.text.removeprefix("job "))

    def requests(self) -> list[dict[str, Any]]:
        """The page's requests since the last call: url, method, headers (names in lower case) and
        type (Fetch, Document, Script, EventSource, ...) of each."""
        sent = []
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] == "Network.requestWillBeSent":
                request = message["params"]["request"]
                sent.append(
                    {
                        "url": request["url"],
                        "method": request["method"],
                        "headers": {k.lower(): v for k, v in request["headers"].items()},
                        "type": message["params"].get("type"),
                    }
                )
        return sent

    def console_errors(self) -> list[str]:
        return [e["message"] for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]
