"""Tests of gateway/console/, module by module."""
