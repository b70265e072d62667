"""The SSRF guard for callback URLs: https and public addresses only, unless allow-listed in settings."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from shared.errors import (
    CallbackUrlHttpsRequiredError,
    CallbackUrlNotAllowedError,
    InvalidRequestError,
    WebhookDeliveryError,
)
from shared.settings import Settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[..., list[Any]]
MAX_URL_LENGTH = 2000


@dataclass(frozen=True)
class CallbackPolicy:
    """What callback URLs may point at."""

    allow_http: bool = False
    allow_private: bool = False
    allowed_hosts: frozenset[str] = frozenset()
    allowed_networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def from_settings(cls, settings: Settings) -> CallbackPolicy:
        hosts, networks = set(), []
        for item in (i.strip().lower() for i in settings.webhook_allowed_hosts.split(",")):
            if not item:
                continue
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                hosts.add(item.rstrip("."))
        return cls(
            allow_http=settings.webhook_allow_http,
            allow_private=settings.webhook_allow_private,
            allowed_hosts=frozenset(hosts),
            allowed_networks=tuple(networks),
        )

    def address_allowed(self, host: str, address: IPAddress) -> bool:
        """True when `host`, resolved to `address`, may be called."""
        if host.lower().rstrip(".") in self.allowed_hosts:
            return True
        if any(address in network for network in self.allowed_networks):
            return True
        if self.allow_private:
            return not (address.is_multicast or address.is_unspecified)
        return is_public(address)


@dataclass(frozen=True)
class Target:
    """A checked callback URL and the addresses a connection may use (pin one of them)."""

    url: str
    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[str, ...]


def is_public(address: IPAddress) -> bool:
    """A globally routable unicast address: not loopback, private, link-local (cloud metadata),
    shared (CGNAT), reserved, documentation or multicast; IPv4-mapped IPv6 judged as IPv4."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


def parse(url: str, policy: CallbackPolicy) -> tuple[str, str, int, str]:
    """Scheme, host, port and path of an absolute http(s) URL, or a client error."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme not in ("http", "https") or not parts.hostname or len(url) > MAX_URL_LENGTH or port == -1:
        raise InvalidRequestError(
            "callback_url must be an absolute http(s) URL.", code="invalid_callback_url"
        )
    if parts.username or parts.password:
        raise InvalidRequestError("callback_url must not carry credentials.", code="invalid_callback_url")
    if parts.scheme == "http" and not policy.allow_http:
        raise CallbackUrlHttpsRequiredError()
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80), path


def resolve(host: str, port: int, resolver: Resolver = socket.getaddrinfo) -> list[IPAddress]:
    """Every address the host resolves to (numeric forms such as 2130706433 included)."""
    try:
        infos = resolver(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise WebhookDeliveryError("The callback host did not resolve.", code="webhook_dns_failed") from exc
    found: list[IPAddress] = []
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%", 1)[0])
        if address not in found:
            found.append(address)
    if not found:
        raise WebhookDeliveryError("The callback host did not resolve.", code="webhook_dns_failed")
    return found


def check(
    url: str, policy: CallbackPolicy, *, resolver: Resolver = socket.getaddrinfo, require_dns: bool = True
) -> Target:
    """Check `url` against the policy after resolving its host; every address must be allowed, so a
    name with one public and one private record is refused.

    With `require_dns=False` (at upload) a name that does not resolve yet is accepted: the check
    runs again, after resolution, before every delivery.
    """
    scheme, host, port, path = parse(url, policy)
    try:
        addresses = resolve(host, port, resolver)
    except WebhookDeliveryError:
        if require_dns:
            raise
        return Target(url, scheme, host, port, path, ())
    for address in addresses:
        if not policy.address_allowed(host, address):
            raise CallbackUrlNotAllowedError()
    return Target(url, scheme, host, port, path, tuple(str(a) for a in addresses))


def check_setting(url: str | None, settings: Settings) -> str | None:
    """The gateway's check of a callback URL a client gives (None passes)."""
    if not url:
        return None
    check(url, CallbackPolicy.from_settings(settings), require_dns=False)
    return url
