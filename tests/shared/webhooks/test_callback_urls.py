"""The SSRF guard: callback URLs to loopback, private, link-local and metadata addresses are refused
at upload (422) and before every delivery, unless allow-listed; https is required unless allowed."""

from __future__ import annotations

import ipaddress
import re
import socket
from typing import Any

import pytest
from flask import Flask

from gateway.app import create_app
from shared.errors import CallbackUrlNotAllowedError, InvalidCallbackUrlError, WebhookDeliveryError
from shared.models import Job
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from shared.webhooks import callback_urls
from shared.webhooks.callback_urls import CallbackPolicy, check, is_public
from tests.conftest import auth, tenant_key
from tests.gateway.test_gateway_upload import PDF, upload
from tests.support.databases import migrate_database

REFUSED = [
    "https://127.0.0.1/hook",
    "https://10.0.0.1/hook",
    "https://169.254.169.254/latest/meta-data/",
    "https://localhost:8443/hook",
    "https://[::1]/hook",
    "https://2130706433/hook",  # 127.0.0.1 written as one number
    "https://192.168.1.20/hook",
    "https://100.64.0.1/hook",  # shared address space (carrier-grade NAT)
    "https://[::ffff:10.0.0.1]/hook",
]


def gateway(tmp_path: Any, **overrides: Any) -> Flask:
    settings = Settings(data_dir=str(tmp_path / "data"), max_upload_mb=1, **overrides)
    migrate_database(settings.effective_database_url)
    return create_app(settings, publisher=Publisher(make_broker(settings)))


def public_resolver(*addresses: str) -> Any:
    """A resolver that answers `addresses` for any name (the machine has no public DNS)."""

    def resolve(host: str, port: int, **_: Any) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in addresses]

    return resolve


@pytest.mark.parametrize("url", REFUSED)
def test_an_upload_with_a_callback_to_a_non_public_address_is_refused(tmp_path: Any, url: str) -> None:
    # Given the gateway with its default policy
    app = gateway(tmp_path)
    key = tenant_key(app, "acme")
    # When a client uploads with a callback URL that points inside the network
    response = upload(app.test_client(), key, PDF, callback_url=url)
    # Then the upload is refused with 422 and a stable code, and no job exists
    assert response.status_code == 422, response.get_json()
    assert response.get_json()["code"] == "callback_url_not_allowed"
    with app.extensions["ingest"].db.transaction() as session:
        assert session.query(Job).count() == 0


@pytest.mark.parametrize(
    ("overrides", "url"),
    [
        ({"webhook_allow_private": True}, "https://10.0.0.1/hook"),
        ({"webhook_allowed_hosts": "localhost"}, "https://localhost/hook"),
        ({"webhook_allowed_hosts": "10.0.0.0/8, 127.0.0.1/32"}, "https://127.0.0.1/hook"),
        ({"webhook_allowed_hosts": "169.254.169.254"}, "https://169.254.169.254/hook"),
    ],
)
def test_an_allow_listed_callback_is_accepted(tmp_path: Any, overrides: dict[str, Any], url: str) -> None:
    # Given a gateway whose settings allow some internal targets
    app = gateway(tmp_path, **overrides)
    # When a client uploads with such a callback URL
    response = upload(app.test_client(), tenant_key(app, "acme"), PDF, callback_url=url)
    # Then the job is accepted with it
    assert response.status_code == 202, response.get_json()
    with app.extensions["ingest"].db.transaction() as session:
        assert session.query(Job).one().callback_url == url


def test_http_is_refused_unless_allowed(tmp_path: Any) -> None:
    # Given the default policy, When a client gives an http callback URL, Then it is refused
    app = gateway(tmp_path)
    refused = upload(app.test_client(), tenant_key(app, "acme"), PDF, callback_url="http://example.com/h")
    assert refused.status_code == 422 and refused.get_json()["code"] == "callback_url_https_required"
    # And with http allowed, a name that does not resolve yet is accepted (checked at delivery)
    allowed = gateway(tmp_path / "b", webhook_allow_http=True)
    ok = upload(allowed.test_client(), tenant_key(allowed, "acme"), PDF, callback_url="http://example.com/h")
    assert ok.status_code == 202


def test_a_name_with_any_private_address_is_refused_and_a_public_one_passes() -> None:
    policy = CallbackPolicy()
    # Given a name resolving to a public and a private address, Then it is refused
    with pytest.raises(CallbackUrlNotAllowedError):
        check("https://hooks.example/x", policy, resolver=public_resolver("93.184.216.34", "10.1.2.3"))
    # And a name resolving to public addresses only is allowed, with the addresses to connect to
    target = check("https://hooks.example:8443/x?a=1", policy, resolver=public_resolver("93.184.216.34"))
    assert (target.host, target.port, target.path, target.addresses) == (
        "hooks.example",
        8443,
        "/x?a=1",
        ("93.184.216.34",),
    )


