"""Tests of gateway/api/, module by module."""
