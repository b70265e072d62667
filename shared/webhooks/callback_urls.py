"""The SSRF guard for callback URLs: https and public addresses only, unless allow-listed in settings."""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from shared.errors import (
    CallbackUrlHttpsRequiredError,
    CallbackUrlNotAllowedError,
    InvalidCallbackUrlError,
    WebhookDeliveryError,
)
from shared.settings import Settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[..., list[Any]]
MAX_URL_LENGTH = 2000
# The form of a callback URL, also stated in the OpenAPI document: http or https, a host (a name, an
# IPv4 address or a bracketed IPv6 one) without credentials, a port from 1 to 65535, and a path,
# query and fragment of URI characters only (RFC 3986: no spaces, controls or non-ASCII).
_PORT = "(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})"
URL_PATTERN = (
    r"^https?://(?:[A-Za-z0-9._~!$&'()*+,;=%-]+|\[[0-9A-Fa-f:.]+\])"
    f"(?::{_PORT})?"
    r"(?:[/?#][A-Za-z0-9._~!$&'()*+,;=%:@/?#\[\]-]*)?$"
)

# Only global unicast (2000::/3) can be public; inside it, these forms carry an IPv4 address or are
# deprecated, and Python's `is_global` calls some of them public: IPv4-compatible (::a.b.c.d), NAT64
# (well-known and local-use prefixes, which a translator turns into the embedded IPv4 address).
GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
# Whitespace and control characters: urlsplit drops tabs and newlines silently, so that
# "https://exa\tmple.com" would be called at example.com.
FORBIDDEN_CHARACTERS = frozenset(chr(c) for c in range(0x21)) | {"\x7f"}


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
    shared (CGNAT), reserved, documentation or multicast. IPv6 is judged strictly: IPv4-mapped, 6to4
    and Teredo forms by the IPv4 addresses they embed; IPv4-compatible, NAT64, site-local and any
    address outside global unicast are never public."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return is_public(address.ipv4_mapped)
        if address in IPV4_COMPATIBLE or any(address in network for network in NAT64):
            return False
        if address not in GLOBAL_UNICAST:
            return False  # site-local fec0::/10, unique-local, link-local, multicast, reserved
        if address.sixtofour is not None and not is_public(address.sixtofour):
            return False
        if address.teredo is not None and not all(is_public(a) for a in address.teredo):
            return False
    return address.is_global and not address.is_multicast


def parse(url: str, policy: CallbackPolicy) -> tuple[str, str, int, str]:
    """Scheme, host, port and path of an absolute http(s) URL, or a client error."""
    if len(url) > MAX_URL_LENGTH:
        raise InvalidCallbackUrlError(f"callback_url must be at most {MAX_URL_LENGTH} characters.")
    if not FORBIDDEN_CHARACTERS.isdisjoint(url):
        raise InvalidCallbackUrlError("callback_url must not contain spaces or control characters.")
    if not re.fullmatch(URL_PATTERN, url):
        raise InvalidCallbackUrlError()
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme not in ("http", "https") or not parts.hostname or port == -1 or port == 0:
        raise InvalidCallbackUrlError()
    if parts.username or parts.password:
        raise InvalidCallbackUrlError("callback_url must not carry credentials.")
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
    """The gateway's check of a callback URL a client gives (None passes; an empty one does not)."""
    if url is None:
        return None
    check(url, CallbackPolicy.from_settings(settings), require_dns=False)
    return url
