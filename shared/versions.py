"""Versions of the code that made a stored artifact: a reindex redoes the stages whose code is newer."""

from __future__ import annotations

# Bump when the text extracted from a PDF would change (a reindex then re-extracts).
EXTRACTOR_VERSION = "pypdf-layout-4"
# Bump when the chunks made from the same text would change (a reindex then re-chunks).
CHUNKER_VERSION = "recursive-sections-3"
