"""Tests of gateway/, module by module."""
