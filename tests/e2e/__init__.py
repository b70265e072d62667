"""Tests that run the whole service, or several of its processes, end to end."""
