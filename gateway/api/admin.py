"""Administration (admin keys only): tenants, their limits, status and reindexes, and API keys."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from gateway.auth import admin_required
from gateway.blueprint import Blueprint
from gateway.representations import dead_letter_body, key_body, reindex_body, tenant_body
from gateway.schemas.admin import (
    ApiKeyListSchema,
    ApiKeySchema,
    DeadLetterArgsSchema,
    DeadLetterListSchema,
    LimitsSchema,
    ReindexArgsSchema,
    ReindexSchema,
    TenantCreateSchema,
    TenantListSchema,
    TenantOcrSchema,
    TenantSchema,
)
from gateway.schemas.jobs import JobSchema
from gateway.services import services
from shared import ocr_languages
from shared import reindex as reindexes
from shared.errors import ConflictError, NotFoundError
from shared.job_representation import job_body
from shared.models import ApiKey, DeadLetter, Job, KeyRole, Tenant, TenantStatus, utcnow
from shared.operations import retry_job
from shared.tenants import admin_keys, create_tenant, issue_api_key, live_admin_key_count

blp = Blueprint("admin", __name__, description="Tenants and API keys (admin keys only)")


def _tenant(session: Any, tenant_id: str) -> Tenant:
    tenant = session.get(Tenant, tenant_id)
    if tenant is None:
        raise NotFoundError("No such tenant.")
    return tenant  # type: ignore[no-any-return]


@blp.route("/v1/admin/tenants", methods=["POST"])
@admin_required
@blp.arguments(TenantCreateSchema)
@blp.response(201, TenantSchema)
def create(args: dict[str, Any]) -> Any:
    """Create a tenant with its first API key (shown once)."""
    if args.get("ocr_languages") is not None:
        args["ocr_languages"] = ocr_languages.checked(
            args["ocr_languages"], services().settings.ocr_available_languages
        )
    try:
        with services().db.transaction() as session:
            tenant, key = create_tenant(session, args.pop("name"))
            for name, value in args.items():
                setattr(tenant, name, value)
            return tenant_body(tenant, key)
    except IntegrityError:
        raise ConflictError("A tenant with that name exists.", code="tenant_exists") from None


@blp.route("/v1/admin/tenants", methods=["GET"])
@admin_required
@blp.response(200, TenantListSchema)
def list_tenants() -> Any:
    """Every tenant."""
    with services().db.transaction() as session:
        return {"items": [tenant_body(t) for t in session.scalars(select(Tenant).order_by(Tenant.name))]}


@blp.route("/v1/admin/tenants/<tenant_id>", methods=["GET"])
@admin_required
@blp.response(200, TenantSchema)
def get_tenant(tenant_id: str) -> Any:
    """One tenant."""
    with services().db.transaction() as session:
        return tenant_body(_tenant(session, tenant_id))


@blp.route("/v1/admin/tenants/<tenant_id>/limits", methods=["PATCH"])
@admin_required
@blp.arguments(LimitsSchema)
@blp.response(200, TenantSchema)
def set_limits(args: dict[str, Any], tenant_id: str) -> Any:
    """Set some of a tenant's limits (null: back to the service default)."""
    with services().db.transaction() as session:
        tenant = _tenant(session, tenant_id)
        for name, value in args.items():
            setattr(tenant, name, value)
        return tenant_body(tenant)


@blp.route("/v1/admin/tenants/<tenant_id>/ocr", methods=["PATCH"])
@admin_required
@blp.arguments(TenantOcrSchema)
@blp.response(200, TenantSchema)
def set_ocr(args: dict[str, Any], tenant_id: str) -> Any:
    """Set the OCR languages of the tenant's uploads that name none (null: back to the service's).
    An unknown language is a 422 `unknown_ocr_language`."""
    value = args["ocr_languages"]
    if value is not None:
        value = ocr_languages.checked(value, services().settings.ocr_available_languages)
    with services().db.transaction() as session:
        tenant = _tenant(session, tenant_id)
        tenant.ocr_languages = value
        return tenant_body(tenant)


def _set_status(tenant_id: str, status: TenantStatus) -> Any:
    with services().db.transaction() as session:
        tenant = _tenant(session, tenant_id)
        tenant.status = status.value
        return tenant_body(tenant)


@blp.route("/v1/admin/tenants/<tenant_id>/suspend", methods=["POST"])
@admin_required
@blp.response(200, TenantSchema)
def suspend(tenant_id: str) -> Any:
    """Suspend a tenant: its keys stop working and its running jobs stop at the next stage."""
    return _set_status(tenant_id, TenantStatus.SUSPENDED)


@blp.route("/v1/admin/tenants/<tenant_id>/resume", methods=["POST"])
@admin_required
@blp.response(200, TenantSchema)
def resume(tenant_id: str) -> Any:
    """Resume a suspended tenant."""
    return _set_status(tenant_id, TenantStatus.ACTIVE)


@blp.route("/v1/admin/tenants/<tenant_id>/keys", methods=["POST"])
@admin_required
@blp.response(201, ApiKeySchema)
def create_key(tenant_id: str) -> Any:
    """A new API key for the tenant (shown once)."""
    with services().db.transaction() as session:
        tenant = _tenant(session, tenant_id)
        key, plain = issue_api_key(session, tenant)
        return key_body(key, plain)


