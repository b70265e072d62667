"""Tests of deploy/, module by module."""
