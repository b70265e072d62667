"""Tests of shared/webhooks/, module by module."""
