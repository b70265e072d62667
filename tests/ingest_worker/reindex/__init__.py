"""Tests of ingest_worker/reindex/, module by module."""
