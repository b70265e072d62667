"""The operator console's admin pages in a real headless browser: tenants (suspend, resume, limits),
the dead-letter list with replay of a job whose retries ran out, and reindex status; and the
timeline of the replayed job as its tenant sees it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium.webdriver.common.by import By

from tests.conftest import missing_service
from tests.support.console_browser import Console, Served, browser_missing, chromium, production_like, served
from tests.support.console_seed import CONTRACT, REPORT, dead_lettered_job, failing_provider
from tests.support.openai_server import OpenAIServer

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis]


@pytest.fixture(scope="module")
def site(
    pg_server_url: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Served, OpenAIServer]]:
    """The service embedding through a provider that fails when told to."""
    missing = browser_missing()
    if missing:
        missing_service(missing)
    data_dir = str(tmp_path_factory.mktemp("console-admin") / "data")
    with (
        production_like(data_dir, pg_server_url, redis_url) as base,
        failing_provider(base) as (settings, provider),
        served(settings) as site,
    ):
        yield site, provider


@pytest.fixture(scope="module")
def console(site: tuple[Served, OpenAIServer]) -> Iterator[Console]:
    with chromium() as driver:
        yield Console(driver, site[0].base_url)


def test_an_admin_replays_a_dead_lettered_job_and_its_tenant_sees_where_the_time_went(
    site: tuple[Served, OpenAIServer], console: Console
) -> None:
    # Given a tenant's job dead-lettered while the embedding provider was down
    served_site, provider = site
    _, key = served_site.tenant("acme")
    job_id = dead_lettered_job(served_site, provider, key, "contract.pdf", CONTRACT)
    # When an admin signs in, opens the dead letters and replays it
    console.sign_in(served_site.admin_key())
    assert [a.text for a in console.driver.find_elements(By.CSS_SELECTOR, "#nav a")] == [
        "Tenants",
        "Dead letters",
        "Reindex",
    ]
    console.go("#/admin/dead-letters")
    row = console.wait_text("#dead-letters-table tbody tr", job_id)
    assert "embedding_unavailable" in row.text and "acme" in row.text
    row.find_element(By.CSS_SELECTOR, "button.replay").click()
    # Then the page says so and the letter leaves the list (it is still there among the replayed)
    console.wait_text("#status", f"Job {job_id} replayed: queued again from its embed stage.")
    console.wait_text("#dead-letter-list", "No dead letters.")
    console.find("#include-replayed").click()
    assert "replayed" in console.wait_text("#dead-letters-table tbody tr", job_id).text
    # And the job completes, its timeline showing the embed stage's runs and the wait before the replay
    assert served_site.wait_job(key, job_id)["status"] == "completed"
    console.sign_out()
    console.sign_in(key)
    console.go(f"#/jobs/{job_id}")
    embed = console.find("#timeline li[data-stage=embed][data-state=done]")
    assert "4 runs (2 retries, 1 replay)" in embed.text, embed.text
    assert len(embed.find_elements(By.CSS_SELECTOR, ".tl-tick:not(.tl-stop)")) == 2
    assert len(embed.find_elements(By.CSS_SELECTOR, ".tl-tick.tl-stop")) == 1
    assert embed.find_elements(By.CSS_SELECTOR, ".tl-bar.tl-wait")
    console.sign_out()


def test_an_admin_suspends_resumes_and_limits_a_tenant_and_reads_reindex_status(
    site: tuple[Served, OpenAIServer], console: Console
) -> None:
    served_site, _ = site
    tenant_id, key = served_site.tenant("globex")
    served_site.wait_job(key, served_site.upload(key, "report.pdf", REPORT))
    console.sign_in(served_site.admin_key())
    # Suspend and resume from the tenants' list
    console.go("#/admin/tenants")
    row = console.wait_text("#tenants-table tbody tr", "globex")
    row.find_element(By.CSS_SELECTOR, "button[aria-label='Suspend globex']").click()
    console.wait_text("#tenants-table tbody tr", "suspended")
    console.find("button[aria-label='Resume globex']").click()
    console.find("button[aria-label='Suspend globex']")
    # Set limits on the tenant's page (empty: the service default)
    console.find("#tenants-table a.tenant-link[href$='" + tenant_id + "']").click()
    assert console.unlabelled_fields() == []
    field = console.find("#limit-max_active_jobs")
    field.clear()
    field.send_keys("3")
    console.find("#limits-form button[type=submit]").click()
    console.wait_text("#status", "Limits saved.")
    # (the form is drawn again from the tenant as the service now has it)
    console.wait(
        lambda d: (
            [
                d.find_element(By.ID, f"limit-{n}").get_attribute("value")
                for n in ("max_active_jobs", "max_pages")
            ]
            == ["3", ""]
        ),
        message="the saved limits are not shown",
    )
    console.wait_text("#reindex-facts, p", "Never reindexed.")
    # The reindex page lists every tenant's latest reindex
    console.go("#/admin/reindex")
    row = console.wait_text("#reindex-table tbody tr", "globex")
    assert "never" in row.text
    # An admin key has no tenant pages: the route refuses without a call
    console.requests()
    console.go("#/jobs")
    console.wait_text("[role=alert]", "This page needs a tenant's key.")
    assert not [r for r in console.requests() if "/v1/jobs" in r["url"]]
