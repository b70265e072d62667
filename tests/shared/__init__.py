"""Tests of shared/, module by module."""
