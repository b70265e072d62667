"""Tests of ingest_worker/webhooks/, module by module."""