def test_at_delivery_a_name_that_does_not_resolve_is_a_transient_failure() -> None:
    with pytest.raises(WebhookDeliveryError) as caught:
        check("https://no-such-host.invalid/x", CallbackPolicy())
    assert caught.value.code == "webhook_dns_failed"


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("8.8.8.8", True),
        ("2606:4700::1111", True),
        ("127.0.0.1", False),
        ("169.254.169.254", False),
        ("fd00:ec2::254", False),
        ("fe80::1", False),
        ("224.0.0.1", False),
        ("0.0.0.0", False),
        ("::ffff:127.0.0.1", False),
    ],
)
def test_public_addresses(address: str, public: bool) -> None:
    assert is_public(ipaddress.ip_address(address)) is public


def test_the_tenant_default_endpoint_is_checked_the_same_way(tmp_path: Any) -> None:
    # Given a tenant
    app = gateway(tmp_path)
    client, key = app.test_client(), tenant_key(app, "acme")
    # When it sets a default endpoint on the metadata address, Then it is refused
    response = client.put(
        "/v1/webhooks", headers=auth(key), json={"default_callback_url": "https://169.254.169.254/"}
    )
    assert response.status_code == 422 and response.get_json()["code"] == "callback_url_not_allowed"
    # And a public one is kept
    response = client.put(
        "/v1/webhooks", headers=auth(key), json={"default_callback_url": "https://hooks.invalid/x"}
    )
    assert (
        response.status_code == 200
        and response.get_json()["default_callback_url"] == "https://hooks.invalid/x"
    )


@pytest.mark.parametrize(
    "url",
    [
        "https://[::127.0.0.1]/hook",  # IPv4-compatible IPv6
        "https://[64:ff9b::a9fe:a9fe]/hook",  # NAT64 of the metadata address
        "https://[64:ff9b:1::a00:1]/hook",  # local-use NAT64
        "https://[2002:7f00:1::]/hook",  # 6to4 of 127.0.0.1
        "https://[2001:0:7f00:1::]/hook",  # Teredo with a loopback server
        "https://[fec0::1]/hook",  # site-local
        "https://[100::1]/hook",  # discard-only, outside global unicast
    ],
)
def test_ipv6_forms_that_embed_or_hide_an_internal_address_are_refused(tmp_path: Any, url: str) -> None:
    # Given the gateway with its default policy
    app = gateway(tmp_path)
    # When a client uploads with a callback to an IPv6 form Python's is_global calls public
    response = upload(app.test_client(), tenant_key(app, "acme"), PDF, callback_url=url)
    # Then it is refused like any internal address
    assert response.status_code == 422, response.get_json()
    assert response.get_json()["code"] == "callback_url_not_allowed"


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("::127.0.0.1", False),
        ("64:ff9b::a9fe:a9fe", False),
        ("64:ff9b:1::1", False),
        ("2002:7f00:1::", False),
        ("2002:0a00:0001::", False),
        ("2002:5db8:d822::1", True),  # 6to4 of a public address
        ("fec0::1", False),
        ("::", False),
    ],
)
def test_ipv6_transition_forms_are_judged_by_the_address_they_carry(address: str, public: bool) -> None:
    assert is_public(ipaddress.ip_address(address)) is public


@pytest.mark.parametrize(
    "url",
    [
        "https://exa\tmple.com/hook",
        "https://example.com/ho\nok",
        "https://example.com/ho\rok",
        "https://example.com/a b",
        "https://example.com/\x00",
        "https://example.com:0/hook",
        "https://example.com/" + "a" * 2000,
    ],
)
def test_malformed_callback_urls_get_one_code_and_status_on_every_endpoint(tmp_path: Any, url: str) -> None:
    # Given a tenant
    app = gateway(tmp_path)
    client, key = app.test_client(), tenant_key(app, "acme")
    # When it gives a callback URL with whitespace, a control character, port 0 or too many characters,
    # at upload and as its default endpoint
    at_upload = upload(client, key, PDF, callback_url=url)
    as_default = client.put("/v1/webhooks", headers=auth(key), json={"default_callback_url": url})
    # Then both answers are the same 400 invalid_callback_url, and nothing is stored
    for response in (at_upload, as_default):
        assert (response.status_code, response.get_json()["code"]) == (400, "invalid_callback_url")
    assert client.get("/v1/webhooks", headers=auth(key)).get_json()["default_callback_url"] is None


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/hook",
        "http://a:8080/x?y=1#z",
        "https://[2001:db8::1]:443/",
        "https://x",
        "https://u:p@x/",
        "https://x:0/",
        "https://x:65536/",
        "https://x/ a",
        "HTTPS://x/",
        "https://x/\u00fc",
        "ftp://x/",
        "https:///path",
        "https://x:080/",
        "https://x/%7e",
        "https://x/a\nb",
    ],
)
def test_the_documented_pattern_and_the_parser_agree(url: str) -> None:
    matches = re.fullmatch(callback_urls.URL_PATTERN, url) is not None
    try:
        callback_urls.parse(url, callback_urls.CallbackPolicy(allow_http=True))
        accepted = True
    except InvalidCallbackUrlError:
        accepted = False
    assert matches == accepted, url
