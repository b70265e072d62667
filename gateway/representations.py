"""How documents, tenants, keys, dead letters and deliveries look on the wire (a job's body is
`shared.job_representation`, shared with the webhooks and the event stream)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import object_session

from gateway.document_versions import serving_job
from shared.job_representation import iso_time, job_body
from shared.models import ApiKey, DeadLetter, Document, Job, Reindex, Tenant, WebhookDelivery, utcnow


def document_body(document: Document, latest_job: Job | None) -> dict[str, Any]:
    """The document as its session sees it; `indexed` is the version search serves (which a newer job
    that runs, fails or is cancelled leaves in place), read through the document's own session."""
    session = object_session(document)
    serving = serving_job(session, document) if session is not None else None
    return {
        "document_id": document.id,
        "filename": document.filename,
        "sha256": document.sha256,
        "size_bytes": document.size_bytes,
        "page_count": document.page_count,
        "ocr_languages": document.ocr_languages,
        "metadata": document.user_metadata or {},
        "created_at": iso_time(document.created_at),
        "deleted": document.deleted_at is not None,
        "latest_job": job_body(latest_job) if latest_job is not None else None,
        "indexed": indexed_body(serving) if serving is not None else None,
    }


def indexed_body(job: Job) -> dict[str, Any]:
    """The indexed version of a document: the job that made the points search serves."""
    return {
        "job_id": job.id,
        "kind": job.kind,
        "index_version": job.index_version,
        "embedding_model": job.embedding_model,
        "chunks": job.chunks,
        "points": job.points,
        "finished_at": iso_time(job.finished_at),
    }


def tenant_body(tenant: Tenant, api_key: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "tenant_id": tenant.id,
        "name": tenant.name,
        "status": tenant.status,
        "limits": {
            "max_active_jobs": tenant.max_active_jobs,
            "max_upload_mb": tenant.max_upload_mb,
            "max_pages": tenant.max_pages,
            "max_storage_mb": tenant.max_storage_mb,
        },
        "ocr_languages": tenant.ocr_languages,
        "created_at": iso_time(tenant.created_at),
    }
    if api_key is not None:
        body["api_key"] = api_key
    return body


def key_body(key: ApiKey, plain: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "key_id": key.id,
        "prefix": key.prefix,
        "role": key.role,
        "created_at": iso_time(key.created_at),
        "revoked": key.revoked_at is not None,
    }
    if plain is not None:
        body["api_key"] = plain
    return body


def dead_letter_body(letter: DeadLetter) -> dict[str, Any]:
    return {
        "dead_letter_id": letter.id,
        "job_id": letter.job_id,
        "tenant_id": letter.tenant_id,
        "stage": letter.stage,
        "actor": letter.actor,
        "error": {"code": letter.error_code, "message": letter.error_message},
        "retries": letter.retries,
        "created_at": iso_time(letter.created_at),
        "replayed": letter.replayed_at is not None,
    }


def delivery_body(delivery: WebhookDelivery) -> dict[str, Any]:
    return {
        "delivery_id": delivery.id,
        "event_id": delivery.event_id,
        "event_type": delivery.event_type,
        "seq": delivery.seq,
        "url": delivery.url,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "last_response_status": delivery.last_response_status,
        "last_error_code": delivery.last_error_code,
        "attempt_log": list(delivery.attempt_log or []),
        "next_attempt_at": iso_time(delivery.next_attempt_at) if delivery.status == "pending" else None,
        "last_attempt_at": iso_time(delivery.last_attempt_at),
        "delivered_at": iso_time(delivery.delivered_at),
        "created_at": iso_time(delivery.created_at),
    }


def webhook_settings_body(tenant: Tenant) -> dict[str, Any]:
    until = tenant.webhook_secret_previous_until
    return {
        "default_callback_url": tenant.default_callback_url,
        "secret": tenant.webhook_secret,
        "previous_secret_valid_until": iso_time(until) if until and until > utcnow() else None,
    }


def reindex_body(reindex: Reindex, **extra: Any) -> dict[str, Any]:
    return {
        "reindex_id": reindex.id,
        "tenant_id": reindex.tenant_id,
        "status": reindex.status,
        "source_version": reindex.source_version,
        "target_version": reindex.target_version,
        "embedding_model": reindex.embedding_model,
        "embedding_dimension": reindex.embedding_dim,
        "from_stage": reindex.from_stage,
        "total": reindex.total,
        "done": reindex.done,
        "failed": reindex.failed,
        "failures": reindex.failures or [],
        "created_at": iso_time(reindex.created_at),
        "flipped_at": iso_time(reindex.flipped_at),
        "finished_at": iso_time(reindex.finished_at),
        **extra,
    }
