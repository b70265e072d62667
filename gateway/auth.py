"""Bearer API keys → the calling tenant. The tenant always comes from the credential."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any, TypeVar

from flask import g, request

from gateway.services import services
from shared.errors import TenantSuspendedError, UnauthorizedError
from shared.models import TenantStatus
from shared.tenants import resolve_key

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Caller:
    tenant_id: str
    tenant_name: str
    role: str


def _bearer_key() -> str:
    header = request.headers.get("Authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise UnauthorizedError()
    return key.strip()


def tenant_required(view: F) -> F:
    """Resolve the API key to an active tenant and put it on `g.caller`."""

    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        key = _bearer_key()
        with services().db.transaction() as session:
            found = resolve_key(session, key)
            if found is None or found[1] is None:
                raise UnauthorizedError()
            api_key, tenant = found
            if tenant.status != TenantStatus.ACTIVE.value:
                raise TenantSuspendedError()
            g.caller = Caller(tenant_id=tenant.id, tenant_name=tenant.name, role=api_key.role)
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
