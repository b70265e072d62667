"""Tests of ingest_worker/ocr/, module by module."""
