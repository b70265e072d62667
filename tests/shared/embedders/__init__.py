"""Tests of shared/embedders/, module by module."""
