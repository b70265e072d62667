"""SQLAlchemy 2.0 typed models: tenants, keys, documents, jobs, stages, events, the outbox, webhook
deliveries, reindexes and event-stream leases (importing the package registers every table on
`Base.metadata`)."""

from shared.models.base import Base, new_id, utcnow
from shared.models.documents import Document
from shared.models.jobs import Job, JobEvent, JobKind, JobStage, JobStatus, StagePart, StageStatus
from shared.models.messages import DeadLetter, DeliveryStatus, OutboxMessage, WebhookDelivery
from shared.models.reindexes import Reindex, ReindexStatus
from shared.models.streams import EventStreamLease
from shared.models.tenants import ApiKey, IdempotencyRecord, KeyRole, Tenant, TenantStatus

__all__ = [
    "ApiKey",
    "Base",
    "DeadLetter",
    "DeliveryStatus",
    "Document",
    "EventStreamLease",
    "IdempotencyRecord",
    "Job",
    "JobEvent",
    "JobKind",
    "JobStage",
    "JobStatus",
    "KeyRole",
    "OutboxMessage",
    "Reindex",
    "ReindexStatus",
    "StagePart",
    "StageStatus",
    "Tenant",
    "TenantStatus",
    "WebhookDelivery",
    "new_id",
    "utcnow",
]
