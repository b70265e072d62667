"""The admin calls (an admin key): tenants, their limits and keys, dead letters, replay, reindex."""

from __future__ import annotations

from typing import Any

from ingest_client.http import Http


class AdminCalls:
    """Mixed into Client; every call answers 403 to a tenant's key."""

    http: Http

    def create_tenant(self, name: str, **limits: Any) -> dict[str, Any]:
        """A new tenant with its first API key (`api_key`, shown once); `limits` as in set_limits."""
        return self.http.json("POST", "/v1/admin/tenants", json={"name": name, **limits})

    def tenants(self) -> list[dict[str, Any]]:
        """Every tenant."""
        return self.http.json("GET", "/v1/admin/tenants")["items"]

    def tenant(self, tenant_id: str) -> dict[str, Any]:
        """One tenant, with its limits."""
        return self.http.json("GET", f"/v1/admin/tenants/{tenant_id}")

    def set_limits(self, tenant_id: str, **limits: int | None) -> dict[str, Any]:
        """max_active_jobs, max_upload_mb, max_pages, max_storage_mb (None: the service default)."""
        path = f"/v1/admin/tenants/{tenant_id}/limits"
        return self.http.json("PATCH", path, json=limits)

    def set_ocr_languages(self, tenant_id: str, ocr_languages: str | None) -> dict[str, Any]:
        """The tenant's OCR languages ("fra+eng"; None: the service default)."""
        path = f"/v1/admin/tenants/{tenant_id}/ocr"
        return self.http.json("PATCH", path, json={"ocr_languages": ocr_languages})

    def suspend_tenant(self, tenant_id: str) -> dict[str, Any]:
        """Refuse the tenant's keys and stop its running jobs."""
        return self.http.json("POST", f"/v1/admin/tenants/{tenant_id}/suspend")

    def resume_tenant(self, tenant_id: str) -> dict[str, Any]:
        """Accept the tenant's keys again."""
        return self.http.json("POST", f"/v1/admin/tenants/{tenant_id}/resume")

    def create_key(self, tenant_id: str) -> dict[str, Any]:
        """Another key for the tenant (`api_key`, shown once)."""
        return self.http.json("POST", f"/v1/admin/tenants/{tenant_id}/keys")

    def keys(self, tenant_id: str) -> list[dict[str, Any]]:
        """The tenant's keys, by prefix only."""
        return self.http.json("GET", f"/v1/admin/tenants/{tenant_id}/keys")["items"]

    def revoke_key(self, key_id: str) -> dict[str, Any]:
        """Revoke a key: it stops working at once."""
        return self.http.json("POST", f"/v1/admin/keys/{key_id}/revoke")

    def dead_letters(self, *, include_replayed: bool = False) -> list[dict[str, Any]]:
        """Jobs whose retries ran out, oldest first."""
        params = {"include_replayed": "true"} if include_replayed else None
        return self.http.json("GET", "/v1/admin/dead-letters", params=params)["items"]

    def replay(self, job_id: str) -> dict[str, Any]:
        """Run any tenant's failed or dead-lettered job again."""
        return self.http.json("POST", f"/v1/admin/jobs/{job_id}/replay")

    def start_reindex(self, tenant_id: str, **options: Any) -> dict[str, Any]:
        """Start (or with dry_run=True, plan) a reindex: from, model, dimension, dry_run."""
        path = f"/v1/admin/tenants/{tenant_id}/reindex"
        return self.http.json("POST", path, json=options)

    def reindex(self, tenant_id: str) -> dict[str, Any]:
        """The tenant's latest reindex."""
        return self.http.json("GET", f"/v1/admin/tenants/{tenant_id}/reindex")

    def cancel_reindex(self, tenant_id: str) -> dict[str, Any]:
        """Stop the tenant's running reindex."""
        return self.http.json("DELETE", f"/v1/admin/tenants/{tenant_id}/reindex")
