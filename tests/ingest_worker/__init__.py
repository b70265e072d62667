"""Tests of ingest_worker/, module by module."""
