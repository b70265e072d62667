"""Tenants and their API keys: keys are stored as a SHA-256 hash beside a short visible prefix."""

from __future__ import annotations

import functools
import hashlib
import secrets
from dataclasses import dataclass

from sqlalchemy import Connection, Select, bindparam, select
from sqlalchemy.orm import Session

from shared.models import ApiKey, KeyRole, Tenant
from shared.webhooks import new_secret

KEY_PREFIX = "ik_"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def issue_api_key(
    session: Session, tenant: Tenant | None, role: KeyRole = KeyRole.TENANT
) -> tuple[ApiKey, str]:
    """Create a key (for `tenant`, or an admin key without one); returns the row and the plain
    text, which is shown once and never stored."""
    visible = secrets.token_hex(4)
    key = f"{KEY_PREFIX}{visible}_{secrets.token_urlsafe(24)}"
    row = ApiKey(
        tenant_id=tenant.id if tenant else None,
        prefix=f"{KEY_PREFIX}{visible}",
        key_hash=hash_key(key),
        role=role.value,
    )
    session.add(row)
    session.flush()
    return row, key


def new_api_key(session: Session, tenant: Tenant | None, role: KeyRole = KeyRole.TENANT) -> str:
    """Create a key and return its plain text."""
    return issue_api_key(session, tenant, role)[1]


def create_tenant(session: Session, name: str) -> tuple[Tenant, str]:
    """A new active tenant with one API key; returns the tenant and the key's plain text."""
    tenant = Tenant(name=name, webhook_secret=new_secret())
    session.add(tenant)
    session.flush()
    return tenant, new_api_key(session, tenant)


def get_tenant_by_name(session: Session, name: str) -> Tenant | None:
    return session.scalars(select(Tenant).where(Tenant.name == name)).first()


@dataclass(frozen=True)
class KeyOwner:
    """What a request learns from its key: the key's role and, for a tenant's key, the tenant."""

    role: str
    tenant_id: str | None
    tenant_status: str | None
    max_upload_mb: int | None


def resolve_key(connection: Connection | Session, key: str) -> KeyOwner | None:
    """The live key matching `key` with its tenant, or None."""
    return resolve_key_hash(connection, hash_key(key))


def resolve_key_hash(connection: Connection | Session, key_hash: str) -> KeyOwner | None:
    """The live key with this hash (what a long request keeps instead of the key) with its tenant, or None."""
    row = connection.execute(_key_owner(), {"key_hash": key_hash}).first()
    return None if row is None else KeyOwner(*row)


@functools.cache
def _key_owner() -> Select[str, str, str, int | None]:
    # One statement of plain columns for both, built once: every authenticated request asks it first.
    return (
        select(ApiKey.role, Tenant.id, Tenant.status, Tenant.max_upload_mb)
        .outerjoin(Tenant, Tenant.id == ApiKey.tenant_id)
        .where(ApiKey.key_hash == bindparam("key_hash"), ApiKey.revoked_at.is_(None))
    )


def admin_keys(session: Session) -> list[ApiKey]:
    """Every admin key, revoked ones included, oldest first."""
    stmt = select(ApiKey).where(ApiKey.role == KeyRole.ADMIN.value).order_by(ApiKey.created_at, ApiKey.id)
    return list(session.scalars(stmt))


def live_admin_key_count(session: Session) -> int:
    """The admin keys that still work, locked (PostgreSQL) so two revokes cannot both see a spare."""
    stmt = (
        select(ApiKey.id)
        .where(ApiKey.role == KeyRole.ADMIN.value, ApiKey.revoked_at.is_(None))
        .with_for_update()
    )
    return len(session.scalars(stmt).all())
