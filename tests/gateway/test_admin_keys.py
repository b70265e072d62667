"""Admin keys are listed with their ids (never the secret) and revocable through the admin API; the
last working admin key is kept, so the API cannot lock itself out."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient

from tests.conftest import admin_key, auth, tenant_key


def _ids(client: FlaskClient, key: str) -> list[str]:
    response = client.get("/v1/admin/keys", headers=auth(key))
    assert response.status_code == 200, response.get_json()
    return [item["key_id"] for item in response.get_json()["items"]]


def test_a_leaked_admin_key_can_be_found_and_revoked(app: Flask, client: FlaskClient) -> None:
    # Given two admin keys, one of them leaked, and a tenant
    leaked, kept = admin_key(app), admin_key(app)
    tenant_key(app, "acme")
    # When the admin lists the admin keys
    items = client.get("/v1/admin/keys", headers=auth(kept)).get_json()["items"]
    # Then both are there by id and prefix, with no secret and no tenant key
    assert len(items) == 2 and {i["role"] for i in items} == {"admin"}
    assert {i["prefix"] for i in items} == {leaked[:11], kept[:11]}
    assert all("api_key" not in i for i in items)
    # And revoking the leaked one by its id stops it at once
    leaked_id = next(i["key_id"] for i in items if i["prefix"] == leaked[:11])
    response = client.post(f"/v1/admin/keys/{leaked_id}/revoke", headers=auth(kept))
    assert response.status_code == 200 and response.get_json()["revoked"] is True
    assert client.get("/v1/admin/keys", headers=auth(leaked)).status_code == 401
    assert client.get("/v1/admin/keys", headers=auth(kept)).status_code == 200


def test_the_last_working_admin_key_is_not_revoked(app: Flask, client: FlaskClient) -> None:
    # Given a single admin key
    only = admin_key(app)
    (only_id,) = _ids(client, only)
    # When it revokes itself
    response = client.post(f"/v1/admin/keys/{only_id}/revoke", headers=auth(only))
    # Then it is refused and the key keeps working
    assert (response.status_code, response.get_json()["code"]) == (409, "last_admin_key")
    assert client.get("/v1/admin/keys", headers=auth(only)).status_code == 200
    # And once another admin key is issued through the API, the first can go
    new = client.post("/v1/admin/keys", headers=auth(only)).get_json()
    assert new["role"] == "admin" and new["api_key"].startswith(new["prefix"])
    assert client.post(f"/v1/admin/keys/{only_id}/revoke", headers=auth(only)).status_code == 200
    assert client.get("/v1/admin/keys", headers=auth(new["api_key"])).status_code == 200


def test_a_tenant_key_cannot_list_admin_keys(app: Flask, client: FlaskClient) -> None:
    assert client.get("/v1/admin/keys", headers=auth(tenant_key(app, "acme"))).status_code == 403
