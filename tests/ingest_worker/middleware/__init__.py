"""Tests of ingest_worker/middleware/, module by module."""
