"""Bearer API keys → the caller. The tenant always comes from the credential, never the request."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any, TypeVar

from flask import g, request
from sqlalchemy import Connection
from sqlalchemy.orm import Session

from gateway.services import services
from shared import logging as ingest_logging
from shared.errors import ForbiddenError, TenantSuspendedError, UnauthorizedError
from shared.models import KeyRole, TenantStatus
from shared.tenants import KeyOwner, hash_key, resolve_key_hash

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Caller:
    tenant_id: str | None
    role: str
    # The tenant's own upload limit (None: the service default), read with the key so that an
    # upload needs no second look at the tenant row before it streams.
    max_upload_mb: int | None = None
    # The key's hash (never the key), for a long request to check the key again (`still_authorised`).
    key_hash: str = ""


def _usable(owner: KeyOwner | None) -> KeyOwner:
    """The owner of a key that works: 401 without one (unknown or revoked), 403 for a suspended tenant."""
    if owner is None:
        raise UnauthorizedError()
    if owner.tenant_id is not None and owner.tenant_status != TenantStatus.ACTIVE.value:
        raise TenantSuspendedError()
    return owner


def authenticate() -> Caller:
    """The caller this request's bearer key belongs to (401 without a valid key, 403 for a
    suspended tenant), from the headers alone."""
    header = request.headers.get("Authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise UnauthorizedError()
    key_hash = hash_key(key.strip())
    owner = _usable(services().db.reading(lambda connection: resolve_key_hash(connection, key_hash)))
    caller = Caller(
        tenant_id=owner.tenant_id, role=owner.role, max_upload_mb=owner.max_upload_mb, key_hash=key_hash
    )
    ingest_logging.bind(tenant_id=caller.tenant_id)
    return caller


def still_authorised(connection: Connection | Session, caller: Caller) -> bool:
    """Whether the caller's key would still authenticate (not revoked, its tenant not suspended): a
    request that outlives its start, such as an event stream, asks this now and then."""
    try:
        _usable(resolve_key_hash(connection, caller.key_hash))
    except (UnauthorizedError, TenantSuspendedError):
        return False
    return True


def key_required(view: F) -> F:
    """Any working key, a tenant's or an admin one: the caller is `g.caller`."""

    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g.caller = authenticate()
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def tenant_required(view: F) -> F:
    """Only a tenant's key: the tenant it belongs to is `g.caller.tenant_id`."""

    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        caller = authenticate()
        if caller.tenant_id is None:
            raise ForbiddenError("This call needs a tenant's API key.")
        g.caller = caller
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def admin_required(view: F) -> F:
    """Only an admin key."""

    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        caller = authenticate()
        if caller.role != KeyRole.ADMIN.value:
            raise ForbiddenError("This call needs an admin API key.")
        g.caller = caller
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