@blp.route("/v1/admin/tenants/<tenant_id>/keys", methods=["GET"])
@admin_required
@blp.response(200, ApiKeyListSchema)
def list_keys(tenant_id: str) -> Any:
    """The tenant's keys (prefixes only)."""
    with services().db.transaction() as session:
        _tenant(session, tenant_id)
        keys = session.scalars(
            select(ApiKey).where(ApiKey.tenant_id == tenant_id).order_by(ApiKey.created_at)
        )
        return {"items": [key_body(k) for k in keys]}


@blp.route("/v1/admin/keys", methods=["GET"])
@admin_required
@blp.response(200, ApiKeyListSchema)
def list_admin_keys() -> Any:
    """The admin keys, with their ids (to revoke one) and prefixes; never the key itself."""
    with services().db.transaction() as session:
        return {"items": [key_body(k) for k in admin_keys(session)]}


@blp.route("/v1/admin/keys", methods=["POST"])
@admin_required
@blp.response(201, ApiKeySchema)
def create_admin_key() -> Any:
    """A new admin key (shown once): issue one before revoking a leaked one."""
    with services().db.transaction() as session:
        key, plain = issue_api_key(session, None, KeyRole.ADMIN)
        return key_body(key, plain)


@blp.route("/v1/admin/keys/<key_id>/revoke", methods=["POST"])
@admin_required
@blp.response(200, ApiKeySchema)
def revoke_key(key_id: str) -> Any:
    """Revoke a key (a tenant's or an admin one): it stops working at once. The last working admin
    key is kept (409 `last_admin_key`), so that the admin API cannot lock itself out."""
    with services().db.transaction() as session:
        key = session.get(ApiKey, key_id)
        if key is None:
            raise NotFoundError("No such key.")
        if key.revoked_at is None:
            if key.role == KeyRole.ADMIN.value and live_admin_key_count(session) <= 1:
                raise ConflictError(
                    "This is the last working admin key: issue another before revoking it.",
                    code="last_admin_key",
                )
            key.revoked_at = utcnow()
        return key_body(key)


@blp.route("/v1/admin/dead-letters", methods=["GET"])
@admin_required
@blp.arguments(DeadLetterArgsSchema, location="query", as_kwargs=True)
@blp.response(200, DeadLetterListSchema)
def list_dead_letters(include_replayed: bool) -> Any:
    """Jobs whose retries ran out, oldest first, with the stage and error they stopped at."""
    stmt = select(DeadLetter).order_by(DeadLetter.created_at)
    if not include_replayed:
        stmt = stmt.where(DeadLetter.replayed_at.is_(None))
    with services().db.transaction() as session:
        return {"items": [dead_letter_body(d) for d in session.scalars(stmt.limit(1000))]}


@blp.route("/v1/admin/jobs/<job_id>/replay", methods=["POST"])
@admin_required
@blp.response(202, JobSchema)
def replay_job(job_id: str) -> Any:
    """Run any tenant's failed or dead-lettered job again from the stage it stopped at."""
    svc = services()
    with svc.db.transaction() as session:
        job = session.get(Job, job_id)
        if job is None:
            raise NotFoundError("No such job.")
        return job_body(retry_job(session, job))


@blp.route("/v1/admin/tenants/<tenant_id>/reindex", methods=["POST"])
@admin_required
@blp.arguments(ReindexArgsSchema)
@blp.response(202, ReindexSchema)
def start_reindex(args: dict[str, Any], tenant_id: str) -> Any:
    """Reindex the tenant into a new index version (or resume its running reindex); searches keep
    using the active version until the service flips it. `dry_run` only says what would happen."""
    svc = services()
    options = {
        "model": args.get("model"),
        "dimension": args.get("dimension"),
        "from_stage": args["from_stage"],
    }
    with svc.db.transaction() as session:
        _tenant(session, tenant_id)
        if args["dry_run"]:
            return {
                "tenant_id": tenant_id,
                "plan": reindexes.plan(session, svc.settings, tenant_id, **options),
            }
        reindex, created = reindexes.start(session, svc.settings, tenant_id, **options)
        # The jobs' outbox rows are published by the maintenance loop: bulk work is in no hurry.
        return reindex_body(reindex, jobs_created=created)


@blp.route("/v1/admin/tenants/<tenant_id>/reindex", methods=["GET"])
@admin_required
@blp.response(200, ReindexSchema)
def get_reindex(tenant_id: str) -> Any:
    """The tenant's latest reindex, with its progress counted now while it runs."""
    with services().db.transaction() as session:
        _tenant(session, tenant_id)
        reindex = reindexes.latest_reindex(session, tenant_id)
        if reindex is None:
            raise NotFoundError("The tenant was never reindexed.")
        if reindex.status == "running":
            now = reindexes.progress(session, reindex)
            return reindex_body(
                reindex, total=now.total, done=now.done, failed=now.failed, failures=now.failures
            )
        return reindex_body(reindex)


@blp.route("/v1/admin/tenants/<tenant_id>/reindex", methods=["DELETE"])
@admin_required
@blp.response(200, ReindexSchema)
def cancel_reindex(tenant_id: str) -> Any:
    """Cancel the tenant's running reindex: the active version stays, the new one's points go."""
    with services().db.transaction() as session:
        _tenant(session, tenant_id)
        return reindex_body(reindexes.cancel(session, tenant_id))
