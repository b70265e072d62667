"""A Python client for the PDF ingestion service's REST API, and the `ingest` command line."""

from ingest_client.client import Client, Source
from ingest_client.errors import ApiError
from ingest_client.models import TERMINAL, JobUpdate, UploadResult
from ingest_client.webhooks import verify_webhook

__all__ = ["TERMINAL", "ApiError", "Client", "JobUpdate", "Source", "UploadResult", "verify_webhook"]
