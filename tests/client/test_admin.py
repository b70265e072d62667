"""The admin calls: tenants, limits, OCR languages, suspension, keys, dead letters, replay, reindex."""

from __future__ import annotations

import pytest

from ingest_client import ApiError
from tests.client.conftest import Served
from tests.support.pdfs import truncated_pdf


def test_tenants_and_their_keys(stalled: Served) -> None:
    with stalled.client(stalled.admin_key()) as admin:
        # Given a tenant made through the API
        tenant = admin.create_tenant("acme", max_active_jobs=20)
        tenant_id = tenant["tenant_id"]

        # When the admin reads and changes it
        listed = [t["tenant_id"] for t in admin.tenants()]
        limits = admin.set_limits(tenant_id, max_upload_mb=50)["limits"]
        languages = admin.set_ocr_languages(tenant_id, "fra+eng")["ocr_languages"]
        second = admin.create_key(tenant_id)

        # Then each answer is the tenant's new state
        assert tenant_id in listed and admin.tenant(tenant_id)["name"] == "acme"
        assert limits["max_upload_mb"] == 50 and limits["max_active_jobs"] == 20
        assert languages == "fra+eng"
        assert len(admin.keys(tenant_id)) == 2

        # And a suspended tenant's key is refused until it is resumed; a revoked key for good
        with stalled.client(tenant["api_key"]) as own, stalled.client(second["api_key"]) as other:
            admin.suspend_tenant(tenant_id)
            with pytest.raises(ApiError) as refused:
                own.documents()
            assert (refused.value.status, refused.value.code) == (403, "tenant_suspended")
            admin.resume_tenant(tenant_id)
            assert own.documents()["items"] == []
            assert admin.revoke_key(second["key_id"])["revoked"] is True
            with pytest.raises(ApiError) as revoked:
                other.documents()
            assert revoked.value.status == 401
            with pytest.raises(ApiError) as forbidden:
                own.tenants()
            assert forbidden.value.status == 403

        # And a reindex can be planned
        plan = admin.start_reindex(tenant_id, dry_run=True)
        assert plan["tenant_id"] == tenant_id


def test_dead_letters_and_replay(served: Served) -> None:
    # Given a tenant's failed job
    with served.client(served.tenant_key()) as client, served.client(served.admin_key()) as admin:
        job_id = str(client.upload([("broken.pdf", truncated_pdf())])[0].job_id)
        assert list(client.wait(job_id, timeout_s=60))[-1].status == "failed"

        # When the admin lists dead letters and replays the job
        dead = admin.dead_letters()
        replayed = admin.replay(job_id)

        # Then the list is an answer (a permanent failure is not a dead letter) and the job runs again
        assert isinstance(dead, list) and job_id not in [d["job_id"] for d in dead]
        assert replayed["status"] == "queued"
        assert list(client.wait(job_id, timeout_s=60))[-1].status == "failed"
