"""Tests of shared/vectorstores/, module by module."""
